// nn_export_ref OUTDIR: writes exported ONNX models with reference inputs and outputs for nn_export_onnx.py.
// For each case: OUTDIR/<case>_op17.onnx and <case>_op13.onnx (same policy), <case>_obs.bin (float32 (n, obs)),
// <case>_act.bin (float32 (n, act): the nn library's forward, nn_export_reference), <case>_blob.bin, and one
// line in OUTDIR/manifest.txt: "case n obs_dim act_dim layer_norm". Metadata carries joint names, default joint
// positions, PD gains and control dt so the Python side can check metadata_props.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"
#include "nn/nn_export.h"

#define NOBS 1000

typedef struct {
  const char* name;
  int in, out, n_hidden, hidden[4];
  NnAct act, out_act;
  int layer_norm;
  double out_scale;
  int norm, act_map;
} Case;

static const Case kCases[] = {
    {"elu_ln", 5, 1, 2, {64, 64}, NN_ACT_ELU, NN_ACT_NONE, 1, 0, 2, 0},
    {"silu_tanh_map", 17, 6, 3, {32, 48, 16}, NN_ACT_SILU, NN_ACT_TANH, 0, 0.7, 1, 1},
    {"relu_ln_map", 12, 4, 1, {40}, NN_ACT_RELU, NN_ACT_NONE, 1, 0, 2, 1},
    {"tanh_plain", 9, 3, 2, {7, 130}, NN_ACT_TANH, NN_ACT_NONE, 0, 0, 0, 0},
    {"linear", 3, 2, 0, {0}, NN_ACT_ELU, NN_ACT_NONE, 0, 0, 0, 0},
    {"silu_ln_wide", 48, 12, 2, {256, 128}, NN_ACT_SILU, NN_ACT_TANH, 1, 1.5, 2, 1},
};

