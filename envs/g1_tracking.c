// g1_tracking.c: the Unitree G1 tracks reference motions (LAFAN1), BeyondMimic's MDP (mjlab's port) with
// ∇Mimic's residual actions. envs/README.md ("g1_tracking") gives the choices where BeyondMimic leaves one open.
//
// Model g1/scene_flat.xml (mjlab's G1, 502 contact pairs), implicitfast, 5 ms, frame_skip 4 -> 50 Hz control,
// 500 control steps (10 s) an episode. Task data: the motion library (string `motion`: an HDF5 library, a clip
// directory with a MANIFEST.tsv or one clip CSV, built in memory at load), the 14 tracked bodies' poses and
// velocities and the joints' reference, one 240-value record a 50 Hz frame.
// State: clip, frame (the reference frame the observation shows), last and previous action, push timer, a
// random stream, a step counter (observation noise).
// Reset: a clip and frame drawn uniformly over every clip's 1-s bins (g1_sample_start: the adaptive sampler's
//   hook), the robot at the reference plus noise (root pose and velocity, joints), a push timer U(1, 3) s.
// Action (29, actuator order): position target = ref joint pos (residual = 1; 0: mjlab's default pose) +
//   scale a, scale = 0.25 effort / kp per actuator; ctrl clamped by the model's ctrlrange.
// Step, as our act -> physics -> reward -> observe -> terminated -> auto-reset order maps mjlab's
//   physics -> terminations -> rewards -> resets -> reference advance -> pushes -> observations: act aims at
//   frame f (the one observed), advances frame to f + 1; reward and terminated compare the post-step state
//   with f (frame - 1); observe shows frame. A reference that has run past its clip's end is re-drawn (a new
//   start with reset noise, inside the episode) and a due push is added to the root velocity, both at the
//   start of the next act (one control step later than mjlab, after the observation rather than before).
// Observation (160): ref joint pos and vel (58), ref anchor position and orientation (first two columns) in
//   the robot's anchor frame (3 + 6), pelvis linear and angular velocity in the pelvis frame (6), joint pos
//   relative to the default pose and joint vel (58), last action (29); uniform noise of obs_noise times
//   BeyondMimic's ranges. Critic (286): the same without noise, the 14 bodies' positions and orientations in
//   the robot's anchor frame (42 + 84).
// Reward, times the control step 0.02 s: six exp(-err / std^2) tracking terms (anchor position, anchor
//   orientation, body positions and orientations against the reference re-anchored to the robot's anchor,
//   body linear and angular velocities), -0.1 |a - a_prev|^2, -10 soft joint-limit violation, -10 pelvis-
//   subtree self-contacts (at most 10, no gradient).
// Termination: anchor height error > 0.25 m, anchor gravity-z error > 0.8, an ankle or wrist height error
//   > 0.25 m.
// Evaluation (EnvTaskEval, algo/motion_eval.h): start_mode 2, uniform starts (adaptive 0), every noise constant
//   and the randomisation zeroed; a world starts at its clip's first frame exactly and plays it once;
//   g1_eval_step scores each step (normalized tracking score, MPKPE, anchor drift).
// VJPs in the engine's tangent space: body poses and velocities through env_vjp_body_kin (env.h); every function
// takes its body frames from the qpos it is given (env_tree_frames), never from the world's kinematics arrays.
#include "envs/env.h"
#include "motion/motion_sampler.h"
#include "sim/sim_math.h"

#define G1_NJ 29     // hinge joints (= actuators)
#define G1_NB 14     // tracked bodies
#define G1_ANCHOR 7  // torso_link among the tracked bodies
#define G1_NBODY 31  // the model's bodies, world included
#define G1_FS 4      // frame skip
#define G1_MAXSELF 10
// one reference frame: joint pos, joint vel, then per tracked body position, quaternion (w, x, y, z), linear
// and angular velocity, world frame
enum { G1_RJP = 0, G1_RJV = 29, G1_RPOS = 58, G1_RQUAT = 100, G1_RLIN = 156, G1_RANG = 198, G1_REC = 240 };

#define G1_P(P)                                                                                         \
  P(residual, 1, 0, 1)           /* 1: action offsets the reference joint pose; 0: the default pose */  \
  P(w_anchor_pos, 0.5, 0, 100)   /* tracking weights (std 0.3, 0.4, 0.3, 0.4, 1.0, 3.14) */            \
  P(w_anchor_ori, 0.5, 0, 100)                                                                        \
  P(w_body_pos, 1.0, 0, 100)                                                                          \
  P(w_body_ori, 1.0, 0, 100)                                                                          \
  P(w_body_lin_vel, 1.0, 0, 100)                                                                      \
  P(w_body_ang_vel, 1.0, 0, 100)                                                                      \
  P(w_action_rate, -0.1, -100, 0)                                                                     \
  P(w_joint_limit, -10, -1000, 0)                                                                     \
  P(w_self_collision, -10, -1000, 0)                                                                  \
  P(term_anchor_z, 0.25, 0, 100)     /* termination thresholds (m, gravity z, m) */                   \
  P(term_anchor_ori, 0.8, 0, 100)                                                                     \
  P(term_ee_z, 0.25, 0, 100)                                                                          \
  P(reset_pos_xy, 0.05, 0, 1)        /* reset noise, uniform +-: root position (m) */                  \
  P(reset_pos_z, 0.01, 0, 1)                                                                          \
  P(reset_rot_rp, 0.1, 0, 1)         /* root roll and pitch, yaw (rad) */                             \
  P(reset_rot_yaw, 0.2, 0, 3.2)                                                                       \
  P(reset_vel_xy, 0.5, 0, 10)        /* root velocity (m/s); pushes add the same ranges */            \
  P(reset_vel_z, 0.2, 0, 10)                                                                          \
  P(reset_angvel_rp, 0.52, 0, 10)    /* root angular velocity (rad/s), world frame */                 \
  P(reset_angvel_yaw, 0.78, 0, 10)                                                                    \
  P(reset_joint, 0.1, 0, 1)          /* joint positions (rad), clipped to the soft limits */          \
  P(push_min, 1, 0, 100)             /* push period U(push_min, push_max) s; push_max 0: no pushes */ \
  P(push_max, 3, 0, 100)                                                                              \
  P(obs_noise, 1, 0, 10)             /* observation noise, times BeyondMimic's ranges */              \
  P(start_mode, 0, 0, 2)             /* 0: drawn over all clips' bins; 1: clip w mod nclip from frame 0; */ \
                                     /* 2: as 1, and the clip plays once (no re-draw at its end: evaluation) */ \
  P(nconmax, 64, 8, 1024)            /* contacts per world (LAFAN1 frames: 29 at most); rows follow */ \
  P(adaptive, 1, 0, 1)               /* 1: starts from the failure-weighted CDF; 0: bins uniformly */ \
  P(adaptive_alpha, 0.001, 0, 1)     /* failure EMA rate per control step (mjlab) */                  \
  P(adaptive_uniform, 0.1, 1e-9, 100) /* total weight of the uniform floor (mjlab) */                 \
  P(dr_friction_lo, 0.3, 0, 10)      /* foot geoms' sliding friction U(lo, hi) at reset; hi 0: off */ \
  P(dr_friction_hi, 1.2, 0, 10)                                                                       \
  P(dr_com_x, 0.025, 0, 0.5)         /* torso COM offset + U(+-x, +-y, +-z) m at reset; all 0: off */ \
  P(dr_com_y, 0.05, 0, 0.5)                                                                           \
  P(dr_com_z, 0.05, 0, 0.5)
#define G1_S(S) S(motion, "lafan1_g1") /* .h5 library, clip directory or clip CSV (asset search path) */
#define G1_X(X)                                                                       \
  X(int32_t, clip, 1, 0)                                                              \
  X(int32_t, frame, 1, 0)         /* the reference frame the observation shows */     \
  X(sim_real, last_action, G1_NJ, 1)                                                  \
  X(sim_real, prev_action, G1_NJ, 1)  /* the action before it (the action-rate term) */ \
  X(int32_t, push_timer, 1, 0)    /* control steps to the next push */                \
  X(int32_t, rng, 2, 0)           /* act's random stream (pushes, re-drawn starts) */ \
  X(int32_t, nstep, 1, 0)         /* control steps since the reset (observation noise) */
ENV_TASK_FIELDS(G1_P, G1_X)
// task-shared: the adaptive start sampler (motion/motion_sampler.h) over the data's bin table
#define G1_G(G)                                                                                          \
  G(double, fail)   /* (nbin) failure EMA per bin */                                                     \
  G(double, cdf)    /* (nbin) CDF of fail + adaptive_uniform / nbin (blocked prefix sum) */              \
  G(int32_t, count) /* (nbin) failures of the last step per bin */                                       \
  G(double, part)   /* (4 MOTION_SAMPLER_CHUNKS) scratch of the CDF and its statistics */                \
  G(double, stat)   /* (G1_NSTAT) entropy / log(nbin), top bin's p, its bin / nbin, failures counted */
ENV_TASK_SHARED(G1_G)
#define G1_NSTAT 4
#define G1_NFOOT 14  // foot collision capsules (7 a foot)

