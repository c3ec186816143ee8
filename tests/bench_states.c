#define _POSIX_C_SOURCE 200809L
// bench_states: the start states of `adjoint bench sim`. LAFAN1 states (skipped, 77, without the shared clips):
// the lowest collision geom on the floor by MuJoCo C's kinematics (<= 1e-9 m), ctrl = each actuator's joint
// angle, unit quaternions, every world a different frame, the same states for the same seed and others for
// another; rollout states identical for 1 and 3 threads; the states file read back.
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim_common.h"
#include "tests/test.h"
#include "tools/bench_states.h"

// lowest point of geom g along z from MuJoCo's geom frame (sphere, capsule, box)
static double bottom(const mjModel* m, const mjData* d, int g) {
  const double *p = d->geom_xpos + 3 * g, *R = d->geom_xmat + 9 * g, *s = m->geom_size + 3 * g;
  switch (m->geom_type[g]) {
    case mjGEOM_SPHERE: return p[2] - s[0];
    case mjGEOM_CAPSULE: return p[2] - fabs(R[8]) * s[1] - s[0];
    case mjGEOM_BOX: return p[2] - fabs(R[6]) * s[0] - fabs(R[7]) * s[1] - fabs(R[8]) * s[2];
    default: return p[2] - m->geom_rbound[g];
  }
}

int main(void) {
  char path[4096], err[4096], merr[1000];
  if (sim_find_asset("humanoid/humanoid.xml", path, sizeof(path))) {
    printf("bench_states: humanoid model not on the asset path: skipped\n");
    return TEST_SKIP;
  }
  mjModel* hm = mj_loadXML(path, NULL, merr, sizeof(merr));
  BenchStates a, b;
  int rc = bench_states_rollout(hm, 24, 5, 1, &a, err, sizeof(err)) || bench_states_rollout(hm, 24, 5, 3, &b, err, sizeof(err));
  TEST_CHECK(!rc, "rollout: %s", err);
  if (!rc) {
    TEST_CHECK(!memcmp(a.qpos, b.qpos, sizeof(double) * 24 * a.nq) && !memcmp(a.qvel, b.qvel, sizeof(double) * 24 * a.nv),
               "rollout states depend on the thread count");
    TEST_CHECK(memcmp(a.qpos, a.qpos + a.nq, sizeof(double) * a.nq), "rollout worlds 0 and 1 are equal");
    // the file: header, then the three arrays
    char file[] = "/tmp/adj_bench_states_XXXXXX";
    int fd = mkstemp(file);
    if (fd >= 0) close(fd);
    TEST_CHECK(!bench_states_write(&a, file, err, sizeof(err)), "write: %s", err);
    FILE* f = fopen(file, "rb");
    int n = 0, nq = 0, nv = 0, nu = 0, ver = 0;
    TEST_CHECK(f && fscanf(f, "ADJSTATES %d %d %d %d %d", &ver, &n, &nq, &nv, &nu) == 5 && fgetc(f) == '\n', "header");
    TEST_CHECK(ver == 1 && n == 24 && nq == hm->nq && nv == hm->nv && nu == hm->nu, "header %d %d %d %d %d", ver, n,
               nq, nv, nu);
    double* all = (double*)malloc(sizeof(double) * n * (nq + nv + nu));
    TEST_CHECK(f && fread(all, sizeof(double), (size_t)n * (nq + nv + nu), f) == (size_t)n * (nq + nv + nu) &&
                   fgetc(f) == EOF, "payload size");
    TEST_CHECK(!memcmp(all, a.qpos, sizeof(double) * n * nq) && !memcmp(all + n * nq, a.qvel, sizeof(double) * n * nv) &&
                   !memcmp(all + n * (nq + nv), a.ctrl, sizeof(double) * n * nu), "payload differs");
    if (f) fclose(f);
    free(all);
    remove(file);
    bench_states_free(&a);
    bench_states_free(&b);
  }
  mj_deleteModel(hm);

  char clips[4096];
  if (sim_find_asset("lafan1_g1/MANIFEST.tsv", clips, sizeof(clips)) ||
      sim_find_asset("g1/scene_flat.xml", path, sizeof(path))) {
    printf("bench_states: LAFAN1 clips not on the asset path: LAFAN1 part skipped\n");
    return test_failures ? test_report("bench_states") : TEST_SKIP;
  }
  mjModel* m = mj_loadXML(path, NULL, merr, sizeof(merr));
  mjData* d = mj_makeData(m);
  const int N = 200;
  rc = bench_states_lafan1(m, N, 3, &a, err, sizeof(err));
  TEST_CHECK(!rc, "lafan1: %s", err);
  if (rc) return test_report("bench_states");
  double worst = 0, worst_ctrl = 0, worst_norm = 0;
  int same = 0;
  for (int w = 0; w < N; w++) {
    const double* q = a.qpos + (size_t)w * m->nq;
    memcpy(d->qpos, q, sizeof(double) * m->nq);
    mj_kinematics(m, d);
    double low = INFINITY;
    for (int g = 0; g < m->ngeom; g++)
      if ((m->geom_contype[g] || m->geom_conaffinity[g]) && m->geom_bodyid[g] != 0) low = fmin(low, bottom(m, d, g));
    worst = fmax(worst, fabs(low));
    for (int u = 0; u < m->nu; u++)
      worst_ctrl = fmax(worst_ctrl, fabs(a.ctrl[(size_t)w * m->nu + u] - q[m->jnt_qposadr[m->actuator_trnid[2 * u]]]));
    worst_norm = fmax(worst_norm, fabs(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6] - 1));
    if (w && !memcmp(q + 3, q + 3 - m->nq, sizeof(double) * (m->nq - 3))) same++;
  }
  printf("LAFAN1 states: max |lowest geom z| %.2e m, max |ctrl - joint| %.1e, max |quat norm^2 - 1| %.1e\n", worst,
         worst_ctrl, worst_norm);
  TEST_CHECK(worst <= 1e-9, "lowest collision geom off the floor by %.3e m", worst);
  TEST_CHECK(worst_ctrl == 0, "ctrl differs from the reference joint angle by %g", worst_ctrl);
  TEST_CHECK(worst_norm <= 1e-14, "quaternion norm off by %g", worst_norm);
  TEST_CHECK(same == 0, "%d worlds repeat their predecessor's frame", same);
  double vmax = 0;
  for (int i = 0; i < N * m->nv; i++) vmax = fmax(vmax, fabs(a.qvel[i]));
  TEST_CHECK(vmax > 0.1 && vmax < 100, "qvel magnitude %g (central differences of moving clips)", vmax);
  rc = bench_states_lafan1(m, N, 3, &b, err, sizeof(err));
  TEST_CHECK(!rc && !memcmp(a.qpos, b.qpos, sizeof(double) * N * m->nq) &&
                 !memcmp(a.qvel, b.qvel, sizeof(double) * N * m->nv), "same seed, different states");
  bench_states_free(&b);
  rc = bench_states_lafan1(m, N, 4, &b, err, sizeof(err));
  TEST_CHECK(!rc && memcmp(a.qpos, b.qpos, sizeof(double) * N * m->nq), "another seed, the same states");
  bench_states_free(&b);
  bench_states_free(&a);
  rc = bench_states_lafan1(m, 1000000, 3, &a, err, sizeof(err));
  TEST_CHECK(rc && strstr(err, "pool"), "too many states accepted: '%s'", err);
  mj_deleteData(d);
  mj_deleteModel(m);
  return test_report("bench_states");
}
