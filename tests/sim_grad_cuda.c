// sim_grad_cuda: the CUDA backward (one warp per world) against the float32 CPU backward, same source: a
// recorded rollout of 4 control steps x 4 substeps and its backward, on G1 (implicitfast) and the gradient
// test models (constraints disabled), 256 worlds; then one control step with contacts and limits (G1 scene
// from its keyframe, hopper, walker, free bodies): CUDA vs CPU per world (median and worst world), and two
// CUDA runs bitwise; and the parameter cotangents with random per-world overrides (G1 scene, hopper, box stack).
// ADJ_GPU_TEST_SMALL (tests/gpu_test_size.h): 32 worlds where 256 run, 64 where 1024 run. Skips (77) without a
// device.
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/sim_cuda.h"
#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tests/gpu_test_size.h"
#include "tests/test.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// relative error of a block per world (against the block's max magnitude): worst world, and the median world
// in *med (if given)
static double block_err_med(const float* a, const float* b, int n, int nworld, double* med) {
  double worst = 0;
  double* e_w = malloc(sizeof(double) * (size_t)nworld);
  for (int w = 0; w < nworld; w++) {
    double scale = 1e-30, diff = 0;
    for (int i = 0; i < n; i++) {
      scale = fmax(scale, fabs((double)a[w * n + i]));
      double e = fabs((double)a[w * n + i] - (double)b[w * n + i]);
      diff = (e == e) ? fmax(diff, e) : INFINITY;
    }
    e_w[w] = diff / scale;
    worst = fmax(worst, e_w[w]);
  }
  if (med) {
    qsort(e_w, (size_t)nworld, sizeof(double), cmp_double);
    *med = e_w[nworld / 2];
  }
  free(e_w);
  return worst;
}
static double block_err(const float* a, const float* b, int n, int nworld) {
  return block_err_med(a, b, n, nworld, NULL);
}

// timestep > 0 overrides the model's (grad_chain's light, stiff finger diverges in float32 at its own 4 ms)
// loads and imports an asset (contact capacity nconmax, 0: derived from the model); NULL after a failed check
static SimModel* load_model(const char* name, const SimLoadOptions* opt, int nconmax, void** mj) {
  char path[1024], err[1024];
  *mj = NULL;
  if (sim_find_asset(name, path, sizeof(path)) || sim_load_mjcf(path, opt, mj, err, sizeof(err))) {
    TEST_CHECK(0, "load %s", name);
    return NULL;
  }
  SimModel* m = NULL;
  int rc = sim_model_import_caps(*mj, nconmax, 0, &m, err, sizeof(err));
  if (rc) {
    TEST_CHECK(0, "import %s: %s", name, err);
    sim_free_mjmodel(*mj);
    return NULL;
  }
  return m;
}

