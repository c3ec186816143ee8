// sim_collision_cuda.c: the collision stage on the CUDA backend (32 lanes per world striding over the
// candidate pairs, then the in-order compaction) against the float32 CPU backend on identical kinematics:
// identical contact lists (count, geoms, pair, witness, dim, exclude) and values within float32 rounding,
// for our free-body scene and G1 at many worlds; capacity overflow identical. ADJ_GPU_TEST_SMALL
// (tests/gpu_test_size.h): 128, 64 and 128 worlds. Skips (77) without a device.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/sim_cuda.h"
#include "sim/sim.h"
#include "tests/gpu_test_size.h"
#include "tests/test.h"

static unsigned long long rng_state = 777;
static double urand(void) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

// free bodies scattered in a small volume (some axis-aligned), hinge/slide joints perturbed from the key
static void random_states(const SimModel* m, SimData* d, int scatter) {
  for (int w = 0; w < d->nworld; w++) {
    sim_real* q = d->qpos + (size_t)w * m->nq;
    for (int i = 0; i < m->nq; i++) q[i] = m->nkey ? m->key_qpos[i] : m->qpos0[i];
    for (int j = 0; j < m->njnt; j++) {
      sim_real* qq = q + m->jnt_qposadr[j];
      if (m->jnt_type[j] == SIM_JNT_FREE) {
        if (scatter) {
          qq[0] = (sim_real)(0.35 * (2 * urand() - 1));
          qq[1] = (sim_real)(0.35 * (2 * urand() - 1));
          qq[2] = (sim_real)(0.4 * urand() - 0.05);
        } else {
          qq[2] = (sim_real)(qq[2] * (0.2 + urand()));
        }
        double r[4] = {1, 0, 0, 0}, n = 0;
        if (scatter || urand() < 0.5)
          for (int k = 0; k < 4; k++) r[k] = 2 * urand() - 1;
        if (urand() < 0.2) r[0] = 1, r[1] = r[2] = r[3] = 0;
        for (int k = 0; k < 4; k++) n += r[k] * r[k];
        for (int k = 0; k < 4; k++) qq[3 + k] = (sim_real)(r[k] / sqrt(n));
      } else if (m->jnt_type[j] != SIM_JNT_BALL) {
        qq[0] += (sim_real)(1.2 * (urand() - 0.5));
      }
    }
  }
}

static double rel(double a, double b) { return fabs(a - b) / (1e-6 + fabs(b)); }

static void test_model(const char* file, int nworld, int scatter, int nconmax_override) {
  char err[4096];
  void* mjv = NULL;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = mjDSBL_CONSTRAINT;
  if (sim_load_mjcf(file, &opt, &mjv, err, sizeof(err))) {
    TEST_CHECK(0, "%s", err);
    return;
  }
  SimModel* m = NULL;
  SimData *c = NULL, *g = NULL;
  SimCuda* gpu = NULL;
  int rc = sim_model_import_caps(mjv, nconmax_override, 0, &m, err, sizeof(err));
  if (rc) {
    TEST_CHECK(0, "%s: %s", file, err);
    return;
  }
  m->disableflags &= ~SIM_DSBL_CONSTRAINT;  // collision runs (mj_collision skips when constraints are off)
  if (sim_data_create(m, nworld, &c) || sim_data_create(m, nworld, &g) || simcuda_create(m, nworld, &gpu)) {
    TEST_CHECK(0, "%s: setup failed: %s", file, simcuda_last_error());
    return;
  }
  random_states(m, c, scatter);
  sim_poison(m, c);
  sim_run_stage(m, c, SIM_STAGE_KINEMATICS);
  rc = simcuda_upload(gpu, c);  // identical kinematics on both sides
  sim_run_stage(m, c, SIM_STAGE_COLLISION);
  if (!rc) rc = simcuda_stage(gpu, SIM_STAGE_COLLISION);
  if (!rc) rc = simcuda_download(gpu, g);
  TEST_CHECK(rc == 0, "%s: CUDA error %s", file, simcuda_last_error());
  long ncon = 0, nbits = 0, nover = 0;
  int badlist = 0;
  double worst = 0;
  for (int w = 0; w < nworld && !rc; w++) {
    SimWorld a, b;
    sim_world(m, c, w, &a);
    sim_world(m, g, w, &b);
    nover += a.ncon_overflow[0];
    if (a.ncon[0] != b.ncon[0] || a.ncon_overflow[0] != b.ncon_overflow[0]) {
      if (badlist++ < 3) fprintf(stderr, "%s world %d: ncon CPU %d GPU %d\n", file, w, a.ncon[0], b.ncon[0]);
      continue;
    }
    for (int i = 0; i < a.ncon[0]; i++) {
      int same = a.contact_geom[2 * i] == b.contact_geom[2 * i] && a.contact_geom[2 * i + 1] == b.contact_geom[2 * i + 1] &&
                 a.contact_pair[i] == b.contact_pair[i] && a.contact_witness[i] == b.contact_witness[i] &&
                 a.contact_dim[i] == b.contact_dim[i] && a.contact_exclude[i] == b.contact_exclude[i];
      if (!same) {
        if (badlist++ < 3) fprintf(stderr, "%s world %d contact %d: discrete fields differ\n", file, w, i);
        break;
      }
      double e = rel(b.contact_dist[i], a.contact_dist[i]);
      for (int k = 0; k < 3; k++) e = fmax(e, rel(b.contact_pos[3 * i + k], a.contact_pos[3 * i + k]));
      for (int k = 0; k < 9; k++) e = fmax(e, rel(b.contact_frame[9 * i + k], a.contact_frame[9 * i + k]));
      for (int k = 0; k < 5; k++) e = fmax(e, rel(b.contact_friction[5 * i + k], a.contact_friction[5 * i + k]));
      for (int k = 0; k < 5; k++) e = fmax(e, rel(b.contact_solimp[5 * i + k], a.contact_solimp[5 * i + k]));
      worst = fmax(worst, e);
      nbits += e == 0;
      ncon++;
    }
  }
  printf("%-24s %5d worlds (nconmax %d): %ld contacts, %ld bitwise equal, max rel err %.2e, %d lists differ, "
         "overflow %ld\n", file, nworld, m->nconmax, ncon, nbits, worst, badlist, nover);
  TEST_CHECK(badlist == 0, "%s: %d worlds with different contact lists on the GPU", file, badlist);
  TEST_CHECK(worst <= 1e-5, "%s: GPU contact values off by %.3e", file, worst);
  TEST_CHECK(ncon > nworld, "%s: too few contacts (%ld) to be a test", file, ncon);
  if (nconmax_override) TEST_CHECK(nover > 0, "%s: override %d did not overflow", file, nconmax_override);
  simcuda_free(gpu);
  sim_data_free(g);
  sim_data_free(c);
  sim_model_free(m);
  sim_free_mjmodel(mjv);
}

int main(void) {
  if (simcuda_device_count() == 0) {
    printf("sim_collision_cuda: no CUDA device, skipped\n");
    return TEST_SKIP;
  }
  test_model("test/collision_free.xml", gpu_test_size(2048, 128), 1, 0);
  test_model("test/collision_free.xml", gpu_test_size(256, 64), 1, 6);  // capacity overflow: later pairs dropped
  test_model("g1/scene_flat.xml", gpu_test_size(4096, 128), 0, 0);
  return test_report("sim_collision_cuda");
}
