// nn/: small, exact, deterministic MLP library (CPU reference in plain C; the GPU version is nn_cuda.h).
//
// Network: x (batch, in) → [Linear → act → (LayerNorm)] × n_hidden → Linear → out_scale * out_act(·).
// SHAC's actor and critic use act = ELU and layer_norm = 1 (Linear → ELU → LayerNorm).
//
// Parameters live in one contiguous vector, layer after layer:
//   W (out, in) row-major, b (out), then, for hidden layers with LayerNorm, gamma (out), beta (out);
//   each tensor starts at a multiple of 4 elements (zero padding between; nn_layer_offsets gives the offsets).
// The GPU library uses the same layout, so parameter vectors move between the two unchanged.
//
// Initialization (nn_mlp_init) is PyTorch's nn.Linear default: kaiming_uniform_(a=sqrt(5)) for W, which is
// U(-1/sqrt(in), 1/sqrt(in)), and b ~ U(-1/sqrt(in), 1/sqrt(in)); LayerNorm gamma = 1, beta = 0. Draws come
// from a seeded splitmix64 stream in parameter order (W row-major, then b, layer by layer).
//
// Precision: this header declares the float32 API by default. Compiled with -DNN_DOUBLE (library adj_nn_f64)
// every real-valued function gets the suffix _f64 and takes double; config types are shared. Both APIs can be
// declared in one file: include once without and once with NN_DOUBLE defined.
//
// All functions return 0 on success or a negative NN_E* code; nothing allocates after *_create.
#ifdef __cplusplus
extern "C" {
#endif

#ifndef NN_COMMON_DEFS
#define NN_COMMON_DEFS
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NN_MAX_HIDDEN 8

enum { NN_OK = 0, NN_EINVAL = -1, NN_ENOMEM = -2, NN_EIO = -3, NN_EFORMAT = -4, NN_ECUDA = -5, NN_ECUBLAS = -6 };

typedef enum { NN_ACT_NONE = 0, NN_ACT_ELU, NN_ACT_SILU, NN_ACT_RELU, NN_ACT_TANH } NnAct;

typedef struct {
  int in_dim, out_dim;
  int n_hidden;                // 0..NN_MAX_HIDDEN
  int hidden[NN_MAX_HIDDEN];   // hidden widths
  NnAct act;                   // hidden activation (ELU alpha = 1)
  int layer_norm;              // 1: LayerNorm (affine, biased variance) after each hidden activation
  NnAct out_act;               // activation on the output layer (usually NONE or TANH)
  double out_scale;            // y = out_scale * out_act(z); 0 means 1
  double ln_eps;               // LayerNorm epsilon; 0 means 1e-5 (PyTorch's default)
} NnConfig;

typedef enum { NN_LR_CONSTANT = 0, NN_LR_LINEAR } NnLrSchedule;

// Adam / AdamW, PyTorch semantics: bias-corrected moments, eps added to sqrt(v_hat).
typedef struct {
  double lr, beta1, beta2, eps;
  double weight_decay;    // 0: none
  int decoupled;          // 1: AdamW (p *= 1 - lr*wd); 0: L2 (g += wd*p) as torch.optim.Adam
  double max_grad_norm;   // > 0: scale gradients by min(1, max/(||g||_2 + 1e-6)) before the update
  NnLrSchedule schedule;  // CONSTANT or LINEAR: lr_t = lr + (lr_end - lr) * min(t-1, total-1)/(total-1)
  double lr_end;
  int64_t total_steps;
  double ema_decay;       // > 0: keep a shadow copy e <- d*e + (1-d)*p after each step
} NnAdamConfig;

// Layout of one layer inside the flat parameter vector (offsets in elements; gamma/beta = -1 if absent).
typedef struct {
  int in, out;
  int64_t w, b, gamma, beta;
} NnLayerOffsets;

typedef enum { NN_DT_F32 = 0, NN_DT_F64 = 1, NN_DT_I64 = 2 } NnDtype;

// A named flat array of live state (for checkpoints; the trainer may store these in HDF5).
typedef struct {
  char name[32];
  NnDtype dtype;
  int64_t count;
  void* data;
} NnTensorRef;

int nn_config_check(const NnConfig* cfg);
int nn_layer_count(const NnConfig* cfg);  // n_hidden + 1
int nn_layer_offsets(const NnConfig* cfg, int layer, NnLayerOffsets* out);
int64_t nn_param_count(const NnConfig* cfg);
int nn_max_width(const NnConfig* cfg);  // max over in, hidden, out
// printf-formats a message into err (when err && errlen) and returns code: one-line error returns
int nn_errorf(char* err, size_t errlen, int code, const char* fmt, ...);
double nn_adam_lr(const NnAdamConfig* a, int64_t step);  // learning rate used by step t (t >= 1)
uint64_t nn_rng_next(uint64_t* state);                   // splitmix64
double nn_rng_uniform(uint64_t* state);                  // [0, 1), 53 bits
const char* nn_strerror(int err);

// Writes/reads named arrays in a small binary format ("ADJNN001", count, then per array: name, dtype, count,
// raw little-endian data). Reading fills the given refs by name; a missing name or size mismatch is an error.
int nn_state_write(FILE* f, const NnTensorRef* refs, int n);
int nn_state_read(FILE* f, const NnTensorRef* refs, int n);
#endif  // NN_COMMON_DEFS

#if defined(NN_DOUBLE) && !defined(NN_API_F64)
#define NN_API_F64
#define NN_DECLARE_API
#elif !defined(NN_DOUBLE) && !defined(NN_API_F32)
#define NN_API_F32
#define NN_DECLARE_API
#endif

#ifdef NN_DECLARE_API
#undef NN_DECLARE_API
#undef NN_FN
#undef nn_real
#ifdef NN_DOUBLE
#define nn_real double
#define NN_FN(name) name##_f64
#else
#define nn_real float
#define NN_FN(name) name
#endif

// ---- MLP ----
typedef struct NN_FN(NnMlp) NN_FN(NnMlp);
int NN_FN(nn_mlp_create)(NN_FN(NnMlp) * *out, const NnConfig* cfg, int max_batch);
void NN_FN(nn_mlp_destroy)(NN_FN(NnMlp) * m);
const NnConfig* NN_FN(nn_mlp_config)(const NN_FN(NnMlp) * m);
int64_t NN_FN(nn_mlp_param_count)(const NN_FN(NnMlp) * m);
nn_real* NN_FN(nn_mlp_params)(NN_FN(NnMlp) * m);  // (n_params)
nn_real* NN_FN(nn_mlp_grads)(NN_FN(NnMlp) * m);   // (n_params), written by backward
int NN_FN(nn_mlp_init)(NN_FN(NnMlp) * m, uint64_t seed);
// y (batch, out) = f(x (batch, in)); keeps what backward needs; x must stay unchanged until backward.
int NN_FN(nn_mlp_forward)(NN_FN(NnMlp) * m, const nn_real* x, int batch, nn_real* y);
// Same with another parameter vector (e.g. the EMA shadow) and nothing kept for backward.
int NN_FN(nn_mlp_infer)(NN_FN(NnMlp) * m, const nn_real* params, const nn_real* x, int batch, nn_real* y);
// From dy (batch, out) of the last forward: overwrites grads, and writes dx (batch, in) unless dx is NULL.
int NN_FN(nn_mlp_backward)(NN_FN(NnMlp) * m, const nn_real* dy, nn_real* dx);
int NN_FN(nn_mlp_state)(NN_FN(NnMlp) * m, NnTensorRef* refs, int max);  // "mlp.params"; returns count

// ---- Adam / AdamW with clipping, schedule and EMA over one flat vector ----
typedef struct NN_FN(NnAdam) NN_FN(NnAdam);
// params0 (n): initial parameters, copied into the EMA shadow when ema_decay > 0.
int NN_FN(nn_adam_create)(NN_FN(NnAdam) * *out, const NnAdamConfig* cfg, int64_t n, const nn_real* params0);
void NN_FN(nn_adam_destroy)(NN_FN(NnAdam) * a);
// One step: params (n) updated in place from grads (n); grads are left unscaled.
int NN_FN(nn_adam_step)(NN_FN(NnAdam) * a, nn_real* params, const nn_real* grads);
int64_t NN_FN(nn_adam_steps)(const NN_FN(NnAdam) * a);
double NN_FN(nn_adam_last_grad_norm)(const NN_FN(NnAdam) * a);  // before clipping
nn_real* NN_FN(nn_adam_m)(NN_FN(NnAdam) * a);
nn_real* NN_FN(nn_adam_v)(NN_FN(NnAdam) * a);
nn_real* NN_FN(nn_adam_ema)(NN_FN(NnAdam) * a);  // NULL without EMA
int NN_FN(nn_adam_state)(NN_FN(NnAdam) * a, NnTensorRef* refs, int max);  // adam.m, adam.v, adam.step, ema

// ---- Running observation normalizer: y = clip((x - mean) / sqrt(var + eps), -clip, clip) ----
// Statistics (count, mean, M2) are float64 and merged per batch with Chan et al.'s parallel formula.
typedef struct NN_FN(NnNorm) NN_FN(NnNorm);
int NN_FN(nn_norm_create)(NN_FN(NnNorm) * *out, int dim, double eps, double clip /* <= 0: none */);
void NN_FN(nn_norm_destroy)(NN_FN(NnNorm) * n);
int NN_FN(nn_norm_update)(NN_FN(NnNorm) * n, const nn_real* x, int batch);  // x (batch, dim)
int NN_FN(nn_norm_apply)(const NN_FN(NnNorm) * n, const nn_real* x, int batch, nn_real* y);
// Gradient through the normalization with the statistics held constant; zero where the clip is active.
int NN_FN(nn_norm_backward)(const NN_FN(NnNorm) * n, const nn_real* x, const nn_real* dy, int batch, nn_real* dx);
double NN_FN(nn_norm_count)(const NN_FN(NnNorm) * n);
const double* NN_FN(nn_norm_mean)(const NN_FN(NnNorm) * n);  // (dim)
const double* NN_FN(nn_norm_m2)(const NN_FN(NnNorm) * n);    // (dim), var = m2 / count
int NN_FN(nn_norm_state)(NN_FN(NnNorm) * n, NnTensorRef* refs, int max);  // norm.count, norm.mean, norm.m2

#undef nn_real
#endif  // NN_DECLARE_API

#ifdef __cplusplus
}
#endif
