// g1_eval_step: the G1 tracking task's per-step evaluation (float64 build of envs/g1_tracking.c, g1_eval_step)
// against hand computations, on a 3-s LAFAN1 clip (skipped, 77, when the clip or the model is absent). The
// velocity weights are zeroed, so the normalized score is (0.5 exp(-e_ap/0.3^2) + 0.5 exp(-e_ao/0.4^2) +
// exp(-e_bp/0.3^2) + exp(-e_bo/0.4^2)) / 3:
//   - the robot at the reference (the evaluation start, g1_eval_start): score 1, MPKPE 0, drift 0;
//   - the whole robot moved by d: drift |d|; the re-anchored reference follows x and y, so every body is off by
//     d_z: MPKPE |d_z|, e_bp = d_z^2, e_ap = |d|^2, orientations exact;
//   - the robot turned about the world z axis through the pelvis by theta: the re-anchored reference turns with
//     it (MPKPE 0, body orientations exact), the anchor's orientation error is theta, its drift the chord
//     2 sin(theta / 2) r of its horizontal distance r from the pelvis;
//   - with the velocity terms back (default weights), the score of the reference start lies in (0.6, 1];
//   - the reference qpos the trajectory stores is the library's qpos at the frame the step was scored against.
#define SIM_DOUBLE
#include "sim/sim_forward.c"
#include "envs/g1_tracking.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test.h"

static double P[ENVP_COUNT];
static int32_t s_clip, s_frame, s_push, s_rng[2], s_nstep;
static double s_last[G1_NJ], s_prev[G1_NJ];

