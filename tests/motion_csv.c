// motion_csv: the clip reader on small clips written here (gzip'd through zlib and plain, CRLF): MuJoCo's qpos
// layout, resampling and slerp against an independent construction from MuJoCo's quaternion functions, the
// velocities against mj_differentiatePos (float64, <= 1e-12), every malformed input's message, and a clip
// directory read in manifest order with its frame counts checked.
#define _POSIX_C_SOURCE 200809L
#include <mujoco/mujoco.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "motion/motion.h"
#include "tests/test.h"

#define NJ 3
#define NQ (7 + NJ)
#define NF 7
#define PI 3.14159265358979323846

static char tmpdir[256];

static double urand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return (*s >> 8) * (1.0 / 16777216.0);
}

// writes text to tmpdir/name (gzip'd when gz) and returns the path
static const char* write_file(const char* name, const char* text, int gz) {
  static char path[512];
  snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
  if (gz) {
    gzFile f = gzopen(path, "wb");
    gzputs(f, text);
    gzclose(f);
  } else {
    FILE* f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
  }
  return path;
}

// a clip of NF rows in the file layout (quaternion x, y, z, w unnormalised, some with flipped sign)
static void make_rows(double rows[NF][NQ], unsigned seed) {
  unsigned s = seed;
  for (int k = 0; k < NF; k++) {
    for (int j = 0; j < NQ; j++) rows[k][j] = 2 * urand(&s) - 1;
    double scale = 0.5 + 1.5 * urand(&s);
    for (int j = 3; j < 7; j++) rows[k][j] *= scale;
  }
}

static void rows_text(double rows[NF][NQ], int n, const char* eol, char* out, size_t outlen) {
  size_t len = 0;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < NQ; j++)
      len += snprintf(out + len, outlen - len, "%.17g%s", rows[k][j], j < NQ - 1 ? "," : eol);
}

static void expect_error(const char* label, const char* text, const char* want1, const char* want2) {
  char path[512], err[1024] = "";
  snprintf(path, sizeof(path), "%s", write_file("bad.csv.gz", text, 1));
  MotionClip c;
  int rc = motion_read_clip(path, NJ, 30, &c, err, sizeof(err));
  TEST_CHECK(rc < 0, "%s: accepted", label);
  TEST_CHECK(strstr(err, path) && strstr(err, want1) && (!want2 || strstr(err, want2)),
             "%s: message '%s' lacks '%s' / '%s'", label, err, want1, want2 ? want2 : "");
  printf("%-22s -> %s\n", label, err);
}

