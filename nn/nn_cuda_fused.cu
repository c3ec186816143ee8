// NN_CUDA_FUSE_OUT (opt-in, nn_cuda.h): the last hidden layer's row kernel (activation + LayerNorm) also computes
// the output layer, z_out = W_out y + b_out, for out <= 32 and in (the last hidden width) <= 512, so that the
// forward runs one launch fewer (the output layer's cuBLASLt GEMM is skipped). At small batches the forward is
// launch-bound (bench/RESULTS.md, batch 4096); nn/NOTES.md has the reasoning and the measurements.
//
// One block: 8 warps x NN_FUSE_R rows. W_out and b_out are staged in shared memory once per block with
// asynchronous copies (cp.async) that overlap the rows' loads. Each warp loads its NN_FUSE_R rows of z, computes
// act (+ LayerNorm) per row with exactly the arithmetic of k_hidden_fwd4 (h a multiple of 128, vector kernels on)
// or k_hidden_fwd (otherwise), so y, mean and rstd are the bits the unfused path writes, writes them for the
// backward, and keeps the normalized rows in shared memory. Then the warp computes the outputs of its rows:
// lanes are grouped P = 32 / pow2ceil(out) per output (actor 29 -> P = 1, critic 1 -> P = 32, 7 -> P = 4); lane
// (o, p) sums W_out[o][k] y[k] over the float4 groups g = p, p + P, ... of the row with explicit fmaf into four
// accumulators (the float4's components), combined as (x + y) + (z + w); the P parts are combined by a butterfly
// (xor P/2, ..., 1); then + b_out[o]. The order depends only on (in, out): results are deterministic and the same
// for any batch size and any row position. Always fp32 (also in TF32 mode, where the unfused output GEMM runs in
// TF32). The output activation and scale are applied as k_out_fwd does (z kept for the backward).
#include <cuda_pipeline.h>

#include "nn/nn_cuda_device.cuh"  // act_f, warp_sum
#include "nn/nn_cuda_internal.h"

#define NN_FUSE_R 4        // rows per warp: each W_out load from shared memory feeds NN_FUSE_R rows
#define NN_FUSE_WARPS 8    // warps per block (256 threads)
#define NN_FUSE_ROWS (NN_FUSE_R * NN_FUSE_WARPS)
#define NN_FUSE_MAX_IN 512
#define NN_FUSE_MAX_OUT 32

static int fuse_parts(int out) {
  int o2 = 1;
  while (o2 < out) o2 *= 2;
  return 32 / o2;
}

// W_out row stride in float4: conflict-free 16-byte reads (8 lanes of a quarter warp hit 8 distinct bank groups)
static int fuse_ws4(int hq, int P) { return ((hq + 7) & ~7) + (P < 8 ? P : 0); }

static size_t fuse_smem(int h, int out) {
  int hq = (h + 3) / 4;
  return 16 * ((size_t)out * fuse_ws4(hq, fuse_parts(out)) + (size_t)NN_FUSE_WARPS * NN_FUSE_R * hq) + 4 * (size_t)out;
}

// Rows of a warp for h = 128 N (lane owns float4 groups lane + 32 i): k_hidden_fwd4's arithmetic. rb (R, h/4).
template <int N, bool LN>
__device__ __forceinline__ void fuse_rows_vec(const float* __restrict__ z, float* __restrict__ y, float* __restrict__ mean,
                                              float* __restrict__ rstd, const float* __restrict__ gamma,
                                              const float* __restrict__ beta, int B, int row0, int lane, int act,
                                              float eps, float4* rb) {
  const int h = 128 * N, hq = 32 * N;
  float4 a[NN_FUSE_R][N];
#pragma unroll
  for (int r = 0; r < NN_FUSE_R; r++) {
    const float4* zr = (const float4*)(z + (size_t)(row0 + r) * h);
#pragma unroll
    for (int i = 0; i < N; i++) a[r][i] = row0 + r < B ? zr[lane + 32 * i] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int r = 0; r < NN_FUSE_R; r++) {
    const int row = row0 + r;
    const bool ok = row < B;
    float4* yr = (float4*)(y + (size_t)row * h);
    float mu, rs;
    act_ln_row4<N, LN, true>(a[r], lane, act, eps, gamma, beta, yr, ok, rb + r * hq, &mu, &rs);
    if (LN && lane == 0 && ok) mean[row] = mu, rstd[row] = rs;
  }
}

