// verify_engine.c: runs our engine (one precision, CPU or CUDA backend) on a batch of states given in
// float64, for `adjoint verify`. Compiled once per precision (verify_engine_f64 / _f32).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tools/verify.h"
#if defined(ADJ_HAVE_CUDA) && !defined(SIM_DOUBLE)
#include "sim/cuda/sim_cuda.h"
#endif

#define verify_engine SIM_SFX(verify_engine)
#define verify_grad SIM_SFX(verify_grad)

static void load_states(const SimModel* m, SimData* d, const VerifyBatch* b) {
  for (int w = 0; w < b->n; w++) {
    for (int i = 0; i < m->nq; i++) d->qpos[w * m->nq + i] = (sim_real)b->qpos[w * m->nq + i];
    for (int i = 0; i < m->nv; i++) {
      d->qvel[w * m->nv + i] = (sim_real)b->qvel[w * m->nv + i];
      d->qacc_warmstart[w * m->nv + i] = (sim_real)b->warm[w * m->nv + i];
      d->qfrc_applied[w * m->nv + i] = 0;
    }
    for (int i = 0; i < m->nu; i++) d->ctrl[w * m->nu + i] = (sim_real)b->ctrl[w * m->nu + i];
    d->time[w] = 0;
  }
}

// outputs of the forward pass: qacc, qfrc_constraint, contacts, overflow counters
static void read_forward(const SimModel* m, const SimData* d, VerifyBatch* b) {
  for (size_t k = 0; k < (size_t)b->n * m->nv; k++) {
    b->qacc[k] = d->qacc[k];
    b->qfrc_constraint[k] = d->qfrc_constraint[k];
  }
  b->ncon_overflow = b->nefc_overflow = 0;
  for (int w = 0; w < b->n; w++) {
    int nc = m->nconmax > 0 ? d->ncon[w] : 0;
    b->ncon[w] = nc;
    for (int c = 0; c < nc && c < b->con_cap && c < m->nconmax; c++) {
      b->con_geom[((size_t)w * b->con_cap + c) * 2] = d->contact_geom[((size_t)w * m->nconmax + c) * 2];
      b->con_geom[((size_t)w * b->con_cap + c) * 2 + 1] = d->contact_geom[((size_t)w * m->nconmax + c) * 2 + 1];
    }
    b->ncon_overflow += d->ncon_overflow[w];
    b->nefc_overflow += d->nefc_overflow[w];
  }
}

// imports the model and creates b->n worlds loaded with b's states; grad: with one substep of tape
static int engine_open(const void* mjmodel, const VerifyBatch* b, int grad, SimModel** m, SimData** d, char* err,
                       size_t errlen) {
  int rc = sim_model_import(mjmodel, m, err, errlen);
  if (rc) return rc;
  if (grad) sim_adjoint_enable(*m, 1);
  rc = sim_data_create(*m, b->n, d);
  if (rc) {
    snprintf(err, errlen, "cannot allocate %d worlds", b->n);
    sim_model_free(*m);
    return rc;
  }
  load_states(*m, *d, b);
  return 0;
}

// backend: 0 cpu, 1 cuda. Returns 0 or an error code with a message in err.
int verify_engine(const void* mjmodel, VerifyBatch* b, int backend, char* err, size_t errlen) {
  SimModel* m = NULL;
  SimData* d = NULL;
  int rc = engine_open(mjmodel, b, 0, &m, &d, err, errlen);
  if (rc) return rc;
  b->npair = m->npair;
  if (backend == 0) {
    sim_forward(m, d);
    read_forward(m, d, b);
    load_states(m, d, b);
    sim_step(m, d);
  } else {
#if defined(ADJ_HAVE_CUDA) && !defined(SIM_DOUBLE)
    SimCuda* g = NULL;
    rc = simcuda_create(m, b->n, &g);
    if (!rc) rc = simcuda_upload(g, d);
    if (!rc) rc = simcuda_forward(g);
    if (!rc) rc = simcuda_download(g, d);
    if (!rc) {
      read_forward(m, d, b);
      load_states(m, d, b);
      rc = simcuda_upload(g, d);
    }
    if (!rc) rc = simcuda_step(g);
    if (!rc) rc = simcuda_download(g, d);
    simcuda_free(g);
    if (rc) snprintf(err, errlen, "CUDA backend failed: %s", simcuda_last_error());
#else
    snprintf(err, errlen, "the CUDA backend is %s", SIM_EPS_REAL < 1e-10 ? "float32 only (use --precision float32)"
                                                                        : "not built (no nvcc at build time)");
    rc = SIM_ERR_ARG;
#endif
  }
  if (!rc) {
    for (size_t k = 0; k < (size_t)b->n * m->nq; k++) b->qpos_next[k] = d->qpos[k];
    for (size_t k = 0; k < (size_t)b->n * m->nv; k++) b->qvel_next[k] = d->qvel[k];
  }
  sim_data_free(d);
  sim_model_free(m);
  return rc;
}

