// env.c: task registry and the batched environment on the CPU backend (see env.h).
#include "envs/env.h"

#include "sim/sim_adjoint.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_tasks.h"  // ENV_TASK_LIST(X), ENV_TASK_NAMES: generated from envs/tasks.list

#define ENV_TASK_EXTERN_(task) extern const EnvTask env_task_##task;
ENV_TASK_LIST(ENV_TASK_EXTERN_)
#define ENV_TASK_ROW_(task) &env_task_##task,
static const EnvTask* const kTasks[] = {ENV_TASK_LIST(ENV_TASK_ROW_)};
#define NTASKS ((int)(sizeof(kTasks) / sizeof(kTasks[0])))

const EnvTask* env_find_task(const char* name) {
  for (int i = 0; i < NTASKS; i++)
    if (!strcmp(kTasks[i]->info.name, name)) return kTasks[i];
  return NULL;
}

const char* env_task_names(void) { return ENV_TASK_NAMES; }

void env_task_ctx(const EnvBatch* e, int w, EnvTaskCtx* c) {
  c->p = e->param, c->data = e->data, c->s = e->state, c->ds = NULL, c->w = w;
  c->g = e->task->info.nshared ? e->shared : NULL;
}

size_t env_shared_bytes(const EnvBatch* e, int k) {
  return (size_t)e->shared_count[k] * (e->task->info.shared[k].is_int ? 4 : 8);
}

void env_shared_update(EnvBatch* e, const int32_t* report) {
  const EnvTaskInfo* in = &e->task->info;
  if (!in->nshared || !in->shared_fns) return;
  EnvTaskCtx c;
  env_task_ctx(e, 0, &c);
  c.s = NULL;  // no world
  in->shared_fns->update(e->m, &c, report, e->nworld);
}

void env_task_metrics(const EnvBatch* e, double* out) {
  const EnvTaskInfo* in = &e->task->info;
  if (in->nmetric > 0 && in->metrics) in->metrics(e->param, e->data, e->shared, out);
}

size_t env_state_row_bytes(const EnvTask* tk, int k) { return (size_t)tk->info.state[k].count * 4; }

static void reset_world(EnvBatch* e, int w) {
  sim_reset(e->m, e->d, w, -1);
  for (int k = 0; k < e->task->info.nstate; k++) {  // the task's state starts at zero, then its reset
    size_t rb = env_state_row_bytes(e->task, k);
    memset((char*)e->state[k] + (size_t)w * rb, 0, rb);
  }
  EnvTaskCtx c;
  env_task_ctx(e, w, &c);
  e->task->reset(e->m, e->d, w, &c, &e->rng[w]);
  e->t[w] = 0;
  e->ep_return[w] = 0;
}

