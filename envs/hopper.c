// hopper.c: forward hopping with dm_control's planar hopper model, rewarded and terminated as Gym's Hopper.
//
// Model hopper/hopper.xml (dm_control suite, through the asset search path; never copied into the repo): its own
// 5 ms Euler step, frame_skip 4 (a 20 ms control step), 1000 control steps per episode; nq == nv == 7 (rootx,
// rootz, rooty, waist, hip, knee, ankle), 4 motors. Torso height h = HOPPER_Z0 + qpos[rootz].
// Observation (13; 15 with the clock): qpos[1:7], then V tanh(qvel / V) (V = HOPPER_VEL_SCALE: Gym's clip, with
//   a gradient); clock_period = T > 0 appends sin and cos of 2 pi t / T, t the time since the reset (VJP zero).
// Action (4): ctrl = clip(a, -1, 1) (a NaN action gives ctrl 0).
// Reward, at the post-step state: qvel[rootx] + alive(h, rooty) - ctrl_cost |ctrl|^2, the alive bonus smooth in
//   the healthy state (NVlabs/DiffRL's hopper shaping instead of Gym's constant 1, so that a gradient-based
//   learner sees the termination boundary coming):
//     height:  e = clip(h - (min_height + height_tol), -1, height_max), then e if e >= 0 else
//              -HOPPER_HEIGHT_PENALTY e^2
//     upright: 1 - (rooty / max_angle)^2
//   hop reference (hop_weight > 0 and clock_period = T > 0): - hop_weight (h - h_ref(t))^2 with
//     h_ref = hop_center + hop_amplitude sin(2 pi t / T).
// Termination (Gym's healthy checks): h <= min_height, |rooty| >= max_angle, or any |qpos[2:]| or |qvel| >=
//   HOPPER_MAX_STATE. Reset: qpos0 clamped into [lo + c, hi - c] of each limited joint plus U(-c, c), qvel
//   U(-c, c), c = HOPPER_RESET_NOISE; rootx exact, so qpos[rootx] / time is the mean forward speed.
// Lower-case names are run-time task parameters (config env.params, HP_* below; gear_scale multiplies every
// motor's gear at load). configs/README.md, "Hopper", gives their values and the reasons for them.
// Episode statistics (ENV_TASK_HOST_STATS, at an episode's final state): forward_distance = qpos[rootx] (m),
//   forward_speed = qpos[rootx] / time (m/s).
//
// Contacts (the foot, calf, ... on the floor) and the joint limits are constraint rows: SHAC differentiates
// through them with the engine's constraint adjoint (sim/sim_adjoint_constraint.c); the reward and
// observation VJPs here are exact.
#include "envs/env.h"

#define HOPPER_Z0 1.0            // the torso body's height at rootz = 0 (hopper.xml: body torso pos="0 0 1")
#define HOPPER_VEL_SCALE 10.0    // observed velocities: V tanh(qvel / V)
#define HOPPER_HEIGHT_PENALTY 200.0  // alive: quadratic penalty below min_height + height_tol
#define HOPPER_MAX_STATE 100.0   // healthy: |qpos[2:]|, |qvel| < 100
#define HOPPER_RESET_NOISE 5e-3  // reset noise half-width on qpos (rootx excluded) and qvel

// Run-time constants (config env.params, "name=value, ..."): P(name, default, lo, hi). Defaults are Gym
// Hopper's: the committed task. The others exist to study the reward (configs/README.md, "Hopper").
#define HOPPER_PARAMS(P)                                                                                     \
  P(forward_weight, 1.0, -1e3, 1e3) /* weight of qvel[rootx] in the reward */                                \
  P(speed_cap, 0.0, 0, 1e3)         /* > 0: the forward term is weight * min(qvel[rootx], cap) (0: no cap) */ \
  P(alive_weight, 1.0, -1e3, 1e3)   /* weight of the whole alive bonus */                                    \
  P(upright_weight, 1.0, -1e3, 1e3) /* weight of the uprightness term inside the alive bonus */              \
  P(max_angle, 0.2, 1e-6, 3.2)      /* healthy: |torso pitch| < max_angle (rad, Gym's) */                    \
  P(min_height, 0.6, -10, 10)       /* healthy: torso height h > min_height (m) */                           \
  P(ctrl_cost, 1e-3, 0, 1e3)        /* control cost weight on |ctrl|^2 (Gym's) */                            \
  P(reset_push, 0.0, 0, 100)        /* > 0: reset adds U(0, push) m/s to qvel[rootx] (0: none, no draw) */   \
  P(height_max, 0.3, -1, 10)        /* alive: cap of the height term (at h = 1.05: little pay above stand) */ \
  P(clock_period, 0.0, 0, 1e3)      /* > 0: the observation ends with a clock of this period (s) */          \
  P(hop_weight, 0.0, 0, 1e4)        /* > 0 (with clock_period > 0): weight of the hop reference term */      \
  P(hop_amplitude, 0.1, -10, 10)    /* hop reference: amplitude of the torso height's sine (m) */            \
  P(hop_center, 1.0, -10, 10)       /* hop reference: its centre (m; standing is h ~ 0.94) */                \
  P(gear_scale, 1.0, 1e-9, 100)     /* every motor's gear times this (1: the model's 30 / 40 / 30 / 10 N m) */ \
  P(height_tol, 0.15, -10, 10)      /* alive: the height term is 0 this far above min_height (m) */
