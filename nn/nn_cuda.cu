// GPU MLP (cuBLASLt + fused elementwise kernels), Adam/AdamW with EMA, observation normalizer. See nn_cuda.h.
//
// Layout: activations are row-major (batch, features), which cuBLASLt (column-major) sees as (features, batch).
//   forward  Z^T (out, B) = op_T(W^cm (in, out)) · X^T (in, B)   + bias epilogue (bias over rows)
//   dgrad    dX^T (in, B) = W^cm (in, out) · dZ^T (out, B)
//   wgrad    dW^cm (in, out) = X^T (in, B) · op_T(dZ^T (out, B)); the batch is cut into S slices computed as
//            one strided-batched GEMM into a workspace and summed in slice order (deterministic split-K).
// Hidden layer post-processing (act, LayerNorm) is one warp-per-row kernel; its backward is one kernel that
// also forms per-block column partials of the bias, gamma and beta gradients, summed in block order.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_cuda_device.cuh"  // act_f, act_df, warp_sum
#include "nn/nn_cuda_internal.h"

#define NN_PART_BLOCKS 264     // column-sum partial blocks for width >= 512 (2 per SM on an H100/H200)

// blocks of the backward row kernels (fixed for a given B: deterministic)
static int part_blocks(int h) {
  (void)h;
  return NN_PART_BLOCKS;
}
#define NN_MAX_SPLIT 64

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

extern "C" int nn_cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------------------
// kernels: hidden layer forward/backward, output layer, column-sum finalization, split-K reduction
// ---------------------------------------------------------------------------------------------------------
// y (B, h) = LN(act(z)) or act(z); one warp per row; lane owns columns lane + 32 i.
template <int NPL, bool LN>
__global__ void k_hidden_fwd(const float* __restrict__ z, float* __restrict__ y, float* __restrict__ mean,
                             float* __restrict__ rstd, const float* __restrict__ gamma,
                             const float* __restrict__ beta, int B, int h, int act, float eps) {
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (row >= B) return;
  const float* zr = z + (size_t)row * h;
  float* yr = y + (size_t)row * h;
  float a[NPL];
#pragma unroll
  for (int i = 0; i < NPL; i++) {
    int j = lane + 32 * i;
    a[i] = j < h ? act_f(act, zr[j]) : 0.f;
  }
  if (!LN) {
#pragma unroll
    for (int i = 0; i < NPL; i++)
      if (lane + 32 * i < h) yr[lane + 32 * i] = a[i];
    return;
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < NPL; i++) s += a[i];
  float mu = warp_sum(s) / (float)h, v = 0.f;
#pragma unroll
  for (int i = 0; i < NPL; i++) {
    float d = lane + 32 * i < h ? a[i] - mu : 0.f;
    v += d * d;
  }
  float rs = 1.f / sqrtf(warp_sum(v) / (float)h + eps);
#pragma unroll
  for (int i = 0; i < NPL; i++) {
    int j = lane + 32 * i;
    if (j < h) yr[j] = (a[i] - mu) * rs * gamma[j] + beta[j];
  }
  if (lane == 0) mean[row] = mu, rstd[row] = rs;
}

// dz (B, h) from dy (B, h): through LayerNorm (if LN) and the activation (act, output scale). Column partials
// part (gridDim.x, nq, h): q = 0 sum dz (bias grad), 1 sum dy*xhat (gamma), 2 sum dy (beta).
// z may be NULL when act is NONE; dz may alias dy; dz NULL: dz = dy is not stored (output layer, identity).
template <int NPL, bool LN>
__global__ void k_hidden_bwd(const float* dy, const float* __restrict__ z, const float* __restrict__ mean,
                             const float* __restrict__ rstd, const float* __restrict__ gamma, float* dz,
                             float* __restrict__ part, int B, int h, int rows_per_block, int act, float scale) {
  extern __shared__ float sm[];  // (warps, h)
  const int nw = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = blockIdx.x * rows_per_block, r1 = min(B, r0 + rows_per_block);
  float acc_b[NPL], acc_g[NPL], acc_be[NPL], gam[NPL];
#pragma unroll
  for (int i = 0; i < NPL; i++) {
    int j = lane + 32 * i;
    acc_b[i] = acc_g[i] = acc_be[i] = 0.f;
    gam[i] = (LN && j < h) ? gamma[j] : 0.f;
  }
  const float inv_h = 1.f / (float)h;
  for (int r = r0 + warp; r < r1; r += nw) {
    const float* dyr = dy + (size_t)r * h;
    float d[NPL], zz[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) {
      int j = lane + 32 * i;
      d[i] = j < h ? dyr[j] : 0.f;
      zz[i] = (j < h && z) ? z[(size_t)r * h + j] : 0.f;
    }
    float da[NPL];
    if (LN) {
      float mu = mean[r], rs = rstd[r], xh[NPL], sg = 0.f, sgx = 0.f;
#pragma unroll
      for (int i = 0; i < NPL; i++) {
        xh[i] = lane + 32 * i < h ? (act_f(act, zz[i]) - mu) * rs : 0.f;
        float g = d[i] * gam[i];
        acc_g[i] += d[i] * xh[i];
        acc_be[i] += d[i];
        sg += g, sgx += g * xh[i];
      }
      sg = warp_sum(sg) * inv_h, sgx = warp_sum(sgx) * inv_h;
#pragma unroll
      for (int i = 0; i < NPL; i++) da[i] = rs * (d[i] * gam[i] - sg - xh[i] * sgx);
    } else {
#pragma unroll
      for (int i = 0; i < NPL; i++) da[i] = d[i] * scale;
    }
#pragma unroll
    for (int i = 0; i < NPL; i++) {
      int j = lane + 32 * i;
      float g = act == NN_ACT_NONE ? da[i] : da[i] * act_df(act, zz[i]);
      acc_b[i] += g;
      if (dz && j < h) dz[(size_t)r * h + j] = g;
    }
  }
  // block reduction over warps in warp order, one quantity at a time
  const int nq = LN ? 3 : 1;
  for (int q = 0; q < nq; q++) {
#pragma unroll
    for (int i = 0; i < NPL; i++) {
      int j = lane + 32 * i;
      if (j < h) sm[warp * h + j] = q == 0 ? acc_b[i] : (q == 1 ? acc_g[i] : acc_be[i]);
    }
    __syncthreads();
    for (int j = threadIdx.x; j < h; j += blockDim.x) {
      float s = 0.f;
      for (int w = 0; w < nw; w++) s += sm[w * h + j];
      part[((size_t)blockIdx.x * nq + q) * h + j] = s;
    }
    __syncthreads();
  }
}

// Vectorized variants for widths h = 128 V (the usual 128/256/512/1024): lane owns the float4 groups
// lane + 32 i, i < V; same arithmetic per element as the scalar kernels above.
template <int V, bool LN>
__global__ void k_hidden_fwd4(const float* __restrict__ z, float* __restrict__ y, float* __restrict__ mean,
                              float* __restrict__ rstd, const float* __restrict__ gamma,
                              const float* __restrict__ beta, int B, int act, float eps) {
  const int h = 128 * V;
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (row >= B) return;
  const float4* zr = (const float4*)(z + (size_t)row * h);
  float4* yr = (float4*)(y + (size_t)row * h);
  float4 a[V];
#pragma unroll
  for (int i = 0; i < V; i++) a[i] = zr[lane + 32 * i];
  float mu, rs;
  act_ln_row4<V, LN, false>(a, lane, act, eps, gamma, beta, yr, true, NULL, &mu, &rs);
  if (LN && lane == 0) mean[row] = mu, rstd[row] = rs;
}

