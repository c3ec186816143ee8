// nn_export.c: ONNX and blob writers for a trained policy (see nn_export.h). The ONNX file is produced by a
// minimal protobuf wire-format encoder (varints, fixed32, length-delimited fields) over the few messages a
// feed-forward graph needs; field numbers are those of onnx/onnx.proto (cited next to each writer).
#define _POSIX_C_SOURCE 200809L  // fsync
#include "nn/nn_export.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/nn_blob_infer.h"



// ---- growable byte buffer + protobuf wire format ----
typedef struct {
  uint8_t* p;
  size_t n, cap;
  int oom;
} Buf;

static void buf_put(Buf* b, const void* d, size_t n) {
  if (b->oom || !n) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    uint8_t* q = (uint8_t*)realloc(b->p, cap);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q, b->cap = cap;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void buf_free(Buf* b) { free(b->p), b->p = NULL, b->n = b->cap = 0; }

enum { WT_VARINT = 0, WT_LEN = 2, WT_FIXED32 = 5 };

static void pb_varint(Buf* b, uint64_t v) {
  uint8_t t[10];
  int n = 0;
  do {
    t[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) t[n] |= 0x80;
    n++;
  } while (v);
  buf_put(b, t, (size_t)n);
}
static void pb_tag(Buf* b, int field, int wt) { pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wt); }
static void pb_int(Buf* b, int field, int64_t v) {  // int32/int64/enum: negative values as 10-byte two's complement
  pb_tag(b, field, WT_VARINT);
  pb_varint(b, (uint64_t)v);
}
static void pb_bytes(Buf* b, int field, const void* d, size_t n) {
  pb_tag(b, field, WT_LEN);
  pb_varint(b, n);
  buf_put(b, d, n);
}
static void pb_str(Buf* b, int field, const char* s) { pb_bytes(b, field, s, strlen(s)); }
static void pb_float(Buf* b, int field, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint8_t t[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
  pb_tag(b, field, WT_FIXED32);
  buf_put(b, t, 4);
}
static void pb_msg(Buf* b, int field, Buf* sub) {  // appends sub as an embedded message and frees it
  if (sub->oom) b->oom = 1;
  pb_bytes(b, field, sub->p, sub->n);
  buf_free(sub);
}

// ---- ONNX messages ----
enum { ONNX_FLOAT = 1 };                                    // TensorProto.DataType
enum { ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_INTS = 7 };       // AttributeProto.AttributeType

// TensorProto: dims = 1, data_type = 2, name = 8, raw_data = 9 (little-endian float32)
static void onnx_tensor(Buf* b, int field, const char* name, const float* data, int rank, const int64_t* dims) {
  Buf t = {0};
  int64_t n = 1;
  for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]), n *= dims[i];
  pb_int(&t, 2, ONNX_FLOAT);
  pb_str(&t, 8, name);
  pb_tag(&t, 9, WT_LEN);
  pb_varint(&t, (uint64_t)n * 4);
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &data[i], 4);
    uint8_t q[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    buf_put(&t, q, 4);
  }
  pb_msg(b, field, &t);
}

// ValueInfoProto: name = 1, type = 2 -> TypeProto.tensor_type = 1 -> {elem_type = 1, shape = 2 ->
// TensorShapeProto.dim = 1 -> {dim_value = 1 | dim_param = 2}}
static void onnx_value_info(Buf* b, int field, const char* name, int width) {
  Buf d0 = {0}, d1 = {0}, shape = {0}, tt = {0}, type = {0}, vi = {0};
  pb_str(&d0, 2, "batch");
  pb_int(&d1, 1, width);
  pb_msg(&shape, 1, &d0);
  pb_msg(&shape, 1, &d1);
  pb_int(&tt, 1, ONNX_FLOAT);
  pb_msg(&tt, 2, &shape);
  pb_msg(&type, 1, &tt);
  pb_str(&vi, 1, name);
  pb_msg(&vi, 2, &type);
  pb_msg(b, field, &vi);
}

// AttributeProto: name = 1, f = 2, i = 3, ints = 8, type = 20 (appended to a node as NodeProto.attribute = 5)
static void attr_float(Buf* node_attrs, const char* name, float f) {
  Buf a = {0};
  pb_str(&a, 1, name);
  pb_float(&a, 2, f);
  pb_int(&a, 20, ATTR_FLOAT);
  pb_msg(node_attrs, 5, &a);
}
static void attr_int(Buf* node_attrs, const char* name, int64_t i) {
  Buf a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 3, i);
  pb_int(&a, 20, ATTR_INT);
  pb_msg(node_attrs, 5, &a);
}
static void attr_ints1(Buf* node_attrs, const char* name, int64_t i) {
  Buf a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 8, i);
  pb_int(&a, 20, ATTR_INTS);
  pb_msg(node_attrs, 5, &a);
}

