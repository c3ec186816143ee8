// cartpole.c: dm_control's cartpole swing-up (suite/cartpole.py, `swingup`: dense reward, one pole).
//
// Model cartpole/cartpole.xml (RK4, 0.01 s, one physics step per control step), 1000 control steps per episode,
// no early termination. Reset: pole down, slider 0.01*N(0,1), hinge pi + 0.01*N(0,1), qvel 0.01*N(0,1).
// Observation (5): [cart position, cos(theta), sin(theta), cart velocity, pole angular velocity]: dm_control's
// bounded_position (slider, pole xmat zz and xz, which for a hinge about y are cos and sin of the angle) and
// velocity. Action (1): ctrl = clip(a, -1, 1) (the motor's ctrlrange, gear 10).
// Reward, dm_control's smooth swing-up reward in [0, 1]:
//   upright  = (cos(theta) + 1) / 2
//   centered = (1 + tol(x, margin 2)) / 2            tol gaussian, value_at_margin 0.1: 0.1^((x/2)^2)
//   small_control = (4 + tolq(u, margin 1)) / 5      quadratic sigmoid, value_at_margin 0: 1 - u^2 (|u| < 1)
//   small_velocity = (1 + tol(omega, margin 5)) / 2  0.1^((omega/5)^2)
//   r = upright * small_control * small_velocity * centered
// Every term is smooth in the state (the quadratic control term is smooth inside the ctrl range).
#include "envs/env.h"

// ==== CONSTRAINT SWITCH =====================================================================================
// The slider is limited (range +-1.8): that needs the engine's constraint solver, which has landed, so the
// model loads with constraints (the dm_control task). Set this to 1 to load it with constraints disabled
// (SimLoadOptions.disable_add = SIM_DSBL_CONSTRAINT; the cart may then leave the rail, and PPO learns to
// balance while drifting away: return ~370 instead of ~790).
#ifndef CARTPOLE_DISABLE_CONSTRAINT
#define CARTPOLE_DISABLE_CONSTRAINT 0
#endif
// ============================================================================================================

ENV_TASK_FIELDS(ENV_NO_FIELDS, ENV_NO_FIELDS)  // no constants, no per-world state

#define CARTPOLE_LN01 (-2.302585092994046)  // log(0.1): the gaussian tolerance's value at the margin

SIM_FN void cartpole_reset(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng, int lane, int nlane) {
  if (lane == 0) {
    d->qpos[0] = (sim_real)(0.01 * env_rng_normal(rng));
    d->qpos[1] = (sim_real)(SIM_PI + 0.01 * env_rng_normal(rng));
    for (int i = 0; i < m->nv; i++) d->qvel[i] = (sim_real)(0.01 * env_rng_normal(rng));
    d->ctrl[0] = 0;
  }
  SIM_SYNC();
}

SIM_FN void cartpole_act(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, const sim_real* act, int lane,
                         int nlane) {
  if (lane == 0) {
    sim_real a = act[0];
    d->ctrl[0] = a > 1 ? 1 : (a < -1 ? -1 : a);
    if (a != a) d->ctrl[0] = 0;  // a NaN action must not poison the world
  }
  SIM_SYNC();
}

SIM_FN sim_real cartpole_tol(sim_real x, sim_real margin) {  // gaussian tolerance, bounds (0, 0)
  sim_real s = x / margin;
  return sim_exp((sim_real)CARTPOLE_LN01 * s * s);
}

SIM_FN sim_real cartpole_reward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act) {
  sim_real x = d->qpos[0], th = d->qpos[1], u = d->ctrl[0], om = d->qvel[1];
  sim_real upright = (sim_cos(th) + 1) / 2;
  sim_real centered = (1 + cartpole_tol(x, 2)) / 2;
  sim_real q = sim_fabs(u) < 1 ? 1 - u * u : 0;
  sim_real small_control = (4 + q) / 5;
  sim_real small_velocity = (1 + cartpole_tol(om, 5)) / 2;
  return upright * small_control * small_velocity * centered;
}

SIM_FN int cartpole_terminated(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c) { return 0; }

SIM_FN void cartpole_observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* obs, int lane,
                             int nlane) {
  if (lane == 0) {
    obs[0] = d->qpos[0];
    obs[1] = sim_cos(d->qpos[1]);
    obs[2] = sim_sin(d->qpos[1]);
    obs[3] = d->qvel[0];
    obs[4] = d->qvel[1];
  }
  SIM_SYNC();
}

// ---- adjoints ----
SIM_FN void cartpole_observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* g,
                                 sim_real* dqpos,
                                 sim_real* dqvel) {
  sim_real th = d->qpos[1];
  dqpos[0] += g[0];
  dqpos[1] += -sim_sin(th) * g[1] + sim_cos(th) * g[2];
  dqvel[0] += g[3];
  dqvel[1] += g[4];
}

SIM_FN void cartpole_reward_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                                sim_real dr,
                                sim_real* dqpos, sim_real* dqvel, sim_real* dctrl) {
  sim_real x = d->qpos[0], th = d->qpos[1], u = d->ctrl[0], om = d->qvel[1];
  sim_real U = (sim_cos(th) + 1) / 2;
  sim_real tc = cartpole_tol(x, 2), C = (1 + tc) / 2;
  sim_real q = sim_fabs(u) < 1 ? 1 - u * u : 0, S = (4 + q) / 5;
  sim_real tv = cartpole_tol(om, 5), V = (1 + tv) / 2;
  // d tol(x, m)/dx = tol * 2 ln(0.1) x / m^2
  sim_real dC = tc * (sim_real)CARTPOLE_LN01 * x / 4;       // (1/2) * tol * 2 ln(0.1) x / 4
  sim_real dV = tv * (sim_real)CARTPOLE_LN01 * om / 25;     // (1/2) * tol * 2 ln(0.1) om / 25
  sim_real dS = sim_fabs(u) < 1 ? -2 * u / 5 : 0;
  dqpos[0] += dr * U * S * V * dC;
  dqpos[1] += dr * (-sim_sin(th) / 2) * S * V * C;
  dqvel[1] += dr * U * S * C * dV;
  dctrl[0] += dr * U * V * C * dS;
}

SIM_FN void cartpole_act_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* act,
                             const sim_real* dctrl,
                             sim_real* dact) {
  sim_real a = act[0];
  dact[0] += (a > -1 && a < 1) ? dctrl[0] : 0;  // clip: zero gradient outside the range
}

#ifndef __CUDACC__
static const char* const cartpole_obs_names[5] = {"cart_position", "pole_cos", "pole_sin", "cart_velocity",
                                                  "pole_angular_velocity"};
static const char* const cartpole_act_names[1] = {"slide"};
ENV_TASK_TABLES(cartpole, ENV_NO_FIELDS, ENV_NO_FIELDS, ENV_NO_FIELDS)
ENV_TASK_HOST(cartpole, {.name = "cartpole", .model = "cartpole/cartpole.xml",
                         .disable_add = CARTPOLE_DISABLE_CONSTRAINT ? SIM_DSBL_CONSTRAINT : 0, .obs_dim = 5,
                         .act_dim = 1, .episode_steps = 1000, .frame_skip = 1, .obs_names = cartpole_obs_names,
                         .act_names = cartpole_act_names, ENV_TASK_TABLE_INFO(cartpole)})
#endif