// Backward for h = 128 V with the column accumulators in shared memory (nw, nq, h), one region per warp, so
// that registers hold only the row being processed (occupancy); sums in the same order as k_hidden_bwd.
template <int V, bool LN>
__global__ void k_hidden_bwd4(const float* dy, const float* __restrict__ z, const float* __restrict__ mean,
                              const float* __restrict__ rstd, const float* __restrict__ gamma, float* dz,
                              float* __restrict__ part, int B, int rows_per_block, int act) {
  extern __shared__ float sm[];
  const int h = 128 * V, nq = LN ? 3 : 1;
  const int nw = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = blockIdx.x * rows_per_block, r1 = min(B, r0 + rows_per_block);
  float4* acc = (float4*)(sm + (size_t)warp * nq * h);  // (nq, h/4)
  const float4 zero4 = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int i = 0; i < V; i++)
    for (int q = 0; q < nq; q++) acc[q * 32 * V + lane + 32 * i] = zero4;
  float gam[4 * V];
  if (LN) {
#pragma unroll
    for (int i = 0; i < V; i++) {
      float4 g = ((const float4*)gamma)[lane + 32 * i];
      gam[4 * i] = g.x, gam[4 * i + 1] = g.y, gam[4 * i + 2] = g.z, gam[4 * i + 3] = g.w;
    }
  }
  const float inv_h = 1.f / (float)h;
  for (int r = r0 + warp; r < r1; r += nw) {
    const float4* dyr = (const float4*)(dy + (size_t)r * h);
    const float4* zr = (const float4*)(z + (size_t)r * h);
    float d[4 * V], zz[4 * V];
#pragma unroll
    for (int i = 0; i < V; i++) {
      float4 a = dyr[lane + 32 * i], b = zr[lane + 32 * i];
      d[4 * i] = a.x, d[4 * i + 1] = a.y, d[4 * i + 2] = a.z, d[4 * i + 3] = a.w;
      zz[4 * i] = b.x, zz[4 * i + 1] = b.y, zz[4 * i + 2] = b.z, zz[4 * i + 3] = b.w;
    }
    float da[4 * V];
    if (LN) {
      float mu = mean[r], rs = rstd[r], xh[4 * V], sg = 0.f, sgx = 0.f;
#pragma unroll
      for (int k = 0; k < 4 * V; k++) {
        xh[k] = (act_f(act, zz[k]) - mu) * rs;
        float g = d[k] * gam[k];
        sg += g, sgx += g * xh[k];
      }
#pragma unroll
      for (int i = 0; i < V; i++) {
        float4 ag = acc[32 * V + lane + 32 * i], ab = acc[64 * V + lane + 32 * i];
        ag.x += d[4 * i] * xh[4 * i], ag.y += d[4 * i + 1] * xh[4 * i + 1];
        ag.z += d[4 * i + 2] * xh[4 * i + 2], ag.w += d[4 * i + 3] * xh[4 * i + 3];
        ab.x += d[4 * i], ab.y += d[4 * i + 1], ab.z += d[4 * i + 2], ab.w += d[4 * i + 3];
        acc[32 * V + lane + 32 * i] = ag, acc[64 * V + lane + 32 * i] = ab;
      }
      sg = warp_sum(sg) * inv_h, sgx = warp_sum(sgx) * inv_h;
#pragma unroll
      for (int k = 0; k < 4 * V; k++) da[k] = rs * (d[k] * gam[k] - sg - xh[k] * sgx);
    } else {
#pragma unroll
      for (int k = 0; k < 4 * V; k++) da[k] = d[k];
    }
    float4* dzr = (float4*)(dz + (size_t)r * h);
#pragma unroll
    for (int i = 0; i < V; i++) {
      float4 o, ab = acc[lane + 32 * i];
      o.x = da[4 * i] * act_df(act, zz[4 * i]), o.y = da[4 * i + 1] * act_df(act, zz[4 * i + 1]);
      o.z = da[4 * i + 2] * act_df(act, zz[4 * i + 2]), o.w = da[4 * i + 3] * act_df(act, zz[4 * i + 3]);
      ab.x += o.x, ab.y += o.y, ab.z += o.z, ab.w += o.w;
      acc[lane + 32 * i] = ab;
      dzr[lane + 32 * i] = o;
    }
  }
  __syncthreads();
  for (int j = threadIdx.x; j < nq * h; j += blockDim.x) {
    float s = 0.f;
    for (int w = 0; w < nw; w++) s += sm[(size_t)w * nq * h + j];
    part[(size_t)blockIdx.x * nq * h + j] = s;
  }
}

// Thin output layers (out <= 32, in <= 128; the actor's 128->29, the critic's 128->1), where cuBLASLt's
// tiles are mostly empty: plain fp32 kernels with W in shared memory, fixed summation order (also in TF32 mode).
#define NN_THIN_ROWS 32
#define NN_THIN_BLOCKS 128  // weight-gradient row chunks (partials summed in order by k_finalize)
#define NN_THIN_MAX_BATCH 8192  // above this cuBLASLt is faster (these kernels do twice the instructions without FMA)

static int thin_ok(int in, int out) { return out <= 32 && in <= 128; }

// z (B, out) = x (B, in) W^T + b
__global__ void k_thin_fwd(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
                           float* __restrict__ z, int B, int in, int out) {
  extern __shared__ float sm[];
  float* ws = sm;                   // (out, in + 1), padded against bank conflicts
  float* xs = sm + out * (in + 1);  // (NN_THIN_ROWS, in)
  const int r0 = blockIdx.x * NN_THIN_ROWS, rows = min(NN_THIN_ROWS, B - r0);
  for (int i = threadIdx.x; i < out * in; i += blockDim.x) ws[(i / in) * (in + 1) + i % in] = W[i];
  for (int i = threadIdx.x; i < rows * in; i += blockDim.x) xs[i] = x[(size_t)r0 * in + i];
  __syncthreads();
  for (int t = threadIdx.x; t < rows * out; t += blockDim.x) {
    int r = t / out, o = t - r * out;
    const float* xr = xs + r * in;
    const float* wr = ws + o * (in + 1);
    float s = 0.f;
    for (int k = 0; k < in; k++) s += xr[k] * wr[k];
    z[(size_t)(r0 + r) * out + o] = s + bias[o];
  }
}

// dx (B, in) = dz (B, out) W (out, in)
__global__ void k_thin_dgrad(const float* __restrict__ dz, const float* __restrict__ W, float* __restrict__ dx, int B,
                             int in, int out) {
  extern __shared__ float sm[];
  float* ws = sm;             // (out, in)
  float* ds = sm + out * in;  // (NN_THIN_ROWS, out)
  const int r0 = blockIdx.x * NN_THIN_ROWS, rows = min(NN_THIN_ROWS, B - r0);
  for (int i = threadIdx.x; i < out * in; i += blockDim.x) ws[i] = W[i];
  for (int i = threadIdx.x; i < rows * out; i += blockDim.x) ds[i] = dz[(size_t)r0 * out + i];
  __syncthreads();
  for (int t = threadIdx.x; t < rows * in; t += blockDim.x) {
    int r = t / in, k = t - r * in;
    float s = 0.f;
    for (int o = 0; o < out; o++) s += ds[r * out + o] * ws[o * in + k];
    dx[(size_t)(r0 + r) * in + k] = s;
  }
}

// part (gridDim.x, out * in): block p sums dz[b][o] * x[b][k] over its rows, in row order
__global__ void k_thin_wgrad(const float* __restrict__ dz, const float* __restrict__ x, float* __restrict__ part,
                             int B, int in, int out, int rows_per_block) {
  __shared__ float xt[NN_THIN_ROWS * 128];  // (NN_THIN_ROWS, in)
  __shared__ float ds[NN_THIN_ROWS * 32];   // (NN_THIN_ROWS, out)
  const int n = out * in, r0 = blockIdx.x * rows_per_block, r1 = min(B, r0 + rows_per_block);
  float acc[16];
  int oo[16], kk[16];
#pragma unroll
  for (int j = 0; j < 16; j++) {
    int t = threadIdx.x + j * blockDim.x;
    acc[j] = 0.f, oo[j] = t < n ? t / in : 0, kk[j] = t < n ? t % in : 0;
  }
  for (int rt = r0; rt < r1; rt += NN_THIN_ROWS) {
    int rows = min(NN_THIN_ROWS, r1 - rt);
    __syncthreads();
    for (int i = threadIdx.x; i < rows * in; i += blockDim.x) xt[i] = x[(size_t)rt * in + i];
    for (int i = threadIdx.x; i < rows * out; i += blockDim.x) ds[i] = dz[(size_t)rt * out + i];
    __syncthreads();
    for (int r = 0; r < rows; r++) {
#pragma unroll
      for (int j = 0; j < 16; j++) acc[j] += ds[r * out + oo[j]] * xt[r * in + kk[j]];
    }
  }
#pragma unroll
  for (int j = 0; j < 16; j++) {
    int t = threadIdx.x + j * blockDim.x;
    if (t < n) part[(size_t)blockIdx.x * n + t] = acc[j];
  }
}

__global__ void k_finalize(const NnFinJobs jobs, float* __restrict__ grads) {
  const NnFinJob* J = &jobs.j[blockIdx.y];
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)J->nq * J->n) return;
  int q = (int)(t / J->n);
  long long j = t - (long long)q * J->n;
  // eight independent partial sums keep eight loads in flight; combined in a fixed order
  const float* src = J->src + (size_t)q * J->n + j;
  const size_t stride = (size_t)J->nq * J->n;
  float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f, s4 = 0.f, s5 = 0.f, s6 = 0.f, s7 = 0.f;
  int p = 0;
  for (; p + 8 <= J->count; p += 8) {
    const float* a = src + (size_t)p * stride;
    s0 += a[0], s1 += a[stride], s2 += a[2 * stride], s3 += a[3 * stride];
    s4 += a[4 * stride], s5 += a[5 * stride], s6 += a[6 * stride], s7 += a[7 * stride];
  }
  float s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
  for (; p < J->count; p++) s += src[(size_t)p * stride];
  grads[J->dst[q] + j] = s;
}

// y = scale * act(z) (output layer)
__global__ void k_out_fwd(const float* __restrict__ z, float* __restrict__ y, long long n, int act, float scale) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale * act_f(act, z[i]);
}

__global__ void k_mse_grad(const float* __restrict__ y, const float* __restrict__ t, long long n, float scale,
                           float* __restrict__ dy) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dy[i] = scale * (y[i] - t[i]);
}

static unsigned nblocks(long long n, int t) { return (unsigned)((n + t - 1) / t); }

// ---------------------------------------------------------------------------------------------------------
// cuBLASLt plans
// ---------------------------------------------------------------------------------------------------------
static void gemm_free(NnGemm* g) {
  if (g->desc) cublasLtMatmulDescDestroy(g->desc);
  if (g->la) cublasLtMatrixLayoutDestroy(g->la);
  if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
  if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
  memset(g, 0, sizeof(*g));
}

