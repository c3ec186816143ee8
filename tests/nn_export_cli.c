// nn_export_cli ADJOINT: `adjoint export` end to end on HDF5 checkpoints written with algo/ckpt.h the way the
// trainer writes them (config attribute, ppo/actor, ppo/obs_norm/*, optional ppo/ema):
//  - the exported blob reproduces the nn library (nn_norm_apply -> nn_mlp_infer) on 1000 observations (<= 1e-6);
//  - the EMA shadow is exported when present, the live parameters with --no-ema;
//  - corrupt, truncated, foreign, empty, missing or mismatched checkpoints: a message naming the problem and
//    exit 2, and an existing output file is left untouched;
//  - flags: --help 0; no output / unknown flag / bad opset 2; an unwritable output 1;
//  - a real run (`adjoint train`, PPO on cartpole with LayerNorm, 2 iterations): the exported blob equals the
//    trainer's own deterministic policy (algo act_eval after reading the checkpoint) on 1024 observations.
#define _GNU_SOURCE  // open_memstream, mkdtemp
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/cfg.h"
#include "algo/ckpt.h"
#include "nn/nn.h"
#include "nn/nn_blob_infer.h"
#include "tests/test.h"

#define NOBS 1000
#define O 5  // cartpole
#define A 1

static const char* g_exe;
static char g_dir[256];
static char g_out[65536];