// task constants: defaults, then "name=value" items separated by commas, semicolons or blanks; numbers
// within the table's bounds, strings up to ENV_STR_MAX - 1 bytes
static int parse_task_params(const EnvTask* tk, const char* spec, double* p, char (*str)[ENV_STR_MAX], char* err,
                             size_t errlen) {
  const EnvTaskInfo* in = &tk->info;
  if (in->nparam < 0 || in->nparam > ENV_MAX_PARAMS || in->nstr < 0 || in->nstr > ENV_MAX_STRS || in->nstate < 0 ||
      in->nstate > ENV_MAX_STATE || in->nshared < 0 || in->nshared > ENV_MAX_SHARED || in->nmetric < 0 ||
      in->nmetric > ENV_MAX_TASK_METRICS || (in->nshared && (!in->shared_size || !in->shared_fns))) {
    snprintf(err, errlen, "task %s: %d constants, %d strings, %d state fields, %d shared fields, %d metrics (at most "
             "%d, %d, %d, %d, %d; shared fields need their size and functions)", in->name, in->nparam, in->nstr,
             in->nstate, in->nshared, in->nmetric, ENV_MAX_PARAMS, ENV_MAX_STRS, ENV_MAX_STATE, ENV_MAX_SHARED,
             ENV_MAX_TASK_METRICS);
    return -1;
  }
  for (int i = 0; i < ENV_MAX_PARAMS; i++) p[i] = i < in->nparam ? in->params[i].def : 0;
  for (int i = 0; i < ENV_MAX_STRS; i++) snprintf(str[i], ENV_STR_MAX, "%s", i < in->nstr ? in->strs[i].def : "");
  const char* s = spec ? spec : "";
  while (*s) {
    while (*s == ',' || *s == ';' || isspace((unsigned char)*s)) s++;
    if (!*s) break;
    const char* e = s;
    while (*e && *e != ',' && *e != ';' && !isspace((unsigned char)*e)) e++;
    char item[ENV_STR_MAX + 64];
    size_t n = (size_t)(e - s);
    if (n >= sizeof(item)) {  // refused, not cut: a cut number would be read as another value
      snprintf(err, errlen, "env.params: item '%.40s...' is longer than %zu characters", s, sizeof(item) - 1);
      return -1;
    }
    memcpy(item, s, n);
    item[n] = 0;
    char* eq = strchr(item, '=');
    if (!eq) {
      snprintf(err, errlen, "env.params: '%s' is not name=value", item);
      return -1;
    }
    *eq = 0;
    int k = -1, ks = -1;
    for (int i = 0; i < in->nparam; i++)
      if (!strcmp(in->params[i].name, item)) k = i;
    for (int i = 0; i < in->nstr; i++)
      if (!strcmp(in->strs[i].name, item)) ks = i;
    if (k < 0 && ks < 0) {
      char known[1024] = "";
      for (int i = 0; i < in->nparam + in->nstr; i++)
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
                 i < in->nparam ? in->params[i].name : in->strs[i - in->nparam].name);
      snprintf(err, errlen, "env.params: task %s has no parameter '%s' (known: %s)", in->name, item,
               in->nparam + in->nstr ? known : "none");
      return -1;
    }
    if (ks >= 0) {
      if (strlen(eq + 1) >= ENV_STR_MAX) {
        snprintf(err, errlen, "env.params: %s: longer than %d bytes", item, ENV_STR_MAX - 1);
        return -1;
      }
      snprintf(str[ks], ENV_STR_MAX, "%s", eq + 1);
      s = e;
      continue;
    }
    char* end = NULL;
    double v = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || !isfinite(v)) {
      snprintf(err, errlen, "env.params: %s: '%s' is not a finite number", item, eq + 1);
      return -1;
    }
    if (!(v >= in->params[k].lo && v <= in->params[k].hi)) {
      snprintf(err, errlen, "env.params: %s = %g is outside [%g, %g]", item, v, in->params[k].lo, in->params[k].hi);
      return -1;
    }
    p[k] = v;
    s = e;
  }
  return 0;
}

static int obs_dim_under(const EnvTask* tk, const double* p) {
  return tk->info.obs_dim_of ? tk->info.obs_dim_of(p) : tk->info.obs_dim;
}

int env_task_obs_dim(const EnvTask* tk, const char* params, char* err, size_t errlen) {
  double p[ENV_MAX_PARAMS];
  char str[ENV_MAX_STRS][ENV_STR_MAX];
  if (parse_task_params(tk, params, p, str, err, errlen)) return -1;
  return obs_dim_under(tk, p);
}

int env_task_constants(const EnvTask* tk, const char* params, double* p, char* err, size_t errlen) {
  char str[ENV_MAX_STRS][ENV_STR_MAX];
  return parse_task_params(tk, params, p, str, err, errlen);
}

int env_create(EnvBatch** out, const char* task, int nworld, int episode_steps, uint64_t seed, char* err,
               size_t errlen) {
  return env_create_params(out, task, NULL, nworld, episode_steps, seed, err, errlen);
}

