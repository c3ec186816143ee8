// quad_stand.c: a free-floating quadruped stands up from a crouch (the free-base task: nq 15 != nv 14).
//
// Model quadruped/quadruped.xml (assets/, ours): a box torso on a free joint, four legs of hip and knee pitch
// hinges with sphere feet on the floor, position actuators (kp 30) on the eight hinges; Euler, 5 ms,
// frame_skip 4 -> a 20 ms control step, 250 control steps (5 s) per episode. The `crouch` keyframe holds the
// torso at ~0.305 m on bent legs; the legs straight put it at ~0.385 m.
// Reset: the crouch keyframe, every hinge + U(-n, n) and every velocity U(-n, n), n = reset_noise.
// Action (8): position targets = the crouch keyframe's ctrl + action_scale * a_c, a_c = clip(a, -1, 1) (a NaN:
//   0). Per-world state (gradients flow through both): last_action = a_c of this step, prev_action = that of the
//   step before (0 after a reset); act shifts them: prev' = last, last' = a_c.
// Observation (34): torso height z, the gravity direction in the torso frame R^T (0, 0, -1) (3), the hinge
//   angles (8), the torso's linear velocity (world frame, 3) and angular velocity (torso frame, 3), the hinge
//   velocities (8): qvel as the engine orders it; then last_action (8).
// Critic observation (37): the observation, then the torso's world x, y and u_z (privileged: the actor does
//   not see where it stands).
// Reward, at the post-step state, smooth:
//   r = 1 + height_weight (min(z, height_cap) - z_ref) + upright_weight (u_z - 1)
//       - vel_weight (|v|^2 + |omega|^2) - ctrl_cost |ctrl - ctrl_crouch|^2
//       - action_rate_weight |last_action - prev_action|^2
//   with u_z = R[2][2] the world z component of the torso's up axis. Standing still on straight legs earns
//   ~1.85 a step, the crouch ~1.05.
// Termination: z < min_height or u_z < min_upright (fallen or tipped over).
// VJPs in the engine's tangent space (env.h): the free joint's translation is differentiated directly, its
// orientation through env_vjp_rot_* (the rotation vector in the torso frame), never through quaternion
// components.
#include "envs/env.h"
#include "sim/sim_math.h"

#define QS_P(P)                                                                                  \
  P(action_scale, 1.5, 0, 3)       /* rad of position target per unit action */                  \
  P(height_weight, 10.0, 0, 1e3)   /* weight of the torso height above z_ref */                 \
  P(height_cap, 0.4, 0, 2)         /* height above which standing taller earns nothing (m) */    \
  P(z_ref, 0.3, 0, 2)              /* the height term's zero (m) */                              \
  P(upright_weight, 1.0, 0, 1e3)   /* weight of u_z - 1 */                                       \
  P(vel_weight, 0.05, 0, 1e3)      /* weight of the torso's squared velocities */                \
  P(ctrl_cost, 0.01, 0, 1e3)       /* weight of the squared target offsets */                    \
  P(min_height, 0.15, -1, 2)       /* termination: torso below this (m) */                       \
  P(min_upright, 0.5, -1.01, 1)    /* termination: u_z below this (60 deg of tilt) */            \
  P(reset_noise, 0.02, 0, 1)       /* reset: U(-n, n) on hinges and velocities */                \
  P(action_rate_weight, 0.01, 0, 1e3) /* weight of the squared change of the action */
#define QS_NJ 8  // hinges (= actuators)
#define QS_STATE(X)                                                         \
  X(sim_real, last_action, QS_NJ, 1) /* the clipped action of this step */ \
  X(sim_real, prev_action, QS_NJ, 1) /* ... of the step before */
ENV_TASK_FIELDS(QS_P, QS_STATE)
#define QS_NO 34   // observation
#define QS_NOC 37  // critic observation

SIM_FN void quad_stand_reset(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng, int lane,
                             int nlane) {
  if (lane == 0) {
    const double n = ENV_P(c, reset_noise);
    for (int i = 0; i < m->nq; i++) d->qpos[i] = m->key_qpos[i];
    for (int i = 0; i < QS_NJ; i++) d->qpos[7 + i] += (sim_real)(n * (2 * env_rng_uniform(rng) - 1));
    for (int i = 0; i < m->nv; i++) d->qvel[i] = (sim_real)(n * (2 * env_rng_uniform(rng) - 1));
    for (int i = 0; i < m->nu; i++) d->ctrl[i] = m->key_ctrl[i];
  }
  SIM_SYNC();
}