#define G_NAME 48
#define G_MAX_NODES 512
typedef struct {
  char op[24], name[G_NAME], in[3][G_NAME], out[G_NAME];
  int nin;
  Buf attrs;  // serialized NodeProto.attribute fields
} Node;

typedef struct {
  Node* nodes;  // (G_MAX_NODES)
  int n;
  Buf inits;  // serialized GraphProto.initializer fields
  int overflow;
} Graph;

// Adds a node; returns it (attributes may be appended) or NULL on overflow. Output name = out.
static Node* add_node(Graph* g, const char* op, const char* out, const char* a, const char* b, const char* c) {
  if (g->n >= G_MAX_NODES) {
    g->overflow = 1;
    return NULL;
  }
  Node* nd = &g->nodes[g->n];
  memset(nd, 0, sizeof(*nd));
  snprintf(nd->op, sizeof(nd->op), "%s", op);
  snprintf(nd->name, sizeof(nd->name), "%s_%d", op, g->n);
  snprintf(nd->out, sizeof(nd->out), "%s", out);
  const char* ins[3] = {a, b, c};
  for (int i = 0; i < 3 && ins[i]; i++) snprintf(nd->in[nd->nin++], G_NAME, "%s", ins[i]);
  g->n++;
  return nd;
}

// NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5
static void encode_node(Buf* graph, Node* nd) {
  Buf b = {0};
  for (int i = 0; i < nd->nin; i++) pb_str(&b, 1, nd->in[i]);
  pb_str(&b, 2, nd->out);
  pb_str(&b, 3, nd->name);
  pb_str(&b, 4, nd->op);
  if (nd->attrs.oom) b.oom = 1;
  buf_put(&b, nd->attrs.p, nd->attrs.n);
  buf_free(&nd->attrs);
  pb_msg(graph, 1, &b);
}

static void init1(Graph* g, const char* name, const float* data, int64_t n) { onnx_tensor(&g->inits, 5, name, data, 1, &n); }
static void init_scalar(Graph* g, const char* name, float v) { onnx_tensor(&g->inits, 5, name, &v, 0, NULL); }

// ---- small JSON-ish text builder for metadata values ----
static void txt(Buf* b, const char* fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n > 0) buf_put(b, tmp, (size_t)(n < (int)sizeof(tmp) ? n : (int)sizeof(tmp) - 1));
}
static void json_str(Buf* b, const char* s) {
  buf_put(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') buf_put(b, "\\", 1), buf_put(b, s, 1);
    else if (c < 0x20) txt(b, "\\u%04x", c);
    else buf_put(b, s, 1);
  }
  buf_put(b, "\"", 1);
}
static char* json_names(const char* const* names, int n, const char* prefix) {
  Buf b = {0};
  buf_put(&b, "[", 1);
  for (int i = 0; i < n; i++) {
    if (i) buf_put(&b, ", ", 2);
    if (names && names[i]) json_str(&b, names[i]);
    else txt(&b, "\"%s%d\"", prefix, i);
  }
  buf_put(&b, "]", 2);  // with the NUL
  return b.oom ? (buf_free(&b), NULL) : (char*)b.p;
}
static char* json_f32(const float* v, int n, float dflt) {
  Buf b = {0};
  buf_put(&b, "[", 1);
  for (int i = 0; i < n; i++) txt(&b, "%s%.9g", i ? ", " : "", (double)(v ? v[i] : dflt));
  buf_put(&b, "]", 2);
  return b.oom ? (buf_free(&b), NULL) : (char*)b.p;
}
static char* json_f64(const double* v, int n) {
  Buf b = {0};
  buf_put(&b, "[", 1);
  for (int i = 0; i < n; i++) txt(&b, "%s%.17g", i ? ", " : "", v[i]);
  buf_put(&b, "]", 2);
  return b.oom ? (buf_free(&b), NULL) : (char*)b.p;
}

static const char* act_name(NnAct a) {
  static const char* n[] = {"none", "elu", "silu", "relu", "tanh"};
  return (a >= NN_ACT_NONE && a <= NN_ACT_TANH) ? n[a] : "?";
}

