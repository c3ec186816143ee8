// trainer.c: the training loop, run directory, metrics, TensorBoard, checkpoints, resume, evaluation.
#define _GNU_SOURCE  // gethostname, strdup
#include "algo/trainer.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/ckpt.h"
#include "algo/motion_eval.h"
#include "algo/tb.h"
#include "nn/nn_export.h"

_Static_assert(sizeof(sim_real) == sizeof(float), "the trainer runs the float32 engine (sim_real = float)");

#define MAX_TENSORS 96

static int mkdir_p(const char* dir) {
  char buf[4096];
  snprintf(buf, sizeof(buf), "%s", dir);
  for (char* p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) && errno != EEXIST) return -1;
  struct stat st;
  return (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) ? 0 : -1;
}

// iterations of dir's ckpt_*.h5 files, newest first (at most max); the count, or -1 when dir cannot be read
static int list_checkpoints(const char* dir, long* its, int max) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d))) {
    long it;
    char tail[8];
    if (sscanf(e->d_name, "ckpt_%ld.h%7s", &it, tail) != 2 || strcmp(tail, "5") || it < 0) continue;
    if (n < max) its[n++] = it;
    else if (it > its[max - 1]) its[max - 1] = it;  // keep the newest max
    for (int k = n - 1; k > 0 && its[k] > its[k - 1]; k--) {
      long x = its[k];
      its[k] = its[k - 1], its[k - 1] = x;
    }
  }
  closedir(d);
  return n;
}

int trainer_latest_checkpoint(const char* dir, char* path, size_t pathlen) {
  long best;
  if (list_checkpoints(dir, &best, 1) < 1) return TRAIN_EUSER;
  snprintf(path, pathlen, "%s/ckpt_%06ld.h5", dir, best);
  return TRAIN_OK;
}

// ---- checkpointed state: trainer + environment + algorithm ----
typedef struct {
  int64_t iteration, env_steps;
  int64_t config_hash;
} TrainerState;

static int env_tensors(EnvBatch* e, CkTensor* t, int n, int max) {
  const SimModel* m = e->m;
  SimData* d = e->d;
  int N = e->nworld;
  n = ckpt_add(t, n, max, "env/qpos", CK_F32, d->qpos, N, m->nq);
  n = ckpt_add(t, n, max, "env/qvel", CK_F32, d->qvel, N, m->nv);
  if (m->nu) n = ckpt_add(t, n, max, "env/ctrl", CK_F32, d->ctrl, N, m->nu);
  n = ckpt_add(t, n, max, "env/qacc_warmstart", CK_F32, d->qacc_warmstart, N, m->nv);
  n = ckpt_add(t, n, max, "env/qfrc_applied", CK_F32, d->qfrc_applied, N, m->nv);
  n = ckpt_add(t, n, max, "env/time", CK_F32, d->time, N, 0);
  n = ckpt_add(t, n, max, "env/nan_count", CK_I32, d->nan_count, N, 0);
  n = ckpt_add(t, n, max, "env/step", CK_I32, e->t, N, 0);
  n = ckpt_add(t, n, max, "env/rng", CK_I64, e->rng, N, 0);
  n = ckpt_add(t, n, max, "env/nan_seen", CK_I32, e->nan_seen, N, 0);
  n = ckpt_add(t, n, max, "env/obs", CK_F32, e->obs, N, e->obs_dim);
  if (e->cobs != e->obs)  // a task with a critic observation (none: exactly the arrays of before)
    n = ckpt_add(t, n, max, "env/critic_obs", CK_F32, e->cobs, N, e->critic_obs_dim);
  n = ckpt_add(t, n, max, "env/episode_return", CK_F64, e->ep_return, N, 0);
  n = ckpt_add(t, n, max, "env/episode_stats", CK_I64, e->stats, 2, 0);
  n = ckpt_add(t, n, max, "env/recent_return", CK_F64, e->recent_return, ENV_RECENT, 0);
  n = ckpt_add(t, n, max, "env/recent_length", CK_I32, e->recent_len, ENV_RECENT, 0);
  // the task's per-world state, one array per field of its table (none for a task without state: a
  // checkpoint of such a task has exactly the arrays above)
  static char names[ENV_MAX_STATE][80];
  const EnvTaskInfo* in = &e->task->info;
  for (int k = 0; k < in->nstate; k++) {
    snprintf(names[k], sizeof(names[k]), "env/task/%s", in->state[k].name);
    int c = in->state[k].count;
    n = ckpt_add(t, n, max, names[k], in->state[k].is_int ? CK_I32 : CK_F32, e->state[k], N, c > 1 ? c : 0);
  }
  // the task-shared state (e.g. the start sampler's statistics) and, where the batch has them, the worlds' own
  // parameters (e.g. drawn at their last reset): neither exists for a task without, nothing changes there
  static char gnames[ENV_MAX_SHARED][80];
  for (int k = 0; k < in->nshared; k++) {
    snprintf(gnames[k], sizeof(gnames[k]), "env/shared/%s", in->shared[k].name);
    n = ckpt_add(t, n, max, gnames[k], in->shared[k].is_int ? CK_I32 : CK_F64, e->shared[k], e->shared_count[k], 0);
  }
  if (m->prm) {
    n = ckpt_add(t, n, max, "env/prm_body_mass", CK_F32, d->prm_body_mass, N, m->nbody);
    n = ckpt_add(t, n, max, "env/prm_body_subtreemass", CK_F32, d->prm_body_subtreemass, N, m->nbody);
    n = ckpt_add(t, n, max, "env/prm_body_ipos", CK_F32, d->prm_body_ipos, N, 3 * m->nbody);
    n = ckpt_add(t, n, max, "env/prm_geom_friction", CK_F32, d->prm_geom_friction, N, 3 * m->ngeom);
    n = ckpt_add(t, n, max, "env/geo_prm_body_ipos", CK_F64, d->geo_prm_body_ipos, N, 3 * m->nbody);
    n = ckpt_add(t, n, max, "env/prm_body_mass_f64", CK_F64, d->prm_body_mass_f64, N, m->nbody);
  }
  return n;
}

