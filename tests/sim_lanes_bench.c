// sim_lanes_bench: the warp forms (shuffles, ballots, lane sums: tests/sim_lanes.c, threads as lanes) on the
// G1 states of `adjoint bench sim --states lafan1`, in float32, the GPU's arithmetic. Each state: one control
// step (4 substeps), then a recorded one and its backward with a fixed cotangent, by 1, 5 and 32 lanes; the
// state, warm start and cotangents must be the same bits. The other lanes checks use random states (one a
// model, or 12 in sim_constraint, float64); these are the states the GPU benchmark and training run, with the
// ground contacts of a walking or falling robot. Skipped (77) without the shared LAFAN1 clips.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tests/test.h"
#include "tools/bench_states.h"

// tests/sim_lanes.c: the control step (or its backward) of world w run by nlane threads
void sim_lanes_run_control(const void* model, void* data, int w, int nsub, int record, int backward, int nlane);

#define NSTATE 12
#define NSUB 4

// world w of d holds the same bits as world 0 in n values of field f
#define SAME0(d, w, f, n) (!memcmp((d)->f, (d)->f + (size_t)(w) * (n), sizeof(*(d)->f) * (size_t)(n)))

int main(void) {
  char path[1024], err[4096];
  if (sim_find_asset("g1/scene_flat.xml", path, sizeof(path)) ||
      sim_find_asset("lafan1_g1/MANIFEST.tsv", err, sizeof(err))) {
    printf("sim_lanes_bench: G1 model or LAFAN1 clips not on the asset path: skipped\n");
    return TEST_SKIP;
  }
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  void* mj = NULL;
  if (sim_load_mjcf(path, &opt, &mj, err, sizeof(err))) {
    fprintf(stderr, "sim_lanes_bench: %s\n", err);
    return 1;
  }
  BenchStates st;
  SimModel* m = NULL;
  SimData* d = NULL;
  int rc = bench_states_lafan1(mj, NSTATE, 1, &st, err, sizeof(err));
  TEST_CHECK(!rc, "states: %s", err);
  if (!rc) {
    rc = sim_model_import_caps(mj, 0, 0, &m, err, sizeof(err));
    TEST_CHECK(!rc, "import: %s", err);
  }
  if (!rc) {
    rc = sim_adjoint_enable(m, NSUB) || sim_data_create(m, 3, &d);
    TEST_CHECK(!rc, "adjoint enable or data create failed");
  }
  if (rc) return test_report("sim_lanes_bench");
  const int nq = m->nq, nv = m->nv, nu = m->nu, lanes[3] = {1, 5, 32};
  int ndiff = 0, nrows = 0, nefc = 0, niter = 0;
  for (int s = 0; s < NSTATE; s++) {
    sim_tape_clear(m, d);
    for (int w = 0; w < 3; w++) {
      for (int i = 0; i < nq; i++) d->qpos[w * nq + i] = (sim_real)st.qpos[(size_t)s * nq + i];
      for (int i = 0; i < nv; i++) d->qvel[w * nv + i] = (sim_real)st.qvel[(size_t)s * nv + i];
      for (int i = 0; i < nv; i++) d->qacc_warmstart[w * nv + i] = 0;
      for (int i = 0; i < nu; i++) d->ctrl[w * nu + i] = (sim_real)st.ctrl[(size_t)s * nu + i];
      sim_lanes_run_control(m, d, w, NSUB, 0, 0, lanes[w]);  // contacts and warm start of a running world
      sim_lanes_run_control(m, d, w, NSUB, 1, 0, lanes[w]);
      for (int i = 0; i < nv; i++) {
        d->adj_qpos[w * nv + i] = (sim_real)(0.3 - 0.1 * (i % 5));
        d->adj_qvel[w * nv + i] = (sim_real)(0.05 * (i % 9) - 0.2);
      }
      sim_lanes_run_control(m, d, w, NSUB, 0, 1, lanes[w]);
    }
    nrows += d->nefc[0] > 0, nefc += d->nefc[0], niter += d->solver_niter[0];
    for (int w = 1; w < 3; w++) {
      int fwd = SAME0(d, w, qpos, nq) && SAME0(d, w, qvel, nv) && SAME0(d, w, qacc_warmstart, nv);
      int bwd = SAME0(d, w, adj_qpos, nv) && SAME0(d, w, adj_qvel, nv) && SAME0(d, w, adj_ctrl, nu);
      TEST_CHECK(fwd, "state %d: %d lanes: forward differs from one lane", s, lanes[w]);
      TEST_CHECK(bwd, "state %d: %d lanes: backward differs from one lane", s, lanes[w]);
      ndiff += !(fwd && bwd);
    }
  }
  // the states must exercise the solver: ground contacts in most, Newton iterations
  TEST_CHECK(nrows >= NSTATE / 2, "only %d of %d states end with constraint rows", nrows, NSTATE);
  TEST_CHECK(niter > 0, "no Newton iterations");
  printf("sim_lanes_bench: %d G1 LAFAN1 states (%s), float32, lanes 1/5/32: %d differ; %d end with rows (mean nefc "
         "%.1f, Newton iterations %.1f in the last substep)\n",
         NSTATE, st.source, ndiff, nrows, (double)nefc / NSTATE, (double)niter / NSTATE);
  sim_data_free(d);
  sim_model_free(m);
  bench_states_free(&st);
  sim_free_mjmodel(mj);
  return test_report("sim_lanes_bench");
}