// ---- validation shared by both writers ----
static int check_policy(const NnExportPolicy* p, char* err, size_t errlen) {
  if (!p || !p->params) return nn_errorf(err, errlen, NN_EINVAL, "export: no policy parameters");
  if (nn_config_check(&p->cfg)) return nn_errorf(err, errlen, NN_EINVAL, "export: invalid network configuration");
  if (p->cfg.n_hidden + 1 > NN_BLOB_MAX_LAYERS) return nn_errorf(err, errlen, NN_EINVAL, "export: too many layers");
  if (p->has_norm && (!p->norm_mean || !p->norm_var || !(p->norm_eps >= 0)))
    return nn_errorf(err, errlen, NN_EINVAL, "export: normalizer without statistics");
  int64_t np = nn_param_count(&p->cfg);
  for (int64_t i = 0; i < np; i++)
    if (!isfinite(p->params[i])) return nn_errorf(err, errlen, NN_EFORMAT, "export: network parameter %lld is not finite", (long long)i);
  for (int j = 0; p->has_norm && j < p->cfg.in_dim; j++)
    if (!isfinite(p->norm_mean[j]) || !(p->norm_var[j] >= 0) || !isfinite(p->norm_var[j]))
      return nn_errorf(err, errlen, NN_EFORMAT, "export: normalizer statistics of observation %d are invalid", j);
  return NN_OK;
}

// float32 normalizer coefficients exactly as nn_norm_apply computes them
static void norm_coeffs(const NnExportPolicy* p, int j, float* mean, float* inv_std) {
  *mean = (float)p->norm_mean[j];
  *inv_std = (float)(1.0 / sqrt(p->norm_var[j] + p->norm_eps));
}

static int act_is_identity(const NnExportPolicy* p) {
  for (int j = 0; j < p->cfg.out_dim; j++)
    if ((p->act_scale && p->act_scale[j] != 1.0f) || (p->act_offset && p->act_offset[j] != 0.0f)) return 0;
  return 1;
}

int nn_export_policy_init(NnExportPolicy* p, NnMlp* mlp, const float* ema, const NnNorm* norm, double norm_eps,
                          double norm_clip, double* var_scratch) {
  if (!p || !mlp || (norm && !var_scratch)) return NN_EINVAL;
  memset(p, 0, sizeof(*p));
  p->cfg = *nn_mlp_config(mlp);
  p->params = ema ? ema : nn_mlp_params(mlp);
  if (norm) {
    double c = nn_norm_count(norm);
    const double* m2 = nn_norm_m2(norm);
    for (int j = 0; j < p->cfg.in_dim; j++) var_scratch[j] = c > 0 ? m2[j] / c : 1.0;
    p->has_norm = 1, p->norm_mean = nn_norm_mean(norm), p->norm_var = var_scratch;
    p->norm_eps = norm_eps, p->norm_clip = norm_clip;
  }
  return NN_OK;
}

// ---- ONNX ----
static void emit_act(Graph* g, NnAct a, const char* in, const char* out) {
  char s[G_NAME + 16];
  Node* nd;
  switch (a) {
    case NN_ACT_ELU:
      if ((nd = add_node(g, "Elu", out, in, NULL, NULL))) attr_float(&nd->attrs, "alpha", 1.0f);
      break;
    case NN_ACT_SILU:
      snprintf(s, sizeof(s), "%s.sigmoid", out);
      add_node(g, "Sigmoid", s, in, NULL, NULL);
      add_node(g, "Mul", out, in, s, NULL);
      break;
    case NN_ACT_RELU: add_node(g, "Relu", out, in, NULL, NULL); break;
    case NN_ACT_TANH: add_node(g, "Tanh", out, in, NULL, NULL); break;
    default: add_node(g, "Identity", out, in, NULL, NULL); break;
  }
}

// LayerNorm over the last axis; opset >= 17: one LayerNormalization node; else the decomposition.
static void emit_layernorm(Graph* g, int opset, int l, float eps, const char* in, const char* out) {
  char gm[G_NAME], bt[G_NAME];
  snprintf(gm, sizeof(gm), "l%d.ln.weight", l);
  snprintf(bt, sizeof(bt), "l%d.ln.bias", l);
  if (opset >= 17) {
    Node* nd = add_node(g, "LayerNormalization", out, in, gm, bt);
    if (nd) attr_int(&nd->attrs, "axis", -1), attr_float(&nd->attrs, "epsilon", eps);
    return;
  }
  char mu[G_NAME], d[G_NAME], d2[G_NAME], var[G_NAME], ve[G_NAME], sd[G_NAME], xh[G_NAME], xg[G_NAME], e[G_NAME];
  snprintf(mu, G_NAME, "l%d.ln.mean", l), snprintf(d, G_NAME, "l%d.ln.centered", l);
  snprintf(d2, G_NAME, "l%d.ln.sq", l), snprintf(var, G_NAME, "l%d.ln.var", l);
  snprintf(ve, G_NAME, "l%d.ln.var_eps", l), snprintf(sd, G_NAME, "l%d.ln.std", l);
  snprintf(xh, G_NAME, "l%d.ln.normalized", l), snprintf(xg, G_NAME, "l%d.ln.scaled", l);
  snprintf(e, G_NAME, "l%d.ln.epsilon", l);
  init_scalar(g, e, eps);
  Node* nd = add_node(g, "ReduceMean", mu, in, NULL, NULL);
  if (nd) attr_ints1(&nd->attrs, "axes", -1), attr_int(&nd->attrs, "keepdims", 1);
  add_node(g, "Sub", d, in, mu, NULL);
  add_node(g, "Mul", d2, d, d, NULL);
  nd = add_node(g, "ReduceMean", var, d2, NULL, NULL);
  if (nd) attr_ints1(&nd->attrs, "axes", -1), attr_int(&nd->attrs, "keepdims", 1);
  add_node(g, "Add", ve, var, e, NULL);
  add_node(g, "Sqrt", sd, ve, NULL, NULL);
  add_node(g, "Div", xh, d, sd, NULL);
  add_node(g, "Mul", xg, xh, gm, NULL);
  add_node(g, "Add", out, xg, bt, NULL);
}

