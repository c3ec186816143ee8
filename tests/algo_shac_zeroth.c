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
// And shac.noise_correlation = rho (algo/shac.c's step 1; here beside beta, both being rollout-noise options):
//   - the key defaults to 0 and refuses 1 and -0.1 naming the key; absent vs explicit 0: the same actor bits;
//   - rho 0.9: two runs give the same bits, and differ from rho 0;
//   - after 2 iterations, one more rollout replayed here from copies of the world streams and the noise state:
//     e <- rho e + sqrt(1 - rho^2) eps, every applied action (float)tanh(z + sigma e) with z recomputed by the
//     actor, e = 0 after each episode end; the streams and the noise state at the end bitwise as the run's;
//     resets did happen, and consecutive e within an episode follow e_t+1 ~ rho e_t (least-squares slope, which
//     the restarts at 0 do not bias; independent noise would give ~0).
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

// a fresh cartpole run after `iters` iterations (NULL, with a failed check, if it cannot be made; the caller
// destroys the run and *e)
static Shac* open_run(const Cfg* c, int iters, EnvBatch** e, double* met, AlgoTimes* tm) {
  char err[512];
  void* sp = NULL;
  *e = NULL;
  TEST_CHECK(env_create(e, "cartpole", (int)c->env_num_envs, 10, 3, err, sizeof(err)) == 0, "env: %s", err);
  if (!*e) return NULL;
  TEST_CHECK(shac_create(&sp, c, *e, err, sizeof(err)) == 0, "create: %s", err);
  if (!sp) {
    env_destroy(*e), *e = NULL;
    return NULL;
  }
  for (int k = 0; k < iters; k++) TEST_CHECK(shac_iterate(sp, *e, met, tm, NULL, 0) == 0, "iterate %d", k);
  return (Shac*)sp;
}

