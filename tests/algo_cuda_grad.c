// algo_cuda_grad: one CUDA SHAC iteration's actor gradient against the CPU path's (algo/shac.c, included for
// its internals) on the same state: cartpole, the SHAC and ∇Mimic presets at 64 worlds with random episode
// phases (time-outs and bootstraps inside the window). Three CPU iterations first (a normalizer with rollout
// statistics, a trained critic), then the CPU's whole state (engine, env counters and streams, every array
// `state` names) goes into the CUDA run's host mirror and up; both sides then roll out and backpropagate
// from identical states. Compared by relative L2 error: the observations after the rollout, the actor loss,
// the BPTT parameter gradient (plain SHAC), the clipped per-step action gradients (∇Mimic), and after one full
// iteration each the critic loss, value mean and actor gradient norm.
// From the fresh state (the normalizer's first update from 64 near-identical reset states) the gradient is
// ill-conditioned in float32: on the CPU alone, a 1e-7 relative perturbation of the actor and the velocities
// changes it by 5% (the ∇Mimic action gradients by 40%), so there only the loss and the observations are
// compared; after three iterations the same perturbation moves the gradient by 3e-7.
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

static void compare(Shac* cs, EnvBatch* ce, void* gs, EnvBatch* ge, const char* label, double tol, int grads) {
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
  printf("  %-40s loss cpu %.8e cuda %.8e (rel %.1e)  |g| %.4e  grad rel %.1e  action grads rel %.1e  obs rel %.1e\n",
         label, lc, lg, el, sqrt(gn), eg, ea, eo);
  TEST_CHECK(eo < tol && el < tol && (!grads || (eg < tol && ea < tol)), "%s: CUDA differs from CPU (tol %g)", label,
             tol);
  free(g), free(ag);
}

// the CPU run's state (env mirror and every array `state` names) into the CUDA run's host mirror, then up
static void copy_state(void* cp, EnvBatch* ce, void* gp, EnvBatch* ge) {
  CkTensor tc[64], tg[64];
  int nc = algo_shac.state(cp, tc, 64, 0), ng = algo_shac_cuda.state(gp, tg, 64, 0);
  TEST_CHECK(nc == ng && nc > 0, "state: %d vs %d arrays", nc, ng);
  for (int i = 0; i < nc && i < ng; i++) {
    int same =
        !strcmp(tc[i].name, tg[i].name) && tc[i].dtype == tg[i].dtype && ckpt_count(&tc[i]) == ckpt_count(&tg[i]);
    TEST_CHECK(same, "state array %d: %s vs %s", i, tc[i].name, tg[i].name);
    if (same) memcpy(tg[i].data, tc[i].data, (size_t)ckpt_count(&tc[i]) * ckpt_dtype_size(tc[i].dtype));
  }
  size_t N = (size_t)ce->nworld;
  memcpy(ge->d->buffer, ce->d->buffer, ce->d->nbuffer);
  memcpy(ge->obs, ce->obs, sizeof(float) * N * ce->obs_dim);
  memcpy(ge->t, ce->t, sizeof(int32_t) * N);
  memcpy(ge->rng, ce->rng, sizeof(uint64_t) * N);
  memcpy(ge->nan_seen, ce->nan_seen, sizeof(int32_t) * N);
  memcpy(ge->ep_return, ce->ep_return, sizeof(double) * N);
  TEST_CHECK(algo_shac_cuda.sync(gp, ge, 0) == 0, "upload");
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
  snprintf(lab, sizeof(lab), "%s, fresh (loss, obs only)", label);
  compare(cs, ce, gp, ge, lab, 2e-3, 0);
  double m1[M_COUNT], m2[M_COUNT];
  AlgoTimes tm = {0, 0, 0};
  for (int k = 0; k < 3; k++) TEST_CHECK(shac_iterate(cp, ce, m1, &tm) == 0, "cpu iterate");
  copy_state(cp, ce, gp, ge);
  snprintf(lab, sizeof(lab), "%s, after 3 CPU iterations", label);
  compare(cs, ce, gp, ge, lab, 1e-3, 1);
  // one full iteration each from the same state
  copy_state(cp, ce, gp, ge);
  TEST_CHECK(shac_iterate(cp, ce, m1, &tm) == 0, "cpu iterate");
  TEST_CHECK(algo_shac_cuda.iterate(gp, ge, m2, &tm) == 0, "cuda iterate");
  printf("  %-40s critic loss cpu %.6e cuda %.6e, value mean cpu %.6e cuda %.6e, grad norm cpu %.6e cuda %.6e\n", label,
         m1[M_CRITIC], m2[M_CRITIC], m1[M_VALUE], m2[M_VALUE], m1[M_GRADNORM], m2[M_GRADNORM]);
  for (int k = 0; k < 3; k++) {
    int i = k == 0 ? M_CRITIC : (k == 1 ? M_VALUE : M_GRADNORM);
    TEST_CHECK(fabs(m1[i] - m2[i]) <= 1e-3 * fabs(m1[i]) + 1e-9, "%s: metric %s: cpu %g cuda %g", label, kMetrics[i],
               m1[i], m2[i]);
  }
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