int env_create_params(EnvBatch** out, const char* task, const char* params, int nworld, int episode_steps,
                      uint64_t seed, char* err, size_t errlen) {
  *out = NULL;
  const EnvTask* tk = env_find_task(task);
  if (!tk) {
    snprintf(err, errlen, "unknown task '%s' (available: %s)", task, env_task_names());
    return -1;
  }
  return env_create_task(out, tk, params, nworld, episode_steps, seed, err, errlen);
}

// the observation of a freshly reset world, zeroed where it is not finite and counted as a non-finite reset (as
// a step's is): the policy and the normalizer never see a NaN, even from a task whose reset state is bad
static int observe_world(EnvBatch* e, int w, const EnvTaskCtx* c, int check);
static void observe_reset(EnvBatch* e, int w) {
  EnvTaskCtx c;
  env_task_ctx(e, w, &c);
  if (!observe_world(e, w, &c, 1)) e->stats[1]++, e->nan_last++;
}

static int create_task(EnvBatch** out, const EnvTask* tk, const char* params, int nworld, int episode_steps,
                       uint64_t seed, const EnvBatch* like, char* err, size_t errlen);
int env_create_task(EnvBatch** out, const EnvTask* tk, const char* params, int nworld, int episode_steps,
                    uint64_t seed, char* err, size_t errlen) {
  return create_task(out, tk, params, nworld, episode_steps, seed, NULL, err, errlen);
}
int env_create_like(EnvBatch** out, const EnvBatch* like, const char* params, int nworld, int episode_steps,
                    uint64_t seed, char* err, size_t errlen) {
  return create_task(out, like->task, params, nworld, episode_steps, seed, like, err, errlen);
}

