// motion_lib_io: the motion library's HDF5 file on a hand-made library (no assets): the round trip equals the
// float32 rounding of every value; damaged files (a missing or reshaped dataset, a NaN, a non-unit quaternion,
// clips that do not tile the frames, joint data that disagrees with qpos, not HDF5 at all, absent) are refused
// with the file and dataset named; a failed write leaves an existing file as it was.
#define _GNU_SOURCE
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "motion/motion_lib.h"
#include "tests/test.h"

// two clips (3 and 2 frames), 2 joints, 2 bodies: smooth made-up values, unit quaternions
static void make_lib(MotionLib* lib) {
  memset(lib, 0, sizeof(*lib));
  lib->nclip = 2, lib->nframe = 5, lib->njoint = 2, lib->nq = 9, lib->nv = 8, lib->nbody = 2, lib->fps = 50;
  if (motion_lib_alloc(lib)) abort();
  strcpy(lib->clip_name[0], "a.csv"), strcpy(lib->clip_name[1], "b.csv");
  lib->clip_start[0] = 0, lib->clip_len[0] = 3, lib->clip_start[1] = 3, lib->clip_len[1] = 2;
  strcpy(lib->joint_name[0], "hip"), strcpy(lib->joint_name[1], "knee");
  strcpy(lib->body_name[0], "pelvis"), strcpy(lib->body_name[1], "shin");
  for (int f = 0; f < 5; f++) {
    double t = 0.1 * f + 0.0123456789;
    double* q = lib->qpos + f * 9;
    q[0] = t, q[1] = -t, q[2] = 0.8 + t * t;
    q[3] = cos(t / 2), q[4] = 0, q[5] = 0, q[6] = sin(t / 2);
    q[7] = sin(t), q[8] = cos(3 * t);
    for (int i = 0; i < 8; i++) lib->qvel[f * 8 + i] = 1.0 / 3 + i * t;
    for (int j = 0; j < 2; j++) lib->joint_pos[f * 2 + j] = q[7 + j], lib->joint_vel[f * 2 + j] = lib->qvel[f * 8 + 6 + j];
    for (int b = 0; b < 2; b++) {
      double a = t + b;
      double* p = lib->body_pos_w + 3 * (f * 2 + b);
      double* r = lib->body_quat_w + 4 * (f * 2 + b);
      p[0] = a, p[1] = 2 * a, p[2] = 1 / (1 + a);
      r[0] = cos(a / 2), r[1] = sin(a / 2) * 0.6, r[2] = sin(a / 2) * 0.8, r[3] = 0;
      for (int k = 0; k < 3; k++)
        lib->body_lin_vel_w[3 * (f * 2 + b) + k] = a * (k + 1), lib->body_ang_vel_w[3 * (f * 2 + b) + k] = -a / (k + 1);
    }
  }
}

static void expect_f32(const char* label, const double* got, const double* src, size_t n) {
  double* r = (double*)malloc(sizeof(double) * n);
  for (size_t i = 0; i < n; i++) r[i] = (double)(float)src[i];
  test_close(label, got, r, (int)n, 0, 0);
  free(r);
}

// dataset element i (flat) set to v
static void poke(const char* path, const char* name, hsize_t i, double v) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t sp = H5Dget_space(ds);
  int rank = H5Sget_simple_extent_ndims(sp);
  hsize_t dims[3], start[3], count[3] = {1, 1, 1};
  if (rank == 0) {  // a scalar
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
    H5Sclose(sp), H5Dclose(ds), H5Fclose(f);
    return;
  }
  H5Sget_simple_extent_dims(sp, dims, NULL);
  for (int k = rank - 1; k >= 0; k--) start[k] = i % dims[k], i /= dims[k];
  H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
  hid_t ms = H5Screate_simple(1, count, NULL);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, &v);
  H5Sclose(ms), H5Sclose(sp), H5Dclose(ds), H5Fclose(f);
}

