// algo_env_vjp: the cartpole task's reward and observation (float64 build of envs/cartpole.c) against an
// independent transcription of dm_control's swing-up reward (rewards.tolerance), and their VJPs against central
// finite differences at random states.
#define SIM_DOUBLE
#include "envs/cartpole.c"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/test.h"

// dm_control suite/utils/rewards.py tolerance(x, bounds=(0,0), margin, sigmoid, value_at_margin)
static double tolerance(double x, double margin, int quadratic, double value_at_margin) {
  if (x == 0) return 1;
  double d = fabs(x) / margin;
  if (quadratic) {
    double s = sqrt(1 - value_at_margin), sx = d * s;
    return fabs(sx) < 1 ? 1 - sx * sx : 0;
  }
  double s = sqrt(-2 * log(value_at_margin));
  return exp(-0.5 * (d * s) * (d * s));
}

static double dm_reward(double x, double th, double u, double om) {
  double upright = (cos(th) + 1) / 2;
  double centered = (1 + tolerance(x, 2, 0, 0.1)) / 2;
  double small_control = (4 + tolerance(u, 1, 1, 0)) / 5;
  double small_velocity = (1 + tolerance(om, 5, 0, 0.1)) / 2;
  return upright * small_control * small_velocity * centered;
}

int main(void) {
  double qpos[2], qvel[2], ctrl[1];
  SimWorld d;
  memset(&d, 0, sizeof(d));
  d.qpos = qpos, d.qvel = qvel, d.ctrl = ctrl;
  SimModel m;
  memset(&m, 0, sizeof(m));
  EnvTaskCtx C;  // cartpole has no constants, data or per-world state
  memset(&C, 0, sizeof(C));
  m.nq = 2, m.nv = 2, m.nu = 1;
  uint64_t rng = 12345;
  double worst_r = 0;
  for (int k = 0; k < 200; k++) {
    qpos[0] = 3 * (env_rng_uniform(&rng) - 0.5), qpos[1] = 8 * (env_rng_uniform(&rng) - 0.5);
    qvel[0] = 4 * (env_rng_uniform(&rng) - 0.5), qvel[1] = 20 * (env_rng_uniform(&rng) - 0.5);
    double a = 2.4 * (env_rng_uniform(&rng) - 0.5);
    cartpole_act(&m, &d, &C, &a, 0, 1);
    TEST_CHECK(ctrl[0] >= -1 && ctrl[0] <= 1 && (fabs(a) > 1 || ctrl[0] == a), "act clip");
    double r = cartpole_reward(&m, &d, &C, &a), ref = dm_reward(qpos[0], qpos[1], ctrl[0], qvel[1]);
    TEST_CHECK(r >= 0 && r <= 1, "reward %g outside [0, 1]", r);
    worst_r = fmax(worst_r, fabs(r - ref));
    double obs[5];
    cartpole_observe(&m, &d, &C, obs, 0, 1);
    TEST_CHECK(obs[0] == qpos[0] && obs[1] == cos(qpos[1]) && obs[2] == sin(qpos[1]) && obs[3] == qvel[0] &&
                   obs[4] == qvel[1],
               "observation");
    // VJPs vs central differences (random cotangents)
    double g[5], dr = 0.7;
    for (int i = 0; i < 5; i++) g[i] = env_rng_uniform(&rng) - 0.5;
    double dq[2] = {0, 0}, dv[2] = {0, 0}, dc[1] = {0}, da[1] = {0};
    cartpole_observe_vjp(&m, &d, &C, g, dq, dv);
    cartpole_reward_vjp(&m, &d, &C, &a, dr, dq, dv, dc);
    cartpole_act_vjp(&m, &d, &C, &a, dc, da);
    double* vars[5] = {&qpos[0], &qpos[1], &qvel[0], &qvel[1], &a};
    double an[5] = {dq[0], dq[1], dv[0], dv[1], da[0]};
    for (int j = 0; j < 5; j++) {
      double h = 1e-6, f[2];
      for (int s = 0; s < 2; s++) {
        double keep = *vars[j];
        *vars[j] = keep + (s ? -h : h);
        cartpole_act(&m, &d, &C, &a, 0, 1);
        double o[5];
        cartpole_observe(&m, &d, &C, o, 0, 1);
        f[s] = dr * cartpole_reward(&m, &d, &C, &a);
        for (int i = 0; i < 5; i++) f[s] += g[i] * o[i];
        *vars[j] = keep;
      }
      cartpole_act(&m, &d, &C, &a, 0, 1);
      if (j == 4 && fabs(fabs(a) - 1) < 1e-5) continue;  // the clip's kink
      double fd = (f[0] - f[1]) / (2 * h);
      TEST_CHECK(fabs(fd - an[j]) <= 1e-6 + 1e-6 * fabs(fd), "state %d var %d: vjp %.12g fd %.12g", k, j, an[j], fd);
    }
  }
  TEST_CHECK(worst_r < 1e-14, "reward differs from dm_control's formula by %g", worst_r);
  // upright, centered, still, no control: reward 1; hanging down: 0
  qpos[0] = 0, qpos[1] = 0, qvel[0] = qvel[1] = 0, ctrl[0] = 0;
  TEST_CHECK(cartpole_reward(&m, &d, &C, ctrl) == 1, "upright reward %g", cartpole_reward(&m, &d, &C, ctrl));
  qpos[1] = SIM_PI;
  TEST_CHECK(cartpole_reward(&m, &d, &C, ctrl) < 1e-15, "hanging reward %g", cartpole_reward(&m, &d, &C, ctrl));
  // reset: pole down with small noise
  for (int k = 0; k < 100; k++) {
    cartpole_reset(&m, &d, &C, &rng, 0, 1);
    TEST_CHECK(fabs(qpos[0]) < 0.06 && fabs(qpos[1] - SIM_PI) < 0.06 && fabs(qvel[0]) < 0.06 && fabs(qvel[1]) < 0.06,
               "reset state");
  }
  printf("reward vs dm_control formula: max |diff| %.3g over 200 states\n", worst_r);
  return test_report("algo_env_vjp");
}