// ---- task data: one position-independent blob (this header, then the arrays at the byte offsets) ----
typedef struct G1Data {
  int32_t nclip, nframe, nbin, pad_;
  int32_t body[G1_NB];           // model body ids of the tracked bodies
  int32_t act_joint[G1_NJ];      // hinge index (qpos[7 + k]) of actuator i
  sim_real act_scale[G1_NJ];     // 0.25 effort / kp of actuator i
  sim_real default_pos[G1_NJ];   // the default pose (mjlab's knees-bent keyframe), hinge order
  sim_real soft_lo[G1_NJ], soft_hi[G1_NJ];  // soft joint limits: mid -+ 0.45 range, hinge order
  int32_t foot_geom[G1_NFOOT];   // the feet's collision geoms (friction randomisation)
  int64_t off_clip_start, off_clip_len, off_clip_bin0;  // int32_t (nclip): first frame, frames, first bin
  int64_t off_bin_clip;          // int32_t (nbin): the clip of a bin
  int64_t off_frames;            // sim_real (nframe, G1_REC)
  int64_t off_names;             // char (nclip, G1_NAME) clip names (0: none, e.g. a test's own packing)
} G1Data;
#define G1_NAME 64

#define G1_ARR(D, type, off) ((const type*)((const char*)(D) + (D)->off))
SIM_FN const G1Data* g1_data(const EnvTaskCtx* c) { return (const G1Data*)c->data; }
SIM_FN int g1_clip_len(const G1Data* D, int clip) { return G1_ARR(D, int32_t, off_clip_len)[clip]; }
// the reference record of clip's frame f (clamped to the clip)
SIM_FN const sim_real* g1_ref(const G1Data* D, int clip, int f) {
  int n = g1_clip_len(D, clip);
  f = f < 0 ? 0 : (f >= n ? n - 1 : f);
  return G1_ARR(D, sim_real, off_frames) + (size_t)(G1_ARR(D, int32_t, off_clip_start)[clip] + f) * G1_REC;
}
SIM_FN sim_real g1_step_dt(const SimModel* m) { return m->timestep * G1_FS; }

// A start (clip, frame) from two uniforms (motion/motion_sampler.h's rule over one bin table of every clip):
// a bin, then frame floor((k + u2) / bins_c (T - 1)) inside it. cdf NULL: bins uniformly (every clip in
// proportion to its duration); else the adaptive sampler's failure-weighted CDF over the table's bins (the
// shared state `cdf`, rebuilt every control step by g1_tracking_shared_update from the failing bins).
SIM_FN void g1_sample_start(const G1Data* D, const double* cdf, double u1, double u2, int* clip, int* frame) {
  const int *bin_clip = G1_ARR(D, int, off_bin_clip), *bin0 = G1_ARR(D, int, off_clip_bin0);
  const int* len = G1_ARR(D, int, off_clip_len);
  if (cdf) {
    motion_sampler_draw(cdf, D->nbin, bin_clip, bin0, len, u1, u2, clip, frame);
    return;
  }
  int b = (int)(u1 * D->nbin);
  b = b < 0 ? 0 : (b >= D->nbin ? D->nbin - 1 : b);
  int c = bin_clip[b], T = len[c], nb = bin0[c + 1] - bin0[c];
  int f = (int)floor(((double)(b - bin0[c]) + u2) / (double)nb * (double)(T - 1));
  *clip = c, *frame = f < 0 ? 0 : (f > T - 1 ? T - 1 : f);
}
// the table's bin of the frame the world is at (the adaptive sampler counts a termination there)
SIM_FN int g1_fail_bin(const EnvTaskCtx* c) {
  const G1Data* D = g1_data(c);
  return motion_sampler_bin(G1_ARR(D, int, off_clip_len), G1_ARR(D, int, off_clip_bin0), ENV_S(c, clip)[0],
                            ENV_S(c, frame)[0] - 1);
}

SIM_FN double g1_urange(uint64_t* s, double r) { return r * (2 * env_rng_uniform(s) - 1); }
SIM_FN uint64_t g1_rng_get(const EnvTaskCtx* c) {
  const int32_t* r = ENV_S(c, rng);
  return (uint64_t)(uint32_t)r[0] | ((uint64_t)(uint32_t)r[1] << 32);
}
SIM_FN void g1_rng_put(const EnvTaskCtx* c, uint64_t s) {
  int32_t* r = ENV_S(c, rng);
  r[0] = (int32_t)(uint32_t)s, r[1] = (int32_t)(uint32_t)(s >> 32);
}