static void check(const char* name, int nworld, double timestep, double tol) {
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = SIM_DSBL_CONSTRAINT;
  opt.timestep = timestep;
  void* mj;
  SimModel* m = load_model(name, &opt, 0, &mj);
  if (!m) return;
  int nsub = 4, nstep = 4;
  sim_adjoint_enable(m, nsub * nstep);
  SimData *c = NULL, *g = NULL;
  sim_data_create(m, nworld, &c);
  sim_data_create(m, nworld, &g);
  for (int w = 0; w < nworld; w++) {
    for (int i = 0; i < m->nv; i++) c->qvel[w * m->nv + i] = (sim_real)(urand() - 0.5);
    for (int i = 0; i < m->nq; i++) c->qpos[w * m->nq + i] += (sim_real)(0.1 * (urand() - 0.5));
  }
  float* ctrl = malloc(sizeof(float) * (size_t)nworld * m->nu * nstep + 4);
  for (size_t k = 0; k < (size_t)nworld * m->nu * nstep; k++) ctrl[k] = (float)(urand() - 0.5);
  SimCuda* gc = NULL;
  int rc = simcuda_create(m, nworld, &gc);
  TEST_CHECK(rc == 0, "simcuda_create: %s", simcuda_last_error());
  if (!rc) rc = simcuda_upload(gc, c);
  for (int t = 0; t < nstep && !rc; t++) {
    memcpy(c->ctrl, ctrl + (size_t)t * nworld * m->nu, sizeof(float) * nworld * m->nu);
    sim_control_step(m, c, nsub, 1);
    rc = simcuda_download(gc, g);
    memcpy(g->ctrl, ctrl + (size_t)t * nworld * m->nu, sizeof(float) * nworld * m->nu);
    if (!rc) rc = simcuda_upload(gc, g);
    if (!rc) rc = simcuda_control_step(gc, nsub, 1);
  }
  if (!rc) rc = simcuda_download(gc, g);
  double ef = block_err(c->qpos, g->qpos, m->nq, nworld);
  for (size_t k = 0; k < (size_t)nworld * m->nv; k++) {
    float s = (float)(urand() - 0.5), u = (float)(urand() - 0.5);
    c->adj_qpos[k] = g->adj_qpos[k] = s;
    c->adj_qvel[k] = g->adj_qvel[k] = u;
  }
  if (!rc) rc = simcuda_upload(gc, g);
  double eq = 0, ev = 0, eu = 0;
  for (int t = nstep - 1; t >= 0 && !rc; t--) {
    sim_control_step_backward(m, c, nsub);
    rc = simcuda_control_step_backward(gc, nsub);
    if (!rc) rc = simcuda_download(gc, g);
    eu = fmax(eu, block_err(c->adj_ctrl, g->adj_ctrl, m->nu, nworld));
  }
  TEST_CHECK(rc == 0, "CUDA: %s", simcuda_last_error());
  eq = block_err(c->adj_qpos, g->adj_qpos, m->nv, nworld);
  ev = block_err(c->adj_qvel, g->adj_qvel, m->nv, nworld);
  printf("%-28s %d worlds: CUDA vs CPU float32: state %.1e, d/dqpos %.1e, d/dqvel %.1e, d/dctrl %.1e\n", name, nworld,
         ef, eq, ev, eu);
  TEST_CHECK(ef < 1e-4 && eq < tol && ev < tol && eu < tol, "%s: CUDA backward differs from CPU", name);
  simcuda_free(gc);
  free(ctrl);
  sim_data_free(c);
  sim_data_free(g);
  sim_model_free(m);
  sim_free_mjmodel(mj);
}

// a recorded rollout and its backward on the device: fills qpos (nworld*nq), the input cotangents aq, av
// (nworld*nv) and the per-step ctrl cotangents au (nstep*nworld*nu)
static int gpu_rollout(SimCuda* gc, const SimModel* m, SimData* g, const SimData* s0, const float* ctrl,
                       const float* seed, int nworld, int nsub, int nstep, float* qpos, float* aq, float* av,
                       float* au) {
  size_t nq = (size_t)nworld * m->nq, nv = (size_t)nworld * m->nv, nu = (size_t)nworld * m->nu;
  memcpy(g->buffer, s0->buffer, s0->nbuffer);
  int rc = simcuda_upload(gc, g);
  for (int t = 0; t < nstep && !rc; t++) {
    rc = simcuda_download(gc, g);
    memcpy(g->ctrl, ctrl + t * nu, sizeof(float) * nu);
    if (!rc) rc = simcuda_upload(gc, g);
    if (!rc) rc = simcuda_control_step(gc, nsub, 1);
  }
  if (!rc) rc = simcuda_download(gc, g);
  if (rc) return rc;
  memcpy(qpos, g->qpos, sizeof(float) * nq);
  memcpy(g->adj_qpos, seed, sizeof(float) * nv);
  memcpy(g->adj_qvel, seed + nv, sizeof(float) * nv);
  rc = simcuda_upload(gc, g);
  for (int t = nstep - 1; t >= 0 && !rc; t--) {
    rc = simcuda_control_step_backward(gc, nsub);
    if (!rc) rc = simcuda_download(gc, g);
    if (!rc) memcpy(au + t * nu, g->adj_ctrl, sizeof(float) * nu);
  }
  memcpy(aq, g->adj_qpos, sizeof(float) * nv);
  memcpy(av, g->adj_qvel, sizeof(float) * nv);
  return rc;
}

