// nn_cuda_determinism: bitwise-identical results across runs. Two independent instances (fresh handles, plans,
// buffers) train the SHAC actor for several steps (forward, MSE gradient, backward with input gradient, Adam
// with clipping and EMA) on the same data; params, grads, outputs, input gradients and EMA must match bit for
// bit, also when the step is captured once as a CUDA graph and replayed, and in TF32 mode. Prints a hash of
// the final state so that two processes can be compared too. Skipped (77) without a CUDA device.
#include <cuda_runtime.h>
#include <string.h>

#include "nn/nn.h"
#include "nn/nn_cuda.h"
#include "tests/test.h"

#define STEPS 4

static int g_flags = 0;  // extra nn_cuda_mlp_create flags

typedef struct {
  float *params, *grads, *y, *dx, *ema;
} Result;

static uint64_t fnv(const void* p, size_t n, uint64_t h) {
  const unsigned char* c = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

// graph = 1: capture one step on a side stream and replay it STEPS times
static int run(const NnConfig* cfg, int B, int tf32, int graph, Result* out) {
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
  NnCudaMlp* m;
  NnCudaAdam* a;
  NnAdamConfig ac = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .max_grad_norm = 0.5, .ema_decay = 0.99};
  if (nn_cuda_mlp_create(&m, cfg, B, (tf32 ? NN_CUDA_TF32 : 0) | g_flags, s) || nn_cuda_mlp_init(m, 3)) return 1;
  int64_t np = nn_cuda_mlp_param_count(m);
  if (nn_cuda_adam_create(&a, &ac, np, nn_cuda_mlp_params(m), s)) return 1;
  size_t nx = (size_t)B * cfg->in_dim, ny = (size_t)B * cfg->out_dim;
  float *x = malloc(4 * nx), *t = malloc(4 * ny);
  uint64_t r = 17;
  for (size_t i = 0; i < nx; i++) x[i] = (float)(2 * nn_rng_uniform(&r) - 1);
  for (size_t i = 0; i < ny; i++) t[i] = (float)(2 * nn_rng_uniform(&r) - 1);
  float *x_d, *t_d, *y_d, *dy_d, *dx_d;
  cudaMalloc((void**)&x_d, 4 * nx), cudaMalloc((void**)&dx_d, 4 * nx);
  cudaMalloc((void**)&t_d, 4 * ny), cudaMalloc((void**)&y_d, 4 * ny), cudaMalloc((void**)&dy_d, 4 * ny);
  // on s: a pageable cudaMemcpy may return before its DMA lands, and s (non-blocking) is not ordered after it
  cudaMemcpyAsync(x_d, x, 4 * nx, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(t_d, t, 4 * ny, cudaMemcpyHostToDevice, s);
  int err = 0;
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  if (graph) {
    err |= cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess;
  }
  for (int k = 0; k < (graph ? 1 : STEPS); k++) {
    err |= nn_cuda_mlp_forward(m, x_d, B, y_d) != 0;
    err |= nn_cuda_mse_grad(y_d, t_d, (int64_t)ny, (float)(2.0 / (double)ny), dy_d, s) != 0;
    err |= nn_cuda_mlp_backward(m, dy_d, dx_d) != 0;
    err |= nn_cuda_adam_step(a, nn_cuda_mlp_params(m), nn_cuda_mlp_grads(m)) != 0;
  }
  if (graph) {
    err |= cudaStreamEndCapture(s, &g) != cudaSuccess;
    err |= cudaGraphInstantiate(&ge, g, 0) != cudaSuccess;
    for (int k = 0; k < STEPS && !err; k++) err |= cudaGraphLaunch(ge, s) != cudaSuccess;
  }
  err |= cudaStreamSynchronize(s) != cudaSuccess;
  out->params = malloc(4 * np), out->grads = malloc(4 * np), out->ema = malloc(4 * np);
  out->y = malloc(4 * ny), out->dx = malloc(4 * nx);
  err |= nn_cuda_mlp_get_params(m, out->params) != 0;
  err |= nn_cuda_mlp_get_grads(m, out->grads) != 0;
  err |= nn_cuda_adam_download(a, NULL, NULL, out->ema, NULL, NULL) != 0;
  cudaMemcpy(out->y, y_d, 4 * ny, cudaMemcpyDeviceToHost);
  cudaMemcpy(out->dx, dx_d, 4 * nx, cudaMemcpyDeviceToHost);
  if (ge) cudaGraphExecDestroy(ge);
  if (g) cudaGraphDestroy(g);
  cudaFree(x_d), cudaFree(dx_d), cudaFree(t_d), cudaFree(y_d), cudaFree(dy_d);
  free(x), free(t);
  nn_cuda_adam_destroy(a);
  nn_cuda_mlp_destroy(m);
  cudaStreamDestroy(s);
  return err;
}

static void same(const char* label, const Result* a, const Result* b, int64_t np, size_t ny, size_t nx) {
  TEST_CHECK(!memcmp(a->params, b->params, 4 * np), "%s: params differ", label);
  TEST_CHECK(!memcmp(a->grads, b->grads, 4 * np), "%s: grads differ", label);
  TEST_CHECK(!memcmp(a->ema, b->ema, 4 * np), "%s: ema differs", label);
  TEST_CHECK(!memcmp(a->y, b->y, 4 * ny), "%s: outputs differ", label);
  TEST_CHECK(!memcmp(a->dx, b->dx, 4 * nx), "%s: input grads differ", label);
}

static void release(Result* r) { free(r->params), free(r->grads), free(r->ema), free(r->y), free(r->dx); }

int main(void) {
  if (nn_cuda_device_count() < 1) {
    printf("nn_cuda_determinism: no CUDA device, skipped\n");
    return TEST_SKIP;
  }
  NnConfig actor = {.in_dim = 160, .out_dim = 29, .n_hidden = 3, .hidden = {512, 256, 128}, .act = NN_ACT_ELU, .layer_norm = 1};
  int64_t np = nn_param_count(&actor);
  // 4096: cuBLASLt may split K itself; 16384: our weight-gradient GEMMs are split over the batch
  for (int k = 0; k < 5; k++) {
    int tf = k % 2, B = k < 2 ? 4096 : 16384;
    g_flags = k == 4 ? NN_CUDA_THIN : 0;  // the opt-in thin output kernels too (B = 4096 below)
    if (k == 4) B = 4096;
    size_t ny = (size_t)B * actor.out_dim, nx = (size_t)B * actor.in_dim;
    Result r1, r2, r3;
    TEST_CHECK(run(&actor, B, tf, 0, &r1) == 0, "run 1");
    TEST_CHECK(run(&actor, B, tf, 0, &r2) == 0, "run 2");
    TEST_CHECK(run(&actor, B, tf, 1, &r3) == 0, "graph run");
    same(tf ? "tf32 run 1 vs run 2" : "fp32 run 1 vs run 2", &r1, &r2, np, ny, nx);
    same(tf ? "tf32 eager vs graph" : "fp32 eager vs graph", &r1, &r3, np, ny, nx);
    uint64_t h = 1469598103934665603ull;
    h = fnv(r1.params, 4 * np, h), h = fnv(r1.grads, 4 * np, h), h = fnv(r1.ema, 4 * np, h);
    h = fnv(r1.y, 4 * ny, h), h = fnv(r1.dx, 4 * nx, h);
    printf("nn_cuda_determinism B=%d %s%s state hash %016llx\n", B, tf ? "tf32" : "fp32", g_flags ? " thin" : "",
           (unsigned long long)h);
    release(&r1), release(&r2), release(&r3);
  }
  return test_report("nn_cuda_determinism");
}
