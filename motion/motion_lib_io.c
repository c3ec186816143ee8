// motion_lib_io.c: the motion library's HDF5 file (layout in motion/README.md). Frame data is stored float32,
// contiguous and uncompressed: the 40 LAFAN1 clips at 50 Hz are 441k frames x 519 values, 0.92 GB in float32
// (1.8 GB in float64); shuffle + deflate saved only a fifth of that for 30 s of writing. The library is rebuilt
// from the clips wherever it is needed, so the file trades precision (float32 rounding, ~6e-8 relative) for
// size. Read back into float64 and checked value by value.
#define _GNU_SOURCE  // fsync, getpid
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "motion/motion_lib.h"

#define MOTION_LIB_FORMAT "adjoint motion library"
#define MOTION_LIB_VERSION 1
// |norm - 1| a stored quaternion may show: float32 rounding of four components is ~1e-7
#define QUAT_NORM_TOL 1e-5

static void quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

// ---- writing ----

static int write_strings(hid_t f, const char* name, const char* data, int n, size_t width) {
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, width);
  H5Tset_strpad(st, H5T_STR_NULLTERM);
  hsize_t dims[1] = {(hsize_t)n};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  hid_t ds = H5Dcreate2(f, name, st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = (ds < 0 || H5Dwrite(ds, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) ? -1 : 0;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  H5Tclose(st);
  return rc;
}

static int write_ints(hid_t f, const char* name, const int* data, int n) {
  hsize_t dims[1] = {(hsize_t)n};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  hid_t ds = H5Dcreate2(f, name, H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = (ds < 0 || H5Dwrite(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) ? -1 : 0;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  return rc;
}

// (nframe, d1[, d2]) float64 in memory -> float32 on disk, chunked by frames and compressed
static int write_frames(hid_t f, const char* name, const double* data, int rank, hsize_t nframe, hsize_t d1,
                        hsize_t d2) {
  hsize_t dims[3] = {nframe, d1, d2};
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t ds = H5Dcreate2(f, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = ds < 0 ? -1 : 0;
  if (!rc && nframe > 0 && H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) rc = -1;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  return rc;
}

static int write_attrs(hid_t f, double fps) {
  int rc = 0, version = MOTION_LIB_VERSION;
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, sizeof(MOTION_LIB_FORMAT));
  hid_t a = H5Acreate2(f, "format", st, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Awrite(a, st, MOTION_LIB_FORMAT) < 0) rc = -1;
  if (a >= 0) H5Aclose(a);
  a = H5Acreate2(f, "version", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Awrite(a, H5T_NATIVE_INT, &version) < 0) rc = -1;
  if (a >= 0) H5Aclose(a);
  hid_t ds = H5Dcreate2(f, "fps", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &fps) < 0) rc = -1;
  if (ds >= 0) H5Dclose(ds);
  H5Tclose(st);
  H5Sclose(sp);
  return rc;
}

static int sync_path(const char* path, int dir) {
  int fd = open(path, dir ? O_RDONLY | O_DIRECTORY : O_RDWR);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int motion_lib_write(const MotionLib* lib, const char* path, char* err, size_t errlen) {
  if (!lib || lib->nclip < 1 || lib->nframe < 1 || lib->njoint < 1 || lib->nbody < 1 || !path || !*path) {
    snprintf(err, errlen, "%s: nothing to write (a motion library needs clips, frames, joints and bodies)",
             path ? path : "(null)");
    return MOTION_ERR_ARG;
  }
  quiet();
  char tmp[4096 + 32];
  snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
  hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) {
    snprintf(err, errlen, "%s: cannot create (temporary %s)", path, tmp);
    return MOTION_ERR_IO;
  }
  const hsize_t nf = (hsize_t)lib->nframe, nb = (hsize_t)lib->nbody, nj = (hsize_t)lib->njoint;
  const char* what = NULL;
  if (write_attrs(f, lib->fps)) what = "fps";
  else if (write_strings(f, "clip_names", lib->clip_name[0], lib->nclip, sizeof(lib->clip_name[0]))) what = "clip_names";
  else if (write_ints(f, "clip_start", lib->clip_start, lib->nclip)) what = "clip_start";
  else if (write_ints(f, "clip_len", lib->clip_len, lib->nclip)) what = "clip_len";
  else if (write_strings(f, "joint_names", lib->joint_name[0], lib->njoint, MOTION_NAME_MAX)) what = "joint_names";
  else if (write_strings(f, "body_names", lib->body_name[0], lib->nbody, MOTION_NAME_MAX)) what = "body_names";
  else if (write_frames(f, "qpos", lib->qpos, 2, nf, lib->nq, 0)) what = "qpos";
  else if (write_frames(f, "qvel", lib->qvel, 2, nf, lib->nv, 0)) what = "qvel";
  else if (write_frames(f, "joint_pos", lib->joint_pos, 2, nf, nj, 0)) what = "joint_pos";
  else if (write_frames(f, "joint_vel", lib->joint_vel, 2, nf, nj, 0)) what = "joint_vel";
  else if (write_frames(f, "body_pos_w", lib->body_pos_w, 3, nf, nb, 3)) what = "body_pos_w";
  else if (write_frames(f, "body_quat_w", lib->body_quat_w, 3, nf, nb, 4)) what = "body_quat_w";
  else if (write_frames(f, "body_lin_vel_w", lib->body_lin_vel_w, 3, nf, nb, 3)) what = "body_lin_vel_w";
  else if (write_frames(f, "body_ang_vel_w", lib->body_ang_vel_w, 3, nf, nb, 3)) what = "body_ang_vel_w";
  if (H5Fclose(f) < 0 && !what) what = "(closing the file)";
  if (!what && sync_path(tmp, 0)) what = "(fsync)";
  if (what) {
    unlink(tmp);
    snprintf(err, errlen, "%s: writing dataset %s failed (disk full?); nothing written", path, what);
    return MOTION_ERR_IO;
  }
  if (rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    snprintf(err, errlen, "%s: rename from %s failed: %s", path, tmp, strerror(e));
    return MOTION_ERR_IO;
  }
  char dir[4096];
  snprintf(dir, sizeof(dir), "%s", path);
  char* slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  sync_path(slash ? dir : ".", 1);  // the rename's durability; best effort (some file systems refuse)
  return MOTION_OK;
}

// ---- reading ----

typedef struct {
  const char* path;
  char* err;
  size_t errlen;
} Ctx;

static int fail(Ctx* c, const char* dataset, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Ctx* c, const char* dataset, const char* fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  if (dataset)
    snprintf(c->err, c->errlen, "%s: dataset '%s': %s", c->path, dataset, what);
  else
    snprintf(c->err, c->errlen, "%s: %s", c->path, what);
  return MOTION_ERR_FORMAT;
}

// Opens dataset name and checks its rank and type class; dims written (rank <= 3).
static hid_t open_ds(Ctx* c, hid_t f, const char* name, int rank, H5T_class_t cls, hsize_t* dims, int* rc) {
  if (H5Lexists(f, name, H5P_DEFAULT) <= 0) {
    *rc = fail(c, name, "missing");
    return -1;
  }
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  if (ds < 0) {
    *rc = fail(c, name, "cannot open");
    return -1;
  }
  hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds);
  int r = H5Sget_simple_extent_ndims(sp);
  H5T_class_t k = H5Tget_class(ty);
  if (r == rank && rank > 0) H5Sget_simple_extent_dims(sp, dims, NULL);
  H5Sclose(sp);
  H5Tclose(ty);
  const char* cname = cls == H5T_FLOAT ? "floating-point" : cls == H5T_INTEGER ? "integer" : "string";
  if (r != rank || k != cls) {
    H5Dclose(ds);
    *rc = fail(c, name, "expected a rank-%d %s dataset, found rank %d %s", rank, cname, r,
               k == H5T_FLOAT ? "floating-point" : k == H5T_INTEGER ? "integer" : k == H5T_STRING ? "string" : "other");
    return -1;
  }
  *rc = 0;
  return ds;
}

static int read_strings(Ctx* c, hid_t f, const char* name, size_t width, int unique, int* n, char** out) {
  hsize_t dims[1];
  int rc;
  hid_t ds = open_ds(c, f, name, 1, H5T_STRING, dims, &rc);
  if (ds < 0) return rc;
  hid_t ft = H5Dget_type(ds);
  size_t fw = H5Tget_size(ft);
  int vlen = H5Tis_variable_str(ft) > 0;
  H5Tclose(ft);
  if (vlen || fw > width || dims[0] < 1 || dims[0] > 1000000) {
    H5Dclose(ds);
    return fail(c, name, vlen ? "variable-length strings (fixed-length expected)"
                              : "%llu strings of %zu bytes (1 or more of at most %zu expected)",
                (unsigned long long)dims[0], fw, width);
  }
  *n = (int)dims[0];
  *out = (char*)calloc(dims[0], width);
  hid_t mt = H5Tcopy(H5T_C_S1);
  H5Tset_size(mt, width);
  H5Tset_strpad(mt, H5T_STR_NULLTERM);
  rc = (!*out || H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) ? fail(c, name, "read failed") : 0;
  H5Tclose(mt);
  H5Dclose(ds);
  for (int i = 0; !rc && i < *n; i++) {
    char* s = *out + (size_t)i * width;
    s[width - 1] = '\0';
    if (!s[0]) rc = fail(c, name, "entry %d is empty", i);
    for (int j = 0; !rc && unique && j < i; j++)  // look-up by name needs one entry per name
      if (!strcmp(s, *out + (size_t)j * width)) rc = fail(c, name, "entries %d and %d are both '%s'", j, i, s);
  }
  return rc;
}

// a dataset of exactly the given shape, read into dst (double or int by mt)
static int read_exact(Ctx* c, hid_t f, const char* name, H5T_class_t cls, hid_t mt, int rank, const hsize_t* want,
                      void* dst) {
  hsize_t dims[3] = {0, 0, 0};
  int rc;
  hid_t ds = open_ds(c, f, name, rank, cls, dims, &rc);
  if (ds < 0) return rc;
  for (int i = 0; i < rank; i++)
    if (dims[i] != want[i]) {
      H5Dclose(ds);
      char got[96], exp[96];
      if (rank == 1) {
        snprintf(got, sizeof(got), "(%llu)", (unsigned long long)dims[0]);
        snprintf(exp, sizeof(exp), "(%llu)", (unsigned long long)want[0]);
      } else if (rank == 2) {
        snprintf(got, sizeof(got), "(%llu, %llu)", (unsigned long long)dims[0], (unsigned long long)dims[1]);
        snprintf(exp, sizeof(exp), "(%llu, %llu)", (unsigned long long)want[0], (unsigned long long)want[1]);
      } else {
        snprintf(got, sizeof(got), "(%llu, %llu, %llu)", (unsigned long long)dims[0], (unsigned long long)dims[1],
                 (unsigned long long)dims[2]);
        snprintf(exp, sizeof(exp), "(%llu, %llu, %llu)", (unsigned long long)want[0], (unsigned long long)want[1],
                 (unsigned long long)want[2]);
      }
      return fail(c, name, "shape %s, expected %s", got, exp);
    }
  rc = H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst) < 0 ? fail(c, name, "read failed (damaged file?)") : 0;
  H5Dclose(ds);
  return rc;
}