// iterations of a fresh run; returns the actor parameters (malloc'd) and the count
static float* run(const Cfg* c, int iters, int64_t* na) {
  EnvBatch* e;
  double met[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  Shac* s = open_run(c, iters, &e, met, &tm);
  if (!s) return NULL;
  void* sp = s;
  *na = s->na;
  float* p = malloc(sizeof(float) * (size_t)s->na);
  memcpy(p, nn_mlp_params(s->actor), sizeof(float) * (size_t)s->na);
  shac_destroy(sp);
  env_destroy(e);
  return p;
}

static int same_bits(const float* a, const float* b, int64_t n) { return a && b && !memcmp(a, b, sizeof(float) * (size_t)n); }

// An opt-in option's two basics after 3 iterations: configs without it and with it set to 0 train the same actor
// bits, and a config with it on trains the same bits twice. The actors without it (*pa) and with it on (*pon)
// come back (freed by the caller) for the option's own check.
static void check_off_and_repeatable(const Cfg* absent, const Cfg* zero, const Cfg* on, const char* what, float** pa,
                                     float** pon, int64_t* na) {
  *pa = run(absent, 3, na);
  float* pz = run(zero, 3, na);
  *pon = run(on, 3, na);
  float* pon2 = run(on, 3, na);
  TEST_CHECK(same_bits(*pa, pz, *na), "%s absent vs 0: actors differ", what);
  TEST_CHECK(same_bits(*pon, pon2, *na), "%s on, two runs: actors differ", what);
  free(pz), free(pon2);
}

static void check_formula(void) {
  Cfg c;
  base_cfg(&c);
  c.nablamimic_zeroth_order_weight = 0.5;
  EnvBatch* e;
  double met[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  Shac* s = open_run(&c, 2, &e, met, &tm);  // a trained critic and normalizer
  if (!s) return;
  void* sp = s;
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

static void check_noise_correlation(void) {
  char err[512];
  Cfg c;
  base_cfg(&c);
  TEST_CHECK(c.shac_noise_correlation == 0, "rho default %g", c.shac_noise_correlation);
  const char* bad[] = {"shac.noise_correlation=1", "shac.noise_correlation=-0.1"};
  for (int k = 0; k < 2; k++) {
    Cfg b = c;
    err[0] = 0;
    int rc = cfg_override(&b, bad[k], err, sizeof(err));
    printf("  %s -> rc %d: %s\n", bad[k], rc, err);
    TEST_CHECK(rc == CFG_EPARSE && strstr(err, "'shac.noise_correlation'") && strstr(err, "out of range [0, 1)"),
               "%s: rc %d (%s)", bad[k], rc, err);
    TEST_CHECK(b.shac_noise_correlation == 0, "%s: value changed to %g", bad[k], b.shac_noise_correlation);
  }
  Cfg zero = c, corr = c;
  TEST_CHECK(cfg_override(&zero, "shac.noise_correlation=0", err, sizeof(err)) == 0, "rho 0: %s", err);
  TEST_CHECK(cfg_override(&corr, "shac.noise_correlation=0.9", err, sizeof(err)) == 0, "rho 0.9: %s", err);
  TEST_CHECK(corr.shac_noise_correlation == 0.9, "parsed %g", corr.shac_noise_correlation);
  TEST_CHECK(cfg_hash(&corr) != cfg_hash(&zero), "rho does not enter the config hash");
  int64_t na = 0;
  float *pa, *pc;
  check_off_and_repeatable(&c, &zero, &corr, "rho (0.9)", &pa, &pc, &na);
  double dmax = 0;
  for (int64_t i = 0; pa && pc && i < na; i++)
    if (fabs((double)pc[i] - pa[i]) > dmax) dmax = fabs((double)pc[i] - pa[i]);
  printf("  rho 0.9 vs 0 after 3 iterations: largest actor parameter difference %.3g\n", dmax);
  TEST_CHECK(dmax > 1e-5, "rho 0.9 gives (nearly) the same actor as rho 0 (%g)", dmax);
  free(pa), free(pc);

  // one rollout replayed
  EnvBatch* e;
  double met[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  Shac* s = open_run(&corr, 2, &e, met, &tm);
  if (!s) return;
  void* sp = s;
  int N = s->N, A = s->A, H = s->H, O = s->O;
  uint64_t* rng = malloc(sizeof(uint64_t) * N);
  double* ns = malloc(sizeof(double) * N * A);
  float* z = malloc(sizeof(float) * N * A);
  memcpy(rng, s->act_rng, sizeof(uint64_t) * N);
  memcpy(ns, s->noise, sizeof(double) * N * A);
  double nz0 = 0;
  for (int i = 0; i < N * A; i++) nz0 += fabs(ns[i]);
  TEST_CHECK(nz0 > 0, "noise state all 0 after 2 iterations");
  shac_rollout_grad(s, e, met, &tm);
  double rho = corr.shac_noise_correlation, rc = sqrt(1 - rho * rho), sigma = corr.policy_init_noise_std;
  int bad_act = 0, resets = 0;
  double sxy = 0, sxx = 0, syy = 0, ss = 0;
  long cnt = 0;
  for (int t = 0; t < H; t++) {
    size_t base = (size_t)t * N;
    nn_mlp_infer(s->actor_lin, nn_mlp_params(s->actor_lin), s->nobs + base * O, N, z);
    for (int w = 0; w < N; w++) {
      int fresh = ns[(size_t)w * A] == 0;  // the first step of an episode (or of the run)
      for (int j = 0; j < A; j++) {
        size_t i = (size_t)w * A + j;
        double prev = ns[i];
        ns[i] = rho * ns[i] + rc * env_rng_normal(&rng[w]);
        if (!fresh) sxy += prev * ns[i], sxx += prev * prev, syy += ns[i] * ns[i], cnt++;
        ss += ns[i] * ns[i];
        bad_act += s->act[(base + w) * A + j] != (float)tanh((double)z[i] + sigma * ns[i]);
      }
      if (s->term[base + w] | s->trunc[base + w]) {
        resets++;
        for (int j = 0; j < A; j++) ns[(size_t)w * A + j] = 0;
      }
    }
  }
  double r1 = sxy / sqrt(sxx * syy), slope = sxy / sxx;
  printf("  rho %.2f replay: %d of %d actions differ, %d episode ends, lag-1 slope %.3f "
         "(correlation %.3f) over %ld pairs, rms e %.3f\n",
         rho, bad_act, H * N * A, resets, slope, r1, cnt, sqrt(ss / (double)(H * N * A)));
  TEST_CHECK(bad_act == 0, "%d actions differ from tanh(z + sigma e)", bad_act);
  TEST_CHECK(resets >= N, "only %d episode ends in the window", resets);
  TEST_CHECK(!memcmp(rng, s->act_rng, sizeof(uint64_t) * N), "streams differ after the replay");
  TEST_CHECK(!memcmp(ns, s->noise, sizeof(double) * N * A), "noise state differs after the replay");
  TEST_CHECK(fabs(slope - rho) < 0.25, "lag-1 slope %g (rho %g)", slope, rho);
  free(rng), free(ns), free(z);
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
  float *pa, *ph;
  check_off_and_repeatable(&absent, &zero, &half, "beta (0.5)", &pa, &ph, &na);
  TEST_CHECK(ph && pa && !same_bits(ph, pa, na), "beta 0.5 gives the same actor as beta 0");
  free(pa), free(ph);
  check_formula();
  check_noise_correlation();
  return test_report("algo_shac_zeroth");
}