static void meta_kv(Buf* model, const char* key, const char* value) {  // StringStringEntryProto: key 1, value 2
  Buf e = {0};
  pb_str(&e, 1, key);
  pb_str(&e, 2, value ? value : "");
  pb_msg(model, 14, &e);
}

// The metadata pairs, once for both sinks: the ONNX model's metadata_props and the blob's JSON sidecar.
typedef struct {
  Buf* b;
  int json;  // 1: a JSON object of string values; 0: metadata_props entries
  int n;     // pairs written
  const NnExportMeta* meta;
} MetaOut;
// an extra pair replaces the built-in pair of the same key (ONNX refuses duplicate metadata keys)
static int meta_replaced(const NnExportMeta* m, const char* key) {
  for (int i = 0; i < m->n_extra; i++)
    if (m->extra_keys && m->extra_keys[i] && !strcmp(m->extra_keys[i], key)) return 1;
  return 0;
}
static void meta_put(MetaOut* o, const char* key, const char* value, int builtin) {
  if (builtin && meta_replaced(o->meta, key)) return;
  if (!o->json) {
    meta_kv(o->b, key, value);
  } else {
    buf_put(o->b, o->n ? ",\n  " : "{\n  ", 4);
    json_str(o->b, key);
    buf_put(o->b, ": ", 2);
    json_str(o->b, value ? value : "");
  }
  o->n++;
}
static void meta_put_own(MetaOut* o, const char* key, char* value) {  // takes a malloc'ed value
  if (!value) {
    o->b->oom = 1;
    return;
  }
  meta_put(o, key, value, 1);
  free(value);
}
static void meta_pairs(MetaOut* o, const NnExportPolicy* p, const NnExportMeta* meta) {
  const NnConfig* c = &p->cfg;
  int O = c->in_dim, A = c->out_dim;
  float out_scale = (float)(c->out_scale != 0 ? c->out_scale : 1.0);
  char num[64];
  meta_put(o, "producer", "adjoint", 1);
  if (meta->task) meta_put(o, "task", meta->task, 1);
  if (meta->algo) meta_put(o, "algo", meta->algo, 1);
  if (meta->source) meta_put(o, "source", meta->source, 1);
  meta_put(o, "ema", meta->ema ? "1" : "0", 1);
  snprintf(num, sizeof(num), "%d", O), meta_put(o, "obs_dim", num, 1);
  snprintf(num, sizeof(num), "%d", A), meta_put(o, "act_dim", num, 1);
  meta_put_own(o, "observation_names", json_names(meta->obs_names, O, "obs_"));
  meta_put_own(o, "action_names", json_names(meta->act_names, A, "action_"));
  meta_put_own(o, "action_scale", json_f32(p->act_scale, A, 1.0f));
  meta_put_own(o, "action_offset", json_f32(p->act_offset, A, 0.0f));
  if (p->has_norm) {
    meta_put_own(o, "obs_mean", json_f64(p->norm_mean, O));
    meta_put_own(o, "obs_var", json_f64(p->norm_var, O));
    snprintf(num, sizeof(num), "%.17g", p->norm_eps), meta_put(o, "obs_eps", num, 1);
    snprintf(num, sizeof(num), "%.17g", p->norm_clip > 0 ? p->norm_clip : 0.0), meta_put(o, "obs_clip", num, 1);
  }
  if (meta->control_dt > 0) snprintf(num, sizeof(num), "%.17g", meta->control_dt), meta_put(o, "control_dt", num, 1);
  if (meta->n_joints > 0) {
    meta_put_own(o, "joint_names", json_names(meta->joint_names, meta->n_joints, "joint_"));
    if (meta->default_joint_pos) meta_put_own(o, "default_joint_pos", json_f64(meta->default_joint_pos, meta->n_joints));
    if (meta->kp) meta_put_own(o, "kp", json_f64(meta->kp, meta->n_joints));
    if (meta->kd) meta_put_own(o, "kd", json_f64(meta->kd, meta->n_joints));
  }
  Buf net = {0};
  txt(&net, "%d", O);
  for (int i = 0; i < c->n_hidden; i++) txt(&net, "-%d", c->hidden[i]);
  txt(&net, "-%d %s%s out=%s", A, act_name(c->act), c->layer_norm ? " layernorm" : "", act_name(c->out_act));
  if (out_scale != 1.0f) txt(&net, " out_scale=%.9g", (double)out_scale);
  buf_put(&net, "", 1);
  if (!net.oom) meta_put(o, "network", (const char*)net.p, 1);
  else o->b->oom = 1;
  buf_free(&net);
  meta_put(o, "input_name", "obs", 1);
  meta_put(o, "output_name", "actions", 1);
  for (int i = 0; i < meta->n_extra; i++)
    if (meta->extra_keys && meta->extra_keys[i]) meta_put(o, meta->extra_keys[i], meta->extra_values ? meta->extra_values[i] : "", 0);
}

