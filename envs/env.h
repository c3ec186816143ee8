// env.h: the task interface and the batched environment.
//
// A task is one file, envs/<task>.c, of per-world SIM_FN functions, host C and device code: the CUDA build
// compiles every envs/<task>.c next to the engine (envs/env_cuda.h; CMake generates the translation units, as
// C++) and fuses act -> step -> reward -> observe -> auto-reset into one kernel per control step and world, so
// a CUDA iteration needs no host round trip. So keep the per-world functions in the common C/C++ subset, and
// the host table (ENV_TASK_HOST, names) under #ifndef __CUDACC__ as cartpole.c does. Per world:
//   void     <task>_reset(const SimModel*, SimWorld*, uint64_t* rng, int lane, int nlane)  // after sim reset
//   void     <task>_act(const SimModel*, SimWorld*, const sim_real* act /*(act_dim)*/, int lane, int nlane)
//   sim_real <task>_reward(const SimModel*, const SimWorld*, const sim_real* act)  // after the step
//   int      <task>_terminated(const SimModel*, const SimWorld*)                   // early termination
//   void     <task>_observe(const SimModel*, const SimWorld*, sim_real* obs /*(obs_dim)*/, int lane, int nlane)
// and their adjoints (vector-Jacobian products, accumulated into the given cotangents; SHAC uses them):
//   void     <task>_observe_vjp(m, d, const sim_real* dobs, sim_real* dqpos /*(nq)*/, sim_real* dqvel /*(nv)*/)
//   void     <task>_reward_vjp(m, d, const sim_real* act, sim_real dr, sim_real* dqpos, sim_real* dqvel,
//                              sim_real* dctrl /*(nu)*/)
//   void     <task>_act_vjp(m, d, const sim_real* act, const sim_real* dctrl, sim_real* dact /*(act_dim)*/)
// ENV_TASK_HOST(task, info) at the end of the task file builds the host-side EnvTask table from them;
// ENV_TASK_HOST_STATS(task, nstat, names, info) also takes <task>_episode_stats (per-episode statistics, e.g.
// the hopper's forward speed, evaluated at an episode's final state; `adjoint eval` reports them).
//
// EnvBatch (env.c) runs nworld worlds of one task on the CPU backend (float32 engine, sim_real = float): it
// applies actions, steps the engine frame_skip times, computes rewards, terminations (early, time-out, and
// non-finite state: the engine resets such a world and counts it in d->nan_count), keeps episode statistics
// and auto-resets finished worlds. All per-world state is world-major.
#ifndef ADJ_ENVS_ENV_H
#define ADJ_ENVS_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- per-world random numbers (splitmix64; SIM_FN so tasks can draw on the device) ----
SIM_FN uint64_t env_rng_next(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
SIM_FN double env_rng_uniform(uint64_t* s) { return (double)(env_rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }
// standard normal (Box-Muller, one draw per call; computed in double on both backends)
SIM_FN double env_rng_normal(uint64_t* s) {
  double u1 = env_rng_uniform(s), u2 = env_rng_uniform(s);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

typedef struct EnvTaskInfo {
  const char* name;
  const char* model;      // MJCF, found through the asset search path
  int disable_add;        // SimLoadOptions.disable_add (e.g. SIM_DSBL_CONSTRAINT until the solver lands)
  int obs_dim, act_dim;   // obs_dim: at the default constants (see obs_dim_of)
  int episode_steps;      // time limit in control steps
  int frame_skip;         // physics steps per control step
  int needs_kinematics;   // reward/observe read xpos/xmat: run kinematics after the step
  const char* const* obs_names;  // observation element names (for exports and logs), of the largest observation
  const char* const* act_names;  // (act_dim)
  // task constants settable per run (config key env.params, "name=value, ..."), stored in SimModel.task_param
  // in this order; tasks read them as m->task_param[i]
  int nparam;                        // <= SIM_TASK_PARAMS
  const char* const* param_names;    // (nparam)
  const double* param_defaults;      // (nparam)
  // optional (NULL: obs_dim): the observation size under the constants p (SIM_TASK_PARAMS), for a task whose
  // observation grows with one of them (the hopper's clock); obs_names covers the largest. env_create_params
  // resolves it once: every reader takes EnvBatch.obs_dim (or env_task_obs_dim without a batch), never obs_dim
  int (*obs_dim_of)(const double* p);
  // optional (NULL: none): model load options under the constants p, applied before the model is compiled into
  // the engine (e.g. the hopper's gear_scale); the MuJoCo model kept beside it gets the same. Returns 0, or
  // non-zero with a message naming the bad constant
  int (*load_options)(const double* p, SimLoadOptions* opt, char* err, size_t errlen);
} EnvTaskInfo;

// host-side table of one task (per-world calls)
typedef struct EnvTask {
  EnvTaskInfo info;
  void (*reset)(const SimModel* m, SimData* d, int w, uint64_t* rng);
  void (*act)(const SimModel* m, SimData* d, int w, const sim_real* act);
  sim_real (*reward)(const SimModel* m, SimData* d, int w, const sim_real* act);
  int (*terminated)(const SimModel* m, SimData* d, int w);
  void (*observe)(const SimModel* m, SimData* d, int w, sim_real* obs);
  void (*observe_vjp)(const SimModel* m, SimData* d, int w, const sim_real* dobs, sim_real* dqpos, sim_real* dqvel);
  void (*reward_vjp)(const SimModel* m, SimData* d, int w, const sim_real* act, sim_real dr, sim_real* dqpos,
                     sim_real* dqvel, sim_real* dctrl);
  void (*act_vjp)(const SimModel* m, SimData* d, int w, const sim_real* act, const sim_real* dctrl, sim_real* dact);
  // optional per-episode statistics (ENV_TASK_HOST_STATS; 0 / NULL without), evaluated at an episode's final
  // state (before the auto-reset: the state its last reward saw) and reported by `adjoint eval`
  int nstat;                      // <= ENV_MAX_STATS
  const char* const* stat_names;  // (nstat), e.g. the hopper's "forward_speed"
  void (*episode_stats)(const SimModel* m, SimData* d, int w, sim_real* out /*(nstat)*/);
} EnvTask;
#define ENV_MAX_STATS 8

#define ENV_TASK_HOST_FNS_(task)                                                                              \
  static void task##_host_reset(const SimModel* m, SimData* d, int w, uint64_t* rng) {                        \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_reset(m, &wd, rng, 0, 1);                                                                          \
  }                                                                                                           \
  static void task##_host_act(const SimModel* m, SimData* d, int w, const sim_real* a) {                      \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_act(m, &wd, a, 0, 1);                                                                              \
  }                                                                                                           \
  static sim_real task##_host_reward(const SimModel* m, SimData* d, int w, const sim_real* a) {               \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    return task##_reward(m, &wd, a);                                                                          \
  }                                                                                                           \
  static int task##_host_terminated(const SimModel* m, SimData* d, int w) {                                   \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    return task##_terminated(m, &wd);                                                                         \
  }                                                                                                           \
  static void task##_host_observe(const SimModel* m, SimData* d, int w, sim_real* o) {                        \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_observe(m, &wd, o, 0, 1);                                                                          \
  }                                                                                                           \
  static void task##_host_observe_vjp(const SimModel* m, SimData* d, int w, const sim_real* g, sim_real* dq,  \
                                      sim_real* dv) {                                                         \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_observe_vjp(m, &wd, g, dq, dv);                                                                    \
  }                                                                                                           \
  static void task##_host_reward_vjp(const SimModel* m, SimData* d, int w, const sim_real* a, sim_real dr,    \
                                     sim_real* dq, sim_real* dv, sim_real* dc) {                              \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_reward_vjp(m, &wd, a, dr, dq, dv, dc);                                                             \
  }                                                                                                           \
  static void task##_host_act_vjp(const SimModel* m, SimData* d, int w, const sim_real* a, const sim_real* dc, \
                                  sim_real* da) {                                                             \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_act_vjp(m, &wd, a, dc, da);                                                                        \
  }

