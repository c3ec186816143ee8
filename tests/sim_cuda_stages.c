// sim_cuda_stages: the CUDA backend against the float32 CPU backend, stage by stage on identical inputs,
// for G1 and the humanoid at 4096 worlds, with constraints (contacts, limits, Newton solver) and without;
// ten full steps bitwise identical across two runs; world 0 gives the same bits whether 1, 1024 or 4096
// worlds run. ADJ_GPU_TEST_SMALL (tests/gpu_test_size.h): 64 worlds each, prefixes of 1 and 16 worlds.
// Skips (77) without a device.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/sim_cuda.h"
#include "sim/sim.h"
#include "tests/gpu_test_size.h"
#include "tests/test.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static void random_states(const SimModel* m, SimData* d) {
  for (int w = 0; w < d->nworld; w++) {
    sim_real* q = d->qpos + (size_t)w * m->nq;
    for (int i = 0; i < m->nq; i++) q[i] = (m->nkey ? m->key_qpos[i] : m->qpos0[i]) + (sim_real)(0.3 * (urand() - 0.5));
    for (int j = 0; j < m->njnt; j++) {
      int t = m->jnt_type[j];
      if (t != SIM_JNT_FREE && t != SIM_JNT_BALL) continue;
      sim_real* qq = q + m->jnt_qposadr[j] + (t == SIM_JNT_FREE ? 3 : 0);
      double n = sqrt((double)(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]));
      for (int k = 0; k < 4; k++) qq[k] = (sim_real)(qq[k] / n);
    }
    for (int i = 0; i < m->nv; i++) d->qvel[(size_t)w * m->nv + i] = (sim_real)(2 * (urand() - 0.5));
    for (int i = 0; i < m->nu; i++) {
      const sim_real* r = m->actuator_ctrlrange + 2 * i;
      d->ctrl[(size_t)w * m->nu + i] = r[0] + (r[1] - r[0]) * (sim_real)urand();
    }
  }
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// per-world relative error of every float field; NaN must match NaN (unwritten in both)
static void compare(const char* model, const char* stage, const SimModel* m, const SimData* c, const SimData* g,
                    double* errs, double* med_out, double* max_out) {
  int n = 0;
#define X(type, name, count, width)                                                     \
  if (sizeof(type) == sizeof(float) && strcmp(#type, "int")) {                          \
    size_t per = (size_t)m->count * (width);                                            \
    for (int w = 0; w < c->nworld && per; w++) {                                        \
      const float* a = (const float*)(const void*)c->name + w * per;                    \
      const float* b = (const float*)(const void*)g->name + w * per;                    \
      double num = 0, den = 0;                                                          \
      int nanmismatch = 0;                                                              \
      for (size_t k = 0; k < per; k++) {                                                \
        if (a[k] != a[k] || b[k] != b[k]) {                                             \
          nanmismatch |= (a[k] != a[k]) != (b[k] != b[k]);                              \
          continue;                                                                     \
        }                                                                               \
        num += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);                           \
        den += (double)a[k] * a[k];                                                     \
      }                                                                                 \
      double e = nanmismatch ? INFINITY : sqrt(num) / fmax(sqrt(den), 1e-12);           \
      if (e > 1e-4) fprintf(stderr, "%s %s: world %d field %s rel err %.3e\n", model, stage, w, #name, e); \
      errs[n++] = e;                                                                    \
    }                                                                                   \
  }
  SIM_DATA_FIELDS
#undef X
  qsort(errs, (size_t)n, sizeof(double), cmp_double);
  *med_out = errs[n / 2];
  *max_out = errs[n - 1];
}

static void test_model(const char* model, int nworld, int constraints) {
  char err[4096];
  void* mjv = NULL;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  opt.disable_add = constraints ? 0 : mjDSBL_CONSTRAINT;
  if (sim_load_mjcf(model, &opt, &mjv, err, sizeof(err))) {
    TEST_CHECK(0, "%s", err);
    return;
  }
  char label[256];
  snprintf(label, sizeof(label), "%s%s", model, constraints ? "" : " (no constraint)");
  model = label;
  SimModel* m = NULL;
  SimData *c = NULL, *g = NULL, *start = NULL;
  SimCuda* gpu = NULL;
  // contact capacity: G1 never showed more than ~61 contacts; 128 keeps 4096 worlds' rows small
  if (sim_model_import_caps(mjv, 128, 0, &m, err, sizeof(err)) || sim_data_create(m, nworld, &c) ||
      sim_data_create(m, nworld, &g) || sim_data_create(m, nworld, &start) || simcuda_create(m, nworld, &gpu)) {
    TEST_CHECK(0, "%s: setup failed: %s %s", model, err, simcuda_last_error());
    return;
  }
  simcuda_set_staged(gpu, 0);  // the fused kernels first; the staged modes are compared with them below
  random_states(m, c);
  sim_poison(m, c);
  memcpy(start->buffer, c->buffer, c->nbuffer);
  size_t nerr = c->nbuffer / sizeof(float) + 1;
  double* errs = (double*)malloc(sizeof(double) * nerr);
  const char* names[] = {"kinematics", "compos", "tendon", "crb", "factor", "collision", "velocity", "passive",
                         "rne", "actuation", "acceleration", "constraint", "integrate"};
  for (int s = 0; s < SIM_NSTAGE; s++) {
    int rc = simcuda_upload(gpu, c);
    sim_run_stage(m, c, s);
    if (!rc) rc = simcuda_stage(gpu, s);
    if (!rc) rc = simcuda_download(gpu, g);
    TEST_CHECK(rc == 0, "%s stage %s: CUDA error %s", model, names[s], simcuda_last_error());
    double med, mx;
    compare(model, names[s], m, c, g, errs, &med, &mx);
    printf("%-24s stage %-13s CUDA vs CPU float32: median %.3e  max %.3e\n", model, names[s], med, mx);
    TEST_CHECK(med <= 1e-6 && mx <= 1e-4, "%s stage %s: median %.3e max %.3e", model, names[s], med, mx);
  }
  // full steps: bitwise identical across two runs, and world 0 alone gives the same bits
  SimData* g2 = NULL;
  sim_data_create(m, nworld, &g2);
  int rc = 0;
  for (int run = 0; run < 2 && !rc; run++) {
    rc |= simcuda_upload(gpu, start);
    for (int k = 0; k < 10 && !rc; k++) rc |= simcuda_step(gpu);
    rc |= simcuda_download(gpu, run ? g2 : g);
  }
  TEST_CHECK(rc == 0, "%s: CUDA step error %s", model, simcuda_last_error());
  TEST_CHECK(memcmp(g->qpos, g2->qpos, sizeof(float) * (size_t)nworld * m->nq) == 0 &&
                 memcmp(g->qvel, g2->qvel, sizeof(float) * (size_t)nworld * m->nv) == 0,
             "%s: two runs of 10 steps differ", model);
  // the staged launches (one kernel per group of stages; 2: the solver's scratch in shared memory) give the
  // fused kernel's bits; RK4 stays fused
  for (int mode = 1; mode <= 2; mode++) {
    if (!simcuda_set_staged(gpu, mode)) {
      TEST_CHECK(m->integrator == SIM_INT_RK4, "%s: staged launch refused", model);
      break;
    }
    rc = simcuda_upload(gpu, start);
    for (int k = 0; k < 10 && !rc; k++) rc |= simcuda_step(gpu);
    if (!rc) rc = simcuda_download(gpu, g2);
    simcuda_set_staged(gpu, 0);
    TEST_CHECK(rc == 0 && memcmp(g->qpos, g2->qpos, sizeof(float) * (size_t)nworld * m->nq) == 0 &&
                   memcmp(g->qvel, g2->qvel, sizeof(float) * (size_t)nworld * m->nv) == 0 &&
                   memcmp(g->nan_count, g2->nan_count, sizeof(int) * (size_t)nworld) == 0,
               "%s: 10 steps differ between the fused and the staged launch (mode %d)", model, mode);
  }
  int sizes[2] = {1, gpu_test_size(1024, nworld / 4)};
  for (int k = 0; k < 2; k++) {
    int n = sizes[k] < nworld ? sizes[k] : nworld;
    SimData *part = NULL, *part_out = NULL;
    SimCuda* gp = NULL;
    sim_data_create(m, n, &part);
    sim_data_create(m, n, &part_out);
    rc = simcuda_create(m, n, &gp);
#define X(type, name, count, width) memcpy(part->name, start->name, sizeof(type) * (size_t)n * m->count * (width));
    SIM_DATA_FIELDS
#undef X
    if (!rc) rc = simcuda_upload(gp, part);
    for (int s = 0; s < 10 && !rc; s++) rc |= simcuda_step(gp);
    if (!rc) rc = simcuda_download(gp, part_out);
    TEST_CHECK(rc == 0 && memcmp(part_out->qpos, g->qpos, sizeof(float) * (size_t)n * m->nq) == 0 &&
                   memcmp(part_out->qvel, g->qvel, sizeof(float) * (size_t)n * m->nv) == 0,
               "%s: the first %d worlds differ between nworld %d and %d", model, n, n, nworld);
    simcuda_free(gp);
    sim_data_free(part);
    sim_data_free(part_out);
  }
  // and the CPU float32 engine after 10 steps stays close to the GPU (rounding only)
  memcpy(c->buffer, start->buffer, c->nbuffer);
  for (int k = 0; k < 10; k++) sim_step(m, c);
  double med, mx;
  compare(model, "10 steps", m, c, g, errs, &med, &mx);
  printf("%-24s 10 full steps   CUDA vs CPU float32: median %.3e  max %.3e\n", model, med, mx);
  simcuda_free(gpu);
  sim_data_free(g2);
  sim_data_free(start);
  sim_data_free(g);
  sim_data_free(c);
  sim_model_free(m);
  sim_free_mjmodel(mjv);
  free(errs);
}

int main(void) {
  if (simcuda_device_count() == 0) {
    printf("sim_cuda_stages: no CUDA device, skipped\n");
    return TEST_SKIP;
  }
  int many = gpu_test_size(4096, 64), some = gpu_test_size(1024, 64);
  for (int c = 0; c < 2; c++) {
    test_model("g1/scene_flat.xml", many, c);
    test_model("humanoid/humanoid.xml", many, c);
  }
  test_model("test/chain_free.xml", some, 0);  // RK4, tendon, free base
  test_model("test/collision_free.xml", some, 1);  // free bodies: several islands, box-box
  return test_report("sim_cuda_stages");
}