// the world clocks (simcuda_world_clock, the staged launch) leave the results as they are: one recorded control
// step and its backward from s0 with the first controls and the cotangent, with clocks and without, give the same
// batch bit for bit; every clocked world ends after it starts, in some cycles, with no more rows than the capacity
static int check_world_clock(SimCuda* gc, const SimModel* m, SimData* g, const SimData* s0, const float* ctrl,
                             const float* seed, int nworld, int nsub, const char* name) {
  size_t nv = (size_t)nworld * m->nv, nu = (size_t)nworld * m->nu;
  size_t words = (size_t)nsub * SIMCUDA_NKERNEL * SIMCUDA_CLOCK_WORDS * nworld;
  unsigned long long* rec = malloc(sizeof(unsigned long long) * words);
  void* plain = malloc(s0->nbuffer);
  int rc = 0;
  for (int run = 0; run < 2 && !rc; run++) {  // without the clocks, then with them
    memcpy(g->buffer, s0->buffer, s0->nbuffer);
    memcpy(g->ctrl, ctrl, sizeof(float) * nu);
    memcpy(g->adj_qpos, seed, sizeof(float) * nv);
    memcpy(g->adj_qvel, seed + nv, sizeof(float) * nv);
    if (run) {
      rc = simcuda_world_clock(gc, g, nsub, rec);
    } else {
      rc = simcuda_upload(gc, g);
      if (!rc) rc = simcuda_tape_clear(gc);
      if (!rc) rc = simcuda_control_step(gc, nsub, 1);
      if (!rc) rc = simcuda_control_step_backward(gc, nsub);
    }
    if (!rc) rc = simcuda_download(gc, g);
    if (!rc && !run) memcpy(plain, g->buffer, s0->nbuffer);
  }
  if (!rc) {
    int same = !memcmp(plain, g->buffer, s0->nbuffer), sane = 1;
    for (size_t i = 0; i < words; i += SIMCUDA_CLOCK_WORDS)
      sane &= rec[i + 1] >= rec[i] && rec[i + 2] > 0 && (int)((rec[i + 3] >> 32) & 0xffff) <= m->nefcmax;
    printf("%-28s world clocks: the batch %s, records %s\n", name, same ? "bit-identical" : "DIFFERENT",
           sane ? "consistent" : "INCONSISTENT");
    TEST_CHECK(same, "%s: the world clocks change the results", name);
    TEST_CHECK(sane, "%s: a world clock record is inconsistent", name);
  }
  free(rec), free(plain);
  return rc;
}

