// nn_export_blob: the blob inference routine (nn/nn_blob_infer.c) reproduces the nn library's CPU forward
// (nn_norm_apply -> nn_mlp_infer with the EMA parameters -> action scale/offset) within 1e-6 max abs on 1000
// random observations, for several shapes and activations with and without LayerNorm, normalizer clip and
// action map; nn_export_reference agrees with the library; corrupt / truncated / foreign blobs are refused.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"
#include "nn/nn_blob_infer.h"
#include "nn/nn_export.h"
#include "tests/test.h"

#define NOBS 1000

typedef struct {
  const char* label;
  int in, out, n_hidden, hidden[4];
  NnAct act, out_act;
  int layer_norm;
  double out_scale, ln_eps;
  int norm;      // 0 none, 1 normalizer, 2 normalizer with clip
  int act_map;   // 1: non-trivial action scale/offset
  int ema;       // 1: export an EMA vector different from the live parameters
} Case;

static const Case kCases[] = {
    {"elu_ln_64x64", 5, 1, 2, {64, 64}, NN_ACT_ELU, NN_ACT_NONE, 1, 0, 0, 2, 0, 1},
    {"silu_3layer_tanh_out", 17, 6, 3, {32, 48, 16}, NN_ACT_SILU, NN_ACT_TANH, 0, 0.7, 0, 1, 1, 1},
    {"relu_ln_eps", 12, 4, 1, {40}, NN_ACT_RELU, NN_ACT_NONE, 1, 0, 1e-3, 2, 1, 0},
    {"tanh_no_norm", 9, 3, 2, {7, 130}, NN_ACT_TANH, NN_ACT_NONE, 0, 0, 0, 0, 0, 1},
    {"linear_only", 3, 2, 0, {0}, NN_ACT_ELU, NN_ACT_NONE, 0, 0, 0, 2, 1, 0},
    {"silu_ln_wide", 48, 12, 2, {256, 128}, NN_ACT_SILU, NN_ACT_TANH, 1, 1.5, 0, 2, 1, 1},
};