static int layout(cublasLtMatrixLayout_t* l, int rows, int cols, int ld, int count, long long stride) {
  CKB(cublasLtMatrixLayoutCreate(l, CUDA_R_32F, (uint64_t)rows, (uint64_t)cols, ld));
  if (count > 1) {
    int32_t c = count;
    int64_t s = stride;
    CKB(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c, sizeof(c)));
    CKB(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof(s)));
  }
  return NN_OK;
}

// split-K only with reductions through a workspace in a separate, ordered step (fixed summation order)
uint32_t nn_gemm_reduction_mask(int splitk) {
  return splitk ? (uint32_t)(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)
                : (uint32_t)CUBLASLT_REDUCTION_SCHEME_NONE;
}

int nn_gemm_pref(cublasLtMatmulPreference_t* pref, uint32_t red) {
  CKB(cublasLtMatmulPreferenceCreate(pref));
  uint64_t wsz = NN_LT_WORKSPACE;
  uint32_t al = 16;
  cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof(wsz));
  if (!s) s = cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof(red));
  if (!s) s = cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof(al));
  if (!s) s = cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof(al));
  if (!s) s = cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof(al));
  if (!s) s = cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof(al));
  if (s) {
    cublasLtMatmulPreferenceDestroy(*pref);
    return NN_ECUBLAS;
  }
  return NN_OK;
}

// Descriptors and the heuristic's first algorithm for shape s; under NN_CUDA_TUNE with tuning buffers (tA != NULL)
// the algorithm then comes from nn_tune_gemm (tune table or timed candidates).
static int gemm_plan(NnCudaMlp* M, NnGemm* g, const NnGemmShape* sh, const float* tA, const float* tB, float* tC,
                     const float* tbias) {
  memset(g, 0, sizeof(*g));
  cublasComputeType_t ct = M->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CKB(cublasLtMatmulDescCreate(&g->desc, ct, CUDA_R_32F));
  cublasOperation_t oa = sh->ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = sh->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epi = sh->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  CKB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof(oa)));
  CKB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof(ob)));
  CKB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (epi == CUBLASLT_EPILOGUE_BIAS) {
    cudaDataType_t bt = CUDA_R_32F;
    CKB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
  }
  const int m = sh->m, n = sh->n, k = sh->k;
  int r = layout(&g->la, sh->ta ? k : m, sh->ta ? m : k, sh->lda, sh->count, sh->sa);
  if (!r) r = layout(&g->lb, sh->tb ? n : k, sh->tb ? k : n, sh->ldb, sh->count, sh->sb);
  if (!r) r = layout(&g->lc, m, n, sh->ldc, sh->count, sh->sc);
  if (r) return r;
  cublasLtMatmulPreference_t pref;
  if ((r = nn_gemm_pref(&pref, nn_gemm_reduction_mask(M->splitk)))) return r;
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(M->lt, g->desc, g->la, g->lb, g->lc, g->lc, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found < 1) return NN_ECUBLAS;
  g->algo = res.algo, g->ws = res.workspaceSize;
  if (M->tune && tA) return nn_tune_gemm(M, g, sh, tA, tB, tC, tbias);
  return NN_OK;
}

static int gemm_run(NnCudaMlp* M, NnGemm* g, const float* A, const float* B, float* C, const float* bias) {
  return nn_gemm_run(M, g, A, B, C, bias, M->stream, M->lt_ws);
}

int nn_gemm_run(NnCudaMlp* M, NnGemm* g, const float* A, const float* B, float* C, const float* bias, cudaStream_t st,
                void* ws) {
  const float one = 1.f, zero = 0.f;
  if (bias) CKB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  CKB(cublasLtMatmul(M->lt, g->desc, &one, A, g->la, B, g->lb, &zero, C, g->lc, C, g->lc, &g->algo, ws, g->ws,
                     st));
  return NN_OK;
}

// weight-gradient batch slices: enough (output tiles x slices) to fill the chip, slices of >= 256 rows
static int split_for(int in, int out, int B) {
  int tiles = ((in + 127) / 128) * ((out + 127) / 128), S = 1;
  while (S * 2 <= NN_MAX_SPLIT && S * 2 * tiles <= 2 * 132 && B % (S * 2) == 0 && B / (S * 2) >= 256) S *= 2;
  return S;
}

static void plan_free(NnCudaMlp* M, NnPlan* p) {
  for (int l = 0; l < NN_MAX_LAYERS; l++) gemm_free(&p->fwd[l]), gemm_free(&p->dgrad[l]), gemm_free(&p->wgrad[l]);
  p->batch = 0;
}

static int plan_get(NnCudaMlp* M, int B, NnPlan** out) {
  for (int i = 0; i < NN_MAX_PLANS; i++)
    if (M->plans[i].batch == B) return (*out = &M->plans[i], NN_OK);
  NnPlan* p = &M->plans[M->next_slot];
  M->next_slot = (M->next_slot + 1) % NN_MAX_PLANS;
  plan_free(M, p);
  int r = NN_OK;
  // NN_CUDA_TUNE times candidates on scratch buffers only (g1 as every input, g0 and split_ws as outputs; W and
  // bias from the parameters), so that planning never overwrites activations or gradients
  if (M->tune && !(r = nn_tune_env_init())) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(M->stream, &cs) != cudaSuccess) cudaGetLastError(), cs = cudaStreamCaptureStatusActive;
    if (cs == cudaStreamCaptureStatusNone) r = nn_tune_fill(M->g1, (long long)B * M->g_width, M->stream);
  }
  for (int l = 0; l < M->n_layers && !r; l++) {
    int in = M->lay[l].in, o = M->lay[l].out, S = split_for(in, o, B), c = B / S;
    const float* W = M->params + M->lay[l].w;
    p->split[l] = S;
    NnGemmShape fw = {1, 0, o, B, in, in, in, o, 1, 0, 0, 0, 1};
    NnGemmShape dg = {0, 0, in, B, o, in, o, in, 1, 0, 0, 0, 0};
    NnGemmShape wg = {0, 1, in, o, c, in, o, in, S, (long long)c * in, (long long)c * o, (long long)in * o, 0};
    r = gemm_plan(M, &p->fwd[l], &fw, W, M->g1, M->g0, M->params + M->lay[l].b);
    if (!r) r = gemm_plan(M, &p->dgrad[l], &dg, W, M->g1, M->g0, NULL);
    if (!r) r = gemm_plan(M, &p->wgrad[l], &wg, M->g1, M->g1, M->split_ws[l], NULL);
  }
  if (!r && M->tune) r = nn_tune_flush();
  if (r) {
    plan_free(M, p);
    return r;
  }
  p->batch = B;
  *out = p;
  return NN_OK;
}

