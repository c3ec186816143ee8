// nn_cuda_device.cuh: device helpers of the GPU MLP's kernels (activation and its derivative, warp sum), shared
// by nn_cuda.cu and nn_cuda_fused.cu so that both compute the same bits. Not a public header.
#ifndef NN_CUDA_DEVICE_CUH
#define NN_CUDA_DEVICE_CUH
#include <math.h>

#include "nn/nn.h"

static __device__ __forceinline__ float act_f(int a, float z) {
  switch (a) {
    case NN_ACT_ELU: return z > 0.f ? z : expm1f(z);
    case NN_ACT_SILU: return z / (1.f + expf(-z));
    case NN_ACT_RELU: return z > 0.f ? z : 0.f;
    case NN_ACT_TANH: return tanhf(z);
    default: return z;
  }
}

static __device__ __forceinline__ float act_df(int a, float z) {
  switch (a) {
    case NN_ACT_ELU: return z > 0.f ? 1.f : expf(z);
    case NN_ACT_SILU: {
      float s = 1.f / (1.f + expf(-z));
      return s * (1.f + z * (1.f - s));
    }
    case NN_ACT_RELU: return z > 0.f ? 1.f : 0.f;
    case NN_ACT_TANH: {
      float t = tanhf(z);
      return 1.f - t * t;
    }
    default: return 1.f;
  }
}

// butterfly sum: every lane gets the same, order fixed
static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
#endif
