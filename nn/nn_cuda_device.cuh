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

// One row of width h = 128 V held by a warp (the lane owns the float4 groups lane + 32 i): a = act(a), then with
// LN (a - mu) * rs * gamma + beta, mean and 1 / std from butterfly sums in a fixed order; each result group is
// stored as it is computed, to d0 (TWO: to d0 only where ok, and always to d1), and with LN *mu, *rs are set.
// k_hidden_fwd4 (TWO false) and the fused output-layer kernel (TWO true) both call it: their hidden rows are the
// same bits, and k_hidden_fwd4's code is what it was when it held these lines itself.
template <int V, bool LN, bool TWO>
static __device__ __forceinline__ void act_ln_row4(float4* a, int lane, int act, float eps, const float* gamma,
                                                   const float* beta, float4* d0, bool ok, float4* d1,
                                                   float* mu_out, float* rs_out) {
  const int h = 128 * V;
#pragma unroll
  for (int i = 0; i < V; i++)
    a[i].x = act_f(act, a[i].x), a[i].y = act_f(act, a[i].y), a[i].z = act_f(act, a[i].z), a[i].w = act_f(act, a[i].w);
  if (!LN) {
#pragma unroll
    for (int i = 0; i < V; i++) {
      if (!TWO || ok) d0[lane + 32 * i] = a[i];
      if (TWO) d1[lane + 32 * i] = a[i];
    }
    return;
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < V; i++) s += a[i].x, s += a[i].y, s += a[i].z, s += a[i].w;
  float mu = warp_sum(s) / (float)h, v = 0.f;
#pragma unroll
  for (int i = 0; i < V; i++) {
    float d0 = a[i].x - mu, d1 = a[i].y - mu, d2 = a[i].z - mu, d3 = a[i].w - mu;
    v += d0 * d0, v += d1 * d1, v += d2 * d2, v += d3 * d3;
  }
  float rs = 1.f / sqrtf(warp_sum(v) / (float)h + eps);
  const float4* g4 = (const float4*)gamma;
  const float4* b4 = (const float4*)beta;
#pragma unroll
  for (int i = 0; i < V; i++) {
    float4 g = g4[lane + 32 * i], b = b4[lane + 32 * i], o;
    o.x = (a[i].x - mu) * rs * g.x + b.x, o.y = (a[i].y - mu) * rs * g.y + b.y;
    o.z = (a[i].z - mu) * rs * g.z + b.z, o.w = (a[i].w - mu) * rs * g.w + b.w;
    if (!TWO || ok) d0[lane + 32 * i] = o;
    if (TWO) d1[lane + 32 * i] = o;
  }
  *mu_out = mu, *rs_out = rs;
}

#endif
