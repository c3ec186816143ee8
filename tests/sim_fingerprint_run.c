// sim_fingerprint_run.c: one precision's part of sim_fingerprint (compiled once with SIM_DOUBLE, once without).
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim.h"

#ifdef SIM_DOUBLE
#define FINGERPRINT sim_fingerprint_f64
#else
#define FINGERPRINT sim_fingerprint_f32
#endif

static uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// FNV-1a of qpos, qvel and qacc of every world after every step of a rollout from keyframe 0 (qpos0 without
// one) under controls uniform in [-0.5, 0.5) (a fixed LCG); Newton iterations summed into *niter. 0 on error.
uint64_t FINGERPRINT(const mjModel* mm, int nworld, int nstep, long* niter, char* err, size_t errlen) {
  SimModel* m;
  SimData* d;
  if (sim_model_import(mm, &m, err, errlen)) return 0;
  if (sim_data_create(m, nworld, &d)) {
    snprintf(err, errlen, "sim_data_create failed");
    sim_model_free(m);
    return 0;
  }
  sim_reset(m, d, -1, mm->nkey > 0 ? 0 : -1);
  uint64_t h = 1469598103934665603ull, s = 12345;
  *niter = 0;
  for (int t = 0; t < nstep; t++) {
    for (int i = 0; i < nworld * m->nu; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      d->ctrl[i] = (sim_real)((double)(s >> 11) / 9007199254740992.0 - 0.5);
    }
    sim_step(m, d);
    h = fnv(h, d->qpos, sizeof(sim_real) * (size_t)nworld * m->nq);
    h = fnv(h, d->qvel, sizeof(sim_real) * (size_t)nworld * m->nv);
    h = fnv(h, d->qacc, sizeof(sim_real) * (size_t)nworld * m->nv);
    for (int w = 0; w < nworld; w++) *niter += d->solver_niter[w];
  }
  sim_data_free(d);
  sim_model_free(m);
  return h;
}
