// `adjoint bench nn`: times our train step (forward, MSE gradient, backward, Adam) and forward alone for the
// SHAC actor 160→[512,256,128]→29 and critic 286→[512,256,128]→1 (Linear→ELU→LayerNorm hidden layers) at
// batches 4096, 65536, 262144, in fp32 and TF32. Timing: CUDA events around each iteration after warm-up,
// median over iterations; "graph" replays one captured CUDA graph per step, "eager" launches the kernels.
// Mode "default" (heuristic's first cuBLASLt algorithm) or, with --tune, "tuned" (NN_CUDA_TUNE; --tune-load /
// --tune-save read and write the tune table); --fuse-out adds NN_CUDA_FUSE_OUT (modes "fuse_out", "tuned+fuse_out"). "GEMMs only": the same plans' cuBLASLt calls of the forward (4) and
// of the train step (4 forward, 4 weight-gradient, 3 data-gradient), nothing else, as one replayed graph; once on
// one stream in backward's order, once with the weight-gradient GEMMs on the second stream as in backward.
// bench/nn_torch.py measures PyTorch the same way; bench/nn_report.py puts both side by side.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/nn_bench.h"
#include "nn/nn_cuda.h"
#include "nn/nn_cuda_internal.h"  // nn_cuda_mlp_gemms

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
static int gemm_fwd(Ctx* c, int out_dim) { return nn_cuda_mlp_gemms(c->m, c->x, c->B, 0, 0); }
static int gemm_train(Ctx* c, int out_dim) { return nn_cuda_mlp_gemms(c->m, c->x, c->B, 1, 0); }
static int gemm_train2(Ctx* c, int out_dim) { return nn_cuda_mlp_gemms(c->m, c->x, c->B, 1, 1); }

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

static int g_extra_flags = 0;  // --no-splitk, --tune, --fuse-out
static const char* mode_name(void) {
  if (g_extra_flags & NN_CUDA_FUSE_OUT) return (g_extra_flags & NN_CUDA_TUNE) ? "tuned+fuse_out" : "fuse_out";
  return (g_extra_flags & NN_CUDA_TUNE) ? "tuned" : "default";
}

// a failed library call inside ctx_make / time_it also prints the tuner's last message, if any
static void tune_error_hint(void) {
  char e[512];
  nn_cuda_tune_last_error(e, sizeof e);
  if (e[0]) fprintf(stderr, "nn_bench: tuner: %s\n", e);
}

static int ctx_make(Ctx* c, const NnConfig* cfg, int B, int tf32, cudaStream_t s) {
  memset(c, 0, sizeof(*c));
  c->B = B, c->s = s;
  int r = nn_cuda_mlp_create(&c->m, cfg, B, (tf32 ? NN_CUDA_TF32 : 0) | g_extra_flags, s);
  if (r) tune_error_hint();
  BCK(r);
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
  printf("tf32 accuracy %-6s B=%-6d  ||y_tf32-y_fp32||/||y_fp32|| = %.2e   ||g_tf32-g_fp32||/||g_fp32|| = %.2e (%s)\n",
         net->name, B, ey, eg, mode_name());
  if (js)
    fprintf(js, "{\"impl\":\"adjoint\",\"kind\":\"tf32_accuracy\",\"mode\":\"%s\",\"net\":\"%s\",\"batch\":%d,"
                "\"out_rel\":%.3e,\"grad_rel\":%.3e}\n",
            mode_name(), net->name, B, ey, eg);
  free(h);
  ctx_free(&c[0]), ctx_free(&c[1]);
  return 0;
}

