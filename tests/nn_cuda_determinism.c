// nn_cuda_determinism: bitwise-identical results across runs. Two independent instances (fresh handles, plans,
// buffers) train the SHAC actor for several steps (forward, MSE gradient, backward with input gradient, Adam
// with clipping and EMA) on the same data; params, grads, outputs, input gradients and EMA must match bit for
// bit, also when the step is captured once as a CUDA graph and replayed, and in TF32 mode; also with the opt-in
// NN_CUDA_THIN and NN_CUDA_FUSE_OUT (the latter also at a batch that leaves a partial block of its fused kernel).
// Prints a hash of the final state so that two processes can be compared too. ADJ_GPU_TEST_SMALL
// (tests/gpu_test_size.h): batches 512, 1024 and 516 (still split over the batch, still a partial fused block)
// and 2 steps. Skipped (77) without a CUDA device.
#include <cuda_runtime.h>
#include <string.h>

#include "nn/nn.h"
#include "nn/nn_cuda.h"
#include "tests/gpu_test_size.h"
#include "tests/nn_cuda_train.h"
#include "tests/test.h"

static int g_flags = 0;  // extra nn_cuda_mlp_create flags

int main(void) {
  if (nn_cuda_device_count() < 1) {
    printf("nn_cuda_determinism: no CUDA device, skipped\n");
    return TEST_SKIP;
  }
  NnConfig actor = {.in_dim = 160, .out_dim = 29, .n_hidden = 3, .hidden = {512, 256, 128}, .act = NN_ACT_ELU, .layer_norm = 1};
  int64_t np = nn_param_count(&actor);
  const int steps = gpu_test_size(4, 2), b4k = gpu_test_size(4096, 512), b16k = gpu_test_size(16384, 1024);
  // 4096: cuBLASLt may split K itself; 16384: our weight-gradient GEMMs are split over the batch
  const struct {
    int tf, B, flags;
    const char* label;
  } cases[] = {
      {0, b4k, 0, ""},
      {1, b4k, 0, ""},
      {0, b16k, 0, ""},
      {1, b16k, 0, ""},
      {0, b4k, NN_CUDA_THIN, " thin"},
      {0, b4k, NN_CUDA_FUSE_OUT, " fuse_out"},
      {1, b4k, NN_CUDA_FUSE_OUT, " fuse_out"},
      {0, b4k + 4, NN_CUDA_FUSE_OUT, " fuse_out"},  // 4100 = 128 x 32 + 4 (516 = 16 x 32 + 4): a partial block
                                                    // in the fused kernel
  };
  for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
    int tf = cases[k].tf, B = cases[k].B;
    g_flags = cases[k].flags;
    size_t ny = (size_t)B * actor.out_dim, nx = (size_t)B * actor.in_dim;
    Result r1, r2, r3;
    TEST_CHECK(train_steps(&actor, B, (tf ? NN_CUDA_TF32 : 0) | g_flags, 0, steps, &r1) == 0, "run 1");
    TEST_CHECK(train_steps(&actor, B, (tf ? NN_CUDA_TF32 : 0) | g_flags, 0, steps, &r2) == 0, "run 2");
    TEST_CHECK(train_steps(&actor, B, (tf ? NN_CUDA_TF32 : 0) | g_flags, 1, steps, &r3) == 0, "graph run");
    same(tf ? "tf32 run 1 vs run 2" : "fp32 run 1 vs run 2", &r1, &r2, np, ny, nx);
    same(tf ? "tf32 eager vs graph" : "fp32 eager vs graph", &r1, &r3, np, ny, nx);
    uint64_t h = state_hash(&r1, np, ny, nx);
    printf("nn_cuda_determinism B=%d %s%s state hash %016llx\n", B, tf ? "tf32" : "fp32", cases[k].label,
           (unsigned long long)h);
    release(&r1), release(&r2), release(&r3);
  }
  return test_report("nn_cuda_determinism");
}
