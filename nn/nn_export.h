// nn_export.h: policy export for deployment (`adjoint export`): an ONNX model and a compact binary blob.
//
// Both files describe the same function obs (batch, obs_dim) -> actions (batch, act_dim):
//   x = clip((obs - mean) * inv_std, -clip, clip)     inv_std = 1/sqrt(var + eps), computed in float64 and
//                                                     rounded to float32 as nn_norm_apply does (clip 0: none)
//   y = MLP(x)                                        nn.h's network (Linear -> act [-> LayerNorm]) x n_hidden,
//                                                     Linear -> out_scale * out_act
//   actions = y * action_scale + action_offset        (per action; identity by default)
//
// ONNX (written by our own protobuf encoder, no libonnx): opset 17 (LayerNormalization) or 13 (LayerNorm
// decomposed into ReduceMean/Sub/Mul/Add/Sqrt/Div). Input "obs" float32 [batch, obs_dim] with a symbolic batch
// dimension "batch"; first output "actions" float32 [batch, act_dim]. Gemm(transB=1) per layer, activations
// Elu(alpha 1) / x*Sigmoid(x) / Relu / Tanh. metadata_props: see nn_export_onnx below.
// Blob: nn/nn_blob_format.md; run it with nn/nn_blob_infer.h.
//
// Writers return 0 or a negative NN_E* code (nn.h) and, on error, a one-line message in err. Files are
// written atomically (PATH.tmp, fsync, rename).
#ifndef ADJ_NN_EXPORT_H
#define ADJ_NN_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "nn/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

// The policy: network config + parameters (pass the EMA shadow when the run keeps one) + normalizer + action map.
typedef struct {
  NnConfig cfg;               // the actor's network
  const float* params;        // (nn_param_count(&cfg)) in nn.h's layout
  int has_norm;               // 1: observation normalizer below
  const double* norm_mean;    // (cfg.in_dim)
  const double* norm_var;     // (cfg.in_dim) variance (m2 / count; 1 where count == 0, as nn_norm_apply)
  double norm_eps;            // added to var
  double norm_clip;           // <= 0: no clip
  const float* act_scale;     // (cfg.out_dim) or NULL (1)
  const float* act_offset;    // (cfg.out_dim) or NULL (0)
} NnExportPolicy;

// Metadata stored in the ONNX metadata_props (and summarized by the CLI). Every field is optional (NULL/0).
typedef struct {
  const char* task;                      // "cartpole"
  const char* algo;                      // "ppo"
  const char* source;                    // checkpoint path
  int ema;                               // 1: params are the EMA shadow
  const char* const* obs_names;          // (obs_dim)
  const char* const* act_names;          // (act_dim)
  double control_dt;                     // seconds per control step
  int n_joints;                          // robot tasks: actuated joints
  const char* const* joint_names;        // (n_joints)
  const double* default_joint_pos;      // (n_joints)
  const double* kp;                      // (n_joints) PD gains (0 where not a position actuator)
  const double* kd;                      // (n_joints)
  int n_extra;                           // extra key/value pairs
  const char* const* extra_keys;         // (n_extra)
  const char* const* extra_values;       // (n_extra)
} NnExportMeta;

typedef struct {
  int opset;  // 13 or 17 (0: 17)
} NnOnnxOptions;

// Fills p from live objects: network mlp (its parameters, or ema when not NULL), normalizer norm (NULL: none;
// eps/clip as given to nn_norm_create, which nn.h does not expose). Actions are the identity map.
int nn_export_policy_init(NnExportPolicy* p, NnMlp* mlp, const float* ema, const NnNorm* norm, double norm_eps,
                          double norm_clip, double* var_scratch /* (in_dim) */);

// ONNX ModelProto bytes in a malloc'ed buffer (*out, *len; free() it). metadata_props keys: producer, task,
// algo, source, ema, obs_dim, act_dim, observation_names, action_names (JSON lists), action_scale,
// action_offset, obs_mean, obs_var, obs_eps, obs_clip, control_dt, joint_names, default_joint_pos, kp, kd,
// network (e.g. "5-64-64-1 elu layernorm out=none"), input_name, output_name, then the extra pairs. An extra pair
// replaces the built-in pair of the same key (e.g. a task's own action_scale, the scale of its joint targets, where
// the graph's output map is the identity); keys are unique.
int nn_export_onnx(const NnExportPolicy* p, const NnExportMeta* meta, const NnOnnxOptions* opt, uint8_t** out,
                   size_t* len, char* err, size_t errlen);
int nn_export_onnx_file(const char* path, const NnExportPolicy* p, const NnExportMeta* meta,
                        const NnOnnxOptions* opt, char* err, size_t errlen);

// The same metadata pairs as one JSON object of string values ({"key": "value", ...}; list values are JSON text
// inside the string, as in metadata_props): the blob's sidecar FILE.json (nn/nn_blob_format.md), a malloc'ed
// buffer (*out, *len bytes, not NUL-terminated; free() it).
int nn_export_meta_json(const NnExportPolicy* p, const NnExportMeta* meta, char** out, size_t* len, char* err,
                        size_t errlen);
int nn_export_meta_json_file(const char* path, const NnExportPolicy* p, const NnExportMeta* meta, char* err,
                             size_t errlen);

// Blob bytes (nn/nn_blob_format.md) in a malloc'ed buffer (*out, *len; free() it).
int nn_export_blob(const NnExportPolicy* p, uint8_t** out, size_t* len, char* err, size_t errlen);
int nn_export_blob_file(const char* path, const NnExportPolicy* p, char* err, size_t errlen);

// Reference evaluation on the host with the nn library itself (nn_norm-equivalent normalization,
// nn_mlp_infer, action map): act (n, out_dim) from obs (n, in_dim); mlp must have cfg p->cfg and max_batch >= n.
int nn_export_reference(const NnExportPolicy* p, NnMlp* mlp, const float* obs, int n, float* act, float* scratch
                        /* (n, in_dim) */);

// Atomic file write: PATH.tmp, fsync, rename, fsync of the directory.
int nn_export_write_atomic(const char* path, const void* data, size_t len, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