// with constraint rows (contacts, limits), from the first keyframe (if any) plus noise: CUDA vs the float32 CPU
// per world, median world <= med_tol and worst world <= max_tol (a contact onset in a few worlds amplifies
// the sinf/cosf rounding differences); two CUDA runs bit-identical
static void check_rows(const char* name, int nworld, double med_tol, double max_tol) {
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  void* mj;
  SimModel* m = load_model(name, &opt, 128, &mj);  // as the benches: the derived capacity (G1: 942) is never reached
  if (!m) return;
  // one control step: over several, contact onsets amplify the kinematics' sinf/cosf rounding differences in
  // the trajectories themselves (G1 after 4 control steps: state 1.6e-7 apart in the median world)
  int nsub = 4, nstep = 1, nq = m->nq, nv = m->nv, nu = m->nu;
  sim_adjoint_enable(m, nsub * nstep);
  SimData *c = NULL, *g = NULL, *s0 = NULL;
  sim_data_create(m, nworld, &c);
  sim_data_create(m, nworld, &g);
  sim_data_create(m, nworld, &s0);
  sim_reset(m, c, -1, m->nkey > 0 ? 0 : -1);
  for (int w = 0; w < nworld; w++) {
    for (int i = 0; i < nv; i++) c->qvel[w * nv + i] += (sim_real)(0.2 * (urand() - 0.5));
    for (int i = 0; i < nq; i++) c->qpos[w * nq + i] += (sim_real)(0.02 * (urand() - 0.5));
  }
  memcpy(s0->buffer, c->buffer, c->nbuffer);
  size_t nQ = (size_t)nworld * nq, nV = (size_t)nworld * nv, nU = (size_t)nworld * nu;
  float* ctrl = malloc(sizeof(float) * (nU * nstep + 1));
  float* seed = malloc(sizeof(float) * 2 * nV);
  float* cu = malloc(sizeof(float) * (nU * nstep + 1));
  float* out[5];
  for (size_t k = 0; k < nU * nstep; k++) ctrl[k] = (float)(urand() - 0.5);
  for (size_t k = 0; k < 2 * nV; k++) seed[k] = (float)(urand() - 0.5);
  // CPU reference
  for (int t = 0; t < nstep; t++) {
    memcpy(c->ctrl, ctrl + t * nU, sizeof(float) * nU);
    sim_control_step(m, c, nsub, 1);
  }
  memcpy(c->adj_qpos, seed, sizeof(float) * nV);
  memcpy(c->adj_qvel, seed + nV, sizeof(float) * nV);
  for (int t = nstep - 1; t >= 0; t--) {
    sim_control_step_backward(m, c, nsub);
    memcpy(cu + t * nU, c->adj_ctrl, sizeof(float) * nU);
  }
  long long rows = 0;
  for (int w = 0; w < nworld; w++) rows += c->adj_nconstraint[w];
  SimCuda* gc = NULL;
  int rc = simcuda_create(m, nworld, &gc);
  if (!rc) simcuda_set_staged(gc, 0);
  // runs 0 and 1 fused, run 2 staged (one kernel per group of stages), run 3 staged with the solver's scratch in
  // shared memory, run 4 as 3 in three groups of worlds on streams of their own (unequal, as nworld is no multiple
  // of 3 x SIMCUDA_WPB): the same bits
  for (int rep = 0; rep < 5; rep++) {
    out[rep] = malloc(sizeof(float) * (nQ + 2 * nV + nU * nstep + 1));
    if (!rc && rep >= 2) simcuda_set_staged(gc, rep == 2 ? 1 : 2);
    if (!rc) simcuda_set_streams(gc, rep == 4 ? 3 : 1);
    if (!rc)
      rc = gpu_rollout(gc, m, g, s0, ctrl, seed, nworld, nsub, nstep, out[rep], out[rep] + nQ, out[rep] + nQ + nV,
                       out[rep] + nQ + 2 * nV);
  }
  if (!rc) rc = check_world_clock(gc, m, g, s0, ctrl, seed, nworld, nsub, name);
  TEST_CHECK(rc == 0, "CUDA: %s", simcuda_last_error());
  if (!rc) {
    double mf, mq, mv, mu = 0, eu = 0;
    double ef = block_err_med(c->qpos, out[0], nq, nworld, &mf);
    double eq = block_err_med(c->adj_qpos, out[0] + nQ, nv, nworld, &mq);
    double ev = block_err_med(c->adj_qvel, out[0] + nQ + nV, nv, nworld, &mv);
    for (int t = 0; t < nstep; t++) {
      double med;
      eu = fmax(eu, block_err_med(cu + t * nU, out[0] + nQ + 2 * nV + t * nU, nu, nworld, &med));
      mu = fmax(mu, med);
    }
    int same = !memcmp(out[0], out[1], sizeof(float) * (nQ + 2 * nV + nU * nstep));
    int staged = !memcmp(out[0], out[2], sizeof(float) * (nQ + 2 * nV + nU * nstep)) &&
                 !memcmp(out[0], out[3], sizeof(float) * (nQ + 2 * nV + nU * nstep));
    int streams = !memcmp(out[0], out[4], sizeof(float) * (nQ + 2 * nV + nU * nstep));
    printf("%-28s %d worlds, %lld evaluations with rows: CUDA vs CPU float32, median world / worst world: state "
           "%.1e / %.1e, d/dqpos %.1e / %.1e, d/dqvel %.1e / %.1e, d/dctrl %.1e / %.1e; two CUDA runs %s, staged "
           "launches %s, on 3 streams %s\n", name, nworld, rows, mf, ef, mq, eq, mv, ev, mu, eu,
           same ? "bit-identical" : "DIFFERENT", staged ? "bit-identical" : "DIFFERENT",
           streams ? "bit-identical" : "DIFFERENT");
    TEST_CHECK(rows > 0, "%s: no constraint rows", name);
    TEST_CHECK(mq <= med_tol && mv <= med_tol && mu <= med_tol, "%s: median world above %g", name, med_tol);
    TEST_CHECK(eq <= max_tol && ev <= max_tol && eu <= max_tol, "%s: worst world above %g", name, max_tol);
    TEST_CHECK(same, "%s: two CUDA runs differ", name);
    TEST_CHECK(staged, "%s: the staged launch differs from the fused", name);
    TEST_CHECK(streams, "%s: the staged launch on 3 streams differs from the fused", name);
  }
  simcuda_free(gc);
  free(ctrl), free(seed), free(cu), free(out[0]), free(out[1]), free(out[2]), free(out[3]), free(out[4]);
  sim_data_free(c);
  sim_data_free(g);
  sim_data_free(s0);
  sim_model_free(m);
  sim_free_mjmodel(mj);
}