int nn_export_onnx(const NnExportPolicy* p, const NnExportMeta* meta, const NnOnnxOptions* opt, uint8_t** out,
                   size_t* len, char* err, size_t errlen) {
  if (!out || !len) return nn_errorf(err, errlen, NN_EINVAL, "export: no output buffer");
  *out = NULL, *len = 0;
  int rc = check_policy(p, err, errlen);
  if (rc) return rc;
  static const NnExportMeta kNoMeta;
  if (!meta) meta = &kNoMeta;
  int opset = opt && opt->opset ? opt->opset : 17;
  if (opset != 13 && opset != 17) return nn_errorf(err, errlen, NN_EINVAL, "export: ONNX opset %d (supported: 13, 17)", opset);
  const NnConfig* c = &p->cfg;
  int O = c->in_dim, A = c->out_dim, L = c->n_hidden + 1;
  Graph g = {0};
  g.nodes = (Node*)calloc(G_MAX_NODES, sizeof(Node));
  if (!g.nodes) return nn_errorf(err, errlen, NN_ENOMEM, "export: out of memory");
  float* tmp = (float*)malloc(sizeof(float) * (size_t)(2 * O + 2 * A));
  if (!tmp) {
    free(g.nodes);
    return nn_errorf(err, errlen, NN_ENOMEM, "export: out of memory");
  }
  char cur[G_NAME] = "obs", nxt[G_NAME];
  // observation normalization: (obs - mean) * inv_std, then Clip
  if (p->has_norm) {
    for (int j = 0; j < O; j++) norm_coeffs(p, j, &tmp[j], &tmp[O + j]);
    init1(&g, "obs_mean", tmp, O);
    init1(&g, "obs_inv_std", tmp + O, O);
    add_node(&g, "Sub", "obs_centered", "obs", "obs_mean", NULL);
    add_node(&g, "Mul", "obs_scaled", "obs_centered", "obs_inv_std", NULL);
    snprintf(cur, sizeof(cur), "obs_scaled");
    if ((float)p->norm_clip > 0) {  // as nn_norm_apply: the float32 clip decides
      float cl = (float)p->norm_clip;
      init_scalar(&g, "obs_clip_min", -cl);
      init_scalar(&g, "obs_clip_max", cl);
      add_node(&g, "Clip", "obs_normalized", cur, "obs_clip_min", "obs_clip_max");
      snprintf(cur, sizeof(cur), "obs_normalized");
    }
  }
  float ln_eps = (float)(c->ln_eps > 0 ? c->ln_eps : 1e-5);
  float out_scale = (float)(c->out_scale != 0 ? c->out_scale : 1.0);
  for (int l = 0; l < L; l++) {
    NnLayerOffsets o;
    nn_layer_offsets(c, l, &o);
    char w[G_NAME], b[G_NAME];
    snprintf(w, sizeof(w), "l%d.weight", l), snprintf(b, sizeof(b), "l%d.bias", l);
    int64_t wd[2] = {o.out, o.in};
    onnx_tensor(&g.inits, 5, w, p->params + o.w, 2, wd);
    init1(&g, b, p->params + o.b, o.out);
    snprintf(nxt, sizeof(nxt), "l%d.linear", l);
    Node* nd = add_node(&g, "Gemm", nxt, cur, w, b);
    if (nd) attr_int(&nd->attrs, "transB", 1);
    snprintf(cur, sizeof(cur), "%s", nxt);
    NnAct a = l < c->n_hidden ? c->act : c->out_act;
    if (a != NN_ACT_NONE) {
      snprintf(nxt, sizeof(nxt), "l%d.%s", l, act_name(a));
      emit_act(&g, a, cur, nxt);
      snprintf(cur, sizeof(cur), "%s", nxt);
    }
    if (l < c->n_hidden && c->layer_norm) {
      char gm[G_NAME];
      snprintf(gm, sizeof(gm), "l%d.ln.weight", l);
      init1(&g, gm, p->params + o.gamma, o.out);
      snprintf(gm, sizeof(gm), "l%d.ln.bias", l);
      init1(&g, gm, p->params + o.beta, o.out);
      snprintf(nxt, sizeof(nxt), "l%d.layernorm", l);
      emit_layernorm(&g, opset, l, ln_eps, cur, nxt);
      snprintf(cur, sizeof(cur), "%s", nxt);
    }
  }
  if (out_scale != 1.0f) {
    init_scalar(&g, "out_scale", out_scale);
    add_node(&g, "Mul", "policy_scaled", cur, "out_scale", NULL);
    snprintf(cur, sizeof(cur), "policy_scaled");
  }
  if (!act_is_identity(p)) {
    for (int j = 0; j < A; j++) {
      tmp[j] = p->act_scale ? p->act_scale[j] : 1.0f;
      tmp[A + j] = p->act_offset ? p->act_offset[j] : 0.0f;
    }
    init1(&g, "action_scale", tmp, A);
    init1(&g, "action_offset", tmp + A, A);
    add_node(&g, "Mul", "actions_scaled", cur, "action_scale", NULL);
    add_node(&g, "Add", "actions", "actions_scaled", "action_offset", NULL);
  } else if (g.n > 0 && !strcmp(g.nodes[g.n - 1].out, cur)) {
    snprintf(g.nodes[g.n - 1].out, G_NAME, "actions");  // the last node produces the output directly
  } else {
    add_node(&g, "Identity", "actions", cur, NULL, NULL);
  }
  // GraphProto: node = 1, name = 2, initializer = 5, doc_string = 10, input = 11, output = 12
  Buf graph = {0};
  for (int i = 0; i < g.n; i++) encode_node(&graph, &g.nodes[i]);
  pb_str(&graph, 2, "adjoint_policy");
  if (g.inits.oom) graph.oom = 1;
  buf_put(&graph, g.inits.p, g.inits.n);
  buf_free(&g.inits);
  pb_str(&graph, 10, "observation normalization -> MLP -> action scale/offset (adjoint export)");
  onnx_value_info(&graph, 11, "obs", O);
  onnx_value_info(&graph, 12, "actions", A);
  int overflow = g.overflow;
  free(g.nodes);

  // ModelProto: ir_version = 1, producer_name = 2, producer_version = 3, doc_string = 6, graph = 7,
  // opset_import = 8 (OperatorSetIdProto: domain = 1, version = 2), metadata_props = 14
  Buf model = {0}, ops = {0};
  pb_int(&model, 1, opset >= 17 ? 8 : 7);
  pb_str(&model, 2, "adjoint");
  pb_str(&model, 3, "1");
  pb_str(&model, 6, "Policy exported by `adjoint export`: actions = MLP(normalize(obs)), then the graph's per-action "
         "scale and offset where the export gives one; metadata_props say how the task uses the actions");
  pb_msg(&model, 7, &graph);
  pb_str(&ops, 1, "");
  pb_int(&ops, 2, opset);
  pb_msg(&model, 8, &ops);
  MetaOut mo = {&model, 0, 0, meta};
  meta_pairs(&mo, p, meta);
  free(tmp);
  if (model.oom || overflow) {
    buf_free(&model);
    return nn_errorf(err, errlen, overflow ? NN_EINVAL : NN_ENOMEM, overflow ? "export: graph too large" : "export: out of memory");
  }
  *out = model.p, *len = model.n;
  return NN_OK;
}

