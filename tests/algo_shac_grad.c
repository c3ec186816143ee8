// algo_shac_grad: SHAC's BPTT actor gradient (env VJPs + engine adjoint + policy + normalizer) against central
// finite differences of the actor loss, on cartpole (float32 engine), 4 worlds, a 16-step window:
//   - from reset (no resets inside the window, slider limit inactive);
//   - with 10-step episodes, so that a time-out inside the window bootstraps from V_target(final state).
// The loss is re-evaluated from a snapshot of the env and noise streams along the gradient direction u = g/|g|
// (dL/de at e = 0 must equal |g|) and along a few random directions. Includes algo/shac.c for its internals.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/shac.c"
#include "tests/shac_grad_fd.h"
#include "tests/test.h"

static void check(int episode_steps, const char* label) {
  Cfg c;
  char err[512];
  cfg_defaults(&c, err, sizeof(err));
  strcpy(c.algo_name, "shac");
  c.env_num_envs = 4, c.algo_horizon = 16, c.shac_critic_minibatches = 2;
  c.policy_layer_norm = 1;
  c.policy_init_noise_std = 0.3;
  EnvBatch* e = NULL;
  TEST_CHECK(env_create(&e, "cartpole", 4, episode_steps, 3, err, sizeof(err)) == 0, "env: %s", err);
  void* sp = NULL;
  TEST_CHECK(shac_create(&sp, &c, e, err, sizeof(err)) == 0, "create: %s", err);
  if (!e || !sp) return;
  Shac* s = (Shac*)sp;
  // a few rollouts first: the normalizer gets statistics; worlds leave the reset state
  double met[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  for (int k = 0; k < 2; k++) {
    shac_rollout_grad(s, e, met, &tm);
    nn_norm_update(s->norm, s->obs, s->H * s->N);
  }
  int64_t na = s->na;
  float* p0;
  double* u;
  Snap z;
  fd_start(s, e, &z, &p0, &u);
  float* g = malloc(sizeof(float) * na);
  loss_at(s, e, &z, p0, u, 0, g);
  double gn = 0;
  for (int64_t i = 0; i < na; i++) gn += (double)g[i] * g[i];
  gn = sqrt(gn);
  uint64_t r = 12345;
  for (int dir = 0; dir < 4; dir++) {
    fd_direction(g, gn, dir, &r, u, na);
    double gu = 0;
    for (int64_t i = 0; i < na; i++) gu += (double)g[i] * u[i];
    double eps = 3e-3;
    double lp = loss_at(s, e, &z, p0, u, eps, NULL), lm = loss_at(s, e, &z, p0, u, -eps, NULL);
    double fd = (lp - lm) / (2 * eps);
    double tol = 0.05 * fabs(gn) + 1e-6;
    printf("  %s dir %d: analytic %.6e  fd %.6e  (|g| %.3e)\n", label, dir, gu, fd, gn);
    TEST_CHECK(fabs(gu - fd) <= tol, "%s dir %d: analytic %g vs fd %g (tol %g)", label, dir, gu, fd, tol);
  }
  free(p0), free(g), free(u);
  shac_destroy(s);
  env_destroy(e);
}

int main(void) {
  check(0, "no reset");
  check(10, "time-out inside the window");
  return test_report("algo_shac_grad");
}