static int all_tensors(TrainerState* ts, EnvBatch* e, const AlgoOps* ops, void* algo, CkTensor* t, int max) {
  int n = 0;
  n = ckpt_add(t, n, max, "config_hash", CK_I64, &ts->config_hash, 1, 0);
  n = ckpt_add(t, n, max, "trainer/iteration", CK_I64, &ts->iteration, 1, 0);
  n = ckpt_add(t, n, max, "trainer/env_steps", CK_I64, &ts->env_steps, 1, 0);
  n = env_tensors(e, t, n, max);
  if (n < 0) return -1;
  int k = ops->state(algo, t + n, max - n, 0);
  return k < 0 ? -1 : n + k;
}

static char* config_text(const Cfg* c) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return NULL;
  cfg_write_yaml(c, f, 0);
  fclose(f);
  return buf;
}

static void iso_now(char* buf, size_t len) {
  time_t t = time(NULL);
  struct tm tmv;
  gmtime_r(&t, &tmv);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

static int save_checkpoint(const TrainOptions* o, TrainerState* ts, EnvBatch* e, const AlgoOps* ops, void* algo,
                           char* err, size_t errlen) {
  CkTensor t[MAX_TENSORS];
  int n = all_tensors(ts, e, ops, algo, t, MAX_TENSORS);
  if (n < 0) {
    snprintf(err, errlen, "checkpoint: too many arrays");
    return TRAIN_ERUN;
  }
  char path[4200], created[64], host[256] = "", hash[32];
  snprintf(path, sizeof(path), "%s/ckpt_%06lld.h5", o->run_dir, (long long)ts->iteration);
  iso_now(created, sizeof(created));
  gethostname(host, sizeof(host) - 1);
  snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)ts->config_hash);
  char* cfgtxt = config_text(&o->cfg);
  CkAttr attrs[] = {{"format", "adjoint checkpoint 1"}, {"created", created},     {"host", host},
                    {"run_dir", o->run_dir},            {"config", cfgtxt ? cfgtxt : ""},
                    {"config_hash", hash},              {"command", o->command ? o->command : ""}};
  int rc = ckpt_write(path, t, n, attrs, (int)(sizeof(attrs) / sizeof(attrs[0])), err, errlen);
  free(cfgtxt);
  return rc ? TRAIN_ERUN : TRAIN_OK;
}

// contacts and constraint rows dropped for lack of capacity, summed over worlds (the engine's cumulative counters)
static void overflow_totals(const EnvBatch* e, double* con, double* rows) {
  double c = 0, r = 0;
  for (int w = 0; w < e->nworld; w++) c += e->d->ncon_overflow[w], r += e->d->nefc_overflow[w];
  *con = c, *rows = r;
}

// ---- metrics.csv ----
static const char* const kTrainerCols[] = {"iteration",  "env_steps",       "return",           "episode_length",
                                           "episodes",   "nan_resets",      "reward_per_step",  "contact_overflow",
                                           "row_overflow"};
static const char* const kTimeCols[] = {"env_steps_per_s", "time_sim", "time_backward", "time_networks",
                                        "time_other", "time_iteration", "elapsed"};
#define NTR 9
#define NTIME 7

// Writes header, then (resume) the old file's rows with iteration <= keep, and opens the file for appending.
// best_ret / best_it (may be NULL): the kept row with the largest 4th column (evals.csv's return), -1 if none.
// last_col_elapsed: the kept rows' largest value of their last column (metrics.csv's elapsed), 0 if none.
static FILE* open_csv(const char* path, const char* header, int64_t keep, int resume, double* best_ret,
                      int64_t* best_it, double* last_col_elapsed, char* err, size_t errlen) {
  char tmp[4400];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE* out = fopen(tmp, "wb");
  if (!out) {
    snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
    return NULL;
  }
  fputs(header, out);
  if (best_it) *best_it = -1, *best_ret = -INFINITY;
  if (last_col_elapsed) *last_col_elapsed = 0;
  FILE* in = resume ? fopen(path, "rb") : NULL;
  if (in) {
    char* line = NULL;
    size_t cap = 0;
    int first = 1;
    while (getline(&line, &cap, in) > 0) {
      if (first) {
        first = 0;
        continue;
      }
      long long it;
      double el, r;
      if (sscanf(line, "%lld,", &it) != 1 || it > keep) continue;
      fputs(line, out);
      const char* last = strrchr(line, ',');
      double x;
      if (last_col_elapsed && last && sscanf(last + 1, "%lf", &x) == 1 && isfinite(x) && x > *last_col_elapsed)
        *last_col_elapsed = x;
      if (best_it && sscanf(line, "%lld,%*[^,],%lf,%lf", &it, &el, &r) == 3 && r > *best_ret) *best_ret = r, *best_it = it;
    }
    free(line);
    fclose(in);
  }
  fclose(out);
  if (rename(tmp, path)) {
    snprintf(err, errlen, "%s: rename failed: %s", path, strerror(errno));
    return NULL;
  }
  FILE* f = fopen(path, "ab");
  if (!f) snprintf(err, errlen, "%s: cannot append: %s", path, strerror(errno));
  return f;
}