// ---------------------------------------------------------------------------------------------------------
// MLP
// ---------------------------------------------------------------------------------------------------------
extern "C" int nn_cuda_mlp_create(NnCudaMlp** out, const NnConfig* cfg, int max_batch, int flags, void* stream) {
  if (!out || nn_config_check(cfg) || max_batch <= 0) return NN_EINVAL;
  *out = NULL;
  for (int i = 0; i < cfg->n_hidden; i++)
    if (cfg->hidden[i] > 1024) return NN_EINVAL;  // warp-per-row kernels hold a row in registers
  NnCudaMlp* M = (NnCudaMlp*)calloc(1, sizeof(NnCudaMlp));
  if (!M) return NN_ENOMEM;
  M->cfg = *cfg;
  M->n_layers = cfg->n_hidden + 1;
  M->max_batch = max_batch, M->tf32 = (flags & NN_CUDA_TF32) ? 1 : 0, M->splitk = (flags & NN_CUDA_NO_SPLITK) ? 0 : 1;
  M->tune = (flags & NN_CUDA_TUNE) ? 1 : 0;
  M->n_params = nn_param_count(cfg);
  M->ln_eps = (float)(cfg->ln_eps > 0 ? cfg->ln_eps : 1e-5);
  M->out_scale = (float)(cfg->out_scale != 0 ? cfg->out_scale : 1.0);
  M->stream = (cudaStream_t)stream;
  int maxw = 1;
  for (int l = 0; l < M->n_layers; l++) {
    nn_layer_offsets(cfg, l, &M->lay[l]);
    maxw = M->lay[l].out > maxw ? M->lay[l].out : maxw;
    if (l > 0) maxw = M->lay[l].in > maxw ? M->lay[l].in : maxw;
  }
  if (M->tune) {  // tuning uses g0/g1 for every GEMM operand of a batch, the input layer's included
    maxw = cfg->in_dim > maxw ? cfg->in_dim : maxw;
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
      cudaGetLastError();
      free(M);
      return NN_ECUDA;
    }
    snprintf(M->gpu, sizeof M->gpu, "%s", prop.name);
    M->sms = prop.multiProcessorCount;
  }
  M->g_width = maxw;
  for (int l = 0; l < M->n_layers; l++) {
    size_t S = (size_t)split_for(M->lay[l].in, M->lay[l].out, 1 << 30);
    if (l == M->n_layers - 1 && (flags & NN_CUDA_THIN) && thin_ok(M->lay[l].in, M->lay[l].out) && S < NN_THIN_BLOCKS)
      S = NN_THIN_BLOCKS;
    M->split_ws_elems[l] = S * M->lay[l].in * M->lay[l].out;
  }
  M->thin = thin_ok(M->lay[M->n_layers - 1].in, M->lay[M->n_layers - 1].out) && (flags & NN_CUDA_THIN);
  M->vec = !(flags & NN_CUDA_NO_VEC);
  if ((flags & NN_CUDA_FUSE_OUT) && nn_fused_setup(M)) {
    free(M);
    return NN_ECUDA;
  }
  // one allocation, every array 256-byte aligned
  size_t B = (size_t)max_batch, sz = 0, off[64];
  int k = 0;
  off[k++] = sz, sz += align256(4 * (size_t)M->n_params);  // params
  off[k++] = sz, sz += align256(4 * (size_t)M->n_params);  // grads
  off[k++] = sz, sz += align256(4 * B * maxw);             // g0
  off[k++] = sz, sz += align256(4 * B * maxw);             // g1
  off[k++] = sz, sz += align256(NN_LT_WORKSPACE);
  off[k++] = sz, sz += align256(NN_LT_WORKSPACE);
  for (int l = 0; l < M->n_layers; l++) {
    off[k++] = sz, sz += align256(4 * (size_t)part_blocks(M->lay[l].out) * 3 * M->lay[l].out);  // part
    off[k++] = sz, sz += align256(4 * M->split_ws_elems[l]);                       // split_ws
    off[k++] = sz, sz += align256(4 * B * M->lay[l].out);                          // z
    if (l < cfg->n_hidden) {
      off[k++] = sz, sz += align256(4 * B * M->lay[l].out);  // y
      off[k++] = sz, sz += align256(4 * B);
      off[k++] = sz, sz += align256(4 * B);
    }
  }
  if (cudaMalloc(&M->block, sz) != cudaSuccess) {
    cudaGetLastError();
    free(M);
    return NN_ENOMEM;
  }
  char* b = (char*)M->block;
  k = 0;
  M->params = (float*)(b + off[k++]);
  M->grads = (float*)(b + off[k++]);
  M->g0 = (float*)(b + off[k++]);
  M->g1 = (float*)(b + off[k++]);
  M->lt_ws = (void*)(b + off[k++]);
  M->lt_ws2 = (void*)(b + off[k++]);
  for (int l = 0; l < M->n_layers; l++) {
    M->part[l] = (float*)(b + off[k++]);
    M->split_ws[l] = (float*)(b + off[k++]);
    M->z[l] = (float*)(b + off[k++]);
    if (l < cfg->n_hidden) {
      M->y[l] = (float*)(b + off[k++]);
      M->mean[l] = (float*)(b + off[k++]);
      M->rstd[l] = (float*)(b + off[k++]);
    }
  }
  int r = NN_OK;
  // params and grads (padding stays 0), on the model's stream: a non-blocking stream is not ordered after the
  // legacy stream, so a plain cudaMemset could land after the first upload on M->stream and zero it
  if (cudaMemsetAsync(M->block, 0, off[2], M->stream) != cudaSuccess) r = NN_ECUDA;
  if (!r && cublasLtCreate(&M->lt) != CUBLAS_STATUS_SUCCESS) r = NN_ECUBLAS;
  if (!r && cudaStreamCreateWithFlags(&M->s2, cudaStreamNonBlocking) != cudaSuccess) r = NN_ECUDA;
  for (int l = 0; l < M->n_layers && !r; l++)
    if (cudaEventCreateWithFlags(&M->ev_dz[l], cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&M->ev_w[l], cudaEventDisableTiming) != cudaSuccess)
      r = NN_ECUDA;
  // width 1024 with LayerNorm keeps 96 KB of per-warp column accumulators in shared memory
  if (!r && cudaFuncSetAttribute(k_hidden_bwd4<8, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 3 * 1024 * 4) !=
                cudaSuccess)
    r = NN_ECUDA;
  NnPlan* p;
  if (!r) r = plan_get(M, max_batch, &p);
  if (r) {
    nn_cuda_mlp_destroy(M);
    return r;
  }
  *out = M;
  return NN_OK;
}

extern "C" void nn_cuda_mlp_destroy(NnCudaMlp* M) {
  if (!M) return;
  for (int i = 0; i < NN_MAX_PLANS; i++) plan_free(M, &M->plans[i]);
  if (M->lt) cublasLtDestroy(M->lt);
  for (int l = 0; l < NN_MAX_LAYERS; l++) {
    if (M->ev_dz[l]) cudaEventDestroy(M->ev_dz[l]);
    if (M->ev_w[l]) cudaEventDestroy(M->ev_w[l]);
  }
  if (M->s2) cudaStreamDestroy(M->s2);
  cudaFree(M->block);
  free(M);
}

extern "C" int nn_cuda_mlp_flags(const NnCudaMlp* M) {
  return (M->tf32 ? NN_CUDA_TF32 : 0) | (M->splitk ? 0 : NN_CUDA_NO_SPLITK) | (M->vec ? 0 : NN_CUDA_NO_VEC) |
         (M->thin ? NN_CUDA_THIN : 0) | (M->tune ? NN_CUDA_TUNE : 0) | (M->fuse ? NN_CUDA_FUSE_OUT : 0);
}

extern "C" int64_t nn_cuda_mlp_param_count(const NnCudaMlp* M) { return M->n_params; }
extern "C" float* nn_cuda_mlp_params(NnCudaMlp* M) { return M->params; }
extern "C" float* nn_cuda_mlp_grads(NnCudaMlp* M) { return M->grads; }

extern "C" int nn_cuda_mlp_set_params(NnCudaMlp* M, const float* h) {
  if (!M || !h) return NN_EINVAL;
  CK(cudaMemcpyAsync(M->params, h, 4 * (size_t)M->n_params, cudaMemcpyHostToDevice, M->stream));
  CK(cudaStreamSynchronize(M->stream));
  return NN_OK;
}

extern "C" int nn_cuda_mlp_get_params(NnCudaMlp* M, float* h) {
  if (!M || !h) return NN_EINVAL;
  CK(cudaMemcpyAsync(h, M->params, 4 * (size_t)M->n_params, cudaMemcpyDeviceToHost, M->stream));
  CK(cudaStreamSynchronize(M->stream));
  return NN_OK;
}

extern "C" int nn_cuda_mlp_get_grads(NnCudaMlp* M, float* h) {
  if (!M || !h) return NN_EINVAL;
  CK(cudaMemcpyAsync(h, M->grads, 4 * (size_t)M->n_params, cudaMemcpyDeviceToHost, M->stream));
  CK(cudaStreamSynchronize(M->stream));
  return NN_OK;
}

extern "C" int nn_cuda_mlp_init(NnCudaMlp* M, uint64_t seed) {
  if (!M) return NN_EINVAL;
  NnMlp* c;
  int r = nn_mlp_create(&c, &M->cfg, 1);
  if (r) return r;
  nn_mlp_init(c, seed);
  r = nn_cuda_mlp_set_params(M, nn_mlp_params(c));
  nn_mlp_destroy(c);
  return r;
}

extern "C" int nn_cuda_mlp_prepare(NnCudaMlp* M, int batch) {
  if (!M || batch <= 0 || batch > M->max_batch) return NN_EINVAL;
  NnPlan* p;
  return plan_get(M, batch, &p);
}

static int npl_for(int h) {
  int n = 1;
  while (32 * n < h) n *= 2;
  return n;
}

template <bool LN>
static void launch_hidden_fwd(int npl, int vec, unsigned grid, cudaStream_t st, const float* z, float* y, float* mean,
                              float* rstd, const float* g, const float* b, int B, int h, int act, float eps) {
  if (vec && h % 128 == 0) switch (h / 128) {
#define NN_CASE(V) \
  case V: k_hidden_fwd4<V, LN><<<grid, 256, 0, st>>>(z, y, mean, rstd, g, b, B, act, eps); return;
      NN_CASE(1) NN_CASE(2) NN_CASE(4) NN_CASE(8)
#undef NN_CASE
    }
  switch (npl) {
#define NN_CASE(N) \
  case N: k_hidden_fwd<N, LN><<<grid, 256, 0, st>>>(z, y, mean, rstd, g, b, B, h, act, eps); break;
    NN_CASE(1) NN_CASE(2) NN_CASE(4) NN_CASE(8) NN_CASE(16) NN_CASE(32)
#undef NN_CASE
  }
}

template <bool LN>
static void launch_hidden_bwd(int npl, int vec, unsigned grid, size_t smem, cudaStream_t st, const float* dy, const float* z,
                              const float* mean, const float* rstd, const float* g, float* dz, float* part, int B,
                              int h, int rpb, int act, float scale) {
  if (vec && h % 128 == 0 && scale == 1.f && z && dz) switch (h / 128) {
#define NN_CASE(V)                                                                                             \
  case V:                                                                                                      \
    k_hidden_bwd4<V, LN><<<grid, 256, (size_t)8 * (LN ? 3 : 1) * h * sizeof(float), st>>>(dy, z, mean, rstd, g, dz, \
                                                                                        part, B, rpb, act);      \
    return;
      NN_CASE(1) NN_CASE(2) NN_CASE(4) NN_CASE(8)
#undef NN_CASE
    }
  switch (npl) {
#define NN_CASE(N)                                                                                          \
  case N:                                                                                                   \
    k_hidden_bwd<N, LN><<<grid, 256, smem, st>>>(dy, z, mean, rstd, g, dz, part, B, h, rpb, act, scale); \
    break;
    NN_CASE(1) NN_CASE(2) NN_CASE(4) NN_CASE(8) NN_CASE(16) NN_CASE(32)
#undef NN_CASE
  }
}