// Rows of a warp for any h <= 32 N (lane owns columns lane + 32 i): k_hidden_fwd's arithmetic. rbf (R, 4 hq),
// columns h .. 4 hq - 1 zero.
template <int N, bool LN>
__device__ __forceinline__ void fuse_rows_scalar(const float* __restrict__ z, float* __restrict__ y,
                                                 float* __restrict__ mean, float* __restrict__ rstd,
                                                 const float* __restrict__ gamma, const float* __restrict__ beta, int B,
                                                 int h, int row0, int lane, int act, float eps, float* rbf) {
  const int hf = 4 * ((h + 3) / 4);
  float a[NN_FUSE_R][N];
#pragma unroll
  for (int r = 0; r < NN_FUSE_R; r++) {
    const float* zr = z + (size_t)(row0 + r) * h;
#pragma unroll
    for (int i = 0; i < N; i++) {
      int j = lane + 32 * i;
      a[r][i] = (row0 + r < B && j < h) ? zr[j] : 0.f;
    }
  }
#pragma unroll
  for (int r = 0; r < NN_FUSE_R; r++) {
    const int row = row0 + r;
    const bool ok = row < B;
    float* yr = y + (size_t)row * h;
#pragma unroll
    for (int i = 0; i < N; i++) a[r][i] = lane + 32 * i < h ? act_f(act, a[r][i]) : 0.f;
    if (!LN) {
#pragma unroll
      for (int i = 0; i < N; i++) {
        int j = lane + 32 * i;
        if (ok && j < h) yr[j] = a[r][i];
        if (j < hf) rbf[r * hf + j] = a[r][i];  // 0 beyond h
      }
      continue;
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N; i++) s += a[r][i];
    float mu = warp_sum(s) / (float)h, v = 0.f;
#pragma unroll
    for (int i = 0; i < N; i++) {
      float d = lane + 32 * i < h ? a[r][i] - mu : 0.f;
      v += d * d;
    }
    float rs = 1.f / sqrtf(warp_sum(v) / (float)h + eps);
#pragma unroll
    for (int i = 0; i < N; i++) {
      int j = lane + 32 * i;
      float o = j < h ? (a[r][i] - mu) * rs * gamma[j] + beta[j] : 0.f;
      if (ok && j < h) yr[j] = o;
      if (j < hf) rbf[r * hf + j] = o;
    }
    if (lane == 0 && ok) mean[row] = mu, rstd[row] = rs;
  }
}