ENV_TASK_FIELDS(HOPPER_PARAMS, ENV_NO_FIELDS)
#define HP(c, name) ((c)->p[ENVP_##name])

#ifdef SIM_DOUBLE  // tanh in the engine's precision (sim_port.h has no wrapper for it)
#define hopper_tanh tanh
#else
#define hopper_tanh tanhf
#endif

SIM_FN void hopper_reset(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng, int lane, int nlane) {
  if (lane == 0) {
    const double cn = HOPPER_RESET_NOISE;
    for (int j = 0; j < m->njnt; j++) {
      int a = m->jnt_qposadr[j];
      double q = d->qpos[a];
      if (m->jnt_limited[j]) {
        double lo = m->jnt_range[2 * j] + cn, hi = m->jnt_range[2 * j + 1] - cn;
        q = q < lo ? lo : (q > hi ? hi : q);
      }
      double u = env_rng_uniform(rng);
      if (j > 0) q += cn * (2 * u - 1);  // joint 0 is rootx: no noise (the draw is kept for a fixed stream)
      d->qpos[a] = (sim_real)q;
    }
    for (int i = 0; i < m->nv; i++) d->qvel[i] = (sim_real)(cn * (2 * env_rng_uniform(rng) - 1));
    if (HP(c, reset_push) > 0) d->qvel[0] += (sim_real)(HP(c, reset_push) * env_rng_uniform(rng));
    for (int i = 0; i < m->nu; i++) d->ctrl[i] = 0;
  }
  SIM_SYNC();
}

SIM_FN void hopper_act(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, const sim_real* act, int lane, int nlane) {
  for (int i = lane; i < m->nu; i += nlane) {
    sim_real a = act[i];
    d->ctrl[i] = a > 1 ? 1 : (a < -1 ? -1 : a);
    if (a != a) d->ctrl[i] = 0;  // a NaN action must not poison the world
  }
  SIM_SYNC();
}

// alive bonus (header) and its derivatives with respect to rootz and rooty
SIM_FN sim_real hopper_alive(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* d_rootz,
                             sim_real* d_rooty) {
  const sim_real wa = (sim_real)HP(c, alive_weight), wu = (sim_real)HP(c, upright_weight);
  const sim_real amax = (sim_real)HP(c, max_angle);
  sim_real e = (sim_real)HOPPER_Z0 + d->qpos[1] - (sim_real)(HP(c, min_height) + HP(c, height_tol)), de = 1;
  if (e < -1) e = -1, de = 0;
  if (e > (sim_real)HP(c, height_max)) e = (sim_real)HP(c, height_max), de = 0;
  sim_real height = e, dheight = de;
  if (e < 0) height = -(sim_real)HOPPER_HEIGHT_PENALTY * e * e, dheight = -2 * (sim_real)HOPPER_HEIGHT_PENALTY * e * de;
  sim_real a = d->qpos[2] / amax;
  if (d_rootz) *d_rootz = wa * dheight;
  if (d_rooty) *d_rooty = wa * wu * (-2 * a / amax);
  return wa * (height + wu * (1 - a * a));
}

// forward term and its derivative with respect to qvel[rootx]
SIM_FN sim_real hopper_forward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* d_vx) {
  sim_real w = (sim_real)HP(c, forward_weight), v = d->qvel[0], cap = (sim_real)HP(c, speed_cap);
  if (cap > 0 && v > cap) {
    if (d_vx) *d_vx = 0;
    return w * cap;
  }
  if (d_vx) *d_vx = w;
  return w * v;
}

// hop reference term (header) and its derivative with respect to rootz; 0 when off
SIM_FN sim_real hopper_hop(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* d_rootz) {
  const double w = HP(c, hop_weight), T = HP(c, clock_period);
  if (d_rootz) *d_rootz = 0;
  if (!(w > 0 && T > 0)) return 0;
  double ph = 6.283185307179586 * (double)d->time[0] / T;  // in double, as the clock
  sim_real ref = (sim_real)(HP(c, hop_center) + HP(c, hop_amplitude) * sin(ph));
  sim_real e = (sim_real)HOPPER_Z0 + d->qpos[1] - ref;
  if (d_rootz) *d_rootz = -2 * (sim_real)w * e;
  return -(sim_real)w * e * e;
}

SIM_FN sim_real hopper_reward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act) {
  sim_real u2 = 0;
  for (int i = 0; i < m->nu; i++) u2 += d->ctrl[i] * d->ctrl[i];
  sim_real r = hopper_forward(m, d, c, 0) + hopper_alive(m, d, c, 0, 0) - (sim_real)HP(c, ctrl_cost) * u2;
  if (HP(c, hop_weight) > 0) r += hopper_hop(m, d, c, 0);  // off: the default reward's bits
  return r;
}

