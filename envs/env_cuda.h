// env_cuda.h: the batched environment of env.h on the CUDA backend (the trainer's run.device: cuda).
//
// Every task file envs/<task>.c is compiled into envs/env_cuda.cu next to the engine (CMake lists them; a task
// is found by its name, as env_find_task finds it on the host), so its per-world SIM_FN functions run as
// device code: one warp per world, lanes striding the engine's loops. One control step is one fused kernel per
// world (act -> frame_skip physics substeps, recorded on the engine tape when asked -> kinematics if the task
// needs it -> non-finite check -> reward -> termination -> time limit -> observation -> auto-reset; a task with
// shared state: its report, then one block runs its shared update and a second kernel the auto-resets), then one
// block keeps the episode statistics in world order (the ring of recent episodes, counters). Same semantics,
// per world, as env_step in env.c; nothing comes back to the host.
//
// The host EnvBatch stays the mirror of the device state: env_cuda_create uploads it, env_cuda_download /
// env_cuda_upload copy the whole state (engine SimData, step counters, reset streams, observations, episode
// statistics) for checkpoints and resume. All pointers named *_dev or taken by the step functions are device
// memory; buffers are world-major. Everything runs on the legacy default stream, in order with the engine's
// (sim_cuda.h) and nn_cuda's work on that stream: no call synchronizes except upload, download and create.
#ifndef ADJ_ENVS_ENV_CUDA_H
#define ADJ_ENVS_ENV_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "envs/env.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct EnvCuda EnvCuda;

// What env_cuda_step stores of one control step (device arrays; any pointer may be NULL: not stored).
typedef struct {
  float *pre_qpos, *pre_qvel;                // (N, nq), (N, nv) state before the step
  float *post_qpos, *post_qvel, *post_ctrl;  // (N, nq), (N, nv), (N, max(nu, 1)) after it, before an auto-reset
  float* next_obs;                           // (N, obs_dim) observation after the step, before an auto-reset
  float* next_cobs;                          // (N, critic_obs_dim) the critic's, likewise (the observation
                                             // itself when the task has no critic observation)
  // the task state (a block of N sw 4-byte words, sw = the words of all fields a world: field k as (N, count_k)
  // at N x the words of the fields before it; env_cuda_state_words) before the act and after it (before an
  // auto-reset)
  void *pre_state, *post_state;
  float* reward;                             // (N)
  uint8_t *terminated, *truncated;           // (N) as EnvBatch's
} EnvCudaRecord;

// Gradient of one recorded control step (env_cuda_step_backward); device arrays of that step t.
typedef struct {
  const float *pre_qpos, *pre_qvel, *post_qpos, *post_qvel, *post_ctrl, *act;  // as recorded / applied
  const uint8_t *terminated, *truncated;
  const float* reward_cot;           // (N) dL/dr_t
  const float* value_mask;           // (N) nonzero where the loss has a term in the next observation (NULL: none)
  const float* next_obs_cot;         // (N, critic_obs_dim) dL/d(next critic observation) where value_mask != 0
                                     // (through the task's observe_critic VJP, or observe's without one)
  const void *pre_state, *post_state;  // the step's task state blocks as recorded (NULL without task state)
  float* cot_state;  // (state block) in: the cotangent of the grad fields' state after the act from later steps
                     // (zeroed here where the world ended at t); out: that of the state before the act
  const float *cot_qpos, *cot_qvel;  // (N, nv) cotangent of the post-step state from later steps (read where
                                     // the world did not end at t; the engine's tangent space: nv)
  float* act_cot;                    // (N, act_dim) out: dL/da_t (zero where non-finite)
  float* act_cot_norm;               // (N) out: |dL/da_t| (float of the float64 norm)
  uint8_t* nonfinite;                // (N) out: 1 where the world's cotangents were non-finite (zeroed)
} EnvCudaStepGrad;

// The device copy of host's worlds (host->m must already have gradients enabled when steps are to be recorded).
int env_cuda_create(EnvCuda** out, const EnvBatch* host, char* err, size_t errlen);
void env_cuda_destroy(EnvCuda* e);
const char* env_cuda_last_error(const EnvCuda* e);      // message of e's last failed call
int env_cuda_upload(EnvCuda* e, const EnvBatch* host);  // host mirror -> device (synchronous)
int env_cuda_download(EnvCuda* e, EnvBatch* host);      // device -> host mirror (synchronous)

float* env_cuda_obs(EnvCuda* e);  // (N, obs_dim) device: the observation now (after any auto-reset)
int env_cuda_nworld(const EnvCuda* e);
int env_cuda_tape_clear(EnvCuda* e);
// One control step from actions act (N, act_dim), optionally recorded on the engine tape (record_tape) and in rec.
int env_cuda_step(EnvCuda* e, const float* act, const EnvCudaRecord* rec, int record_tape);
// Pops the last recorded control step: post-state cotangent (g->cot_* unless the world ended, + reward VJP +
// next-observation VJP) -> engine backward -> the pre-state cotangent (kept in the engine's adj_qpos/adj_qvel)
// and act_cot through the task's act VJP. Non-finite cotangents of a world are zeroed and flagged.
int env_cuda_step_backward(EnvCuda* e, const EnvCudaStepGrad* g);
// cot_q/cot_v (N, nv) = the pre-state cotangent left by env_cuda_step_backward + the observe VJP of obs_cot
// (N, obs_dim) at the state (qpos, qvel, ctrl) (obs_cot NULL: the engine cotangent only).
// With task state: the observe VJP runs at the state block `state` and adds into cot_state (NULL: none).
int env_cuda_pre_state_cotangent(EnvCuda* e, const float* qpos, const float* qvel, const float* ctrl,
                                 const void* state, const float* obs_cot, float* cot_q, float* cot_v,
                                 float* cot_state);
// The engine's launch for this batch's steps and their backward (simcuda_set_staged: fused or staged, the same
// bits); returns the mode set.
int env_cuda_set_staged(EnvCuda* e, int staged);
int env_cuda_set_streams(EnvCuda* e, int nstream);  // simcuda_set_streams: world groups on streams, the same bits
// The words of one world's task state (all fields; 0 without task state): a state block holds N of them.
int env_cuda_state_words(const EnvCuda* e);
float* env_cuda_critic_obs(EnvCuda* e);  // (N, critic_obs_dim) device: the critic's observation now (env_cuda_obs
                                         // itself without a critic observation)
// Sum over worlds of the engine's adj_nconstraint counters into *out_dev (device int64), stream-ordered.
int env_cuda_constraint_evals(EnvCuda* e, long long* out_dev);

// Per-iteration statistics: stats_begin enqueues the copy of the episode counters, the recent-episode ring,
// the reward sum, the overflow totals and the task-shared state to pinned host memory; after the stream is
// synchronized, stats_end writes them into host (stats, recent_return/_len, reward_total, shared: the host
// mirror's task metrics read it; host may be NULL; call it only after a stats_begin) and the overflow totals
// (all worlds, cumulative; before the first stats_begin: the uploaded host totals) into *contacts / *rows
// (either may be NULL).
int env_cuda_stats_begin(EnvCuda* e);
void env_cuda_stats_end(EnvCuda* e, EnvBatch* host, double* contacts, double* rows);

#ifdef __cplusplus
}
#endif
#endif