static int forward_impl(NnCudaMlp* M, const float* P, const float* x, int B, float* y, int keep) {
  if (!M || !P || !x || !y || B <= 0 || B > M->max_batch) return NN_EINVAL;
  NnPlan* p;
  int r = plan_get(M, B, &p);
  if (r) return r;
  const int L = M->n_layers;
  const float* in = x;
  for (int l = 0; l < L; l++) {
    const NnLayerOffsets* o = &M->lay[l];
    int last = l == L - 1, direct = last && M->cfg.out_act == NN_ACT_NONE && M->out_scale == 1.f;
    float* z = direct ? y : M->z[l];
    if (last && M->thin && B <= NN_THIN_MAX_BATCH) {
      size_t sm = 4 * ((size_t)o->out * (o->in + 1) + (size_t)NN_THIN_ROWS * o->in);
      k_thin_fwd<<<nblocks(B, NN_THIN_ROWS), 256, sm, M->stream>>>(in, P + o->w, P + o->b, z, B, o->in, o->out);
      CKL();
    } else if ((r = gemm_run(M, &p->fwd[l], P + o->w, in, z, P + o->b))) {
      return r;
    }
    if (!last) {
      if (l == L - 2 && M->fuse) {  // NN_CUDA_FUSE_OUT: this row kernel also computes the output layer
        if ((r = nn_fused_fwd(M, P, B, y))) return r;
        break;
      }
      int h = o->out;
      unsigned grid = nblocks(B, 8);
      if (M->cfg.layer_norm)
        launch_hidden_fwd<true>(npl_for(h), M->vec, grid, M->stream, z, M->y[l], M->mean[l], M->rstd[l], P + o->gamma,
                                P + o->beta, B, h, M->cfg.act, M->ln_eps);
      else
        launch_hidden_fwd<false>(npl_for(h), M->vec, grid, M->stream, z, M->y[l], NULL, NULL, NULL, NULL, B, h, M->cfg.act,
                                 M->ln_eps);
      CKL();
      in = M->y[l];
    } else if (!direct) {
      long long n = (long long)B * o->out;
      k_out_fwd<<<nblocks(n, 256), 256, 0, M->stream>>>(z, y, n, M->cfg.out_act, M->out_scale);
      CKL();
    }
  }
  if (keep) M->x = x, M->batch = B;
  else M->batch = 0;
  return NN_OK;
}

extern "C" int nn_cuda_mlp_forward(NnCudaMlp* M, const float* x, int B, float* y) {
  return forward_impl(M, M ? M->params : NULL, x, B, y, 1);
}

extern "C" int nn_cuda_mlp_infer(NnCudaMlp* M, const float* P, const float* x, int B, float* y) {
  return forward_impl(M, P, x, B, y, 0);
}

// dz from dy for a layer of width h (LN or not), with bias (+gamma, beta) gradients into grads
static int layer_bwd(NnCudaMlp* M, int l, int B, int h, int ln, int act, float scale, const float* dy, const float* z,
                     const float* mean, const float* rstd, const float* gamma, float* dz, long long ob, long long og,
                     long long obe) {
  int P = part_blocks(h) < B ? part_blocks(h) : B;
  int rpb = (B + P - 1) / P;
  P = (B + rpb - 1) / rpb;
  size_t smem = (size_t)8 * h * sizeof(float);
  if (ln)
    launch_hidden_bwd<true>(npl_for(h), M->vec, (unsigned)P, smem, M->stream, dy, z, mean, rstd, gamma, dz, M->part[l], B,
                            h, rpb, act, scale);
  else
    launch_hidden_bwd<false>(npl_for(h), M->vec, (unsigned)P, smem, M->stream, dy, z, NULL, NULL, NULL, dz, M->part[l], B,
                             h, rpb, act, scale);
  CKL();
  NnFinJob* J = &M->fin.j[M->n_fin++];
  J->src = M->part[l], J->count = P, J->nq = ln ? 3 : 1, J->n = h;
  J->dst[0] = ob, J->dst[1] = og, J->dst[2] = obe;
  return NN_OK;
}

extern "C" int nn_cuda_mlp_backward(NnCudaMlp* M, const float* dy, float* dx) {
  if (!M || !dy || M->batch <= 0) return NN_EINVAL;
  const int B = M->batch, L = M->n_layers;
  NnPlan* p;
  int r = plan_get(M, B, &p);
  if (r) return r;
  const float* P = M->params;
  M->n_fin = 0;
  // output layer: dz = dy * scale * act'(z), bias gradient
  const NnLayerOffsets* oL = &M->lay[L - 1];
  int ident = M->cfg.out_act == NN_ACT_NONE && M->out_scale == 1.f;
  float* dzo = ident ? NULL : M->g0;
  if ((r = layer_bwd(M, L - 1, B, oL->out, 0, M->cfg.out_act, M->out_scale, dy, ident ? NULL : M->z[L - 1], NULL, NULL,
                     NULL, dzo, oL->b, 0, 0)))
    return r;
  const float* dz = ident ? dy : M->g0;
  int last_w = -1;
  for (int l = L - 1; l >= 0; l--) {
    const NnLayerOffsets* o = &M->lay[l];
    const float* xin = l == 0 ? M->x : M->y[l - 1];
    int S = p->split[l];
    int thin = l == L - 1 && M->thin && B <= NN_THIN_MAX_BATCH;
    // fork: the weight gradient of layer l on s2 once dz is ready
    CK(cudaEventRecord(M->ev_dz[l], M->stream));
    CK(cudaStreamWaitEvent(M->s2, M->ev_dz[l], 0));
    if (thin) {
      int Pb = NN_THIN_BLOCKS < B ? NN_THIN_BLOCKS : B, rpb = (B + Pb - 1) / Pb;
      Pb = (B + rpb - 1) / rpb;
      k_thin_wgrad<<<(unsigned)Pb, 256, 0, M->s2>>>(dz, xin, M->split_ws[l], B, o->in, o->out, rpb);
      CKL();
      S = Pb;
    } else {
      float* wdst = S > 1 ? M->split_ws[l] : M->grads + o->w;
      if ((r = nn_gemm_run(M, &p->wgrad[l], xin, dz, wdst, NULL, M->s2, M->lt_ws2))) return r;
    }
    CK(cudaEventRecord(M->ev_w[l], M->s2));
    last_w = l;
    if (S > 1 || thin) {
      NnFinJob* J = &M->fin.j[M->n_fin++];
      J->src = M->split_ws[l], J->count = S, J->nq = 1, J->n = o->in * o->out, J->dst[0] = o->w;
    }
    if (l == 0 && !dx) break;
    float* dnext = l == 0 ? dx : (dz == M->g0 ? M->g1 : M->g0);
    // dnext held dz of layer l+1: its weight gradient must be done reading it
    if (l + 1 < L) CK(cudaStreamWaitEvent(M->stream, M->ev_w[l + 1], 0));
    if (thin) {
      size_t sm = 4 * ((size_t)o->out * o->in + (size_t)NN_THIN_ROWS * o->out);
      k_thin_dgrad<<<nblocks(B, NN_THIN_ROWS), 256, sm, M->stream>>>(dz, P + o->w, dnext, B, o->in, o->out);
      CKL();
    } else if ((r = gemm_run(M, &p->dgrad[l], P + o->w, dz, dnext, NULL))) {
      return r;
    }
    if (l == 0) break;
    const NnLayerOffsets* q = &M->lay[l - 1];
    int ln = M->cfg.layer_norm;
    if ((r = layer_bwd(M, l - 1, B, q->out, ln, M->cfg.act, 1.f, dnext, M->z[l - 1], ln ? M->mean[l - 1] : NULL,
                       ln ? M->rstd[l - 1] : NULL, ln ? P + q->gamma : NULL, dnext, q->b, ln ? q->gamma : 0,
                       ln ? q->beta : 0)))
      return r;
    dz = dnext;
  }
  // join: every weight gradient is done (s2 runs them in order)
  if (last_w >= 0) CK(cudaStreamWaitEvent(M->stream, M->ev_w[last_w], 0));
  long long most = 1;
  for (int i = 0; i < M->n_fin; i++) {
    long long n = (long long)M->fin.j[i].nq * M->fin.j[i].n;
    most = n > most ? n : most;
  }
  k_finalize<<<dim3(nblocks(most, 256), (unsigned)M->n_fin), 256, 0, M->stream>>>(M->fin, M->grads);
  CKL();
  return NN_OK;
}

