// algo_ckpt: HDF5 checkpoint round trip (dtypes, shapes, attributes), dataset comparison, and rejection of a
// missing dataset, a wrong shape or type, a truncated file and a flipped byte, each with a message that names
// the file and the dataset; ckpt_validate's refusals (non-finite, negative, out of range) and a failed write.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ckpt.h"
#include "tests/test.h"

enum { NP = 1000 };
static float params[NP];
static double stats[3] = {1.0, 2.5, -3.25};
static int64_t step = 42;
static int32_t counts[4][3];
static uint8_t flags[5] = {1, 0, 1, 1, 0};

static int fill(CkTensor* t, float* p, double* s, int64_t* st, int32_t* c, uint8_t* f) {
  int n = 0;
  n = ckpt_add(t, n, 8, "algo/params", CK_F32, p, NP, 0);
  n = ckpt_add(t, n, 8, "algo/norm/stats", CK_F64, s, 3, 0);
  n = ckpt_add(t, n, 8, "trainer/iteration", CK_I64, st, 1, 0);
  n = ckpt_add(t, n, 8, "env/counts", CK_I32, c, 4, 3);
  n = ckpt_add(t, n, 8, "env/flags", CK_U8, f, 5, 0);
  return n;
}

static long find_bytes(const char* path, const void* pat, size_t n) {
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = (char*)malloc((size_t)len);
  long pos = -1;
  if (fread(buf, 1, (size_t)len, f) == (size_t)len) {
    void* hit = memmem(buf, (size_t)len, pat, n);
    if (hit) pos = (long)((char*)hit - buf);
  }
  free(buf);
  fclose(f);
  return pos;
}

static void copy_file(const char* a, const char* b, long truncate_to, long flip_at) {
  FILE* f = fopen(a, "rb");
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = (char*)malloc((size_t)len);
  if (fread(buf, 1, (size_t)len, f) != (size_t)len) len = 0;
  fclose(f);
  if (flip_at >= 0 && flip_at < len) buf[flip_at] ^= 0x10;
  if (truncate_to >= 0 && truncate_to < len) len = truncate_to;
  f = fopen(b, "wb");
  fwrite(buf, 1, (size_t)len, f);
  fclose(f);
  free(buf);
}