int main(void) {
  char model[4096], path[4096], msg[4096];
  if (sim_find_asset("g1/scene_flat.xml", model, sizeof(model)) ||
      sim_find_asset("lafan1_g1/walk1_subject1.csv.gz", path, sizeof(path))) {
    printf("g1_eval_step: the LAFAN1 clip or the G1 model not on the asset path: skipped\n");
    return TEST_SKIP;
  }
  MotionClip full;
  int rc = motion_read_clip(path, G1_NJ, MOTION_LAFAN1_FPS, &full, msg, sizeof(msg));
  TEST_CHECK(rc == 0, "clip: %s", msg);
  if (rc) return test_report("g1_eval_step");
  MotionSet set = {1, (MotionClip*)calloc(1, sizeof(MotionClip))};
  set.clip[0] = full;
  set.clip[0].nframe = 90;  // 3 s from 10 s in
  set.clip[0].qpos = (double*)malloc(sizeof(double) * 90 * full.nq);
  memcpy(set.clip[0].qpos, full.qpos + 300 * full.nq, sizeof(double) * 90 * full.nq);
  motion_clip_free(&full);
  MotionLib lib;
  rc = motion_lib_build(&set, model, 50, &lib, msg, sizeof(msg));
  motion_set_free(&set);
  TEST_CHECK(rc == 0, "motion build: %s", msg);
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  void* mj = NULL;
  SimModel* m = NULL;
  SimData* dd = NULL;
  TEST_CHECK(!rc && sim_load_mjcf(model, &opt, &mj, msg, sizeof(msg)) == 0, "load: %s", msg);
  TEST_CHECK(mj && sim_model_import(mj, &m, msg, sizeof(msg)) == 0, "import: %s", msg);
  TEST_CHECK(m && sim_data_create(m, 1, &dd) == 0, "data");
  void* data = NULL;
  size_t bytes = 0;
  TEST_CHECK(dd && g1_pack(m, &lib, &data, &bytes, msg, sizeof(msg)) == 0, "pack: %s", msg);
  if (!data) return test_report("g1_eval_step");
  SimWorld W;
  sim_world(m, dd, 0, &W);
  const EnvTaskInfo* info = &env_task_g1_tracking.info;
  for (int i = 0; i < ENVP_COUNT; i++) P[i] = info->params[i].def;
  // the evaluation's nominal constants (every reset range 0) and no velocity terms
  for (int i = ENVP_reset_pos_xy; i <= ENVP_reset_joint; i++) P[i] = 0;
  P[ENVP_w_body_lin_vel] = P[ENVP_w_body_ang_vel] = 0;
  void* S[ENVS_COUNT];
  S[ENVS_clip] = &s_clip, S[ENVS_frame] = &s_frame, S[ENVS_last_action] = s_last, S[ENVS_prev_action] = s_prev;
  S[ENVS_push_timer] = &s_push, S[ENVS_rng] = s_rng, S[ENVS_nstep] = &s_nstep;
  EnvTaskCtx C = {P, data, S, NULL, 0, NULL};
  const int f = 0;  // the evaluation start (the hook the CLI uses), scored against its frame (frame - 1 after the act)
  g1_eval_start(m, dd, 0, &C, 0);
  s_frame = f + 1;
  const double* q0 = lib.qpos + (size_t)(lib.clip_start[0] + f) * lib.nq;
  double out[3], ref[36], hold[36];
  g1_eval_ref_qpos(&C, ref);
  double dq = 0;
  for (int i = 0; i < 36; i++) dq = fmax(dq, fabs(ref[i] - q0[i])), dq = fmax(dq, fabs(W.qpos[i] - q0[i]));
  TEST_CHECK(dq < 1e-12, "the start and the stored reference qpos off the library's frame by %g", dq);
  g1_eval_step(m, &W, &C, out);
  TEST_CHECK(fabs(out[0] - 1) < 1e-12 && out[1] < 1e-12 && out[2] < 1e-12,
             "at the reference: score %.15g, MPKPE %g m, drift %g m", out[0], out[1], out[2]);
  memcpy(hold, W.qpos, sizeof(hold));

  const double d[3] = {0.07, -0.05, 0.031};  // moved
  for (int i = 0; i < 3; i++) W.qpos[i] += d[i];
  g1_eval_step(m, &W, &C, out);
  double n2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  double want = (0.5 * exp(-n2 / 0.09) + 0.5 + exp(-d[2] * d[2] / 0.09) + 1) / 3;
  TEST_CHECK(fabs(out[0] - want) < 1e-12 && fabs(out[1] - fabs(d[2])) < 1e-12 && fabs(out[2] - sqrt(n2)) < 1e-12,
             "moved by d: score %.15g (want %.15g), MPKPE %.15g (want %g), drift %.15g (want %.15g)", out[0], want,
             out[1], fabs(d[2]), out[2], sqrt(n2));

  memcpy(W.qpos, hold, sizeof(hold));  // turned about z through the pelvis
  const double th = 0.3, z[3] = {0, 0, 1};
  double qz[4], qn[4];
  simu_axisAngle2Quat(qz, z, th);
  simu_mulQuat(qn, qz, W.qpos + 3);
  memcpy(W.qpos + 3, qn, sizeof(qn));
  const double* pa = lib.body_pos_w + ((size_t)(lib.clip_start[0] + f) * lib.nbody + motion_lib_body(&lib, "torso_link")) * 3;
  double r = hypot(pa[0] - q0[0], pa[1] - q0[1]), chord = 2 * sin(th / 2) * r;
  g1_eval_step(m, &W, &C, out);
  want = (0.5 * exp(-chord * chord / 0.09) + 0.5 * exp(-th * th / 0.16) + 2) / 3;
  TEST_CHECK(fabs(out[0] - want) < 1e-12 && out[1] < 1e-12 && fabs(out[2] - chord) < 1e-12,
             "turned by %g: score %.15g (want %.15g), MPKPE %g (want 0), drift %.15g (want %.15g)", th, out[0], want,
             out[1], out[2], chord);

  memcpy(W.qpos, hold, sizeof(hold));  // the velocity terms back: the finite-difference reference velocities
  P[ENVP_w_body_lin_vel] = P[ENVP_w_body_ang_vel] = 1;  // differ a little from the joint-space ones
  g1_eval_step(m, &W, &C, out);
  TEST_CHECK(out[0] > 0.6 && out[0] <= 1 && out[1] < 1e-12, "at the reference with velocities: score %g", out[0]);
  printf("g1_eval_step: reference start with velocity terms: score %.6f\n", out[0]);

  free(data);
  motion_lib_free(&lib);
  sim_data_free(dd);
  sim_model_free(m);
  sim_free_mjmodel(mj);
  return test_report("g1_eval_step");
}