// GEMM-only replay for nn_bench (nn_cuda_internal.h): the cuBLASLt calls of forward_impl and backward (dx NULL)
// with the same plan, operands and streams, without the row kernels, partials and finalization.
int nn_cuda_mlp_gemms(NnCudaMlp* M, const float* x, int B, int train, int two_streams) {
  if (!M || !x || B <= 0 || B > M->max_batch) return NN_EINVAL;
  NnPlan* p;
  int r = plan_get(M, B, &p);
  if (r) return r;
  const int L = M->n_layers;
  const float* P = M->params;
  for (int l = 0; l < L; l++)
    if ((r = gemm_run(M, &p->fwd[l], P + M->lay[l].w, l ? M->y[l - 1] : x, M->z[l], P + M->lay[l].b))) return r;
  if (!train) return NN_OK;
  const float* dz = M->g0;
  int last_w = -1;
  for (int l = L - 1; l >= 0; l--) {
    const NnLayerOffsets* o = &M->lay[l];
    const float* xin = l == 0 ? x : M->y[l - 1];
    float* wdst = p->split[l] > 1 ? M->split_ws[l] : M->grads + o->w;
    if (two_streams) {
      CK(cudaEventRecord(M->ev_dz[l], M->stream));
      CK(cudaStreamWaitEvent(M->s2, M->ev_dz[l], 0));
      if ((r = nn_gemm_run(M, &p->wgrad[l], xin, dz, wdst, NULL, M->s2, M->lt_ws2))) return r;
      CK(cudaEventRecord(M->ev_w[l], M->s2));
      last_w = l;
    } else if ((r = gemm_run(M, &p->wgrad[l], xin, dz, wdst, NULL))) {
      return r;
    }
    if (l == 0) break;
    float* dnext = dz == M->g0 ? M->g1 : M->g0;
    if (two_streams && l + 1 < L) CK(cudaStreamWaitEvent(M->stream, M->ev_w[l + 1], 0));
    if ((r = gemm_run(M, &p->dgrad[l], P + o->w, dz, dnext, NULL))) return r;
    dz = dnext;
  }
  if (last_w >= 0) CK(cudaStreamWaitEvent(M->stream, M->ev_w[last_w], 0));
  return NN_OK;
}

extern "C" int nn_cuda_mse_grad(const float* y, const float* t, int64_t n, float scale, float* dy, void* stream) {
  if (!y || !t || !dy || n <= 0) return NN_EINVAL;
  k_mse_grad<<<nblocks(n, 256), 256, 0, (cudaStream_t)stream>>>(y, t, n, scale, dy);
  CKL();
  return NN_OK;
}

// ---------------------------------------------------------------------------------------------------------
// Adam / AdamW + EMA: sum of squares (fixed grid, fixed order) -> per-step scalars on device -> fused update
// ---------------------------------------------------------------------------------------------------------
#define NN_ADAM_BLOCKS 256

typedef struct {
  double norm;
  int64_t step;
  float clip, step_size, inv_sqrt_bc2, decay;
} NnAdamScalars;

struct NnCudaAdam {
  NnAdamConfig cfg;
  int64_t n;
  cudaStream_t stream;
  void* block;
  float *m, *v, *ema;        // (n) each
  double* part;              // (NN_ADAM_BLOCKS)
  NnAdamScalars* sc;
};

__global__ void k_sumsq(const float* __restrict__ g, long long n, double* __restrict__ part) {
  __shared__ double sm[256];
  double s = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    s += (double)g[i] * (double)g[i];
  sm[threadIdx.x] = s;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) sm[threadIdx.x] += sm[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = sm[0];
}

// mirrors nn_adam_step's scalar computation (float64, then rounded to float)
__global__ void k_adam_scalars(const double* __restrict__ part, NnAdamScalars* sc, NnAdamConfig c) {
  double ss = 0;
  for (int i = 0; i < NN_ADAM_BLOCKS; i++) ss += part[i];
  double norm = sqrt(ss), clip = 1.0;
  if (c.max_grad_norm > 0) {
    double cc = c.max_grad_norm / (norm + 1e-6);
    clip = cc < 1.0 ? cc : 1.0;
  }
  int64_t t = sc->step + 1;
  double lr = c.lr;
  if (c.schedule == NN_LR_LINEAR && c.total_steps > 1) {
    int64_t u = t - 1 > c.total_steps - 1 ? c.total_steps - 1 : t - 1;
    lr = c.lr + (c.lr_end - c.lr) * ((double)u / (double)(c.total_steps - 1));
  }
  double bc1 = 1.0 - pow(c.beta1, (double)t), bc2 = 1.0 - pow(c.beta2, (double)t);
  sc->norm = norm, sc->step = t;
  sc->clip = (float)clip, sc->step_size = (float)(lr / bc1), sc->inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
  sc->decay = (float)(1.0 - lr * c.weight_decay);
}

__global__ void k_adam_update(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                              float* __restrict__ v, float* __restrict__ ema, long long n,
                              const NnAdamScalars* __restrict__ sc, float b1, float b2, float eps, float wd,
                              int decoupled, float ed, float ed1) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float cl = sc->clip, step_size = sc->step_size, ib = sc->inv_sqrt_bc2;
  float gi = g[i] * cl, pi = p[i];
  if (wd != 0.f && !decoupled) gi = gi + wd * pi;
  float mi = b1 * m[i] + (1.f - b1) * gi;
  float vi = b2 * v[i] + (1.f - b2) * gi * gi;
  m[i] = mi, v[i] = vi;
  if (wd != 0.f && decoupled) pi = pi * sc->decay;
  pi = pi - step_size * (mi / (sqrtf(vi) * ib + eps));
  p[i] = pi;
  if (ema) ema[i] = ed * ema[i] + ed1 * pi;
}

extern "C" int nn_cuda_adam_create(NnCudaAdam** out, const NnAdamConfig* cfg, int64_t n, const float* p0,
                                   void* stream) {
  if (!out || !cfg || n <= 0 || (cfg->ema_decay > 0 && !p0)) return NN_EINVAL;
  *out = NULL;
  NnCudaAdam* a = (NnCudaAdam*)calloc(1, sizeof(NnCudaAdam));
  if (!a) return NN_ENOMEM;
  a->cfg = *cfg, a->n = n, a->stream = (cudaStream_t)stream;
  size_t vb = align256(4 * (size_t)n), sz = 3 * vb + align256(8 * NN_ADAM_BLOCKS) + align256(sizeof(NnAdamScalars));
  if (cudaMalloc(&a->block, sz) != cudaSuccess) {
    cudaGetLastError();
    free(a);
    return NN_ENOMEM;
  }
  char* b = (char*)a->block;
  a->m = (float*)b, a->v = (float*)(b + vb);
  a->ema = cfg->ema_decay > 0 ? (float*)(b + 2 * vb) : NULL;
  a->part = (double*)(b + 3 * vb);
  a->sc = (NnAdamScalars*)(b + 3 * vb + align256(8 * NN_ADAM_BLOCKS));
  int r = cudaMemsetAsync(a->block, 0, sz, a->stream) == cudaSuccess ? NN_OK : NN_ECUDA;
  if (!r && a->ema && cudaMemcpyAsync(a->ema, p0, 4 * (size_t)n, cudaMemcpyDeviceToDevice, a->stream) != cudaSuccess)
    r = NN_ECUDA;
  if (!r && cudaStreamSynchronize(a->stream) != cudaSuccess) r = NN_ECUDA;
  if (r) {
    nn_cuda_adam_destroy(a);
    return r;
  }
  *out = a;
  return NN_OK;
}

extern "C" void nn_cuda_adam_destroy(NnCudaAdam* a) {
  if (!a) return;
  cudaFree(a->block);
  free(a);
}

extern "C" int nn_cuda_adam_step(NnCudaAdam* a, float* p, const float* g) {
  if (!a || !p || !g) return NN_EINVAL;
  const NnAdamConfig* c = &a->cfg;
  k_sumsq<<<NN_ADAM_BLOCKS, 256, 0, a->stream>>>(g, a->n, a->part);
  CKL();
  k_adam_scalars<<<1, 1, 0, a->stream>>>(a->part, a->sc, *c);
  CKL();
  k_adam_update<<<nblocks(a->n, 256), 256, 0, a->stream>>>(
      p, g, a->m, a->v, a->ema, a->n, a->sc, (float)c->beta1, (float)c->beta2, (float)c->eps, (float)c->weight_decay,
      c->decoupled, (float)c->ema_decay, (float)(1.0 - c->ema_decay));
  CKL();
  return NN_OK;
}

extern "C" float* nn_cuda_adam_ema(NnCudaAdam* a) { return a->ema; }
extern "C" const double* nn_cuda_adam_grad_norm_dev(const NnCudaAdam* a) { return &a->sc->norm; }

extern "C" int nn_cuda_adam_download(NnCudaAdam* a, float* m, float* v, float* ema, int64_t* step, double* norm) {
  if (!a) return NN_EINVAL;
  size_t nb = 4 * (size_t)a->n;
  NnAdamScalars sc;
  if (m) CK(cudaMemcpyAsync(m, a->m, nb, cudaMemcpyDeviceToHost, a->stream));
  if (v) CK(cudaMemcpyAsync(v, a->v, nb, cudaMemcpyDeviceToHost, a->stream));
  if (ema && a->ema) CK(cudaMemcpyAsync(ema, a->ema, nb, cudaMemcpyDeviceToHost, a->stream));
  CK(cudaMemcpyAsync(&sc, a->sc, sizeof(sc), cudaMemcpyDeviceToHost, a->stream));
  CK(cudaStreamSynchronize(a->stream));
  if (step) *step = sc.step;
  if (norm) *norm = sc.norm;
  return NN_OK;
}