static double gauss(uint64_t* s) {
  double u1 = nn_rng_uniform(s), u2 = nn_rng_uniform(s);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static int write_file(const char* dir, const char* name, const char* suffix, const void* d, size_t n) {
  char path[1024], err[256];
  snprintf(path, sizeof(path), "%s/%s%s", dir, name, suffix);
  if (nn_export_write_atomic(path, d, n, err, sizeof(err))) {
    fprintf(stderr, "nn_export_ref: %s\n", err);
    return 1;
  }
  return 0;
}

static int run_case(const char* dir, const Case* k, uint64_t seed, FILE* manifest) {
  NnConfig c;
  memset(&c, 0, sizeof(c));
  c.in_dim = k->in, c.out_dim = k->out, c.n_hidden = k->n_hidden;
  for (int i = 0; i < k->n_hidden; i++) c.hidden[i] = k->hidden[i];
  c.act = k->act, c.out_act = k->out_act, c.layer_norm = k->layer_norm, c.out_scale = k->out_scale;
  NnMlp* mlp = NULL;
  NnNorm* norm = NULL;
  if (nn_mlp_create(&mlp, &c, NOBS)) return 1;
  nn_mlp_init(mlp, seed);
  int64_t np = nn_mlp_param_count(mlp);
  float* p = nn_mlp_params(mlp);
  uint64_t s = seed * 7919;
  for (int64_t i = 0; i < np; i++) p[i] += (float)(0.05 * gauss(&s));  // LayerNorm gamma/beta off 1/0 too
  int O = k->in, A = k->out;
  float* obs = (float*)malloc(sizeof(float) * NOBS * O);
  float* scratch = (float*)malloc(sizeof(float) * NOBS * O);
  float* act = (float*)malloc(sizeof(float) * NOBS * A);
  float* scale = (float*)malloc(sizeof(float) * A);
  float* offset = (float*)malloc(sizeof(float) * A);
  double* var = (double*)malloc(sizeof(double) * O);
  double* mu = (double*)malloc(sizeof(double) * O);
  double* sd = (double*)malloc(sizeof(double) * O);
  for (int j = 0; j < A; j++) scale[j] = (float)(0.5 + nn_rng_uniform(&s)), offset[j] = (float)gauss(&s);
  for (int j = 0; j < O; j++) mu[j] = 3 * gauss(&s), sd[j] = 0.1 + 4 * nn_rng_uniform(&s);
  if (k->norm) {
    nn_norm_create(&norm, O, 1e-8, k->norm == 2 ? 5.0 : 0.0);
    for (int r = 0; r < NOBS; r++)
      for (int j = 0; j < O; j++) obs[r * O + j] = (float)(mu[j] + sd[j] * gauss(&s));
    nn_norm_update(norm, obs, NOBS);
  }
  for (int r = 0; r < NOBS; r++)
    for (int j = 0; j < O; j++) obs[r * O + j] = (float)(mu[j] + 3 * sd[j] * gauss(&s));
  NnExportPolicy pol;
  nn_export_policy_init(&pol, mlp, NULL, norm, 1e-8, k->norm == 2 ? 5.0 : 0.0, var);
  if (k->act_map) pol.act_scale = scale, pol.act_offset = offset;
  int rc = nn_export_reference(&pol, mlp, obs, NOBS, act, scratch);

  // metadata: A "joints" with names, defaults, gains; observation names for the first case only (others default)
  char** jn = (char**)malloc(sizeof(char*) * A);
  double* q0 = (double*)malloc(sizeof(double) * A * 3);
  for (int j = 0; j < A; j++) {
    jn[j] = (char*)malloc(32);
    snprintf(jn[j], 32, "joint_%c%d", 'a' + j % 26, j);
    q0[j] = 0.1 * j, q0[A + j] = 20 + j, q0[2 * A + j] = 0.5 + 0.1 * j;
  }
  static const char* const kObs5[] = {"cart_position", "pole_cos", "pole_sin", "cart_velocity", "pole_\"omega\""};
  const char* ek[] = {"test_case", "ema"};  // "ema": an extra pair replacing a built-in one
  const char* ev[] = {k->name, "replaced"};
  NnExportMeta meta;
  memset(&meta, 0, sizeof(meta));
  meta.task = "test", meta.algo = "none", meta.source = "nn_export_ref", meta.ema = 0;
  meta.obs_names = O == 5 ? kObs5 : NULL;
  meta.act_names = (const char* const*)jn;
  meta.control_dt = 0.02;
  meta.n_joints = A, meta.joint_names = (const char* const*)jn, meta.default_joint_pos = q0;
  meta.kp = q0 + A, meta.kd = q0 + 2 * A;
  meta.n_extra = 2, meta.extra_keys = ek, meta.extra_values = ev;
  char err[256] = "", path[1024];
  for (int opset = 13; opset <= 17 && !rc; opset += 4) {
    NnOnnxOptions opt = {opset};
    snprintf(path, sizeof(path), "%s/%s_op%d.onnx", dir, k->name, opset);
    if ((rc = nn_export_onnx_file(path, &pol, &meta, &opt, err, sizeof(err)))) fprintf(stderr, "nn_export_ref: %s\n", err);
  }
  if (!rc) {
    snprintf(path, sizeof(path), "%s/%s_blob.bin", dir, k->name);
    if ((rc = nn_export_blob_file(path, &pol, err, sizeof(err)))) fprintf(stderr, "nn_export_ref: %s\n", err);
  }
  if (!rc) {  // the blob's metadata sidecar: the same pairs as JSON
    snprintf(path, sizeof(path), "%s/%s_blob.bin.json", dir, k->name);
    if ((rc = nn_export_meta_json_file(path, &pol, &meta, err, sizeof(err)))) fprintf(stderr, "nn_export_ref: %s\n", err);
  }
  if (!rc) rc = write_file(dir, k->name, "_obs.bin", obs, sizeof(float) * NOBS * O);
  if (!rc) rc = write_file(dir, k->name, "_act.bin", act, sizeof(float) * NOBS * A);
  if (!rc) fprintf(manifest, "%s %d %d %d %d\n", k->name, NOBS, O, A, k->layer_norm);
  for (int j = 0; j < A; j++) free(jn[j]);
  free(jn), free(q0);
  nn_mlp_destroy(mlp);
  nn_norm_destroy(norm);
  free(obs), free(scratch), free(act), free(scale), free(offset), free(var), free(mu), free(sd);
  return rc ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: nn_export_ref OUTDIR\n");
    return 2;
  }
  char path[1024];
  snprintf(path, sizeof(path), "%s/manifest.txt", argv[1]);
  FILE* m = fopen(path, "w");
  if (!m) {
    fprintf(stderr, "nn_export_ref: cannot write %s\n", path);
    return 1;
  }
  int bad = 0;
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); i++) bad += run_case(argv[1], &kCases[i], 77 + i, m);
  fclose(m);
  return bad ? 1 : 0;
}
