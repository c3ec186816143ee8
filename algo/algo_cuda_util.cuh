// algo_cuda_util.cuh: small device helpers shared by the CUDA algorithms (shac_cuda.cu, ppo_cuda.cu): error
// checks (no prints: the message goes to the caller's buffer), deterministic reductions (fixed grid, fixed tree: the sum of the same inputs is the same bits on every
// run), the k-th smallest of non-negative floats, aligned views for nn_cuda, event timing. Everything runs on
// the legacy default stream, in order with the engine (sim_cuda) and nn_cuda work.
#ifndef ADJ_ALGO_ALGO_CUDA_UTIL_CUH
#define ADJ_ALGO_ALGO_CUDA_UTIL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "common/cuda_check.cuh"

#define AC_THREADS 256       // threads per block of the elementwise kernels
#define AC_RED_THREADS 1024  // the one block of the reductions

// Checks inside an algorithm's functions returning int, with `s` the algorithm: a failure is recorded in the
// message buffer of the API call in progress (s->err, s->errlen: the caller's, bound at each entry point;
// NULL: code only) and -1 returned. AC_CK: CUDA calls (the one check, common/cuda_check.cuh); AC_NN: nn_cuda
// calls (their codes); AC_ENV: env_cuda calls (their message).
#define AC_CK(call) ADJ_CUDA_CHECK(call, s->err, s->errlen, -1)
#define AC_NN(call)                                                                                      \
  do {                                                                                                   \
    int r_ = (call);                                                                                     \
    if (r_) {                                                                                            \
      if (s->err && s->errlen)                                                                           \
        snprintf(s->err, s->errlen, "%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, nn_strerror(r_),    \
                 cudaGetErrorString(cudaGetLastError()));                                                \
      return -1;                                                                                         \
    }                                                                                                    \
  } while (0)
#define AC_ENV(call)                                                                                   \
  do {                                                                                                 \
    if (call) {                                                                                        \
      if (s->err && s->errlen) snprintf(s->err, s->errlen, "%s: %s", #call, env_cuda_last_error(s->E)); \
      return -1;                                                                                       \
    }                                                                                                  \
  } while (0)
#define AC_LAUNCHED() AC_CK(cudaGetLastError())

static inline unsigned ac_blocks(long long n) { return (unsigned)((n + AC_THREADS - 1) / AC_THREADS); }

// block-wide sum over AC_RED_THREADS threads in a fixed tree; every thread gets the result
template <class V>
static __device__ V ac_block_sum(V v, V* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int o = AC_RED_THREADS / 2; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
    __syncthreads();
  }
  V r = sh[0];
  __syncthreads();
  return r;
}

// *out (= or +=) scale * sum_i x[i]: per-thread strided sums, then the fixed tree (one block)
static __global__ void ac_k_sum(const double* __restrict__ x, long long n, double scale, int accumulate, double* out) {
  __shared__ double sh[AC_RED_THREADS];
  double s = 0;
  for (long long i = threadIdx.x; i < n; i += AC_RED_THREADS) s += x[i];
  s = ac_block_sum(s, sh);
  if (threadIdx.x == 0) *out = (accumulate ? *out : 0.0) + scale * s;
}
static inline cudaError_t ac_sum(const double* x, long long n, double scale, int accumulate, double* out) {
  ac_k_sum<<<1, AC_RED_THREADS>>>(x, n, scale, accumulate, out);
  return cudaGetLastError();
}

// the k-th smallest (0-based) of n non-negative floats, in the block's threads: the largest bit pattern r with
// #{x < r} <= k, built from the most significant bit down (non-negative floats order as their bit patterns)
static __device__ float ac_block_select(const float* x, int n, int k, int* sh) {
  unsigned r = 0;
  for (int b = 31; b >= 0; b--) {
    unsigned t = r | (1u << b);
    int c = 0;
    for (int i = threadIdx.x; i < n; i += AC_RED_THREADS) c += __float_as_uint(x[i]) < t;
    if (ac_block_sum(c, sh) <= k) r = t;
  }
  return __uint_as_float(r);
}

static __global__ void ac_k_add(float* __restrict__ y, const float* __restrict__ x, long long n) {  // y += x
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

// p (16-byte aligned for nn_cuda) or, where it is not, a copy of its n floats in scratch
static inline const float* ac_aligned(const float* p, long long n, float* scratch) {
  if (((uintptr_t)p & 15) == 0) return p;
  cudaMemcpyAsync(scratch, p, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, 0);
  return scratch;
}

static inline size_t ac_al(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

// seconds between two recorded events (after they completed)
static inline double ac_elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) return 0;
  return 1e-3 * ms;
}

#endif
