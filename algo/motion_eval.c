// motion_eval.c: a policy on a motion-tracking task's clips (motion_eval.h).
#define _GNU_SOURCE  // open_memstream
#include "algo/motion_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/ckpt.h"
#include "algo/trainer.h"
#include "envs/env.h"
#ifdef ADJ_HAVE_CUDA
#include "sim/cuda/sim_cuda.h"
// algo/motion_eval_cuda.cu: the control steps on the CUDA environment, the state after each back in the batch
int motion_eval_cuda_open(void** out, const EnvBatch* e, char* err, size_t errlen);
int motion_eval_cuda_step(void* c, EnvBatch* e, const float* act, char* err, size_t errlen);
void motion_eval_cuda_close(void* c);
#endif

struct MotionEval {
  Cfg cfg;
  EnvBatch* lib;  // one world: owns the task data (the clip table, names)
  EnvBatch* env;  // one world per evaluated clip, sharing lib's data
  const EnvTaskEval* ev;
  const AlgoOps* ops;
  void* algo;     // built at the first run, its policy re-read from each checkpoint
  int n, max_steps, nq;
  int* clip;      // (n) library clip of each world
  int* steps;     // (n) control steps scored
  size_t* row0;   // (n) first trajectory row of each world (steps + 1 rows each)
  float *traj_q, *traj_r;  // (rows, nq) robot and reference qpos; NULL until a recorded run
  int recorded;
  int cuda;       // the physics on the CUDA environment (motion_eval_set_device)
  MotionClipEval* res;
  float* act;
};

int motion_eval_set_device(MotionEval* me, const char* device, char* err, size_t errlen) {
  me->cuda = 0;
  if (!strcmp(device, "cpu")) return TRAIN_OK;
  if (strcmp(device, "cuda")) return snprintf(err, errlen, "device '%s': unknown backend (cpu|cuda)", device), TRAIN_EUSER;
#ifdef ADJ_HAVE_CUDA
  if (simcuda_device_count() < 1) return snprintf(err, errlen, "device cuda: no CUDA device found"), TRAIN_EUSER;
  me->cuda = 1;
  return TRAIN_OK;
#else
  snprintf(err, errlen, "device cuda: this build has no CUDA backend (nvcc was not found at configure time)");
  return TRAIN_EUSER;
#endif
}

int motion_eval_library_size(const MotionEval* me) { return me->ev->nclip(me->lib->data); }
const char* motion_eval_library_clip(const MotionEval* me, int clip) { return me->ev->clip_name(me->lib->data, clip); }

void motion_eval_close(MotionEval* me) {
  if (!me) return;
  if (me->algo) me->ops->destroy(me->algo);
  env_destroy(me->env);
  env_destroy(me->lib);
  free(me->clip), free(me->steps), free(me->row0), free(me->traj_q), free(me->traj_r), free(me->res), free(me->act);
  free(me);
}