int nn_export_meta_json(const NnExportPolicy* p, const NnExportMeta* meta, char** out, size_t* len, char* err,
                        size_t errlen) {
  if (!out || !len) return nn_errorf(err, errlen, NN_EINVAL, "export: no output buffer");
  *out = NULL, *len = 0;
  int rc = check_policy(p, err, errlen);
  if (rc) return rc;
  static const NnExportMeta kNoMeta;
  Buf b = {0};
  MetaOut mo = {&b, 1, 0, meta ? meta : &kNoMeta};
  meta_pairs(&mo, p, mo.meta);
  buf_put(&b, "\n}\n", 3);
  if (b.oom) {
    buf_free(&b);
    return nn_errorf(err, errlen, NN_ENOMEM, "export: out of memory");
  }
  *out = (char*)b.p, *len = b.n;
  return NN_OK;
}

// ---- blob (nn/nn_blob_format.md) ----
static void put_u32(uint8_t* p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24); }
static void put_f32(uint8_t* p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put_u32(p, u);
}

int nn_export_blob(const NnExportPolicy* p, uint8_t** out, size_t* len, char* err, size_t errlen) {
  if (!out || !len) return nn_errorf(err, errlen, NN_EINVAL, "export: no output buffer");
  *out = NULL, *len = 0;
  int rc = check_policy(p, err, errlen);
  if (rc) return rc;
  const NnConfig* c = &p->cfg;
  int O = c->in_dim, A = c->out_dim, L = c->n_hidden + 1;
  uint64_t nf = (p->has_norm ? 3 * (uint64_t)O : 0) + 2 * (uint64_t)A;
  for (int l = 0; l < L; l++) {
    NnLayerOffsets o;
    nn_layer_offsets(c, l, &o);
    nf += (uint64_t)o.in * o.out + (uint64_t)o.out * (o.gamma >= 0 ? 3 : 1);
  }
  uint64_t total = NN_BLOB_HEADER_BYTES + (uint64_t)L * NN_BLOB_LAYER_BYTES + 4 * nf;
  if (total > 0xFFFFFFFFu) return nn_errorf(err, errlen, NN_EINVAL, "export: network too large for the blob format");
  uint8_t* b = (uint8_t*)calloc(1, (size_t)total);
  if (!b) return nn_errorf(err, errlen, NN_ENOMEM, "export: out of memory");
  memcpy(b, NN_BLOB_MAGIC, 8);
  put_u32(b + 8, NN_BLOB_VERSION);
  put_u32(b + 12, NN_BLOB_HEADER_BYTES);
  put_u32(b + 16, (uint32_t)total);
  put_u32(b + 24, (uint32_t)O);
  put_u32(b + 28, (uint32_t)A);
  put_u32(b + 32, (uint32_t)L);
  int clip = p->has_norm && (float)p->norm_clip > 0;
  put_u32(b + 36, (uint32_t)((p->has_norm ? NN_BLOB_NORM : 0) | (clip ? NN_BLOB_NORM_CLIP : 0)));
  put_u32(b + 40, (uint32_t)nn_max_width(c));
  put_f32(b + 44, clip ? (float)p->norm_clip : 0.0f);
  double eps = p->has_norm ? p->norm_eps : 0.0;
  uint64_t eb;
  memcpy(&eb, &eps, 8);
  put_u32(b + 48, (uint32_t)eb), put_u32(b + 52, (uint32_t)(eb >> 32));
  put_u32(b + 56, (uint32_t)nf);
  float ln_eps = (float)(c->ln_eps > 0 ? c->ln_eps : 1e-5);
  float out_scale = (float)(c->out_scale != 0 ? c->out_scale : 1.0);
  uint8_t* f = b + NN_BLOB_HEADER_BYTES + (size_t)L * NN_BLOB_LAYER_BYTES;  // data cursor
#define PUTF(v) (put_f32(f, (v)), f += 4)
  if (p->has_norm) {
    float mu, is;
    for (int j = 0; j < O; j++) norm_coeffs(p, j, &mu, &is), PUTF(mu);
    for (int j = 0; j < O; j++) PUTF((float)p->norm_var[j]);
    for (int j = 0; j < O; j++) norm_coeffs(p, j, &mu, &is), PUTF(is);
  }
  for (int j = 0; j < A; j++) PUTF(p->act_scale ? p->act_scale[j] : 1.0f);
  for (int j = 0; j < A; j++) PUTF(p->act_offset ? p->act_offset[j] : 0.0f);
  for (int l = 0; l < L; l++) {
    NnLayerOffsets o;
    nn_layer_offsets(c, l, &o);
    int last = l == L - 1, ln = o.gamma >= 0;
    uint8_t* t = b + NN_BLOB_HEADER_BYTES + (size_t)l * NN_BLOB_LAYER_BYTES;
    put_u32(t, (uint32_t)o.in), put_u32(t + 4, (uint32_t)o.out);
    put_u32(t + 8, (uint32_t)(last ? c->out_act : c->act)), put_u32(t + 12, (uint32_t)ln);
    put_f32(t + 16, ln ? ln_eps : 0.0f), put_f32(t + 20, last ? out_scale : 1.0f);
    for (int64_t i = 0; i < (int64_t)o.in * o.out; i++) PUTF(p->params[o.w + i]);
    for (int i = 0; i < o.out; i++) PUTF(p->params[o.b + i]);
    for (int i = 0; ln && i < o.out; i++) PUTF(p->params[o.gamma + i]);
    for (int i = 0; ln && i < o.out; i++) PUTF(p->params[o.beta + i]);
  }
#undef PUTF
  put_u32(b + 20, nn_blob_crc32(0, b, (size_t)total));  // the crc field is still zero here
  *out = b, *len = (size_t)total;
  return NN_OK;
}

