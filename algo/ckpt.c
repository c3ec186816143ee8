// ckpt.c: HDF5 checkpoints (see ckpt.h).
#define _GNU_SOURCE  // fsync, strdup
#include "algo/ckpt.h"
#include "nn/nn_export.h"  // nn_export_write_atomic: temp, fsync, rename, fsync of the directory

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
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

// Bob Jenkins' lookup3 hash (hashlittle), the checksum HDF5 puts on its metadata.
static uint32_t rot32(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }
static uint32_t lookup3(const uint8_t* k, size_t len) {
  uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + (uint32_t)len;
  while (len > 12) {
    a += k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 24;
    b += k[4] | (uint32_t)k[5] << 8 | (uint32_t)k[6] << 16 | (uint32_t)k[7] << 24;
    c += k[8] | (uint32_t)k[9] << 8 | (uint32_t)k[10] << 16 | (uint32_t)k[11] << 24;
    a -= c, a ^= rot32(c, 4), c += b;
    b -= a, b ^= rot32(a, 6), a += c;
    c -= b, c ^= rot32(b, 8), b += a;
    a -= c, a ^= rot32(c, 16), c += b;
    b -= a, b ^= rot32(a, 19), a += c;
    c -= b, c ^= rot32(b, 4), b += a;
    len -= 12, k += 12;
  }
  if (len == 0) return c;
  uint8_t t[12] = {0};
  memcpy(t, k, len);
  a += t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
  b += t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
  c += t[8] | (uint32_t)t[9] << 8 | (uint32_t)t[10] << 16 | (uint32_t)t[11] << 24;
  c ^= b, c -= rot32(b, 14);
  a ^= c, a -= rot32(c, 11);
  b ^= a, b -= rot32(a, 25);
  c ^= b, c -= rot32(b, 16);
  a ^= c, a -= rot32(c, 4);
  b ^= a, b -= rot32(a, 14);
  c ^= b, c -= rot32(b, 24);
  return c;
}

// HDF5 1.10 hands out the image of an open file with the superblock's status flags cleared but its checksum
// still over the "open for writing" flags, so the file would not open again: recompute the checksum of a
// version 2/3 superblock (12 bytes, four addresses, checksum). Idempotent where the library gets it right.
static void fix_superblock_checksum(uint8_t* img, size_t len) {
  if (len < 12 || memcmp(img, "\x89HDF\r\n\x1a\n", 8) || img[8] < 2) return;
  size_t n = 12 + 4 * (size_t)img[9];
  if (n + 4 > len) return;
  uint32_t sum = lookup3(img, n);
  for (int i = 0; i < 4; i++) img[n + (size_t)i] = (uint8_t)(sum >> (8 * i));
}

int ckpt_write(const char* path, const CkTensor* t, int n, const CkAttr* attrs, int nattr, char* err, size_t errlen) {
  quiet();
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST);  // checksummed metadata
  // built in memory (core driver, no backing store) and written below with write(2): HDF5 never holds a
  // half-closed file after a failed write (which crashed its exit cleanup)
  H5Pset_fapl_core(fapl, 1 << 20, 0);
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
  void* image = NULL;
  ssize_t len = -1;
  if (!rc && H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0) len = H5Fget_file_image(f, NULL, 0);
  if (!rc && len > 0 && (image = malloc((size_t)len)) && H5Fget_file_image(f, image, (size_t)len) != len) len = -1;
  if (!rc && (len <= 0 || !image)) {
    snprintf(err, errlen, "%s: cannot build the file image (out of memory)", path);
    rc = CKPT_EIO;
  }
  if (H5Fclose(f) < 0 && !rc) {  // in memory: nothing is left open on disk either way
    snprintf(err, errlen, "%s: close failed", tmp);
    rc = CKPT_EIO;
  }
  if (!rc) {  // the image goes to disk through write(2): a full disk or a size limit is errno, not an HDF5 state
    fix_superblock_checksum((uint8_t*)image, (size_t)len);
    if (nn_export_write_atomic(path, image, (size_t)len, err, errlen)) rc = CKPT_EIO;
  }
  free(image);
  return rc;
}

// ---- validation ----
static int name_ends(const char* name, const char* tail) {
  size_t n = strlen(name), k = strlen(tail);
  return n >= k && !strcmp(name + n - k, tail);
}

static double elem(const CkTensor* t, int64_t i) {
  switch (t->dtype) {
    case CK_F32: return ((const float*)t->data)[i];
    case CK_F64: return ((const double*)t->data)[i];
    case CK_I64: return (double)((const int64_t*)t->data)[i];
    case CK_I32: return ((const int32_t*)t->data)[i];
    case CK_U8: return ((const uint8_t*)t->data)[i];
  }
  return 0;
}

int ckpt_validate(const char* path, const CkTensor* t, int n, char* err, size_t errlen) {
  for (int i = 0; i < n; i++) {
    const char* nm = t[i].name;
    int is_float = t[i].dtype == CK_F32 || t[i].dtype == CK_F64;
    // integers that are not bit patterns (RNG states, hashes) count things: never negative
    int nonneg = name_ends(nm, "/v") || name_ends(nm, "/count") || name_ends(nm, "/m2") ||
                 (!is_float && !strstr(nm, "rng") && !strstr(nm, "hash"));
    double hi = !strcmp(nm, "trainer/iteration") ? CKPT_MAX_ITERATION : INFINITY;
    int64_t cnt = ckpt_count(&t[i]);
    for (int64_t k = 0; k < cnt; k++) {
      double x = elem(&t[i], k);
      const char* why = NULL;
      if (is_float && !isfinite(x)) why = "is not finite";
      else if (nonneg && x < 0) why = "is negative";
      else if (x > hi) why = "is out of range";
      if (why) {
        snprintf(err, errlen, "%s: dataset '%s': element %lld (%.9g) %s", path, nm, (long long)k, x, why);
        return CKPT_EVALUE;
      }
    }
  }
  return CKPT_OK;
}

int ckpt_read_valid(const char* path, CkTensor* t, int n, char* err, size_t errlen) {
  int rc = ckpt_read(path, t, n, err, errlen);
  return rc ? rc : ckpt_validate(path, t, n, err, errlen);
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
