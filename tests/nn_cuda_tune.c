// nn_cuda_tune: NN_CUDA_TUNE (nn/nn_cuda.h). (1) Tuned networks match the float32 CPU reference (output, input
// gradient, every parameter gradient; relative L2 error <= 1e-5, TF32 <= 2e-2), including an input wider than
// every hidden layer. (2) The tune table saved after tuning and loaded again (frozen) selects the same algorithms:
// training steps of the SHAC actor (forward, MSE gradient, backward with input gradient, Adam with clipping and
// EMA) give bit-identical parameters, gradients, EMA, outputs and input gradients before the save and after the
// load, eagerly twice and as a replayed CUDA graph, in fp32 and TF32, and nothing is timed after the load.
// (3) A batch first planned inside a stream capture is not timed and uses the heuristic's first choice: the same
// bits as the default mode.
//   usage: nn_cuda_tune [TABLE]   TABLE absent: tuned here and saved there (then reloaded); present: loaded and
//                                 frozen first, so two processes can compare their printed state hashes.
// ADJ_GPU_TEST_SMALL (tests/gpu_test_size.h): batches of at most 1024 (the training steps at 1024, the capture at
// 250) and 2 steps. NN_CUDA_TUNE_FP32=1 leaves out the TF32 runs: TF32 changes only cuBLASLt's compute type, so the
// fp32 runs launch every kernel of ours that the TF32 ones do, and compute-sanitizer's racecheck, which ran out of
// host memory on the TF32 candidates' cuBLASLt kernels (tests/README.md), checks them all. Skipped (77) without a
// CUDA device.
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <string.h>
#include <unistd.h>

#include "nn/nn.h"
#include "nn/nn_cuda.h"
#include "tests/gpu_test_size.h"
#include "tests/nn_cuda_train.h"
#include "tests/test.h"


// (1) forward + backward of a tuned network against the CPU
static void accuracy(const char* name, NnConfig c, int B, int flags, double tol) {
  NnMlp* cm;
  NnCudaMlp* gm;
  TEST_CHECK(nn_mlp_create(&cm, &c, B) == 0, "cpu create");
  int r = nn_cuda_mlp_create(&gm, &c, B, NN_CUDA_TUNE | flags, NULL);
  TEST_CHECK(r == 0, "%s: cuda create: %s", name, nn_strerror(r));
  if (r) return;
  uint64_t s = 5;
  float* p = reference_params(cm, &s);
  int64_t np = nn_mlp_param_count(cm);
  TEST_CHECK(nn_cuda_mlp_set_params(gm, p) == 0, "set params");
  size_t nx = (size_t)B * c.in_dim, ny = (size_t)B * c.out_dim;
  float *x = malloc(4 * nx), *dy = malloc(4 * ny), *y = malloc(4 * ny), *yg = malloc(4 * ny), *dx = malloc(4 * nx);
  float *dxg = malloc(4 * nx), *gg = malloc(4 * np);
  for (size_t i = 0; i < nx; i++) x[i] = (float)(2 * nn_rng_uniform(&s) - 1);
  for (size_t i = 0; i < ny; i++) dy[i] = (float)(2 * nn_rng_uniform(&s) - 1);
  nn_mlp_forward(cm, x, B, y);
  nn_mlp_backward(cm, dy, dx);
  float *x_d = dalloc(4 * nx), *dy_d = dalloc(4 * ny), *y_d = dalloc(4 * ny), *dx_d = dalloc(4 * nx);
  TEST_CHECK(cudaMemcpy(x_d, x, 4 * nx, cudaMemcpyHostToDevice) == cudaSuccess, "upload");
  TEST_CHECK(cudaMemcpy(dy_d, dy, 4 * ny, cudaMemcpyHostToDevice) == cudaSuccess, "upload");
  TEST_CHECK(nn_cuda_mlp_forward(gm, x_d, B, y_d) == 0, "%s: forward", name);
  TEST_CHECK(nn_cuda_mlp_backward(gm, dy_d, dx_d) == 0, "%s: backward", name);
  TEST_CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
  TEST_CHECK(cudaMemcpy(yg, y_d, 4 * ny, cudaMemcpyDeviceToHost) == cudaSuccess, "download");
  TEST_CHECK(cudaMemcpy(dxg, dx_d, 4 * nx, cudaMemcpyDeviceToHost) == cudaSuccess, "download");
  TEST_CHECK(nn_cuda_mlp_get_grads(gm, gg) == 0, "grads");
  double worst = rel(yg, y, (int64_t)ny), e = rel(dxg, dx, (int64_t)nx);
  TEST_CHECK(worst <= tol, "%s: output rel err %.3g", name, worst);
  TEST_CHECK(e <= tol, "%s: input grad rel err %.3g", name, e);
  worst = fmax(worst, e);
  worst = fmax(worst, check_param_grads(name, &c, gg, nn_mlp_grads(cm), tol));
  printf("%-40s B=%-5d max rel err vs CPU %.2e (tol %.0e)\n", name, B, worst, tol);
  cudaFree(x_d), cudaFree(dy_d), cudaFree(y_d), cudaFree(dx_d);
  free(x), free(dy), free(y), free(yg), free(dx), free(dxg), free(gg);
  nn_mlp_destroy(cm);
  nn_cuda_mlp_destroy(gm);
}


