// nn_cuda_internal.h: the GPU MLP's state, shared by nn_cuda.cu (the library), nn_cuda_tune.cu (NN_CUDA_TUNE's
// algorithm selection) and nn_bench.cu (GEMM-only timings). Not a public header: CUDA/cuBLASLt types inside.
#ifndef NN_CUDA_INTERNAL_H
#define NN_CUDA_INTERNAL_H
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "common/cuda_check.cuh"
#include "nn/nn_cuda.h"

#define NN_MAX_LAYERS (NN_MAX_HIDDEN + 1)
#define NN_MAX_PLANS 8
#define NN_LT_WORKSPACE (32u << 20)

// the one CUDA check (common/cuda_check.cuh); nn's API reports codes (nn_strerror), no message
#define CK(x) ADJ_CUDA_CHECK(x, NULL, 0, NN_ECUDA)
#define CKB(x) ADJ_CUDA_CHECK(x, NULL, 0, NN_ECUBLAS)
#define CKL() CK(cudaGetLastError())

typedef struct {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
} NnGemm;

// D (m, n) = op(A) op(B) [+ bias]; A stored (ta ? k x m : m x k) etc.; count > 1: strided batched.
typedef struct {
  int ta, tb, m, n, k, lda, ldb, ldc, count;
  long long sa, sb, sc;
  int bias;  // CUBLASLT_EPILOGUE_BIAS
} NnGemmShape;

typedef struct {
  int batch;                 // 0: free slot
  int split[NN_MAX_LAYERS];  // wgrad batch slices
  NnGemm fwd[NN_MAX_LAYERS], dgrad[NN_MAX_LAYERS], wgrad[NN_MAX_LAYERS];
} NnPlan;

// Gradient finalization, one launch per backward: every job sums `count` partial slices laid out
// (count, nq, n) in slice order into grads[dst[q] + j] (weight-gradient batch slices: nq = 1, n = in*out;
// column partials of the bias/gamma/beta gradients: nq = 1 or 3, n = width).
typedef struct {
  const float* src;
  int count, nq, n;
  long long dst[3];
} NnFinJob;
#define NN_MAX_FIN_JOBS (2 * NN_MAX_LAYERS)
typedef struct {
  NnFinJob j[NN_MAX_FIN_JOBS];
} NnFinJobs;

struct NnCudaMlp {
  NnConfig cfg;
  int n_layers, max_batch, tf32, splitk, batch, next_slot;
  int thin;  // NN_CUDA_THIN: the output layer uses the k_thin_* kernels (batches <= NN_THIN_MAX_BATCH)
  int vec;   // float4 row kernels for widths that are multiples of 128
  int tune;  // NN_CUDA_TUNE: algorithms from the tune table / timed candidates (nn_cuda_tune.cu)
  int fuse;  // NN_CUDA_FUSE_OUT and a supported output layer: forward's last row kernel computes the output layer
  char gpu[256];  // NN_CUDA_TUNE: device name and multiprocessors (tune table key)
  int sms;
  int64_t n_params;
  NnLayerOffsets lay[NN_MAX_LAYERS];
  float ln_eps, out_scale;
  cudaStream_t stream;
  cublasLtHandle_t lt;
  NnPlan plans[NN_MAX_PLANS];
  void* block;                   // the single device allocation
  float* params;                 // (n_params)
  float* grads;                  // (n_params)
  float* z[NN_MAX_LAYERS];       // pre-activations (B, out_l)
  float* y[NN_MAX_HIDDEN];       // hidden outputs (B, out_l)
  float* mean[NN_MAX_HIDDEN];    // (B)
  float* rstd[NN_MAX_HIDDEN];    // (B)
  float* g0;                     // gradient ping-pong (B, g_width)
  float* g1;
  int g_width;                   // max hidden or out width (and in_dim under NN_CUDA_TUNE)
  float* part[NN_MAX_LAYERS];    // column partials (part_blocks(out_l), 3 or 1, out_l)
  float* split_ws[NN_MAX_LAYERS];  // weight-gradient batch slices (S_max_l, in_l * out_l)
  size_t split_ws_elems[NN_MAX_LAYERS];
  NnFinJobs fin;                 // finalization jobs of the backward in progress
  int n_fin;
  void* lt_ws;                   // cuBLASLt workspace (main stream)
  void* lt_ws2;                  // cuBLASLt workspace of the weight-gradient stream
  // Backward runs the weight-gradient GEMMs on a second stream s2, forked and joined with events (capturable),
  // so that they overlap the data-gradient chain; each reads only buffers the main stream leaves alone until
  // the matching ev_w event.
  cudaStream_t s2;
  cudaEvent_t ev_dz[NN_MAX_LAYERS], ev_w[NN_MAX_LAYERS];
  const float* x;                // input of the last forward
};

// nn_cuda.cu
// Matmul preference of the model (workspace limit, 16-byte alignment) with the given reduction schemes.
int nn_gemm_pref(cublasLtMatmulPreference_t* pref, uint32_t reduction_mask);
uint32_t nn_gemm_reduction_mask(int splitk);
int nn_gemm_run(NnCudaMlp* M, NnGemm* g, const float* A, const float* B, float* C, const float* bias, cudaStream_t st,
                void* ws);

// nn_cuda_tune.cu
// Once per process at the first NN_CUDA_TUNE model: loads $ADJ_NN_TUNE_FILE if set and present.
int nn_tune_env_init(void);
// g is planned (descriptors, heuristic's first algorithm). Replaces g's algorithm with the table's choice for s,
// else (stream not capturing, table not frozen) times the candidates on A, B, C, bias (the model's scratch
// buffers, same shapes as the real call) and records the fastest; else keeps the heuristic's first.
int nn_tune_gemm(NnCudaMlp* M, NnGemm* g, const NnGemmShape* s, const float* A, const float* B, float* C,
                 const float* bias);
// After planning: saves the table to $ADJ_NN_TUNE_FILE when set and new entries were timed.
int nn_tune_flush(void);
// Fills n floats with values in [-1, 1) on stream st (tuning inputs).
int nn_tune_fill(float* p, long long n, cudaStream_t st);
// nn_bench: entries, how many are not the heuristic's first candidate, and those entries' summed isolated times
// (chosen, heuristic's first) where both were recorded.
extern "C" void nn_tune_summary(int* n, int* changed, double* ms, double* ms0);

// nn_cuda_fused.cu (NN_CUDA_FUSE_OUT)
// At create, after the layer offsets and M->vec are set: M->fuse = 1 when the output layer is supported (out <= 32,
// in <= 512, a hidden layer before it, shared memory within the device's limit), else 0 (the normal path).
int nn_fused_setup(NnCudaMlp* M);
// Forward of the last hidden layer's rows (z[L-2] -> y[L-2], mean, rstd) and the output layer (-> y, and z[L-1]
// unless the output is the identity) in one launch on M->stream, with parameter vector P.
int nn_fused_fwd(NnCudaMlp* M, const float* P, int B, float* y);

// GEMM-only replay (nn_bench): exactly the cuBLASLt calls of forward (train = 0) or of forward + backward without
// the input gradient (train = 1) at batch B, with the plan's algorithms, none of the other kernels; two_streams:
// the weight-gradient GEMMs on the second stream as in backward, else all on the model's stream in backward's
// order. Overwrites activations, gradients and scratch. Capturable.
int nn_cuda_mlp_gemms(NnCudaMlp* M, const float* x, int B, int train, int two_streams);
#endif