SIM_FN void quad_stand_act(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, const sim_real* act, int lane,
                           int nlane) {
  const sim_real s = (sim_real)ENV_P(c, action_scale);
  sim_real* last = ENV_S(c, last_action);
  sim_real* prev = ENV_S(c, prev_action);
  for (int i = lane; i < m->nu; i += nlane) {
    sim_real a = act[i];
    a = a > 1 ? 1 : (a < -1 ? -1 : a);
    if (a != a) a = 0;  // a NaN action must not poison the world
    d->ctrl[i] = m->key_ctrl[i] + s * a;
    prev[i] = last[i];
    last[i] = a;
  }
  SIM_SYNC();
}

// the torso's orientation (body -> world)
SIM_FN void quad_stand_rot(const SimWorld* d, sim_real R[9]) { simu_quat2Mat(R, d->qpos + 3); }

SIM_FN sim_real quad_stand_reward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act) {
  sim_real R[9];
  quad_stand_rot(d, R);
  sim_real z = d->qpos[2], cap = (sim_real)ENV_P(c, height_cap);
  sim_real h = (z < cap ? z : cap) - (sim_real)ENV_P(c, z_ref);
  sim_real v2 = 0, u2 = 0, r2 = 0;
  for (int i = 0; i < 6; i++) v2 += d->qvel[i] * d->qvel[i];
  for (int i = 0; i < m->nu; i++) {
    sim_real e = d->ctrl[i] - m->key_ctrl[i];
    u2 += e * e;
  }
  const sim_real* last = ENV_S(c, last_action);
  const sim_real* prev = ENV_S(c, prev_action);
  for (int i = 0; i < QS_NJ; i++) r2 += (last[i] - prev[i]) * (last[i] - prev[i]);
  return 1 + (sim_real)ENV_P(c, height_weight) * h + (sim_real)ENV_P(c, upright_weight) * (R[8] - 1) -
         (sim_real)ENV_P(c, vel_weight) * v2 - (sim_real)ENV_P(c, ctrl_cost) * u2 -
         (sim_real)ENV_P(c, action_rate_weight) * r2;
}

SIM_FN int quad_stand_terminated(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c) {
  sim_real R[9];
  quad_stand_rot(d, R);
  return !(d->qpos[2] >= (sim_real)ENV_P(c, min_height)) || !(R[8] >= (sim_real)ENV_P(c, min_upright));
}

SIM_FN void quad_stand_observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* obs, int lane,
                               int nlane) {
  if (lane == 0) {
    sim_real R[9];
    quad_stand_rot(d, R);
    obs[0] = d->qpos[2];
    for (int i = 0; i < 3; i++) obs[1 + i] = -R[6 + i];  // R^T (0, 0, -1)
    for (int i = 0; i < QS_NJ; i++) obs[4 + i] = d->qpos[7 + i];
    for (int i = 0; i < m->nv; i++) obs[12 + i] = d->qvel[i];
    for (int i = 0; i < QS_NJ; i++) obs[26 + i] = ENV_S(c, last_action)[i];
  }
  SIM_SYNC();
}

SIM_FN void quad_stand_observe_critic(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* obs,
                                      int lane, int nlane) {
  quad_stand_observe(m, d, c, obs, lane, nlane);
  if (lane == 0) {
    sim_real R[9];
    quad_stand_rot(d, R);
    obs[QS_NO] = d->qpos[0], obs[QS_NO + 1] = d->qpos[1], obs[QS_NO + 2] = R[8];
  }
  SIM_SYNC();
}

// ---- adjoints (dqpos in the tangent space: 0..2 translation, 3..5 the torso-frame rotation vector, 6.. hinges)
SIM_FN void quad_stand_observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* g,
                                   sim_real* dqpos, sim_real* dqvel) {
  sim_real R[9], y[3];
  quad_stand_rot(d, R);
  dqpos[2] += g[0];
  for (int i = 0; i < 3; i++) y[i] = -R[6 + i];
  env_vjp_rot_to_body(y, g + 1, dqpos + 3);
  for (int i = 0; i < QS_NJ; i++) dqpos[6 + i] += g[4 + i];
  for (int i = 0; i < m->nv; i++) dqvel[i] += g[12 + i];
  sim_real* dl = ENV_DS(c, last_action);
  if (dl)
    for (int i = 0; i < QS_NJ; i++) dl[i] += g[26 + i];
}

SIM_FN void quad_stand_observe_critic_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c,
                                          const sim_real* g, sim_real* dqpos, sim_real* dqvel) {
  quad_stand_observe_vjp(m, d, c, g, dqpos, dqvel);
  sim_real R[9];
  quad_stand_rot(d, R);
  dqpos[0] += g[QS_NO], dqpos[1] += g[QS_NO + 1];
  const sim_real ez[3] = {0, 0, 1}, gy[3] = {0, 0, g[QS_NO + 2]};
  env_vjp_rot_to_world(R, ez, gy, dqpos + 3);  // u_z = e_z . (R e_z)
}

