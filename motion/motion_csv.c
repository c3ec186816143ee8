// motion_csv.c: reading clips (gzip'd CSV through zlib, which also reads plain files) and clip directories.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "motion/motion.h"

static void base_name(const char* path, char* out, size_t n) {
  const char* s = strrchr(path, '/');
  snprintf(out, n, "%s", s ? s + 1 : path);
}

void motion_clip_free(MotionClip* c) {
  if (!c) return;
  free(c->qpos);
  memset(c, 0, sizeof(*c));
}

void motion_set_free(MotionSet* s) {
  if (!s) return;
  for (int i = 0; i < s->nclip; i++) motion_clip_free(&s->clip[i]);
  free(s->clip);
  memset(s, 0, sizeof(*s));
}

// Parses one row of exactly n comma-separated finite numbers into v; returns 0 or writes why into what.
static int parse_row(char* line, int n, double* v, char* what, size_t whatlen) {
  char* p = line;
  for (int k = 0; k < n; k++) {
    char* end = NULL;
    errno = 0;
    double x = strtod(p, &end);
    if (end == p) {
      char field[32];
      size_t len = strcspn(p, ",");
      snprintf(field, sizeof(field), "%.*s", (int)(len < 24 ? len : 24), p);
      if (*p == '\0')
        snprintf(what, whatlen, "expected %d columns, found %d", n, k);
      else
        snprintf(what, whatlen, "column %d: not a number ('%s')", k + 1, field);
      return -1;
    }
    if (!isfinite(x)) {
      snprintf(what, whatlen, "column %d: non-finite value", k + 1);
      return -1;
    }
    while (*end == ' ' || *end == '\t') end++;
    if (k < n - 1) {
      if (*end != ',') {
        if (*end == '\0')
          snprintf(what, whatlen, "expected %d columns, found %d", n, k + 1);
        else
          snprintf(what, whatlen, "column %d: not a number", k + 1);
        return -1;
      }
      p = end + 1;
    } else if (*end != '\0') {
      if (*end == ',') {
        int extra = 0;
        for (char* q = end; *q; q++) extra += *q == ',';
        snprintf(what, whatlen, "expected %d columns, found %d", n, n + extra);
      } else {
        snprintf(what, whatlen, "column %d: not a number", k + 1);
      }
      return -1;
    }
    v[k] = x;
  }
  return 0;
}

int motion_read_clip(const char* path, int njoint, double fps, MotionClip* out, char* err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  if (njoint < 0 || !(fps > 0)) {
    snprintf(err, errlen, "%s: bad arguments (njoint %d, fps %g)", path, njoint, fps);
    return MOTION_ERR_ARG;
  }
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    return MOTION_ERR_IO;
  }
  const int ncol = 7 + njoint, nq = 7 + njoint;
  size_t cap = 1024, len = 0;
  double* q = (double*)malloc(cap * nq * sizeof(double));
  double* row = (double*)malloc(ncol * sizeof(double));
  size_t linecap = 1 << 16;
  char* line = (char*)malloc(linecap);
  int rc = MOTION_OK, lineno = 0, blank_at = 0;
  if (!q || !row || !line) rc = MOTION_ERR_ALLOC;
  while (rc == MOTION_OK && gzgets(f, line, (int)linecap)) {
    lineno++;
    size_t n = strlen(line);
    if (n == linecap - 1 && line[n - 1] != '\n') {
      snprintf(err, errlen, "%s:%d: line longer than %zu characters", path, lineno, linecap - 2);
      rc = MOTION_ERR_FORMAT;
      break;
    }
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (n == 0) {  // blank lines are allowed only at the end of the file
      if (!blank_at) blank_at = lineno;
      continue;
    }
    if (blank_at) {
      snprintf(err, errlen, "%s:%d: empty line inside the data", path, blank_at);
      rc = MOTION_ERR_FORMAT;
      break;
    }
    char what[128];
    if (parse_row(line, ncol, row, what, sizeof(what))) {
      snprintf(err, errlen, "%s:%d: %s", path, lineno, what);
      rc = MOTION_ERR_FORMAT;
      break;
    }
    // quaternion x, y, z, w -> w, x, y, z, normalised
    double qx = row[3], qy = row[4], qz = row[5], qw = row[6];
    double norm = sqrt(qw * qw + qx * qx + qy * qy + qz * qz);
    if (!(norm > 1e-9)) {
      snprintf(err, errlen, "%s:%d: root quaternion has zero norm", path, lineno);
      rc = MOTION_ERR_FORMAT;
      break;
    }
    if (len == cap) {
      double* grown = (double*)realloc(q, 2 * cap * nq * sizeof(double));
      if (!grown) {
        rc = MOTION_ERR_ALLOC;
        break;
      }
      q = grown;
      cap *= 2;
    }
    double* o = q + len * nq;
    o[0] = row[0], o[1] = row[1], o[2] = row[2];
    o[3] = qw / norm, o[4] = qx / norm, o[5] = qy / norm, o[6] = qz / norm;
    memcpy(o + 7, row + 7, njoint * sizeof(double));
    len++;
  }
  if (rc == MOTION_OK && !gzeof(f)) {
    int zerr = 0;
    const char* zmsg = gzerror(f, &zerr);
    snprintf(err, errlen, "%s:%d: read error (%s)", path, lineno + 1, zerr ? zmsg : "unknown");
    rc = MOTION_ERR_IO;
  }
  if (rc == MOTION_OK && len == 0) {
    snprintf(err, errlen, "%s: no frames", path);
    rc = MOTION_ERR_FORMAT;
  }
  if (rc == MOTION_ERR_ALLOC) snprintf(err, errlen, "%s: out of memory", path);
  gzclose(f);
  free(row);
  free(line);
  if (rc) {
    free(q);
    return rc;
  }
  base_name(path, out->name, sizeof(out->name));
  out->nframe = (int)len;
  out->nq = nq;
  out->fps = fps;
  out->qpos = q;
  return MOTION_OK;
}