SIM_FN int hopper_terminated(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c) {
  sim_real h = (sim_real)HOPPER_Z0 + d->qpos[1], th = d->qpos[2];
  if (!(h > (sim_real)HP(c, min_height)) || !(sim_fabs(th) < (sim_real)HP(c, max_angle))) return 1;
  for (int i = 2; i < m->nq; i++)
    if (!(sim_fabs(d->qpos[i]) < (sim_real)HOPPER_MAX_STATE)) return 1;
  for (int i = 0; i < m->nv; i++)
    if (!(sim_fabs(d->qvel[i]) < (sim_real)HOPPER_MAX_STATE)) return 1;
  return 0;
}

SIM_FN void hopper_observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* obs, int lane,
                           int nlane) {
  const sim_real V = (sim_real)HOPPER_VEL_SCALE;
  for (int i = lane; i < m->nq - 1; i += nlane) obs[i] = d->qpos[i + 1];
  for (int i = lane; i < m->nv; i += nlane) obs[m->nq - 1 + i] = V * hopper_tanh(d->qvel[i] / V);
  const double T = HP(c, clock_period);
  if (T > 0 && lane == 0) {  // the clock, in double: the phase of a float time would lose digits
    double ph = 6.283185307179586 * (double)d->time[0] / T;
    obs[m->nq - 1 + m->nv] = (sim_real)sin(ph);
    obs[m->nq + m->nv] = (sim_real)cos(ph);
  }
  SIM_SYNC();
}

// ---- adjoints ----
SIM_FN void hopper_observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* g,
                               sim_real* dqpos,
                               sim_real* dqvel) {
  const sim_real V = (sim_real)HOPPER_VEL_SCALE;
  for (int i = 0; i < m->nq - 1; i++) dqpos[i + 1] += g[i];
  for (int i = 0; i < m->nv; i++) {
    sim_real t = hopper_tanh(d->qvel[i] / V);
    dqvel[i] += g[m->nq - 1 + i] * (1 - t * t);
  }
  // the clock (clock_period > 0) depends on the time only: no cotangent
}

SIM_FN void hopper_reward_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                              sim_real dr,
                              sim_real* dqpos, sim_real* dqvel, sim_real* dctrl) {
  sim_real gz, gy, gx, gh;
  hopper_alive(m, d, c, &gz, &gy);
  hopper_forward(m, d, c, &gx);
  hopper_hop(m, d, c, &gh);
  dqvel[0] += dr * gx;
  dqpos[1] += dr * gz;
  if (HP(c, hop_weight) > 0) dqpos[1] += dr * gh;
  dqpos[2] += dr * gy;
  for (int i = 0; i < m->nu; i++) dctrl[i] += dr * (-2 * (sim_real)HP(c, ctrl_cost)) * d->ctrl[i];
}

SIM_FN void hopper_act_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                           const sim_real* dctrl,
                           sim_real* dact) {
  for (int i = 0; i < m->nu; i++) dact[i] += (act[i] > -1 && act[i] < 1) ? dctrl[i] : 0;  // clip
}

// ---- episode statistics (host only; at an episode's final state) ----
SIM_FN void hopper_episode_stats(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* out) {
  sim_real t = d->time[0];
  out[0] = d->qpos[0];
  out[1] = t > 0 ? d->qpos[0] / t : 0;
}

#ifndef __CUDACC__
#include <stdio.h>  // snprintf (load options)
static const char* const hopper_obs_names[15] = {
    "rootz",     "rooty",     "waist",     "hip",      "knee",      "ankle",     "rootx_vel",
    "rootz_vel", "rooty_vel", "waist_vel", "hip_vel",  "knee_vel",  "ankle_vel", "clock_sin", "clock_cos"};
static const char* const hopper_act_names[4] = {"waist", "hip", "knee", "ankle"};
static const char* const hopper_stat_names[2] = {"forward_distance", "forward_speed"};
ENV_TASK_TABLES(hopper, HOPPER_PARAMS, ENV_NO_FIELDS, ENV_NO_FIELDS)
static int hopper_obs_dim(const double* p) { return p[ENVP_clock_period] > 0 ? 15 : 13; }
static int hopper_load_options(const double* p, SimLoadOptions* o, char* err, size_t errlen) {
  if (!(p[ENVP_gear_scale] > 0 && p[ENVP_gear_scale] <= 100)) {
    snprintf(err, errlen, "gear_scale = %g is outside (0, 100]", p[ENVP_gear_scale]);
    return -1;
  }
  o->gear_scale = p[ENVP_gear_scale];  // x 1 is exact: the default model's bits
  return 0;
}
ENV_TASK_HOST_STATS(hopper, 2, hopper_stat_names,
                    {.name = "hopper", .model = "hopper/hopper.xml", .obs_dim = 13, .act_dim = 4, .episode_steps = 1000,
                     .frame_skip = 4, .obs_names = hopper_obs_names, .act_names = hopper_act_names,
                     ENV_TASK_TABLE_INFO(hopper), .obs_dim_of = hopper_obs_dim, .load_options = hopper_load_options})
#endif