static FILE* open_metrics(const char* path, const AlgoOps* ops, const EnvTaskInfo* ti, int64_t keep, int resume,
                          double* elapsed, char* err, size_t errlen) {
  char header[8192];
  size_t n = 0;
  for (int i = 0; i < NTR; i++) n += snprintf(header + n, sizeof(header) - n, "%s%s", i ? "," : "", kTrainerCols[i]);
  for (int i = 0; i < ops->n_metrics; i++) n += snprintf(header + n, sizeof(header) - n, ",%s", ops->metric_names[i]);
  for (int i = 0; i < ti->nmetric; i++) n += snprintf(header + n, sizeof(header) - n, ",%s", ti->metric_names[i]);
  for (int i = 0; i < NTIME; i++) n += snprintf(header + n, sizeof(header) - n, ",%s", kTimeCols[i]);
  snprintf(header + n, sizeof(header) - n, "\n");
  return open_csv(path, header, keep, resume, NULL, NULL, elapsed, err, errlen);
}

// ---- evaluation at checkpoints (run.eval_episodes) ----
// Each checkpoint's deterministic policy runs eval_episodes episodes on the CPU (reset draw TRAINER_SELECT_DRAW);
// a row goes to evals.csv and TensorBoard (eval/*), and the checkpoint with the highest mean return so far is
// copied to best.h5 (atomically). The training state is not touched: checkpoints are the same bits with it off.
typedef struct {
  FILE* csv;
  double best_ret;
  int64_t best_it;  // -1: none yet
  int nstat;
  const char* const* stat_names;
} EvalLog;

static int copy_file_atomic(const char* src, const char* dst, char* err, size_t errlen) {
  FILE* f = fopen(src, "rb");
  if (!f) return snprintf(err, errlen, "%s: cannot read: %s", src, strerror(errno)), TRAIN_ERUN;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = len > 0 ? (char*)malloc((size_t)len) : NULL;
  int ok = buf && fread(buf, 1, (size_t)len, f) == (size_t)len;
  fclose(f);
  int rc = ok ? nn_export_write_atomic(dst, buf, (size_t)len, err, errlen) : -1;
  if (!ok) snprintf(err, errlen, "%s: cannot read", src);
  free(buf);
  return rc ? TRAIN_ERUN : TRAIN_OK;
}

static int evals_open(EvalLog* ev, const TrainOptions* o, const EnvBatch* env, int64_t keep, char* err, size_t errlen) {
  ev->nstat = env->task->nstat <= 8 ? env->task->nstat : 8;
  ev->stat_names = env->task->stat_names;
  char header[2048], path[4200];
  size_t n = snprintf(header, sizeof(header), "iteration,env_steps,elapsed,return,return_std,episode_length,terminated");
  for (int i = 0; i < ev->nstat; i++) n += snprintf(header + n, sizeof(header) - n, ",%s", ev->stat_names[i]);
  snprintf(header + n, sizeof(header) - n, "\n");
  snprintf(path, sizeof(path), "%s/evals.csv", o->run_dir);
  ev->csv = open_csv(path, header, keep, o->resume, &ev->best_ret, &ev->best_it, NULL, err, errlen);
  return ev->csv ? TRAIN_OK : TRAIN_ERUN;
}

static int evals_checkpoint(EvalLog* ev, const TrainOptions* o, const TrainerState* ts, double start, TbWriter* tb,
                            char* err, size_t errlen) {
  char ck[4200], best[4200], msg[2048];
  snprintf(ck, sizeof(ck), "%s/ckpt_%06lld.h5", o->run_dir, (long long)ts->iteration);
  EvalResult r;
  int n = (int)o->cfg.run_eval_episodes;
  if (trainer_eval(ck, &o->cfg, n, TRAINER_SELECT_DRAW, &r, msg, sizeof(msg))) {
    snprintf(err, errlen, "evaluation of %s: %s", ck, msg);
    return TRAIN_ERUN;
  }
  double el = algo_now() - start, term = (double)r.terminated / n;
  fprintf(ev->csv, "%lld,%lld,%.9g,%.9g,%.9g,%.9g,%.9g", (long long)ts->iteration, (long long)ts->env_steps, el,
          r.return_mean, r.return_std, r.length_mean, term);
  for (int i = 0; i < ev->nstat; i++) fprintf(ev->csv, ",%.9g", i < r.nstat ? r.stat_mean[i] : NAN);
  fputc('\n', ev->csv);
  fflush(ev->csv);
  if (tb) {
    const char* tags[3 + 8] = {"eval/return", "eval/episode_length", "eval/terminated"};
    double v[3 + 8] = {r.return_mean, r.length_mean, term};
    char tagbuf[8][64];
    int nt = 3;
    for (int i = 0; i < r.nstat && i < 8; i++)
      if (isfinite(r.stat_mean[i])) {
        snprintf(tagbuf[i], 64, "eval/%s", r.stat_names[i]);
        tags[nt] = tagbuf[i], v[nt++] = r.stat_mean[i];
      }
    tb_scalars(tb, ts->iteration, tags, v, nt);
  }
  double score = r.return_mean == r.return_mean ? r.return_mean : -INFINITY;  // a NaN return never stays best
  int is_best = ev->best_it < 0 || score > ev->best_ret;
  if (is_best) {
    snprintf(best, sizeof(best), "%s/best.h5", o->run_dir);
    if (copy_file_atomic(ck, best, err, errlen)) return TRAIN_ERUN;
    ev->best_ret = score, ev->best_it = ts->iteration;
  }
  if (!o->quiet) {
    fprintf(stderr, "eval at iteration %lld: return %.4f, terminated %d/%d", (long long)ts->iteration, r.return_mean,
            r.terminated, n);
    for (int i = 0; i < r.nstat; i++) fprintf(stderr, ", %s %.4f", r.stat_names[i], r.stat_mean[i]);
    fprintf(stderr, "%s\n", is_best ? " [best.h5]" : "");
  }
  return TRAIN_OK;
}

