// motion_clips: the 40 shared LAFAN1 clips (skipped, 77, when absent): every clip read in manifest order with
// its frame count checked, unit root quaternions, and one clip resampled to 50 Hz whose velocities equal
// MuJoCo C's mj_differentiatePos on the G1 model (float64, <= 1e-12).
#include <mujoco/mujoco.h>
#include <stdlib.h>
#include <string.h>

#include "motion/motion.h"
#include "sim/sim_common.h"
#include "tests/test.h"

int main(void) {
  char manifest[4096], model[4096], err[4096];
  if (sim_find_asset("lafan1_g1/MANIFEST.tsv", manifest, sizeof(manifest)) ||
      sim_find_asset("g1/scene_flat.xml", model, sizeof(model))) {
    printf("motion_clips: LAFAN1 clips or G1 model not found on the asset path: skipped\n");
    return TEST_SKIP;
  }
  *strrchr(manifest, '/') = '\0';
  MotionSet set;
  int rc = motion_read_dir(manifest, MOTION_G1_NJOINT, MOTION_LAFAN1_FPS, &set, err, sizeof(err));
  TEST_CHECK(rc == 0, "read: %s", err);
  if (rc) return test_report("motion_clips");
  long total = 0;
  double worst = 0;
  for (int i = 0; i < set.nclip; i++) {
    total += set.clip[i].nframe;
    for (int k = 0; k < set.clip[i].nframe; k++) {
      const double* q = set.clip[i].qpos + (size_t)k * set.clip[i].nq + 3;
      worst = fmax(worst, fabs(sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) - 1));
    }
  }
  // the shared README's totals
  TEST_CHECK(set.nclip == 40 && total == 264705, "%d clips, %ld frames", set.nclip, total);
  TEST_CHECK(!strcmp(set.clip[0].name, "dance1_subject1.csv"), "first clip %s", set.clip[0].name);
  TEST_CHECK(worst < 1e-15 * 4, "root quaternion norm off by %g", worst);
  printf("%d clips, %ld frames, max |quat norm - 1| %.2g\n", set.nclip, total, worst);

  char merr[1000] = "";
  mjModel* m = mj_loadXML(model, NULL, merr, sizeof(merr));
  TEST_CHECK(m && m->nq == 7 + MOTION_G1_NJOINT, "G1 model: %s", merr);
  MotionClip r;
  if (m && !motion_resample(&set.clip[0], 50, &r, err, sizeof(err))) {
    int nv = m->nv;
    double* v = (double*)malloc(sizeof(double) * r.nframe * nv);
    double* ref = (double*)malloc(sizeof(double) * r.nframe * nv);
    motion_qvel(&r, v);
    for (int k = 0; k < r.nframe; k++) {
      int a = k ? k - 1 : 0, b = k < r.nframe - 1 ? k + 1 : r.nframe - 1;
      mj_differentiatePos(m, ref + (size_t)k * nv, (b - a) / 50.0, r.qpos + (size_t)a * m->nq,
                          r.qpos + (size_t)b * m->nq);
    }
    TEST_CHECK(r.nframe == 6574, "%s at 50 Hz: %d frames", r.name, r.nframe);  // (3945 - 1) / 30 s
    test_close("G1 qvel vs mj_differentiatePos", v, ref, r.nframe * nv, 1e-12, 1e-12);
    free(v);
    free(ref);
    motion_clip_free(&r);
  }
  if (m) mj_deleteModel(m);
  motion_set_free(&set);
  return test_report("motion_clips");
}
