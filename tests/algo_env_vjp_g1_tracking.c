// algo_env_vjp_g1_tracking: the G1 tracking task (float64 build of envs/g1_tracking.c) on the G1 model through
// the float64 engine, its reference from two short LAFAN1 clips (skipped, 77, when the clips or the model are
// absent):
//   - the task's own body frames (env_tree_frames) against the engine's kinematics stage;
//   - the observation against an independent computation at reset states: the anchor-frame terms from
//     quaternions (xquat) where the task uses matrices, the pelvis velocity and every body's velocity against
//     differences of positions along q (+) qvel h (the engine's own integration), the re-anchored reference
//     (yaw from the quaternion formula) in the body-position error; the residual action's ctrl;
//   - every observation block's and reward term's VJP (each term alone) against central differences in the
//     engine's tangent space (q (+) eps e_k through sim_integratePos, never raw quaternion components), the
//     world's kinematics arrays poisoned (NaN) so that every function evaluates its frames at the qpos it gets, at
//     states drawn from both clips with reset noise and extra offsets of the robot's anchor (the re-anchored
//     reference depends on its pose), joints pushed past their soft limits;
//   - act's VJP (ctrl and the last/previous action state) against differences over the action and the state;
//   - one BPTT rollout (2 control steps x 4 substeps from a reference pose, feet in contact, converged solver,
//     the foot frictions and torso COM randomised by the task's reset through per-world parameters):
//     the gradient of sum_t r_t + g . critic_obs_T with respect to the actions, the initial tangent qpos, qvel
//     and last action, from the task VJPs and the engine adjoint chained as SHAC does, against differences.
// Errors: |vjp - fd| / max(|fd|, 1e-6 max_k |fd_k|) per partial (partials zero in both left out); medians
// <= 1e-6 per term.
#define SIM_DOUBLE
#include "sim/sim_forward.c"  // sim_integratePos, the kinematics stage
#include "envs/g1_tracking.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_adjoint.h"
#include "tests/fd_errors.h"
#include "tests/test.h"

#define NQ 36
#define NV 35
#define NU 29
#define NO 160
#define NC 286

static double P[ENVP_COUNT];
static EnvTaskCtx C;
static int32_t s_clip, s_frame, s_push, s_rng[2], s_nstep;
static double s_last[NU], s_prev[NU], ds_last[NU], ds_prev[NU];
static void* S[ENVS_COUNT];
static void* DS[ENVS_COUNT];

static double urand(uint64_t* s, double lo, double hi) { return lo + (hi - lo) * env_rng_uniform(s); }
static const SimModel* M;
static SimData* DD;
static SimWorld W;
static void kin(void) { sim_run_stage(M, DD, SIM_STAGE_KINEMATICS); }
// the task computes its frames from qpos: the world's kinematics arrays poisoned show it never reads them
static void poison(void) {
  for (int i = 0; i < 3 * M->nbody; i++) W.xpos[i] = NAN;
  for (int i = 0; i < 4 * M->nbody; i++) W.xquat[i] = NAN;
  for (int i = 0; i < 9 * M->nbody; i++) W.xmat[i] = NAN;
  for (int i = 0; i < 3 * M->njnt; i++) W.xanchor[i] = NAN, W.xaxis[i] = NAN;
}

// the function under test: a weighted observation block (actor or critic) or the reward
enum { F_OBS, F_CRITIC, F_REWARD };
static double f_eval(int kind, const double* g) {
  poison();
  double o[NC], f = 0;
  if (kind == F_REWARD) return g1_tracking_reward(M, &W, &C, NULL);
  if (kind == F_OBS) g1_tracking_observe(M, &W, &C, o, 0, 1);
  else g1_tracking_observe_critic(M, &W, &C, o, 0, 1);
  for (int i = 0; i < (kind == F_OBS ? NO : NC); i++) f += g[i] * o[i];
  return f;
}
static void vjp(int kind, const double* g, double* dq, double* dv) {
  double dc[NU] = {0};
  poison();
  if (kind == F_REWARD) g1_tracking_reward_vjp(M, &W, &C, NULL, 1, dq, dv, dc);
  else if (kind == F_OBS) g1_tracking_observe_vjp(M, &W, &C, g, dq, dv);
  else g1_tracking_observe_critic_vjp(M, &W, &C, g, dq, dv);
}

