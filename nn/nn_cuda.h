// nn/ on the GPU: the MLP of nn.h with cuBLASLt GEMMs, plus Adam/AdamW (+EMA) and the observation normalizer,
// all on device memory, asynchronous on one stream, allocation-free and CUDA-graph capturable after creation
// (call nn_cuda_mlp_prepare for every batch size before capturing), and bitwise deterministic run to run:
// cuBLASLt algorithms are chosen once per shape (heuristic's first choice, cached with its descriptors, or with
// NN_CUDA_TUNE the fastest of several candidates, recorded in a tune table that can be saved and reloaded);
// split-K only with ordered workspace reductions; the weight-gradient GEMMs split the batch into a fixed number
// of slices summed in a fixed order; column sums (bias, LayerNorm gradients) go through per-block partials
// summed in a fixed order; no atomics anywhere.
//
// Parameter layout is nn.h's (nn_layer_offsets), so vectors copy between CPU and GPU unchanged.
// Pointers named *_dev are device memory; every device pointer passed in must be 16-byte aligned.
// stream: a cudaStream_t passed as void* (NULL = legacy default stream) so this header needs no CUDA headers.
#ifndef NN_CUDA_H
#define NN_CUDA_H
#include "nn/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

int nn_cuda_device_count(void);  // 0 when there is no usable device

typedef struct NnCudaMlp NnCudaMlp;
// flags: NN_CUDA_TF32 runs the GEMMs on the tensor cores in TF32 (opt-in; ~5e-4 relative error against fp32);
// NN_CUDA_NO_SPLITK forbids cuBLASLt split-K altogether (by default split-K is allowed only with the
// workspace reduction schemes, which sum the parts in a fixed order in a separate step).
#define NN_CUDA_TF32 1
#define NN_CUDA_NO_SPLITK 2
// NN_CUDA_NO_VEC (diagnostics): scalar row kernels only. NN_CUDA_THIN (opt-in): plain fp32 kernels instead of
// cuBLASLt for an output layer with out <= 32 and in <= 128 at batches <= 8192; measured slower on the H200
// (bench/RESULTS.md, ablation), kept for smaller GPUs.
#define NN_CUDA_NO_VEC 4
#define NN_CUDA_THIN 8
// NN_CUDA_TUNE (opt-in): cuBLASLt algorithm per GEMM shape (forward, data- and weight-gradient GEMM of every
// layer, per batch size) from a process-wide tune table instead of the heuristic's first choice. A shape not in
// the table is tuned when its batch is planned (create, nn_cuda_mlp_prepare, first forward at a new batch): the
// heuristic's first 8 candidates with the model's reduction schemes (split-K only with ordered workspace
// reductions, or none with NN_CUDA_NO_SPLITK) plus, when split-K is allowed, its first 4 without split-K, are
// timed on the model's own scratch buffers (CUDA events: 2 warm-up launches, then the median of 5 samples of 3
// launches); the fastest is recorded unless it is within 2% of the heuristic's first choice, which is then kept.
// Timing happens only while the model's stream is not being captured and the table is not frozen; otherwise a
// missing shape keeps the heuristic's first choice (exactly the default mode's algorithm) and is not recorded.
// Every candidate is deterministic run to run (no atomics), so a tuned model is bitwise reproducible as long as
// the same algorithms are chosen; timings are not, so for identical results across processes save the table
// after tuning and load (and freeze) it before creating models: a loaded entry is always used, as the same
// cublasLtMatmulAlgo_t bytes that were timed. Where another algorithm than the heuristic's first is chosen,
// results differ from the default mode's in the last bits (same accuracy). Without NN_CUDA_TUNE nothing here is
// consulted and the default mode is unchanged. Tuning a batch size takes ~0.1-3 s per network (H200); the
// gradient ping-pong buffers are sized for the input width too (timing scratch).
#define NN_CUDA_TUNE 16
// NN_CUDA_FUSE_OUT (opt-in): the forward computes the output layer inside the last hidden layer's row kernel
// (activation [+ LayerNorm], which still writes that layer's output for the backward) instead of a separate
// cuBLASLt GEMM (+ output-activation kernel): one launch fewer per forward (the actor's forward: 7 -> 6), for
// small batches where the forward is launch-bound. Applies when the network has a hidden layer and the output
// layer has out <= 32 and in <= 512 (shared memory: W_out plus the block's rows, <= ~129 KB at in 512, out 32;
// if the GPU's per-block limit is smaller, or the shape is outside these limits, the normal path runs, silently),
// at every batch size, with or without LayerNorm, with any output activation and scale. The output layer is then
// computed in plain fp32 (explicit FMA, also in TF32 mode) in a fixed summation order that depends only on (in,
// out): deterministic run to run and independent of the batch size; it differs from the cuBLASLt GEMM's in the
// last bits (fp32 mode) or is more accurate (TF32 mode). The hidden layers' outputs are the same bits as without
// the flag; the backward is unchanged (NN_CUDA_THIN's backward kernels still apply if both flags are given; its
// forward kernel is replaced by the fused one). Not consulted by NN_CUDA_TUNE (the output GEMM is still planned).
#define NN_CUDA_FUSE_OUT 32
int nn_cuda_mlp_create(NnCudaMlp** out, const NnConfig* cfg, int max_batch, int flags, void* stream);
void nn_cuda_mlp_destroy(NnCudaMlp* m);
// The create flags in effect: NN_CUDA_THIN and NN_CUDA_FUSE_OUT only where the output layer qualifies.
int nn_cuda_mlp_flags(const NnCudaMlp* m);
int64_t nn_cuda_mlp_param_count(const NnCudaMlp* m);
float* nn_cuda_mlp_params(NnCudaMlp* m);  // device (n_params)
float* nn_cuda_mlp_grads(NnCudaMlp* m);   // device (n_params)
int nn_cuda_mlp_init(NnCudaMlp* m, uint64_t seed);  // same values as nn_mlp_init (drawn on the host)
int nn_cuda_mlp_set_params(NnCudaMlp* m, const float* host);  // (n_params), synchronous
int nn_cuda_mlp_get_params(NnCudaMlp* m, float* host);
int nn_cuda_mlp_get_grads(NnCudaMlp* m, float* host);
// Plans the GEMMs of one batch size (descriptors, layouts, heuristic algorithm); forward does it on first use.
int nn_cuda_mlp_prepare(NnCudaMlp* m, int batch);
// y_dev (batch, out) = f(x_dev (batch, in)); keeps activations; x_dev must stay unchanged until backward.
int nn_cuda_mlp_forward(NnCudaMlp* m, const float* x_dev, int batch, float* y_dev);
// Forward with another parameter vector (e.g. the EMA shadow); overwrites the activations kept for backward.
int nn_cuda_mlp_infer(NnCudaMlp* m, const float* params_dev, const float* x_dev, int batch, float* y_dev);
// From dy_dev (batch, out) of the last forward: overwrites grads; writes dx_dev (batch, in) unless NULL.
int nn_cuda_mlp_backward(NnCudaMlp* m, const float* dy_dev, float* dx_dev);
// dy = scale * (y - target), n elements (the gradient of a mean squared error with scale = 2/n).
int nn_cuda_mse_grad(const float* y_dev, const float* target_dev, int64_t n, float scale, float* dy_dev, void* stream);

