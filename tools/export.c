// export.c: `adjoint export CHECKPOINT|RUN_DIR --onnx FILE --blob FILE`: the deterministic policy of a training
// checkpoint (observation normalizer -> actor MLP -> action map; the EMA shadow when the run keeps one) as an
// ONNX model and/or an embedded-controller blob (nn/nn_export.h, nn/nn_blob_format.md).
// Exit codes: 0 written, 2 bad input (flags, missing / corrupt / truncated / mismatched checkpoint), 1 runtime
// failure (cannot write an output).
//
// What is read: the checkpoint's "config" attribute (the run's resolved YAML; else RUN_DIR/config.yaml, or
// --config), which gives the task (obs/act sizes), the actor's architecture and the normalizer settings; then the
// datasets <algo>/actor, <algo>/obs_norm/{count,mean,m2} (when policy.obs_norm) and, when present, the EMA
// shadow (<algo>/ema, <algo>/actor_ema or <algo>/ema/actor) through algo/ckpt.h's reader. Model-derived metadata
// (control dt, joint names, default joint positions, PD gains, actuator names) comes from the task's MJCF when
// it can be loaded; without it the export still succeeds (with a warning). A task adds what a deployment of its
// policy needs through its export hook (EnvTaskInfo.export_meta; g1_tracking: the action scale and offset, the
// observation layout, the tracked bodies, the terminations); tools/onnx_mujoco_eval.py runs such an export in
// MuJoCo's own simulator. The blob gets the same metadata in FILE.json beside it.
#define _DEFAULT_SOURCE  // lstat, realpath (tools/outpath.h)
#include <math.h>
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "algo/cfg.h"
#include "algo/ckpt.h"
#include "algo/trainer.h"
#include "envs/env.h"
#include "nn/nn.h"
#include "nn/nn_blob_infer.h"
#include "nn/nn_export.h"
#include "sim/sim_common.h"
#include "tools/cli.h"
#include "tools/outpath.h"

int export_main(int argc, char** argv);

static const char* kExportUsage =
    "usage: adjoint export CHECKPOINT.h5|RUN_DIR [--onnx FILE] [--blob FILE] [options]\n"
    "  Writes the checkpoint's deterministic policy (normalizer -> actor -> action scale/offset; EMA weights\n"
    "  when the run keeps them). RUN_DIR uses its latest ckpt_*.h5. At least one of --onnx / --blob.\n"
    "  --onnx FILE     ONNX model: input \"obs\" float32 [batch, obs_dim], output \"actions\" [batch, act_dim]\n"
    "                  (the raw action), metadata_props with what a deployment needs: observation/action names,\n"
    "                  control_dt, joints in actuator order with default positions and PD gains, the task's\n"
    "                  action scale/offset and observation layout (g1_tracking), the normalizer (in the graph)\n"
    "  --blob FILE     compact binary for embedded controllers (nn/nn_blob_format.md, nn/nn_blob_infer.h), and\n"
    "                  FILE.json: the same metadata as the ONNX model's, one JSON object of string values\n"
    "  --opset N       ONNX opset 17 (default; LayerNormalization) or 13 (LayerNorm decomposed)\n"
    "  --no-ema        export the live parameters even when the checkpoint has an EMA shadow\n"
    "  --config FILE   the run's config.yaml (default: the checkpoint's own copy, else RUN_DIR/config.yaml)\n"
    "  --check FILE    needs --blob: evaluate 1000 random observations (normalizer mean +- 3 sd) with the trainer's\n"
    "                  own policy (the algorithm rebuilt from the checkpoint) and with the blob routine\n"
    "                  (nn/nn_blob_infer.c) on the written blob; print the max abs difference (exit 1 above 1e-6)\n"
    "                  and write FILE for other consumers (an ONNX runtime): \"ADJCHK1\\n\", int32 n, obs_dim,\n"
    "                  act_dim, 0, then float32 obs (n, obs_dim), trainer actions (n, act_dim), blob actions\n"
    "                  (n, act_dim), little-endian\n"
    "  --quiet         no summary\n"
    "Exit codes: 0 written, 2 bad input (missing, corrupt or mismatched checkpoint), 1 write failure.\n";