// checks one function's state gradient (tangent qpos, qvel and the action state) against central differences;
// returns the median relative error, appends to the overall worst
static double check(int kind, const double* g, double* worst, int* count) {
  static double errs[4 * (2 * NV + 2 * NU)];
  int ne = 0;
  double dq[NV] = {0}, dv[NV] = {0}, fq[NV], fv[NV], fl[NU], fp[NU];
  memset(ds_last, 0, sizeof(ds_last)), memset(ds_prev, 0, sizeof(ds_prev));
  vjp(kind, g, dq, dv);
  const double eps = 1e-6;
  double q0[NQ], v0[NV];
  memcpy(q0, W.qpos, sizeof(q0)), memcpy(v0, W.qvel, sizeof(v0));
  for (int j = 0; j < NV; j++) {
    double f[2], f2[2];
    for (int s = 0; s < 2; s++) {
      double e[NV] = {0};
      e[j] = 1;
      memcpy(W.qpos, q0, sizeof(q0));
      sim_integratePos(M, W.qpos, e, s ? eps : -eps, 0, 1);
      f[s] = f_eval(kind, g);
    }
    memcpy(W.qpos, q0, sizeof(q0));
    for (int s = 0; s < 2; s++) {
      W.qvel[j] = v0[j] + (s ? eps : -eps);
      f2[s] = f_eval(kind, g);
    }
    W.qvel[j] = v0[j];
    fq[j] = (f[1] - f[0]) / (2 * eps), fv[j] = (f2[1] - f2[0]) / (2 * eps);
  }
  for (int j = 0; j < NU; j++) {
    double f[2], f2[2], l = s_last[j], p = s_prev[j];
    for (int s = 0; s < 2; s++) {
      s_last[j] = l + (s ? eps : -eps);
      f[s] = f_eval(kind, g);
      s_last[j] = l;
      s_prev[j] = p + (s ? eps : -eps);
      f2[s] = f_eval(kind, g);
      s_prev[j] = p;
    }
    fl[j] = (f[1] - f[0]) / (2 * eps), fp[j] = (f2[1] - f2[0]) / (2 * eps);
  }
  double ga[2 * NV + 2 * NU], fa[2 * NV + 2 * NU];
  memcpy(ga, dq, sizeof(dq)), memcpy(ga + NV, dv, sizeof(dv));
  memcpy(ga + 2 * NV, ds_last, sizeof(ds_last)), memcpy(ga + 2 * NV + NU, ds_prev, sizeof(ds_prev));
  memcpy(fa, fq, sizeof(fq)), memcpy(fa + NV, fv, sizeof(fv)), memcpy(fa + 2 * NV, fl, sizeof(fl));
  memcpy(fa + 2 * NV + NU, fp, sizeof(fp));
  fd_rel_errors(ga, fa, 2 * NV + 2 * NU, 1, errs, &ne, worst);
  int nz = 0;
  for (int i = 0; i < 2 * NV + 2 * NU; i++) nz += fabs(fa[i]) > 1e-9;
  *count = nz;
  return ne ? fd_median(errs, ne) : 0;
}

