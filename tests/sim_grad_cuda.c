// sim_grad_cuda: the CUDA backward (one warp per world) against the float32 CPU backward, same source: a
// recorded rollout of 4 control steps x 4 substeps and its backward, on G1 (implicitfast) and the gradient
// test models (constraints disabled), 256 worlds. Skips (77) without a device.
#include <mujoco/mujoco.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/sim_cuda.h"
#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tests/test.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

// relative error of a block (per world, against the block's max magnitude)
static double block_err(const float* a, const float* b, int n, int nworld) {
  double worst = 0;
  for (int w = 0; w < nworld; w++) {
    double scale = 1e-30, diff = 0;
    for (int i = 0; i < n; i++) {
      scale = fmax(scale, fabs((double)a[w * n + i]));
      double e = fabs((double)a[w * n + i] - (double)b[w * n + i]);
      diff = (e == e) ? fmax(diff, e) : INFINITY;
    }
    worst = fmax(worst, diff / scale);
  }
  return worst;
}

// timestep > 0 overrides the model's (grad_chain's light, stiff finger diverges in float32 at its own 4 ms)
static void check(const char* name, int nworld, double timestep, double tol) {
  char path[1024], err[1024];
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = SIM_DSBL_CONSTRAINT;
  opt.timestep = timestep;
  void* mj = NULL;
  if (sim_find_asset(name, path, sizeof(path)) || sim_load_mjcf(path, &opt, &mj, err, sizeof(err))) {
    TEST_CHECK(0, "load %s", name);
    return;
  }
  SimModel* m = NULL;
  if (sim_model_import(mj, &m, err, sizeof(err))) {
    TEST_CHECK(0, "import %s: %s", name, err);
    sim_free_mjmodel(mj);
    return;
  }
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

int main(void) {
  if (simcuda_device_count() == 0) {
    printf("no CUDA device: skipped\n");
    return TEST_SKIP;
  }
  // worst world's error relative to the block's magnitude. grad_chain is stiff: its float32 CPU gradients
  // already differ from float64 by up to 1e-2 (sim_grad32), and CUDA vs CPU measured 1.0e-3 on the H200
  check("g1/g1.xml", 256, 0, 1e-4);
  check("assets/test/grad_chain.xml", 256, 5e-4, 1e-2);
  check("assets/test/grad_freebody.xml", 256, 0, 1e-4);
  return test_report("sim_grad_cuda");
}