static int user_error(const char* fmt, const char* a, const char* b) {
  fprintf(stderr, "adjoint export: ");
  fprintf(stderr, fmt, a, b ? b : "");
  fputc('\n', stderr);
  return 2;
}

// The actor's NnConfig as the algorithms build it from the config (algo/ppo.c net_config; SHAC squashes its
// actions with tanh, algo/shac.c's plan).
static NnAct act_of(const char* s) {
  if (!strcmp(s, "relu")) return NN_ACT_RELU;
  if (!strcmp(s, "tanh")) return NN_ACT_TANH;
  if (!strcmp(s, "silu")) return NN_ACT_SILU;
  return NN_ACT_ELU;
}
static void actor_config(NnConfig* n, const Cfg* c, int obs_dim, int act_dim) {
  memset(n, 0, sizeof(*n));
  n->in_dim = obs_dim, n->out_dim = act_dim;
  n->n_hidden = c->policy_actor_hidden.n;
  for (int i = 0; i < n->n_hidden; i++) n->hidden[i] = c->policy_actor_hidden.v[i];
  n->act = act_of(c->policy_activation);
  n->layer_norm = c->policy_layer_norm;
  n->out_act = strcmp(c->algo_name, "ppo") ? NN_ACT_TANH : NN_ACT_NONE;
  n->out_scale = 1;
}
#define NORM_EPS 1e-8  // the algorithms' nn_norm_create eps (algo/ppo.c)

// Model-derived metadata (best effort): the task's model compiled under the run's constants (load_options), as
// the trainer compiled it. Joints: where every actuator is a servo on its own hinge or slide (a robot), the
// joint of each actuator in actuator order, so joint_names, default_joint_pos, kp and kd line up with the
// actions; otherwise every hinge and slide in model order, gains 0 where no position servo drives it.
typedef struct {
  void* mj;
  SimModel* sm;  // the engine's copy (the task's export hook reads it)
  double dt;
  int n, by_actuator;
  const char** joint;
  double *q0, *kp, *kd, *armature, *damping, *effort;
  const char** act_names;
} ModelMeta;

// a position servo: gain kp, bias (0, -kp, -kd); kp and kd, or 0
static void servo_gains(const mjModel* m, int a, double* kp, double* kd) {
  const mjtNum* g = m->actuator_gainprm + (size_t)a * mjNGAIN;
  const mjtNum* b = m->actuator_biasprm + (size_t)a * mjNBIAS;
  *kp = *kd = 0;
  if (m->actuator_gaintype[a] == mjGAIN_FIXED && m->actuator_biastype[a] == mjBIAS_AFFINE && b[1] == -g[0] && g[0] > 0)
    *kp = g[0], *kd = -b[2];
}