// Puts the robot at clip's frame f plus reset noise (mjlab's reset: root pose noise in the world frame, rotation
// q(roll, pitch, yaw) (x) q_ref, velocity noise on the world velocities, joints + noise clipped to the soft
// limits, joint velocities as the reference) and points the state at it.
SIM_FN void g1_start(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng, int clip, int f) {
  const G1Data* D = g1_data(c);
  const sim_real* r = g1_ref(D, clip, f);
  sim_real* q = d->qpos;
  q[0] = r[G1_RPOS + 0] + (sim_real)g1_urange(rng, ENV_P(c, reset_pos_xy));
  q[1] = r[G1_RPOS + 1] + (sim_real)g1_urange(rng, ENV_P(c, reset_pos_xy));
  q[2] = r[G1_RPOS + 2] + (sim_real)g1_urange(rng, ENV_P(c, reset_pos_z));
  double e[3] = {g1_urange(rng, ENV_P(c, reset_rot_rp)), g1_urange(rng, ENV_P(c, reset_rot_rp)),
                 g1_urange(rng, ENV_P(c, reset_rot_yaw))};
  const sim_real ax[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  sim_real qx[4], qy[4], qz[4], qd[4], t[4];
  simu_axisAngle2Quat(qx, ax[0], (sim_real)e[0]);
  simu_axisAngle2Quat(qy, ax[1], (sim_real)e[1]);
  simu_axisAngle2Quat(qz, ax[2], (sim_real)e[2]);
  simu_mulQuat(t, qy, qx);
  simu_mulQuat(qd, qz, t);  // Rz Ry Rx
  simu_mulQuat(q + 3, qd, r + G1_RQUAT);
  simu_normalize4(q + 3);
  sim_real R[9], w[3];
  simu_quat2Mat(R, q + 3);
  d->qvel[0] = r[G1_RLIN + 0] + (sim_real)g1_urange(rng, ENV_P(c, reset_vel_xy));
  d->qvel[1] = r[G1_RLIN + 1] + (sim_real)g1_urange(rng, ENV_P(c, reset_vel_xy));
  d->qvel[2] = r[G1_RLIN + 2] + (sim_real)g1_urange(rng, ENV_P(c, reset_vel_z));
  w[0] = r[G1_RANG + 0] + (sim_real)g1_urange(rng, ENV_P(c, reset_angvel_rp));
  w[1] = r[G1_RANG + 1] + (sim_real)g1_urange(rng, ENV_P(c, reset_angvel_rp));
  w[2] = r[G1_RANG + 2] + (sim_real)g1_urange(rng, ENV_P(c, reset_angvel_yaw));
  simu_mulMatTVec3(d->qvel + 3, R, w);  // the free joint's angular velocity is in the body frame
  for (int k = 0; k < G1_NJ; k++) {
    sim_real v = r[G1_RJP + k] + (sim_real)g1_urange(rng, ENV_P(c, reset_joint));
    v = v < D->soft_lo[k] ? D->soft_lo[k] : (v > D->soft_hi[k] ? D->soft_hi[k] : v);
    q[7 + k] = v;
    d->qvel[6 + k] = r[G1_RJV + k];
  }
  ENV_S(c, clip)[0] = clip, ENV_S(c, frame)[0] = f;
}

SIM_FN int g1_push_steps(const SimModel* m, const EnvTaskCtx* c, uint64_t* rng) {
  double lo = ENV_P(c, push_min), hi = ENV_P(c, push_max);
  double s = lo + (hi - lo) * env_rng_uniform(rng);
  int n = (int)(s / (double)g1_step_dt(m) + 0.5);
  return n < 1 ? 1 : n;
}

SIM_FN void g1_draw_start(const EnvTaskCtx* c, uint64_t* rng, int* clip, int* f) {
  const G1Data* D = g1_data(c);
  if (ENV_P(c, start_mode) > 0.5) {
    *clip = c->w % D->nclip, *f = 0;
    return;
  }
  double u1 = env_rng_uniform(rng), u2 = env_rng_uniform(rng);
  const double* cdf = ENV_P(c, adaptive) > 0.5 && c->g ? ENV_G(c, cdf) : (const double*)0;
  g1_sample_start(D, cdf, u1, u2, clip, f);
}

// Domain randomisation at reset (mjlab's tracking events, drawn per world at every reset here): the feet's
// sliding friction U(dr_friction_lo, dr_friction_hi) per geom (the feet have contact priority, so a foot-floor
// contact takes its value), the torso's COM offset + U(+-dr_com_*) per axis, into the world's parameters.
// Only where the batch enabled them (m->prm: g1_tracking_uses_params); constants for the gradient.
SIM_FN void g1_randomize(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng) {
  if (!m->prm) return;
  const G1Data* D = g1_data(c);
  double lo = ENV_P(c, dr_friction_lo), hi = ENV_P(c, dr_friction_hi);
  if (hi > 0)
    for (int k = 0; k < G1_NFOOT; k++)
      d->prm_geom_friction[3 * D->foot_geom[k]] = (sim_real)(lo + (hi - lo) * env_rng_uniform(rng));
  const double r[3] = {ENV_P(c, dr_com_x), ENV_P(c, dr_com_y), ENV_P(c, dr_com_z)};
  if (r[0] > 0 || r[1] > 0 || r[2] > 0) {
    int b = D->body[G1_ANCHOR];
    for (int i = 0; i < 3; i++) {
#ifdef SIM_DOUBLE
      double v = m->body_ipos[3 * b + i] + g1_urange(rng, r[i]);
#else  // the float32 build keeps the COM offsets in double too (sim_param_fields.h), as sim_param_set does
      double v = m->geo_body_ipos[3 * b + i] + g1_urange(rng, r[i]);
      d->geo_prm_body_ipos[3 * b + i] = v;
#endif
      d->prm_body_ipos[3 * b + i] = (sim_real)v;
    }
  }
}

SIM_FN void g1_tracking_reset(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng, int lane,
                              int nlane) {
  if (lane == 0) {
    g1_rng_put(c, env_rng_next(rng));
    int clip, f;
    g1_draw_start(c, rng, &clip, &f);
    g1_start(m, d, c, rng, clip, f);
    ENV_S(c, push_timer)[0] = g1_push_steps(m, c, rng);
    for (int i = 0; i < m->nu; i++) d->ctrl[i] = 0;
    g1_randomize(m, d, c, rng);
  }
  SIM_SYNC();
}

SIM_FN void g1_tracking_act(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, const sim_real* act, int lane,
                            int nlane) {
  const G1Data* D = g1_data(c);
  if (lane == 0) {
    uint64_t s = g1_rng_get(c);
    int clip = ENV_S(c, clip)[0];
    // the clip has ended: a new start inside the episode (evaluation: the reference holds its last frame)
    if (ENV_S(c, frame)[0] >= g1_clip_len(D, clip) && ENV_P(c, start_mode) < 1.5) {
      int f;
      g1_draw_start(c, &s, &clip, &f);
      g1_start(m, d, c, &s, clip, f);
    }
    if (ENV_P(c, push_max) > 0 && ENV_S(c, push_timer)[0] <= 0) {  // push: add a velocity to the root
      sim_real R[9], w[3], wl[3];
      simu_quat2Mat(R, d->qpos + 3);
      d->qvel[0] += (sim_real)g1_urange(&s, ENV_P(c, reset_vel_xy));
      d->qvel[1] += (sim_real)g1_urange(&s, ENV_P(c, reset_vel_xy));
      d->qvel[2] += (sim_real)g1_urange(&s, ENV_P(c, reset_vel_z));
      w[0] = (sim_real)g1_urange(&s, ENV_P(c, reset_angvel_rp));
      w[1] = (sim_real)g1_urange(&s, ENV_P(c, reset_angvel_rp));
      w[2] = (sim_real)g1_urange(&s, ENV_P(c, reset_angvel_yaw));
      simu_mulMatTVec3(wl, R, w);
      for (int i = 0; i < 3; i++) d->qvel[3 + i] += wl[i];
      ENV_S(c, push_timer)[0] = g1_push_steps(m, c, &s);
    }
    g1_rng_put(c, s);
  }
  SIM_SYNC();
  const sim_real* r = g1_ref(D, ENV_S(c, clip)[0], ENV_S(c, frame)[0]);
  const sim_real* base = ENV_P(c, residual) > 0.5 ? r + G1_RJP : D->default_pos;
  sim_real *last = ENV_S(c, last_action), *prev = ENV_S(c, prev_action);
  for (int i = lane; i < m->nu; i += nlane) {
    sim_real a = act[i];
    if (a != a) a = 0;  // a NaN action must not poison the world
    d->ctrl[i] = base[D->act_joint[i]] + D->act_scale[i] * a;
    prev[i] = last[i];
    last[i] = a;
  }
  SIM_SYNC();
  if (lane == 0) {
    ENV_S(c, frame)[0]++;
    ENV_S(c, push_timer)[0]--;
    ENV_S(c, nstep)[0]++;
  }
  SIM_SYNC();
}

// ---- what reward, termination and observation read ----
typedef struct G1Kin {
  sim_real xpos[3 * G1_NBODY], xquat[4 * G1_NBODY], xmat[9 * G1_NBODY];  // body frames at the state's qpos
  sim_real xanchor[3 * G1_NBODY], xaxis[3 * G1_NBODY];
  EnvFrames fr;                   // views of the above
  const sim_real* ref;            // the reference record
  const sim_real *pa, *Ra;        // robot anchor position and orientation
  sim_real Rra[9];                // reference anchor orientation
  sim_real psi, cz, sz;           // yaw of Ra Rra^T and its cosine, sine
  sim_real Rd[9];                 // Ra Rra^T
} G1Kin;

// the frames (env_tree_frames: at the qpos given, whatever the world's kinematics arrays hold) and the anchors
SIM_FN void g1_kin(const SimModel* m, const SimWorld* d, const G1Data* D, const sim_real* ref, G1Kin* k) {
  k->fr.xpos = k->xpos, k->fr.xquat = k->xquat, k->fr.xmat = k->xmat, k->fr.xanchor = k->xanchor;
  k->fr.xaxis = k->xaxis;
  env_tree_frames(m, d->qpos, &k->fr);
  int ba = D->body[G1_ANCHOR];
  k->ref = ref;
  k->pa = k->xpos + 3 * ba, k->Ra = k->xmat + 9 * ba;
  simu_quat2Mat(k->Rra, ref + G1_RQUAT + 4 * G1_ANCHOR);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      k->Rd[3 * i + j] = k->Ra[3 * i] * k->Rra[3 * j] + k->Ra[3 * i + 1] * k->Rra[3 * j + 1] +
                         k->Ra[3 * i + 2] * k->Rra[3 * j + 2];
  k->psi = sim_atan2(k->Rd[3], k->Rd[0]);
  k->cz = sim_cos(k->psi), k->sz = sim_sin(k->psi);
}

// the reference body b re-anchored to the robot: (x_a, y_a, z_ref_a) + Rz(psi) (p_ref_b - p_ref_a); the rotated
// offset in off
SIM_FN void g1_rel_pos(const G1Kin* k, int b, sim_real p[3], sim_real off[3]) {
  const sim_real *pb = k->ref + G1_RPOS + 3 * b, *pa = k->ref + G1_RPOS + 3 * G1_ANCHOR;
  sim_real o[3] = {pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]};
  off[0] = k->cz * o[0] - k->sz * o[1], off[1] = k->sz * o[0] + k->cz * o[1], off[2] = o[2];
  p[0] = k->pa[0] + off[0], p[1] = k->pa[1] + off[1], p[2] = pa[2] + off[2];
}
// the rotation vector of q_ref (x) q^-1 (its norm: the quaternion error magnitude)
SIM_FN void g1_rot_err(const sim_real qref[4], const sim_real q[4], sim_real phi[3]) {
  sim_real qi[4], t[4];
  simu_negQuat(qi, q);
  simu_mulQuat(t, qref, qi);
  simu_quat2Vel(phi, t, 1);
}
SIM_FN void g1_rel_quat(const G1Kin* k, int b, sim_real q[4]) {
  const sim_real qz[4] = {sim_cos(k->psi / 2), 0, 0, sim_sin(k->psi / 2)};
  simu_mulQuat(q, qz, k->ref + G1_RQUAT + 4 * b);
}
SIM_FN void g1_body_vel(const sim_real* xpos, const sim_real* tw, int b, sim_real v[3]) {
  const sim_real *w = tw + 6 * b, *p = xpos + 3 * b;
  v[0] = tw[6 * b + 3] + w[1] * p[2] - w[2] * p[1];
  v[1] = tw[6 * b + 4] + w[2] * p[0] - w[0] * p[2];
  v[2] = tw[6 * b + 5] + w[0] * p[1] - w[1] * p[0];
}

// The reward's terms: tracking errors e[6] (squared), penalties pen[3] (action rate, joint limit, self contacts)
SIM_FN void g1_terms(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const G1Kin* k, const sim_real* tw,
                     sim_real e[6], sim_real pen[3]) {
  const G1Data* D = g1_data(c);
  const sim_real* ref = k->ref;
  int ba = D->body[G1_ANCHOR];
  sim_real phi[3], t = 0;
  for (int i = 0; i < 3; i++) {
    sim_real dp = ref[G1_RPOS + 3 * G1_ANCHOR + i] - k->pa[i];
    t += dp * dp;
  }
  e[0] = t;
  g1_rot_err(ref + G1_RQUAT + 4 * G1_ANCHOR, k->xquat + 4 * ba, phi);
  e[1] = simu_dot3(phi, phi);
  e[2] = e[3] = e[4] = e[5] = 0;
  for (int b = 0; b < G1_NB; b++) {
    int id = D->body[b];
    sim_real p[3], off[3], q[4], v[3];
    g1_rel_pos(k, b, p, off);
    for (int i = 0; i < 3; i++) e[2] += (p[i] - k->xpos[3 * id + i]) * (p[i] - k->xpos[3 * id + i]);
    g1_rel_quat(k, b, q);
    g1_rot_err(q, k->xquat + 4 * id, phi);
    e[3] += simu_dot3(phi, phi);
    g1_body_vel(k->xpos, tw, id, v);
    for (int i = 0; i < 3; i++) {
      sim_real dv = ref[G1_RLIN + 3 * b + i] - v[i], dw = ref[G1_RANG + 3 * b + i] - tw[6 * id + i];
      e[4] += dv * dv, e[5] += dw * dw;
    }
  }
  for (int i = 2; i < 6; i++) e[i] *= (sim_real)(1.0 / G1_NB);
  const sim_real *last = ENV_S(c, last_action), *prev = ENV_S(c, prev_action);
  pen[0] = pen[1] = pen[2] = 0;
  for (int i = 0; i < m->nu; i++) pen[0] += (last[i] - prev[i]) * (last[i] - prev[i]);
  for (int j = 0; j < G1_NJ; j++) {
    sim_real q = d->qpos[7 + j];
    if (q < D->soft_lo[j]) pen[1] += D->soft_lo[j] - q;
    if (q > D->soft_hi[j]) pen[1] += q - D->soft_hi[j];
  }
  int nself = 0, root = D->body[0];
  for (int i = 0; i < d->ncon[0]; i++) {
    if (d->contact_exclude[i]) continue;
    int b1 = m->geom_bodyid[d->contact_geom[2 * i]], b2 = m->geom_bodyid[d->contact_geom[2 * i + 1]];
    nself += m->body_rootid[b1] == root && m->body_rootid[b2] == root;
  }
  pen[2] = (sim_real)(nself < G1_MAXSELF ? nself : G1_MAXSELF);
}