#define ENV_TASK_HOST(task, ...)                                                                              \
  ENV_TASK_HOST_FNS_(task)                                                                                    \
  const EnvTask env_task_##task = {__VA_ARGS__,                                                               \
                                   task##_host_reset,                                                         \
                                   task##_host_act,                                                           \
                                   task##_host_reward,                                                        \
                                   task##_host_terminated,                                                    \
                                   task##_host_observe,                                                       \
                                   task##_host_observe_vjp,                                                   \
                                   task##_host_reward_vjp,                                                    \
                                   task##_host_act_vjp,                                                       \
                                   0,                                                                         \
                                   NULL,                                                                      \
                                   NULL};
// ENV_TASK_HOST with per-episode statistics (EnvTask.nstat/stat_names/episode_stats) from
//   void <task>_episode_stats(const SimModel*, const SimWorld*, sim_real* out /*(nstat)*/)
#define ENV_TASK_HOST_STATS(task, nstat_, names_, ...)                                                        \
  ENV_TASK_HOST_FNS_(task)                                                                                    \
  static void task##_host_episode_stats(const SimModel* m, SimData* d, int w, sim_real* o) {                  \
    SimWorld wd;                                                                                              \
    sim_world(m, d, w, &wd);                                                                                  \
    task##_episode_stats(m, &wd, o);                                                                          \
  }                                                                                                           \
  const EnvTask env_task_##task = {__VA_ARGS__,                                                               \
                                   task##_host_reset,                                                         \
                                   task##_host_act,                                                           \
                                   task##_host_reward,                                                        \
                                   task##_host_terminated,                                                    \
                                   task##_host_observe,                                                       \
                                   task##_host_observe_vjp,                                                   \
                                   task##_host_reward_vjp,                                                    \
                                   task##_host_act_vjp,                                                       \
                                   nstat_,                                                                    \
                                   names_,                                                                    \
                                   task##_host_episode_stats};