// ---- motion evaluation (run.eval_motions; algo/motion_eval.h) ----
// The checkpoint's policy on a clip subset of the run's motion data, on the CPU; a row to motion_evals.csv
// (iteration, env_steps, elapsed: training time without any evaluation, clips, falls, normalized_return,
// mpkpe_mm, anchor_drift_m, eval_seconds) and TensorBoard (eval_motions/*). Reads only the checkpoint.
static int motion_evals_open(FILE** csv, const TrainOptions* o, int64_t keep, char* err, size_t errlen) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/motion_evals.csv", o->run_dir);
  *csv = open_csv(path, "iteration,env_steps,elapsed,clips,falls,normalized_return,mpkpe_mm,anchor_drift_m,"
                  "eval_seconds\n", keep, o->resume, NULL, NULL, NULL, err, errlen);
  return *csv ? TRAIN_OK : TRAIN_ERUN;
}

static int motion_evals_checkpoint(MotionEval* me, FILE* csv, const TrainOptions* o, const TrainerState* ts,
                                   double elapsed, TbWriter* tb, char* err, size_t errlen) {
  char ck[4200], msg[4096];
  snprintf(ck, sizeof(ck), "%s/ckpt_%06lld.h5", o->run_dir, (long long)ts->iteration);
  MotionEvalResult r;
  if (motion_eval_run(me, ck, 0, &r, msg, sizeof(msg))) {
    snprintf(err, errlen, "motion evaluation of %s: %s", ck, msg);
    return TRAIN_ERUN;
  }
  fprintf(csv, "%lld,%lld,%.9g,%d,%d,%.9g,%.9g,%.9g,%.6g\n", (long long)ts->iteration, (long long)ts->env_steps,
          elapsed, r.nclip, r.falls, r.norm_return, r.mpkpe_mm, r.drift_m, r.seconds);
  fflush(csv);
  if (tb) {
    const char* tags[5] = {"eval_motions/falls", "eval_motions/normalized_return", "eval_motions/mpkpe_mm",
                           "eval_motions/anchor_drift_m", "eval_motions/seconds"};
    double v[5] = {r.falls, r.norm_return, r.mpkpe_mm, r.drift_m, r.seconds};
    tb_scalars(tb, ts->iteration, tags, v, 5);
  }
  if (!o->quiet)
    fprintf(stderr, "motion eval at iteration %lld: falls %d/%d, normalized return %.4f, MPKPE %.1f mm, anchor drift "
            "%.3f m (%.1f s, not in elapsed)\n", (long long)ts->iteration, r.falls, r.nclip, r.norm_return,
            r.mpkpe_mm, r.drift_m, r.seconds);
  return TRAIN_OK;
}

static void fmt_duration(double s, char* buf, size_t len) {
  if (!(s >= 0) || s > 1e8) {
    snprintf(buf, len, "--");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60)
    snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(buf, len, "%lds", t);
}

// The algorithm's arrays after an iteration, through the checkpoint validation: a network, optimizer or
// normalizer gone non-finite stops the run before it is saved (TRAIN_ERUN naming the array).
static int check_state(const AlgoOps* ops, void* algo, const TrainerState* ts, const char* run_dir, char* err,
                       size_t errlen) {
  CkTensor t[MAX_TENSORS];
  int n = ops->state(algo, t, MAX_TENSORS, 0);
  char msg[1024], last[4200];
  if (n < 0 || !ckpt_validate("state", t, n, msg, sizeof(msg))) return TRAIN_OK;
  if (trainer_latest_checkpoint(run_dir, last, sizeof(last))) snprintf(last, sizeof(last), "none written");
  snprintf(err, errlen, "iteration %lld: the training state turned invalid (%s); stopped, the last checkpoint: %s",
           (long long)ts->iteration, msg + 7, last);
  return TRAIN_ERUN;
}

#define RESUME_CANDIDATES 64  // checkpoints tried by a resume, newest first

