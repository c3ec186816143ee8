// nn_cuda_train.h: shared pieces of the nn/ GPU tests (nn_cuda_determinism, nn_cuda_tune, nn_cuda_vs_cpu):
// relative L2 error, checked cudaMalloc, and a few SHAC-actor training steps (forward, MSE gradient, backward
// with input gradient, Adam with clipping and EMA) on fixed data, eager or as one captured step replayed, whose
// final state is compared bit for bit and hashed (so two processes can compare their printed hashes).
#ifndef ADJ_TESTS_NN_CUDA_TRAIN_H
#define ADJ_TESTS_NN_CUDA_TRAIN_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"
#include "nn/nn_cuda.h"
#include "tests/test.h"

static double rel(const float* a, const float* b, int64_t n) {
  double d = 0, r = 0;
  for (int64_t i = 0; i < n; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), r += (double)b[i] * b[i];
  return sqrt(d / (r > 0 ? r : 1e-300));
}

static void* dalloc(size_t bytes) {
  void* p = NULL;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    exit(1);
  }
  return p;
}

// the CPU reference's parameters for the GPU comparisons: nn_mlp_init(77), then LayerNorm's gamma = 1 / beta = 0
// (and any other exact 1 or 0) moved off their initial values so that their gradients are generic; s: the stream
static float* reference_params(NnMlp* cm, uint64_t* s) {
  nn_mlp_init(cm, 77);
  int64_t np = nn_mlp_param_count(cm);
  float* p = nn_mlp_params(cm);
  for (int64_t i = 0; i < np; i++)
    if (p[i] == 1.f || p[i] == 0.f) p[i] += (float)(0.2 * (nn_rng_uniform(s) - 0.5));
  return p;
}

// every parameter gradient (per layer: W, b, gamma, beta) of gg against the CPU's g; returns the worst error
static double check_param_grads(const char* name, const NnConfig* c, const float* gg, const float* g, double tol) {
  static const char* nm[4] = {"W", "b", "gamma", "beta"};
  double worst = 0;
  for (int l = 0; l <= c->n_hidden; l++) {
    NnLayerOffsets o;
    nn_layer_offsets(c, l, &o);
    int64_t offs[4] = {o.w, o.b, o.gamma, o.beta}, cnt[4] = {(int64_t)o.in * o.out, o.out, o.out, o.out};
    for (int k = 0; k < 4; k++) {
      if (offs[k] < 0) continue;
      double e = rel(gg + offs[k], g + offs[k], cnt[k]);
      worst = fmax(worst, e);
      TEST_CHECK(e <= tol, "%s: layer %d d%s rel err %.3g", name, l, nm[k], e);
    }
  }
  return worst;
}

typedef struct {
  float *params, *grads, *ema, *y, *dx;  // (np), (np), (np), (B, out), (B, in): host, malloc'ed
} Result;

// steps training steps (graph = 1: one step captured on the model's stream and replayed steps times); 0 or 1
static int train_steps(const NnConfig* cfg, int B, int flags, int graph, int steps, Result* out) {
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
  NnCudaMlp* m;
  NnCudaAdam* a;
  NnAdamConfig ac = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .max_grad_norm = 0.5, .ema_decay = 0.99};
  if (nn_cuda_mlp_create(&m, cfg, B, flags, s) || nn_cuda_mlp_init(m, 3)) return 1;
  // a requested output-layer kernel option that did not apply fails the run (the tests' networks qualify)
  if ((flags & (NN_CUDA_THIN | NN_CUDA_FUSE_OUT)) & ~nn_cuda_mlp_flags(m)) {
    fprintf(stderr, "train_steps: flags %d requested, %d in effect\n", flags, nn_cuda_mlp_flags(m));
    return 1;
  }
  int64_t np = nn_cuda_mlp_param_count(m);
  if (nn_cuda_adam_create(&a, &ac, np, nn_cuda_mlp_params(m), s)) return 1;
  size_t nx = (size_t)B * cfg->in_dim, ny = (size_t)B * cfg->out_dim;
  float *x = (float*)malloc(4 * nx), *t = (float*)malloc(4 * ny);
  uint64_t r = 17;
  for (size_t i = 0; i < nx; i++) x[i] = (float)(2 * nn_rng_uniform(&r) - 1);
  for (size_t i = 0; i < ny; i++) t[i] = (float)(2 * nn_rng_uniform(&r) - 1);
  float *x_d = (float*)dalloc(4 * nx), *dx_d = (float*)dalloc(4 * nx), *t_d = (float*)dalloc(4 * ny);
  float *y_d = (float*)dalloc(4 * ny), *dy_d = (float*)dalloc(4 * ny);
  // on s: a pageable cudaMemcpy may return before its DMA lands, and s (non-blocking) is not ordered after it
  int err = cudaMemcpyAsync(x_d, x, 4 * nx, cudaMemcpyHostToDevice, s) != cudaSuccess;
  err |= cudaMemcpyAsync(t_d, t, 4 * ny, cudaMemcpyHostToDevice, s) != cudaSuccess;
  err |= cudaStreamSynchronize(s) != cudaSuccess;
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  if (graph) err |= cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess;
  for (int k = 0; k < (graph ? 1 : steps) && !err; k++) {
    err |= nn_cuda_mlp_forward(m, x_d, B, y_d) != 0;
    err |= nn_cuda_mse_grad(y_d, t_d, (int64_t)ny, (float)(2.0 / (double)ny), dy_d, s) != 0;
    err |= nn_cuda_mlp_backward(m, dy_d, dx_d) != 0;
    err |= nn_cuda_adam_step(a, nn_cuda_mlp_params(m), nn_cuda_mlp_grads(m)) != 0;
  }
  if (graph) {
    err |= cudaStreamEndCapture(s, &g) != cudaSuccess;
    err |= !g || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess;
    for (int k = 0; k < steps && !err; k++) err |= cudaGraphLaunch(ge, s) != cudaSuccess;
  }
  err |= cudaStreamSynchronize(s) != cudaSuccess;
  out->params = (float*)malloc(4 * np), out->grads = (float*)malloc(4 * np), out->ema = (float*)malloc(4 * np);
  out->y = (float*)malloc(4 * ny), out->dx = (float*)malloc(4 * nx);
  err |= nn_cuda_mlp_get_params(m, out->params) != 0;
  err |= nn_cuda_mlp_get_grads(m, out->grads) != 0;
  err |= nn_cuda_adam_download(a, NULL, NULL, out->ema, NULL, NULL) != 0;
  err |= cudaMemcpy(out->y, y_d, 4 * ny, cudaMemcpyDeviceToHost) != cudaSuccess;
  err |= cudaMemcpy(out->dx, dx_d, 4 * nx, cudaMemcpyDeviceToHost) != cudaSuccess;
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

static uint64_t fnv(const void* p, size_t n, uint64_t h) {
  const unsigned char* c = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

// FNV-1a over params, grads, EMA, outputs, input gradients (in this order)
static uint64_t state_hash(const Result* r, int64_t np, size_t ny, size_t nx) {
  uint64_t h = 1469598103934665603ull;
  h = fnv(r->params, 4 * np, h), h = fnv(r->grads, 4 * np, h), h = fnv(r->ema, 4 * np, h);
  h = fnv(r->y, 4 * ny, h);
  return fnv(r->dx, 4 * nx, h);
}

static void release(Result* r) { free(r->params), free(r->grads), free(r->ema), free(r->y), free(r->dx); }

#endif