// ---- files ----
int nn_export_write_atomic(const char* path, const void* data, size_t len, char* err, size_t errlen) {
  if (!path || !*path) return nn_errorf(err, errlen, NN_EINVAL, "export: empty output path");
  size_t pl = strlen(path);
  char* tmp = (char*)malloc(pl + 8);
  if (!tmp) return nn_errorf(err, errlen, NN_ENOMEM, "export: out of memory");
  snprintf(tmp, pl + 8, "%s.tmp", path);
  unlink(tmp);  // a leftover of a killed writer, or a link planted there: never written through
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return nn_errorf(err, errlen, NN_EIO, "%s: cannot write: %s", path, strerror(e));
  }
  const uint8_t* q = (const uint8_t*)data;
  size_t done = 0;
  int e = 0;
  while (done < len) {
    ssize_t w = write(fd, q + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      e = errno ? errno : EIO;
      break;
    }
    done += (size_t)w;
  }
  if (!e && fsync(fd)) e = errno;
  if (close(fd) && !e) e = errno;
  if (!e && rename(tmp, path)) e = errno;
  if (e) {
    unlink(tmp);
    free(tmp);
    return nn_errorf(err, errlen, NN_EIO, "%s: write failed: %s", path, strerror(e));
  }
  free(tmp);
  // make the rename durable: fsync the directory (best effort)
  char* dir = strdup(path);
  if (dir) {
    char* slash = strrchr(dir, '/');
    const char* d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int dfd = open(d, O_RDONLY);
    if (dfd >= 0) fsync(dfd), close(dfd);
    free(dir);
  }
  return NN_OK;
}