static double gauss(uint64_t* s) {
  double u1 = nn_rng_uniform(s), u2 = nn_rng_uniform(s);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static void run_case(const Case* k, uint64_t seed) {
  NnConfig c;
  memset(&c, 0, sizeof(c));
  c.in_dim = k->in, c.out_dim = k->out, c.n_hidden = k->n_hidden;
  for (int i = 0; i < k->n_hidden; i++) c.hidden[i] = k->hidden[i];
  c.act = k->act, c.out_act = k->out_act, c.layer_norm = k->layer_norm, c.out_scale = k->out_scale, c.ln_eps = k->ln_eps;
  NnMlp* mlp = NULL;
  NnNorm* norm = NULL;
  TEST_CHECK(nn_mlp_create(&mlp, &c, NOBS) == 0, "%s: create", k->label);
  if (!mlp) return;
  nn_mlp_init(mlp, seed);
  int64_t np = nn_mlp_param_count(mlp);
  float* p = nn_mlp_params(mlp);
  uint64_t s = seed ^ 0xABCDEF;
  for (int64_t i = 0; i < np; i++) p[i] += (float)(0.2 * gauss(&s));  // LayerNorm gamma/beta off 1/0 too
  float* ema = (float*)malloc(sizeof(float) * (size_t)np);
  for (int64_t i = 0; i < np; i++) ema[i] = p[i] + (float)(0.05 * gauss(&s));
  int O = k->in, A = k->out;
  float* obs = (float*)malloc(sizeof(float) * NOBS * O);
  float* nobs = (float*)malloc(sizeof(float) * NOBS * O);
  float* ref = (float*)malloc(sizeof(float) * NOBS * A);
  float* got = (float*)malloc(sizeof(float) * NOBS * A);
  float* alt = (float*)malloc(sizeof(float) * NOBS * A);
  float* scale = (float*)malloc(sizeof(float) * A);
  float* offset = (float*)malloc(sizeof(float) * A);
  double* var = (double*)malloc(sizeof(double) * O);
  for (int j = 0; j < A; j++) scale[j] = (float)(0.5 + nn_rng_uniform(&s)), offset[j] = (float)gauss(&s);
  // per-dimension offsets and scales so the normalizer matters; some observations land past the clip
  double* mu = (double*)malloc(sizeof(double) * O);
  double* sd = (double*)malloc(sizeof(double) * O);
  for (int j = 0; j < O; j++) mu[j] = 3 * gauss(&s), sd[j] = 0.1 + 4 * nn_rng_uniform(&s);
  if (k->norm) {
    nn_norm_create(&norm, O, 1e-8, k->norm == 2 ? 5.0 : 0.0);
    float* batch = (float*)malloc(sizeof(float) * 256 * O);
    for (int it = 0; it < 3; it++) {
      for (int r = 0; r < 256; r++)
        for (int j = 0; j < O; j++) batch[r * O + j] = (float)(mu[j] + sd[j] * gauss(&s));
      nn_norm_update(norm, batch, 256);
    }
    free(batch);
  }
  for (int r = 0; r < NOBS; r++)
    for (int j = 0; j < O; j++) obs[r * O + j] = (float)(mu[j] + 3 * sd[j] * gauss(&s));

  // the library: normalizer, network with the exported parameters, action map
  const float* P = k->ema ? ema : p;
  if (norm) nn_norm_apply(norm, obs, NOBS, nobs);
  else memcpy(nobs, obs, sizeof(float) * NOBS * O);
  nn_mlp_infer(mlp, P, nobs, NOBS, ref);
  for (int r = 0; r < NOBS; r++)
    for (int j = 0; j < A; j++)
      if (k->act_map) ref[r * A + j] = ref[r * A + j] * scale[j] + offset[j];

  NnExportPolicy pol;
  TEST_CHECK(nn_export_policy_init(&pol, mlp, k->ema ? ema : NULL, norm, 1e-8, k->norm == 2 ? 5.0 : 0.0, var) == 0,
             "%s: policy init", k->label);
  if (k->act_map) pol.act_scale = scale, pol.act_offset = offset;

  // host reference of the export module == library
  TEST_CHECK(nn_export_reference(&pol, mlp, obs, NOBS, alt, nobs) == 0, "%s: reference", k->label);
  double dref = 0;
  for (int i = 0; i < NOBS * A; i++) dref = fmax(dref, fabs((double)alt[i] - ref[i]));
  TEST_CHECK(dref == 0, "%s: nn_export_reference differs from the library by %g", k->label, dref);

  uint8_t* blob = NULL;
  size_t len = 0;
  char err[256] = "";
  TEST_CHECK(nn_export_blob(&pol, &blob, &len, err, sizeof(err)) == 0, "%s: blob: %s", k->label, err);
  if (blob) {
    NnBlob b;
    int rc = nn_blob_load(&b, blob, len);
    TEST_CHECK(rc == 0, "%s: load: %s", k->label, nn_blob_strerror(rc));
    if (!rc) {
      TEST_CHECK(b.obs_dim == O && b.act_dim == A && b.n_layers == k->n_hidden + 1, "%s: header dims", k->label);
      float* work = (float*)malloc(sizeof(float) * nn_blob_work_floats(&b));
      double maxabs = 0;
      for (int r = 0; r < NOBS; r++) {
        nn_blob_run(&b, obs + r * O, got + r * A, work);
        for (int j = 0; j < A; j++) maxabs = fmax(maxabs, fabs((double)got[r * A + j] - ref[r * A + j]));
      }
      double refmax = 0;
      for (int i = 0; i < NOBS * A; i++) refmax = fmax(refmax, fabs((double)ref[i]));
      printf("%-22s blob vs library: max abs %.3g over %d x %d (|ref| max %.3g, %zu bytes)\n", k->label, maxabs,
             NOBS, A, refmax, len);
      TEST_CHECK(maxabs <= 1e-6 && maxabs == maxabs, "%s: blob max abs %g > 1e-6", k->label, maxabs);
      free(work);
    }
    // corruption: every single flipped byte is caught (CRC), truncation, foreign data, misalignment
    uint8_t* copy = (uint8_t*)malloc(len + 4);
    int missed = 0;
    size_t stride = len / 97 + 1;
    for (size_t i = 0; i < len; i += stride) {
      memcpy(copy, blob, len);
      copy[i] ^= 0x20;
      if (nn_blob_load(&b, copy, len) == 0) missed++;
    }
    TEST_CHECK(missed == 0, "%s: %d flipped bytes not detected", k->label, missed);
    memcpy(copy, blob, len);
    TEST_CHECK(nn_blob_load(&b, copy, len - 4) == NN_BLOB_ESIZE, "%s: truncated blob accepted", k->label);
    TEST_CHECK(nn_blob_load(&b, copy, 40) == NN_BLOB_ESIZE, "%s: truncated header accepted", k->label);
    memcpy(copy, "\x89HDF\r\n\x1a\n", 8);
    TEST_CHECK(nn_blob_load(&b, copy, len) == NN_BLOB_EMAGIC, "%s: foreign magic accepted", k->label);
    memcpy(copy + 4, blob, len);
    TEST_CHECK(nn_blob_load(&b, copy + 2, len) == NN_BLOB_EARG, "%s: unaligned buffer accepted", k->label);
    free(copy);
    // atomic file write round trip
    char path[64];
    snprintf(path, sizeof(path), "/tmp/nn_export_blob_%s.bin", k->label);
    TEST_CHECK(nn_export_blob_file(path, &pol, err, sizeof(err)) == 0, "%s: file: %s", k->label, err);
    FILE* f = fopen(path, "rb");
    uint8_t* back = (uint8_t*)malloc(len + 1);
    size_t n = f ? fread(back, 1, len + 1, f) : 0;
    if (f) fclose(f);
    TEST_CHECK(n == len && !memcmp(back, blob, len), "%s: file differs from the buffer", k->label);
    remove(path);
    free(back);
    free(blob);
  }
  nn_mlp_destroy(mlp);
  nn_norm_destroy(norm);
  free(ema), free(obs), free(nobs), free(ref), free(got), free(alt), free(scale), free(offset), free(var), free(mu), free(sd);
}

int main(void) {
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); i++) run_case(&kCases[i], 1000 + i);
  // invalid input is refused with a message
  NnExportPolicy bad;
  memset(&bad, 0, sizeof(bad));
  uint8_t* out;
  size_t len;
  char err[256] = "";
  TEST_CHECK(nn_export_blob(&bad, &out, &len, err, sizeof(err)) == NN_EINVAL && err[0], "empty policy accepted");
  NnMlp* m = NULL;
  NnConfig c = {0};
  c.in_dim = 2, c.out_dim = 1, c.n_hidden = 1, c.hidden[0] = 4, c.act = NN_ACT_ELU;
  nn_mlp_create(&m, &c, 1);
  nn_mlp_init(m, 1);
  nn_mlp_params(m)[3] = NAN;
  nn_export_policy_init(&bad, m, NULL, NULL, 0, 0, NULL);
  TEST_CHECK(nn_export_blob(&bad, &out, &len, err, sizeof(err)) == NN_EFORMAT && strstr(err, "not finite"),
             "NaN parameter accepted (%s)", err);
  nn_mlp_destroy(m);
  return test_report("nn_export_blob");
}