SIM_FN void g1_weights(const EnvTaskCtx* c, sim_real w[6], sim_real inv_std2[6]) {
  const double std[6] = {0.3, 0.4, 0.3, 0.4, 1.0, 3.14};
  w[0] = (sim_real)ENV_P(c, w_anchor_pos), w[1] = (sim_real)ENV_P(c, w_anchor_ori);
  w[2] = (sim_real)ENV_P(c, w_body_pos), w[3] = (sim_real)ENV_P(c, w_body_ori);
  w[4] = (sim_real)ENV_P(c, w_body_lin_vel), w[5] = (sim_real)ENV_P(c, w_body_ang_vel);
  for (int i = 0; i < 6; i++) inv_std2[i] = (sim_real)(1.0 / (std[i] * std[i]));
}

// the reference the post-step state is compared with: the frame act aimed at
SIM_FN const sim_real* g1_ref_prev(const EnvTaskCtx* c) {
  return g1_ref(g1_data(c), ENV_S(c, clip)[0], ENV_S(c, frame)[0] - 1);
}

SIM_FN sim_real g1_tracking_reward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act) {
  G1Kin k;
  sim_real tw[6 * G1_NBODY], e[6], pen[3], w[6], is2[6];
  g1_kin(m, d, g1_data(c), g1_ref_prev(c), &k);
  env_body_twists(m, &k.fr, d->qvel, tw);
  g1_terms(m, d, c, &k, tw, e, pen);
  g1_weights(c, w, is2);
  sim_real r = 0;
  for (int i = 0; i < 6; i++) r += w[i] * sim_exp(-e[i] * is2[i]);
  r += (sim_real)ENV_P(c, w_action_rate) * pen[0] + (sim_real)ENV_P(c, w_joint_limit) * pen[1] +
       (sim_real)ENV_P(c, w_self_collision) * pen[2];
  return r * g1_step_dt(m);
}

SIM_FN int g1_tracking_terminated(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c) {
  const G1Data* D = g1_data(c);
  G1Kin k;
  g1_kin(m, d, D, g1_ref_prev(c), &k);
  const sim_real* ref = k.ref;
  sim_real dz = ref[G1_RPOS + 3 * G1_ANCHOR + 2] - k.pa[2];
  if (!(sim_fabs(dz) <= (sim_real)ENV_P(c, term_anchor_z))) return 1;
  sim_real dg = -k.Rra[8] + k.Ra[8];  // gravity z in the anchor frame: -R22
  if (!(sim_fabs(dg) <= (sim_real)ENV_P(c, term_anchor_ori))) return 1;
  const int ee[4] = {3, 6, 10, 13};  // ankle_roll and wrist_yaw links: the re-anchored z is the reference's
  for (int i = 0; i < 4; i++) {
    sim_real ez = ref[G1_RPOS + 3 * ee[i] + 2] - k.xpos[3 * D->body[ee[i]] + 2];
    if (!(sim_fabs(ez) <= (sim_real)ENV_P(c, term_ee_z))) return 1;
  }
  return 0;
}

// ---- evaluation (start_mode 2; algo/motion_eval.h): per control step, after it ----
// out[0]: the six tracking terms' weighted sum over the sum of their weights (penalties left out: in [0, 1]);
// out[1]: the mean distance of the 14 bodies to the reference re-anchored to the robot's anchor, as the body
// rewards compare them (m); out[2]: the anchor's world distance to the reference anchor (m). Against the frame
// the step aimed at, as the reward.
SIM_FN void g1_eval_step(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, double out[3]) {
  const G1Data* D = g1_data(c);
  G1Kin k;
  sim_real tw[6 * G1_NBODY], e[6], pen[3], w[6], is2[6];
  g1_kin(m, d, D, g1_ref_prev(c), &k);
  env_body_twists(m, &k.fr, d->qvel, tw);
  g1_terms(m, d, c, &k, tw, e, pen);
  g1_weights(c, w, is2);
  double num = 0, den = 0, mp = 0, dr = 0;
  for (int i = 0; i < 6; i++) num += (double)w[i] * sim_exp(-e[i] * is2[i]), den += (double)w[i];
  for (int b = 0; b < G1_NB; b++) {
    sim_real p[3], off[3];
    g1_rel_pos(&k, b, p, off);
    double s2 = 0;
    for (int i = 0; i < 3; i++) {
      double x = (double)p[i] - (double)k.xpos[3 * D->body[b] + i];
      s2 += x * x;
    }
    mp += sqrt(s2);
  }
  for (int i = 0; i < 3; i++) {
    double x = (double)k.ref[G1_RPOS + 3 * G1_ANCHOR + i] - (double)k.pa[i];
    dr += x * x;
  }
  out[0] = den > 0 ? num / den : 0, out[1] = mp / G1_NB, out[2] = sqrt(dr);
}
// the reference's qpos (root = the pelvis' pose, then the joints) at the frame the last step aimed at
SIM_FN void g1_eval_ref_qpos(const EnvTaskCtx* c, sim_real* qpos) {
  const sim_real* r = g1_ref_prev(c);
  for (int i = 0; i < 3; i++) qpos[i] = r[G1_RPOS + i];
  for (int i = 0; i < 4; i++) qpos[3 + i] = r[G1_RQUAT + i];
  for (int j = 0; j < G1_NJ; j++) qpos[7 + j] = r[G1_RJP + j];
}

// observation noise ranges of BeyondMimic (uniform +-), per observation element (0: none)
SIM_FN sim_real g1_noise_range(int i) {
  if (i < 58) return 0;
  if (i < 61) return (sim_real)0.25;
  if (i < 67) return (sim_real)0.05;
  if (i < 70) return (sim_real)0.5;
  if (i < 73) return (sim_real)0.2;
  if (i < 102) return (sim_real)0.01;
  if (i < 131) return (sim_real)0.5;
  return 0;
}

// the 160 actor terms (noise = 0: none), then, with critic, the 126 critic extras
SIM_FN void g1_obs(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* o, double noise, int critic) {
  const G1Data* D = g1_data(c);
  const sim_real* ref = g1_ref(D, ENV_S(c, clip)[0], ENV_S(c, frame)[0]);
  G1Kin k;
  g1_kin(m, d, D, ref, &k);
  for (int j = 0; j < G1_NJ; j++) o[j] = ref[G1_RJP + j], o[29 + j] = ref[G1_RJV + j];
  sim_real u[3];
  for (int i = 0; i < 3; i++) u[i] = ref[G1_RPOS + 3 * G1_ANCHOR + i] - k.pa[i];
  simu_mulMatTVec3(o + 58, k.Ra, u);
  sim_real M[9];  // Ra^T Rra
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      M[3 * i + j] = k.Ra[i] * k.Rra[j] + k.Ra[3 + i] * k.Rra[3 + j] + k.Ra[6 + i] * k.Rra[6 + j];
  for (int i = 0; i < 3; i++) o[61 + 2 * i] = M[3 * i], o[62 + 2 * i] = M[3 * i + 1];
  const sim_real* Rp = k.xmat + 9 * D->body[0];
  simu_mulMatTVec3(o + 67, Rp, d->qvel);
  for (int i = 0; i < 3; i++) o[70 + i] = d->qvel[3 + i];
  for (int j = 0; j < G1_NJ; j++) o[73 + j] = d->qpos[7 + j] - D->default_pos[j], o[102 + j] = d->qvel[6 + j];
  const sim_real* last = ENV_S(c, last_action);
  for (int i = 0; i < G1_NJ; i++) o[131 + i] = last[i];
  if (noise > 0) {  // a hash of (stream, step, element): the same observation twice gets the same noise
    uint64_t base = g1_rng_get(c) ^ ((uint64_t)(uint32_t)ENV_S(c, nstep)[0] * 0xD1B54A32D192ED03ULL);
    for (int i = 58; i < 131; i++) {
      uint64_t s = base + 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
      o[i] += (sim_real)(noise * g1_urange(&s, (double)g1_noise_range(i)));
    }
  }
  if (!critic) return;
  for (int b = 0; b < G1_NB; b++) {
    int id = D->body[b];
    for (int i = 0; i < 3; i++) u[i] = k.xpos[3 * id + i] - k.pa[i];
    simu_mulMatTVec3(o + 160 + 3 * b, k.Ra, u);
    const sim_real* Rb = k.xmat + 9 * id;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 2; j++)
        o[202 + 6 * b + 2 * i + j] = k.Ra[i] * Rb[j] + k.Ra[3 + i] * Rb[3 + j] + k.Ra[6 + i] * Rb[6 + j];
  }
}