// the cotangent c of each world's step output, where the backward reads it
static void set_cotangents(const SimModel* m, SimData* d, const VerifyBatch* b) {
  for (size_t k = 0; k < (size_t)b->n * m->nv; k++) {
    d->adj_qpos[k] = (sim_real)b->cot_qpos[k];
    d->adj_qvel[k] = (sim_real)b->cot_qvel[k];
  }
}

// after the backward: the input cotangents c' dx'/du and the count of undifferentiated constraint evaluations
static void read_gradients(const SimModel* m, const SimData* d, VerifyBatch* b) {
  for (size_t k = 0; k < (size_t)b->n * m->nv; k++) {
    b->grad_qpos[k] = d->adj_qpos[k];
    b->grad_qvel[k] = d->adj_qvel[k];
  }
  for (size_t k = 0; k < (size_t)b->n * m->nu; k++) b->grad_ctrl[k] = d->adj_ctrl[k];
  for (int w = 0; w < b->n; w++) b->grad_nconstraint[w] = d->adj_nconstraint[w];
}

#if defined(ADJ_HAVE_CUDA) && !defined(SIM_DOUBLE)
static int grad_cuda(const SimModel* m, SimData* d, const VerifyBatch* b) {
  SimCuda* g = NULL;
  int rc = simcuda_create(m, b->n, &g);
  if (!rc) rc = simcuda_upload(g, d);
  if (!rc) rc = simcuda_tape_clear(g);
  if (!rc) rc = simcuda_control_step(g, 1, 1);
  // the cotangents are set on the host: the round trip copies the whole batch (tape included)
  if (!rc) rc = simcuda_download(g, d);
  if (!rc) {
    set_cotangents(m, d, b);
    rc = simcuda_upload(g, d);
  }
  if (!rc) rc = simcuda_control_step_backward(g, 1);
  if (!rc) rc = simcuda_download(g, d);
  simcuda_free(g);
  return rc;
}
#endif

// c' dx'/d(qpos, qvel, ctrl) of one control step of one substep from each state: a recorded step, then its
// backward. backend: 0 cpu, 1 cuda. Returns 0 or an error code with a message in err.
int verify_grad(const void* mjmodel, VerifyBatch* b, int backend, char* err, size_t errlen) {
  SimModel* m = NULL;
  SimData* d = NULL;
  int rc = engine_open(mjmodel, b, 1, &m, &d, err, errlen);
  if (rc) return rc;
  if (backend == 0) {
    sim_tape_clear(m, d);
    rc = sim_control_step(m, d, 1, 1);
    if (!rc) {
      set_cotangents(m, d, b);
      rc = sim_control_step_backward(m, d, 1);
    }
    if (rc) snprintf(err, errlen, "gradient block: the adjoint refused the step (error %d)", rc);
  } else {
#if defined(ADJ_HAVE_CUDA) && !defined(SIM_DOUBLE)
    rc = grad_cuda(m, d, b);
    if (rc) snprintf(err, errlen, "CUDA backend failed: %s", simcuda_last_error());
#else
    snprintf(err, errlen, "the CUDA backend is not available in this precision or build");
    rc = SIM_ERR_ARG;
#endif
  }
  if (!rc) read_gradients(m, d, b);
  sim_data_free(d);
  sim_model_free(m);
  return rc;
}
