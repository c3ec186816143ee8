// algo_cuda_grad: one CUDA SHAC iteration's actor gradient against the CPU path's (algo/shac.c, included for
// its internals) on the same state, cartpole, the SHAC and ∇Mimic presets at 64 worlds with random episode
// phases (time-outs and bootstraps inside the window):
//   - from the fresh state (first iteration: the normalizer's first update, a random target critic);
//   - after one full iteration on each side (trained critic and normalizer, one actor step);
// both rollouts start from identical host states (same seed); compared: the observations after the rollout,
// the actor loss, the BPTT parameter gradient (plain SHAC) and the clipped per-step action gradients (∇Mimic),
// by relative L2 error within float32 tolerance (the two differ in summation order and in the GPU's libm).
// Skips (77) without a device.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo_cuda.h"
#include "algo/shac.c"
#include "sim/cuda/sim_cuda.h"
#include "tests/test.h"

static double rel_l2(const float* a, const float* b, size_t n) {
  double d = 0, r = 0;
  for (size_t i = 0; i < n; i++) {
    double e = (double)a[i] - (double)b[i];
    d += e * e, r += (double)b[i] * b[i];
  }
  return (d == d) ? sqrt(d) / fmax(sqrt(r), 1e-30) : INFINITY;
}

static void compare(Shac* cs, EnvBatch* ce, void* gs, EnvBatch* ge, const char* label, double tol) {
  double metrics[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  double lc = shac_rollout_grad(cs, ce, metrics, &tm), lg = 0;
  size_t na = (size_t)cs->na, hna = (size_t)cs->H * cs->N * cs->A;
  float* g = malloc(sizeof(float) * na);
  float* ag = malloc(sizeof(float) * hna);
  int rc = algo_shac_cuda_rollout_grad(gs, ge, &lg, g, ag);
  TEST_CHECK(rc == 0, "%s: CUDA rollout_grad failed", label);
  TEST_CHECK(algo_shac_cuda.sync(gs, ge, 1) == 0, "%s: download", label);
  double eo = rel_l2(ge->obs, ce->obs, (size_t)ce->nworld * ce->obs_dim);
  double eg = cs->regress ? 0 : rel_l2(g, cs->gsum, na);
  double ea = rel_l2(ag, cs->gtarget, hna);
  double el = fabs(lg - lc) / fmax(fabs(lc), 1e-30);
  double gn = 0;
  for (size_t i = 0; i < na; i++) gn += (double)cs->gsum[i] * cs->gsum[i];
  printf("  %-34s loss cpu %.8e cuda %.8e (rel %.1e)  |g| %.4e  grad rel %.1e  action grads rel %.1e  obs rel %.1e\n",
         label, lc, lg, el, sqrt(gn), eg, ea, eo);
  TEST_CHECK(eo < tol && el < tol && eg < tol && ea < tol, "%s: CUDA differs from CPU (tol %g)", label, tol);
  free(g), free(ag);
}

static void check(const char* config, const char* label) {
  Cfg c;
  char err[1024];
  TEST_CHECK(cfg_defaults(&c, err, sizeof(err)) == 0 && cfg_load_yaml(&c, config, err, sizeof(err)) == 0, "%s", err);
  EnvBatch *ce = NULL, *ge = NULL;
  int N = (int)c.env_num_envs;
  TEST_CHECK(env_create(&ce, c.env_task, N, 0, (uint64_t)c.run_seed, err, sizeof(err)) == 0, "env: %s", err);
  TEST_CHECK(env_create(&ge, c.env_task, N, 0, (uint64_t)c.run_seed, err, sizeof(err)) == 0, "env: %s", err);
  void *cp = NULL, *gp = NULL;
  TEST_CHECK(shac_create(&cp, &c, ce, err, sizeof(err)) == 0, "cpu create: %s", err);
  TEST_CHECK(algo_shac_cuda.create(&gp, &c, ge, err, sizeof(err)) == 0, "cuda create: %s", err);
  if (!cp || !gp) return;
  env_randomize_episode_start(ce);
  env_randomize_episode_start(ge);
  TEST_CHECK(algo_shac_cuda.sync(gp, ge, 0) == 0, "upload");
  Shac* cs = (Shac*)cp;
  char lab[128];
  snprintf(lab, sizeof(lab), "%s, fresh", label);
  compare(cs, ce, gp, ge, lab, 2e-3);
  // one full iteration each, from the same (rolled-out) state: put the CPU's state on both sides first
  TEST_CHECK(algo_shac_cuda.sync(gp, ge, 1) == 0, "download");
  memcpy(ge->d->buffer, ce->d->buffer, ce->d->nbuffer);
  memcpy(ge->obs, ce->obs, sizeof(float) * (size_t)N * ce->obs_dim);
  memcpy(ge->t, ce->t, sizeof(int32_t) * (size_t)N);
  memcpy(ge->rng, ce->rng, sizeof(uint64_t) * (size_t)N);
  memcpy(ge->nan_seen, ce->nan_seen, sizeof(int32_t) * (size_t)N);
  TEST_CHECK(algo_shac_cuda.sync(gp, ge, 0) == 0, "upload");
  double m1[M_COUNT], m2[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  TEST_CHECK(shac_iterate(cp, ce, m1, &tm) == 0, "cpu iterate");
  TEST_CHECK(algo_shac_cuda.iterate(gp, ge, m2, &tm) == 0, "cuda iterate");
  printf("  %-34s critic loss cpu %.6e cuda %.6e, value mean cpu %.6e cuda %.6e, grad norm cpu %.6e cuda %.6e\n",
         label, m1[M_CRITIC], m2[M_CRITIC], m1[M_VALUE], m2[M_VALUE], m1[M_GRADNORM], m2[M_GRADNORM]);
  TEST_CHECK(fabs(m1[M_VALUE] - m2[M_VALUE]) <= 2e-3 * fabs(m1[M_VALUE]) + 1e-6, "%s: value mean differs", label);
  TEST_CHECK(fabs(m1[M_GRADNORM] - m2[M_GRADNORM]) <= 2e-3 * fabs(m1[M_GRADNORM]) + 1e-9, "%s: grad norm differs",
             label);
  snprintf(lab, sizeof(lab), "%s, after one iteration", label);
  compare(cs, ce, gp, ge, lab, 5e-3);
  shac_destroy(cp);
  algo_shac_cuda.destroy(gp);
  env_destroy(ce);
  env_destroy(ge);
}

int main(void) {
  if (simcuda_device_count() == 0) {
    printf("no CUDA device: skipped\n");
    return TEST_SKIP;
  }
  check("configs/cartpole_shac.yaml", "SHAC");
  check("configs/cartpole_nablamimic.yaml", "nablamimic");
  return test_report("algo_cuda_grad");
}