// Reads and validates one checkpoint into the run's state (config hash, every array, the iteration in its
// name): TRAIN_OK, or TRAIN_EUSER with the reason. A failed read may leave state partly overwritten: the
// caller reads another checkpoint over it (every array again) or stops.
static int resume_read(const char* ckpt, long file_it, const TrainOptions* o, TrainerState* ts, EnvBatch* env,
                       const AlgoOps* ops, void* algo, char* err, size_t errlen) {
  // the config hash first: a changed config.yaml would otherwise show up as shape errors
  int64_t stored_hash = 0, want = ts->config_hash;
  CkTensor h;
  ckpt_add(&h, 0, 1, "config_hash", CK_I64, &stored_hash, 1, 0);
  if (ckpt_read(ckpt, &h, 1, err, errlen)) return TRAIN_EUSER;
  if (stored_hash != want) {
    snprintf(err, errlen, "%s: config hash %016llx does not match %s/config.yaml (%016llx)", ckpt,
             (unsigned long long)stored_hash, o->run_dir, (unsigned long long)want);
    return TRAIN_EUSER;
  }
  CkTensor t[MAX_TENSORS];
  int n = all_tensors(ts, env, ops, algo, t, MAX_TENSORS);
  if (n < 0) return snprintf(err, errlen, "%s: too many arrays", ckpt), TRAIN_EUSER;
  if (ckpt_read_valid(ckpt, t, n, err, errlen)) {
    ts->config_hash = want;
    return TRAIN_EUSER;
  }
  if (ts->iteration != file_it) {
    snprintf(err, errlen, "%s: dataset 'trainer/iteration' holds %lld, the file name says %ld", ckpt,
             (long long)ts->iteration, file_it);
    return TRAIN_EUSER;
  }
  return TRAIN_OK;
}

