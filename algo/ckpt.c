// ckpt.c: HDF5 checkpoints (see ckpt.h).
#define _GNU_SOURCE  // fsync, strdup
#include "algo/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

size_t ckpt_dtype_size(CkDtype t) {
  static const size_t s[] = {4, 8, 8, 4, 1};
  return s[t];
}

int64_t ckpt_count(const CkTensor* t) { return t->rank == 2 ? t->dims[0] * t->dims[1] : t->dims[0]; }

int ckpt_add(CkTensor* t, int i, int max, const char* name, CkDtype dt, void* data, int64_t d0, int64_t d1) {
  if (i < 0 || i >= max) return -1;
  snprintf(t[i].name, sizeof(t[i].name), "%s", name);
  t[i].dtype = dt;
  t[i].rank = d1 > 0 ? 2 : 1;
  t[i].dims[0] = d0;
  t[i].dims[1] = d1 > 0 ? d1 : 0;
  t[i].data = data;
  return i + 1;
}

static hid_t h5type(CkDtype t) {
  switch (t) {
    case CK_F32: return H5T_IEEE_F32LE;
    case CK_F64: return H5T_IEEE_F64LE;
    case CK_I64: return H5T_STD_I64LE;
    case CK_I32: return H5T_STD_I32LE;
    case CK_U8: return H5T_STD_U8LE;
  }
  return H5T_NATIVE_UCHAR;
}
static hid_t memtype(CkDtype t) {
  switch (t) {
    case CK_F32: return H5T_NATIVE_FLOAT;
    case CK_F64: return H5T_NATIVE_DOUBLE;
    case CK_I64: return H5T_NATIVE_INT64;
    case CK_I32: return H5T_NATIVE_INT32;
    case CK_U8: return H5T_NATIVE_UINT8;
  }
  return H5T_NATIVE_UCHAR;
}
static const char* dtype_name(CkDtype t) {
  static const char* n[] = {"float32", "float64", "int64", "int32", "uint8"};
  return n[t];
}

static int write_str_attr(hid_t obj, const char* name, const char* value) {
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, strlen(value) + 1);
  H5Tset_strpad(st, H5T_STR_NULLTERM);
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, st, sp, H5P_DEFAULT, H5P_DEFAULT);
  int rc = (a < 0 || H5Awrite(a, st, value) < 0) ? -1 : 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(st);
  return rc;
}

static int fsync_path(const char* path, int dir) {
  int fd = open(path, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int ckpt_write(const char* path, const CkTensor* t, int n, const CkAttr* attrs, int nattr, char* err, size_t errlen) {
  quiet();
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST);  // checksummed metadata
  hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (f < 0) {
    snprintf(err, errlen, "%s: cannot create checkpoint", tmp);
    return CKPT_EIO;
  }
  int rc = CKPT_OK;
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  for (int i = 0; i < n && !rc; i++) {
    hsize_t dims[2] = {(hsize_t)t[i].dims[0], (hsize_t)t[i].dims[1]};
    if (ckpt_count(&t[i]) <= 0) {
      snprintf(err, errlen, "%s: dataset '%s': empty arrays are not stored", path, t[i].name);
      rc = CKPT_EARG;
      break;
    }
    hid_t sp = H5Screate_simple(t[i].rank, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);  // no timestamps in object headers
    H5Pset_chunk(dcpl, t[i].rank, dims);
    H5Pset_fletcher32(dcpl);
    hid_t ds = H5Dcreate2(f, t[i].name, h5type(t[i].dtype), sp, lcpl, dcpl, H5P_DEFAULT);
    if (ds < 0 || H5Dwrite(ds, memtype(t[i].dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t[i].data) < 0) {
      snprintf(err, errlen, "%s: dataset '%s': write failed", path, t[i].name);
      rc = CKPT_EIO;
    }
    if (ds >= 0) H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
  }
  H5Pclose(lcpl);
  for (int i = 0; i < nattr && !rc; i++)
    if (write_str_attr(f, attrs[i].name, attrs[i].value ? attrs[i].value : "")) {
      snprintf(err, errlen, "%s: attribute '%s': write failed", path, attrs[i].name);
      rc = CKPT_EIO;
    }
  if (H5Fclose(f) < 0 && !rc) {
    snprintf(err, errlen, "%s: close failed", tmp);
    rc = CKPT_EIO;
  }
  if (!rc && fsync_path(tmp, 0)) {
    snprintf(err, errlen, "%s: fsync failed: %s", tmp, strerror(errno));
    rc = CKPT_EIO;
  }
  if (!rc && rename(tmp, path)) {
    snprintf(err, errlen, "%s: rename failed: %s", path, strerror(errno));
    rc = CKPT_EIO;
  }
  if (!rc) {
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", path);
    char* slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof(dir), ".");
    fsync_path(dir, 1);
  } else {
    unlink(tmp);
  }
  return rc;
}

static hid_t open_ro(const char* path, char* err, size_t errlen) {
  quiet();
  if (access(path, R_OK)) {
    snprintf(err, errlen, "%s: cannot open checkpoint: %s", path, strerror(errno));
    return -1;
  }
  if (H5Fis_hdf5(path) <= 0) {
    snprintf(err, errlen, "%s: not a valid HDF5 checkpoint (truncated or corrupt file)", path);
    return -1;
  }
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) snprintf(err, errlen, "%s: cannot open checkpoint (truncated or corrupt file)", path);
  return f;
}