int motion_read_dir(const char* dir, int njoint, double fps, MotionSet* out, char* err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  char mpath[4096];
  snprintf(mpath, sizeof(mpath), "%s/MANIFEST.tsv", dir);
  FILE* f = fopen(mpath, "r");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open (%s)", mpath, strerror(errno));
    return MOTION_ERR_IO;
  }
  char line[4096];
  int lineno = 0, rc = MOTION_OK, cap = 0;
  while (fgets(line, sizeof(line), f)) {
    lineno++;
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (lineno == 1 || n == 0) continue;  // header
    char* tab = strchr(line, '\t');
    char* end = NULL;
    long frames = tab ? strtol(tab + 1, &end, 10) : -1;
    if (!tab || tab == line || end == tab + 1 || (*end != '\t' && *end != '\0') || frames < 1) {
      snprintf(err, errlen, "%s:%d: expected 'file<TAB>frames...'", mpath, lineno);
      rc = MOTION_ERR_FORMAT;
      break;
    }
    *tab = '\0';
    if (out->nclip == cap) {
      cap = cap ? 2 * cap : 64;
      MotionClip* grown = (MotionClip*)realloc(out->clip, cap * sizeof(MotionClip));
      if (!grown) {
        snprintf(err, errlen, "%s: out of memory", mpath);
        rc = MOTION_ERR_ALLOC;
        break;
      }
      out->clip = grown;
    }
    char path[4096 + 300];
    snprintf(path, sizeof(path), "%s/%s.gz", dir, line);
    FILE* probe = fopen(path, "rb");
    if (probe)
      fclose(probe);
    else
      snprintf(path, sizeof(path), "%s/%s", dir, line);
    MotionClip* c = &out->clip[out->nclip];
    rc = motion_read_clip(path, njoint, fps, c, err, errlen);
    if (rc) break;
    out->nclip++;
    snprintf(c->name, sizeof(c->name), "%s", line);
    if (c->nframe != frames) {
      snprintf(err, errlen, "%s: %d frames, but %s:%d lists %ld", path, c->nframe, mpath, lineno, frames);
      rc = MOTION_ERR_FORMAT;
      break;
    }
  }
  fclose(f);
  if (rc == MOTION_OK && out->nclip == 0) {
    snprintf(err, errlen, "%s: lists no clips", mpath);
    rc = MOTION_ERR_FORMAT;
  }
  if (rc) motion_set_free(out);
  return rc;
}
