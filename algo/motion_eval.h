// motion_eval.h: a policy on a motion-tracking task's reference clips (`adjoint eval --motions`, the trainer's
// run.eval_motions). One world per clip, all clips at once on the CPU batch (env.c), each from its first frame
// at the reference state, deterministic policy, nominal model: the task's EnvTaskEval.params over the run's
// env.params (no observation noise, pushes, reset noise or randomisation; a clip plays once). A finished world
// is held, not reset (EnvBatch.hold), so a fall ends the clip's scoring and its trajectory shows what followed.
//
// Per clip, over its control steps (one per reference frame; EnvTaskEval.step after each):
//   fall            the first step whose termination fired (task termination or a non-finite state), or none;
//   normalized return  the mean over the clip's steps of the step's normalized tracking score, steps after the
//                   fall scoring 0 (the fall's own step scores what it tracked);
//   MPKPE (mm)      the mean over the steps up to the fall (or the end) of the tracked bodies' mean distance to the
//                   reference re-anchored to the robot's anchor;
//   anchor drift (m) the mean over the same steps of the anchor's world distance to the reference anchor.
// Means over clips are unweighted.
#ifndef ADJ_ALGO_MOTION_EVAL_H
#define ADJ_ALGO_MOTION_EVAL_H

#include <stddef.h>

#include "algo/cfg.h"
#include "envs/env.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOTION_EVAL_NAME 64

typedef struct {
  char name[MOTION_EVAL_NAME];
  int steps;         // control steps scored (the clip's, or max_steps)
  int fall_step;     // 1-based step of the first termination; 0: none
  double fall_time;  // s (fall_step x the control period), NaN: none
  double norm_return, mpkpe_mm, drift_m;
} MotionClipEval;

typedef struct {
  int nclip, falls;
  double dt;  // control period (s)
  double norm_return, mpkpe_mm, drift_m;  // unweighted means over clips
  double seconds;                         // wall time of the evaluation
  MotionClipEval* clip;                   // (nclip), owned by the MotionEval
} MotionEvalResult;

typedef struct MotionEval MotionEval;

// Builds the evaluation worlds for the run's config c: motions (NULL: the run's own motion data) replaces the
// task's motion constant; the clips named in names (nnames > 0), else `subset` clips evenly spaced over the
// library (0: all of them), in library order; each scored over at most max_steps control steps (0: the full
// clip). like (non-NULL, with motions NULL): a batch of the run's task whose motion data the evaluation shares
// instead of loading it again (the trainer's worlds; like must outlive the MotionEval). TRAIN_EUSER with a
// message (a task without reference motions, an unknown clip, motion data that does not load) or TRAIN_ERUN.
int motion_eval_open(MotionEval** out, const Cfg* c, const char* motions, const EnvBatch* like,
                     const char* const* names, int nnames, int subset, int max_steps, char* err, size_t errlen);
// The backend of the physics: "cpu" (the default: the CPU batch) or "cuda" (the CUDA environment, one world per
// clip on the device; the policy and the scoring stay on the host, algo/motion_eval_cuda.cu). TRAIN_EUSER with a
// message where the build has no CUDA backend or no device is found.
int motion_eval_set_device(MotionEval* me, const char* device, char* err, size_t errlen);
// The clips of the library (names) and the worlds' clips, for a listing.
int motion_eval_library_size(const MotionEval* me);
const char* motion_eval_library_clip(const MotionEval* me, int clip);
// Runs the policy of checkpoint (read with the config given to open) on every clip; record 1 keeps each
// clip's trajectory for motion_eval_write_trajectory. The result points into me (valid until the next run).
int motion_eval_run(MotionEval* me, const char* checkpoint, int record, MotionEvalResult* out, char* err,
                    size_t errlen);
// The last recorded run's trajectories as HDF5 (temp + rename): per clip `<name>/qpos` (steps + 1, nq), the
// robot's qpos at the start and after every control step, `<name>/ref_qpos` (steps + 1, nq), the reference's
// qpos at the frame each row was scored against (row 0: the first frame), `<name>/fall_step` (1, int32, 0:
// none); root `dt` (1, float64); attributes format "adjoint trajectory 1", checkpoint, model, clips (names, one a
// line). TRAIN_ERUN when nothing was recorded or the write fails.
int motion_eval_write_trajectory(const MotionEval* me, const char* path, const char* checkpoint, char* err,
                                 size_t errlen);
void motion_eval_close(MotionEval* me);

#ifdef __cplusplus
}
#endif
#endif