// y (B, h) = [LN](act(z)) as the hidden row kernels, and the output layer: zo/yo (B, out) (see the top of the file).
// direct: yo = W y + b (identity output); else zo = W y + b, yo = out_scale * act_f(out_act, zo).
template <bool VEC, int N, bool LN>
__global__ void __launch_bounds__(32 * NN_FUSE_WARPS, 2)
    k_hidden_out_fwd(const float* __restrict__ z, float* __restrict__ y, float* __restrict__ mean,
                     float* __restrict__ rstd, const float* __restrict__ gamma, const float* __restrict__ beta,
                     const float* __restrict__ W, const float* __restrict__ bias, float* __restrict__ zo,
                     float* __restrict__ yo, int B, int h, int act, float eps, int out, int P, int ws4, int out_act,
                     float out_scale, int direct) {
  extern __shared__ float4 sm4[];
  const int hq = (h + 3) >> 2;
  float4* Ws = sm4;                                                 // (out, ws4); columns h .. 4 hq - 1 zero
  float4* rows = sm4 + (size_t)out * ws4;                           // (warps, R, hq)
  float* bs = (float*)(rows + (size_t)NN_FUSE_WARPS * NN_FUSE_R * hq);  // (out)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // stage W_out (asynchronous: waited for just before the barrier) and b_out
  if ((h & 3) == 0) {
    for (int i = threadIdx.x; i < out * hq; i += blockDim.x) {
      int o = i / hq, g = i - o * hq;
      __pipeline_memcpy_async(Ws + (size_t)o * ws4 + g, W + 4 * (size_t)i, 16);
    }
  } else {
    float* wf = (float*)Ws;
    for (int i = threadIdx.x; i < out * 4 * hq; i += blockDim.x) {
      int o = i / (4 * hq), k = i - o * 4 * hq;
      if (k < h) __pipeline_memcpy_async(wf + (size_t)o * 4 * ws4 + k, W + (size_t)o * h + k, 4);
      else wf[(size_t)o * 4 * ws4 + k] = 0.f;
    }
  }
  __pipeline_commit();
  for (int i = threadIdx.x; i < out; i += blockDim.x) bs[i] = bias[i];
  // the warp's rows: hidden layer output (y, mean, rstd for the backward) and the normalized rows in rb
  const int row0 = (blockIdx.x * NN_FUSE_WARPS + warp) * NN_FUSE_R;
  float4* rb = rows + (size_t)warp * NN_FUSE_R * hq;
  if (VEC) fuse_rows_vec<N, LN>(z, y, mean, rstd, gamma, beta, B, row0, lane, act, eps, rb);
  else fuse_rows_scalar<N, LN>(z, y, mean, rstd, gamma, beta, B, h, row0, lane, act, eps, (float*)rb);
  __pipeline_wait_prior(0);
  __syncthreads();
  // output layer: lane (o, p) sums its float4 groups of every row, then the P lanes of output o are combined
  const int o = lane / P, p = lane - o * P;
  float4 acc[NN_FUSE_R];
#pragma unroll
  for (int r = 0; r < NN_FUSE_R; r++) acc[r] = make_float4(0.f, 0.f, 0.f, 0.f);
  if (o < out) {
    const float4* wr = Ws + (size_t)o * ws4;
    for (int g = p; g < hq; g += P) {
      float4 w = wr[g];
#pragma unroll
      for (int r = 0; r < NN_FUSE_R; r++) {
        float4 x = rb[r * hq + g];
        acc[r].x = fmaf(w.x, x.x, acc[r].x), acc[r].y = fmaf(w.y, x.y, acc[r].y);
        acc[r].z = fmaf(w.z, x.z, acc[r].z), acc[r].w = fmaf(w.w, x.w, acc[r].w);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < NN_FUSE_R; r++) {
    float s = (acc[r].x + acc[r].y) + (acc[r].z + acc[r].w);
    for (int m = P >> 1; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    const int row = row0 + r;
    if (p == 0 && o < out && row < B) {
      float v = s + bs[o];
      size_t i = (size_t)row * out + o;
      if (direct) {
        yo[i] = v;
      } else {
        zo[i] = v;
        yo[i] = out_scale * act_f(out_act, v);
      }
    }
  }
}

typedef void (*FusedKernel)(const float*, float*, float*, float*, const float*, const float*, const float*,
                            const float*, float*, float*, int, int, int, float, int, int, int, int, float, int);

// the instantiation for a last hidden width h (same layout choice as launch_hidden_fwd in nn_cuda.cu)
template <bool LN>
static FusedKernel fused_kernel_ln(int vec, int h) {
  if (vec && h % 128 == 0) switch (h / 128) {
      case 1: return k_hidden_out_fwd<true, 1, LN>;
      case 2: return k_hidden_out_fwd<true, 2, LN>;
      case 4: return k_hidden_out_fwd<true, 4, LN>;
    }
  int n = 1;
  while (32 * n < h) n *= 2;
  switch (n) {
    case 1: return k_hidden_out_fwd<false, 1, LN>;
    case 2: return k_hidden_out_fwd<false, 2, LN>;
    case 4: return k_hidden_out_fwd<false, 4, LN>;
    case 8: return k_hidden_out_fwd<false, 8, LN>;
    case 16: return k_hidden_out_fwd<false, 16, LN>;
  }
  return NULL;
}

static FusedKernel fused_kernel(const NnCudaMlp* M) {
  int h = M->lay[M->n_layers - 1].in;
  return M->cfg.layer_norm ? fused_kernel_ln<true>(M->vec, h) : fused_kernel_ln<false>(M->vec, h);
}

// nn_cuda_internal.h
int nn_fused_setup(NnCudaMlp* M) {
  M->fuse = 0;
  const NnLayerOffsets* o = &M->lay[M->n_layers - 1];
  if (M->n_layers < 2 || o->out > NN_FUSE_MAX_OUT || o->in > NN_FUSE_MAX_IN) return NN_OK;
  FusedKernel k = fused_kernel(M);
  if (!k) return NN_OK;
  size_t smem = fuse_smem(o->in, o->out);
  int dev = 0, most = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
                                                 cudaSuccess) {
    cudaGetLastError();
    return NN_ECUDA;
  }
  if (smem > (size_t)most) return NN_OK;  // too large for this GPU: the normal path
  if (smem > 48 * 1024) CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  M->fuse = 1;
  return NN_OK;
}

int nn_fused_fwd(NnCudaMlp* M, const float* P, int B, float* y) {
  const int l = M->n_layers - 2;
  const NnLayerOffsets* q = &M->lay[l];
  const NnLayerOffsets* o = &M->lay[l + 1];
  const int ln = M->cfg.layer_norm, h = o->in, out = o->out, Pp = fuse_parts(out);
  const int direct = M->cfg.out_act == NN_ACT_NONE && M->out_scale == 1.f;
  FusedKernel k = fused_kernel(M);
  if (!k) return NN_EINVAL;
  unsigned grid = (unsigned)((B + NN_FUSE_ROWS - 1) / NN_FUSE_ROWS);
  k<<<grid, 32 * NN_FUSE_WARPS, fuse_smem(h, out), M->stream>>>(
      M->z[l], M->y[l], ln ? M->mean[l] : NULL, ln ? M->rstd[l] : NULL, ln ? P + q->gamma : NULL, ln ? P + q->beta : NULL,
      P + o->w, P + o->b, M->z[l + 1], y, B, h, M->cfg.act, M->ln_eps, out, Pp, fuse_ws4((h + 3) / 4, Pp),
      M->cfg.out_act, M->out_scale, direct);
  CKL();
  return NN_OK;
}
