// motion_lib: the motion library built from two shared LAFAN1 clips (skipped, 77, when absent) plus two short
// clips cut from them (two frames, one frame): body world poses equal MuJoCo C's mj_kinematics on the same
// qpos (float64, <= 1e-9; quaternions up to sign), qvel equals mj_differentiatePos, body velocities equal
// differences computed here (MuJoCo's quaternion routines) inside each clip, one-sided at the clip ends, the
// root's world angular velocity equals its body-frame qvel rotated by the earlier frame's orientation.
#include <mujoco/mujoco.h>
#include <stdlib.h>
#include <string.h>

#include "motion/motion_lib.h"
#include "sim/sim_common.h"
#include "tests/test.h"

static const char* kClips[2] = {"lafan1_g1/fallAndGetUp3_subject1.csv.gz", "lafan1_g1/walk4_subject1.csv.gz"};

// max |a - b| over n values
static double max_diff(const double* a, const double* b, int n) {
  double e = 0;
  for (int i = 0; i < n; i++) e = fmax(e, fabs(a[i] - b[i]));
  return e;
}

int main(void) {
  char model[4096], path[4096], err[4096];
  if (sim_find_asset("g1/scene_flat.xml", model, sizeof(model)) ||
      sim_find_asset(kClips[0], path, sizeof(path))) {
    printf("motion_lib: LAFAN1 clips or G1 model not found on the asset path: skipped\n");
    return TEST_SKIP;
  }
  MotionSet set = {4, (MotionClip*)calloc(4, sizeof(MotionClip))};
  for (int c = 0; c < 2; c++) {
    int rc = sim_find_asset(kClips[c], path, sizeof(path));
    if (!rc) rc = motion_read_clip(path, MOTION_G1_NJOINT, MOTION_LAFAN1_FPS, &set.clip[c], err, sizeof(err));
    TEST_CHECK(rc == 0, "%s: %s", kClips[c], err);
    if (rc) return test_report("motion_lib");
  }
  // a two-frame clip (30 Hz: 0.033 s -> 50 Hz frames at 0 and 0.02 s) and a one-frame clip, cut from clip 0
  const int nq = set.clip[0].nq;
  for (int c = 2; c < 4; c++) {
    MotionClip* s = &set.clip[c];
    snprintf(s->name, sizeof(s->name), "cut%d", c);
    s->nframe = c == 2 ? 2 : 1, s->nq = nq, s->fps = MOTION_LAFAN1_FPS;
    s->qpos = (double*)malloc(sizeof(double) * s->nframe * nq);
    memcpy(s->qpos, set.clip[0].qpos + 100 * nq, sizeof(double) * s->nframe * nq);
  }
  MotionLib lib;
  int rc = motion_lib_build(&set, "g1/scene_flat.xml", 50, &lib, err, sizeof(err));
  TEST_CHECK(rc == 0, "build: %s", err);
  if (rc) return test_report("motion_lib");

  char merr[1000] = "";
  mjModel* m = mj_loadXML(model, NULL, merr, sizeof(merr));
  TEST_CHECK(m != NULL, "G1 model: %s", merr);
  if (!m) return test_report("motion_lib");
  mjData* d = mj_makeData(m);
  const int nv = m->nv, nb = lib.nbody;

  // sizes, names, boundaries: 50 Hz frames k / 50 within (n - 1) / 30 s
  TEST_CHECK(lib.nclip == 4 && lib.nq == m->nq && lib.nv == nv && lib.njoint == 29 && nb == m->nbody - 1,
             "sizes: %d clips nq %d nv %d njoint %d nbody %d", lib.nclip, lib.nq, lib.nv, lib.njoint, nb);
  int start = 0;
  for (int c = 0; c < 4; c++) {
    int n = set.clip[c].nframe, want = (int)floor((n - 1) * 50.0 / 30.0 + 1e-9) + 1;
    TEST_CHECK(lib.clip_start[c] == start && lib.clip_len[c] == want, "clip %d: start %d len %d, want %d %d", c,
               lib.clip_start[c], lib.clip_len[c], start, want);
    TEST_CHECK(!strcmp(lib.clip_name[c], set.clip[c].name), "clip %d named %s", c, lib.clip_name[c]);
    start += want;
  }
  TEST_CHECK(lib.nframe == start && lib.clip_len[2] == 2 && lib.clip_len[3] == 1, "%d frames", lib.nframe);
  for (int b = 0; b < nb; b++)
    TEST_CHECK(!strcmp(lib.body_name[b], mj_id2name(m, mjOBJ_BODY, b + 1)), "body %d %s", b, lib.body_name[b]);
  for (int j = 0; j < lib.njoint; j++)
    TEST_CHECK(!strcmp(lib.joint_name[j], mj_id2name(m, mjOBJ_JOINT, j + 1)), "joint %d %s", j, lib.joint_name[j]);
  TEST_CHECK(motion_lib_body(&lib, "torso_link") == mj_name2id(m, mjOBJ_BODY, "torso_link") - 1 &&
                 motion_lib_body(&lib, "nope") == -1 &&
                 motion_lib_joint(&lib, "left_knee_joint") == mj_name2id(m, mjOBJ_JOINT, "left_knee_joint") - 1,
             "name look-up");
  // 50 Hz frame 5i (0.1 i s) is 30 Hz frame 3i: those rows are the clip's own
  double src = 0;
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < lib.clip_len[c]; k += 5)
      src = fmax(src, max_diff(lib.qpos + (size_t)(lib.clip_start[c] + k) * nq, set.clip[c].qpos + (size_t)(k / 5 * 3) * nq, nq));
  TEST_CHECK(src <= 1e-12, "source frames off by %g", src);

  // body poses vs mj_kinematics; joint_pos / joint_vel are qpos[7:], qvel[6:]
  double epos = 0, equat = 0, ejoint = 0;
  for (int f = 0; f < lib.nframe; f++) {
    memcpy(d->qpos, lib.qpos + (size_t)f * nq, sizeof(double) * nq);
    mj_kinematics(m, d);
    for (int b = 0; b < nb; b++) {
      const double* q = lib.body_quat_w + 4 * ((size_t)f * nb + b);
      const double* r = d->xquat + 4 * (b + 1);
      double neg[4] = {-r[0], -r[1], -r[2], -r[3]};
      equat = fmax(equat, fmin(max_diff(q, r, 4), max_diff(q, neg, 4)));
      epos = fmax(epos, max_diff(lib.body_pos_w + 3 * ((size_t)f * nb + b), d->xpos + 3 * (b + 1), 3));
    }
    ejoint = fmax(ejoint, max_diff(lib.joint_pos + (size_t)f * 29, lib.qpos + (size_t)f * nq + 7, 29));
    ejoint = fmax(ejoint, max_diff(lib.joint_vel + (size_t)f * 29, lib.qvel + (size_t)f * nv + 6, 29));
  }
  TEST_CHECK(epos <= 1e-9 && equat <= 1e-9, "body poses vs mj_kinematics: pos %g quat %g", epos, equat);
  TEST_CHECK(ejoint == 0, "joint_pos/vel differ from qpos/qvel by %g", ejoint);
  printf("%d frames of %d clips: body poses vs mj_kinematics max |d| pos %.3g quat %.3g\n", lib.nframe, lib.nclip,
         epos, equat);

  // velocities, per clip: neighbours inside the clip only
  double eqvel = 0, elin = 0, eang = 0, eroot = 0, ends = 0;
  double* ref = (double*)malloc(sizeof(double) * nv);
  for (int c = 0; c < lib.nclip; c++) {
    const int s = lib.clip_start[c], n = lib.clip_len[c];
    for (int k = 0; k < n; k++) {
      int a = k > 0 ? k - 1 : 0, b = k < n - 1 ? k + 1 : n - 1, f = s + k;
      double h = (b - a) / 50.0;
      const double* qa = lib.qpos + (size_t)(s + a) * nq;
      if (b > a) {
        mj_differentiatePos(m, ref, h, qa, lib.qpos + (size_t)(s + b) * nq);
      } else {
        memset(ref, 0, sizeof(double) * nv);
      }
      eqvel = fmax(eqvel, max_diff(lib.qvel + (size_t)f * nv, ref, nv));
      for (int i = 0; i < nb; i++) {
        const double* pa = lib.body_pos_w + 3 * ((size_t)(s + a) * nb + i);
        const double* pb = lib.body_pos_w + 3 * ((size_t)(s + b) * nb + i);
        double v[3] = {0, 0, 0}, w[3] = {0, 0, 0};
        if (b > a) {
          for (int j = 0; j < 3; j++) v[j] = (pb[j] - pa[j]) / h;
          double inv[4], dq[4];
          mju_negQuat(inv, lib.body_quat_w + 4 * ((size_t)(s + a) * nb + i));
          mju_mulQuat(dq, lib.body_quat_w + 4 * ((size_t)(s + b) * nb + i), inv);
          mju_quat2Vel(w, dq, h);
        }
        elin = fmax(elin, max_diff(lib.body_lin_vel_w + 3 * ((size_t)f * nb + i), v, 3));
        eang = fmax(eang, max_diff(lib.body_ang_vel_w + 3 * ((size_t)f * nb + i), w, 3));
        if (k == 0 || k == n - 1) ends = fmax(ends, fmax(max_diff(lib.body_lin_vel_w + 3 * ((size_t)f * nb + i), v, 3),
                                                        max_diff(lib.body_ang_vel_w + 3 * ((size_t)f * nb + i), w, 3)));
      }
      // the root (body 0 here, the free joint's body): world = R(q[a]) * body-frame qvel angular part
      double wr[3];
      mju_rotVecQuat(wr, lib.qvel + (size_t)f * nv + 3, qa + 3);
      eroot = fmax(eroot, max_diff(lib.body_ang_vel_w + 3 * (size_t)f * nb, wr, 3));
    }
  }
  TEST_CHECK(eqvel <= 1e-12, "qvel vs mj_differentiatePos: %g", eqvel);
  TEST_CHECK(elin <= 1e-12 && eang <= 1e-9, "body velocities vs differences: lin %g ang %g", elin, eang);
  TEST_CHECK(ends <= 1e-9, "clip ends (one-sided) off by %g", ends);
  TEST_CHECK(eroot <= 1e-9, "root world angular velocity vs rotated qvel: %g", eroot);
  // the one-frame clip is at rest
  double rest = 0;
  for (int i = 0; i < 3 * nb; i++)
    rest = fmax(rest, fabs(lib.body_lin_vel_w[(size_t)lib.clip_start[3] * nb * 3 + i]) +
                          fabs(lib.body_ang_vel_w[(size_t)lib.clip_start[3] * nb * 3 + i]));
  TEST_CHECK(rest == 0, "one-frame clip moves: %g", rest);
  printf("velocities: qvel %.3g, body lin %.3g ang %.3g, root ang vs qvel %.3g\n", eqvel, elin, eang, eroot);
  // a model whose joints do not match the clips is refused
  MotionLib bad;
  set.clip[0].nq = set.clip[1].nq = set.clip[2].nq = set.clip[3].nq = nq - 1;
  rc = motion_lib_build(&set, "g1/scene_flat.xml", 50, &bad, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_ARG && strstr(err, "nq"), "nq mismatch: rc %d %s", rc, err);
  set.clip[0].nq = set.clip[1].nq = set.clip[2].nq = set.clip[3].nq = nq;
  rc = motion_lib_build(&set, "g1/no_such_model.xml", 50, &bad, err, sizeof(err));
  TEST_CHECK(rc != 0 && strstr(err, "no_such_model.xml"), "missing model: rc %d %s", rc, err);

  free(ref);
  mj_deleteData(d);
  mj_deleteModel(m);
  motion_lib_free(&lib);
  motion_set_free(&set);
  return test_report("motion_lib");
}