static void expect_fail(const char* label, const char* path, CkTensor* t, int n, int code, const char* needle) {
  char err[1024] = "";
  int rc = ckpt_read(path, t, n, err, sizeof(err));
  TEST_CHECK(rc != 0, "%s: read succeeded", label);
  if (code) TEST_CHECK(rc == code, "%s: code %d, expected %d (%s)", label, rc, code, err);
  TEST_CHECK(strstr(err, path) != NULL, "%s: message '%s' does not name the file", label, err);
  if (needle) TEST_CHECK(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", label, err, needle);
  printf("  %-16s %s\n", label, err);
}

int main(void) {
  char dir[] = "/tmp/algo_ckpt_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char a[600], b[600], bad[600], err[1024] = "", report[4096];
  snprintf(a, sizeof(a), "%s/ckpt_000001.h5", dir);
  snprintf(b, sizeof(b), "%s/ckpt_000002.h5", dir);
  snprintf(bad, sizeof(bad), "%s/bad.h5", dir);
  for (int i = 0; i < NP; i++) params[i] = 1234.5f + (float)i;
  for (int i = 0; i < 12; i++) counts[i / 3][i % 3] = i * 7 - 3;

  CkTensor t[8];
  int n = fill(t, params, stats, &step, &counts[0][0], flags);
  CkAttr attrs[2] = {{"created", "2026-01-01T00:00:00Z"}, {"host", "a"}};
  TEST_CHECK(ckpt_write(a, t, n, attrs, 2, err, sizeof(err)) == 0, "write: %s", err);
  TEST_CHECK(access(a, F_OK) == 0, "file exists");
  char tmp[700];
  snprintf(tmp, sizeof(tmp), "%s.tmp", a);
  TEST_CHECK(access(tmp, F_OK) != 0, "temporary file left behind");

  // round trip
  float p2[NP];
  double s2[3];
  int64_t st2;
  int32_t c2[12];
  uint8_t f2[5];
  CkTensor r[8];
  int m = fill(r, p2, s2, &st2, c2, f2);
  TEST_CHECK(ckpt_read(a, r, m, err, sizeof(err)) == 0, "read: %s", err);
  TEST_CHECK(!memcmp(p2, params, sizeof(params)) && !memcmp(s2, stats, sizeof(stats)) && st2 == step &&
                 !memcmp(c2, counts, sizeof(counts)) && !memcmp(f2, flags, sizeof(flags)),
             "round trip values");
  char host[64] = "";
  TEST_CHECK(ckpt_read_attr(a, "host", host, sizeof(host)) == 0 && !strcmp(host, "a"), "attribute '%s'", host);

  // same datasets, different attributes: compare says equal; a changed value is reported by name
  CkAttr attrs_b[2] = {{"created", "2030-12-31T23:59:59Z"}, {"host", "another-host"}};
  TEST_CHECK(ckpt_write(b, t, n, attrs_b, 2, err, sizeof(err)) == 0, "write b: %s", err);
  int diff = ckpt_compare(a, b, report, sizeof(report));
  TEST_CHECK(diff == 0, "identical datasets compare unequal: %s", report);
  stats[1] += 1e-12;
  TEST_CHECK(ckpt_write(b, t, n, attrs_b, 2, err, sizeof(err)) == 0, "write b: %s", err);
  diff = ckpt_compare(a, b, report, sizeof(report));
  TEST_CHECK(diff == 1 && strstr(report, "algo/norm/stats"), "changed dataset not found: %d %s", diff, report);
  stats[1] -= 1e-12;

  // missing dataset, wrong shape, wrong type
  CkTensor extra[9];
  memcpy(extra, r, sizeof(CkTensor) * (size_t)m);
  double zz[2];
  int me = ckpt_add(extra, m, 9, "algo/missing", CK_F64, zz, 2, 0);
  expect_fail("missing", a, extra, me, CKPT_EMISSING, "dataset 'algo/missing': missing");
  CkTensor shp[8];
  memcpy(shp, r, sizeof(shp));
  shp[3].dims[0] = 3, shp[3].dims[1] = 4;
  expect_fail("wrong shape", a, shp, m, CKPT_ESHAPE, "dataset 'env/counts': shape (4, 3), expected (3, 4)");
  memcpy(shp, r, sizeof(shp));
  shp[0].dims[0] = NP + 1;
  expect_fail("wrong length", a, shp, m, CKPT_ESHAPE, "dataset 'algo/params'");
  memcpy(shp, r, sizeof(shp));
  shp[1].dtype = CK_I64;
  expect_fail("wrong type", a, shp, m, CKPT_ESHAPE, "dataset 'algo/norm/stats'");

  // truncated file (at several lengths), flipped byte inside the parameters, garbage, missing file
  FILE* fa = fopen(a, "rb");
  fseek(fa, 0, SEEK_END);
  long len = ftell(fa);
  fclose(fa);
  long cuts[4] = {len / 2, len - 1, 100, 0};
  for (int i = 0; i < 4; i++) {
    copy_file(a, bad, cuts[i], -1);
    expect_fail("truncated", bad, r, m, 0, NULL);
  }
  float pat[4] = {1234.5f + 500, 1234.5f + 501, 1234.5f + 502, 1234.5f + 503};
  long at = find_bytes(a, pat, sizeof(pat));
  TEST_CHECK(at > 0, "parameter bytes not found in the file");
  copy_file(a, bad, -1, at + 5);
  expect_fail("flipped byte", bad, r, m, CKPT_EFORMAT, "dataset 'algo/params'");
  FILE* g = fopen(bad, "wb");
  fputs("not an hdf5 file at all", g);
  fclose(g);
  expect_fail("garbage", bad, r, m, CKPT_EFORMAT, "not a valid HDF5");
  char nofile[700];
  snprintf(nofile, sizeof(nofile), "%s/none.h5", dir);
  expect_fail("no file", nofile, r, m, CKPT_EFORMAT, NULL);
  TEST_CHECK(ckpt_compare(a, bad, report, sizeof(report)) < 0, "compare with a bad file must fail");

  // the one validation of every reader: which values it refuses, and that its message names them
  {
    float w[3] = {1, 2, 3}, v[2] = {0, 1};
    double cnt = 4, m2[2] = {0, 2};
    int64_t it = 7, rng = -9;  // an RNG state may have any bit pattern
    int32_t len[2] = {0, 3};
    CkTensor u[6];
    int k = 0;
    k = ckpt_add(u, k, 6, "shac/actor", CK_F32, w, 3, 0);
    k = ckpt_add(u, k, 6, "shac/adam_actor/v", CK_F32, v, 2, 0);
    k = ckpt_add(u, k, 6, "shac/obs_norm/count", CK_F64, &cnt, 1, 0);
    k = ckpt_add(u, k, 6, "shac/obs_norm/m2", CK_F64, m2, 2, 0);
    k = ckpt_add(u, k, 6, "trainer/iteration", CK_I64, &it, 1, 0);
    k = ckpt_add(u, k, 6, "env/recent_length", CK_I32, len, 2, 0);
    TEST_CHECK(ckpt_validate("f.h5", u, k, err, sizeof(err)) == 0, "valid state refused: %s", err);
    CkTensor r1;
    ckpt_add(&r1, 0, 1, "ppo/rng", CK_I64, &rng, 1, 0);
    TEST_CHECK(ckpt_validate("f.h5", &r1, 1, err, sizeof(err)) == 0, "a negative RNG state refused: %s", err);
    struct {
      void* at;
      int f64, i64, i32;
      double bad;
      const char* needle;
    } cases[] = {{&w[1], 0, 0, 0, NAN, "dataset 'shac/actor': element 1 (nan) is not finite"},
                 {&w[2], 0, 0, 0, -INFINITY, "dataset 'shac/actor': element 2 (-inf) is not finite"},
                 {&v[1], 0, 0, 0, -1e-30, "dataset 'shac/adam_actor/v': element 1 (-1e-30) is negative"},
                 {&cnt, 1, 0, 0, -1, "dataset 'shac/obs_norm/count': element 0 (-1) is negative"},
                 {&m2[0], 1, 0, 0, INFINITY, "dataset 'shac/obs_norm/m2': element 0 (inf) is not finite"},
                 {&it, 0, 1, 0, -5, "dataset 'trainer/iteration': element 0 (-5) is negative"},
                 {&it, 0, 1, 0, 1e12, "dataset 'trainer/iteration': element 0 (1e+12) is out of range"},
                 {&len[0], 0, 0, 1, -2, "dataset 'env/recent_length': element 0 (-2) is negative"}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
      size_t size = cases[c].f64 || cases[c].i64 ? 8 : 4;
      char keep[8];
      memcpy(keep, cases[c].at, size);
      if (cases[c].f64) *(double*)cases[c].at = cases[c].bad;
      else if (cases[c].i64) *(int64_t*)cases[c].at = (int64_t)cases[c].bad;
      else if (cases[c].i32) *(int32_t*)cases[c].at = (int32_t)cases[c].bad;
      else *(float*)cases[c].at = (float)cases[c].bad;
      int rc = ckpt_validate("f.h5", u, k, err, sizeof(err));
      TEST_CHECK(rc == CKPT_EVALUE && strstr(err, "f.h5: ") && strstr(err, cases[c].needle),
                 "case %zu: code %d, message '%s', expected '%s'", c, rc, err, cases[c].needle);
      memcpy(cases[c].at, keep, size);
    }
  }
  // a write that cannot complete (no such directory) is an error naming the file; nothing is left behind
  {
    char nodir[700];
    snprintf(nodir, sizeof(nodir), "%s/missing/ckpt_000001.h5", dir);
    TEST_CHECK(ckpt_write(nodir, t, n, attrs, 2, err, sizeof(err)) == CKPT_EIO && strstr(err, "missing/ckpt_000001.h5"),
               "write into a missing directory: '%s'", err);
  }

  char cmd[700];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return test_report("algo_ckpt");
}