// The tune table of NN_CUDA_TUNE (process-wide, thread-safe). Entries are keyed by GEMM shape (m, n, k, leading
// dimensions, transposes, strided-batch count and strides, bias epilogue), precision (fp32/TF32), split-K
// permission, GPU name and multiprocessor count, and cuBLASLt version; a file is text, one line per GEMM
// (format: nn/nn_tune_table.h). load merges a file into the table (same key: the file's entry replaces it); on
// any error (NN_EIO unreadable, NN_EFORMAT malformed, with "PATH:LINE: what" in err) the table is unchanged.
// save writes the whole table atomically (PATH.tmp, fsync, rename). Planning with an entry whose attributes do not
// match its algorithm bytes fails with NN_EFORMAT, with one that cublasLtMatmulAlgoCheck refuses with NN_ECUBLAS
// (message: nn_cuda_tune_last_error); nothing falls back silently.
// Environment: ADJ_NN_TUNE_FILE=PATH makes the first NN_CUDA_TUNE model of the process load PATH if it exists
// (a malformed file fails that create, and every later NN_CUDA_TUNE create, with NN_EFORMAT), and every planning
// that timed new shapes save the table to PATH: run 1 tunes and writes, later runs load the same choices
// (bitwise-identical results) and time only shapes still missing (none if they plan the same batches).
// Processes sharing one PATH at the same time each write their own whole table (the last rename wins).
int nn_cuda_tune_load(const char* path, char* err, size_t errlen);
int nn_cuda_tune_save(const char* path, char* err, size_t errlen);
void nn_cuda_tune_clear(void);
int nn_cuda_tune_count(void);  // entries in the table
int nn_cuda_tune_timed(void);  // shapes timed by this process so far
// frozen = 1: missing shapes are not timed (heuristic's first choice, not recorded); loaded entries still apply.
void nn_cuda_tune_freeze(int frozen);
// Last tuning error inside create/prepare/forward (env file, rejected entry, failed save); "" if none.
void nn_cuda_tune_last_error(char* buf, size_t len);

typedef struct NnCudaAdam NnCudaAdam;
// params0_dev (n): initial parameters for the EMA shadow (may be NULL without EMA).
int nn_cuda_adam_create(NnCudaAdam** out, const NnAdamConfig* cfg, int64_t n, const float* params0_dev, void* stream);
void nn_cuda_adam_destroy(NnCudaAdam* a);
// One step (global-norm clip, schedule, bias correction, AdamW or L2, EMA), entirely on the device.
int nn_cuda_adam_step(NnCudaAdam* a, float* params_dev, const float* grads_dev);
float* nn_cuda_adam_ema(NnCudaAdam* a);  // device (n) or NULL
// device (1): the gradient norm (before clipping) of the last step, for logging without a synchronization
const double* nn_cuda_adam_grad_norm_dev(const NnCudaAdam* a);
// Host copies for checkpoints (any pointer may be NULL); synchronous.
int nn_cuda_adam_download(NnCudaAdam* a, float* m, float* v, float* ema, int64_t* step, double* last_grad_norm);
int nn_cuda_adam_upload(NnCudaAdam* a, const float* m, const float* v, const float* ema, const int64_t* step);

typedef struct NnCudaNorm NnCudaNorm;
int nn_cuda_norm_create(NnCudaNorm** out, int dim, double eps, double clip, int max_batch, void* stream);
void nn_cuda_norm_destroy(NnCudaNorm* n);
int nn_cuda_norm_update(NnCudaNorm* n, const float* x_dev, int batch);  // Chan merge in float64
int nn_cuda_norm_apply(NnCudaNorm* n, const float* x_dev, int batch, float* y_dev);
int nn_cuda_norm_backward(NnCudaNorm* n, const float* x_dev, const float* dy_dev, int batch, float* dx_dev);
int nn_cuda_norm_download(NnCudaNorm* n, double* count, double* mean, double* m2);  // host, synchronous
int nn_cuda_norm_upload(NnCudaNorm* n, double count, const double* mean, const double* m2);

#ifdef __cplusplus
}
#endif
#endif
