// `adjoint bench nn`: times our train step (forward, MSE gradient, backward, Adam) and forward alone for the
// SHAC actor 160→[512,256,128]→29 and critic 286→[512,256,128]→1 (Linear→ELU→LayerNorm hidden layers) at
// batches 4096, 65536, 262144, in fp32 and TF32. Timing: CUDA events around each iteration after warm-up,
// median over iterations; "graph" replays one captured CUDA graph per step, "eager" launches the kernels.
// bench/nn_torch.py measures PyTorch the same way; bench/nn_report.py puts both side by side.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_bench.h"
#include "nn/nn_cuda.h"

extern "C" int nn_cuda_profile(const NnConfig* cfg, int B, int tf32, FILE* f);  // nn_cuda.cu

#define BCK(x)                                                                             \
  do {                                                                                     \
    int _r = (x);                                                                          \
    if (_r) {                                                                              \
      fprintf(stderr, "nn_bench: %s failed: %d (%s) at line %d\n", #x, _r, nn_strerror(_r), __LINE__); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)
#define BCU(x)                                                                                      \
  do {                                                                                              \
    cudaError_t _e = (x);                                                                           \
    if (_e != cudaSuccess) {                                                                        \
      fprintf(stderr, "nn_bench: %s: %s at line %d\n", #x, cudaGetErrorString(_e), __LINE__);       \
      return 1;                                                                                     \
    }                                                                                               \
  } while (0)

__global__ void k_fill(float* p, long long n, unsigned long long seed, float lo, float hi) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long z = seed + 0x9E3779B97F4A7C15ull * (unsigned long long)(i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  p[i] = lo + (hi - lo) * (float)((double)(z >> 40) * (1.0 / 16777216.0));
}

static int fill(float* p, long long n, unsigned long long seed, float lo, float hi, cudaStream_t s) {
  k_fill<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, n, seed, lo, hi);
  return cudaGetLastError() == cudaSuccess ? 0 : NN_ECUDA;
}

static int cmp_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return x < y ? -1 : x > y;
}

static float median(float* v, int n) {
  qsort(v, (size_t)n, sizeof(float), cmp_float);
  return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
  const char* name;
  NnConfig cfg;
} Net;

static Net net_actor(void) {
  Net n = {"actor", {160, 29, 3, {512, 256, 128}, NN_ACT_ELU, 1, NN_ACT_NONE, 0, 0}};
  return n;
}
static Net net_critic(void) {
  Net n = {"critic", {286, 1, 3, {512, 256, 128}, NN_ACT_ELU, 1, NN_ACT_NONE, 0, 0}};
  return n;
}

typedef struct {
  NnCudaMlp* m;
  NnCudaAdam* a;
  float *x, *t, *y, *dy;
  int B;
  cudaStream_t s;
} Ctx;

static int train_step(Ctx* c, int out_dim) {
  long long n = (long long)c->B * out_dim;
  int r = nn_cuda_mlp_forward(c->m, c->x, c->B, c->y);
  if (!r) r = nn_cuda_mse_grad(c->y, c->t, n, (float)(2.0 / (double)n), c->dy, c->s);
  if (!r) r = nn_cuda_mlp_backward(c->m, c->dy, NULL);
  if (!r) r = nn_cuda_adam_step(c->a, nn_cuda_mlp_params(c->m), nn_cuda_mlp_grads(c->m));
  return r;
}

static int fwd_step(Ctx* c, int out_dim) { return nn_cuda_mlp_forward(c->m, c->x, c->B, c->y); }

// median ms of `iters` runs of fn, eager or as one replayed CUDA graph
static int time_it(Ctx* c, int out_dim, int (*fn)(Ctx*, int), int graph, int iters, float* ms) {
  cudaEvent_t e[2];
  BCU(cudaEventCreate(&e[0]));
  BCU(cudaEventCreate(&e[1]));
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  for (int i = 0; i < 3; i++) BCK(fn(c, out_dim));
  if (graph) {
    BCU(cudaStreamBeginCapture(c->s, cudaStreamCaptureModeThreadLocal));
    BCK(fn(c, out_dim));
    BCU(cudaStreamEndCapture(c->s, &g));
    BCU(cudaGraphInstantiate(&ge, g, 0));
  }
  int warm = iters / 5 + 3;
  float* v = (float*)malloc(sizeof(float) * (size_t)iters);
  for (int i = 0; i < warm + iters; i++) {
    BCU(cudaEventRecord(e[0], c->s));
    if (graph) BCU(cudaGraphLaunch(ge, c->s));
    else BCK(fn(c, out_dim));
    BCU(cudaEventRecord(e[1], c->s));
    BCU(cudaEventSynchronize(e[1]));
    if (i >= warm) BCU(cudaEventElapsedTime(&v[i - warm], e[0], e[1]));
  }
  *ms = median(v, iters);
  free(v);
  if (ge) cudaGraphExecDestroy(ge);
  if (g) cudaGraphDestroy(g);
  cudaEventDestroy(e[0]), cudaEventDestroy(e[1]);
  return 0;
}

static int g_extra_flags = 0;  // --no-splitk

static int ctx_make(Ctx* c, const NnConfig* cfg, int B, int tf32, cudaStream_t s) {
  memset(c, 0, sizeof(*c));
  c->B = B, c->s = s;
  BCK(nn_cuda_mlp_create(&c->m, cfg, B, (tf32 ? NN_CUDA_TF32 : 0) | g_extra_flags, s));
  BCK(nn_cuda_mlp_init(c->m, 1));
  NnAdamConfig ac = {1e-4, 0.9, 0.999, 1e-8, 0, 0, 0, NN_LR_CONSTANT, 0, 0, 0};
  BCK(nn_cuda_adam_create(&c->a, &ac, nn_cuda_mlp_param_count(c->m), NULL, s));
  BCU(cudaMalloc(&c->x, 4 * (size_t)B * cfg->in_dim));
  BCU(cudaMalloc(&c->t, 4 * (size_t)B * cfg->out_dim));
  BCU(cudaMalloc(&c->y, 4 * (size_t)B * cfg->out_dim));
  BCU(cudaMalloc(&c->dy, 4 * (size_t)B * cfg->out_dim));
  BCK(fill(c->x, (long long)B * cfg->in_dim, 11, -1.f, 1.f, s));
  BCK(fill(c->t, (long long)B * cfg->out_dim, 12, -1.f, 1.f, s));
  BCU(cudaStreamSynchronize(s));
  return 0;
}

static void ctx_free(Ctx* c) {
  nn_cuda_mlp_destroy(c->m), nn_cuda_adam_destroy(c->a);
  cudaFree(c->x), cudaFree(c->t), cudaFree(c->y), cudaFree(c->dy);
}

static double rel_err(const float* a, const float* b, size_t n) {
  double d = 0, r = 0;
  for (size_t i = 0; i < n; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), r += (double)b[i] * b[i];
  return sqrt(d / (r > 0 ? r : 1));
}

// TF32 accuracy: output and parameter gradients of the TF32 network against the fp32 one, same data
static int tf32_accuracy(const Net* net, int B, cudaStream_t s, FILE* js) {
  Ctx c[2];
  for (int k = 0; k < 2; k++) {
    if (ctx_make(&c[k], &net->cfg, B, k, s)) return 1;
    BCK(nn_cuda_mlp_forward(c[k].m, c[k].x, B, c[k].y));
    long long n = (long long)B * net->cfg.out_dim;
    BCK(nn_cuda_mse_grad(c[k].y, c[k].t, n, (float)(2.0 / (double)n), c[k].dy, s));
    BCK(nn_cuda_mlp_backward(c[k].m, c[k].dy, NULL));
  }
  size_t ny = (size_t)B * net->cfg.out_dim, np = (size_t)nn_cuda_mlp_param_count(c[0].m);
  float* h = (float*)malloc(4 * (2 * ny + 2 * np));
  BCU(cudaStreamSynchronize(s));  // s does not synchronize with the legacy stream of cudaMemcpy
  BCU(cudaMemcpy(h, c[0].y, 4 * ny, cudaMemcpyDeviceToHost));
  BCU(cudaMemcpy(h + ny, c[1].y, 4 * ny, cudaMemcpyDeviceToHost));
  BCK(nn_cuda_mlp_get_grads(c[0].m, h + 2 * ny));
  BCK(nn_cuda_mlp_get_grads(c[1].m, h + 2 * ny + np));
  double ey = rel_err(h + ny, h, ny), eg = rel_err(h + 2 * ny + np, h + 2 * ny, np);
  printf("tf32 accuracy %-6s B=%-6d  ||y_tf32-y_fp32||/||y_fp32|| = %.2e   ||g_tf32-g_fp32||/||g_fp32|| = %.2e\n",
         net->name, B, ey, eg);
  if (js)
    fprintf(js, "{\"impl\":\"adjoint\",\"kind\":\"tf32_accuracy\",\"net\":\"%s\",\"batch\":%d,\"out_rel\":%.3e,\"grad_rel\":%.3e}\n",
            net->name, B, ey, eg);
  free(h);
  ctx_free(&c[0]), ctx_free(&c[1]);
  return 0;
}

// Ablation: the same timings with kernel choices switched off (graph mode, fewer iterations)
static int variants(cudaStream_t s, FILE* js) {
  const int fl[5] = {0, NN_CUDA_NO_VEC, NN_CUDA_THIN, NN_CUDA_NO_VEC | NN_CUDA_THIN, NN_CUDA_NO_SPLITK};
  const char* fn[5] = {"default", "no_vec", "thin", "no_vec+thin", "no_splitk"};
  Net all[2] = {net_actor(), net_critic()};
  int bs[2] = {4096, 65536};
  printf("ablation (graph mode, ms; train step / forward):\n%-7s %-5s %6s", "net", "prec", "batch");
  for (int v = 0; v < 5; v++) printf(" %17s", fn[v]);
  printf("\n");
  for (int ni = 0; ni < 2; ni++)
    for (int tf = 0; tf < 2; tf++)
      for (int bi = 0; bi < 2; bi++) {
        printf("%-7s %-5s %6d", all[ni].name, tf ? "tf32" : "fp32", bs[bi]);
        for (int v = 0; v < 5; v++) {
          g_extra_flags = fl[v];
          Ctx c;
          if (ctx_make(&c, &all[ni].cfg, bs[bi], tf, s)) return 1;
          float t[2];
          if (time_it(&c, all[ni].cfg.out_dim, train_step, 1, 40, &t[0])) return 1;
          if (time_it(&c, all[ni].cfg.out_dim, fwd_step, 1, 40, &t[1])) return 1;
          printf("   %6.3f / %6.3f", t[0], t[1]);
          if (js)
            fprintf(js, "{\"impl\":\"adjoint\",\"kind\":\"variant\",\"variant\":\"%s\",\"net\":\"%s\",\"precision\":\"%s\","
                        "\"batch\":%d,\"train_graph_ms\":%.5f,\"fwd_graph_ms\":%.5f}\n",
                    fn[v], all[ni].name, tf ? "tf32" : "fp32", bs[bi], t[0], t[1]);
          ctx_free(&c);
        }
        printf("\n");
        fflush(stdout);
      }
  g_extra_flags = 0;
  return 0;
}

int nn_bench_main(int argc, char** argv) {
  int batches[8], nb = 0, iters = 0, nets = 3, precs = 3, do_variants = 0;
  const char* json = NULL;
  // argv[0] names the command (main's convention: "nn" from `adjoint bench nn`, or the program name)
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--all")) continue;
    else if (!strcmp(argv[i], "--profile")) {
      Net ps[2] = {net_actor(), net_critic()};
      int pb[2] = {4096, 65536};
      for (int k = 0; k < 8; k++) BCK(nn_cuda_profile(&ps[k / 4].cfg, pb[k % 2], (k / 2) % 2, stdout));
      return 0;
    }
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc && nb < 8) batches[nb++] = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--net") && i + 1 < argc) ++i, nets = !strcmp(argv[i], "actor") ? 1 : 2;
    else if (!strcmp(argv[i], "--tf32") && i + 1 < argc) precs = atoi(argv[++i]) ? 2 : 1;
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--no-splitk")) g_extra_flags |= NN_CUDA_NO_SPLITK;
    else if (!strcmp(argv[i], "--variants")) do_variants = 1;
    else {
      fprintf(stderr, "usage: adjoint bench nn [--all] [--batch N]... [--net actor|critic] [--tf32 0|1] [--iters N] [--json PATH] [--no-splitk] [--variants] [--profile]\n");
      return 1;
    }
  }
  if (!nb) batches[nb++] = 4096, batches[nb++] = 65536, batches[nb++] = 262144;
  if (nn_cuda_device_count() < 1) {
    fprintf(stderr, "adjoint bench nn: no CUDA device\n");
    return 2;
  }
  FILE* js = json ? fopen(json, "w") : NULL;
  if (json && !js) {
    fprintf(stderr, "nn_bench: cannot write %s\n", json);
    return 1;
  }
  cudaStream_t s;
  BCU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  BCU(cudaGetDeviceProperties(&prop, 0));
  printf("adjoint nn bench on %s (%d SMs); median of timed iterations, CUDA events\n", prop.name,
         prop.multiProcessorCount);
  printf("%-7s %-5s %7s  %12s %12s  %12s %12s\n", "net", "prec", "batch", "train graph", "train eager",
         "fwd graph", "fwd eager");
  Net all[2] = {net_actor(), net_critic()};
  for (int ni = 0; ni < 2; ni++) {
    if (!(nets & (1 << ni))) continue;
    const Net* net = &all[ni];
    for (int tf = 0; tf < 2; tf++) {
      if (!(precs & (1 << tf))) continue;
      for (int bi = 0; bi < nb; bi++) {
        int B = batches[bi];
        int it = iters > 0 ? iters : (B <= 8192 ? 200 : (B <= 65536 ? 60 : 25));
        Ctx c;
        if (ctx_make(&c, &net->cfg, B, tf, s)) return 1;
        float t[4];
        for (int k = 0; k < 4; k++)
          if (time_it(&c, net->cfg.out_dim, k < 2 ? train_step : fwd_step, k % 2 == 0, it, &t[k])) return 1;
        printf("%-7s %-5s %7d  %9.3f ms %9.3f ms  %9.3f ms %9.3f ms\n", net->name, tf ? "tf32" : "fp32", B, t[0],
               t[1], t[2], t[3]);
        fflush(stdout);
        if (js)
          fprintf(js,
                  "{\"impl\":\"adjoint\",\"kind\":\"time\",\"net\":\"%s\",\"precision\":\"%s\",\"batch\":%d,"
                  "\"train_graph_ms\":%.5f,\"train_eager_ms\":%.5f,\"fwd_graph_ms\":%.5f,\"fwd_eager_ms\":%.5f}\n",
                  net->name, tf ? "tf32" : "fp32", B, t[0], t[1], t[2], t[3]);
        ctx_free(&c);
      }
    }
  }
  for (int ni = 0; ni < 2; ni++)
    if (nets & (1 << ni))
      for (int bi = 0; bi < nb; bi++)
        if (batches[bi] <= 65536 && tf32_accuracy(&all[ni], batches[bi], s, js)) return 1;
  if (do_variants && variants(s, js)) return 1;
  if (js) fclose(js);
  cudaStreamDestroy(s);
  return 0;
}