// (3) forward at a batch first planned inside a capture: tuned model == default model, bit for bit
static void capture_fallback(const NnConfig* cfg, int B, int flags) {
  cudaStream_t s;
  TEST_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
  NnCudaMlp* m[2];
  size_t nx = (size_t)B * cfg->in_dim, ny = (size_t)B * cfg->out_dim;
  float *x = malloc(4 * nx), *y[2] = {malloc(4 * ny), malloc(4 * ny)};
  uint64_t r = 23;
  for (size_t i = 0; i < nx; i++) x[i] = (float)(2 * nn_rng_uniform(&r) - 1);
  float *x_d = dalloc(4 * nx), *y_d = dalloc(4 * ny);
  // on s: a pageable cudaMemcpy may return before its DMA lands, and s (non-blocking) is not ordered after it
  TEST_CHECK(cudaMemcpyAsync(x_d, x, 4 * nx, cudaMemcpyHostToDevice, s) == cudaSuccess, "upload");
  TEST_CHECK(cudaStreamSynchronize(s) == cudaSuccess, "sync");
  int timed0 = nn_cuda_tune_timed(), n0 = nn_cuda_tune_count();
  for (int k = 0; k < 2; k++) {
    // max_batch 4 B: create plans 4 B (tuned for k = 0 outside the capture), B is first planned in the capture
    TEST_CHECK(nn_cuda_mlp_create(&m[k], cfg, 4 * B, flags | (k == 0 ? NN_CUDA_TUNE : 0), s) == 0, "create");
    TEST_CHECK(nn_cuda_mlp_init(m[k], 9) == 0, "init");
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    int err = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess;
    err |= nn_cuda_mlp_forward(m[k], x_d, B, y_d) != 0;
    err |= cudaStreamEndCapture(s, &g) != cudaSuccess;
    err |= !g || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess;
    err |= cudaGraphLaunch(ge, s) != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess;
    TEST_CHECK(!err, "capture with the batch planned inside it (%s mode)", k ? "default" : "tuned");
    TEST_CHECK(cudaMemcpy(y[k], y_d, 4 * ny, cudaMemcpyDeviceToHost) == cudaSuccess, "download");
    if (ge) cudaGraphExecDestroy(ge);
    if (g) cudaGraphDestroy(g);
    nn_cuda_mlp_destroy(m[k]);
  }
  int timed_create = nn_cuda_tune_timed() - timed0;  // the 4 B plan of the tuned create (0 when frozen/known)
  TEST_CHECK(!memcmp(y[0], y[1], 4 * ny), "batch planned inside a capture: tuned differs from default");
  printf("capture fallback B=%d%s: tuned == default bit for bit; shapes timed outside/inside the capture: %d/0 (%d -> %d "
         "entries)\n",
         B, flags & NN_CUDA_TF32 ? " tf32" : "", timed_create, n0, nn_cuda_tune_count());
  cudaFree(x_d), cudaFree(y_d);
  free(x), free(y[0]), free(y[1]);
  cudaStreamDestroy(s);
}