static int model_meta(const EnvTask* tk, const double* tparam, int act_dim, ModelMeta* mm, int quiet) {
  memset(mm, 0, sizeof(*mm));
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = tk->info.disable_add;
  char msg[2048];
  if (tk->info.load_options && tk->info.load_options(tparam, &opt, msg, sizeof(msg))) {
    fprintf(stderr, "adjoint export: config: env.params: %s\n", msg);
    return 2;
  }
  if (sim_load_mjcf(tk->info.model, &opt, &mm->mj, msg, sizeof(msg))) {
    if (!quiet)
      fprintf(stderr, "adjoint export: warning: task model %s not loaded (%s): no control_dt/joint metadata\n",
              tk->info.model, msg);
    mm->mj = NULL;
    return 0;
  }
  const mjModel* m = (const mjModel*)mm->mj;
  if (sim_model_import_caps(mm->mj, opt.nconmax, opt.nefcmax, &mm->sm, msg, sizeof(msg))) mm->sm = NULL;
  mm->dt = m->opt.timestep * tk->info.frame_skip;
  int cap = m->njnt > m->nu ? m->njnt : m->nu;
  mm->joint = (const char**)calloc((size_t)cap + 1, sizeof(char*));
  mm->q0 = (double*)calloc(6 * (size_t)cap + 1, sizeof(double));
  if (!mm->joint || !mm->q0) return 1;
  mm->kp = mm->q0 + cap, mm->kd = mm->q0 + 2 * cap, mm->armature = mm->q0 + 3 * cap;
  mm->damping = mm->q0 + 4 * cap, mm->effort = mm->q0 + 5 * cap;
  int by_act = m->nu > 0 && m->nu == act_dim;
  for (int a = 0; by_act && a < m->nu; a++) {
    int j = m->actuator_trnid[2 * a];
    double kp, kd;
    servo_gains(m, a, &kp, &kd);
    by_act = kp > 0 && m->actuator_trntype[a] == mjTRN_JOINT &&
             (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE);
    for (int b = 0; by_act && b < a; b++) by_act = m->actuator_trnid[2 * b] != j;
  }
  mm->by_actuator = by_act;
  for (int k = 0; k < (by_act ? m->nu : m->njnt); k++) {
    int j = by_act ? m->actuator_trnid[2 * k] : k, t = m->jnt_type[j], a = by_act ? k : -1;
    if (t != mjJNT_HINGE && t != mjJNT_SLIDE) continue;  // floating bases and ball joints are not "joints" here
    for (int b = 0; a < 0 && b < m->nu; b++) {  // model order: the position servo on this joint, if any
      double kp, kd;
      servo_gains(m, b, &kp, &kd);
      if (m->actuator_trntype[b] == mjTRN_JOINT && m->actuator_trnid[2 * b] == j && kp > 0) a = b;
    }
    const char* name = mj_id2name(m, mjOBJ_JOINT, j);
    int n = mm->n++;
    mm->joint[n] = name ? name : "";
    mm->q0[n] = m->qpos0[m->jnt_qposadr[j]];
    mm->armature[n] = m->dof_armature[m->jnt_dofadr[j]], mm->damping[n] = m->dof_damping[m->jnt_dofadr[j]];
    if (a >= 0) {
      servo_gains(m, a, &mm->kp[n], &mm->kd[n]);
      mm->effort[n] = m->actuator_forcelimited[a] ? m->actuator_forcerange[2 * a + 1] : 0;
    }
  }
  if (m->nu == act_dim) {
    mm->act_names = (const char**)calloc((size_t)act_dim, sizeof(char*));
    for (int a = 0; mm->act_names && a < act_dim; a++) {
      const char* name = mj_id2name(m, mjOBJ_ACTUATOR, a);
      mm->act_names[a] = name ? name : "";
    }
  }
  return 0;
}

static void model_meta_free(ModelMeta* mm) {
  free(mm->joint), free(mm->q0), free(mm->act_names);
  if (mm->sm) sim_model_free(mm->sm);
  if (mm->mj) sim_free_mjmodel(mm->mj);
}

// The extra metadata pairs: the export's own, then the task's (EnvTaskInfo.export_meta); a later pair replaces an
// earlier one of the same key.
#define META_MAX 64
typedef struct {
  int n, oom;
  char* key[META_MAX];
  char* val[META_MAX];
} MetaList;
static void meta_put(void* ctx, const char* key, const char* value) {
  MetaList* l = (MetaList*)ctx;
  int i = 0;
  while (i < l->n && strcmp(l->key[i], key)) i++;
  if (i == META_MAX) {
    l->oom = 1;
    return;
  }
  char* v = strdup(value ? value : "");
  if (!v) {
    l->oom = 1;
    return;
  }
  if (i == l->n) {
    if (!(l->key[i] = strdup(key))) {
      free(v), l->oom = 1;
      return;
    }
    l->n++;
  } else {
    free(l->val[i]);
  }
  l->val[i] = v;
}
static void meta_list_free(MetaList* l) {
  for (int i = 0; i < l->n; i++) free(l->key[i]), free(l->val[i]);
  l->n = 0;
}
static char* json_list(const double* v, int n) {  // "[1.5, 2]" (malloc'ed; NULL when out of memory)
  size_t cap = 32 * (size_t)n + 4, k = 1;
  char* s = (char*)malloc(cap);
  if (!s) return NULL;
  s[0] = '[';
  for (int i = 0; i < n; i++) k += (size_t)snprintf(s + k, cap - k, "%s%.17g", i ? ", " : "", v[i]);
  snprintf(s + k, cap - k, "]");
  return s;
}
static void meta_put_list(MetaList* l, const char* key, const double* v, int n) {
  char* s = json_list(v, n);
  if (s) meta_put(l, key, s);
  else l->oom = 1;
  free(s);
}