SIM_FN void g1_tracking_observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* obs, int lane,
                                int nlane) {
  if (lane == 0) g1_obs(m, d, c, obs, ENV_P(c, obs_noise), 0);
  SIM_SYNC();
}
SIM_FN void g1_tracking_observe_critic(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* obs,
                                       int lane, int nlane) {
  if (lane == 0) g1_obs(m, d, c, obs, 0, 1);
  SIM_SYNC();
}

// ---- adjoints ----
// g: the per-body cotangent rows of env_vjp_body_kin (G1_NBODY, ENV_KIN_G)
SIM_FN void g1_obs_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* go, int critic,
                       sim_real* dqpos, sim_real* dqvel) {
  const G1Data* D = g1_data(c);
  const sim_real* ref = g1_ref(D, ENV_S(c, clip)[0], ENV_S(c, frame)[0]);
  G1Kin k;
  g1_kin(m, d, D, ref, &k);
  sim_real g[G1_NBODY * ENV_KIN_G], tw[6 * G1_NBODY];
  for (int i = 0; i < G1_NBODY * ENV_KIN_G; i++) g[i] = 0;
  int ba = D->body[G1_ANCHOR];
  sim_real *ga = g + ENV_KIN_G * ba, y[3], u[3], s[3];
  // anchor_pos_b = Ra^T u, u = p_ref - pa
  simu_mulMatVec3(y, k.Ra, go + 58);
  for (int i = 0; i < 3; i++) u[i] = ref[G1_RPOS + 3 * G1_ANCHOR + i] - k.pa[i], ga[i] -= y[i];
  ga[3] += y[1] * u[2] - y[2] * u[1], ga[4] += y[2] * u[0] - y[0] * u[2], ga[5] += y[0] * u[1] - y[1] * u[0];
  // anchor_ori_b: M = Ra^T Rra, first two columns
  sim_real Mb[9] = {go[61], go[62], 0, go[63], go[64], 0, go[65], go[66], 0};
  env_vjp_rel_rot(k.Ra, Mb, k.Rra, s);
  for (int i = 0; i < 3; i++) ga[3 + i] -= s[i];
  // base_lin_vel = Rp^T v (the free joint's world velocity), base_ang_vel = qvel[3:6]
  const sim_real* Rp = k.xmat + 9 * D->body[0];
  sim_real yl[3];
  simu_mulMatTVec3(yl, Rp, d->qvel);
  simu_mulMatVec3(y, Rp, go + 67);
  for (int i = 0; i < 3; i++) dqvel[i] += y[i], dqvel[3 + i] += go[70 + i];
  env_vjp_rot_to_body(yl, go + 67, dqpos + 3);
  for (int j = 0; j < G1_NJ; j++) dqpos[6 + j] += go[73 + j], dqvel[6 + j] += go[102 + j];
  sim_real* dl = ENV_DS(c, last_action);
  if (dl)
    for (int i = 0; i < G1_NJ; i++) dl[i] += go[131 + i];
  if (critic)
    for (int b = 0; b < G1_NB; b++) {
      int id = D->body[b];
      sim_real* gb = g + ENV_KIN_G * id;
      simu_mulMatVec3(y, k.Ra, go + 160 + 3 * b);  // body_pos_b = Ra^T (p_b - pa)
      for (int i = 0; i < 3; i++) u[i] = k.xpos[3 * id + i] - k.pa[i], gb[i] += y[i], ga[i] -= y[i];
      ga[3] += y[1] * u[2] - y[2] * u[1], ga[4] += y[2] * u[0] - y[0] * u[2], ga[5] += y[0] * u[1] - y[1] * u[0];
      const sim_real* q = go + 202 + 6 * b;  // body_ori_b = Ra^T Rb, first two columns
      sim_real Mbb[9] = {q[0], q[1], 0, q[2], q[3], 0, q[4], q[5], 0};
      env_vjp_rel_rot(k.Ra, Mbb, k.xmat + 9 * id, s);
      for (int i = 0; i < 3; i++) gb[3 + i] += s[i], ga[3 + i] -= s[i];
    }
  env_body_twists(m, &k.fr, d->qvel, tw);
  env_vjp_body_kin(m, &k.fr, d->qvel, tw, g, dqpos, dqvel);
}

SIM_FN void g1_tracking_observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* dobs,
                                    sim_real* dqpos, sim_real* dqvel) {
  g1_obs_vjp(m, d, c, dobs, 0, dqpos, dqvel);
}
SIM_FN void g1_tracking_observe_critic_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,
                                           const sim_real* dobs, sim_real* dqpos, sim_real* dqvel) {
  g1_obs_vjp(m, d, c, dobs, 1, dqpos, dqvel);
}

SIM_FN void g1_tracking_reward_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                                   sim_real dr, sim_real* dqpos, sim_real* dqvel, sim_real* dctrl) {
  const G1Data* D = g1_data(c);
  G1Kin k;
  sim_real g[G1_NBODY * ENV_KIN_G], tw[6 * G1_NBODY], e[6], pen[3], w[6], is2[6], ce[6];
  g1_kin(m, d, D, g1_ref_prev(c), &k);
  env_body_twists(m, &k.fr, d->qvel, tw);
  g1_terms(m, d, c, &k, tw, e, pen);
  g1_weights(c, w, is2);
  const sim_real h = dr * g1_step_dt(m), *ref = k.ref;
  for (int i = 0; i < 6; i++) ce[i] = -h * w[i] * sim_exp(-e[i] * is2[i]) * is2[i];  // dr / d e_i
  for (int i = 0; i < G1_NBODY * ENV_KIN_G; i++) g[i] = 0;
  int ba = D->body[G1_ANCHOR];
  sim_real *ga = g + ENV_KIN_G * ba, phi[3], psibar = 0, pxy[2] = {0, 0};
  for (int i = 0; i < 3; i++) ga[i] -= ce[0] * 2 * (ref[G1_RPOS + 3 * G1_ANCHOR + i] - k.pa[i]);
  // |log(Rref R^T)|^2: the world-frame rotation cotangent of R is -2 phi
  g1_rot_err(ref + G1_RQUAT + 4 * G1_ANCHOR, k.xquat + 4 * ba, phi);
  for (int i = 0; i < 3; i++) ga[3 + i] += ce[1] * (-2 * phi[i]);
  const sim_real sb = (sim_real)(2.0 / G1_NB);
  for (int b = 0; b < G1_NB; b++) {
    int id = D->body[b];
    sim_real* gb = g + ENV_KIN_G * id;
    sim_real p[3], off[3], q[4], v[3], eb[3];
    g1_rel_pos(&k, b, p, off);
    for (int i = 0; i < 3; i++) eb[i] = ce[2] * sb * (p[i] - k.xpos[3 * id + i]);  // cotangent of p_rel
    for (int i = 0; i < 3; i++) gb[i] -= eb[i];
    pxy[0] += eb[0], pxy[1] += eb[1];
    psibar += eb[1] * off[0] - eb[0] * off[1];  // d p_rel / d psi = e_z x off
    g1_rel_quat(&k, b, q);
    g1_rot_err(q, k.xquat + 4 * id, phi);
    for (int i = 0; i < 3; i++) gb[3 + i] -= ce[3] * sb * phi[i];
    psibar += ce[3] * sb * phi[2];  // q_rel = qz(psi) (x) q_ref turns on the left about z
    g1_body_vel(k.xpos, tw, id, v);
    for (int i = 0; i < 3; i++) {
      gb[6 + i] += ce[4] * sb * (v[i] - ref[G1_RLIN + 3 * b + i]);
      gb[9 + i] += ce[5] * sb * (tw[6 * id + i] - ref[G1_RANG + 3 * b + i]);
    }
  }
  ga[0] += pxy[0], ga[1] += pxy[1];
  env_vjp_yaw(k.Rd, psibar, ga + 3);  // psi = yaw(Ra Rra^T): Ra's left perturbation turns Rd on the left
  env_vjp_body_kin(m, &k.fr, d->qvel, tw, g, dqpos, dqvel);
  // penalties (the self-contact count has no gradient)
  const sim_real war = h * (sim_real)ENV_P(c, w_action_rate), wjl = h * (sim_real)ENV_P(c, w_joint_limit);
  for (int j = 0; j < G1_NJ; j++) {
    sim_real q = d->qpos[7 + j];
    if (q < D->soft_lo[j]) dqpos[6 + j] -= wjl;
    if (q > D->soft_hi[j]) dqpos[6 + j] += wjl;
  }
  sim_real *dl = ENV_DS(c, last_action), *dp = ENV_DS(c, prev_action);
  const sim_real *last = ENV_S(c, last_action), *prev = ENV_S(c, prev_action);
  if (dl)
    for (int i = 0; i < G1_NJ; i++) {
      sim_real t = war * 2 * (last[i] - prev[i]);
      dl[i] += t, dp[i] -= t;
    }
  (void)dctrl;
}

// act: ctrl = base + scale a, last' = a, prev' = last. In place on the state cotangents (env.h): the cotangent
// of last' goes to dact, that of prev' to the cotangent of last (the state before the act), prev's is 0.
SIM_FN void g1_tracking_act_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                                const sim_real* dctrl, sim_real* dact) {
  const G1Data* D = g1_data(c);
  sim_real *dl = ENV_DS(c, last_action), *dp = ENV_DS(c, prev_action);
  for (int i = 0; i < m->nu; i++) {
    sim_real a = act[i];
    if (a != a) continue;
    dact[i] += D->act_scale[i] * dctrl[i] + (dl ? dl[i] : 0);
  }
  if (dl)
    for (int i = 0; i < G1_NJ; i++) dl[i] = dp[i], dp[i] = 0;
}