int main(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/adj_motion_XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  double rows[NF][NQ];
  make_rows(rows, 7);
  rows[3][3] = -rows[2][3], rows[3][4] = -rows[2][4], rows[3][5] = -rows[2][5], rows[3][6] = -rows[2][6];
  rows[3][6] += 0.05;  // nearly the negated previous quaternion: slerp must take the short way
  static char text[65536];
  char err[1024];

  // ---- layout: gzip'd LF file and plain CRLF file give the same qpos rows ----
  rows_text(rows, NF, "\n", text, sizeof(text));
  MotionClip c, c2;
  int rc = motion_read_clip(write_file("clip.csv.gz", text, 1), NJ, 30, &c, err, sizeof(err));
  TEST_CHECK(rc == 0 && c.nframe == NF && c.nq == NQ && c.fps == 30, "read: rc %d %s", rc, err);
  if (rc) return test_report("motion_csv");
  TEST_CHECK(!strcmp(c.name, "clip.csv.gz"), "name '%s'", c.name);
  double want[NF * NQ];
  for (int k = 0; k < NF; k++) {
    const double* r = rows[k];
    double n = sqrt(r[3] * r[3] + r[4] * r[4] + r[5] * r[5] + r[6] * r[6]);
    double* w = want + k * NQ;
    w[0] = r[0], w[1] = r[1], w[2] = r[2], w[3] = r[6] / n, w[4] = r[3] / n, w[5] = r[4] / n, w[6] = r[5] / n;
    for (int j = 7; j < NQ; j++) w[j] = r[j];
  }
  test_close("qpos layout", c.qpos, want, NF * NQ, 1e-15, 1e-15);
  rows_text(rows, NF, "\r\n", text, sizeof(text));
  strcat(text, "\r\n\n");  // trailing blank lines are allowed
  rc = motion_read_clip(write_file("clip_crlf.csv", text, 0), NJ, 30, &c2, err, sizeof(err));
  TEST_CHECK(rc == 0 && c2.nframe == NF, "plain CRLF: rc %d %s", rc, err);
  if (!rc) TEST_CHECK(!memcmp(c.qpos, c2.qpos, sizeof(want)), "plain CRLF file differs from the gzip'd one");
  motion_clip_free(&c2);

  // ---- resampling 30 -> 50 fps and 30 -> 10 fps against slerp built from mju_subQuat / mju_quatIntegrate ----
  const double rates[2] = {50, 10};
  const int nexpect[2] = {11, 3};  // 0.2 s: frames at k/50 for k <= 10, k/10 for k <= 2
  for (int r = 0; r < 2; r++) {
    MotionClip o;
    rc = motion_resample(&c, rates[r], &o, err, sizeof(err));
    TEST_CHECK(rc == 0 && o.nframe == nexpect[r] && o.fps == rates[r], "resample %g: rc %d n %d", rates[r], rc,
               o.nframe);
    if (rc) continue;
    double* ref = (double*)malloc(sizeof(double) * o.nframe * NQ);
    for (int k = 0; k < o.nframe; k++) {
      double t = k / rates[r];
      int i = 0;
      while (i < NF - 2 && (i + 1) / 30.0 <= t) i++;
      double t0 = i / 30.0, t1 = (i + 1) / 30.0, a = (t - t0) / (t1 - t0);
      const double *q0 = want + i * NQ, *q1 = q0 + NQ;
      double* out = ref + k * NQ;
      for (int j = 0; j < NQ; j++) out[j] = (q0[j] * (t1 - t) + q1[j] * (t - t0)) / (t1 - t0);
      double b[4], v[3];
      mju_copy4(b, q1 + 3);
      if (mju_dot(b, q0 + 3, 4) < 0) mju_scl(b, b, -1, 4);
      mju_subQuat(v, b, q0 + 3);  // q0 * quat(v) = b
      mju_copy4(out + 3, q0 + 3);
      mju_quatIntegrate(out + 3, v, a);
    }
    char label[64];
    snprintf(label, sizeof(label), "resample to %g fps", rates[r]);
    test_close(label, o.qpos, ref, o.nframe * NQ, 1e-12, 1e-12);
    free(ref);
    motion_clip_free(&o);
  }
  // slerp on its own: halfway between identity and a 120-degree turn about z is the 60-degree turn
  {
    double q0[4] = {1, 0, 0, 0}, q1[4] = {cos(PI / 3), 0, 0, sin(PI / 3)}, h[4];
    double ref[4] = {cos(PI / 6), 0, 0, sin(PI / 6)}, q1n[4] = {-q1[0], 0, 0, -q1[3]};
    motion_slerp(q0, q1, 0.5, h);
    test_close("slerp halfway", h, ref, 4, 1e-15, 1e-15);
    motion_slerp(q0, q1n, 0.5, h);  // the same rotation with the opposite sign: same answer
    test_close("slerp sign", h, ref, 4, 1e-15, 1e-15);
  }

  // ---- velocities against mj_differentiatePos on a free body carrying NJ hinges ----
  const char* xml =
      "<mujoco><worldbody><body><freejoint/><geom size='.1'/>"
      "<body><joint type='hinge' axis='1 0 0'/><geom size='.1'/>"
      "<body><joint type='hinge' axis='0 1 0'/><geom size='.1'/>"
      "<body><joint type='hinge' axis='0 0 1'/><geom size='.1'/>"
      "</body></body></body></body></worldbody></mujoco>";
  char merr[1000] = "";
  mjModel* m = mj_loadXML(write_file("chain.xml", xml, 0), NULL, merr, sizeof(merr));
  TEST_CHECK(m && m->nq == NQ && m->nv == NQ - 1, "model: %s", merr);
  if (m) {
    double qvel[NF * (NQ - 1)], ref[NF * (NQ - 1)];
    motion_qvel(&c, qvel);
    for (int k = 0; k < NF; k++) {
      int a = k ? k - 1 : 0, b = k < NF - 1 ? k + 1 : NF - 1;
      mj_differentiatePos(m, ref + k * (NQ - 1), (b - a) / 30.0, c.qpos + a * NQ, c.qpos + b * NQ);
    }
    test_close("qvel vs mj_differentiatePos", qvel, ref, NF * (NQ - 1), 1e-12, 1e-12);
    mj_deleteModel(m);
  }

  // ---- malformed input: each message names the file and the line ----
  MotionClip bad;
  char missing[600];
  snprintf(missing, sizeof(missing), "%s/none.csv.gz", tmpdir);
  rc = motion_read_clip(missing, NJ, 30, &bad, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_IO && strstr(err, missing) && strstr(err, "cannot open"), "missing: %d '%s'", rc, err);
  printf("%-22s -> %s\n", "missing file", err);
  char good[2048], line[4400];
  rows_text(rows, 2, "\n", good, sizeof(good));
  snprintf(line, sizeof(line), "%s1,2,3,0,0,0,1,4,5\n", good);
  expect_error("too few columns", line, ":3: ", "expected 10 columns, found 9");
  snprintf(line, sizeof(line), "%s1,2,3,0,0,0,1,4,5,6,7\n", good);
  expect_error("too many columns", line, ":3: ", "expected 10 columns, found 11");
  snprintf(line, sizeof(line), "%s1,2,3,0,abc,0,1,4,5,6\n", good);
  expect_error("non-numeric field", line, ":3: ", "column 5: not a number ('abc')");
  snprintf(line, sizeof(line), "%s1,2,3,0,0,0,1,4,5,6x\n", good);
  expect_error("trailing garbage", line, ":3: ", "column 10: not a number");
  snprintf(line, sizeof(line), "%s1,2,3,0,,0,1,4,5,6\n", good);
  expect_error("empty field", line, ":3: ", "column 5: not a number");
  snprintf(line, sizeof(line), "1,2,nan,0,0,0,1,4,5,6\n%s", good);
  expect_error("NaN", line, ":1: ", "column 3: non-finite");
  snprintf(line, sizeof(line), "%s1,2,3,0,0,0,1,4,inf,6\n", good);
  expect_error("infinity", line, ":3: ", "column 9: non-finite");
  snprintf(line, sizeof(line), "%s1,2,3,0,0,0,0,4,5,6\n", good);
  expect_error("zero quaternion", line, ":3: ", "zero norm");
  snprintf(line, sizeof(line), "%s\n%s", good, good);
  expect_error("blank line inside", line, ":3: ", "empty line");
  expect_error("empty file", "", "no frames", NULL);

  // ---- a directory in manifest order (not name order), frame counts checked ----
  char dir[400], mpath[600];
  snprintf(dir, sizeof(dir), "%s", tmpdir);
  rows_text(rows, 2, "\n", text, sizeof(text));
  write_file("b_clip.csv.gz", text, 1);
  rows_text(rows, NF, "\n", text, sizeof(text));
  write_file("a_clip.csv", text, 0);  // a plain file is found when no .gz exists
  write_file("MANIFEST.tsv", "file\tframes\tduration\nb_clip.csv\t2\t0.033\na_clip.csv\t7\t0.2\n", 0);
  MotionSet set;
  rc = motion_read_dir(dir, NJ, 30, &set, err, sizeof(err));
  TEST_CHECK(rc == 0 && set.nclip == 2, "dir: rc %d %s", rc, err);
  if (!rc) {
    TEST_CHECK(!strcmp(set.clip[0].name, "b_clip.csv") && set.clip[0].nframe == 2 &&
                   !strcmp(set.clip[1].name, "a_clip.csv") && set.clip[1].nframe == NF,
               "dir order: %s %d, %s %d", set.clip[0].name, set.clip[0].nframe, set.clip[1].name,
               set.clip[1].nframe);
    TEST_CHECK(!memcmp(set.clip[1].qpos, c.qpos, sizeof(want)), "dir clip differs from the single read");
    motion_set_free(&set);
  }
  write_file("MANIFEST.tsv", "file\tframes\tduration\nb_clip.csv\t2\t0.033\na_clip.csv\t8\t0.2\n", 0);
  snprintf(mpath, sizeof(mpath), "%s/MANIFEST.tsv:3", tmpdir);
  rc = motion_read_dir(dir, NJ, 30, &set, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_FORMAT && strstr(err, "a_clip.csv: 7 frames") && strstr(err, mpath) &&
                 strstr(err, "lists 8"), "frame-count mismatch: %d '%s'", rc, err);
  printf("%-22s -> %s\n", "frame-count mismatch", err);
  write_file("MANIFEST.tsv", "file\tframes\nb_clip.csv\tmany\n", 0);
  snprintf(mpath, sizeof(mpath), "%s/MANIFEST.tsv:2", tmpdir);
  rc = motion_read_dir(dir, NJ, 30, &set, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_FORMAT && strstr(err, mpath), "bad manifest: %d '%s'", rc, err);
  printf("%-22s -> %s\n", "bad manifest", err);
  write_file("MANIFEST.tsv", "file\tframes\nb_clip.csv\t2\nmissing.csv\t5\n", 0);
  rc = motion_read_dir(dir, NJ, 30, &set, err, sizeof(err));
  TEST_CHECK(rc == MOTION_ERR_IO && strstr(err, "missing.csv") && strstr(err, "cannot open"), "missing clip: '%s'",
             err);
  printf("%-22s -> %s\n", "missing clip", err);

  motion_clip_free(&c);
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
  return test_report("motion_csv");
}
