// algo_shac_grad_state: SHAC's BPTT actor gradient through per-world task state and a critic observation, on the
// free-base task quad_stand (float32 engine, contacts): its state last_action / prev_action (written by the act,
// read by the action-rate penalty and the observation; action_rate_weight raised to 0.5 so that the state's
// path carries a good part of the gradient) and its critic observation (the target critic's bootstrap goes
// through observe_critic_vjp and the critic's own normalizer). 4 worlds, a 6-step window:
//   - from reset (no resets inside the window);
//   - with 5-step episodes (a time-out at the window's 4th step), so that a time-out inside the window
//     bootstraps from V_target(final critic observation) and the state's cotangent is cut at the reset
//     (reset_noise 0: fewer contact events as the worlds land after the reset).
// As tests/algo_shac_grad.c: central differences of the actor loss (re-evaluated from a snapshot of the env,
// its task state and the noise streams) along the gradient direction and NDIR - 1 random directions, eps 1e-3,
// agreement |analytic - fd| <= 3% |fd| + 1e-3 |g|. Contacts make the loss piecewise smooth (a foot's contact
// starting a substep earlier is a jump: measured along the gradient direction after a reset, jumps lie a few
// 1e-4 apart), so a direction whose +-eps straddles one is off by the jump: all but two directions must agree.
// A control: with the state's cotangent dropped (no ENV_DS), the gradient must miss the central difference along
// at least half of the agreeing directions (the state's path matters, so the check above can fail).
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/shac.c"
#include "tests/shac_grad_fd.h"
#include "tests/test.h"

#define NDIR 8  // the gradient direction and 7 random ones

static void check(int episode_steps, const char* label) {
  Cfg c;
  char err[512];
  cfg_defaults(&c, err, sizeof(err));
  strcpy(c.algo_name, "shac");
  c.env_num_envs = 4, c.algo_horizon = 6, c.shac_critic_minibatches = 2;
  c.policy_layer_norm = 1;
  c.policy_init_noise_std = 0.3;
  EnvBatch* e = NULL;
  const char* params = episode_steps ? "action_rate_weight=0.5, reset_noise=0" : "action_rate_weight=0.5";
  TEST_CHECK(env_create_params(&e, "quad_stand", params, 4, episode_steps, 3, err, sizeof(err)) == 0, "env: %s", err);
  void* sp = NULL;
  TEST_CHECK(!e || (e->task->info.nstate == 2 && e->critic_obs_dim > e->obs_dim), "quad_stand: state and critic obs");
  TEST_CHECK(shac_create(&sp, &c, e, err, sizeof(err)) == 0, "create: %s", err);
  if (!e || !sp) return;
  Shac* s = (Shac*)sp;
  TEST_CHECK(s->priv && s->cnorm && s->cnorm != s->norm && s->ngrad == 2, "critic observation and grad state");
  // one rollout first: the normalizers get statistics; worlds leave the reset state with a nonzero last action
  double met[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  shac_rollout_grad(s, e, met, &tm);
  nn_norm_update(s->norm, s->obs, s->H * s->N);
  nn_norm_update(s->cnorm, s->cobs, s->H * s->N);
  int64_t na = s->na;
  float* p0;
  double* u;
  Snap z;
  fd_start(s, e, &z, &p0, &u);
  float* g = malloc(sizeof(float) * na);
  float* g0 = malloc(sizeof(float) * na);
  loss_at(s, e, &z, p0, u, 0, g);
  int ngrad = s->ngrad;  // the control: the same gradient without the state's cotangent
  s->ngrad = 0;
  loss_at(s, e, &z, p0, u, 0, g0);
  s->ngrad = ngrad;
  double gn = 0;
  for (int64_t i = 0; i < na; i++) gn += (double)g[i] * g[i];
  gn = sqrt(gn);
  uint64_t r = 12345;
  int agree = 0, ctrl_off = 0;
  for (int dir = 0; dir < NDIR; dir++) {
    fd_direction(g, gn, dir, &r, u, na);
    double gu = 0, g0u = 0;
    for (int64_t i = 0; i < na; i++) gu += (double)g[i] * u[i], g0u += (double)g0[i] * u[i];
    double eps = 1e-3;
    double lp = loss_at(s, e, &z, p0, u, eps, NULL), lm = loss_at(s, e, &z, p0, u, -eps, NULL);
    double fd = (lp - lm) / (2 * eps);
    double tol = 0.03 * fabs(fd) + 1e-3 * gn;
    int ok = fabs(gu - fd) <= tol;
    agree += ok;
    ctrl_off += ok && fabs(g0u - fd) > tol;
    printf("  %s dir %d: analytic %.6e  fd %.6e  (%s)  without the state's cotangent %.6e  (|g| %.3e)\n", label, dir,
           gu, fd, ok ? "agree" : "differ", g0u, gn);
  }
  TEST_CHECK(agree >= NDIR - 2, "%s: the gradient agrees with central differences along %d of %d directions", label,
             agree, NDIR);
  TEST_CHECK(2 * ctrl_off >= agree && agree > 0, "%s: without the state's cotangent the gradient is off along only "
             "%d of the %d agreeing directions: the control does not fail", label, ctrl_off, agree);
  free(p0), free(g), free(g0), free(u);
  shac_destroy(s);
  env_destroy(e);
}

int main(void) {
  check(0, "no reset");
  check(5, "time-out inside the window");
  return test_report("algo_shac_grad_state");
}