int main(int argc, char** argv) {
  if (nn_cuda_device_count() < 1) {
    printf("nn_cuda_tune: no CUDA device, skipped\n");
    return TEST_SKIP;
  }
  char err[512] = "";
  char path[256];
  int given = argc > 1, loaded = given && access(argv[1], F_OK) == 0;
  if (given) snprintf(path, sizeof path, "%s", argv[1]);
  else {
    snprintf(path, sizeof path, "/tmp/nn_cuda_tune_XXXXXX");
    int fd = mkstemp(path);
    TEST_CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) close(fd);
  }
  nn_cuda_tune_clear();
  if (loaded) {
    int r = nn_cuda_tune_load(path, err, sizeof err);
    TEST_CHECK(r == 0, "load %s: %s", path, err);
    nn_cuda_tune_freeze(1);
    printf("loaded %d tune table entries from %s (frozen)\n", nn_cuda_tune_count(), path);
  }
  const char* fp32_env = getenv("NN_CUDA_TUNE_FP32");
  const int ntf = fp32_env && fp32_env[0] == '1' ? 1 : 2;  // fp32 only, or fp32 and TF32
  if (ntf == 1) printf("NN_CUDA_TUNE_FP32=1: the TF32 runs left out\n");
  NnConfig actor = {.in_dim = 160, .out_dim = 29, .n_hidden = 3, .hidden = {512, 256, 128}, .act = NN_ACT_ELU, .layer_norm = 1};
  NnConfig critic = actor;
  critic.in_dim = 286, critic.out_dim = 1;
  NnConfig wide_in = {.in_dim = 300, .out_dim = 5, .n_hidden = 2, .hidden = {64, 32}, .act = NN_ACT_TANH, .layer_norm = 1};
  // (1)
  accuracy("tuned actor elu+layernorm", actor, gpu_test_size(2048, 512), 0, 1e-5);
  accuracy("tuned critic elu+layernorm", critic, 300, 0, 1e-5);
  accuracy("tuned input wider than the hidden layers", wide_in, 513, 0, 1e-5);
  accuracy("tuned actor, no split-K", actor, gpu_test_size(1024, 256), NN_CUDA_NO_SPLITK, 1e-5);
  if (ntf == 2) accuracy("tuned actor tf32 (loose tolerance)", actor, gpu_test_size(2048, 512), NN_CUDA_TF32, 2e-2);
  // (2)
  const int B = gpu_test_size(4096, 1024), steps = gpu_test_size(3, 2);
  int64_t np = nn_param_count(&actor);
  size_t ny = (size_t)B * actor.out_dim, nx = (size_t)B * actor.in_dim;
  Result r0[2];
  for (int tf = 0; tf < ntf; tf++)
    TEST_CHECK(train_steps(&actor, B, NN_CUDA_TUNE | (tf ? NN_CUDA_TF32 : 0), 0, steps, &r0[tf]) == 0, "first tuned run");
  int n_entries = nn_cuda_tune_count();
  if (!loaded) {
    TEST_CHECK(nn_cuda_tune_timed() > 0 && n_entries == nn_cuda_tune_timed(), "tuning recorded %d entries, timed %d",
               n_entries, nn_cuda_tune_timed());
    int r = nn_cuda_tune_save(path, err, sizeof err);
    TEST_CHECK(r == 0, "save %s: %s", path, err);
    nn_cuda_tune_clear();
    TEST_CHECK(nn_cuda_tune_count() == 0, "clear");
    r = nn_cuda_tune_load(path, err, sizeof err);
    TEST_CHECK(r == 0 && nn_cuda_tune_count() == n_entries, "reload %s: %d entries, %s", path, nn_cuda_tune_count(), err);
    nn_cuda_tune_freeze(1);
    printf("tuned %d GEMM shapes, saved to %s and reloaded (frozen)\n", n_entries, path);
  }
  int timed = nn_cuda_tune_timed();
  for (int tf = 0; tf < ntf; tf++) {
    int fl = NN_CUDA_TUNE | (tf ? NN_CUDA_TF32 : 0);
    Result r1, r2, r3;
    TEST_CHECK(train_steps(&actor, B, fl, 0, steps, &r1) == 0, "run 1");
    TEST_CHECK(train_steps(&actor, B, fl, 0, steps, &r2) == 0, "run 2");
    TEST_CHECK(train_steps(&actor, B, fl, 1, steps, &r3) == 0, "graph run");
    same(tf ? "tf32: first run vs run 1 with the loaded table" : "fp32: first run vs run 1 with the loaded table", &r0[tf],
         &r1, np, ny, nx);
    same(tf ? "tf32: run 1 vs run 2" : "fp32: run 1 vs run 2", &r1, &r2, np, ny, nx);
    same(tf ? "tf32: eager vs graph" : "fp32: eager vs graph", &r1, &r3, np, ny, nx);
    uint64_t h = state_hash(&r1, np, ny, nx);
    printf("nn_cuda_tune B=%d %s tuned state hash %016llx\n", B, tf ? "tf32" : "fp32", (unsigned long long)h);
    release(&r1), release(&r2), release(&r3), release(&r0[tf]);
  }
  TEST_CHECK(nn_cuda_tune_timed() == timed && nn_cuda_tune_count() == n_entries,
             "shapes timed after the table was loaded: %d (entries %d -> %d)", nn_cuda_tune_timed() - timed, n_entries,
             nn_cuda_tune_count());
  // (3) unfrozen, a batch no earlier step planned (the tuned create plans 4 B outside the capture)
  nn_cuda_tune_freeze(0);
  const int Bc = gpu_test_size(1000, 250);
  capture_fallback(&actor, Bc, 0);
  if (ntf == 2) capture_fallback(&actor, Bc, NN_CUDA_TF32);
  nn_cuda_tune_last_error(err, sizeof err);
  TEST_CHECK(err[0] == 0, "tuning error reported: %s", err);
  if (!given) unlink(path);
  return test_report("nn_cuda_tune");
}