// ---- the adaptive sampler's step (task-shared state, env.h) ----
// A world that terminated (a fall, not a time-out) reports the bin of the frame it failed at, others -1.
SIM_FN int32_t g1_tracking_report(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, int ended) {
  (void)m, (void)d;
  return ended == 1 ? g1_fail_bin(c) : -1;
}
// Every control step (mjlab's rule, motion/motion_sampler.h): each bin's failures, the EMA, the CDF and its
// statistics; report NULL (create): the CDF of the zeroed EMA (uniform).
SIM_FN void g1_tracking_shared_update(const SimModel* m, const EnvTaskCtx* c, const int32_t* report, int nworld,
                                      int lane, int nlane) {
  const G1Data* D = g1_data(c);
  double* st = ENV_G(c, stat);
  (void)m;
  if (report) motion_sampler_step_lanes(report, nworld, D->nbin, ENV_P(c, adaptive_alpha), ENV_G(c, count),
                                        ENV_G(c, fail), lane, nlane);
  motion_sampler_cdf_lanes(ENV_G(c, fail), D->nbin, ENV_P(c, adaptive_uniform), ENV_G(c, cdf), ENV_G(c, part), st,
                           lane, nlane);
  if (report && lane == 0) {
    int n = 0;
    for (int w = 0; w < nworld; w++) n += report[w] >= 0 && report[w] < D->nbin;
    st[3] += n;
  }
}
ENV_TASK_SHARED_FNS(g1_tracking)

#ifdef ENV_TASK_CRITIC  // the critic's own observation (286), where env.h has the hook
ENV_TASK_CRITIC(g1_tracking)
#define G1_CRITIC_INFO , ENV_TASK_CRITIC_INFO(g1_tracking, 286)
#else
#define G1_CRITIC_INFO
#endif

#ifndef __CUDACC__
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef ADJ_HAVE_MOTION_LIB
#include "motion/motion_lib.h"
#endif

// hinge joints in qpos order (MJCF names without "_joint") and actuators in the model's order
#define G1_JOINTS(X)                                                                                           \
  X(left_hip_pitch) X(left_hip_roll) X(left_hip_yaw) X(left_knee) X(left_ankle_pitch) X(left_ankle_roll)       \
  X(right_hip_pitch) X(right_hip_roll) X(right_hip_yaw) X(right_knee) X(right_ankle_pitch) X(right_ankle_roll) \
  X(waist_yaw) X(waist_roll) X(waist_pitch) X(left_shoulder_pitch) X(left_shoulder_roll) X(left_shoulder_yaw)   \
  X(left_elbow) X(left_wrist_roll) X(left_wrist_pitch) X(left_wrist_yaw) X(right_shoulder_pitch)              \
  X(right_shoulder_roll) X(right_shoulder_yaw) X(right_elbow) X(right_wrist_roll) X(right_wrist_pitch)         \
  X(right_wrist_yaw)
#define G1_ACTS(X)                                                                                           \
  X(left_shoulder_pitch) X(left_shoulder_roll) X(left_shoulder_yaw) X(left_elbow) X(left_wrist_roll)         \
  X(right_shoulder_pitch) X(right_shoulder_roll) X(right_shoulder_yaw) X(right_elbow) X(right_wrist_roll)    \
  X(left_hip_pitch) X(left_hip_yaw) X(right_hip_pitch) X(right_hip_yaw) X(waist_yaw) X(left_hip_roll)        \
  X(left_knee) X(right_hip_roll) X(right_knee) X(left_wrist_pitch) X(left_wrist_yaw) X(right_wrist_pitch)    \
  X(right_wrist_yaw) X(waist_roll) X(waist_pitch) X(left_ankle_pitch) X(left_ankle_roll) X(right_ankle_pitch) \
  X(right_ankle_roll)
#define G1_NM_(prefix, j) prefix #j,
#define G1_NM_CP(j) G1_NM_("command_joint_pos/", j)
#define G1_NM_CV(j) G1_NM_("command_joint_vel/", j)
#define G1_NM_JP(j) G1_NM_("joint_pos_rel/", j)
#define G1_NM_JV(j) G1_NM_("joint_vel_rel/", j)
#define G1_NM_A(j) G1_NM_("last_action/", j)
#define G1_NM_S(j) #j,
static const char* const g1_tracking_obs_names[160] = {
    G1_JOINTS(G1_NM_CP) G1_JOINTS(G1_NM_CV) "motion_anchor_pos_b/x", "motion_anchor_pos_b/y",
    "motion_anchor_pos_b/z", "motion_anchor_ori_b/r00", "motion_anchor_ori_b/r01", "motion_anchor_ori_b/r10",
    "motion_anchor_ori_b/r11", "motion_anchor_ori_b/r20", "motion_anchor_ori_b/r21", "base_lin_vel/x",
    "base_lin_vel/y", "base_lin_vel/z", "base_ang_vel/x", "base_ang_vel/y", "base_ang_vel/z",
    G1_JOINTS(G1_NM_JP) G1_JOINTS(G1_NM_JV) G1_ACTS(G1_NM_A)};
static const char* const g1_tracking_act_names[G1_NJ] = {G1_ACTS(G1_NM_S)};
#ifdef ADJ_HAVE_MOTION_LIB
static const char* const g1_joint_names[G1_NJ] = {G1_JOINTS(G1_NM_S)};
static const char* const g1_body_names[G1_NB] = {
    "pelvis",          "left_hip_roll_link",       "left_knee_link",   "left_ankle_roll_link",
    "right_hip_roll_link", "right_knee_link",      "right_ankle_roll_link", "torso_link",
    "left_shoulder_roll_link", "left_elbow_link",  "left_wrist_yaw_link", "right_shoulder_roll_link",
    "right_elbow_link", "right_wrist_yaw_link"};

// the default pose (mjlab's knees-bent keyframe): action offset without residual, joint_pos_rel's zero
static double g1_default_joint(const char* j) {
  if (strstr(j, "hip_pitch")) return -0.312;
  if (strstr(j, "knee")) return 0.669;
  if (strstr(j, "ankle_pitch")) return -0.363;
  if (strstr(j, "elbow")) return 0.6;
  if (strstr(j, "shoulder_pitch")) return 0.2;
  if (!strcmp(j, "left_shoulder_roll")) return 0.2;
  if (!strcmp(j, "right_shoulder_roll")) return -0.2;
  return 0;
}

// the model the per-world functions assume: one free joint on body 1, a hinge on each other body, joint
// actuators of fixed gain (position servos)
static int g1_check_model(const SimModel* m, char* err, size_t errlen) {
  if (m->nq != 7 + G1_NJ || m->nv != 6 + G1_NJ || m->nu != G1_NJ || m->nbody != G1_NBODY || m->njnt != 1 + G1_NJ) {
    snprintf(err, errlen, "model: nq %d nv %d nu %d nbody %d njnt %d (the G1: 36 35 29 31 30)", m->nq, m->nv, m->nu,
             m->nbody, m->njnt);
    return -1;
  }
  for (int b = 1; b < m->nbody; b++) {
    int j = m->body_jntadr[b];
    int ok = m->body_jntnum[b] == 1 &&
             (b == 1 ? m->jnt_type[j] == SIM_JNT_FREE && m->body_parentid[b] == 0 : m->jnt_type[j] == SIM_JNT_HINGE);
    if (!ok) {
      snprintf(err, errlen, "model: body %d is not one free joint on the root / one hinge below it", b);
      return -1;
    }
  }
  for (int i = 0; i < m->nu; i++)
    if (m->actuator_trntype[i] != 0 || m->actuator_trnid[i] < 1 || !(m->actuator_gainprm[3 * i] > 0) ||
        !m->actuator_forcelimited[i]) {
      snprintf(err, errlen, "model: actuator %d is not a force-limited position servo on a hinge", i);
      return -1;
    }
  return 0;
}

// the motion library named by `motion`: an HDF5 library, a clip directory or one clip (built here)
static int g1_load_motion(const char* name, MotionLib* lib, char* err, size_t errlen) {
  char path[1024], model[1024], msg[768], man[1100];
  snprintf(man, sizeof(man), "%s/MANIFEST.tsv", name);  // a clip directory: found by its manifest
  int isdir = 0;
  if (sim_find_asset(name, path, sizeof(path)) && !(isdir = !sim_find_asset(man, path, sizeof(path)))) {
    snprintf(err, errlen, "motion %s: not found (searched ., $ADJOINT_ASSETS, ./assets, ../shared/assets)", name);
    return -1;
  }
  size_t n = strlen(path);
  if ((n > 3 && !strcmp(path + n - 3, ".h5")) || (n > 5 && !strcmp(path + n - 5, ".hdf5"))) {
    if (motion_lib_read(path, lib, msg, sizeof(msg))) {
      snprintf(err, errlen, "motion: %s", msg);
      return -1;
    }
    return 0;
  }
  if (sim_find_asset("g1/scene_flat.xml", model, sizeof(model))) {
    snprintf(err, errlen, "motion %s: the model g1/scene_flat.xml to build it with is not found", name);
    return -1;
  }
  if (isdir) path[strlen(path) - strlen("/MANIFEST.tsv")] = 0;
  MotionSet set = {0, NULL};
  MotionClip one;
  memset(&one, 0, sizeof(one));
  int rc;
  if (isdir) {
    rc = motion_read_dir(path, G1_NJ, MOTION_LAFAN1_FPS, &set, msg, sizeof(msg));
  } else {
    rc = motion_read_clip(path, G1_NJ, MOTION_LAFAN1_FPS, &one, msg, sizeof(msg));
    set.nclip = 1, set.clip = &one;
  }
  if (!rc) rc = motion_lib_build(&set, model, 50.0, lib, msg, sizeof(msg));
  if (set.clip == &one) motion_clip_free(&one);
  else motion_set_free(&set);
  if (rc) {
    snprintf(err, errlen, "motion: %s", msg);
    return -1;
  }
  return 0;
}

