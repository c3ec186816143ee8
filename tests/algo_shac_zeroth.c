// algo_shac_zeroth: ∇Mimic (d), nablamimic.zeroth_order_weight = beta (algo/shac.c's header), on cartpole
// (float32 engine), 8 worlds, a 16-step window, 10-step episodes (time-outs inside the window):
//   - the key parses, defaults to 0; beta > 0 without target_action_step is refused at create;
//   - option absent vs explicit 0: bitwise the same actor after 3 iterations (the previous behaviour; the
//     comparison with the code before the option existed was done by hand on checkpoints: see the commit);
//   - beta 0.5: two runs give the same bits, and differ from beta 0;
//   - after 2 iterations, one more rollout: the advantages (TD(lambda) target - target critic, normalized over
//     the batch, clipped to [-3, 3]), the metric advantage_abs_mean and every target action
//     a* = clamp(mu + eta [(1 - beta) (-g / (|g| + 1e-8)) + beta An (a - mu) / (sigma sqrt(A))], -1, 1)
//     recomputed here in double from the rollout's buffers.
// Includes algo/shac.c for its internals.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/shac.c"
#include "tests/test.h"

double algo_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void base_cfg(Cfg* c) {
  char err[512];
  cfg_defaults(c, err, sizeof(err));
  strcpy(c->algo_name, "nablamimic");
  c->env_num_envs = 8, c->algo_horizon = 16, c->shac_critic_minibatches = 2, c->shac_critic_iterations = 4;
  c->policy_layer_norm = 1;
  c->policy_init_noise_std = 0.3;
  c->nablamimic_action_grad_clip_k = 5, c->nablamimic_target_action_step = 0.1;
  c->nablamimic_policy_ema_decay = 0.99;
}