static int check_finite(Ctx* c, const char* name, const double* v, size_t n, size_t width) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return fail(c, name, "non-finite value at frame %zu, column %zu", i / width, i % width);
  return 0;
}

int motion_lib_read(const char* path, MotionLib* out, char* err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  Ctx c = {path, err, errlen};
  quiet();
  if (access(path, R_OK)) {
    snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    return MOTION_ERR_IO;
  }
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    snprintf(err, errlen, "%s: not an HDF5 file (or damaged)", path);
    return MOTION_ERR_FORMAT;
  }
  int rc = 0;
  // the format attribute: a motion library, this version
  {
    char fmt[64] = "";
    int version = -1;
    hid_t a = H5Aexists(f, "format") > 0 ? H5Aopen(f, "format", H5P_DEFAULT) : -1;
    if (a >= 0) {
      hid_t t = H5Aget_type(a);
      if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) <= 0 && H5Tget_size(t) < sizeof(fmt))
        H5Aread(a, t, fmt);
      H5Tclose(t);
      H5Aclose(a);
    }
    a = H5Aexists(f, "version") > 0 ? H5Aopen(f, "version", H5P_DEFAULT) : -1;
    if (a >= 0) {
      H5Aread(a, H5T_NATIVE_INT, &version);
      H5Aclose(a);
    }
    if (strcmp(fmt, MOTION_LIB_FORMAT))
      rc = fail(&c, NULL, "not a motion library (root attribute 'format' is not \"%s\")", MOTION_LIB_FORMAT);
    else if (version != MOTION_LIB_VERSION)
      rc = fail(&c, NULL, "motion library version %d, this build reads version %d", version, MOTION_LIB_VERSION);
  }
  char *clips = NULL, *joints = NULL, *bodies = NULL;
  int nclip = 0, njoint = 0, nbody = 0;
  if (!rc) rc = read_strings(&c, f, "clip_names", sizeof(out->clip_name[0]), 0, &nclip, &clips);
  if (!rc) rc = read_strings(&c, f, "joint_names", MOTION_NAME_MAX, 1, &njoint, &joints);
  if (!rc) rc = read_strings(&c, f, "body_names", MOTION_NAME_MAX, 1, &nbody, &bodies);
  // the frame count from qpos
  hsize_t qd[2] = {0, 0};
  if (!rc) {
    hid_t ds = open_ds(&c, f, "qpos", 2, H5T_FLOAT, qd, &rc);
    if (ds >= 0) H5Dclose(ds);
    if (!rc && (qd[0] < 1 || qd[0] > 0x7fffffff / (4 * (hsize_t)nbody + 64) || qd[1] != (hsize_t)njoint + 7))
      rc = fail(&c, "qpos", "shape (%llu, %llu): expected (frames >= 1, 7 + %d joints)", (unsigned long long)qd[0],
                (unsigned long long)qd[1], njoint);
  }
  if (!rc) {
    out->nclip = nclip, out->nframe = (int)qd[0], out->njoint = njoint, out->nq = njoint + 7, out->nv = njoint + 6;
    out->nbody = nbody;
    if (motion_lib_alloc(out)) rc = MOTION_ERR_ALLOC, snprintf(err, errlen, "%s: out of memory", path);
  }
  if (!rc) {
    memcpy(out->clip_name, clips, (size_t)nclip * sizeof(out->clip_name[0]));
    memcpy(out->joint_name, joints, (size_t)njoint * MOTION_NAME_MAX);
    memcpy(out->body_name, bodies, (size_t)nbody * MOTION_NAME_MAX);
  }
  free(clips);
  free(joints);
  free(bodies);
  const hsize_t nf = (hsize_t)out->nframe, nb = (hsize_t)nbody, nj = (hsize_t)njoint;
  // scalars and clip tables
  if (!rc) {
    hsize_t d[1];
    hid_t ds = open_ds(&c, f, "fps", 0, H5T_FLOAT, d, &rc);
    if (ds >= 0) {
      if (H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &out->fps) < 0) rc = fail(&c, "fps", "read failed");
      H5Dclose(ds);
    }
    if (!rc && !(isfinite(out->fps) && out->fps > 0)) rc = fail(&c, "fps", "%g is not a positive frame rate", out->fps);
  }
  hsize_t w1[1] = {(hsize_t)nclip};
  if (!rc) rc = read_exact(&c, f, "clip_start", H5T_INTEGER, H5T_NATIVE_INT, 1, w1, out->clip_start);
  if (!rc) rc = read_exact(&c, f, "clip_len", H5T_INTEGER, H5T_NATIVE_INT, 1, w1, out->clip_len);
  for (int k = 0, start = 0; !rc && k < nclip; k++) {
    if (out->clip_start[k] != start || out->clip_len[k] < 1 || out->clip_len[k] > out->nframe - start)
      rc = fail(&c, "clip_start", "clip %d (%s): start %d, length %d; clips must follow one another from frame 0 "
                "with at least one frame each, within %d frames", k, out->clip_name[k], out->clip_start[k],
                out->clip_len[k], out->nframe);
    else
      start += out->clip_len[k];
    if (!rc && k == nclip - 1 && start != out->nframe)
      rc = fail(&c, "clip_len", "the clips cover %d frames, qpos has %d", start, out->nframe);
  }
  // frame data
  struct {
    const char* name;
    double* dst;
    int rank;
    hsize_t d1, d2;
  } fr[] = {{"qpos", out->qpos, 2, out->nq, 0},
            {"qvel", out->qvel, 2, out->nv, 0},
            {"joint_pos", out->joint_pos, 2, nj, 0},
            {"joint_vel", out->joint_vel, 2, nj, 0},
            {"body_pos_w", out->body_pos_w, 3, nb, 3},
            {"body_quat_w", out->body_quat_w, 3, nb, 4},
            {"body_lin_vel_w", out->body_lin_vel_w, 3, nb, 3},
            {"body_ang_vel_w", out->body_ang_vel_w, 3, nb, 3}};
  for (size_t i = 0; !rc && i < sizeof(fr) / sizeof(fr[0]); i++) {
    hsize_t want[3] = {nf, fr[i].d1, fr[i].d2};
    rc = read_exact(&c, f, fr[i].name, H5T_FLOAT, H5T_NATIVE_DOUBLE, fr[i].rank, want, fr[i].dst);
    size_t width = fr[i].rank == 2 ? fr[i].d1 : fr[i].d1 * fr[i].d2;
    if (!rc) rc = check_finite(&c, fr[i].name, fr[i].dst, nf * width, width);
  }
  H5Fclose(f);
  // unit quaternions (root in qpos, every body), joint data equal to qpos / qvel's
  for (size_t k = 0; !rc && k < nf; k++) {
    const double* q = out->qpos + k * out->nq + 3;
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (fabs(n - 1) > QUAT_NORM_TOL) rc = fail(&c, "qpos", "frame %zu: root quaternion norm %.9g", k, n);
    for (size_t b = 0; !rc && b < nb; b++) {
      q = out->body_quat_w + 4 * (k * nb + b);
      n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
      if (fabs(n - 1) > QUAT_NORM_TOL)
        rc = fail(&c, "body_quat_w", "frame %zu, body %zu (%s): quaternion norm %.9g", k, b, out->body_name[b], n);
    }
    for (size_t j = 0; !rc && j < nj; j++) {
      if (out->joint_pos[k * nj + j] != out->qpos[k * out->nq + 7 + j])
        rc = fail(&c, "joint_pos", "frame %zu, joint %zu (%s) differs from qpos[7 + %zu]", k, j, out->joint_name[j], j);
      else if (out->joint_vel[k * nj + j] != out->qvel[k * out->nv + 6 + j])
        rc = fail(&c, "joint_vel", "frame %zu, joint %zu (%s) differs from qvel[6 + %zu]", k, j, out->joint_name[j], j);
    }
  }
  if (rc) motion_lib_free(out);
  return rc;
}