static const char* hidden_list(const NnConfig* nc) {  // "64,64"
  static char buf[128];
  buf[0] = 0;
  for (int i = 0; i < nc->n_hidden; i++)
    snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%d", i ? "," : "", nc->hidden[i]);
  return buf;
}

// library messages start with "export: "; the CLI names the checkpoint instead
static const char* lib_msg(const char* e) { return strncmp(e, "export: ", 8) ? e : e + 8; }

#define CHECK_N 1000
#define CHECK_TOL 1e-6  // the blob routine within 1e-6 of the framework's own inference

// --check: the trainer's policy and the blob routine on CHECK_N observations around the normalizer's statistics
// (N(0, 1) per component without one); 0, or 1 when above CHECK_TOL or when a step fails (with a message).
static int export_check(const char* out, const char* ckpt, const Cfg* c, const char* blob, int O, int A,
                        const double* mean, const double* var, int quiet) {
  size_t nobs = (size_t)CHECK_N * O, nact = (size_t)CHECK_N * A;
  size_t len = 24 + sizeof(float) * (nobs + 2 * nact);  // magic, 4 x int32, the three arrays
  uint8_t* buf = (uint8_t*)calloc(len, 1);
  uint8_t* bb = NULL;
  FILE* f = NULL;
  char err[2048] = "";
  int rc = 1;
  if (!buf) return fprintf(stderr, "adjoint export: out of memory\n"), 1;
  memcpy(buf, "ADJCHK1\n", 8);
  int32_t hdr[4] = {CHECK_N, O, A, 0};  // the supported hosts are little-endian (nn_blob_format.md)
  memcpy(buf + 8, hdr, 16);
  float* obs = (float*)(buf + 24);  // (n, obs_dim)
  float* ref = obs + nobs;          // (n, act_dim) the trainer's policy
  float* bact = ref + nact;         // (n, act_dim) the blob routine
  uint64_t s = 0xC0FFEE ^ (uint64_t)c->run_seed;
  for (size_t i = 0; i < nobs; i++) {
    int j = (int)(i % (size_t)O);
    double u1 = nn_rng_uniform(&s), u2 = nn_rng_uniform(&s);
    double g = sqrt(-2 * log(u1 > 1e-300 ? u1 : 1e-300)) * cos(6.283185307179586 * u2);
    obs[i] = (float)(mean ? mean[j] + 3 * sqrt(var[j]) * g : g);
  }
  if (trainer_policy_actions(ckpt, c, obs, CHECK_N, ref, err, sizeof(err))) {
    fprintf(stderr, "adjoint export: --check: the trainer's policy: %s\n", err);
    goto done;
  }
  f = fopen(blob, "rb");
  long n = -1;
  if (f && !fseek(f, 0, SEEK_END)) n = ftell(f);
  if (n > 0 && (bb = (uint8_t*)malloc((size_t)n)) && !fseek(f, 0, SEEK_SET) && fread(bb, 1, (size_t)n, f) == (size_t)n) {
    NnBlob pol;
    int lrc = nn_blob_load(&pol, bb, (size_t)n);
    float* work = lrc ? NULL : (float*)malloc(sizeof(float) * (nn_blob_work_floats(&pol) + 1));
    if (lrc || pol.obs_dim != O || pol.act_dim != A || !work) {
      fprintf(stderr, "adjoint export: --check: %s: %s\n", blob, lrc ? nn_blob_strerror(lrc) : "unexpected sizes");
      free(work);
      goto done;
    }
    double m = 0;
    for (int r = 0; r < CHECK_N; r++) {
      nn_blob_run(&pol, obs + (size_t)r * O, bact + (size_t)r * A, work);
      for (int k = 0; k < A; k++) m = fmax(m, fabs((double)bact[(size_t)r * A + k] - ref[(size_t)r * A + k]));
    }
    free(work);
    if (nn_export_write_atomic(out, buf, len, err, sizeof(err))) {
      fprintf(stderr, "adjoint export: --check: %s\n", err);
      goto done;
    }
    rc = m <= CHECK_TOL ? 0 : 1;
    if (!quiet || rc)
      printf("check %s: %d observations, blob routine vs the trainer's policy: max abs %.3g (%s %.0e)\n", out,
             CHECK_N, m, rc ? "FAILED, above" : "within", CHECK_TOL);
  } else {
    fprintf(stderr, "adjoint export: --check: cannot read %s\n", blob);
  }
done:
  if (f) fclose(f);
  free(bb), free(buf);
  return rc;
}

