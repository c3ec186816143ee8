// algo.h: the algorithm interface the trainer drives (trainer.c: rollout -> update -> log -> checkpoint).
//
// An algorithm owns its networks, optimizers, rollout buffers and random streams; the trainer owns the run
// (config, environment batch, run directory, metrics, checkpoints). One `iterate` call is one iteration: a
// rollout of algo.horizon control steps on the EnvBatch followed by the update. Everything that determines the
// algorithm's future is exposed through `state` as named arrays (checkpointed bit-exactly); `policy_only`
// selects the subset evaluation needs (parameters, normalizer), which does not depend on env.num_envs.
//
// Backends: run.device cpu runs these on the CPU engine; run.device cuda runs algo_cuda.h's versions, which keep
// the same state names (checkpoints move between backends) and use the EnvBatch as the host mirror of their
// device state (the two hooks at the end of AlgoOps; NULL on the CPU).
#ifndef ADJ_ALGO_ALGO_H
#define ADJ_ALGO_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "algo/cfg.h"
#include "algo/ckpt.h"
#include "envs/env.h"
#include "nn/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ALGO_MAX_METRICS 16

typedef struct {
  double sim;       // seconds in env_step (physics, rewards, resets)
  double networks;  // forward passes, normalizer, optimizer, returns
  double backward;  // backward passes (network and, for SHAC, simulator adjoint)
} AlgoTimes;

typedef struct AlgoOps {
  const char* name;
  int (*create)(void** out, const Cfg* c, EnvBatch* env, char* err, size_t errlen);
  void (*destroy)(void* s);
  // One iteration; metrics (n_metrics values, names below) and times are filled. Returns 0, or an error code
  // with a message in err (errlen bytes, the caller's).
  int (*iterate)(void* s, EnvBatch* env, double* metrics, AlgoTimes* times, char* err, size_t errlen);
  int (*state)(void* s, CkTensor* t, int max, int policy_only);  // returns the count
  // Deterministic actions for evaluation: obs (n, obs_dim) -> act (n, act_dim); n <= env.num_envs at create.
  int (*act_eval)(void* s, const float* obs, int n, float* act);
  const char* const* metric_names;
  int n_metrics;
  // device backends only (NULL on the CPU): sync copies the whole run state between the device and the host
  // mirror (env's arrays and the arrays `state` names): to_host 1 before a checkpoint, 0 before the first
  // iteration (after a resume's read); overflow gives the contacts / constraint rows dropped so far, all worlds.
  int (*sync)(void* s, EnvBatch* env, int to_host, char* err, size_t errlen);
  void (*overflow)(void* s, double* contacts, double* rows);
} AlgoOps;

extern const AlgoOps algo_ppo;
extern const AlgoOps algo_shac;  // algo.name shac and nablamimic (the ∇Mimic options are config keys)
// Algorithms by algo.name; NULL with a message when the algorithm is not available (yet).
const AlgoOps* algo_find(const char* name, char* err, size_t errlen);
// The same for a run.device (cpu | cuda); NULL with a message where that backend is not built or has no device.
const AlgoOps* algo_find_device(const char* name, const char* device, char* err, size_t errlen);

// Wall-clock seconds (monotonic) for time splits.
double algo_now(void);

// MLP shape from the policy.* keys: hidden sizes, activation (policy.activation), LayerNorm, out_act.
void algo_net_config(NnConfig* n, const Cfg* c, const CfgIntList* hidden, int in, int out, NnAct out_act);

#ifdef __cplusplus
}
#endif
#endif