int motion_eval_open(MotionEval** out, const Cfg* c, const char* motions, const EnvBatch* like,
                     const char* const* names, int nnames, int subset, int max_steps, char* err, size_t errlen) {
  *out = NULL;
  const EnvTask* tk = env_find_task(c->env_task);
  if (!tk) return snprintf(err, errlen, "unknown task '%s'", c->env_task), TRAIN_EUSER;
  const EnvTaskEval* ev = tk->info.eval;
  if (!ev) {
    snprintf(err, errlen, "task %s tracks no reference motions: motion evaluation applies to motion-tracking tasks "
             "(g1_tracking)", c->env_task);
    return TRAIN_EUSER;
  }
  if (motions && (!*motions || strcspn(motions, ",; \t\n") != strlen(motions) || strlen(motions) >= ENV_STR_MAX)) {
    snprintf(err, errlen, "motions '%s': an empty path, one with a comma, semicolon or blank, or one of %d bytes or "
             "more cannot be passed to the task", motions, ENV_STR_MAX);
    return TRAIN_EUSER;
  }
  MotionEval* me = (MotionEval*)calloc(1, sizeof(MotionEval));
  if (!me) return snprintf(err, errlen, "out of memory"), TRAIN_ERUN;
  me->cfg = *c, me->ev = ev, me->max_steps = max_steps;
  size_t plen = strlen(c->env_params) + strlen(ev->params) + (motions ? strlen(motions) : 0) + 64;
  char* params = (char*)malloc(plen);
  if (!params) return motion_eval_close(me), snprintf(err, errlen, "out of memory"), TRAIN_ERUN;
  snprintf(params, plen, "%s, %s%s%s%s%s", c->env_params, ev->params, motions ? ", " : "", motions ? ev->motion_key : "",
           motions ? "=" : "", motions ? motions : "");
  int rc = like && !motions ? env_create_like(&me->lib, like, params, 1, 0, (uint64_t)c->run_seed, err, errlen)
                            : env_create_params(&me->lib, c->env_task, params, 1, 0, (uint64_t)c->run_seed, err, errlen);
  free(params);
  if (rc) return motion_eval_close(me), TRAIN_EUSER;
  int nlib = ev->nclip(me->lib->data);
  int n = nnames > 0 ? nnames : (subset > 0 && subset < nlib ? subset : nlib);
  me->n = n, me->nq = me->lib->m->nq;
  me->clip = (int*)calloc((size_t)n, sizeof(int));
  me->steps = (int*)calloc((size_t)n, sizeof(int));
  me->row0 = (size_t*)calloc((size_t)n + 1, sizeof(size_t));
  me->res = (MotionClipEval*)calloc((size_t)n, sizeof(MotionClipEval));
  me->act = (float*)calloc((size_t)n * me->lib->act_dim, sizeof(float));
  if (!me->clip || !me->steps || !me->row0 || !me->res || !me->act)
    return motion_eval_close(me), snprintf(err, errlen, "out of memory"), TRAIN_ERUN;
  for (int w = 0; w < n; w++) {
    if (nnames > 0) {
      int k = -1;
      for (int i = 0; i < nlib && k < 0; i++)
        if (!strcmp(names[w], ev->clip_name(me->lib->data, i))) k = i;
      if (k < 0) {
        size_t o = (size_t)snprintf(err, errlen, "clip '%s' is not in the motion data (clips:", names[w]);
        for (int i = 0; i < nlib && o < errlen; i++)
          o += (size_t)snprintf(err + o, errlen - o, " %s", ev->clip_name(me->lib->data, i));
        if (o < errlen) snprintf(err + o, errlen - o, ")");
        return motion_eval_close(me), TRAIN_EUSER;
      }
      for (int v = 0; v < w; v++)
        if (me->clip[v] == k) return motion_eval_close(me), snprintf(err, errlen, "clip '%s' named twice", names[w]),
                                     TRAIN_EUSER;
      me->clip[w] = k;
    } else {
      me->clip[w] = (int)((long long)w * nlib / n);  // evenly spaced (every clip when n = nlib)
    }
    int T = ev->clip_steps(me->lib->data, me->clip[w]);
    me->steps[w] = max_steps > 0 && max_steps < T ? max_steps : T;
    me->row0[w + 1] = me->row0[w] + (size_t)me->steps[w] + 1;
    snprintf(me->res[w].name, MOTION_EVAL_NAME, "%s", ev->clip_name(me->lib->data, me->clip[w]));
  }
  int maxT = 0;
  for (int w = 0; w < n; w++) maxT = me->steps[w] > maxT ? me->steps[w] : maxT;
  if (env_create_like(&me->env, me->lib, NULL, n, maxT + 1, (uint64_t)c->run_seed, err, errlen))
    return motion_eval_close(me), TRAIN_EUSER;
  me->env->hold = 1;
  *out = me;
  return TRAIN_OK;
}

// world w's robot and reference qpos into trajectory row r
static void record_row(MotionEval* me, int w, size_t r) {
  EnvBatch* e = me->env;
  EnvTaskCtx c;
  env_task_ctx(e, w, &c);
  SimWorld wd;
  sim_world(e->m, e->d, w, &wd);
  memcpy(me->traj_q + r * me->nq, wd.qpos, sizeof(float) * (size_t)me->nq);
  me->ev->ref_qpos(e->m, e->d, w, &c, me->traj_r + r * me->nq);
}