int trainer_run(const TrainOptions* o, char* err, size_t errlen) {
  const Cfg* c = &o->cfg;
  const AlgoOps* ops = algo_find_device(c->algo_name, c->run_device, err, errlen);  // cpu, or cuda (algo_cuda.h)
  if (!ops) return TRAIN_EUSER;
  if (c->env_num_envs > TRAINER_MAX_ENVS) {  // the config key's range, which --num-envs also uses
    snprintf(err, errlen, "env.num_envs %lld is out of range [1, %d]", (long long)c->env_num_envs, TRAINER_MAX_ENVS);
    return TRAIN_EUSER;
  }
  char ckpt[4200] = "";
  if (o->resume) {
    if (trainer_latest_checkpoint(o->run_dir, ckpt, sizeof(ckpt))) {
      snprintf(err, errlen, "%s: no checkpoint (ckpt_*.h5) to resume from", o->run_dir);
      return TRAIN_EUSER;
    }
  } else {
    if (mkdir_p(o->run_dir)) {
      snprintf(err, errlen, "%s: cannot create the run directory: %s", o->run_dir, strerror(errno));
      return TRAIN_EUSER;
    }
    char probe[4200];
    if (!trainer_latest_checkpoint(o->run_dir, probe, sizeof(probe))) {
      snprintf(err, errlen, "%s: already holds checkpoints (use --resume %s, or another --run-dir)", o->run_dir,
               o->run_dir);
      return TRAIN_EUSER;
    }
  }
  // the run directory's files are replaced through temp + rename: only where none exists or a regular one does
  static const char* const kOutputs[] = {"config.yaml", "metrics.csv", "evals.csv", "best.h5", "motion_evals.csv"};
  char path[4200];
  for (int i = 0; i < 5; i++) {
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", o->run_dir, kOutputs[i]);
    if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
      snprintf(err, errlen, "%s: is not a regular file (a link, device, FIFO or directory): not replaced", path);
      return TRAIN_EUSER;
    }
  }
  char why[512] = "";  // an algorithm's message
  snprintf(path, sizeof(path), "%s/config.yaml", o->run_dir);
  if (cfg_save(c, path, err, errlen)) return TRAIN_ERUN;

  EnvBatch* env = NULL;
  if (env_create_params(&env, c->env_task, c->env_params, (int)c->env_num_envs, (int)c->env_episode_steps,
                        (uint64_t)c->run_seed, err, errlen))
    return TRAIN_EUSER;
  void* algo = NULL;
  if (ops->create(&algo, c, env, err, errlen)) {
    env_destroy(env);
    return TRAIN_EUSER;
  }
  if (!o->resume && c->env_random_start_step) env_randomize_episode_start(env);
  TrainerState ts = {0, 0, (int64_t)cfg_hash(c)};
  int rc = TRAIN_OK;
  FILE* metrics = NULL;
  TbWriter* tb = NULL;
  EvalLog ev = {NULL, 0, -1, 0, NULL};
  MotionEval* mev = NULL;
  FILE* mcsv = NULL;
  if (o->resume) {
    // the newest checkpoint that reads and validates; each one skipped is named with the reason
    long its[RESUME_CANDIDATES];
    int nck = list_checkpoints(o->run_dir, its, RESUME_CANDIDATES), found = 0;
    char why[9000] = "";
    for (int k = 0; k < nck && !found; k++) {
      snprintf(ckpt, sizeof(ckpt), "%s/ckpt_%06ld.h5", o->run_dir, its[k]);
      if (resume_read(ckpt, its[k], o, &ts, env, ops, algo, why, sizeof(why)) == TRAIN_OK) found = 1;
      else if (k + 1 < nck) fprintf(stderr, "resume: skipping %s: %s\n", ckpt, why);
    }
    if (!found) {
      if (nck > 1) snprintf(err, errlen, "%s: no checkpoint validates (the oldest tried: %s)", o->run_dir, why);
      else snprintf(err, errlen, "%s", why);
      rc = TRAIN_EUSER;
      goto done;
    }
    if (!o->quiet) fprintf(stderr, "resuming %s at iteration %lld\n", ckpt, (long long)ts.iteration);
  }
  // a device backend takes the host mirror's state (random start steps, or the checkpoint just read)
  if (ops->sync && ops->sync(algo, env, 0, why, sizeof why)) {
    snprintf(err, errlen, "%s (%s): cannot upload the run's state: %s", ops->name, c->run_device, why);
    rc = TRAIN_ERUN;
    goto done;
  }
  snprintf(path, sizeof(path), "%s/metrics.csv", o->run_dir);
  double elapsed0 = 0;  // a resumed run's elapsed continues from its last kept metrics row
  metrics = open_metrics(path, ops, &env->task->info, ts.iteration, o->resume, &elapsed0, err, errlen);
  if (!metrics) {
    rc = TRAIN_ERUN;
    goto done;
  }
  if (c->run_tensorboard && tb_open(&tb, o->run_dir, err, errlen)) {
    rc = TRAIN_ERUN;
    goto done;
  }
  if (c->run_eval_episodes > 0 && (rc = evals_open(&ev, o, env, ts.iteration, err, errlen))) goto done;
  if (c->run_eval_motions > 0) {  // the evaluation worlds, before the clock starts (the training worlds' motion data)
    rc = motion_eval_open(&mev, c, NULL, env, NULL, 0, (int)c->run_eval_motions, (int)c->run_eval_motion_steps, why,
                          sizeof why);
    if (!rc) rc = motion_eval_set_device(mev, c->run_eval_device, why, sizeof why);
    if (rc) {
      snprintf(err, errlen, "run.eval_motions: %s", why);
      goto done;
    }
    if ((rc = motion_evals_open(&mcsv, o, ts.iteration, err, errlen))) goto done;
  }

  // columns: the trainer's, the algorithm's metrics, the task's (EnvTaskInfo.metrics), the times
  const int NA = ops->n_metrics, NK = env->task->info.nmetric, NM = NA + NK;
  int ncol = NTR + NM + NTIME;
  const char* tags[NTR + ALGO_MAX_METRICS + ENV_MAX_TASK_METRICS + NTIME];
  char tagbuf[NTR + ALGO_MAX_METRICS + ENV_MAX_TASK_METRICS + NTIME][64];
  for (int i = 0; i < ncol; i++) {
    const char* nm = i < NTR ? kTrainerCols[i]
                     : i < NTR + NA ? ops->metric_names[i - NTR]
                     : i < NTR + NM ? env->task->info.metric_names[i - NTR - NA]
                                    : kTimeCols[i - NTR - NM];
    const char* grp = i < NTR ? "train" : i < NTR + NA ? c->algo_name : i < NTR + NM ? "task" : "perf";
    snprintf(tagbuf[i], 64, "%s/%s", grp, nm);
    tags[i] = tagbuf[i];
  }
  int64_t total = c->run_max_iterations, first = ts.iteration;
  double start = algo_now() - elapsed0;
  int64_t steps_per_it = c->env_num_envs * c->algo_horizon;
  while (ts.iteration < total) {
    double t0 = algo_now();
    double am[ALGO_MAX_METRICS] = {0};
    AlgoTimes tm = {0, 0, 0};
    int64_t nan_before = env->stats[1];
    double rew_before = env->reward_total, con_before, rows_before;
    if (ops->overflow) ops->overflow(algo, &con_before, &rows_before);
    else overflow_totals(env, &con_before, &rows_before);
    if (ops->iterate(algo, env, am, &tm, why, sizeof why)) {
      snprintf(err, errlen, "%s: iteration %lld failed: %s", ops->name, (long long)ts.iteration + 1, why);
      rc = TRAIN_ERUN;
      goto done;
    }
    ts.iteration++;
    ts.env_steps += steps_per_it;
    if (!ops->sync && (rc = check_state(ops, algo, &ts, o->run_dir, err, errlen))) goto done;
    double dt = algo_now() - t0;
    double ret, len;
    env_recent_stats(env, &ret, &len);
    double row[NTR + ALGO_MAX_METRICS + ENV_MAX_TASK_METRICS + NTIME];
    row[0] = (double)ts.iteration, row[1] = (double)ts.env_steps, row[2] = ret, row[3] = len;
    row[4] = (double)env->stats[0], row[5] = (double)(env->stats[1] - nan_before);
    row[6] = (env->reward_total - rew_before) / (double)steps_per_it;
    if (ops->overflow) ops->overflow(algo, &row[7], &row[8]);
    else overflow_totals(env, &row[7], &row[8]);
    row[7] -= con_before, row[8] -= rows_before;
    for (int i = 0; i < NA; i++) row[NTR + i] = am[i];
    env_task_metrics(env, row + NTR + NA);  // from the shared state (a device backend refreshed its mirror)
    double* tr = row + NTR + NM;
    tr[0] = steps_per_it / dt, tr[1] = tm.sim, tr[2] = tm.backward, tr[3] = tm.networks;
    tr[4] = dt - tm.sim - tm.backward - tm.networks, tr[5] = dt, tr[6] = algo_now() - start;
    fprintf(metrics, "%lld,%lld", (long long)ts.iteration, (long long)ts.env_steps);
    for (int i = 2; i < ncol; i++) fprintf(metrics, ",%.9g", row[i]);
    fputc('\n', metrics);
    fflush(metrics);
    if (tb) {  // finite values only (no return before the first finished episode)
      const char* ft[NTR + ALGO_MAX_METRICS + ENV_MAX_TASK_METRICS + NTIME];
      double fv[NTR + ALGO_MAX_METRICS + ENV_MAX_TASK_METRICS + NTIME];
      int nf = 0;
      for (int i = 1; i < ncol; i++)  // everything but the iteration (the event's step)
        if (isfinite(row[i])) ft[nf] = tags[i], fv[nf++] = row[i];
      tb_scalars(tb, ts.iteration, ft, fv, nf);
    }
    // a time budget ends the run here as max_iterations would: its checkpoint and evaluation follow
    if (c->run_max_seconds > 0 && tr[6] >= c->run_max_seconds) total = ts.iteration;
    int ck = (c->run_checkpoint_every > 0 && ts.iteration % c->run_checkpoint_every == 0) || ts.iteration == total;
    // the motion evaluation reads the policy from the checkpoint: an evaluated iteration writes one
    int mdue = mev && (c->run_eval_every > 0 ? ts.iteration % c->run_eval_every == 0 || ts.iteration == total : ck);
    ck |= mdue;
    if (ck && ops->sync && ops->sync(algo, env, 1, why, sizeof why)) {
      snprintf(err, errlen, "%s (%s): cannot download the run's state: %s", ops->name, c->run_device, why);
      rc = TRAIN_ERUN;
      goto done;
    }
    if (ck && ops->sync && (rc = check_state(ops, algo, &ts, o->run_dir, err, errlen))) goto done;
    if (ck && (rc = save_checkpoint(o, &ts, env, ops, algo, err, errlen))) goto done;
    if (!o->quiet) {
      double el = algo_now() - start;
      double eta = (el - elapsed0) / (double)(ts.iteration - first) * (double)(total - ts.iteration);
      char etab[32], elb[32];
      fmt_duration(eta, etab, sizeof(etab));
      fmt_duration(el, elb, sizeof(elb));
      if (o->progress_tty)
        fprintf(stderr, "\r[%lld/%lld] return %8.3f  len %6.1f  r/step %.4f  %7.0f steps/s  elapsed %s  ETA %s   ",
                (long long)ts.iteration, (long long)total, ret, len, row[6], tr[0], elb, etab);
      else
        fprintf(stderr, "iteration %lld/%lld env_steps %lld return %.4f episode_length %.1f reward_per_step %.4f "
                "steps/s %.0f ETA %s%s\n", (long long)ts.iteration, (long long)total, (long long)ts.env_steps, ret,
                len, row[6], tr[0], etab, ck ? " [checkpoint]" : "");
    }
    // after the progress line; evaluations are not training: their time is taken out of elapsed (start moves)
    double te = algo_now();
    if (ck && ev.csv && (rc = evals_checkpoint(&ev, o, &ts, start, tb, err, errlen))) goto done;
    if (mdue && (rc = motion_evals_checkpoint(mev, mcsv, o, &ts, te - start, tb, err, errlen))) goto done;
    start += algo_now() - te;
  }
  if (!o->quiet && o->progress_tty) fputc('\n', stderr);
  if (!o->quiet && first >= total)
    fprintf(stderr, "run already at iteration %lld of %lld: nothing to do\n", (long long)first, (long long)total);
  if (!o->quiet && ev.best_it >= 0)
    fprintf(stderr, "best evaluation: iteration %lld, return %.4f: %s/best.h5\n", (long long)ev.best_it, ev.best_ret,
            o->run_dir);
