// sim_nan_reset: a world whose state is non-finite is reset (to qpos0, zero velocity) and counted; the
// other worlds step exactly as they would alone.
#include <string.h>

#include "sim/sim.h"
#include "tests/test.h"

int main(void) {
  char err[4096];
  void* mj = NULL;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = SIM_DSBL_CONSTRAINT;
  if (sim_load_mjcf("hopper/hopper.xml", &opt, &mj, err, sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  SimModel* m = NULL;
  SimData *d = NULL, *one = NULL;
  TEST_CHECK(!sim_model_import(mj, &m, err, sizeof(err)) && !sim_data_create(m, 8, &d) && !sim_data_create(m, 1, &one),
             "setup: %s", err);
  for (int w = 0; w < 8; w++)
    for (int i = 0; i < m->nv; i++) d->qvel[w * m->nv + i] = (sim_real)(0.1 * (w + 1) * (i % 3 - 1));
  memcpy(one->qvel, d->qvel + 2 * m->nv, sizeof(sim_real) * m->nv);  // world 2, alone
  d->qpos[3 * m->nq + 1] = (sim_real)NAN;                           // world 3 turns bad
  d->qvel[5 * m->nv + 0] = (sim_real)1e11;                           // world 5: beyond MuJoCo's mjMAXVAL
  sim_step(m, d);
  sim_step(m, one);
  TEST_CHECK(d->nan_count[3] == 1 && d->nan_count[5] == 1, "resets counted: w3 %d w5 %d", d->nan_count[3],
             d->nan_count[5]);
  int others = 0;
  for (int w = 0; w < 8; w++)
    if (w != 3 && w != 5) others += d->nan_count[w];
  TEST_CHECK(others == 0, "healthy worlds counted %d resets", others);
  // the reset world restarted from qpos0 at rest: after one step it equals a fresh world's first step
  SimData* fresh = NULL;
  sim_data_create(m, 1, &fresh);
  sim_step(m, fresh);
  TEST_CHECK(memcmp(d->qpos + 3 * m->nq, fresh->qpos, sizeof(sim_real) * m->nq) == 0 &&
                 memcmp(d->qvel + 3 * m->nv, fresh->qvel, sizeof(sim_real) * m->nv) == 0,
             "reset world differs from a fresh world");
  for (int i = 0; i < m->nq; i++) TEST_CHECK(d->qpos[3 * m->nq + i] == d->qpos[3 * m->nq + i], "NaN left in qpos");
  TEST_CHECK(memcmp(d->qpos + 2 * m->nq, one->qpos, sizeof(sim_real) * m->nq) == 0 &&
                 memcmp(d->qvel + 2 * m->nv, one->qvel, sizeof(sim_real) * m->nv) == 0,
             "world 2 differs from the same world stepped alone");
  sim_data_free(fresh);
  sim_data_free(one);
  sim_data_free(d);
  sim_model_free(m);
  sim_free_mjmodel(mj);
  return test_report("sim_nan_reset");
}