static int create_task(EnvBatch** out, const EnvTask* tk, const char* params, int nworld, int episode_steps,
                       uint64_t seed, const EnvBatch* like, char* err, size_t errlen) {
  *out = NULL;
  const char* task = tk->info.name;
  if (tk->nstat < 0 || tk->nstat > ENV_MAX_STATS) {
    snprintf(err, errlen, "task %s: %d episode statistics (at most %d)", task, tk->nstat, ENV_MAX_STATS);
    return -1;
  }
  if (nworld < 1) {
    snprintf(err, errlen, "env: nworld must be >= 1");
    return -1;
  }
  double tparam[ENV_MAX_PARAMS];
  char tstr[ENV_MAX_STRS][ENV_STR_MAX];
  if (like && !params) {
    memcpy(tparam, like->param, sizeof(tparam));
    memcpy(tstr, like->str, sizeof(tstr));
  } else if (parse_task_params(tk, params, tparam, tstr, err, errlen)) {
    return -1;
  }
  for (int i = 0; like && i < tk->info.nstr; i++)
    if (strcmp(tstr[i], like->str[i])) {
      snprintf(err, errlen, "task %s: string constant %d is '%s' where the shared task data has '%s'", task, i,
               tstr[i], like->str[i]);
      return -1;
    }
  if (obs_dim_under(tk, tparam) < 1) {
    snprintf(err, errlen, "task %s: observation size %d under env.params", task, obs_dim_under(tk, tparam));
    return -1;
  }
  if (tk->info.critic && (tk->info.critic_obs_dim < 1 || !tk->info.critic->observe || !tk->info.critic->observe_vjp)) {
    snprintf(err, errlen, "task %s: critic observation of size %d without its functions", task,
             tk->info.critic_obs_dim);
    return -1;
  }
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = tk->info.disable_add;
  char msg[2048];
  if (tk->info.load_options && tk->info.load_options(tparam, &opt, msg, sizeof(msg))) {
    snprintf(err, errlen, "task %s: env.params: %s", task, msg);
    return -1;
  }
  void* mj = NULL;
  if (sim_load_mjcf(tk->info.model, &opt, &mj, msg, sizeof(msg))) {
    snprintf(err, errlen, "task %s: %s", task, msg);
    return -1;
  }
  SimModel* m = NULL;
  if (sim_model_import_caps(mj, opt.nconmax, opt.nefcmax, &m, msg, sizeof(msg))) {
    snprintf(err, errlen, "task %s: %s", task, msg);
    sim_free_mjmodel(mj);
    return -1;
  }
  if (tk->info.uses_params && tk->info.uses_params(tparam) && sim_params_enable(m)) {
    snprintf(err, errlen, "task %s: cannot enable per-world parameters", task);
    sim_model_free(m);
    sim_free_mjmodel(mj);
    return -1;
  }
  SimData* d = NULL;
  if (sim_data_create(m, nworld, &d)) {
    snprintf(err, errlen, "task %s: cannot allocate %d worlds", task, nworld);
    sim_model_free(m);
    sim_free_mjmodel(mj);
    return -1;
  }
  EnvBatch* e = (EnvBatch*)calloc(1, sizeof(EnvBatch));
  int O = obs_dim_under(tk, tparam), A = tk->info.act_dim;
  e->task = tk, e->mjmodel = mj, e->m = m, e->d = d;
  e->nworld = nworld, e->obs_dim = O, e->act_dim = A;
  int Oc = tk->info.critic ? tk->info.critic_obs_dim : O;
  e->critic_obs_dim = Oc;
  e->episode_steps = episode_steps > 0 ? episode_steps : tk->info.episode_steps;
  memcpy(e->param, tparam, sizeof(tparam));
  memcpy(e->str, tstr, sizeof(tstr));
  for (int i = 0; i < ENV_MAX_STRS; i++) e->strp[i] = e->str[i];
  int nomem = 0;
  for (int k = 0; k < tk->info.nstate; k++)
    if (!(e->state[k] = calloc((size_t)nworld, env_state_row_bytes(tk, k) ? env_state_row_bytes(tk, k) : 1)) ||
        !(e->final_state[k] = calloc((size_t)nworld, env_state_row_bytes(tk, k) ? env_state_row_bytes(tk, k) : 1)))
      nomem = 1;
  if (like) {
    e->data = like->data, e->data_bytes = like->data_bytes, e->data_shared = 1;
  } else if (tk->info.load_data && !nomem &&
             tk->info.load_data(m, tparam, e->strp, &e->data, &e->data_bytes, msg, sizeof(msg))) {
    env_destroy(e);
    snprintf(err, errlen, "task %s: %s", task, msg);
    return -1;
  }
  if (tk->info.nshared) {  // task-shared state, sized from the data, zeroed (then initialised below)
    int cnt[ENV_MAX_SHARED] = {0};
    if (tk->info.shared_size(tparam, e->data, cnt, msg, sizeof(msg))) {
      env_destroy(e);
      snprintf(err, errlen, "task %s: %s", task, msg);
      return -1;
    }
    for (int k = 0; k < tk->info.nshared; k++) {
      e->shared_count[k] = cnt[k] > 0 ? cnt[k] : 1;
      if (!(e->shared[k] = calloc(1, env_shared_bytes(e, k)))) nomem = 1;
    }
    if (!(e->report = (int32_t*)calloc((size_t)nworld, sizeof(int32_t)))) nomem = 1;
  }
  e->t = (int32_t*)calloc((size_t)nworld, sizeof(int32_t));
  e->rng = (uint64_t*)calloc((size_t)nworld, sizeof(uint64_t));
  e->nan_seen = (int32_t*)calloc((size_t)nworld, sizeof(int32_t));
  e->obs = (sim_real*)calloc((size_t)nworld * O, sizeof(sim_real));
  e->ep_return = (double*)calloc((size_t)nworld, sizeof(double));
  e->reward = (sim_real*)calloc((size_t)nworld, sizeof(sim_real));
  e->terminated = (uint8_t*)calloc((size_t)nworld, 1);
  e->truncated = (uint8_t*)calloc((size_t)nworld, 1);
  e->final_obs = (sim_real*)calloc((size_t)nworld * O, sizeof(sim_real));
  e->cobs = tk->info.critic ? (sim_real*)calloc((size_t)nworld * Oc, sizeof(sim_real)) : e->obs;
  e->final_cobs = tk->info.critic ? (sim_real*)calloc((size_t)nworld * Oc, sizeof(sim_real)) : e->final_obs;
  e->final_qpos = (sim_real*)calloc((size_t)nworld * m->nq, sizeof(sim_real));
  e->final_qvel = (sim_real*)calloc((size_t)nworld * m->nv, sizeof(sim_real));
  e->final_ctrl = (sim_real*)calloc((size_t)nworld * (m->nu ? m->nu : 1), sizeof(sim_real));
  int S = tk->episode_stats ? tk->nstat : 0;  // <= ENV_MAX_STATS (checked at the top)
  if (S) e->final_stats = (sim_real*)calloc((size_t)nworld * S, sizeof(sim_real));
  if (!e->final_qpos || !e->final_qvel || !e->final_ctrl || !e->t || !e->rng || !e->nan_seen || !e->obs || !e->ep_return || !e->reward || !e->terminated || !e->truncated ||
      !e->final_obs || !e->cobs || !e->final_cobs || (S && !e->final_stats) || nomem) {
    env_destroy(e);
    snprintf(err, errlen, "task %s: out of memory", task);
    return -1;
  }
  env_shared_update(e, NULL);  // the shared state's derived arrays before the first resets read them
  // world w's reset stream: splitmix64 of (seed, w), so worlds are independent of nworld
  for (int w = 0; w < nworld; w++) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL * (uint64_t)(w + 1);
    e->rng[w] = env_rng_next(&s);
    reset_world(e, w);
  }
  if (tk->info.needs_kinematics) sim_run_stage(m, d, SIM_STAGE_KINEMATICS);
  for (int w = 0; w < nworld; w++) {
    observe_reset(e, w);
    e->nan_seen[w] = d->nan_count[w];
  }
  *out = e;
  return 0;
}