int motion_eval_run(MotionEval* me, const char* checkpoint, int record, MotionEvalResult* out, char* err,
                    size_t errlen) {
  memset(out, 0, sizeof(*out));
  double t0 = algo_now();
  EnvBatch* e = me->env;
  if (trainer_policy_load(checkpoint, &me->cfg, e, &me->ops, &me->algo, err, errlen)) return TRAIN_EUSER;
  size_t rows = me->row0[me->n];
  me->recorded = 0;
  if (record && !me->traj_q) {
    me->traj_q = (float*)malloc(sizeof(float) * rows * me->nq);
    me->traj_r = (float*)malloc(sizeof(float) * rows * me->nq);
    if (!me->traj_q || !me->traj_r) {
      free(me->traj_q), free(me->traj_r), me->traj_q = me->traj_r = NULL;
      return snprintf(err, errlen, "out of memory (trajectories of %zu steps)", rows), TRAIN_ERUN;
    }
  }
  env_eval_start(e, me->clip);
  int N = me->n, maxT = 0;
  void* cu = NULL;  // the CUDA environment, with me->cuda
#ifdef ADJ_HAVE_CUDA
  if (me->cuda && motion_eval_cuda_open(&cu, e, err, errlen)) return TRAIN_ERUN;
#endif
  double* sum = (double*)calloc((size_t)N * 3, sizeof(double));
  if (!sum) {
#ifdef ADJ_HAVE_CUDA
    motion_eval_cuda_close(cu);
#endif
    return snprintf(err, errlen, "out of memory"), TRAIN_ERUN;
  }
  int rc = TRAIN_OK;
  for (int w = 0; w < N; w++) {
    MotionClipEval* r = &me->res[w];
    r->steps = me->steps[w], r->fall_step = 0, r->fall_time = NAN;
    maxT = me->steps[w] > maxT ? me->steps[w] : maxT;
    if (record) record_row(me, w, me->row0[w]);
  }
  for (int t = 1; t <= maxT && !rc; t++) {
    if (me->ops->act_eval(me->algo, e->obs, N, me->act)) {
      snprintf(err, errlen, "%s: the policy failed at step %d", checkpoint, t);
      rc = TRAIN_ERUN;
      break;
    }
#ifdef ADJ_HAVE_CUDA
    if (cu && motion_eval_cuda_step(cu, e, me->act, err, errlen)) {
      rc = TRAIN_ERUN;
      break;
    }
#endif
    if (!cu) env_step(e, me->act);
    for (int w = 0; w < N; w++) {
      if (t > me->steps[w]) continue;
      MotionClipEval* r = &me->res[w];
      if (!r->fall_step) {
        EnvTaskCtx c;
        env_task_ctx(e, w, &c);
        double s[3];
        me->ev->step(e->m, e->d, w, &c, s);
        for (int i = 0; i < 3; i++) sum[3 * w + i] += s[i];
        if (e->terminated[w]) r->fall_step = t, r->fall_time = t * (double)e->m->timestep * e->task->info.frame_skip;
      }
      if (record) record_row(me, w, me->row0[w] + (size_t)t);
    }
  }
#ifdef ADJ_HAVE_CUDA
  motion_eval_cuda_close(cu);
#endif
  if (rc) {
    free(sum);
    return rc;
  }
  out->nclip = N, out->clip = me->res;
  out->dt = (double)e->m->timestep * e->task->info.frame_skip;
  for (int w = 0; w < N; w++) {
    MotionClipEval* r = &me->res[w];
    int scored = r->fall_step ? r->fall_step : r->steps;  // steps up to the fall, or all of them
    r->norm_return = sum[3 * w] / r->steps;
    r->mpkpe_mm = 1000 * sum[3 * w + 1] / scored;
    r->drift_m = sum[3 * w + 2] / scored;
    out->falls += r->fall_step > 0;
    out->norm_return += r->norm_return / N, out->mpkpe_mm += r->mpkpe_mm / N, out->drift_m += r->drift_m / N;
  }
  free(sum);
  me->recorded = record;
  out->seconds = algo_now() - t0;
  return TRAIN_OK;
}

int motion_eval_write_trajectory(const MotionEval* me, const char* path, const char* checkpoint, char* err,
                                 size_t errlen) {
  if (!me->recorded) return snprintf(err, errlen, "%s: no recorded run", path), TRAIN_ERUN;
  int n = me->n, max = 3 * n + 1;
  CkTensor* t = (CkTensor*)calloc((size_t)max, sizeof(CkTensor));
  int32_t* fall = (int32_t*)calloc((size_t)n, sizeof(int32_t));
  char* clips = NULL;
  size_t clen = 0;
  FILE* cf = open_memstream(&clips, &clen);
  if (!t || !fall || !cf) {
    free(t), free(fall);
    if (cf) fclose(cf), free(clips);
    return snprintf(err, errlen, "out of memory"), TRAIN_ERUN;
  }
  double dt = (double)me->env->m->timestep * me->env->task->info.frame_skip;
  int k = ckpt_add(t, 0, max, "dt", CK_F64, &dt, 1, 0);
  char nm[MOTION_EVAL_NAME + 16];
  for (int w = 0; w < n; w++) {
    const char* name = me->res[w].name;
    size_t rows = (size_t)me->steps[w] + 1;
    fall[w] = me->res[w].fall_step;
    fprintf(cf, "%s\n", name);
    // CkTensor names hold 63 bytes: a longer clip name is cut (the `clips` attribute keeps it whole)
    snprintf(nm, sizeof(nm), "%.50s/qpos", name);
    k = ckpt_add(t, k, max, nm, CK_F32, me->traj_q + me->row0[w] * me->nq, (int64_t)rows, me->nq);
    snprintf(nm, sizeof(nm), "%.50s/ref_qpos", name);
    k = ckpt_add(t, k, max, nm, CK_F32, me->traj_r + me->row0[w] * me->nq, (int64_t)rows, me->nq);
    snprintf(nm, sizeof(nm), "%.50s/fall_step", name);
    k = ckpt_add(t, k, max, nm, CK_I32, fall + w, 1, 0);
  }
  fclose(cf);
  CkAttr attrs[] = {{"format", "adjoint trajectory 1"},
                    {"checkpoint", checkpoint},
                    {"model", me->env->task->info.model},
                    {"clips", clips ? clips : ""}};
  int rc = k < 0 ? CKPT_EARG : ckpt_write(path, t, k, attrs, 4, err, errlen);
  if (k < 0) snprintf(err, errlen, "%s: too many datasets", path);
  free(t), free(fall), free(clips);
  return rc ? TRAIN_ERUN : TRAIN_OK;
}