static int is_hdf5(const char* path) {
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char b[8];
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  size_t n = fread(b, 1, 8, f);
  fclose(f);
  return n == 8 && !memcmp(b, sig, 8);
}

int export_main(int argc, char** argv) {
  const char *target = NULL, *onnx = NULL, *blob = NULL, *config = NULL, *check = NULL;
  int opset = 17, no_ema = 0, quiet = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(kExportUsage, stdout);
      return 0;
    }
    if (!strcmp(a, "--onnx")) {
      if (!(onnx = cli_value(argc, argv, &i))) return 2;
    } else if (!strcmp(a, "--blob")) {
      if (!(blob = cli_value(argc, argv, &i))) return 2;
    } else if (!strcmp(a, "--check")) {
      if (!(check = cli_value(argc, argv, &i))) return 2;
    } else if (!strcmp(a, "--config")) {
      if (!(config = cli_value(argc, argv, &i))) return 2;
    } else if (!strcmp(a, "--opset")) {
      if (cli_int(argc, argv, &i, 13, 17, &opset)) return 2;
      if (opset != 13 && opset != 17) return user_error("option --opset: %s is not 13 or 17", argv[i], NULL);
    } else if (!strcmp(a, "--no-ema")) {
      no_ema = 1;
    } else if (!strcmp(a, "--quiet")) {
      quiet = 1;
    } else if (a[0] == '-') {
      fprintf(stderr, "adjoint export: unknown option %s\n(see adjoint export --help)\n", a);
      return 2;
    } else if (!target) {
      target = a;
    } else {
      return user_error("unexpected argument %s", a, NULL);
    }
  }
  if (!target) {
    fprintf(stderr, "adjoint export: missing CHECKPOINT or RUN_DIR\n%s", kExportUsage);
    return 2;
  }
  if (!onnx && !blob) return user_error("nothing to write: give --onnx FILE and/or --blob FILE%s", "", NULL);
  if (check && !blob) return user_error("--check %s needs --blob FILE (it runs the blob routine)", check, NULL);
  if (check && no_ema) return user_error("--check compares with the trainer's policy, which uses the EMA weights: drop --no-ema%s", "", NULL);

  // ---- locate the checkpoint and its config ----
  char ckpt[4200], dir[4200], cfgpath[4300], sidecar[4300] = "", err[8192] = "";
  struct stat st;
  if (stat(target, &st)) return user_error("%s: no such file or directory", target, NULL);
  if (S_ISDIR(st.st_mode)) {
    snprintf(dir, sizeof(dir), "%s", target);
    if (trainer_latest_checkpoint(dir, ckpt, sizeof(ckpt)))
      return user_error("%s: no checkpoint (ckpt_*.h5) in this directory", dir, NULL);
  } else {
    snprintf(ckpt, sizeof(ckpt), "%s", target);
    snprintf(dir, sizeof(dir), "%s", target);
    char* slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof(dir), ".");
  }
  {  // outputs: new or regular files, none of them an input or another output
    const char* in[3] = {ckpt, config, NULL};
    if (!config) {
      snprintf(cfgpath, sizeof(cfgpath), "%s/config.yaml", dir);
      in[2] = cfgpath;
    }
    if (blob) snprintf(sidecar, sizeof(sidecar), "%s.json", blob);
    const char* out[4] = {onnx, blob, check, blob ? sidecar : NULL};
    const char* flag[4] = {"--onnx", "--blob", "--check", "--blob (its metadata FILE.json)"};
    for (int k = 0; k < 4; k++)
      if (out[k] && outpath_check("adjoint export", flag[k], out[k], in, 3, out, k)) return 2;
  }
  int h5 = is_hdf5(ckpt);
  if (h5 < 0) return user_error("%s: cannot open", ckpt, NULL);
  if (!h5) return user_error("%s: not an HDF5 checkpoint (bad signature: corrupt, truncated or another format)", ckpt, NULL);
  // open once with no datasets: a corrupt or truncated file fails here with the reader's message
  if (ckpt_read(ckpt, NULL, 0, err, sizeof(err))) return user_error("%s%s", err, "");

  Cfg c;
  int rc;
  if (config) {
    char msg[1024];
    if (cfg_defaults(&c, msg, sizeof(msg)) || cfg_load_yaml(&c, config, msg, sizeof(msg)))
      return user_error("%s%s", msg, "");
  } else if ((rc = trainer_checkpoint_config(ckpt, &c, err, sizeof(err))) != 0) {
    if (rc != CKPT_EMISSING) return user_error("%s%s", err[0] ? err : ckpt, err[0] ? "" : ": cannot read the config attribute");
    snprintf(cfgpath, sizeof(cfgpath), "%s/config.yaml", dir);
    char msg[1024];
    if (cfg_defaults(&c, msg, sizeof(msg)) || cfg_load_yaml(&c, cfgpath, msg, sizeof(msg)))
      return user_error("%s has no stored config and %s", ckpt, msg);
  }
  const EnvTask* tk = env_find_task(c.env_task);
  if (!tk) return user_error("config: unknown task '%s'%s", c.env_task, "");
  int O = env_task_obs_dim(tk, c.env_params, err, sizeof(err)), A = tk->info.act_dim;  // env.params may resize it
  if (O < 1) return user_error("config: %s%s", err, "");

  // ---- policy tensors ----
  NnConfig nc;
  actor_config(&nc, &c, O, A);
  if (nn_config_check(&nc)) return user_error("config: invalid actor network%s%s", "", "");
  int64_t np = nn_param_count(&nc);
  float* params = (float*)malloc(sizeof(float) * (size_t)np);
  float* ema = (float*)malloc(sizeof(float) * (size_t)np);
  double* stats = (double*)malloc(sizeof(double) * (3 * (size_t)O + 1));
  if (!params || !ema || !stats) {
    free(params), free(ema), free(stats);
    fprintf(stderr, "adjoint export: out of memory\n");
    return 1;
  }
  double *count = stats, *mean = stats + 1, *m2 = stats + 1 + O, *var = stats + 1 + 2 * O;
  const char* prefixes[2] = {c.algo_name, "shac"};
  const char* prefix = NULL;
  char name[64];
  int exit_code = 0;
  for (int k = 0; k < 2 && !prefix; k++) {
    CkTensor t;
    snprintf(name, sizeof(name), "%s/actor", prefixes[k]);
    ckpt_add(&t, 0, 1, name, CK_F32, params, np, 0);
    rc = ckpt_read_valid(ckpt, &t, 1, err, sizeof(err));
    if (!rc) prefix = prefixes[k];
    else if (rc != CKPT_EMISSING || k == 1) {
      if (rc == CKPT_EMISSING)
        fprintf(stderr, "adjoint export: %s: dataset '%s/actor' missing (no actor parameters)\n", ckpt, c.algo_name);
      else if (rc == CKPT_ESHAPE)
        fprintf(stderr, "adjoint export: %s (the config's actor %d -> [%s] -> %d has %lld parameters)\n", err, O,
                hidden_list(&nc), A, (long long)np);
      else
        fprintf(stderr, "adjoint export: %s\n", err);
      exit_code = 2;
      break;
    }
  }
  int has_ema = 0;
  if (prefix && !no_ema) {
    static const char* const kEma[] = {"ema", "actor_ema", "ema/actor"};
    for (int k = 0; k < 3 && !has_ema && !exit_code; k++) {
      CkTensor t;
      snprintf(name, sizeof(name), "%s/%s", prefix, kEma[k]);
      ckpt_add(&t, 0, 1, name, CK_F32, ema, np, 0);
      rc = ckpt_read_valid(ckpt, &t, 1, err, sizeof(err));
      if (!rc) has_ema = 1;
      else if (rc != CKPT_EMISSING) fprintf(stderr, "adjoint export: %s\n", err), exit_code = 2;
    }
  }
  // a run that keeps an EMA shadow is evaluated with it (trainer_eval): export the same policy or refuse
  if (prefix && !exit_code && !no_ema && !has_ema && strcmp(c.algo_name, "ppo") && c.nablamimic_policy_ema_decay > 0) {
    fprintf(stderr, "adjoint export: %s: dataset '%s/ema' missing, though the config keeps a policy EMA "
            "(nablamimic.policy_ema_decay %g); --no-ema exports the live actor\n", ckpt, prefix,
            c.nablamimic_policy_ema_decay);
    exit_code = 2;
  }
  if (prefix && !exit_code && c.policy_obs_norm) {
    CkTensor t[3];
    char n0[64], n1[64], n2[64];
    snprintf(n0, sizeof(n0), "%s/obs_norm/count", prefix);
    snprintf(n1, sizeof(n1), "%s/obs_norm/mean", prefix);
    snprintf(n2, sizeof(n2), "%s/obs_norm/m2", prefix);
    ckpt_add(t, 0, 3, n0, CK_F64, count, 1, 0);
    ckpt_add(t, 1, 3, n1, CK_F64, mean, O, 0);
    ckpt_add(t, 2, 3, n2, CK_F64, m2, O, 0);
    if (ckpt_read_valid(ckpt, t, 3, err, sizeof(err))) fprintf(stderr, "adjoint export: %s\n", err), exit_code = 2;
    else if (!(*count >= 0)) fprintf(stderr, "adjoint export: %s: invalid normalizer count\n", ckpt), exit_code = 2;
  }
  if (exit_code) {
    free(params), free(ema), free(stats);
    return exit_code;
  }

  NnExportPolicy pol;
  memset(&pol, 0, sizeof(pol));
  pol.cfg = nc;
  pol.params = has_ema ? ema : params;
  if (c.policy_obs_norm) {
    for (int j = 0; j < O; j++) var[j] = *count > 0 ? m2[j] / *count : 1.0;
    pol.has_norm = 1, pol.norm_mean = mean, pol.norm_var = var;
    pol.norm_eps = NORM_EPS, pol.norm_clip = c.policy_obs_clip;
  }
  // The graph's output is the policy's raw action (no action map): the task maps it itself (cartpole: ctrl =
  // clip(a, -1, 1); g1_tracking: a joint target, the task's action_scale and action_offset in the metadata).
  ModelMeta mm;
  double tparam[ENV_MAX_PARAMS];
  if (env_task_constants(tk, c.env_params, tparam, err, sizeof(err))) {
    free(params), free(ema), free(stats);
    return user_error("config: %s%s", err, "");
  }
  if ((rc = model_meta(tk, tparam, A, &mm, quiet)) != 0) {
    model_meta_free(&mm);
    free(params), free(ema), free(stats);
    if (rc == 1) fprintf(stderr, "adjoint export: out of memory\n");
    return rc;
  }
  NnExportMeta meta;
  memset(&meta, 0, sizeof(meta));
  meta.task = c.env_task, meta.algo = c.algo_name, meta.source = ckpt, meta.ema = has_ema;
  meta.obs_names = tk->info.obs_names;  // the first O of the task's names
  meta.act_names = mm.act_names;
  meta.control_dt = mm.dt;
  meta.n_joints = mm.n, meta.joint_names = mm.joint, meta.default_joint_pos = mm.q0, meta.kp = mm.kp, meta.kd = mm.kd;
  char hidden[128];
  snprintf(hidden, sizeof(hidden), "%s", hidden_list(&nc));
  char seed[32];
  snprintf(seed, sizeof(seed), "%lld", (long long)c.run_seed);
  MetaList ml = {0};
  meta_put(&ml, "run_seed", seed);
  meta_put(&ml, "actor_hidden", hidden);
  // env_params: the task constants the policy was trained with (e.g. the hopper's gear_scale), which a
  // consumer's simulator or robot must match
  if (c.env_params[0]) meta_put(&ml, "env_params", c.env_params);
  meta_put(&ml, "model", tk->info.model);
  // the normalizer is part of the graph: a consumer feeds raw observations
  meta_put(&ml, "normalizer", c.policy_obs_norm ? "in_graph" : "none");
  meta_put(&ml, "actions", "raw policy output: the graph applies no action map");
  if (mm.n > 0) {
    meta_put(&ml, "joint_order", mm.by_actuator ? "actuators" : "model");
    meta_put_list(&ml, "joint_armature", mm.armature, mm.n);
    meta_put_list(&ml, "joint_damping", mm.damping, mm.n);
    meta_put_list(&ml, "effort_limit", mm.effort, mm.n);
  }
  if (tk->info.export_meta) {
    if (!mm.sm) {
      if (!quiet)
        fprintf(stderr, "adjoint export: warning: task model %s not loaded: no %s deployment metadata\n",
                tk->info.model, tk->info.name);
    } else if (tk->info.export_meta(mm.sm, tparam, meta_put, &ml, err, sizeof(err))) {
      fprintf(stderr, "adjoint export: task %s: %s\n", tk->info.name, err);
      exit_code = 2;
    }
  }
  if (ml.oom) fprintf(stderr, "adjoint export: out of memory (metadata)\n"), exit_code = 1;
  meta.n_extra = ml.n, meta.extra_keys = (const char* const*)ml.key, meta.extra_values = (const char* const*)ml.val;

  if (onnx && !exit_code) {
    NnOnnxOptions oo = {opset};
    rc = nn_export_onnx_file(onnx, &pol, &meta, &oo, err, sizeof(err));
    if (rc) {
      fprintf(stderr, "adjoint export: %s%s%s\n", rc == NN_EIO ? "" : ckpt, rc == NN_EIO ? "" : ": ", lib_msg(err));
      exit_code = rc == NN_EIO || rc == NN_ENOMEM ? 1 : 2;
    }
  }
  if (blob && !exit_code) {
    rc = nn_export_blob_file(blob, &pol, err, sizeof(err));
    if (!rc) rc = nn_export_meta_json_file(sidecar, &pol, &meta, err, sizeof(err));
    if (rc) {
      fprintf(stderr, "adjoint export: %s%s%s\n", rc == NN_EIO ? "" : ckpt, rc == NN_EIO ? "" : ": ", lib_msg(err));
      exit_code = rc == NN_EIO || rc == NN_ENOMEM ? 1 : 2;
    }
  }
  if (!exit_code && !quiet) {
    printf("checkpoint %s (task %s, algo %s, %s weights)\n", ckpt, c.env_task, c.algo_name, has_ema ? "EMA" : "live");
    printf("policy %d -> [%s] -> %d, %s%s, obs_norm %s\n", O, hidden, A, c.policy_activation,
           nc.layer_norm ? " + LayerNorm" : "", c.policy_obs_norm ? "on" : "off");
    if (onnx) printf("onnx %s (opset %d)\n", onnx, opset);
    if (blob) printf("blob %s (metadata %s)\n", blob, sidecar);
  }
  if (check && !exit_code)
    exit_code = export_check(check, ckpt, &c, blob, O, A, c.policy_obs_norm ? mean : NULL, var, quiet);
  meta_list_free(&ml);
  model_meta_free(&mm);
  free(params), free(ema), free(stats);
  return exit_code;
}