done:
  if (metrics) fclose(metrics);
  if (ev.csv) fclose(ev.csv);
  if (mcsv) fclose(mcsv);
  motion_eval_close(mev);
  tb_close(tb);
  ops->destroy(algo);
  env_destroy(env);
  return rc;
}

// ---- evaluation ----
// The trainer's deterministic policy rebuilt on the CPU for n worlds (env reset streams from seed) with the
// checkpoint's policy state: TRAIN_OK, or TRAIN_EUSER with a message (nothing left open).
typedef struct {
  const AlgoOps* ops;
  EnvBatch* env;
  void* algo;
} EvalPolicy;

int trainer_policy_load(const char* checkpoint, const Cfg* cfg, EnvBatch* env, const AlgoOps** ops, void** algo,
                        char* err, size_t errlen) {
  Cfg c = *cfg;
  int made = !*algo;
  if (made) {
    if (!(*ops = algo_find(c.algo_name, err, errlen))) return TRAIN_EUSER;
    c.env_num_envs = env->nworld;
    c.ppo_minibatches = 1;  // no updates here: any rollout batch size is fine
    if ((*ops)->create(algo, &c, env, err, errlen)) return *algo = NULL, TRAIN_EUSER;
  }
  CkTensor t[MAX_TENSORS];
  int nt = (*ops)->state(*algo, t, MAX_TENSORS, 1);
  if (nt >= 0 && !ckpt_read_valid(checkpoint, t, nt, err, errlen)) return TRAIN_OK;
  if (nt < 0) snprintf(err, errlen, "%s: too many arrays", checkpoint);
  if (made) (*ops)->destroy(*algo), *algo = NULL;
  return TRAIN_EUSER;
}