extern "C" int nn_cuda_adam_upload(NnCudaAdam* a, const float* m, const float* v, const float* ema, const int64_t* step) {
  if (!a) return NN_EINVAL;
  size_t nb = 4 * (size_t)a->n;
  if (m) CK(cudaMemcpyAsync(a->m, m, nb, cudaMemcpyHostToDevice, a->stream));
  if (v) CK(cudaMemcpyAsync(a->v, v, nb, cudaMemcpyHostToDevice, a->stream));
  if (ema && a->ema) CK(cudaMemcpyAsync(a->ema, ema, nb, cudaMemcpyHostToDevice, a->stream));
  if (step) CK(cudaMemcpyAsync(&a->sc->step, step, sizeof(int64_t), cudaMemcpyHostToDevice, a->stream));
  CK(cudaStreamSynchronize(a->stream));
  return NN_OK;
}

// ---------------------------------------------------------------------------------------------------------
// Observation normalizer: column sums over fixed row chunks (float64), merged in chunk order
// ---------------------------------------------------------------------------------------------------------
#define NN_NORM_CHUNKS 128

struct NnCudaNorm {
  int dim, max_batch;
  double eps, clip;
  cudaStream_t stream;
  void* block;
  double* count;     // (1)
  double* mean;      // (dim)
  double* m2;        // (dim)
  double* bmean;     // (dim) batch mean
  double* part;      // (NN_NORM_CHUNKS, dim)
  float* coef;       // (2, dim): float mean, float 1/sqrt(var+eps)
};

// part[c][j] = sum over rows of chunk c of (x[r][j] - center[j]) (pow = 1) or its square (pow = 2)
__global__ void k_norm_part(const float* __restrict__ x, int B, int D, int rows, const double* __restrict__ center,
                            int sq, double* __restrict__ part) {
  int c = blockIdx.y, r0 = c * rows, r1 = min(B, r0 + rows);
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < D; j += gridDim.x * blockDim.x) {
    double s = 0, ce = sq ? center[j] : 0.0;
    for (int r = r0; r < r1; r++) {
      double d = (double)x[(size_t)r * D + j] - ce;
      s += sq ? d * d : d;
    }
    part[(size_t)c * D + j] = s;
  }
}

__global__ void k_norm_bmean(const double* __restrict__ part, int C, int D, int B, double* __restrict__ bmean) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= D) return;
  double s = 0;
  for (int c = 0; c < C; c++) s += part[(size_t)c * D + j];
  bmean[j] = s / (double)B;
}

// Chan merge of (count, mean, m2) with the batch; then the float coefficients used by apply/backward
__global__ void k_norm_merge(const double* __restrict__ part, int C, int D, int B, const double* __restrict__ bmean,
                             double* count, double* mean, double* m2, float* coef, double eps) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= D) return;
  double m2b = 0;
  for (int c = 0; c < C; c++) m2b += part[(size_t)c * D + j];
  double na = *count, nb = (double)B, nt = na + nb;
  double delta = bmean[j] - mean[j];
  double mu = mean[j] + delta * (nb / nt), mm = m2[j] + m2b + delta * delta * (na * nb / nt);
  mean[j] = mu, m2[j] = mm;
  coef[j] = (float)mu;
  coef[D + j] = (float)(1.0 / sqrt(mm / nt + eps));
}

__global__ void k_norm_count(double* count, int B) { *count += (double)B; }

__global__ void k_norm_coef(const double* count, const double* mean, const double* m2, int D, double eps, float* coef) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= D) return;
  double var = *count > 0 ? m2[j] / *count : 1.0;
  coef[j] = (float)mean[j];
  coef[D + j] = (float)(1.0 / sqrt(var + eps));
}

__global__ void k_norm_apply(const float* __restrict__ x, const float* __restrict__ dy, long long n, int D,
                             const float* __restrict__ coef, float clip, float* __restrict__ out) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int j = (int)(i % D);
  float is = coef[D + j], v = (x[i] - coef[j]) * is;
  if (!dy) {
    if (clip > 0.f) v = v > clip ? clip : (v < -clip ? -clip : v);
    out[i] = v;
  } else {
    out[i] = (clip > 0.f && (v > clip || v < -clip)) ? 0.f : dy[i] * is;
  }
}

extern "C" int nn_cuda_norm_create(NnCudaNorm** out, int dim, double eps, double clip, int max_batch, void* stream) {
  if (!out || dim <= 0 || eps < 0 || max_batch <= 0) return NN_EINVAL;
  *out = NULL;
  NnCudaNorm* n = (NnCudaNorm*)calloc(1, sizeof(NnCudaNorm));
  if (!n) return NN_ENOMEM;
  n->dim = dim, n->eps = eps, n->clip = clip, n->max_batch = max_batch, n->stream = (cudaStream_t)stream;
  size_t d8 = align256(8 * (size_t)dim);
  size_t sz = 256 + 3 * d8 + align256(8 * (size_t)NN_NORM_CHUNKS * dim) + align256(8 * (size_t)dim);
  if (cudaMalloc(&n->block, sz) != cudaSuccess) {
    cudaGetLastError();
    free(n);
    return NN_ENOMEM;
  }
  char* b = (char*)n->block;
  n->count = (double*)b, b += 256;
  n->mean = (double*)b, b += d8;
  n->m2 = (double*)b, b += d8;
  n->bmean = (double*)b, b += d8;
  n->part = (double*)b, b += align256(8 * (size_t)NN_NORM_CHUNKS * dim);
  n->coef = (float*)b;
  int r = cudaMemsetAsync(n->block, 0, sz, n->stream) == cudaSuccess ? NN_OK : NN_ECUDA;
  if (!r) {
    k_norm_coef<<<nblocks(dim, 256), 256, 0, n->stream>>>(n->count, n->mean, n->m2, dim, eps, n->coef);
    if (cudaGetLastError() != cudaSuccess || cudaStreamSynchronize(n->stream) != cudaSuccess) r = NN_ECUDA;
  }
  if (r) {
    nn_cuda_norm_destroy(n);
    return r;
  }
  *out = n;
  return NN_OK;
}

extern "C" void nn_cuda_norm_destroy(NnCudaNorm* n) {
  if (!n) return;
  cudaFree(n->block);
  free(n);
}

extern "C" int nn_cuda_norm_update(NnCudaNorm* n, const float* x, int B) {
  if (!n || !x || B <= 0) return NN_EINVAL;
  int rows = (B + NN_NORM_CHUNKS - 1) / NN_NORM_CHUNKS, C = (B + rows - 1) / rows, D = n->dim;
  dim3 grid(nblocks(D, 128), (unsigned)C);
  k_norm_part<<<grid, 128, 0, n->stream>>>(x, B, D, rows, NULL, 0, n->part);
  CKL();
  k_norm_bmean<<<nblocks(D, 256), 256, 0, n->stream>>>(n->part, C, D, B, n->bmean);
  CKL();
  k_norm_part<<<grid, 128, 0, n->stream>>>(x, B, D, rows, n->bmean, 1, n->part);
  CKL();
  k_norm_merge<<<nblocks(D, 256), 256, 0, n->stream>>>(n->part, C, D, B, n->bmean, n->count, n->mean, n->m2, n->coef,
                                                       n->eps);
  CKL();
  k_norm_count<<<1, 1, 0, n->stream>>>(n->count, B);
  CKL();
  return NN_OK;
}

extern "C" int nn_cuda_norm_apply(NnCudaNorm* n, const float* x, int B, float* y) {
  if (!n || !x || !y || B < 0) return NN_EINVAL;
  long long cnt = (long long)B * n->dim;
  if (!cnt) return NN_OK;
  k_norm_apply<<<nblocks(cnt, 256), 256, 0, n->stream>>>(x, NULL, cnt, n->dim, n->coef, (float)n->clip, y);
  CKL();
  return NN_OK;
}

extern "C" int nn_cuda_norm_backward(NnCudaNorm* n, const float* x, const float* dy, int B, float* dx) {
  if (!n || !x || !dy || !dx || B < 0) return NN_EINVAL;
  long long cnt = (long long)B * n->dim;
  if (!cnt) return NN_OK;
  k_norm_apply<<<nblocks(cnt, 256), 256, 0, n->stream>>>(x, dy, cnt, n->dim, n->coef, (float)n->clip, dx);
  CKL();
  return NN_OK;
}

extern "C" int nn_cuda_norm_download(NnCudaNorm* n, double* count, double* mean, double* m2) {
  if (!n) return NN_EINVAL;
  if (count) CK(cudaMemcpyAsync(count, n->count, 8, cudaMemcpyDeviceToHost, n->stream));
  if (mean) CK(cudaMemcpyAsync(mean, n->mean, 8 * (size_t)n->dim, cudaMemcpyDeviceToHost, n->stream));
  if (m2) CK(cudaMemcpyAsync(m2, n->m2, 8 * (size_t)n->dim, cudaMemcpyDeviceToHost, n->stream));
  CK(cudaStreamSynchronize(n->stream));
  return NN_OK;
}

