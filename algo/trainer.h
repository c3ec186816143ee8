// trainer.h: the generic training loop (rollout -> update -> log -> checkpoint) and evaluation.
//
// Run directory: config.yaml (resolved config, overrides applied), metrics.csv (one row per iteration),
// events.out.tfevents.* (TensorBoard), ckpt_%06d.h5 (every run.checkpoint_every iterations and at the end);
// with run.eval_episodes > 0 also evals.csv (a deterministic evaluation of each checkpoint) and best.h5 (a copy
// of the checkpoint with the highest evaluation return so far).
// Resume continues bit-identically from the latest checkpoint: the checkpoint holds the algorithm's state,
// the environment's state (engine state per world, step counters, RNG streams, episode statistics), the
// iteration and the config hash, which must match the run directory's config.yaml.
#ifndef ADJ_ALGO_TRAINER_H
#define ADJ_ALGO_TRAINER_H

#include <stddef.h>

#include "algo/cfg.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TRAIN_OK = 0, TRAIN_EUSER = -2, TRAIN_ERUN = -1 };  // EUSER: bad input (CLI exits 2)

#define TRAINER_MAX_ENVS 1048576  // env.num_envs' range (algo/cfg.h), which --num-envs also applies

typedef struct {
  Cfg cfg;              // resolved config (for resume: loaded from run_dir/config.yaml, max_iterations applied)
  char run_dir[4096];
  int resume;           // continue from the latest checkpoint in run_dir
  int progress_tty;     // 1: one rewritten progress line with ETA; 0: a log line per iteration
  int quiet;            // no per-iteration output
  const char* command;  // command line, stored as a checkpoint attribute
} TrainOptions;

int trainer_run(const TrainOptions* o, char* err, size_t errlen);

// A resume continues from the newest checkpoint that reads and validates (ckpt_validate; its iteration matching
// its name); each newer one is skipped with a line on stderr naming it and the reason. metrics.csv's elapsed
// (and evals.csv's) continue from the last kept row. After each iteration (CPU) and before each checkpoint,
// the algorithm's arrays are validated: a run whose networks turn non-finite stops with TRAIN_ERUN, and its
// last checkpoint stays the last good one.
// Highest-numbered ckpt_*.h5 in dir (0, or TRAIN_EUSER when none).
int trainer_latest_checkpoint(const char* dir, char* path, size_t pathlen);

typedef struct {
  int episodes;
  double return_mean, return_std, length_mean, length_std;
  long long nan_resets;
  int terminated;  // episodes that ended early (task termination or a non-finite reset), not by the time limit
  // the task's per-episode statistics (EnvTask.stat_names; mean/std over the episodes where finite)
  int nstat;
  const char* stat_names[8];
  double stat_mean[8], stat_std[8];
} EvalResult;

// Deterministic policy (mean action) for one episode in each of `episodes` worlds; c is the run's config
// (trainer_checkpoint_config, or the run directory's config.yaml). The reset draws come from the run's seed and
// `draw`: 0 is `adjoint eval`'s default, TRAINER_SELECT_DRAW the trainer's own evaluation at checkpoints
// (run.eval_episodes), so a figure reported with draw 0 is independent of the draws that chose best.h5.
#define TRAINER_SELECT_DRAW 1
int trainer_eval(const char* checkpoint, const Cfg* c, int episodes, int draw, EvalResult* out, char* err,
                 size_t errlen);

// The run's resolved config as the trainer stored it in the checkpoint (its "config" attribute) over the
// defaults: 0; CKPT_EMISSING when the checkpoint has none (older files: use RUN_DIR/config.yaml); another
// CKPT_ code with a message naming the checkpoint when it cannot be read or the stored text is invalid.
int trainer_checkpoint_config(const char* checkpoint, Cfg* c, char* err, size_t errlen);

// The trainer's own deterministic policy (the algorithm rebuilt on the CPU from config c, its policy state read
// from checkpoint, then act_eval): obs (n, obs_dim) -> act (n, act_dim). The reference an export is checked
// against (adjoint export --check). TRAIN_EUSER with a message when the config or checkpoint does not fit.
int trainer_policy_actions(const char* checkpoint, const Cfg* c, const float* obs, int n, float* act, char* err,
                           size_t errlen);

// The trainer's deterministic policy for the worlds of env: with *algo NULL the algorithm is built on the CPU from
// config c (env.num_envs = env->nworld; *ops set), else *algo (of *ops) is reused; then its policy state is read
// from checkpoint. TRAIN_OK (the caller destroys *algo with (*ops)->destroy), or TRAIN_EUSER with a message (an
// algorithm built here is destroyed again, *algo NULL).
struct AlgoOps;
struct EnvBatch;
int trainer_policy_load(const char* checkpoint, const Cfg* c, struct EnvBatch* env, const struct AlgoOps** ops,
                        void** algo, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