// per-world parameter overrides: random masses, COM offsets and frictions in every world (sim_param_set on the
// host, uploaded with the batch), one recorded control step with contacts and its backward: the parameter
// cotangents (adj_body_mass, adj_body_ipos, adj_geom_friction) and the state's of CUDA against the float32 CPU
// per world (median world <= med_tol, worst world reported), and two CUDA runs bit-identical
static void check_params(const char* name, int nworld, int settle, double med_tol) {
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  void* mj;
  SimModel* m = load_model(name, &opt, 128, &mj);
  if (!m) return;
  int nsub = 4, nq = m->nq, nv = m->nv, nu = m->nu, nb = m->nbody, ng = m->ngeom;
  sim_adjoint_enable(m, nsub);
  TEST_CHECK(sim_params_enable(m) == 0, "sim_params_enable");
  SimData *c = NULL, *g = NULL, *s0 = NULL;
  sim_data_create(m, nworld, &c);
  sim_data_create(m, nworld, &g);
  sim_data_create(m, nworld, &s0);
  sim_reset(m, c, -1, m->nkey > 0 ? 0 : -1);
  double* v = malloc(sizeof(double) * (size_t)(3 * (nb + ng) + 1));
  double* v0 = malloc(sizeof(double) * (size_t)(3 * (nb + ng) + 1));
  for (int w = 0; w < nworld; w++) {
    for (int i = 0; i < nv; i++) c->qvel[w * nv + i] += (sim_real)(0.2 * (urand() - 0.5));
    for (int i = 0; i < nq; i++) c->qpos[w * nq + i] += (sim_real)(0.02 * (urand() - 0.5));
    sim_param_get(m, c, w, SIM_PARAM_BODY_MASS, v0);  // the model's until set
    for (int b = 0; b < nb; b++) v[b] = v0[b] * (0.8 + 0.4 * urand());
    TEST_CHECK(sim_param_set(m, c, w, SIM_PARAM_BODY_MASS, v) == 0, "set mass");
    sim_param_get(m, c, w, SIM_PARAM_BODY_IPOS, v0);
    for (int k = 0; k < 3 * nb; k++) v[k] = k < 3 ? 0 : v0[k] + 0.005 * (urand() - 0.5);
    TEST_CHECK(sim_param_set(m, c, w, SIM_PARAM_BODY_IPOS, v) == 0, "set ipos");
    sim_param_get(m, c, w, SIM_PARAM_GEOM_FRICTION, v0);
    for (int k = 0; k < 3 * ng; k++) v[k] = v0[k] * (0.6 + 0.8 * urand());
    TEST_CHECK(sim_param_set(m, c, w, SIM_PARAM_GEOM_FRICTION, v) == 0, "set friction");
  }
  for (int t = 0; t < settle; t++) sim_step(m, c);  // let the bodies land (CPU float32, each world its own)
  memcpy(s0->buffer, c->buffer, c->nbuffer);
  size_t nQ = (size_t)nworld * nq, nV = (size_t)nworld * nv, nU = (size_t)nworld * nu;
  size_t nP = (size_t)nworld * (4 * nb + 3 * ng);  // mass, ipos, friction cotangents
  float* ctrl = malloc(sizeof(float) * (nU + 1));
  float* seed = malloc(sizeof(float) * 2 * nV);
  float* cu = malloc(sizeof(float) * (nU + 1));
  float *out[2], *prm[2];
  for (size_t k = 0; k < nU; k++) ctrl[k] = (float)(urand() - 0.5);
  for (size_t k = 0; k < 2 * nV; k++) seed[k] = (float)(urand() - 0.5);
  // CPU reference
  sim_tape_clear(m, c);
  memcpy(c->ctrl, ctrl, sizeof(float) * nU);
  sim_control_step(m, c, nsub, 1);
  memcpy(c->adj_qpos, seed, sizeof(float) * nV);
  memcpy(c->adj_qvel, seed + nV, sizeof(float) * nV);
  sim_control_step_backward(m, c, nsub);
  memcpy(cu, c->adj_ctrl, sizeof(float) * nU);
  long long rows = 0;
  for (int w = 0; w < nworld; w++) rows += c->adj_nconstraint[w];
  SimCuda* gc = NULL;
  int rc = simcuda_create(m, nworld, &gc);
  for (int rep = 0; rep < 2; rep++) {
    out[rep] = malloc(sizeof(float) * (nQ + 2 * nV + nU + 1));
    prm[rep] = malloc(sizeof(float) * (nP + 1));
    if (!rc) rc = gpu_rollout(gc, m, g, s0, ctrl, seed, nworld, nsub, 1, out[rep], out[rep] + nQ, out[rep] + nQ + nV,
                              out[rep] + nQ + 2 * nV);
    if (!rc) {  // the device's parameter cotangents (downloaded into g by the rollout)
      memcpy(prm[rep], g->adj_body_mass, sizeof(float) * nworld * nb);
      memcpy(prm[rep] + (size_t)nworld * nb, g->adj_body_ipos, sizeof(float) * nworld * 3 * nb);
      memcpy(prm[rep] + (size_t)nworld * 4 * nb, g->adj_geom_friction, sizeof(float) * nworld * 3 * ng);
    }
  }
  // simcuda_upload_params: a batch with the model's values, then the overrides alone
  int upl = 0;
  if (!rc) {
    memcpy(g->buffer, s0->buffer, s0->nbuffer);
    sim_param_reset(m, g, -1);
    rc = simcuda_upload(gc, g);
    if (!rc) rc = simcuda_upload_params(gc, s0);
    if (!rc) rc = simcuda_download(gc, g);
    upl = !rc && !memcmp(g->prm_body_mass, s0->prm_body_mass, sizeof(float) * nworld * nb) &&
          !memcmp(g->prm_body_ipos, s0->prm_body_ipos, sizeof(float) * nworld * 3 * nb) &&
          !memcmp(g->geo_prm_body_ipos, s0->geo_prm_body_ipos, sizeof(double) * nworld * 3 * nb) &&
          !memcmp(g->prm_geom_friction, s0->prm_geom_friction, sizeof(float) * nworld * 3 * ng);
  }
  TEST_CHECK(rc == 0, "CUDA: %s", simcuda_last_error());
  TEST_CHECK(upl, "%s: simcuda_upload_params did not copy the overrides", name);
  if (!rc) {
    double mf, mq, mm, mi, mfr, mu;
    double ef = block_err_med(c->qpos, out[0], nq, nworld, &mf);
    double eq = block_err_med(c->adj_qpos, out[0] + nQ, nv, nworld, &mq);
    double eu = block_err_med(cu, out[0] + nQ + 2 * nV, nu, nworld, &mu);
    double em = block_err_med(c->adj_body_mass, prm[0], nb, nworld, &mm);
    double ei = block_err_med(c->adj_body_ipos, prm[0] + (size_t)nworld * nb, 3 * nb, nworld, &mi);
    double efr = block_err_med(c->adj_geom_friction, prm[0] + (size_t)nworld * 4 * nb, 3 * ng, nworld, &mfr);
    double fsum = 0;
    for (size_t k = 0; k < (size_t)nworld * 3 * ng; k++) fsum += fabs((double)c->adj_geom_friction[k]);
    int same = !memcmp(out[0], out[1], sizeof(float) * (nQ + 2 * nV + nU)) && !memcmp(prm[0], prm[1], sizeof(float) * nP);
    printf("%-28s %d worlds with random overrides, %lld evaluations with rows (sum |friction cotangent| %.3e): CUDA "
           "vs CPU float32, median world / worst world: state %.1e / %.1e, d/dqpos %.1e / %.1e, d/dctrl %.1e / "
           "%.1e, d/dmass %.1e / %.1e, d/dipos %.1e / %.1e, d/dfriction %.1e / %.1e; two CUDA runs %s\n",
           name, nworld, rows, fsum, mf, ef, mq, eq, mu, eu, mm, em, mi, ei, mfr, efr, same ? "bit-identical" : "DIFFERENT");
    TEST_CHECK(rows > 0 && fsum > 0, "%s: no frictional contact rows", name);
    TEST_CHECK(mq <= med_tol && mu <= med_tol, "%s: state cotangents: median world above %g", name, med_tol);
    TEST_CHECK(mm <= med_tol && mi <= med_tol && mfr <= med_tol, "%s: parameter cotangents: median world above %g",
               name, med_tol);
    TEST_CHECK(same, "%s: two CUDA runs differ", name);
  }
  simcuda_free(gc);
  free(v), free(v0), free(ctrl), free(seed), free(cu), free(out[0]), free(out[1]), free(prm[0]), free(prm[1]);
  sim_data_free(c);
  sim_data_free(g);
  sim_data_free(s0);
  sim_model_free(m);
  sim_free_mjmodel(mj);
}