void env_destroy(EnvBatch* e) {
  if (!e) return;
  if (e->d) sim_data_free(e->d);
  if (e->m) sim_model_free(e->m);
  if (e->mjmodel) sim_free_mjmodel(e->mjmodel);
  free(e->t), free(e->rng), free(e->nan_seen), free(e->obs), free(e->ep_return);
  if (e->cobs != e->obs) free(e->cobs);
  if (e->final_cobs != e->final_obs) free(e->final_cobs);
  free(e->reward), free(e->terminated), free(e->truncated), free(e->final_obs);
  free(e->final_qpos), free(e->final_qvel), free(e->final_ctrl), free(e->final_stats);
  for (int k = 0; k < ENV_MAX_STATE; k++) free(e->state[k]), free(e->final_state[k]);
  for (int k = 0; k < ENV_MAX_SHARED; k++) free(e->shared[k]);
  free(e->report);
  if (!e->data_shared) free(e->data);
  free(e);
}

int env_enable_gradients(EnvBatch* e, int ntape) {
  if (sim_adjoint_enable(e->m, ntape)) return -1;
  SimData* nd = NULL;
  if (sim_data_create(e->m, e->nworld, &nd)) return -1;
  const SimModel* m = e->m;
  SimData* d = e->d;
  size_t N = (size_t)e->nworld;
#define COPY(f, n) memcpy(nd->f, d->f, sizeof(*d->f) * N * (size_t)(n))
  COPY(qpos, m->nq);
  COPY(qvel, m->nv);
  if (m->nu) COPY(ctrl, m->nu);
  COPY(qacc_warmstart, m->nv);
  COPY(qfrc_applied, m->nv);
  COPY(time, 1);
  COPY(nan_count, 1);
  COPY(ncon_overflow, 1);
  COPY(nefc_overflow, 1);
  if (m->prm) {  // the worlds' own parameters (e.g. drawn at their last reset)
#define X(type, name, count, width) memcpy(nd->name, d->name, sizeof(type) * N * (size_t)m->count * (width));
    SIM_DATA_FIELDS_PARAM
#undef X
  }
#undef COPY
  sim_data_free(d);
  e->d = nd;
  if (e->task->info.needs_kinematics) sim_run_stage(e->m, e->d, SIM_STAGE_KINEMATICS);
  return 0;
}

