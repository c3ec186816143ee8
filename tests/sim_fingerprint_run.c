// sim_fingerprint_run.c: one precision's part of sim_fingerprint (compiled once with SIM_DOUBLE, once without).
#include <mujoco/mujoco.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"

#ifdef SIM_DOUBLE
#define FINGERPRINT sim_fingerprint_f64
#define FINGERPRINT_GRAD sim_fingerprint_grad_f64
#else
#define FINGERPRINT sim_fingerprint_f32
#define FINGERPRINT_GRAD sim_fingerprint_grad_f32
#endif

static uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// FNV-1a of n reals, every NaN hashed as one value: a NaN's sign and payload follow the operand order the
// compiler picks for a commutative operation, not the arithmetic
static uint64_t fnv_reals(uint64_t h, const sim_real* x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    sim_real v = x[i] == x[i] ? x[i] : (sim_real)NAN;
    h = fnv(h, &v, sizeof v);
  }
  return h;
}

// the fixed LCG's next state, and a value uniform in [-0.5, 0.5) from a state's top bits
static uint64_t lcg_step(uint64_t* s) { return *s = *s * 6364136223846793005ull + 1442695040888963407ull; }
static sim_real lcg_uniform(uint64_t x, int bits) {
  return (sim_real)((double)(x >> (64 - bits)) / (double)(1ull << bits) - 0.5);
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
    for (int i = 0; i < nworld * m->nu; i++) d->ctrl[i] = lcg_uniform(lcg_step(&s), 53);
    sim_step(m, d);
    h = fnv_reals(h, d->qpos, (size_t)nworld * m->nq);
    h = fnv_reals(h, d->qvel, (size_t)nworld * m->nv);
    h = fnv_reals(h, d->qacc, (size_t)nworld * m->nv);
    for (int w = 0; w < nworld; w++) *niter += d->solver_niter[w];
  }
  sim_data_free(d);
  sim_model_free(m);
  return h;
}

// FNV-1a of the backward: from the state after nstep steps of the rollout above, 5 recorded control steps of 4
// substeps under the same kind of controls, then their backward from a fixed cotangent on the final state;
// hashes adj_qpos, adj_qvel and adj_ctrl after every control step's backward and the parameter cotangents at
// the end. 0 on error.
uint64_t FINGERPRINT_GRAD(const mjModel* mm, int nworld, int nstep, char* err, size_t errlen) {
  const int T = 5, nsub = 4;
  SimModel* m;
  SimData* d;
  if (sim_model_import(mm, &m, err, errlen)) return 0;
  if (sim_adjoint_enable(m, T * nsub) || sim_data_create(m, nworld, &d)) {
    snprintf(err, errlen, "sim_adjoint_enable / sim_data_create failed");
    sim_model_free(m);
    return 0;
  }
  sim_reset(m, d, -1, mm->nkey > 0 ? 0 : -1);
  uint64_t h = 1469598103934665603ull, s = 12345;
  for (int t = 0; t < nstep + T; t++) {
    for (int i = 0; i < nworld * m->nu; i++) d->ctrl[i] = lcg_uniform(lcg_step(&s), 53);
    if (t < nstep) sim_step(m, d);
    else sim_control_step(m, d, nsub, 1);
  }
  for (int i = 0; i < nworld * m->nv; i++) {
    uint64_t x = lcg_step(&s);
    d->adj_qpos[i] = lcg_uniform(x, 53);
    d->adj_qvel[i] = lcg_uniform(x, 51);
  }
  for (int t = T - 1; t >= 0; t--) {
    if (sim_control_step_backward(m, d, nsub)) {
      snprintf(err, errlen, "sim_control_step_backward failed");
      h = 0;
      break;
    }
    h = fnv_reals(h, d->adj_qpos, (size_t)nworld * m->nv);
    h = fnv_reals(h, d->adj_qvel, (size_t)nworld * m->nv);
    h = fnv_reals(h, d->adj_ctrl, (size_t)nworld * m->nu);
  }
  if (h) {
    h = fnv_reals(h, d->adj_body_mass, (size_t)nworld * m->nbody);
    h = fnv_reals(h, d->adj_body_ipos, (size_t)nworld * 3 * m->nbody);
    h = fnv_reals(h, d->adj_geom_friction, (size_t)nworld * 3 * m->ngeom);
  }
  sim_data_free(d);
  sim_model_free(m);
  return h;
}