// iterations of a fresh run; returns the actor parameters (malloc'd) and the count
static float* run(const Cfg* c, int iters, int64_t* na) {
  char err[512];
  EnvBatch* e = NULL;
  void* sp = NULL;
  TEST_CHECK(env_create(&e, "cartpole", (int)c->env_num_envs, 10, 3, err, sizeof(err)) == 0, "env: %s", err);
  if (!e) return NULL;
  TEST_CHECK(shac_create(&sp, c, e, err, sizeof(err)) == 0, "create: %s", err);
  if (!sp) return NULL;
  double met[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  for (int k = 0; k < iters; k++) TEST_CHECK(shac_iterate(sp, e, met, &tm) == 0, "iterate %d", k);
  Shac* s = (Shac*)sp;
  *na = s->na;
  float* p = malloc(sizeof(float) * (size_t)s->na);
  memcpy(p, nn_mlp_params(s->actor), sizeof(float) * (size_t)s->na);
  shac_destroy(sp);
  env_destroy(e);
  return p;
}

static int same_bits(const float* a, const float* b, int64_t n) { return a && b && !memcmp(a, b, sizeof(float) * (size_t)n); }

static void check_formula(void) {
  Cfg c;
  base_cfg(&c);
  c.nablamimic_zeroth_order_weight = 0.5;
  char err[512];
  EnvBatch* e = NULL;
  void* sp = NULL;
  TEST_CHECK(env_create(&e, "cartpole", (int)c.env_num_envs, 10, 3, err, sizeof(err)) == 0, "env: %s", err);
  TEST_CHECK(e && shac_create(&sp, &c, e, err, sizeof(err)) == 0, "create: %s", err);
  if (!sp) return;
  Shac* s = (Shac*)sp;
  double met[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  for (int k = 0; k < 2; k++) shac_iterate(sp, e, met, &tm);  // a trained critic and normalizer
  shac_rollout_grad(s, e, met, &tm);
  int A = s->A;
  size_t HN = (size_t)s->H * s->N;
  float* g = malloc(sizeof(float) * HN * A);
  float* v = malloc(sizeof(float) * HN);
  memcpy(g, s->gtarget, sizeof(float) * HN * A);
  shac_td_targets(s, met);
  shac_advantages(s, met);
  // advantages, recomputed
  nn_mlp_infer(s->targ, nn_mlp_params(s->targ), s->nobs, (int)HN, v);
  double sum = 0, sabs = 0, var = 0, maxerr = 0;
  for (size_t i = 0; i < HN; i++) {
    double a = (double)s->tgt[i] - (double)v[i];
    sum += a, sabs += fabs(a);
  }
  double mean = sum / (double)HN;
  for (size_t i = 0; i < HN; i++) {
    double a = (double)s->tgt[i] - (double)v[i];
    var += (a - mean) * (a - mean);
  }
  double sd = sqrt(var / (double)HN), zs = 0, z2 = 0;
  int nclip = 0;
  for (size_t i = 0; i < HN; i++) {
    double z = ((double)s->tgt[i] - (double)v[i] - mean) / (sd + 1e-8);
    if (fabs(z) > 3) z = z > 0 ? 3 : -3, nclip++;
    double d = fabs(z - (double)s->adv[i]);
    if (d > maxerr) maxerr = d;
    zs += s->adv[i], z2 += (double)s->adv[i] * s->adv[i];
  }
  printf("  advantages: raw mean %.4g std %.4g |A| %.4g (metric %.4g); normalized mean %.3g, mean square %.3g, "
         "%d clipped; max error %.3g\n",
         mean, sd, sabs / (double)HN, met[M_ADV], zs / (double)HN, z2 / (double)HN, nclip, maxerr);
  TEST_CHECK(sd > 1e-6, "advantages all equal (std %g)", sd);
  TEST_CHECK(maxerr < 1e-4, "advantage max error %g", maxerr);
  TEST_CHECK(fabs(met[M_ADV] - sabs / (double)HN) <= 1e-6 * (1 + sabs / (double)HN), "metric %g vs %g", met[M_ADV],
             sabs / (double)HN);
  TEST_CHECK(fabs(zs / (double)HN) < 0.05 && z2 / (double)HN > 0.8 && z2 / (double)HN < 1.0 + 1e-3,
             "normalized advantages: mean %g, mean square %g", zs / (double)HN, z2 / (double)HN);
  // targets, recomputed
  shac_action_targets(s);
  double eta = c.nablamimic_target_action_step, beta = c.nablamimic_zeroth_order_weight;
  double sigma_eff = c.policy_init_noise_std * sqrt((double)A);
  double terr = 0, zmax = 0;
  int interior = 0;
  for (size_t i = 0; i < HN; i++) {
    double n2 = 0;
    for (int j = 0; j < A; j++) n2 += (double)g[i * A + j] * g[i * A + j];
    double gn = sqrt(n2);
    for (int j = 0; j < A; j++) {
      double mu = s->mu[i * A + j], a = s->act[i * A + j];
      double zo = beta * (double)s->adv[i] * (a - mu) / sigma_eff;
      double t = mu + eta * ((1 - beta) * (-(double)g[i * A + j] / (gn + 1e-8)) + zo);
      double tc = t > 1 ? 1 : (t < -1 ? -1 : t);
      interior += t > -1 && t < 1;
      if (fabs(eta * zo) > zmax) zmax = fabs(eta * zo);
      double d = fabs(tc - (double)s->gtarget[i * A + j]);
      if (d > terr) terr = d;
    }
    if (i < 3)
      printf("  sample %zu: mu %+.5f a %+.5f |g| %.3g An %+.3f -> a* %+.5f\n", i, s->mu[i * A], s->act[i * A], gn,
             s->adv[i], s->gtarget[i * A]);
  }
  printf("  targets: max error %.3g, %d of %zu not clamped, largest zeroth-order step %.4g\n", terr, interior,
         HN * A, zmax);
  TEST_CHECK(terr < 1e-6, "target max error %g", terr);
  TEST_CHECK(interior > (int)(HN * A) / 2, "most targets clamped (%d of %zu inside)", interior, HN * A);
  TEST_CHECK(zmax > 1e-3, "zeroth-order term vanishes (largest %g)", zmax);
  free(g), free(v);
  shac_destroy(sp);
  env_destroy(e);
}

int main(void) {
  char err[512];
  Cfg c;
  base_cfg(&c);
  TEST_CHECK(c.nablamimic_zeroth_order_weight == 0, "default %g", c.nablamimic_zeroth_order_weight);
  TEST_CHECK(cfg_override(&c, "nablamimic.zeroth_order_weight=1.5", err, sizeof(err)) != 0, "1.5 accepted");
  TEST_CHECK(cfg_override(&c, "nablamimic.zeroth_order_weight=0.5", err, sizeof(err)) == 0, "0.5: %s", err);
  TEST_CHECK(c.nablamimic_zeroth_order_weight == 0.5, "parsed %g", c.nablamimic_zeroth_order_weight);
  // refused without the target-action regression
  {
    Cfg r = c;
    r.nablamimic_target_action_step = 0;
    EnvBatch* e = NULL;
    void* sp = NULL;
    env_create(&e, "cartpole", 8, 10, 3, err, sizeof(err));
    int rc = e ? shac_create(&sp, &r, e, err, sizeof(err)) : 0;
    TEST_CHECK(rc != 0 && strstr(err, "zeroth_order_weight"), "beta > 0 without eta: rc %d (%s)", rc, err);
    if (sp) shac_destroy(sp);
    if (e) env_destroy(e);
  }
  int64_t na = 0;
  Cfg absent, zero, half = c;
  base_cfg(&absent);
  base_cfg(&zero);
  TEST_CHECK(cfg_override(&zero, "nablamimic.zeroth_order_weight=0", err, sizeof(err)) == 0, "0: %s", err);
  float* pa = run(&absent, 3, &na);
  float* pz = run(&zero, 3, &na);
  float* ph = run(&half, 3, &na);
  float* ph2 = run(&half, 3, &na);
  TEST_CHECK(same_bits(pa, pz, na), "option absent vs 0: actors differ");
  TEST_CHECK(same_bits(ph, ph2, na), "beta 0.5, two runs: actors differ");
  TEST_CHECK(ph && pa && !same_bits(ph, pa, na), "beta 0.5 gives the same actor as beta 0");
  free(pa), free(pz), free(ph), free(ph2);
  check_formula();
  return test_report("algo_shac_zeroth");
}