extern "C" int nn_cuda_norm_upload(NnCudaNorm* n, double count, const double* mean, const double* m2) {
  if (!n || !mean || !m2) return NN_EINVAL;
  CK(cudaMemcpyAsync(n->count, &count, 8, cudaMemcpyHostToDevice, n->stream));
  CK(cudaMemcpyAsync(n->mean, mean, 8 * (size_t)n->dim, cudaMemcpyHostToDevice, n->stream));
  CK(cudaMemcpyAsync(n->m2, m2, 8 * (size_t)n->dim, cudaMemcpyHostToDevice, n->stream));
  k_norm_coef<<<nblocks(n->dim, 256), 256, 0, n->stream>>>(n->count, n->mean, n->m2, n->dim, n->eps, n->coef);
  CKL();
  CK(cudaStreamSynchronize(n->stream));
  return NN_OK;
}

// ---------------------------------------------------------------------------------------------------------
// Profiling aid (nn_bench --profile): times every heuristic candidate of each GEMM of a network, with split-K
// reductions disallowed and allowed, and the elementwise kernels. Not used by the library itself.
// ---------------------------------------------------------------------------------------------------------
__global__ void k_prof_fill(float* p, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)((i * 2654435761ull) % 1000) * 1e-3f - 0.5f;
}

static float prof_time(cudaStream_t s, int reps, int (*fn)(void*), void* arg) {
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  for (int i = 0; i < 3; i++) fn(arg);
  cudaEventRecord(a, s);
  for (int i = 0; i < reps; i++) fn(arg);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a), cudaEventDestroy(b);
  return ms / reps;
}

typedef struct {
  NnCudaMlp* M;
  NnGemm* g;
  const float *A, *B;
  float* C;
  const float* bias;
  int ok;
} ProfArg;

static int prof_gemm_fn(void* p) {
  ProfArg* a = (ProfArg*)p;
  a->ok |= gemm_run(a->M, a->g, a->A, a->B, a->C, a->bias);
  return 0;
}

// all heuristic candidates of one GEMM; prints the heuristic's first and the fastest
static void prof_gemm(NnCudaMlp* M, FILE* f, const char* label, int ta, int tb, int m, int n, int k, int lda, int ldb,
                      int ldc, int count, long long sa, long long sb, long long sc, cublasLtEpilogue_t epi,
                      const float* A, const float* Bm, float* C, const float* bias) {
  for (int allow = 0; allow < 2; allow++) {
    NnGemm g;
    NnGemmShape sh = {ta, tb, m, n, k, lda, ldb, ldc, count, sa, sb, sc, epi == CUBLASLT_EPILOGUE_BIAS};
    if (gemm_plan(M, &g, &sh, NULL, NULL, NULL, NULL)) {
      fprintf(f, "%s: plan failed\n", label);
      return;
    }
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    uint64_t wsz = NN_LT_WORKSPACE;
    uint32_t red = allow ? (uint32_t)(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)
                         : (uint32_t)CUBLASLT_REDUCTION_SCHEME_NONE;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof(wsz));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof(red));
    cublasLtMatmulHeuristicResult_t res[16];
    int found = 0;
    cublasLtMatmulAlgoGetHeuristic(M->lt, g.desc, g.la, g.lb, g.lc, g.lc, pref, 16, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    float t0 = 0, best = 1e30f;
    int bi = -1, bsk = 0, bred = 0;
    for (int i = 0; i < found; i++) {
      g.algo = res[i].algo, g.ws = res[i].workspaceSize;
      ProfArg pa = {M, &g, A, Bm, C, bias, 0};
      float t = prof_time(M->stream, 10, prof_gemm_fn, &pa);
      if (pa.ok || cudaGetLastError() != cudaSuccess) continue;
      int sk = 0;
      uint32_t rs = 0;
      size_t w;
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof(sk), &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &rs, sizeof(rs), &w);
      if (i == 0) t0 = t;
      if (t < best) best = t, bi = i, bsk = sk, bred = (int)rs;
    }
    double fl = 2.0 * m * n * (double)k * count;
    fprintf(f, "%-26s %s m%5d n%6d k%6d x%-3d cand %2d  first %8.4f ms (%5.1f TF)  best #%d %8.4f ms (%5.1f TF) splitk %d red %d\n",
            label, allow ? "red-ord " : "red-none", m, n, k, count, found, t0, fl / t0 * 1e-9, bi, best,
            fl / best * 1e-9, bsk, bred);
    gemm_free(&g);
  }
}

typedef struct {
  NnCudaMlp* M;
  int l, B, bwd;
} ProfEw;

static int prof_ew_fn(void* p) {
  ProfEw* e = (ProfEw*)p;
  NnCudaMlp* M = e->M;
  M->n_fin = 0;
  const NnLayerOffsets* o = &M->lay[e->l];
  int h = o->out;
  if (!e->bwd)
    launch_hidden_fwd<true>(npl_for(h), M->vec, nblocks(e->B, 8), M->stream, M->z[e->l], M->y[e->l], M->mean[e->l],
                            M->rstd[e->l], M->params + o->gamma, M->params + o->beta, e->B, h, M->cfg.act, M->ln_eps);
  else
    layer_bwd(M, e->l, e->B, h, 1, M->cfg.act, 1.f, M->g0, M->z[e->l], M->mean[e->l], M->rstd[e->l], M->params + o->gamma,
              M->g1, o->b, o->gamma, o->beta);
  return 0;
}

extern "C" int nn_cuda_profile(const NnConfig* cfg, int B, int tf32, FILE* f) {
  NnCudaMlp* M;
  int r = nn_cuda_mlp_create(&M, cfg, B, tf32 ? NN_CUDA_TF32 : 0, NULL);
  if (r) return r;
  nn_cuda_mlp_init(M, 1);
  float* x;
  CK(cudaMalloc(&x, 4 * (size_t)B * cfg->in_dim));
  size_t maxw = 0;
  for (int l = 0; l < M->n_layers; l++) maxw = (size_t)M->lay[l].out > maxw ? (size_t)M->lay[l].out : maxw;
  k_prof_fill<<<nblocks((long long)B * cfg->in_dim, 256), 256>>>(x, (long long)B * cfg->in_dim);
  k_prof_fill<<<nblocks((long long)B * maxw, 256), 256>>>(M->g0, (long long)B * maxw);
  for (int l = 0; l < M->n_layers; l++) {
    k_prof_fill<<<nblocks((long long)B * M->lay[l].out, 256), 256>>>(M->z[l], (long long)B * M->lay[l].out);
    if (l < cfg->n_hidden)
      k_prof_fill<<<nblocks((long long)B * M->lay[l].out, 256), 256>>>(M->y[l], (long long)B * M->lay[l].out);
  }
  CK(cudaDeviceSynchronize());
  fprintf(f, "== profile in %d out %d B %d %s\n", cfg->in_dim, cfg->out_dim, B, tf32 ? "tf32" : "fp32");
  for (int l = 0; l < M->n_layers; l++) {
    int in = M->lay[l].in, o = M->lay[l].out;
    const float* xin = l == 0 ? x : M->y[l - 1];
    char lab[64];
    snprintf(lab, sizeof lab, "L%d fwd %dx%d", l, o, in);
    prof_gemm(M, f, lab, 1, 0, o, B, in, in, in, o, 1, 0, 0, 0, CUBLASLT_EPILOGUE_BIAS, M->params + M->lay[l].w, xin,
              M->z[l], M->params + M->lay[l].b);
    if (l > 0) {
      snprintf(lab, sizeof lab, "L%d dgrad", l);
      prof_gemm(M, f, lab, 0, 0, in, B, o, in, o, in, 1, 0, 0, 0, CUBLASLT_EPILOGUE_DEFAULT, M->params + M->lay[l].w,
                M->g0, M->g1, NULL);
    }
    for (int S = 1; S <= 64; S *= 2) {
      if (B % S || B / S < 128 || (size_t)S * in * o > M->split_ws_elems[l]) continue;
      int c = B / S;
      snprintf(lab, sizeof lab, "L%d wgrad S=%d%s", l, S, S == split_for(in, o, B) ? "*" : "");
      prof_gemm(M, f, lab, 0, 1, in, o, c, in, o, in, S, (long long)c * in, (long long)c * o, (long long)in * o,
                CUBLASLT_EPILOGUE_DEFAULT, xin, M->g0, M->split_ws[l], NULL);
    }
    if (l < cfg->n_hidden) {
      ProfEw e = {M, l, B, 0};
      float tf = prof_time(M->stream, 10, prof_ew_fn, &e);
      e.bwd = 1;
      float tb = prof_time(M->stream, 10, prof_ew_fn, &e);
      double mb = 4.0 * B * o * 1e-6;
      fprintf(f, "L%d elementwise h=%d: fwd %.4f ms (%.0f GB/s for 2 passes)  bwd+colsum %.4f ms (%.0f GB/s for 3 passes)\n",
              l, o, tf, 2 * mb / tf, tb, 3 * mb / tb);
    }
  }
  cudaFree(x);
  nn_cuda_mlp_destroy(M);
  CK(cudaDeviceSynchronize());
  return NN_OK;
}