static size_t g1_align(size_t x) { return (x + 15) & ~(size_t)15; }

// Packs a motion library for the model m into the task data blob (also the tests' entry).
static int g1_pack(const SimModel* m, const MotionLib* lib, void** data, size_t* bytes, char* err, size_t errlen) {
  if (g1_check_model(m, err, errlen)) return -1;
  const double dt = (double)m->timestep * G1_FS;
  if (lib->nclip < 1 || lib->njoint != G1_NJ || lib->nq != 7 + G1_NJ || lib->nbody != m->nbody - 1 ||
      fabs(lib->fps * dt - 1) > 1e-6) {
    snprintf(err, errlen, "motion: %d clips, %d joints, %d bodies at %g fps (want >= 1 clip of the G1's %d joints and "
             "%d bodies at the control rate %g)", lib->nclip, lib->njoint, lib->nbody, lib->fps, G1_NJ, m->nbody - 1,
             1 / dt);
    return -1;
  }
  for (int j = 0; j < G1_NJ; j++) {
    char want[MOTION_NAME_MAX];
    snprintf(want, sizeof(want), "%s_joint", g1_joint_names[j]);
    if (strcmp(lib->joint_name[j], want)) {
      snprintf(err, errlen, "motion: joint %d is %s (want %s)", j, lib->joint_name[j], want);
      return -1;
    }
  }
  int lb[G1_NB];
  for (int b = 0; b < G1_NB; b++)
    if ((lb[b] = motion_lib_body(lib, g1_body_names[b])) < 0) {
      snprintf(err, errlen, "motion: no body %s", g1_body_names[b]);
      return -1;
    }
  for (int c = 0; c < lib->nclip; c++)
    if (lib->clip_len[c] < 2) {
      snprintf(err, errlen, "motion: clip %s has %d frames (at least 2)", lib->clip_name[c], lib->clip_len[c]);
      return -1;
    }
  int* bin0 = (int*)malloc(sizeof(int) * (lib->nclip + 1));
  if (!bin0) {
    snprintf(err, errlen, "motion: out of memory");
    return -1;
  }
  int nbin = motion_sampler_table(lib->nclip, lib->clip_len, dt, bin0, NULL);
  size_t o_start = g1_align(sizeof(G1Data)), o_len = o_start + g1_align(sizeof(int32_t) * lib->nclip);
  size_t o_bin0 = o_len + g1_align(sizeof(int32_t) * lib->nclip);
  size_t o_binc = o_bin0 + g1_align(sizeof(int32_t) * (lib->nclip + 1));
  size_t o_fr = o_binc + g1_align(sizeof(int32_t) * nbin);
  size_t total = o_fr + sizeof(sim_real) * (size_t)lib->nframe * G1_REC;
  char* blob = (char*)calloc(1, total);
  if (!blob) {
    free(bin0);
    snprintf(err, errlen, "motion: out of memory (%zu bytes of task data)", total);
    return -1;
  }
  G1Data* D = (G1Data*)blob;
  D->nclip = lib->nclip, D->nframe = lib->nframe, D->nbin = nbin;
  D->off_clip_start = (int64_t)o_start, D->off_clip_len = (int64_t)o_len, D->off_clip_bin0 = (int64_t)o_bin0;
  D->off_bin_clip = (int64_t)o_binc, D->off_frames = (int64_t)o_fr;
  for (int b = 0; b < G1_NB; b++) D->body[b] = lb[b] + 1;  // the library's bodies are the model's 1..nbody-1
  for (int j = 0; j < G1_NJ; j++) {
    const sim_real* r = m->jnt_range + 2 * (1 + j);
    double mid = 0.5 * ((double)r[0] + r[1]), half = 0.45 * ((double)r[1] - r[0]);
    D->soft_lo[j] = (sim_real)(mid - half), D->soft_hi[j] = (sim_real)(mid + half);
    D->default_pos[j] = (sim_real)g1_default_joint(g1_joint_names[j]);
  }
  int nfoot = 0;  // the collision geoms of the two ankle_roll links, in geom order (mjlab: left/right foot1-7)
  for (int g = 0; g < m->ngeom; g++) {
    int b = m->geom_bodyid[g];
    if ((b == D->body[3] || b == D->body[6]) && (m->geom_contype[g] || m->geom_conaffinity[g])) {
      if (nfoot < G1_NFOOT) D->foot_geom[nfoot] = g;
      nfoot++;
    }
  }
  if (nfoot != G1_NFOOT) {
    free(blob), free(bin0);
    snprintf(err, errlen, "model: %d collision geoms on the ankle_roll links (want the feet's %d)", nfoot, G1_NFOOT);
    return -1;
  }
  for (int i = 0; i < G1_NJ; i++) {
    int k = m->jnt_qposadr[m->actuator_trnid[i]] - 7;
    if (strncmp(lib->joint_name[k], g1_tracking_act_names[i], strlen(g1_tracking_act_names[i]))) {
      free(blob), free(bin0);
      snprintf(err, errlen, "model: actuator %d drives %s (want %s)", i, lib->joint_name[k], g1_tracking_act_names[i]);
      return -1;
    }
    D->act_joint[i] = k;
    D->act_scale[i] = (sim_real)(0.25 * (double)m->actuator_forcerange[2 * i + 1] / (double)m->actuator_gainprm[3 * i]);
  }
  int32_t *cs = (int32_t*)(blob + o_start), *cl = (int32_t*)(blob + o_len);
  for (int c = 0; c < lib->nclip; c++) cs[c] = lib->clip_start[c], cl[c] = lib->clip_len[c];
  motion_sampler_table(lib->nclip, lib->clip_len, dt, (int*)(blob + o_bin0), (int*)(blob + o_binc));
  free(bin0);
  sim_real* fr = (sim_real*)(blob + o_fr);
  const int NB = lib->nbody;
  for (int f = 0; f < lib->nframe; f++) {
    sim_real* r = fr + (size_t)f * G1_REC;
    for (int j = 0; j < G1_NJ; j++)
      r[G1_RJP + j] = (sim_real)lib->joint_pos[(size_t)f * G1_NJ + j],
      r[G1_RJV + j] = (sim_real)lib->joint_vel[(size_t)f * G1_NJ + j];
    for (int b = 0; b < G1_NB; b++) {
      size_t s = (size_t)f * NB + lb[b];
      for (int i = 0; i < 3; i++) {
        r[G1_RPOS + 3 * b + i] = (sim_real)lib->body_pos_w[3 * s + i];
        r[G1_RLIN + 3 * b + i] = (sim_real)lib->body_lin_vel_w[3 * s + i];
        r[G1_RANG + 3 * b + i] = (sim_real)lib->body_ang_vel_w[3 * s + i];
      }
      for (int i = 0; i < 4; i++) r[G1_RQUAT + 4 * b + i] = (sim_real)lib->body_quat_w[4 * s + i];
    }
  }
  *data = blob, *bytes = total;
  return 0;
}

// Appends the clip names (G1_NAME bytes each, cut to fit) to a packed blob (evaluation reports clips by name).
static int g1_add_names(const MotionLib* lib, void** data, size_t* bytes, char* err, size_t errlen) {
  size_t off = g1_align(*bytes), total = off + (size_t)lib->nclip * G1_NAME;
  char* blob = (char*)realloc(*data, total);
  if (!blob) {
    snprintf(err, errlen, "motion: out of memory (%zu bytes of task data)", total);
    return -1;
  }
  memset(blob + *bytes, 0, total - *bytes);
  for (int c = 0; c < lib->nclip; c++) snprintf(blob + off + (size_t)c * G1_NAME, G1_NAME, "%s", lib->clip_name[c]);
  ((G1Data*)blob)->off_names = (int64_t)off;
  *data = blob, *bytes = total;
  return 0;
}
#endif

// ---- evaluation hooks (EnvTaskEval) ----
static int g1_eval_nclip(const void* data) { return ((const G1Data*)data)->nclip; }
static const char* g1_eval_clip_name(const void* data, int clip) {
  static char fallback[G1_NAME];  // a blob without names (a test's own packing): clip<k>
  const G1Data* D = (const G1Data*)data;
  if (D->off_names) return (const char*)D + D->off_names + (size_t)clip * G1_NAME;
  snprintf(fallback, sizeof(fallback), "clip%d", clip);
  return fallback;
}
// the clip's frames 0 .. T-1, each the target of one step (the reward compares a step with the frame it aimed at)
static int g1_eval_clip_steps(const void* data, int clip) { return g1_clip_len((const G1Data*)data, clip); }
static void g1_eval_start(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, int clip) {
  SimWorld wd;
  sim_world(m, d, w, &wd);
  uint64_t s = 0;  // no draws land: evaluation zeroes every reset range (g1_tracking_eval_.params)
  g1_start(m, &wd, c, &s, clip, 0);
  const sim_real* r = g1_ref(g1_data(c), clip, 0);
  for (int k = 0; k < G1_NJ; k++) wd.qpos[7 + k] = r[G1_RJP + k];  // the reference itself, not clipped to soft limits
}
static void g1_eval_host_step(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, double out[3]) {
  SimWorld wd;
  sim_world(m, d, w, &wd);
  g1_eval_step(m, &wd, c, out);
}
static void g1_eval_host_ref_qpos(const SimModel* m, SimData* d, int w, const EnvTaskCtx* c, sim_real* qpos) {
  (void)m, (void)d, (void)w;
  g1_eval_ref_qpos(c, qpos);
}
static const EnvTaskEval g1_tracking_eval_ = {
    "start_mode=2, reset_pos_xy=0, reset_pos_z=0, reset_rot_rp=0, reset_rot_yaw=0, reset_vel_xy=0, reset_vel_z=0, "
    "reset_angvel_rp=0, reset_angvel_yaw=0, reset_joint=0, push_max=0, obs_noise=0, adaptive=0, dr_friction_hi=0, "
    "dr_com_x=0, dr_com_y=0, dr_com_z=0",
    "motion", g1_eval_nclip, g1_eval_clip_name, g1_eval_clip_steps, g1_eval_start, g1_eval_host_step,
    g1_eval_host_ref_qpos};