// quaternion helpers for the independent computation
static void qrot(const double q[4], const double v[3], double r[3]) {  // r = q v q^-1
  double t[3] = {2 * (q[2] * v[2] - q[3] * v[1]), 2 * (q[3] * v[0] - q[1] * v[2]), 2 * (q[1] * v[1] - q[2] * v[0])};
  r[0] = v[0] + q[0] * t[0] + q[2] * t[2] - q[3] * t[1];
  r[1] = v[1] + q[0] * t[1] + q[3] * t[0] - q[1] * t[2];
  r[2] = v[2] + q[0] * t[2] + q[1] * t[1] - q[2] * t[0];
}
static void qconj(const double q[4], double r[4]) { r[0] = q[0], r[1] = -q[1], r[2] = -q[2], r[3] = -q[3]; }
static void qmul(const double a[4], const double b[4], double r[4]) {
  r[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  r[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  r[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  r[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

// act from a fixed point: L = gc . ctrl + gl . last' + gp . prev' (the state before the act: l0, p0)
typedef struct {
  const double *gc, *gl, *gp, *l0, *p0;
  int32_t frame, nstep, push;
} ActPoint;
static double act_L(const ActPoint* ap, const double* a) {
  s_frame = ap->frame, s_nstep = ap->nstep, s_push = ap->push;
  memcpy(s_last, ap->l0, sizeof(s_last)), memcpy(s_prev, ap->p0, sizeof(s_prev));
  g1_tracking_act(M, &W, &C, a, 0, 1);
  double L = 0;
  for (int i = 0; i < NU; i++) L += ap->gc[i] * W.ctrl[i] + ap->gl[i] * s_last[i] + ap->gp[i] * s_prev[i];
  memcpy(s_last, ap->l0, sizeof(s_last)), memcpy(s_prev, ap->p0, sizeof(s_prev));
  s_frame = ap->frame, s_nstep = ap->nstep, s_push = ap->push;
  return L;
}

// ---- a BPTT rollout through contacts: the task's state and the engine's, saved and restored whole ----
#define KR 2  // control steps of the rollout
typedef struct {
  double qpos[NQ], qvel[NV], ctrl[NU], warm[NV], time;
  int32_t clip, frame, push, rng[2], nstep;
  double last[NU], prev[NU];
} Snap;
static void snap_save(Snap* s) {
  memcpy(s->qpos, W.qpos, sizeof(s->qpos)), memcpy(s->qvel, W.qvel, sizeof(s->qvel));
  memcpy(s->ctrl, W.ctrl, sizeof(s->ctrl)), memcpy(s->warm, W.qacc_warmstart, sizeof(s->warm));
  s->time = W.time[0], s->clip = s_clip, s->frame = s_frame, s->push = s_push, s->nstep = s_nstep;
  s->rng[0] = s_rng[0], s->rng[1] = s_rng[1];
  memcpy(s->last, s_last, sizeof(s_last)), memcpy(s->prev, s_prev, sizeof(s_prev));
}
static void snap_load(const Snap* s) {
  memcpy(W.qpos, s->qpos, sizeof(s->qpos)), memcpy(W.qvel, s->qvel, sizeof(s->qvel));
  memcpy(W.ctrl, s->ctrl, sizeof(s->ctrl)), memcpy(W.qacc_warmstart, s->warm, sizeof(s->warm));
  W.time[0] = s->time, s_clip = s->clip, s_frame = s->frame, s_push = s->push, s_nstep = s->nstep;
  s_rng[0] = s->rng[0], s_rng[1] = s->rng[1];
  memcpy(s_last, s->last, sizeof(s_last)), memcpy(s_prev, s->prev, sizeof(s_prev));
}
// L = sum_t r_t + g . critic_obs_T from s0 under actions a (KR, NU)
static double rollout(const Snap* s0, const double* a, const double* g, int record, Snap* pre, Snap* post) {
  snap_load(s0);
  double L = 0, o[NC];
  for (int t = 0; t < KR; t++) {
    if (pre) snap_save(&pre[t]);
    g1_tracking_act(M, &W, &C, a + t * NU, 0, 1);
    sim_control_step(M, DD, 4, record);
    L += g1_tracking_reward(M, &W, &C, a + t * NU);
    if (post) snap_save(&post[t]);
  }
  g1_tracking_observe_critic(M, &W, &C, o, 0, 1);
  for (int i = 0; i < NC; i++) L += g[i] * o[i];
  return L;
}

static const char* kClips[2] = {"lafan1_g1/walk1_subject1.csv.gz", "lafan1_g1/dance1_subject1.csv.gz"};

int main(void) {
  char model[4096], path[4096], msg[4096];
  if (sim_find_asset("g1/scene_flat.xml", model, sizeof(model)) || sim_find_asset(kClips[0], path, sizeof(path)) ||
      sim_find_asset(kClips[1], path, sizeof(path))) {
    printf("algo_env_vjp_g1_tracking: LAFAN1 clips or the G1 model not on the asset path: skipped\n");
    return TEST_SKIP;
  }
  // two short clips: 3 s of each, from 10 s in
  MotionSet set = {2, (MotionClip*)calloc(2, sizeof(MotionClip))};
  for (int c = 0; c < 2; c++) {
    MotionClip full;
    int rc = sim_find_asset(kClips[c], path, sizeof(path));
    if (!rc) rc = motion_read_clip(path, MOTION_G1_NJOINT, MOTION_LAFAN1_FPS, &full, msg, sizeof(msg));
    TEST_CHECK(rc == 0 && full.nframe > 400, "%s: %s", kClips[c], msg);
    if (rc) return test_report("algo_env_vjp_g1_tracking");
    MotionClip* s = &set.clip[c];
    *s = full;
    s->nframe = 90;
    s->qpos = (double*)malloc(sizeof(double) * 90 * full.nq);
    memcpy(s->qpos, full.qpos + 300 * full.nq, sizeof(double) * 90 * full.nq);
    motion_clip_free(&full);
  }
  MotionLib lib;
  int rc = motion_lib_build(&set, model, 50, &lib, msg, sizeof(msg));
  TEST_CHECK(rc == 0, "motion build: %s", msg);
  motion_set_free(&set);
  if (rc) return test_report("algo_env_vjp_g1_tracking");

  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.iterations = 1000, opt.tolerance = 1e-15, opt.ls_iterations = 100;  // converged: the adjoint's fixed point
  void* mj = NULL;
  TEST_CHECK(sim_load_mjcf(model, &opt, &mj, msg, sizeof(msg)) == 0, "load: %s", msg);
  SimModel* m = NULL;
  TEST_CHECK(mj && sim_model_import(mj, &m, msg, sizeof(msg)) == 0, "import: %s", msg);
  if (!m) return test_report("algo_env_vjp_g1_tracking");
  TEST_CHECK(sim_adjoint_enable(m, KR * 4) == 0, "adjoint");
  // per-world parameters: every reset below draws the foot frictions and the torso COM (the training default),
  // constants for the gradient
  TEST_CHECK(sim_params_enable(m) == 0, "per-world parameters");
  TEST_CHECK(sim_data_create(m, 1, &DD) == 0, "data");
  M = m;
  sim_world(m, DD, 0, &W);
  void* data = NULL;
  size_t bytes = 0;
  rc = g1_pack(m, &lib, &data, &bytes, msg, sizeof(msg));
  TEST_CHECK(rc == 0, "pack: %s", msg);
  if (rc) return test_report("algo_env_vjp_g1_tracking");
  const G1Data* D = (const G1Data*)data;
  const EnvTaskInfo* info = &env_task_g1_tracking.info;
  TEST_CHECK(info->obs_dim == NO && info->act_dim == NU && info->frame_skip == 4 && info->nstate == ENVS_COUNT &&
                 info->nparam == ENVP_COUNT && !info->needs_kinematics,
             "task info");
  int want_bins = 0;
  for (int c = 0; c < 2; c++) want_bins += lib.clip_len[c] / 50 + 1;  // floor(T / (1 / 0.02)) + 1
  TEST_CHECK(D->nclip == 2 && D->nframe == lib.nframe && D->nbin == want_bins, "data: %d clips %d frames %d bins",
             D->nclip, D->nframe, D->nbin);
  // the actuator scales: 0.25 effort / kp (training.md: 0.4386 / 0.5475 / 0.3507 / 0.0745)
  TEST_CHECK(fabs(D->act_scale[0] - 0.4386) < 1e-4 && fabs(D->act_scale[10] - 0.5475) < 1e-4 &&
                 fabs(D->act_scale[15] - 0.3507) < 1e-4 && fabs(D->act_scale[19] - 0.0745) < 1e-4,
             "action scales %g %g %g %g", D->act_scale[0], D->act_scale[10], D->act_scale[15], D->act_scale[19]);

  for (int i = 0; i < ENVP_COUNT; i++) P[i] = info->params[i].def;
  P[ENVP_obs_noise] = 0, P[ENVP_push_max] = 0;
  S[ENVS_clip] = &s_clip, S[ENVS_frame] = &s_frame, S[ENVS_last_action] = s_last, S[ENVS_prev_action] = s_prev;
  S[ENVS_push_timer] = &s_push, S[ENVS_rng] = s_rng, S[ENVS_nstep] = &s_nstep;
  DS[ENVS_last_action] = ds_last, DS[ENVS_prev_action] = ds_prev;
  C.p = P, C.data = data, C.s = S, C.ds = DS, C.w = 0;
  uint64_t rng = 2026;

  // ---- the observation and the reward's body-position term against an independent computation ----
  double worst_fwd = 0;
  for (int k = 0; k < 4; k++) {
    sim_reset(m, DD, 0, -1);
    memset(s_last, 0, sizeof(s_last)), memset(s_prev, 0, sizeof(s_prev));
    g1_tracking_reset(m, &W, &C, &rng, 0, 1);
    double a[NU];
    for (int i = 0; i < NU; i++) a[i] = urand(&rng, -1, 1);
    const int f0 = s_frame, c0 = s_clip;
    g1_tracking_act(m, &W, &C, a, 0, 1);
    const sim_real* r0 = g1_ref(D, c0, f0);
    for (int i = 0; i < NU; i++) {
      double want = r0[G1_RJP + D->act_joint[i]] + D->act_scale[i] * a[i];
      worst_fwd = fmax(worst_fwd, fabs(W.ctrl[i] - want));
    }
    TEST_CHECK(s_frame == f0 + 1 && s_last[3] == a[3], "act advances the frame and keeps the action");
    kin();
    G1Kin kk;  // the task's own frames equal the engine's kinematics stage
    g1_kin(m, &W, D, g1_ref_prev(&C), &kk);
    for (int i = 0; i < 3 * G1_NBODY; i++) worst_fwd = fmax(worst_fwd, fabs(kk.xpos[i] - W.xpos[i]));
    for (int i = 0; i < 9 * G1_NBODY; i++) worst_fwd = fmax(worst_fwd, fabs(kk.xmat[i] - W.xmat[i]));
    for (int i = 0; i < 4 * G1_NBODY; i++) worst_fwd = fmax(worst_fwd, fabs(kk.xquat[i] - W.xquat[i]));
    for (int i = 3; i < 3 * m->njnt; i++)
      worst_fwd = fmax(worst_fwd, fmax(fabs(kk.xanchor[i] - W.xanchor[i]), fabs(kk.xaxis[i] - W.xaxis[i])));
    double o[NC];
    g1_tracking_observe_critic(m, &W, &C, o, 0, 1);
    const sim_real* r = g1_ref(D, s_clip, s_frame);
    int ba = D->body[G1_ANCHOR];
    const double *qa = W.xquat + 4 * ba, *pa = W.xpos + 3 * ba;
    double qai[4], u[3], y[3];
    qconj(qa, qai);
    for (int i = 0; i < 3; i++) u[i] = r[G1_RPOS + 3 * G1_ANCHOR + i] - pa[i];
    qrot(qai, u, y);
    for (int i = 0; i < 3; i++) worst_fwd = fmax(worst_fwd, fabs(o[58 + i] - y[i]));
    double qrel[4], e0[3] = {1, 0, 0}, e1[3] = {0, 1, 0}, c0v[3], c1v[3];
    qmul(qai, r + G1_RQUAT + 4 * G1_ANCHOR, qrel);
    qrot(qrel, e0, c0v), qrot(qrel, e1, c1v);  // the first two columns of R(qa^-1 (x) qref)
    for (int i = 0; i < 3; i++)
      worst_fwd = fmax(worst_fwd, fmax(fabs(o[61 + 2 * i] - c0v[i]), fabs(o[62 + 2 * i] - c1v[i])));
    // velocities by differences of positions along q (+) qvel h
    const double h = 1e-6;
    double q0[NQ], xp[2][G1_NBODY * 3];
    memcpy(q0, W.qpos, sizeof(q0));
    for (int s = 0; s < 2; s++) {
      memcpy(W.qpos, q0, sizeof(q0));
      sim_integratePos(m, W.qpos, W.qvel, s ? h : -h, 0, 1);
      kin();
      memcpy(xp[s], W.xpos, sizeof(xp[s]));
    }
    memcpy(W.qpos, q0, sizeof(q0));
    kin();
    double vp[3], vb[3], tw[6 * G1_NBODY];
    for (int i = 0; i < 3; i++) u[i] = (xp[1][3 * D->body[0] + i] - xp[0][3 * D->body[0] + i]) / (2 * h);
    double qpi[4];
    qconj(W.xquat + 4 * D->body[0], qpi);
    qrot(qpi, u, vp);
    for (int i = 0; i < 3; i++) worst_fwd = fmax(worst_fwd, fabs(o[67 + i] - vp[i]) / 10);  // FD: ~1e-9
    EnvFrames wf = {W.xpos, W.xquat, W.xmat, W.xanchor, W.xaxis};  // the engine's kinematics here
    env_body_twists(m, &wf, W.qvel, tw);
    for (int b = 1; b < G1_NBODY; b++) {
      g1_body_vel(W.xpos, tw, b, vb);
      for (int i = 0; i < 3; i++)
        worst_fwd = fmax(worst_fwd, fabs(vb[i] - (xp[1][3 * b + i] - xp[0][3 * b + i]) / (2 * h)) / 10);
    }
    for (int j = 0; j < NU; j++)
      worst_fwd = fmax(worst_fwd, fabs(o[73 + j] - (W.qpos[7 + j] - D->default_pos[j])) + fabs(o[131 + j] - a[j]));
    for (int b = 0; b < G1_NB; b++) {  // critic: body positions in the anchor frame
      for (int i = 0; i < 3; i++) u[i] = W.xpos[3 * D->body[b] + i] - pa[i];
      qrot(qai, u, y);
      for (int i = 0; i < 3; i++) worst_fwd = fmax(worst_fwd, fabs(o[160 + 3 * b + i] - y[i]));
    }
    // the body-position reward term alone: the reference re-anchored by yaw(qa (x) qref^-1) (quaternion formula)
    for (int i = 0; i < ENVP_COUNT; i++) P[i] = 0 * info->params[i].def;
    P[ENVP_w_body_pos] = 1, P[ENVP_residual] = 1;
    const sim_real* rp = g1_ref(D, s_clip, s_frame - 1);
    double qri[4], qd[4];
    qconj(rp + G1_RQUAT + 4 * G1_ANCHOR, qri);
    qmul(qa, qri, qd);
    double yaw = atan2(2 * (qd[0] * qd[3] + qd[1] * qd[2]), 1 - 2 * (qd[2] * qd[2] + qd[3] * qd[3]));
    double qz[4] = {cos(yaw / 2), 0, 0, sin(yaw / 2)}, err = 0;
    for (int b = 0; b < G1_NB; b++) {
      double off[3], ro[3];
      for (int i = 0; i < 3; i++) off[i] = rp[G1_RPOS + 3 * b + i] - rp[G1_RPOS + 3 * G1_ANCHOR + i];
      qrot(qz, off, ro);
      double pr[3] = {pa[0] + ro[0], pa[1] + ro[1], rp[G1_RPOS + 3 * G1_ANCHOR + 2] + ro[2]};
      for (int i = 0; i < 3; i++) err += (pr[i] - W.xpos[3 * D->body[b] + i]) * (pr[i] - W.xpos[3 * D->body[b] + i]);
    }
    double want_r = 0.02 * exp(-err / G1_NB / 0.09);
    worst_fwd = fmax(worst_fwd, fabs(g1_tracking_reward(m, &W, &C, NULL) - want_r));
    for (int i = 0; i < ENVP_COUNT; i++) P[i] = info->params[i].def;
    P[ENVP_obs_noise] = 0, P[ENVP_push_max] = 0;
  }
  TEST_CHECK(worst_fwd < 1e-8, "observation, ctrl and the body-position term vs an independent computation: %.3g",
             worst_fwd);

  // ---- every observation block's and reward term's VJP ----
  static const struct { const char* name; int kind, lo, hi; } obs_blocks[] = {
      {"motion_anchor_pos_b", F_OBS, 58, 61},  {"motion_anchor_ori_b", F_OBS, 61, 67},
      {"base_lin_vel", F_OBS, 67, 70},         {"base_ang_vel", F_OBS, 70, 73},
      {"joint_pos_rel", F_OBS, 73, 102},       {"joint_vel_rel", F_OBS, 102, 131},
      {"last_action", F_OBS, 131, 160},        {"critic: all", F_CRITIC, 0, 286},
      {"robot_body_pos_b", F_CRITIC, 160, 202}, {"robot_body_ori_b", F_CRITIC, 202, 286}};
  static const int rew_terms[] = {ENVP_w_anchor_pos, ENVP_w_anchor_ori, ENVP_w_body_pos, ENVP_w_body_ori,
                                  ENVP_w_body_lin_vel, ENVP_w_body_ang_vel, ENVP_w_action_rate, ENVP_w_joint_limit};
  const int NBLK = 10, NREW = 8;
  double med[18][6], worst = 0;
  int nzmin[18];
  for (int t = 0; t < 18; t++) nzmin[t] = 1 << 30;
  const int NSTATE = 6;
  for (int k = 0; k < NSTATE; k++) {
    sim_reset(m, DD, 0, -1);
    g1_tracking_reset(m, &W, &C, &rng, 0, 1);
    g1_start(m, &W, &C, &rng, k % 2, (int)urand(&rng, 0, g1_clip_len(D, k % 2) - 3));  // both clips
    double a[NU];
    for (int i = 0; i < NU; i++) a[i] = urand(&rng, -1, 1);
    g1_tracking_act(m, &W, &C, a, 0, 1);
    for (int i = 0; i < NU; i++) a[i] = urand(&rng, -1, 1);
    g1_tracking_act(m, &W, &C, a, 0, 1);  // last and previous action both set
    // the robot away from its reference: anchor offsets of about the tracking stds, a turned root
    double rv[NV] = {0};
    for (int i = 0; i < 3; i++) rv[i] = urand(&rng, -0.2, 0.2), rv[3 + i] = urand(&rng, -0.25, 0.25);
    for (int i = 6; i < NV; i++) rv[i] = urand(&rng, -0.1, 0.1);
    sim_integratePos(m, W.qpos, rv, 1, 0, 1);
    for (int i = 0; i < NV; i++) W.qvel[i] += urand(&rng, -1, 1);
    const int lim[3] = {5, 11, 13};  // the ankle rolls and the waist roll past their (narrow) soft limits
    for (int j = 0; j < 3; j++) {
      int jj = lim[j];
      W.qpos[7 + jj] = urand(&rng, 0, 1) < 0.5 ? D->soft_lo[jj] - 0.05 : D->soft_hi[jj] + 0.05;
    }
    for (int t = 0; t < NBLK; t++) {
      double g[NC] = {0};
      for (int i = obs_blocks[t].lo; i < obs_blocks[t].hi; i++) g[i] = urand(&rng, -1, 1);
      int nz;
      med[t][k] = check(obs_blocks[t].kind, g, &worst, &nz);
      nzmin[t] = nz < nzmin[t] ? nz : nzmin[t];
    }
    for (int t = 0; t < NREW; t++) {
      for (int i = 0; i < ENVP_COUNT; i++) P[i] = info->params[i].def;
      P[ENVP_obs_noise] = 0, P[ENVP_push_max] = 0;
      for (int i = 0; i < NREW; i++)
        if (i != t) P[rew_terms[i]] = 0;
      P[ENVP_w_self_collision] = 0;
      int nz;
      med[NBLK + t][k] = check(F_REWARD, NULL, &worst, &nz);
      nzmin[NBLK + t] = nz < nzmin[NBLK + t] ? nz : nzmin[NBLK + t];
    }
    for (int i = 0; i < ENVP_COUNT; i++) P[i] = info->params[i].def;
    P[ENVP_obs_noise] = 0, P[ENVP_push_max] = 0;
  }
  static const char* rew_names[] = {"anchor_pos", "anchor_ori", "body_pos", "body_ori",
                                    "body_lin_vel", "body_ang_vel", "action_rate", "joint_limit"};
  double all[18 * 6];
  int na = 0;
  for (int t = 0; t < NBLK + NREW; t++) {
    double mt = fd_median(med[t], NSTATE);
    const char* nm = t < NBLK ? obs_blocks[t].name : rew_names[t - NBLK];
    printf("  %-20s median over states of the per-state medians %.3g, nonzero partials >= %d\n", nm, mt, nzmin[t]);
    TEST_CHECK(mt <= 1e-6, "%s: VJP vs tangent-space FD median %.3g", nm, mt);
    TEST_CHECK(nzmin[t] > 0, "%s: the gradient is not all zero", nm);
    for (int k = 0; k < NSTATE; k++) all[na++] = med[t][k];
  }

  // ---- act's VJP: L = gc . ctrl + gl . last' + gp . prev' over the action and the state before the act ----
  double ga_err[2 * NU];
  int nae = 0;
  double worst_act = 0;
  {
    double a[NU], gc[NU], gl[NU], gp[NU], l0[NU], p0[NU];
    for (int i = 0; i < NU; i++)
      a[i] = urand(&rng, -1, 1), gc[i] = urand(&rng, -1, 1), gl[i] = urand(&rng, -1, 1), gp[i] = urand(&rng, -1, 1);
    memcpy(l0, s_last, sizeof(l0)), memcpy(p0, s_prev, sizeof(p0));
    ActPoint ap = {gc, gl, gp, l0, p0, s_frame, s_nstep, s_push};
    double da[NU] = {0}, fa[2 * NU], gav[2 * NU];
    memcpy(ds_last, gl, sizeof(gl)), memcpy(ds_prev, gp, sizeof(gp));
    g1_tracking_act_vjp(m, &W, &C, a, gc, da);
    const double eps = 1e-6;
    for (int j = 0; j < NU; j++) {
      double f[2], aj = a[j], lj = l0[j];
      for (int s = 0; s < 2; s++) a[j] = aj + (s ? eps : -eps), f[s] = act_L(&ap, a);
      a[j] = aj;
      fa[j] = (f[1] - f[0]) / (2 * eps);
      for (int s = 0; s < 2; s++) l0[j] = lj + (s ? eps : -eps), f[s] = act_L(&ap, a);
      l0[j] = lj;
      fa[NU + j] = (f[1] - f[0]) / (2 * eps);
    }
    memcpy(gav, da, sizeof(da)), memcpy(gav + NU, ds_last, sizeof(ds_last));
    fd_rel_errors(gav, fa, 2 * NU, 1, ga_err, &nae, &worst_act);
    double pz = 0;
    for (int i = 0; i < NU; i++) pz += fabs(ds_prev[i]);
    TEST_CHECK(pz == 0, "act_vjp: prev' does not depend on prev");
  }
  double med_act = fd_median(ga_err, nae);
  TEST_CHECK(med_act <= 1e-6, "act VJP vs FD: median %.3g max %.3g", med_act, worst_act);

  // ---- a BPTT rollout from the reference pose (feet on the floor) ----
  sim_reset(m, DD, 0, -1);
  for (int i = 0; i < ENVP_COUNT; i++) P[i] = info->params[i].def;
  P[ENVP_obs_noise] = 0, P[ENVP_push_max] = 0, P[ENVP_w_self_collision] = 0;
  g1_tracking_reset(m, &W, &C, &rng, 0, 1);
  g1_start(m, &W, &C, &rng, 0, 40);
  {
    const G1Data* Dg = (const G1Data*)data;
    int g0 = Dg->foot_geom[0], bt = Dg->body[G1_ANCHOR];
    TEST_CHECK(W.prm_geom_friction[3 * g0] != m->geom_friction[3 * g0] &&
                   W.prm_body_ipos[3 * bt] != m->body_ipos[3 * bt],
               "the rollout's world has randomised foot friction and torso COM");
  }
  for (int i = 0; i < NU; i++) s_last[i] = urand(&rng, -0.5, 0.5), s_prev[i] = 0;
  Snap s0, pre[KR], post[KR];
  snap_save(&s0);
  double ar[KR * NU], gr[NC], gar[KR * NU], fr[KR * NU + 2 * NV + NU], gall[KR * NU + 2 * NV + NU];
  for (int i = 0; i < KR * NU; i++) ar[i] = urand(&rng, -0.5, 0.5);
  for (int i = 0; i < NC; i++) gr[i] = urand(&rng, -0.1, 0.1);
  sim_tape_clear(m, DD);
  rollout(&s0, ar, gr, 1, pre, post);
  int ncon = DD->ncon[0];
  double *aq = DD->adj_qpos, *av = DD->adj_qvel;
  memset(aq, 0, sizeof(double) * NV), memset(av, 0, sizeof(double) * NV);
  memset(ds_last, 0, sizeof(ds_last)), memset(ds_prev, 0, sizeof(ds_prev));
  g1_tracking_observe_critic_vjp(m, &W, &C, gr, aq, av);
  for (int t = KR - 1; t >= 0; t--) {
    double du[NU] = {0};
    snap_load(&post[t]);
    g1_tracking_reward_vjp(m, &W, &C, ar + t * NU, 1, aq, av, du);
    snap_load(&pre[t]);  // the backward keeps the world's state; it recomputes from the tape
    sim_control_step_backward(m, DD, 4);
    for (int i = 0; i < NU; i++) du[i] += DD->adj_ctrl[i], gar[t * NU + i] = 0;
    g1_tracking_act_vjp(m, &W, &C, ar + t * NU, du, gar + t * NU);
  }
  memcpy(gall, gar, sizeof(gar)), memcpy(gall + KR * NU, aq, sizeof(double) * NV);
  memcpy(gall + KR * NU + NV, av, sizeof(double) * NV), memcpy(gall + KR * NU + 2 * NV, ds_last, sizeof(ds_last));
  const double eps = 1e-6;
  for (int j = 0; j < KR * NU + 2 * NV + NU; j++) {
    double f[2];
    for (int s = 0; s < 2; s++) {
      Snap sp = s0;
      double ap[KR * NU], e[NV] = {0}, h = s ? eps : -eps;
      memcpy(ap, ar, sizeof(ap));
      if (j < KR * NU) ap[j] += h;
      else if (j < KR * NU + NV) e[j - KR * NU] = 1, sim_integratePos(m, sp.qpos, e, h, 0, 1);
      else if (j < KR * NU + 2 * NV) sp.qvel[j - KR * NU - NV] += h;
      else sp.last[j - KR * NU - 2 * NV] += h;
      f[s] = rollout(&sp, ap, gr, 0, NULL, NULL);
    }
    fr[j] = (f[1] - f[0]) / (2 * eps);
  }
  double rerr[KR * NU + 2 * NV + NU], worst_r = 0;
  int nr = 0;
  fd_rel_errors(gall, fr, KR * NU + 2 * NV + NU, 1, rerr, &nr, &worst_r);
  double med_r = fd_median(rerr, nr);
  TEST_CHECK(ncon >= 2, "the rollout touches the floor: %d contacts", ncon);
  TEST_CHECK(med_r <= 1e-6, "%d-step BPTT rollout vs tangent-space FD: median %.3g max %.3g over %d partials", KR,
             med_r, worst_r, nr);
  printf("g1_tracking: %d-step BPTT rollout (%d contacts), actions, tangent qpos, qvel and the last action: median "
         "%.3g max %.3g over %d partials\n", KR, ncon, med_r, worst_r, nr);
  printf("g1_tracking: observation vs independent computation %.3g; %d observation blocks and %d reward terms at %d "
         "states: median %.3g, worst partial %.3g; act VJP median %.3g\n",
         worst_fwd, NBLK, NREW, NSTATE, fd_median(all, na), worst, med_act);
  free(data);
  motion_lib_free(&lib);
  sim_data_free(DD);
  sim_model_free(m);
  sim_free_mjmodel(mj);
  return test_report("algo_env_vjp_g1_tracking");
}