// Ablation: the same timings with kernel choices switched off (graph mode, fewer iterations)
static int variants(cudaStream_t s, FILE* js) {
#define NV 8
  const int fl[NV] = {0, NN_CUDA_NO_VEC, NN_CUDA_THIN, NN_CUDA_NO_VEC | NN_CUDA_THIN, NN_CUDA_NO_SPLITK, NN_CUDA_TUNE,
                      NN_CUDA_FUSE_OUT, NN_CUDA_TUNE | NN_CUDA_FUSE_OUT};
  const char* fn[NV] = {"default", "no_vec", "thin", "no_vec+thin", "no_splitk", "tuned", "fuse_out", "tuned+fuse_out"};
  Net all[2] = {net_actor(), net_critic()};
  int bs[2] = {4096, 65536};
  printf("ablation (graph mode, ms; train step / forward):\n%-7s %-5s %6s", "net", "prec", "batch");
  for (int v = 0; v < NV; v++) printf(" %17s", fn[v]);
  printf("\n");
  for (int ni = 0; ni < 2; ni++)
    for (int tf = 0; tf < 2; tf++)
      for (int bi = 0; bi < 2; bi++) {
        printf("%-7s %-5s %6d", all[ni].name, tf ? "tf32" : "fp32", bs[bi]);
        for (int v = 0; v < NV; v++) {
          g_extra_flags = fl[v];
          Ctx c;
          float t[2];
          // a variant that fails (e.g. tuning) is reported and skipped; the others still run
          if (ctx_make(&c, &all[ni].cfg, bs[bi], tf, s)) {
            printf("   %17s", "FAILED");
            continue;
          }
          // an output-layer option that does not apply to this network would time the default path: not reported
          if ((fl[v] & (NN_CUDA_THIN | NN_CUDA_FUSE_OUT)) & ~nn_cuda_mlp_flags(c.m)) {
            printf("   %17s", "n/a");
            ctx_free(&c);
            continue;
          }
          if (time_it(&c, all[ni].cfg.out_dim, train_step, 1, 40, &t[0]) ||
              time_it(&c, all[ni].cfg.out_dim, fwd_step, 1, 40, &t[1])) {
            printf("   %17s", "FAILED");
            ctx_free(&c);
            continue;
          }
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
#undef NV
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int tune_save(const char* path) {
  char err[512];
  int r = nn_cuda_tune_save(path, err, sizeof err);
  if (r) fprintf(stderr, "nn_bench: --tune-save: %s\n", err);
  else printf("tune table: %d entries saved to %s\n", nn_cuda_tune_count(), path);
  return r;
}

static void tune_report(FILE* js) {
  int n, changed;
  double ms, ms0;
  nn_tune_summary(&n, &changed, &ms, &ms0);
  printf("tune table: %d GEMM shapes (%d timed by this process), %d use another algorithm than the heuristic's first;"
         " sum of their isolated GEMM times %.3f ms vs %.3f ms with the heuristic's first (where both were timed)\n",
         n, nn_cuda_tune_timed(), changed, ms, ms0);
  if (js)
    fprintf(js, "{\"impl\":\"adjoint\",\"kind\":\"tune_summary\",\"entries\":%d,\"timed\":%d,\"changed\":%d,"
                "\"sum_ms\":%.5f,\"sum_ms0\":%.5f}\n", n, nn_cuda_tune_timed(), changed, ms, ms0);
}

int nn_bench_main(int argc, char** argv) {
  int batches[8], nb = 0, iters = 0, nets = 3, precs = 3, do_variants = 0;
  const char *json = NULL, *tune_load = NULL, *tune_out = NULL;
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
    else if (!strcmp(argv[i], "--tune")) g_extra_flags |= NN_CUDA_TUNE;
    else if (!strcmp(argv[i], "--fuse-out")) g_extra_flags |= NN_CUDA_FUSE_OUT;
    else if (!strcmp(argv[i], "--tune-load") && i + 1 < argc) tune_load = argv[++i];
    else if (!strcmp(argv[i], "--tune-save") && i + 1 < argc) tune_out = argv[++i];
    else if (!strcmp(argv[i], "--variants")) do_variants = 1;
    else {
      fprintf(stderr, "usage: adjoint bench nn [--all] [--batch N]... [--net actor|critic] [--tf32 0|1] [--iters N] "
                      "[--json PATH] [--no-splitk] [--tune] [--fuse-out] [--tune-load PATH] [--tune-save PATH] [--variants] "
                      "[--profile]\n");
      return 1;
    }
  }
  if (!nb) batches[nb++] = 4096, batches[nb++] = 65536, batches[nb++] = 262144;
  if (nn_cuda_device_count() < 1) {
    fprintf(stderr, "adjoint bench nn: no CUDA device\n");
    return 2;
  }
  if (tune_load) {
    char err[512];
    if (nn_cuda_tune_load(tune_load, err, sizeof err)) {
      fprintf(stderr, "nn_bench: --tune-load: %s\n", err);
      return 1;
    }
    printf("tune table: %d entries loaded from %s\n", nn_cuda_tune_count(), tune_load);
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
  printf("adjoint nn bench on %s (%d SMs), mode %s; median of timed iterations, CUDA events; \"GEMMs\": the cuBLASLt "
         "calls alone, graph (train: 1 stream / 2 streams)\n",
         prop.name, prop.multiProcessorCount, mode_name());
  printf("%-7s %-5s %7s  %12s %12s  %12s %12s  %10s %19s %8s\n", "net", "prec", "batch", "train graph", "train eager",
         "fwd graph", "fwd eager", "GEMMs fwd", "GEMMs train 1s/2s", "plan");
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
        double t0 = now_s();
        if (ctx_make(&c, &net->cfg, B, tf, s)) return 1;
        double plan_s = now_s() - t0;  // create incl. planning (tuning in tuned mode) and buffers
        float t[7];
        int (*fns[7])(Ctx*, int) = {train_step, train_step, fwd_step, fwd_step, gemm_fwd, gemm_train, gemm_train2};
        for (int k = 0; k < 7; k++)
          if (time_it(&c, net->cfg.out_dim, fns[k], k % 2 == 0 || k >= 4, it, &t[k])) return 1;
        printf("%-7s %-5s %7d  %9.3f ms %9.3f ms  %9.3f ms %9.3f ms  %7.3f ms %7.3f/%7.3f ms %6.2f s\n", net->name,
               tf ? "tf32" : "fp32", B, t[0], t[1], t[2], t[3], t[4], t[5], t[6], plan_s);
        fflush(stdout);
        if (js) {
          fprintf(js,
                  "{\"impl\":\"adjoint\",\"kind\":\"time\",\"mode\":\"%s\",\"net\":\"%s\",\"precision\":\"%s\",\"batch\":%d,"
                  "\"train_graph_ms\":%.5f,\"train_eager_ms\":%.5f,\"fwd_graph_ms\":%.5f,\"fwd_eager_ms\":%.5f,"
                  "\"gemm_fwd_graph_ms\":%.5f,\"gemm_train_graph_ms\":%.5f,\"gemm_train_2s_graph_ms\":%.5f,"
                  "\"create_s\":%.3f}\n",
                  mode_name(), net->name, tf ? "tf32" : "fp32", B, t[0], t[1], t[2], t[3], t[4], t[5], t[6], plan_s);
          fflush(js);
        }
        ctx_free(&c);
      }
    }
  }
  if (g_extra_flags & NN_CUDA_TUNE) tune_report(js);
  if (tune_out && tune_save(tune_out)) return 1;
  for (int ni = 0; ni < 2; ni++)
    if (nets & (1 << ni))
      for (int bi = 0; bi < nb; bi++)
        if (batches[bi] <= 65536 && tf32_accuracy(&all[ni], batches[bi], s, js)) return 1;
  if (js) fflush(js);
  if (do_variants && variants(s, js)) return 1;
  if (do_variants) tune_report(js);
  if (tune_out && tune_save(tune_out)) return 1;
  if (js) fclose(js);
  cudaStreamDestroy(s);
  return 0;
}