static int dtype_matches(hid_t ft, CkDtype want) {
  H5T_class_t cls = H5Tget_class(ft);
  size_t sz = H5Tget_size(ft);
  if (want == CK_F32 || want == CK_F64) return cls == H5T_FLOAT && sz == ckpt_dtype_size(want);
  if (cls != H5T_INTEGER || sz != ckpt_dtype_size(want)) return 0;
  return (H5Tget_sign(ft) == H5T_SGN_NONE) == (want == CK_U8);
}

int ckpt_read(const char* path, CkTensor* t, int n, char* err, size_t errlen) {
  hid_t f = open_ro(path, err, errlen);
  if (f < 0) return CKPT_EFORMAT;
  int rc = CKPT_OK;
  for (int i = 0; i < n && !rc; i++) {
    if (H5Lexists(f, t[i].name, H5P_DEFAULT) <= 0) {
      // H5Lexists fails on missing intermediate groups too: check the parent path separately
      snprintf(err, errlen, "%s: dataset '%s': missing", path, t[i].name);
      rc = CKPT_EMISSING;
      break;
    }
    hid_t ds = H5Dopen2(f, t[i].name, H5P_DEFAULT);
    if (ds < 0) {
      snprintf(err, errlen, "%s: dataset '%s': cannot open (corrupt file or not a dataset)", path, t[i].name);
      rc = CKPT_EFORMAT;
      break;
    }
    hid_t sp = H5Dget_space(ds), ft = H5Dget_type(ds);
    hsize_t dims[4] = {0, 0, 0, 0};
    int rank = H5Sget_simple_extent_ndims(sp);
    if (rank >= 1 && rank <= 4) H5Sget_simple_extent_dims(sp, dims, NULL);
    char want[64], got[64];
    if (t[i].rank == 2)
      snprintf(want, sizeof(want), "(%lld, %lld) %s", (long long)t[i].dims[0], (long long)t[i].dims[1], dtype_name(t[i].dtype));
    else
      snprintf(want, sizeof(want), "(%lld) %s", (long long)t[i].dims[0], dtype_name(t[i].dtype));
    if (rank == 2)
      snprintf(got, sizeof(got), "(%llu, %llu)", (unsigned long long)dims[0], (unsigned long long)dims[1]);
    else
      snprintf(got, sizeof(got), "rank %d (%llu)", rank, (unsigned long long)dims[0]);
    if (rank != t[i].rank || (hsize_t)t[i].dims[0] != dims[0] || (rank == 2 && (hsize_t)t[i].dims[1] != dims[1])) {
      snprintf(err, errlen, "%s: dataset '%s': shape %s, expected %s", path, t[i].name, got, want);
      rc = CKPT_ESHAPE;
    } else if (!dtype_matches(ft, t[i].dtype)) {
      snprintf(err, errlen, "%s: dataset '%s': wrong element type, expected %s", path, t[i].name, want);
      rc = CKPT_ESHAPE;
    } else if (H5Dread(ds, memtype(t[i].dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t[i].data) < 0) {
      snprintf(err, errlen, "%s: dataset '%s': read failed (checksum mismatch: corrupt or truncated file)", path,
               t[i].name);
      rc = CKPT_EFORMAT;
    }
    H5Tclose(ft);
    H5Sclose(sp);
    H5Dclose(ds);
  }
  if (H5Fclose(f) < 0 && !rc) {
    snprintf(err, errlen, "%s: close failed (corrupt file)", path);
    rc = CKPT_EFORMAT;
  }
  return rc;
}

int ckpt_read_attr(const char* path, const char* name, char* out, size_t outlen) {
  char err[256];
  hid_t f = open_ro(path, err, sizeof(err));
  if (f < 0) return CKPT_EFORMAT;
  int rc = CKPT_EMISSING;
  if (H5Aexists(f, name) > 0) {
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    size_t sz = H5Tget_size(t);
    char* buf = (char*)calloc(sz + 1, 1);
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, sz);
    if (buf && H5Aread(a, mt, buf) >= 0) {
      snprintf(out, outlen, "%s", buf);
      rc = CKPT_OK;
    } else {
      rc = CKPT_EFORMAT;
    }
    free(buf);
    H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
  }
  H5Fclose(f);
  return rc;
}