// dataset name replaced by zeros of shape (d0, d1), or removed when d0 == 0
static void replace(const char* path, const char* name, hsize_t d0, hsize_t d1) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, name, H5P_DEFAULT);
  if (d0) {
    hsize_t dims[2] = {d0, d1};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t ds = H5Dcreate2(f, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double* z = (double*)calloc(d0 * d1, sizeof(double));
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
    free(z), H5Dclose(ds), H5Sclose(sp);
  }
  H5Fclose(f);
}

// the file read after damage: refused with the file, the dataset and `what` in the message
static void expect_refused(const char* path, const char* dataset, const char* what) {
  MotionLib lib;
  char err[2048] = "";
  int rc = motion_lib_read(path, &lib, err, sizeof(err));
  TEST_CHECK(rc != 0 && strstr(err, path) && (!dataset || strstr(err, dataset)) && strstr(err, what),
             "damaged %s (%s): rc %d, message '%s'", dataset ? dataset : "file", what, rc, err);
  if (!rc) motion_lib_free(&lib);
}

int main(void) {
  char dir[] = "/tmp/motion_lib_io_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char path[256], bad[256], err[2048];
  snprintf(path, sizeof(path), "%s/lib.h5", dir);
  snprintf(bad, sizeof(bad), "%s/bad.h5", dir);
  MotionLib lib, back;
  make_lib(&lib);
  int rc = motion_lib_write(&lib, path, err, sizeof(err));
  TEST_CHECK(rc == 0, "write: %s", err);
  rc = motion_lib_read(path, &back, err, sizeof(err));
  TEST_CHECK(rc == 0, "read: %s", err);
  if (rc) return test_report("motion_lib_io");
  TEST_CHECK(back.nclip == 2 && back.nframe == 5 && back.njoint == 2 && back.nq == 9 && back.nv == 8 &&
                 back.nbody == 2 && back.fps == 50,
             "sizes %d %d %d %d %d %d %g", back.nclip, back.nframe, back.njoint, back.nq, back.nv, back.nbody, back.fps);
  TEST_CHECK(!strcmp(back.clip_name[1], "b.csv") && back.clip_start[1] == 3 && back.clip_len[1] == 2 &&
                 !strcmp(back.joint_name[1], "knee") && !strcmp(back.body_name[1], "shin"),
             "names / boundaries");
  TEST_CHECK(motion_lib_body(&back, "shin") == 1 && motion_lib_joint(&back, "hip") == 0, "look-up");
  expect_f32("qpos", back.qpos, lib.qpos, 5 * 9);
  expect_f32("qvel", back.qvel, lib.qvel, 5 * 8);
  expect_f32("joint_pos", back.joint_pos, lib.joint_pos, 5 * 2);
  expect_f32("joint_vel", back.joint_vel, lib.joint_vel, 5 * 2);
  expect_f32("body_pos_w", back.body_pos_w, lib.body_pos_w, 5 * 2 * 3);
  expect_f32("body_quat_w", back.body_quat_w, lib.body_quat_w, 5 * 2 * 4);
  expect_f32("body_lin_vel_w", back.body_lin_vel_w, lib.body_lin_vel_w, 5 * 2 * 3);
  expect_f32("body_ang_vel_w", back.body_ang_vel_w, lib.body_ang_vel_w, 5 * 2 * 3);
  motion_lib_free(&back);

  // damaged copies
  char cmd[1200];
  struct {
    const char *dataset, *what;
    int kind;  // 0 poke value, 1 reshape, 2 remove
    hsize_t i, d0, d1;
    double v;
  } cases[] = {
      {"body_pos_w", "non-finite value at frame 2", 0, 2 * 6 + 4, 0, 0, NAN},
      {"qvel", "non-finite", 0, 7, 0, 0, INFINITY},
      {"body_quat_w", "frame 4, body 1 (shin): quaternion norm", 0, 4 * 8 + 4 + 1, 0, 0, 0.9},
      {"qpos", "frame 1: root quaternion norm", 0, 9 + 3, 0, 0, 0.5},
      {"clip_start", "clip 1 (b.csv): start 2", 0, 1, 0, 0, 2},
      {"clip_len", "cover 4 frames", 0, 1, 0, 0, 1},
      {"clip_start", "length 0", 0, 0, 0, 0, 0},  // (placeholder: clip_len 0 below)
      {"joint_pos", "frame 3, joint 1 (knee) differs", 0, 3 * 2 + 1, 0, 0, 0.25},
      {"body_lin_vel_w", "expected a rank-3", 1, 0, 5, 6, 0},
      {"joint_vel", "shape (4, 2), expected (5, 2)", 1, 0, 4, 2, 0},
      {"body_ang_vel_w", "missing", 2, 0, 0, 0, 0},
      {"fps", "not a positive frame rate", 0, 0, 0, 0, -50},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    snprintf(cmd, sizeof(cmd), "cp %s %s", path, bad);
    if (system(cmd)) return 1;
    const char* ds = cases[k].dataset;
    if (k == 6) {  // a clip of no frames
      poke(bad, "clip_len", 0, 0);
    } else if (cases[k].kind == 0) {
      poke(bad, ds, cases[k].i, cases[k].v);
    } else {
      replace(bad, ds, cases[k].d0, cases[k].d1);
    }
    expect_refused(bad, ds, cases[k].what);
  }
  // two bodies of one name
  snprintf(cmd, sizeof(cmd), "cp %s %s", path, bad);
  if (system(cmd)) return 1;
  {
    hid_t f = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, "body_names", H5P_DEFAULT);
    char names[2][MOTION_NAME_MAX] = {"shin", "shin"};
    hid_t st = H5Dget_type(ds);
    H5Dwrite(ds, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, names);
    H5Tclose(st), H5Dclose(ds), H5Fclose(f);
  }
  expect_refused(bad, "body_names", "entries 0 and 1 are both 'shin'");
  // not a motion library, not HDF5, absent
  snprintf(cmd, sizeof(cmd), "cp %s %s && printf 'x' | dd of=%s bs=1 seek=0 conv=notrunc 2>/dev/null", path, bad, bad);
  if (system(cmd)) return 1;
  expect_refused(bad, NULL, "not an HDF5 file");
  {
    hid_t f = H5Fcreate(bad, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    expect_refused(bad, NULL, "not a motion library");
  }
  snprintf(bad, sizeof(bad), "%s/absent.h5", dir);
  expect_refused(bad, NULL, "cannot open");

  // a failed write keeps the existing file: an empty library, and a directory in the file's place
  MotionLib empty;
  memset(&empty, 0, sizeof(empty));
  rc = motion_lib_write(&empty, path, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_ARG && strstr(err, path), "empty library written: rc %d %s", rc, err);
  snprintf(bad, sizeof(bad), "%s/sub", dir);
  snprintf(cmd, sizeof(cmd), "mkdir -p %s/sub/x", dir);
  if (system(cmd)) return 1;
  rc = motion_lib_write(&lib, bad, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_IO && strstr(err, bad), "write over a directory: rc %d %s", rc, err);
  snprintf(cmd, sizeof(cmd), "test -d %s/sub/x && test $(ls %s | wc -l) = 3", dir, dir);  // no temp left behind
  TEST_CHECK(system(cmd) == 0, "a failed write left files behind or removed the directory");
  rc = motion_lib_read(path, &back, err, sizeof(err));
  TEST_CHECK(rc == 0 && back.nframe == 5, "existing file after failed writes: %s", err);
  if (!rc) motion_lib_free(&back);
  snprintf(bad, sizeof(bad), "%s/no/such/dir/lib.h5", dir);
  rc = motion_lib_write(&lib, bad, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_IO && strstr(err, bad), "write into a missing directory: rc %d %s", rc, err);

  motion_lib_free(&lib);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return test_report("motion_lib_io");
}