#ifdef ADJ_HAVE_MOTION_LIB
// What a deployment needs beyond the generic export (`adjoint export`'s metadata; tools/onnx_mujoco_eval.py
// reads it): the joint target per actuator, offset + action_scale a (offset: the reference joint positions with
// residual, else the default pose), the observation's terms in order with their sizes, the tracked bodies and
// the termination thresholds. Lists are JSON, in actuator order unless named otherwise; default_joint_pos is the
// task's default pose (it replaces the model's qpos0).
static void g1_json_f(char* b, size_t n, const double* v, int k) {
  size_t o = (size_t)snprintf(b, n, "[");
  for (int i = 0; i < k && o < n; i++) o += (size_t)snprintf(b + o, n - o, "%s%.9g", i ? ", " : "", v[i]);
  if (o < n) snprintf(b + o, n - o, "]");
}
static void g1_json_s(char* b, size_t n, const char* const* v, int k, const char* suffix) {
  size_t o = (size_t)snprintf(b, n, "[");
  for (int i = 0; i < k && o < n; i++) o += (size_t)snprintf(b + o, n - o, "%s\"%s%s\"", i ? ", " : "", v[i], suffix);
  if (o < n) snprintf(b + o, n - o, "]");
}
static int g1_tracking_export_meta(const SimModel* m, const double* p,
                                   void (*put)(void* ctx, const char* key, const char* value), void* ctx, char* err,
                                   size_t errlen) {
  if (g1_check_model(m, err, errlen)) return -1;
  char b[4096];
  double v[G1_NJ];
  for (int i = 0; i < G1_NJ; i++)  // as g1_pack
    v[i] = (double)(sim_real)(0.25 * (double)m->actuator_forcerange[2 * i + 1] / (double)m->actuator_gainprm[3 * i]);
  g1_json_f(b, sizeof(b), v, G1_NJ), put(ctx, "action_scale", b);
  for (int i = 0; i < G1_NJ; i++) v[i] = g1_default_joint(g1_tracking_act_names[i]);
  g1_json_f(b, sizeof(b), v, G1_NJ), put(ctx, "default_joint_pos", b);
  int residual = p[ENVP_residual] > 0.5;
  put(ctx, "residual", residual ? "1" : "0");
  put(ctx, "action_offset", residual ? "reference_joint_pos" : "default_joint_pos");
  put(ctx, "joint_target", "action_offset + action_scale * actions per actuator (position servo ctrl, clamped to "
      "ctrlrange); reference_joint_pos: the clip's joint positions at the frame the observation shows");
  put(ctx, "observation_layout", "[[\"command_joint_pos\", 29], [\"command_joint_vel\", 29], "
      "[\"motion_anchor_pos_b\", 3], [\"motion_anchor_ori_b\", 6], [\"base_lin_vel\", 3], [\"base_ang_vel\", 3], "
      "[\"joint_pos_rel\", 29], [\"joint_vel_rel\", 29], [\"last_action\", 29]]");
  g1_json_s(b, sizeof(b), g1_joint_names, G1_NJ, "_joint"), put(ctx, "observation_joint_names", b);
  put(ctx, "observation_note", "joint terms in observation_joint_names order (joint_pos_rel: minus default_joint_pos "
      "of that joint), last_action in actuator order; motion_anchor_ori_b: the first two columns of "
      "R(q_anchor^-1 q_ref_anchor), row by row; base velocities of root_body_name in its frame");
  put(ctx, "anchor_body_name", g1_body_names[G1_ANCHOR]);
  put(ctx, "root_body_name", g1_body_names[0]);
  g1_json_s(b, sizeof(b), g1_body_names, G1_NB, ""), put(ctx, "body_names", b);
  snprintf(b, sizeof(b), "{\"anchor_z\": %.9g, \"anchor_ori\": %.9g, \"ee_z\": %.9g, \"ee_body_names\": [\"%s\", "
           "\"%s\", \"%s\", \"%s\"]}", p[ENVP_term_anchor_z], p[ENVP_term_anchor_ori], p[ENVP_term_ee_z],
           g1_body_names[3], g1_body_names[6], g1_body_names[10], g1_body_names[13]);
  put(ctx, "termination", b);
  put(ctx, "soft_joint_limit_factor", "0.9");  // soft limits mid -+ 0.45 range (reset clipping, penalty)
  snprintf(b, sizeof(b), "%.6g", 1.0 / (double)g1_step_dt(m)), put(ctx, "motion_fps", b);  // float timestep
  return 0;
}
#define G1_EXPORT_INFO , .export_meta = g1_tracking_export_meta
#else
#define G1_EXPORT_INFO
#endif

static int g1_tracking_load_data(const SimModel* m, const double* p, const char* const* s, void** data,
                                 size_t* bytes, char* err, size_t errlen) {
  (void)p;
#ifdef ADJ_HAVE_MOTION_LIB
  MotionLib lib;
  memset(&lib, 0, sizeof(lib));
  if (g1_load_motion(s[0], &lib, err, errlen)) return -1;
  int rc = g1_pack(m, &lib, data, bytes, err, errlen);
  if (!rc) rc = g1_add_names(&lib, data, bytes, err, errlen);
  motion_lib_free(&lib);
  return rc;
#else
  (void)m, (void)s, (void)data, (void)bytes;
  snprintf(err, errlen, "built without the motion library (HDF5 and zlib headers): no motion data");
  return -1;
#endif
}

// the engine's capacities: the 502 pairs' every contact slot (942 contacts, 3826 rows) would make the recorded
// tape of a 64-step horizon about 15 GB per 1000 worlds; 64 contacts keep it near 1.4 GB
static int g1_tracking_load_options(const double* p, SimLoadOptions* opt, char* err, size_t errlen) {
  if (p[ENVP_dr_friction_hi] > 0 && p[ENVP_dr_friction_lo] > p[ENVP_dr_friction_hi]) {
    snprintf(err, errlen, "dr_friction_lo %g > dr_friction_hi %g", p[ENVP_dr_friction_lo], p[ENVP_dr_friction_hi]);
    return -1;
  }
  opt->nconmax = (int)p[ENVP_nconmax];
  return 0;
}

// per-world parameters only with some randomisation on: without, the worlds run the model's constants exactly
static int g1_tracking_uses_params(const double* p) {
  return p[ENVP_dr_friction_hi] > 0 || p[ENVP_dr_com_x] > 0 || p[ENVP_dr_com_y] > 0 || p[ENVP_dr_com_z] > 0;
}

static int g1_tracking_shared_size(const double* p, const void* data, int* count, char* err, size_t errlen) {
  const G1Data* D = (const G1Data*)data;
  (void)p, (void)err, (void)errlen;
  count[ENVG_fail] = count[ENVG_cdf] = count[ENVG_count] = D->nbin;
  count[ENVG_part] = 4 * MOTION_SAMPLER_CHUNKS;
  count[ENVG_stat] = G1_NSTAT;
  return 0;
}

// mjlab's sampler metrics (sampling_entropy, _top1_prob, _top1_bin) and the failures counted so far
static const char* const g1_tracking_metric_names[G1_NSTAT] = {"sampler_entropy", "sampler_top1_prob",
                                                               "sampler_top1_bin", "sampler_failures"};
static void g1_tracking_metrics(const double* p, const void* data, void* const* g, double* out) {
  (void)p, (void)data;
  for (int i = 0; i < G1_NSTAT; i++) out[i] = ((const double*)g[ENVG_stat])[i];
}

ENV_TASK_TABLES(g1_tracking, G1_P, G1_S, G1_X)
ENV_TASK_SHARED_TABLE(g1_tracking, G1_G)
ENV_TASK_HOST(g1_tracking, {.name = "g1_tracking", .model = "g1/scene_flat.xml", .obs_dim = 160, .act_dim = G1_NJ,
                            .episode_steps = 500, .frame_skip = G1_FS,
                            .obs_names = g1_tracking_obs_names, .act_names = g1_tracking_act_names,
                            ENV_TASK_TABLE_INFO(g1_tracking), .load_options = g1_tracking_load_options,
                            .load_data = g1_tracking_load_data, .eval = &g1_tracking_eval_,
                            ENV_TASK_SHARED_INFO(g1_tracking, g1_tracking_shared_size), .nmetric = G1_NSTAT,
                            .metric_names = g1_tracking_metric_names, .metrics = g1_tracking_metrics,
                            .uses_params = g1_tracking_uses_params G1_CRITIC_INFO G1_EXPORT_INFO})
#endif