void env_randomize_episode_start(EnvBatch* e) {
  for (int w = 0; w < e->nworld; w++) {
    int t = (int)(env_rng_uniform(&e->rng[w]) * e->episode_steps);
    e->t[w] = t < e->episode_steps ? t : e->episode_steps - 1;
  }
}

// the observation (and the critic's) of world w; 0 where one is non-finite (both are then zeroed: they are stored)
static int observe_world(EnvBatch* e, int w, const EnvTaskCtx* c, int check) {
  const EnvTask* tk = e->task;
  int O = e->obs_dim, Oc = e->critic_obs_dim;
  sim_real* o = e->obs + (size_t)w * O;
  sim_real* oc = e->cobs + (size_t)w * Oc;
  tk->observe(e->m, e->d, w, c, o);
  if (tk->info.critic) tk->info.critic->observe(e->m, e->d, w, c, oc);
  if (!check) return 1;
  int fin = 1;
  for (int i = 0; i < O && fin; i++) fin = isfinite(o[i]) != 0;
  for (int i = 0; i < Oc && fin && tk->info.critic; i++) fin = isfinite(oc[i]) != 0;
  if (!fin) {
    memset(o, 0, sizeof(sim_real) * (size_t)O);
    if (tk->info.critic) memset(oc, 0, sizeof(sim_real) * (size_t)Oc);
  }
  return fin;
}