// runs `adjoint export ARGS`, captures stdout+stderr in g_out; returns the exit code
static int run_export(const char* args) {
  char cmd[4096];
  snprintf(cmd, sizeof(cmd), "%s export %s 2>&1", g_exe, args);
  FILE* p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(g_out, 1, sizeof(g_out) - 1, p);
  g_out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double gauss(uint64_t* s) {
  double u1 = nn_rng_uniform(s), u2 = nn_rng_uniform(s);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static char* config_yaml(const char* activation, int h0, int h1) {
  Cfg c;
  char err[512];
  cfg_defaults(&c, err, sizeof(err));
  char a[64];
  snprintf(a, sizeof(a), "policy.activation=%s", activation);
  cfg_override(&c, a, err, sizeof(err));
  cfg_override(&c, "policy.layer_norm=true", err, sizeof(err));
  cfg_override(&c, "policy.obs_clip=3.0", err, sizeof(err));
  c.policy_actor_hidden.n = 2, c.policy_actor_hidden.v[0] = h0, c.policy_actor_hidden.v[1] = h1;
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  cfg_write_yaml(&c, f, 0);
  fclose(f);
  return buf;
}

static uint8_t* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* b = (uint8_t*)malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}
static void write_bytes(const char* path, const void* d, size_t n) {
  FILE* f = fopen(path, "wb");
  if (f) fwrite(d, 1, n, f), fclose(f);
}

// max abs difference between the exported blob and the library on obs
static double blob_vs(const char* blob_path, const float* obs, const float* ref) {
  size_t len = 0;
  uint8_t* b = read_file(blob_path, &len);
  if (!b) return INFINITY;
  NnBlob pol;
  int rc = nn_blob_load(&pol, b, len);
  double m = INFINITY;
  if (!rc && pol.obs_dim == O && pol.act_dim == A) {
    float work[512], act[A];
    m = 0;
    for (int r = 0; r < NOBS; r++) {
      nn_blob_run(&pol, obs + r * O, act, work);
      for (int j = 0; j < A; j++) m = fmax(m, fabs((double)act[j] - ref[r * A + j]));
    }
  } else {
    fprintf(stderr, "blob %s: %s\n", blob_path, nn_blob_strerror(rc));
  }
  free(b);
  return m;
}

static void expect_fail(const char* label, const char* ckpt, const char* must_contain) {
  char args[2048], out[512];
  snprintf(out, sizeof(out), "%s/keep.bin", g_dir);
  write_bytes(out, "old", 3);
  snprintf(args, sizeof(args), "%s --blob %s --onnx %s/keep.onnx", ckpt, out, g_dir);
  int rc = run_export(args);
  TEST_CHECK(rc == 2, "%s: exit %d, expected 2 (output: %s)", label, rc, g_out);
  TEST_CHECK(strstr(g_out, "adjoint export: ") != NULL, "%s: no message (output: %s)", label, g_out);
  TEST_CHECK(!must_contain || strstr(g_out, must_contain), "%s: message lacks '%s': %s", label, must_contain, g_out);
  size_t len = 0;
  uint8_t* b = read_file(out, &len);
  TEST_CHECK(b && len == 3 && !memcmp(b, "old", 3), "%s: existing output was modified", label);
  free(b);
  char first[256] = "";
  sscanf(g_out, "%255[^\n]", first);
  printf("  %-26s exit %d: %s\n", label, rc, first);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: nn_export_cli PATH/TO/adjoint\n");
    return 2;
  }
  g_exe = argv[1];
  snprintf(g_dir, sizeof(g_dir), "/tmp/nn_export_cli_XXXXXX");
  if (!mkdtemp(g_dir)) return 1;

  // ---- a checkpoint like the trainer's: PPO actor 5 -> [32, 16] -> 1, SiLU + LayerNorm, normalizer clip 3 ----
  NnConfig nc;
  memset(&nc, 0, sizeof(nc));
  nc.in_dim = O, nc.out_dim = A, nc.n_hidden = 2, nc.hidden[0] = 32, nc.hidden[1] = 16;
  nc.act = NN_ACT_SILU, nc.layer_norm = 1, nc.out_act = NN_ACT_NONE, nc.out_scale = 1;
  NnMlp* mlp = NULL;
  NnNorm* norm = NULL;
  nn_mlp_create(&mlp, &nc, NOBS);
  nn_mlp_init(mlp, 5);
  int64_t np = nn_mlp_param_count(mlp);
  float* p = nn_mlp_params(mlp);
  uint64_t s = 99;
  for (int64_t i = 0; i < np; i++) p[i] += (float)(0.05 * gauss(&s));
  float* ema = (float*)malloc(sizeof(float) * np);
  for (int64_t i = 0; i < np; i++) ema[i] = p[i] + (float)(0.02 * gauss(&s));
  float critic[40], log_std[A] = {0};
  for (int i = 0; i < 40; i++) critic[i] = (float)gauss(&s);
  nn_norm_create(&norm, O, 1e-8, 3.0);
  float* obs = (float*)malloc(sizeof(float) * NOBS * O);
  const double mu[O] = {0.2, -0.9, 0.1, 0.3, -0.2}, sd[O] = {0.3, 0.05, 0.2, 0.6, 1.5};
  for (int r = 0; r < NOBS; r++)
    for (int j = 0; j < O; j++) obs[r * O + j] = (float)(mu[j] + sd[j] * gauss(&s));
  nn_norm_update(norm, obs, NOBS);
  for (int r = 0; r < NOBS; r++)
    for (int j = 0; j < O; j++) obs[r * O + j] = (float)(mu[j] + 3 * sd[j] * gauss(&s));  // some past the clip
  NnTensorRef nr[3];
  nn_norm_state(norm, nr, 3);
  char* yaml = config_yaml("silu", 32, 16);
  CkAttr attrs[] = {{"format", "adjoint checkpoint 1"}, {"config", yaml}};
  CkTensor t[8];
  int n = 0;
  n = ckpt_add(t, n, 8, "ppo/actor", CK_F32, p, np, 0);
  n = ckpt_add(t, n, 8, "ppo/critic", CK_F32, critic, 40, 0);
  n = ckpt_add(t, n, 8, "ppo/log_std", CK_F32, log_std, A, 0);
  n = ckpt_add(t, n, 8, "ppo/obs_norm/count", CK_F64, nr[0].data, 1, 0);
  n = ckpt_add(t, n, 8, "ppo/obs_norm/mean", CK_F64, nr[1].data, O, 0);
  n = ckpt_add(t, n, 8, "ppo/obs_norm/m2", CK_F64, nr[2].data, O, 0);
  char ck[512], ck_ema[512], err[1024], args[2048], path[512];
  snprintf(ck, sizeof(ck), "%s/ckpt_000007.h5", g_dir);
  snprintf(ck_ema, sizeof(ck_ema), "%s/ema/ckpt_000001.h5", g_dir);
  TEST_CHECK(ckpt_write(ck, t, n, attrs, 2, err, sizeof(err)) == 0, "write: %s", err);
  snprintf(path, sizeof(path), "%s/ema", g_dir);
  mkdir(path, 0777);
  int ne = ckpt_add(t, n, 8, "ppo/ema", CK_F32, ema, np, 0);
  TEST_CHECK(ckpt_write(ck_ema, t, ne, attrs, 2, err, sizeof(err)) == 0, "write: %s", err);

  // the library's actions (live and EMA parameters)
  float* nobs = (float*)malloc(sizeof(float) * NOBS * O);
  float* ref = (float*)malloc(sizeof(float) * NOBS * A);
  float* ref_ema = (float*)malloc(sizeof(float) * NOBS * A);
  nn_norm_apply(norm, obs, NOBS, nobs);
  nn_mlp_infer(mlp, p, nobs, NOBS, ref);
  nn_mlp_infer(mlp, ema, nobs, NOBS, ref_ema);

  // ---- exports ----
  snprintf(args, sizeof(args), "%s --onnx %s/p.onnx --blob %s/p.bin", ck, g_dir, g_dir);
  int rc = run_export(args);
  TEST_CHECK(rc == 0, "export: exit %d: %s", rc, g_out);
  snprintf(path, sizeof(path), "%s/p.bin", g_dir);
  double e_live = blob_vs(path, obs, ref);
  printf("checkpoint (live):  blob vs library max abs %.3g\n", e_live);
  TEST_CHECK(e_live <= 1e-6, "live: max abs %g", e_live);
  struct stat st;
  snprintf(path, sizeof(path), "%s/p.onnx", g_dir);
  TEST_CHECK(stat(path, &st) == 0 && st.st_size > 1000, "onnx file missing or tiny");
  snprintf(path, sizeof(path), "%s/p.onnx.tmp", g_dir);
  TEST_CHECK(stat(path, &st) != 0, "temporary file left behind");
  // the run directory form picks the latest checkpoint; EMA when present, live with --no-ema
  snprintf(args, sizeof(args), "%s/ema --blob %s/e.bin --quiet", g_dir, g_dir);
  rc = run_export(args);
  TEST_CHECK(rc == 0, "export ema: exit %d: %s", rc, g_out);
  snprintf(path, sizeof(path), "%s/e.bin", g_dir);
  double e_ema = blob_vs(path, obs, ref_ema);
  printf("checkpoint (EMA):   blob vs library max abs %.3g\n", e_ema);
  TEST_CHECK(e_ema <= 1e-6, "ema: max abs %g", e_ema);
  snprintf(args, sizeof(args), "%s --blob %s/n.bin --no-ema --quiet", ck_ema, g_dir);
  rc = run_export(args);
  snprintf(path, sizeof(path), "%s/n.bin", g_dir);
  double e_noema = blob_vs(path, obs, ref);
  TEST_CHECK(rc == 0 && e_noema <= 1e-6, "--no-ema: exit %d max abs %g", rc, e_noema);

  // ---- bad input: exit 2 with a message, outputs untouched ----
  printf("bad checkpoints:\n");
  size_t len = 0;
  uint8_t* good = read_file(ck, &len);
  snprintf(path, sizeof(path), "%s/trunc.h5", g_dir);
  write_bytes(path, good, len / 2);
  expect_fail("truncated (half)", path, "trunc.h5");
  snprintf(path, sizeof(path), "%s/trunc_tail.h5", g_dir);
  write_bytes(path, good, len - 64);
  expect_fail("truncated (tail)", path, "trunc_tail.h5");
  // flip one byte inside the actor's stored weights (Fletcher32 catches it)
  uint8_t* bad = (uint8_t*)malloc(len);
  memcpy(bad, good, len);
  size_t at = 0;
  for (size_t i = 0; i + 64 <= len && !at; i++)
    if (!memcmp(bad + i, p + 8, 64)) at = i;
  TEST_CHECK(at > 0, "actor weights not found in the file");
  bad[at + 21] ^= 0x5a;
  snprintf(path, sizeof(path), "%s/flipped.h5", g_dir);
  write_bytes(path, bad, len);
  expect_fail("flipped weight byte", path, "ppo/actor");
  for (size_t i = 0; i < len; i++) bad[i] = (uint8_t)(nn_rng_next(&s) & 0xff);
  snprintf(path, sizeof(path), "%s/garbage.h5", g_dir);
  write_bytes(path, bad, len);
  expect_fail("random bytes", path, "not an HDF5 checkpoint");
  snprintf(path, sizeof(path), "%s/empty.h5", g_dir);
  write_bytes(path, "", 0);
  expect_fail("empty file", path, "empty.h5");
  snprintf(path, sizeof(path), "%s/nonexistent.h5", g_dir);
  expect_fail("missing file", path, "no such file");
  // no actor dataset
  snprintf(path, sizeof(path), "%s/noactor.h5", g_dir);
  ckpt_write(path, t + 1, n - 1, attrs, 2, err, sizeof(err));
  expect_fail("no actor dataset", path, "ppo/actor");
  // the config describes another network: shape mismatch
  char* yaml2 = config_yaml("silu", 64, 64);
  CkAttr attrs2[] = {{"config", yaml2}};
  snprintf(path, sizeof(path), "%s/mismatch.h5", g_dir);
  ckpt_write(path, t, n, attrs2, 1, err, sizeof(err));
  expect_fail("architecture mismatch", path, "shape");
  // non-finite weights
  float keep = p[3];
  p[3] = NAN;
  snprintf(path, sizeof(path), "%s/nan.h5", g_dir);
  ckpt_write(path, t, n, attrs, 2, err, sizeof(err));
  p[3] = keep;
  expect_fail("NaN weight", path, "not finite");

  // ---- flags ----
  TEST_CHECK(run_export("--help") == 0 && strstr(g_out, "--onnx"), "--help");
  snprintf(args, sizeof(args), "%s", ck);
  TEST_CHECK(run_export(args) == 2 && strstr(g_out, "nothing to write"), "no outputs: %s", g_out);
  snprintf(args, sizeof(args), "%s --blob %s/x.bin --frobnicate", ck, g_dir);
  TEST_CHECK(run_export(args) == 2 && strstr(g_out, "unknown option"), "unknown option: %s", g_out);
  snprintf(args, sizeof(args), "%s --onnx %s/x.onnx --opset 15", ck, g_dir);
  TEST_CHECK(run_export(args) == 2, "opset 15 accepted: %s", g_out);
  TEST_CHECK(run_export("") == 2, "no arguments accepted");
  snprintf(args, sizeof(args), "%s --blob %s/no/such/dir/x.bin", ck, g_dir);
  rc = run_export(args);
  TEST_CHECK(rc == 1 && strstr(g_out, "cannot write"), "unwritable output: exit %d: %s", rc, g_out);

  // ---- a real training run: export == the trainer's own act_eval on its checkpoint ----
  snprintf(args, sizeof(args),
           "%s train configs/cartpole_ppo.yaml env.num_envs=8 algo.horizon=16 ppo.minibatches=2 "
           "policy.layer_norm=true policy.actor_hidden=[32,32] policy.critic_hidden=[32,32] --max-iterations 2 "
           "--quiet --run-dir %s/run 2>&1",
           g_exe, g_dir);
  FILE* tp = popen(args, "r");
  size_t tn = tp ? fread(g_out, 1, sizeof(g_out) - 1, tp) : 0;
  g_out[tn] = 0;
  int trc = tp ? pclose(tp) : -1;
  TEST_CHECK(trc == 0, "adjoint train failed (%d): %s", trc, g_out);
  snprintf(args, sizeof(args), "%s/run --blob %s/run.bin --onnx %s/run.onnx", g_dir, g_dir, g_dir);
  rc = run_export(args);
  TEST_CHECK(rc == 0, "export of the trained run: exit %d: %s", rc, g_out);
  printf("%s", g_out);
  Cfg rc_cfg;
  char cpath[512], ckrun[512];
  snprintf(cpath, sizeof(cpath), "%s/run/config.yaml", g_dir);
  snprintf(ckrun, sizeof(ckrun), "%s/run/ckpt_000002.h5", g_dir);
  const AlgoOps* ops = NULL;
  EnvBatch* env = NULL;
  void* algo = NULL;
  if (!trc && !rc && !cfg_defaults(&rc_cfg, err, sizeof(err)) && !cfg_load_yaml(&rc_cfg, cpath, err, sizeof(err)) &&
      (ops = algo_find(rc_cfg.algo_name, err, sizeof(err))) &&
      !env_create(&env, rc_cfg.env_task, 64, 0, 1, err, sizeof(err)) && !ops->create(&algo, &rc_cfg, env, err, sizeof(err))) {
    CkTensor pt[16];
    int pn = ops->state(algo, pt, 16, 1);
    TEST_CHECK(pn > 0 && ckpt_read(ckrun, pt, pn, err, sizeof(err)) == 0, "read trained checkpoint: %s", err);
    float tobs[64 * O], tact[64 * A], tref[1024 * A], tall[1024 * O];
    for (int b = 0; b < 16; b++) {
      for (int i = 0; i < 64 * O; i++) tobs[i] = (float)(mu[i % O] + 3 * sd[i % O] * gauss(&s));
      ops->act_eval(algo, tobs, 64, tact);
      memcpy(tall + b * 64 * O, tobs, sizeof(tobs));
      memcpy(tref + b * 64 * A, tact, sizeof(tact));
    }
    size_t blen = 0;
    snprintf(path, sizeof(path), "%s/run.bin", g_dir);
    uint8_t* bb = read_file(path, &blen);
    NnBlob tb;
    double m = INFINITY;
    if (bb && nn_blob_load(&tb, bb, blen) == 0 && tb.obs_dim == O && tb.act_dim == A) {
      float work[512], a1[A];
      m = 0;
      for (int r = 0; r < 1024; r++) {
        nn_blob_run(&tb, tall + r * O, a1, work);
        for (int j = 0; j < A; j++) m = fmax(m, fabs((double)a1[j] - tref[r * A + j]));
      }
    }
    free(bb);
    printf("trained run: blob vs the trainer's act_eval max abs %.3g (1024 observations)\n", m);
    TEST_CHECK(m <= 1e-6, "trained run: blob vs act_eval max abs %g", m);
  } else {
    TEST_CHECK(0, "trained run: cannot rebuild the algorithm: %s", err);
  }
  if (algo) ops->destroy(algo);
  if (env) env_destroy(env);

  free(good), free(bad), free(yaml), free(yaml2), free(ema), free(obs), free(nobs), free(ref), free(ref_ema);
  nn_mlp_destroy(mlp);
  nn_norm_destroy(norm);
  snprintf(args, sizeof(args), "rm -rf %s", g_dir);
  if (!test_failures && system(args)) fprintf(stderr, "could not remove %s\n", g_dir);
  return test_report("nn_export_cli");
}