int nn_export_onnx_file(const char* path, const NnExportPolicy* p, const NnExportMeta* meta,
                        const NnOnnxOptions* opt, char* err, size_t errlen) {
  uint8_t* buf;
  size_t len;
  int rc = nn_export_onnx(p, meta, opt, &buf, &len, err, errlen);
  if (rc) return rc;
  rc = nn_export_write_atomic(path, buf, len, err, errlen);
  free(buf);
  return rc;
}

int nn_export_blob_file(const char* path, const NnExportPolicy* p, char* err, size_t errlen) {
  uint8_t* buf;
  size_t len;
  int rc = nn_export_blob(p, &buf, &len, err, errlen);
  if (rc) return rc;
  rc = nn_export_write_atomic(path, buf, len, err, errlen);
  free(buf);
  return rc;
}

int nn_export_meta_json_file(const char* path, const NnExportPolicy* p, const NnExportMeta* meta, char* err,
                             size_t errlen) {
  char* buf;
  size_t len;
  int rc = nn_export_meta_json(p, meta, &buf, &len, err, errlen);
  if (rc) return rc;
  rc = nn_export_write_atomic(path, buf, len, err, errlen);
  free(buf);
  return rc;
}

// ---- host reference ----
int nn_export_reference(const NnExportPolicy* p, NnMlp* mlp, const float* obs, int n, float* act, float* scratch) {
  if (!p || !mlp || !obs || !act || !scratch || n <= 0) return NN_EINVAL;
  if (nn_mlp_param_count(mlp) != nn_param_count(&p->cfg)) return NN_EINVAL;
  const NnConfig* c = &p->cfg;
  int O = c->in_dim, A = c->out_dim;
  float cl = (float)p->norm_clip;
  for (int j = 0; j < O; j++) {
    float mu = 0, is = 1;
    if (p->has_norm) norm_coeffs(p, j, &mu, &is);
    for (int r = 0; r < n; r++) {
      float v = obs[(int64_t)r * O + j];
      if (p->has_norm) {
        v = (v - mu) * is;
        if (cl > 0) v = v > cl ? cl : (v < -cl ? -cl : v);
      }
      scratch[(int64_t)r * O + j] = v;
    }
  }
  int rc = nn_mlp_infer(mlp, p->params, scratch, n, act);
  if (rc) return rc;
  for (int r = 0; r < n; r++)
    for (int j = 0; j < A; j++) {
      float* y = &act[(int64_t)r * A + j];
      *y = *y * (p->act_scale ? p->act_scale[j] : 1.0f) + (p->act_offset ? p->act_offset[j] : 0.0f);
    }
  return NN_OK;
}