// ---- comparison ----
typedef struct {
  char** names;
  int n, cap;
} NameList;

static herr_t collect(hid_t obj, const char* name, const H5O_info_t* info, void* op) {
  NameList* l = (NameList*)op;
  if (info->type != H5O_TYPE_DATASET) return 0;
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->names = (char**)realloc(l->names, sizeof(char*) * (size_t)l->cap);
  }
  l->names[l->n++] = strdup(name);
  return 0;
}

static void free_names(NameList* l) {
  for (int i = 0; i < l->n; i++) free(l->names[i]);
  free(l->names);
}

static void report_add(char* report, size_t len, const char* fmt, const char* a, const char* b) {
  size_t u = strlen(report);
  if (u + 1 < len) snprintf(report + u, len - u, fmt, a, b);
}

// reads a whole dataset as raw bytes in its file type; returns a malloc'd buffer
static void* read_raw(hid_t f, const char* name, size_t* nbytes, hid_t* type_out, int* rank, hsize_t* dims) {
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  if (ds < 0) return NULL;
  hid_t sp = H5Dget_space(ds), ft = H5Dget_type(ds);
  *rank = H5Sget_simple_extent_ndims(sp);
  dims[0] = dims[1] = dims[2] = dims[3] = 0;
  if (*rank >= 0 && *rank <= 4) H5Sget_simple_extent_dims(sp, dims, NULL);
  hssize_t np = H5Sget_simple_extent_npoints(sp);
  *nbytes = (size_t)np * H5Tget_size(ft);
  void* buf = malloc(*nbytes ? *nbytes : 1);
  if (buf && H5Dread(ds, ft, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    free(buf);
    buf = NULL;
  }
  *type_out = ft;
  H5Sclose(sp);
  H5Dclose(ds);
  return buf;
}

int ckpt_compare(const char* a, const char* b, char* report, size_t reportlen) {
  char err[512];
  if (reportlen) report[0] = 0;
  hid_t fa = open_ro(a, err, sizeof(err));
  if (fa < 0) {
    report_add(report, reportlen, "%s%s\n", err, "");
    return CKPT_EFORMAT;
  }
  hid_t fb = open_ro(b, err, sizeof(err));
  if (fb < 0) {
    H5Fclose(fa);
    report_add(report, reportlen, "%s%s\n", err, "");
    return CKPT_EFORMAT;
  }
  NameList la = {0}, lb = {0};
  H5Ovisit2(fa, H5_INDEX_NAME, H5_ITER_INC, collect, &la, H5O_INFO_BASIC);
  H5Ovisit2(fb, H5_INDEX_NAME, H5_ITER_INC, collect, &lb, H5O_INFO_BASIC);
  int diffs = 0;
  for (int i = 0; i < la.n; i++) {
    int found = 0;
    for (int j = 0; j < lb.n && !found; j++) found = !strcmp(la.names[i], lb.names[j]);
    if (!found) {
      report_add(report, reportlen, "dataset '%s': only in %s\n", la.names[i], a);
      diffs++;
      continue;
    }
    size_t na = 0, nb = 0;
    hid_t ta = -1, tb = -1;
    int ra, rb;
    hsize_t da[4], db[4];
    void* ba = read_raw(fa, la.names[i], &na, &ta, &ra, da);
    void* bb = read_raw(fb, la.names[i], &nb, &tb, &rb, db);
    if (!ba || !bb) {
      report_add(report, reportlen, "dataset '%s': unreadable%s\n", la.names[i], "");
      diffs++;
    } else if (ra != rb || memcmp(da, db, sizeof(da)) || H5Tequal(ta, tb) <= 0) {
      report_add(report, reportlen, "dataset '%s': shape or type differs%s\n", la.names[i], "");
      diffs++;
    } else if (na != nb || memcmp(ba, bb, na)) {
      report_add(report, reportlen, "dataset '%s': values differ%s\n", la.names[i], "");
      diffs++;
    }
    free(ba);
    free(bb);
    if (ta >= 0) H5Tclose(ta);
    if (tb >= 0) H5Tclose(tb);
  }
  for (int j = 0; j < lb.n; j++) {
    int found = 0;
    for (int i = 0; i < la.n && !found; i++) found = !strcmp(la.names[i], lb.names[j]);
    if (!found) {
      report_add(report, reportlen, "dataset '%s': only in %s\n", lb.names[j], b);
      diffs++;
    }
  }
  free_names(&la);
  free_names(&lb);
  H5Fclose(fa);
  H5Fclose(fb);
  return diffs;
}