void env_step(EnvBatch* e, const sim_real* act) {
  const EnvTask* tk = e->task;
  int O = e->obs_dim, A = e->act_dim, Oc = e->critic_obs_dim;
  for (int w = 0; w < e->nworld; w++) {
    EnvTaskCtx c;
    env_task_ctx(e, w, &c);
    tk->act(e->m, e->d, w, &c, act + (size_t)w * A);
  }
  if (e->record) sim_control_step(e->m, e->d, tk->info.frame_skip, 1);
  else
    for (int k = 0; k < tk->info.frame_skip; k++) sim_step(e->m, e->d);
  if (tk->info.needs_kinematics) sim_run_stage(e->m, e->d, SIM_STAGE_KINEMATICS);
  e->nan_last = 0;
  int reset_any = 0;
  // a task with shared state resets after its shared update (which sees every world's end first)
  const EnvTaskSharedFns* shf = tk->info.nshared ? tk->info.shared_fns : NULL;
  for (int w = 0; w < e->nworld; w++) {
    EnvTaskCtx c;
    env_task_ctx(e, w, &c);
    // the engine reset this world after a non-finite state: the episode ends there, value 0
    int bad = e->d->nan_count[w] != e->nan_seen[w];
    e->nan_seen[w] = e->d->nan_count[w];
    sim_real r = bad ? 0 : tk->reward(e->m, e->d, w, &c, act + (size_t)w * A);
    if (!isfinite(r)) r = 0, bad = 1;  // a non-finite reward (NaN or +-inf) ends the episode too
    sim_real* o = e->obs + (size_t)w * O;
    if (!observe_world(e, w, &c, !bad)) r = 0, bad = 1;  // ... and so does a non-finite observation
    int term = bad || tk->terminated(e->m, e->d, w, &c);
    e->t[w]++;
    int trunc = !term && e->t[w] >= e->episode_steps;
    e->reward[w] = r;
    e->terminated[w] = (uint8_t)term;
    e->truncated[w] = (uint8_t)trunc;
    e->ep_return[w] += r;
    e->reward_total += r;
    if (shf) e->report[w] = shf->report(e->m, e->d, w, &c, term ? 1 : trunc ? 2 : 0);
    if (term || trunc) {
      memcpy(e->final_obs + (size_t)w * O, o, sizeof(sim_real) * (size_t)O);
      if (tk->info.critic)
        memcpy(e->final_cobs + (size_t)w * Oc, e->cobs + (size_t)w * Oc, sizeof(sim_real) * (size_t)Oc);
      for (int k = 0; k < tk->info.nstate; k++) {
        size_t rb = env_state_row_bytes(tk, k);
        memcpy((char*)e->final_state[k] + (size_t)w * rb, (char*)e->state[k] + (size_t)w * rb, rb);
      }
      SimWorld wd;
      sim_world(e->m, e->d, w, &wd);
      memcpy(e->final_qpos + (size_t)w * e->m->nq, wd.qpos, sizeof(sim_real) * (size_t)e->m->nq);
      memcpy(e->final_qvel + (size_t)w * e->m->nv, wd.qvel, sizeof(sim_real) * (size_t)e->m->nv);
      if (e->m->nu) memcpy(e->final_ctrl + (size_t)w * e->m->nu, wd.ctrl, sizeof(sim_real) * (size_t)e->m->nu);
      if (e->final_stats) {
        int S = tk->nstat;
        sim_real* st = e->final_stats + (size_t)w * S;
        if (bad)
          for (int i = 0; i < S; i++) st[i] = NAN;
        else
          tk->episode_stats(e->m, e->d, w, &c, st);
      }
      int slot = (int)(e->stats[0] % ENV_RECENT);
      e->recent_return[slot] = e->ep_return[w];
      e->recent_len[slot] = e->t[w];
      e->stats[0]++;
      if (bad) e->stats[1]++, e->nan_last++;
      if (e->hold) continue;
      reset_any = 1;
      if (shf) continue;
      reset_world(e, w);
      if (!tk->info.needs_kinematics) observe_reset(e, w);
    }
  }
  if (shf) {
    env_shared_update(e, e->report);
    for (int w = 0; w < e->nworld && !e->hold; w++)
      if (e->terminated[w] || e->truncated[w]) {
        reset_world(e, w);
        if (!tk->info.needs_kinematics) observe_reset(e, w);
      }
  }
  if (reset_any && tk->info.needs_kinematics) {
    sim_run_stage(e->m, e->d, SIM_STAGE_KINEMATICS);
    for (int w = 0; w < e->nworld; w++)
      if (e->terminated[w] || e->truncated[w]) observe_reset(e, w);
  }
}

void env_recent_stats(const EnvBatch* e, double* mean_return, double* mean_length) {
  int n = e->stats[0] < ENV_RECENT ? (int)e->stats[0] : ENV_RECENT;
  if (n == 0) {
    *mean_return = NAN, *mean_length = NAN;
    return;
  }
  double r = 0, l = 0;
  for (int i = 0; i < n; i++) r += e->recent_return[i], l += e->recent_len[i];
  *mean_return = r / n, *mean_length = l / n;
}

int env_eval_start(EnvBatch* e, const int* clip) {
  const EnvTaskEval* ev = e->task->info.eval;
  if (!ev) return -1;
  for (int w = 0; w < e->nworld; w++) {
    reset_world(e, w);
    EnvTaskCtx c;
    env_task_ctx(e, w, &c);
    ev->start(e->m, e->d, w, &c, clip[w]);
  }
  if (e->task->info.needs_kinematics) sim_run_stage(e->m, e->d, SIM_STAGE_KINEMATICS);
  for (int w = 0; w < e->nworld; w++) {
    observe_reset(e, w);
    e->nan_seen[w] = e->d->nan_count[w];
  }
  return 0;
}
