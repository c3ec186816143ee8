// nn/ on the GPU: the MLP of nn.h with cuBLASLt GEMMs, plus Adam/AdamW (+EMA) and the observation normalizer,
// all on device memory, asynchronous on one stream, allocation-free and CUDA-graph capturable after creation
// (call nn_cuda_mlp_prepare for every batch size before capturing), and bitwise deterministic run to run:
// cuBLASLt algorithms are chosen once per shape (heuristic's first choice, cached with its descriptors);
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
int nn_cuda_mlp_create(NnCudaMlp** out, const NnConfig* cfg, int max_batch, int flags, void* stream);
void nn_cuda_mlp_destroy(NnCudaMlp* m);
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