int main(void) {
  if (simcuda_device_count() == 0) {
    printf("no CUDA device: skipped\n");
    return TEST_SKIP;
  }
  // worst world's error relative to the block's magnitude. grad_chain is stiff: its float32 CPU gradients
  // already differ from float64 by up to 1e-2 (sim_grad32), and CUDA vs CPU measured 1.0e-3 on the H200
  const int w256 = gpu_test_size(256, 32), w1024 = gpu_test_size(1024, 64);
  check("g1/g1.xml", w256, 0, 1e-4);
  check("assets/test/grad_chain.xml", w256, 5e-4, 1e-2);
  check("assets/test/grad_freebody.xml", w256, 0, 1e-4);
  check_rows("g1/scene_flat.xml", w1024, 1e-5, 1e-1);  // the float32 CPU reference is single-threaded
  check_rows("hopper/hopper.xml", w1024, 1e-5, 1e-1);
  check_rows("assets/test/walker_planar.xml", w1024, 1e-5, 1e-1);
  check_rows("assets/test/collision_free.xml", w256, 1e-5, 1e-1);
  check_params("g1/scene_flat.xml", w1024, 0, 1e-5);
  check_params("hopper/hopper.xml", w1024, 60, 1e-5);
  check_params("assets/test/rest_stack.xml", w256, 20, 1e-5);
  return test_report("sim_grad_cuda");
}