static int eval_policy_open(EvalPolicy* p, const char* checkpoint, const Cfg* cfg, int n, uint64_t seed, char* err,
                            size_t errlen) {
  memset(p, 0, sizeof(*p));  // p->algo NULL: trainer_policy_load creates it
  if (env_create_params(&p->env, cfg->env_task, cfg->env_params, n, (int)cfg->env_episode_steps, seed, err, errlen))
    return TRAIN_EUSER;
  if (!trainer_policy_load(checkpoint, cfg, p->env, &p->ops, &p->algo, err, errlen)) return TRAIN_OK;
  env_destroy(p->env);
  return TRAIN_EUSER;
}

static void eval_policy_close(EvalPolicy* p) {
  p->ops->destroy(p->algo);
  env_destroy(p->env);
}

int trainer_policy_actions(const char* checkpoint, const Cfg* cfg, const float* obs, int n, float* act, char* err,
                           size_t errlen) {
  EvalPolicy p;
  if (eval_policy_open(&p, checkpoint, cfg, n, (uint64_t)cfg->run_seed, err, errlen)) return TRAIN_EUSER;
  int rc = p.ops->act_eval(p.algo, obs, n, act) ? TRAIN_ERUN : TRAIN_OK;
  eval_policy_close(&p);
  return rc;
}

int trainer_checkpoint_config(const char* checkpoint, Cfg* c, char* err, size_t errlen) {
  size_t cap = 1 << 20;
  char* text = (char*)malloc(cap);
  if (!text) return snprintf(err, errlen, "out of memory"), CKPT_EIO;
  int rc = ckpt_read_attr(checkpoint, "config", text, cap);
  if (rc) {
    free(text);
    if (rc != CKPT_EMISSING)
      snprintf(err, errlen, "%s: cannot read its stored config (a corrupt or truncated checkpoint)", checkpoint);
    return rc;
  }
  char msg[1024];
  if (cfg_defaults(c, msg, sizeof(msg)) || cfg_load_yaml_text(c, text, checkpoint, msg, sizeof(msg))) {
    snprintf(err, errlen, "%s: the stored config is invalid: %s", checkpoint, msg);
    rc = CKPT_EFORMAT;
  }
  free(text);
  return rc;
}

int trainer_eval(const char* checkpoint, const Cfg* cfg, int episodes, int draw, EvalResult* out, char* err,
                 size_t errlen) {
  memset(out, 0, sizeof(*out));
  EvalPolicy p;
  // evaluation episodes use their own reset noise (not the training worlds'); draw 0 keeps the seed of before
  uint64_t seed = ((uint64_t)cfg->run_seed ^ 0x5EEDE7A1ULL) + (uint64_t)draw * 0x9E3779B97F4A7C15ULL;
  if (eval_policy_open(&p, checkpoint, cfg, episodes, seed, err, errlen)) return TRAIN_EUSER;
  const AlgoOps* ops = p.ops;
  EnvBatch* env = p.env;
  void* algo = p.algo;
  int N = episodes, A = env->act_dim;
  float* act = (float*)malloc(sizeof(float) * (size_t)N * A);
  double* ret = (double*)calloc((size_t)N, sizeof(double));
  int* len = (int*)calloc((size_t)N, sizeof(int));
  uint8_t* fin = (uint8_t*)calloc((size_t)N, 1);
  int left = N;
  double ssum[8] = {0}, ssum2[8] = {0};
  int scount[8] = {0};
  out->nstat = env->final_stats && env->task->nstat <= 8 ? env->task->nstat : 0;
  while (left > 0) {
    ops->act_eval(algo, env->obs, N, act);
    env_step(env, act);
    for (int w = 0; w < N; w++) {
      if (fin[w]) continue;
      ret[w] += env->reward[w];
      len[w]++;
      if (env->terminated[w] || env->truncated[w]) {
        fin[w] = 1, left--;
        out->terminated += env->terminated[w];
        for (int i = 0; i < out->nstat; i++) {
          double v = env->final_stats[(size_t)w * out->nstat + i];
          if (v == v) ssum[i] += v, ssum2[i] += v * v, scount[i]++;
        }
      }
    }
  }
  for (int i = 0; i < out->nstat; i++) {
    out->stat_names[i] = env->task->stat_names[i];
    out->stat_mean[i] = scount[i] ? ssum[i] / scount[i] : NAN;
    out->stat_std[i] = scount[i] ? sqrt(fmax(0, ssum2[i] / scount[i] - out->stat_mean[i] * out->stat_mean[i])) : NAN;
  }
  double rs = 0, rs2 = 0, ls = 0, ls2 = 0;
  for (int w = 0; w < N; w++) rs += ret[w], rs2 += ret[w] * ret[w], ls += len[w], ls2 += (double)len[w] * len[w];
  out->episodes = N;
  out->return_mean = rs / N, out->length_mean = ls / N;
  out->return_std = sqrt(fmax(0, rs2 / N - out->return_mean * out->return_mean));
  out->length_std = sqrt(fmax(0, ls2 / N - out->length_mean * out->length_mean));
  out->nan_resets = env->stats[1];
  free(act), free(ret), free(len), free(fin);
  eval_policy_close(&p);
  return TRAIN_OK;
}