SIM_FN void quad_stand_reward_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                                  sim_real dr, sim_real* dqpos, sim_real* dqvel, sim_real* dctrl) {
  sim_real R[9];
  quad_stand_rot(d, R);
  if (d->qpos[2] < (sim_real)ENV_P(c, height_cap)) dqpos[2] += dr * (sim_real)ENV_P(c, height_weight);
  const sim_real ez[3] = {0, 0, 1}, gy[3] = {0, 0, dr * (sim_real)ENV_P(c, upright_weight)};
  env_vjp_rot_to_world(R, ez, gy, dqpos + 3);  // u_z = e_z . (R e_z)
  const sim_real wv = (sim_real)ENV_P(c, vel_weight), wc = (sim_real)ENV_P(c, ctrl_cost);
  for (int i = 0; i < 6; i++) dqvel[i] += dr * (-2 * wv) * d->qvel[i];
  for (int i = 0; i < m->nu; i++) dctrl[i] += dr * (-2 * wc) * (d->ctrl[i] - m->key_ctrl[i]);
  sim_real* dl = ENV_DS(c, last_action);
  sim_real* dp = ENV_DS(c, prev_action);
  if (dl) {
    const sim_real wr = (sim_real)ENV_P(c, action_rate_weight);
    const sim_real* last = ENV_S(c, last_action);
    const sim_real* prev = ENV_S(c, prev_action);
    for (int i = 0; i < QS_NJ; i++) {
      sim_real e = dr * (-2 * wr) * (last[i] - prev[i]);
      dl[i] += e, dp[i] -= e;
    }
  }
}

SIM_FN void quad_stand_act_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                               const sim_real* dctrl, sim_real* dact) {
  // ctrl and last' = clip(a); prev' = last: its cotangent moves to last's (the state before the act), prev's is 0
  const sim_real s = (sim_real)ENV_P(c, action_scale);
  sim_real* dl = ENV_DS(c, last_action);
  sim_real* dp = ENV_DS(c, prev_action);
  for (int i = 0; i < m->nu; i++) {
    sim_real g = s * dctrl[i] + (dl ? dl[i] : 0);
    dact[i] += (act[i] > -1 && act[i] < 1) ? g : 0;  // clip
  }
  if (dl)
    for (int i = 0; i < QS_NJ; i++) dl[i] = dp[i], dp[i] = 0;
}

// ---- episode statistics (at an episode's final state) ----
SIM_FN void quad_stand_episode_stats(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* out) {
  sim_real R[9];
  quad_stand_rot(d, R);
  out[0] = d->qpos[2];
  out[1] = R[8];
}

ENV_TASK_CRITIC(quad_stand)

#ifndef __CUDACC__
static const char* const quad_stand_obs_names[QS_NOC] = {
    "torso_z",     "gravity_x",   "gravity_y",   "gravity_z",   "fl_hip",      "fl_knee",     "fr_hip",
    "fr_knee",     "hl_hip",      "hl_knee",     "hr_hip",      "hr_knee",     "torso_vx",    "torso_vy",
    "torso_vz",    "torso_wx",    "torso_wy",    "torso_wz",    "fl_hip_vel",  "fl_knee_vel", "fr_hip_vel",
    "fr_knee_vel", "hl_hip_vel",  "hl_knee_vel", "hr_hip_vel",  "hr_knee_vel", "last_fl_hip", "last_fl_knee",
    "last_fr_hip", "last_fr_knee", "last_hl_hip", "last_hl_knee", "last_hr_hip", "last_hr_knee", "torso_x",
    "torso_y",     "torso_upright"};
static const char* const quad_stand_act_names[QS_NJ] = {"fl_hip", "fl_knee", "fr_hip", "fr_knee",
                                                        "hl_hip", "hl_knee", "hr_hip", "hr_knee"};
static const char* const quad_stand_stat_names[2] = {"final_height", "final_upright"};
ENV_TASK_TABLES(quad_stand, QS_P, ENV_NO_FIELDS, QS_STATE)
ENV_TASK_HOST_STATS(quad_stand, 2, quad_stand_stat_names,
                    {.name = "quad_stand", .model = "quadruped/quadruped.xml", .obs_dim = QS_NO, .act_dim = QS_NJ,
                     .episode_steps = 250, .frame_skip = 4, .obs_names = quad_stand_obs_names,
                     .act_names = quad_stand_act_names, ENV_TASK_TABLE_INFO(quad_stand),
                     ENV_TASK_CRITIC_INFO(quad_stand, QS_NOC)})
#endif