const EnvTask* env_find_task(const char* name);  // NULL if unknown
const char* env_task_names(void);                // "cartpole|..."

#define ENV_RECENT 100  // finished episodes kept for the statistics

typedef struct EnvBatch {
  const EnvTask* task;
  void* mjmodel;  // mjModel* (kept for the engine's lifetime)
  SimModel* m;
  SimData* d;
  int nworld, obs_dim, act_dim, episode_steps;
  // carried state (checkpointed), world-major
  int32_t* t;           // (nworld) control steps into the running episode
  uint64_t* rng;        // (nworld) reset-noise streams
  int32_t* nan_seen;    // (nworld) d->nan_count at the last check
  sim_real* obs;        // (nworld, obs_dim) observation now (after any auto-reset)
  double* ep_return;    // (nworld) return of the running episode
  int64_t stats[2];     // finished episodes, non-finite resets
  double recent_return[ENV_RECENT];  // ring of finished episodes
  int32_t recent_len[ENV_RECENT];
  // outputs of the last env_step
  sim_real* reward;       // (nworld)
  uint8_t* terminated;    // (nworld) early termination (value 0 after it), non-finite resets included
  uint8_t* truncated;     // (nworld) time limit (bootstrap from final_obs)
  sim_real* final_obs;    // (nworld, obs_dim) observation before the auto-reset (where terminated|truncated)
  sim_real* final_qpos;   // (nworld, nq) engine state before the auto-reset (where terminated|truncated): the
  sim_real* final_qvel;   // (nworld, nv) state the reward and final_obs were computed at (SHAC's VJPs need it)
  sim_real* final_ctrl;   // (nworld, nu)
  sim_real* final_stats;  // (nworld, task->nstat) episode statistics where terminated|truncated (NaN after a
                          // non-finite reset); NULL when the task has none
  int64_t nan_last;       // non-finite resets during the last env_step
  double reward_total;    // sum of all rewards so far (for per-iteration means; not part of the run's state)
  int record;             // 1: env_step records the engine tape (sim_control_step(record)); needs env_enable_gradients
} EnvBatch;

// Loads the task's model (applying its disable flags) and makes nworld worlds, all reset with the seed.
int env_create(EnvBatch** out, const char* task, int nworld, int episode_steps /* 0: task default */, uint64_t seed,
               char* err, size_t errlen);
// The same with task constants: params = "name=value, name=value" over the task's defaults (NULL or "": all
// defaults); an unknown name or a bad number is an error naming it ("env.params: ...").
int env_create_params(EnvBatch** out, const char* task, const char* params, int nworld, int episode_steps,
                      uint64_t seed, char* err, size_t errlen);
// The observation size env_create_params gives task tk under the spec params (for readers without an EnvBatch,
// e.g. `adjoint export`); -1 and err on a bad spec.
int env_task_obs_dim(const EnvTask* tk, const char* params, char* err, size_t errlen);
void env_destroy(EnvBatch* e);
// Re-creates the engine data with reverse-mode gradients (sim_adjoint_enable(ntape physics substeps per world)),
// keeping every world's state (qpos, qvel, ctrl, warm start, applied forces, time, counters). 0 or -1.
int env_enable_gradients(EnvBatch* e, int ntape);
// Sets each world's step counter to a uniform draw in [0, episode_steps) (its reset stream): the first episodes
// end at different times, so that synchronous worlds do not all see the same phase of an episode.
void env_randomize_episode_start(EnvBatch* e);
// Applies act (nworld, act_dim), steps, fills reward/terminated/truncated/final_obs, auto-resets, updates obs.
void env_step(EnvBatch* e, const sim_real* act);
// Mean return and length over the last min(finished, ENV_RECENT) episodes (NaN when none finished).
void env_recent_stats(const EnvBatch* e, double* mean_return, double* mean_length);

#ifdef __cplusplus
}
#endif
#endif
