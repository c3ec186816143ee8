// nn_tune_table.c: NN_CUDA_TUNE's table, its text parser and writer (format in nn_tune_table.h).
#define _POSIX_C_SOURCE 200809L
#include "nn/nn_tune_table.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_export.h"  // nn_export_write_atomic

#define NN_TUNE_MAX_LINE 1024
#define NN_TUNE_MAX_FILE (16u << 20)



void nn_tune_key_set_gpu(NnTuneKey* key, const char* name) {
  size_t i = 0;
  for (; name && name[i] && i < NN_TUNE_GPU_LEN - 1; i++) {
    char c = name[i];
    key->gpu[i] = (c == ' ' || c == '\t' || c == '=' || c == '\n' || c == '\r') ? '_' : c;
  }
  memset(key->gpu + i, 0, NN_TUNE_GPU_LEN - i);
}

int nn_tune_key_equal(const NnTuneKey* a, const NnTuneKey* b) {
  return !strncmp(a->gpu, b->gpu, NN_TUNE_GPU_LEN) && a->sms == b->sms && a->lt == b->lt && a->tf32 == b->tf32 &&
         a->ta == b->ta && a->tb == b->tb && a->m == b->m && a->n == b->n && a->k == b->k && a->lda == b->lda &&
         a->ldb == b->ldb && a->ldc == b->ldc && a->count == b->count && a->sa == b->sa && a->sb == b->sb &&
         a->sc == b->sc && a->bias == b->bias && a->splitk == b->splitk;
}

static int find_index(const NnTuneTable* t, const NnTuneKey* key) {
  for (int i = 0; i < t->n; i++)
    if (nn_tune_key_equal(&t->e[i].key, key)) return i;
  return -1;
}

const NnTuneEntry* nn_tune_table_find(const NnTuneTable* t, const NnTuneKey* key) {
  int i = find_index(t, key);
  return i < 0 ? NULL : &t->e[i];
}

int nn_tune_table_put(NnTuneTable* t, const NnTuneEntry* e) {
  int i = find_index(t, &e->key);
  if (i >= 0) {
    t->e[i] = *e;
    return NN_OK;
  }
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 32;
    NnTuneEntry* p = (NnTuneEntry*)realloc(t->e, sizeof(NnTuneEntry) * (size_t)cap);
    if (!p) return NN_ENOMEM;
    t->e = p, t->cap = cap;
  }
  t->e[t->n++] = *e;
  return NN_OK;
}

void nn_tune_table_free(NnTuneTable* t) {
  free(t->e);
  memset(t, 0, sizeof(*t));
}

int nn_tune_entry_check(const NnTuneEntry* e, char* err, size_t errlen) {
  const NnTuneKey* k = &e->key;
  const NnTuneAlgo* a = &e->algo;
  if (!k->gpu[0]) return nn_errorf(err, errlen, NN_EFORMAT, "empty gpu name");
  if (k->sms <= 0 || k->lt <= 0) return nn_errorf(err, errlen, NN_EFORMAT, "sms and lt must be positive");
  if (k->m <= 0 || k->n <= 0 || k->k <= 0 || k->count <= 0)
    return nn_errorf(err, errlen, NN_EFORMAT, "m, n, k and count must be positive");
  int ra = k->ta ? k->k : k->m, rb = k->tb ? k->n : k->k;
  if (k->lda < ra || k->ldb < rb || k->ldc < k->m)
    return nn_errorf(err, errlen, NN_EFORMAT, "leading dimension smaller than the rows (lda >= %d, ldb >= %d, ldc >= %d)", ra,
                rb, k->m);
  if (k->sa < 0 || k->sb < 0 || k->sc < 0) return nn_errorf(err, errlen, NN_EFORMAT, "negative batch stride");
  if (k->count == 1 && (k->sa || k->sb || k->sc)) return nn_errorf(err, errlen, NN_EFORMAT, "batch strides with count=1");
  if (a->id < 0 || a->tile < 0 || a->swizzle < 0 || a->custom < 0 || a->stages < 0 || a->inner < 0 || a->cluster < 0)
    return nn_errorf(err, errlen, NN_EFORMAT, "negative algorithm attribute");
  if (a->inner > 65535 || a->cluster > 65535) return nn_errorf(err, errlen, NN_EFORMAT, "inner/cluster out of range (16 bit)");
  // cuBLASLt reports SPLITK_NUM = -1 for kernels that do not take a split-K count (seen on the H200 for sm90
  // kernels, also among the heuristic's first choices in the default mode); such an entry is kept as the library gave it
  if (a->splitk_num < 1 && a->splitk_num != -1) return nn_errorf(err, errlen, NN_EFORMAT, "splitk must be -1 or >= 1");
  if (a->reduction == 1)
    return nn_errorf(err, errlen, NN_EFORMAT, "rscheme=1 (in-place split-K with atomics) is not deterministic; refused");
  if (a->reduction != 0 && a->reduction != 2 && a->reduction != 4)
    return nn_errorf(err, errlen, NN_EFORMAT, "rscheme must be 0, 2 or 4 (got %d)", a->reduction);
  if (!k->splitk && ((a->splitk_num != 1 && a->splitk_num != -1) || a->reduction != 0))
    return nn_errorf(err, errlen, NN_EFORMAT, "red=none allows only splitk=1 (or -1) rscheme=0");
  if (e->ws < 0 || e->ws > (1ll << 40)) return nn_errorf(err, errlen, NN_EFORMAT, "ws out of range");
  if (a->splitk_num > 1 && a->reduction == 0)
    return nn_errorf(err, errlen, NN_EFORMAT, "splitk=%d needs a reduction scheme (rscheme 2 or 4)", a->splitk_num);
  return NN_OK;
}

// ---- parser ----
enum { F_STR, F_INT, F_LL, F_PREC, F_OP, F_EPI, F_RED, F_DBL, F_CAND, F_RAW };
typedef struct {
  const char* name;
  int type, required;
  size_t off;  // into NnTuneEntry
} Field;

#define KOFF(f) (offsetof(NnTuneEntry, key) + offsetof(NnTuneKey, f))
#define AOFF(f) (offsetof(NnTuneEntry, algo) + offsetof(NnTuneAlgo, f))
static const Field FIELDS[] = {
    {"gpu", F_STR, 1, KOFF(gpu)},     {"sms", F_INT, 1, KOFF(sms)},     {"lt", F_INT, 1, KOFF(lt)},
    {"prec", F_PREC, 1, KOFF(tf32)},  {"op", F_OP, 1, 0},               {"m", F_INT, 1, KOFF(m)},
    {"n", F_INT, 1, KOFF(n)},         {"k", F_INT, 1, KOFF(k)},         {"lda", F_INT, 1, KOFF(lda)},
    {"ldb", F_INT, 1, KOFF(ldb)},     {"ldc", F_INT, 1, KOFF(ldc)},     {"count", F_INT, 1, KOFF(count)},
    {"sa", F_LL, 1, KOFF(sa)},        {"sb", F_LL, 1, KOFF(sb)},        {"sc", F_LL, 1, KOFF(sc)},
    {"epi", F_EPI, 1, KOFF(bias)},    {"red", F_RED, 1, KOFF(splitk)},  {"algo", F_INT, 1, AOFF(id)},
    {"tile", F_INT, 1, AOFF(tile)},   {"splitk", F_INT, 1, AOFF(splitk_num)}, {"rscheme", F_INT, 1, AOFF(reduction)},
    {"swizzle", F_INT, 1, AOFF(swizzle)}, {"custom", F_INT, 1, AOFF(custom)}, {"stages", F_INT, 1, AOFF(stages)},
    {"inner", F_INT, 1, AOFF(inner)}, {"cluster", F_INT, 1, AOFF(cluster)}, {"ws", F_LL, 1, offsetof(NnTuneEntry, ws)},
    {"raw", F_RAW, 1, offsetof(NnTuneEntry, raw)}, {"ms", F_DBL, 0, offsetof(NnTuneEntry, ms)},
    {"ms0", F_DBL, 0, offsetof(NnTuneEntry, ms0)}, {"cand", F_CAND, 0, 0},
};
#define NFIELDS ((int)(sizeof(FIELDS) / sizeof(FIELDS[0])))

static int parse_ll(const char* s, long long lo, long long hi, long long* v) {
  if (!*s) return 0;
  errno = 0;
  char* end;
  long long x = strtoll(s, &end, 10);
  if (errno || *end || x < lo || x > hi) return 0;
  *v = x;
  return 1;
}

// one entry line (NUL-terminated, modified in place); msg gets the reason on failure
static int parse_entry(char* line, NnTuneEntry* e, char* msg, size_t ml) {
  int seen[NFIELDS];
  memset(seen, 0, sizeof(seen));
  memset(e, 0, sizeof(*e));
  char* save = NULL;
  for (char* tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
    char* eq = strchr(tok, '=');
    if (!eq || eq == tok) return nn_errorf(msg, ml, NN_EFORMAT, "expected key=value, got '%s'", tok);
    *eq = 0;
    const char* val = eq + 1;
    int f = 0;
    while (f < NFIELDS && strcmp(FIELDS[f].name, tok)) f++;
    if (f == NFIELDS) return nn_errorf(msg, ml, NN_EFORMAT, "unknown key '%s'", tok);
    if (seen[f]) return nn_errorf(msg, ml, NN_EFORMAT, "key '%s' given twice", tok);
    seen[f] = 1;
    char* dst = (char*)e + FIELDS[f].off;
    long long v;
    switch (FIELDS[f].type) {
      case F_STR:
        if (!*val || strlen(val) >= NN_TUNE_GPU_LEN)
          return nn_errorf(msg, ml, NN_EFORMAT, "'%s' must have 1 to %d characters", tok, NN_TUNE_GPU_LEN - 1);
        nn_tune_key_set_gpu(&e->key, val);
        break;
      case F_INT:
        if (!parse_ll(val, INT_MIN, INT_MAX, &v)) return nn_errorf(msg, ml, NN_EFORMAT, "bad integer for '%s': '%s'", tok, val);
        *(int*)dst = (int)v;
        break;
      case F_LL:
        if (!parse_ll(val, LLONG_MIN, LLONG_MAX, &v))
          return nn_errorf(msg, ml, NN_EFORMAT, "bad integer for '%s': '%s'", tok, val);
        *(long long*)dst = v;
        break;
      case F_PREC:
        if (strcmp(val, "fp32") && strcmp(val, "tf32")) return nn_errorf(msg, ml, NN_EFORMAT, "prec must be fp32 or tf32, got '%s'", val);
        *(int*)dst = !strcmp(val, "tf32");
        break;
      case F_OP:
        if (strlen(val) != 2 || (val[0] != 'N' && val[0] != 'T') || (val[1] != 'N' && val[1] != 'T'))
          return nn_errorf(msg, ml, NN_EFORMAT, "op must be NN, NT, TN or TT, got '%s'", val);
        e->key.ta = val[0] == 'T', e->key.tb = val[1] == 'T';
        break;
      case F_EPI:
        if (strcmp(val, "bias") && strcmp(val, "none")) return nn_errorf(msg, ml, NN_EFORMAT, "epi must be bias or none, got '%s'", val);
        *(int*)dst = !strcmp(val, "bias");
        break;
      case F_RED:
        if (strcmp(val, "ordered") && strcmp(val, "none"))
          return nn_errorf(msg, ml, NN_EFORMAT, "red must be ordered or none, got '%s'", val);
        *(int*)dst = !strcmp(val, "ordered");
        break;
      case F_DBL: {
        errno = 0;
        char* end;
        double d = strtod(val, &end);
        if (!*val || *end || errno || !(d >= 0) || d > 1e9) return nn_errorf(msg, ml, NN_EFORMAT, "bad number for '%s': '%s'", tok, val);
        *(double*)dst = d;
        break;
      }
      case F_RAW: {
        if (strlen(val) != 128)
          return nn_errorf(msg, ml, NN_EFORMAT, "raw must be 128 hex digits (8 words x 16), got %zu characters", strlen(val));
        size_t bad_at = strspn(val, "0123456789abcdefABCDEF");
        if (bad_at != 128) return nn_errorf(msg, ml, NN_EFORMAT, "raw: not a hex digit at position %zu", bad_at + 1);
        for (int w = 0; w < 8; w++) {
          char word[17];
          memcpy(word, val + 16 * w, 16);
          word[16] = 0;
          e->raw[w] = strtoull(word, NULL, 16);
        }
        break;
      }
      case F_CAND: {
        int a, b, n = 0;
        if (sscanf(val, "%d/%d%n", &a, &b, &n) != 2 || val[n] || a < 0 || b < 1 || a >= b)
          return nn_errorf(msg, ml, NN_EFORMAT, "cand must be I/N with 0 <= I < N, got '%s'", val);
        e->cand = a, e->ncand = b;
        break;
      }
    }
  }
  for (int f = 0; f < NFIELDS; f++)
    if (FIELDS[f].required && !seen[f]) return nn_errorf(msg, ml, NN_EFORMAT, "missing key '%s'", FIELDS[f].name);
  return nn_tune_entry_check(e, msg, ml);
}

int nn_tune_table_parse(NnTuneTable* t, const char* text, const char* name, char* err, size_t errlen) {
  if (!t || !text) return nn_errorf(err, errlen, NN_EINVAL, "tune table: no text");
  if (!name) name = "tune table";
  NnTuneTable nt = {NULL, 0, 0};
  int* line_of = NULL;  // source line of each new entry (duplicate messages)
  char buf[NN_TUNE_MAX_LINE + 2], msg[256];
  int lineno = 0, header = 0, r = NN_OK;
  const char* p = text;
  while (*p && !r) {
    const char* eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    lineno++;
    if (len > NN_TUNE_MAX_LINE) {
      r = nn_errorf(err, errlen, NN_EFORMAT, "%s:%d: line longer than %d characters", name, lineno, NN_TUNE_MAX_LINE);
      break;
    }
    memcpy(buf, p, len);
    buf[len] = 0;
    p = eol ? eol + 1 : p + len;
    while (len && (buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t')) buf[--len] = 0;
    char* s = buf;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s || *s == '#') continue;
    if (!header) {
      char magic[32];
      int ver, n = 0;
      if (sscanf(s, "%31s %d%n", magic, &ver, &n) != 2 || strcmp(magic, NN_TUNE_MAGIC) || s[n]) {
        r = nn_errorf(err, errlen, NN_EFORMAT, "%s:%d: expected the header '%s %d'", name, lineno, NN_TUNE_MAGIC,
                 NN_TUNE_VERSION);
        break;
      }
      if (ver != NN_TUNE_VERSION) {
        r = nn_errorf(err, errlen, NN_EFORMAT, "%s:%d: format version %d, this build reads %d", name, lineno, ver,
                 NN_TUNE_VERSION);
        break;
      }
      header = 1;
      continue;
    }
    NnTuneEntry e;
    if (parse_entry(s, &e, msg, sizeof msg)) {
      r = nn_errorf(err, errlen, NN_EFORMAT, "%s:%d: %s", name, lineno, msg);
      break;
    }
    int prev = find_index(&nt, &e.key);
    if (prev >= 0) {
      r = nn_errorf(err, errlen, NN_EFORMAT, "%s:%d: same key as line %d (one entry per GEMM shape)", name, lineno,
               line_of[prev]);
      break;
    }
    if (nt.n == nt.cap) {
      int* q = (int*)realloc(line_of, sizeof(int) * (size_t)(nt.cap ? 2 * nt.cap : 32));
      if (!q) {
        r = nn_errorf(err, errlen, NN_ENOMEM, "%s: out of memory", name);
        break;
      }
      line_of = q;
    }
    if (nn_tune_table_put(&nt, &e)) {
      r = nn_errorf(err, errlen, NN_ENOMEM, "%s: out of memory", name);
      break;
    }
    line_of[nt.n - 1] = lineno;
  }
  if (!r && !header) r = nn_errorf(err, errlen, NN_EFORMAT, "%s: empty (no '%s %d' header)", name, NN_TUNE_MAGIC, NN_TUNE_VERSION);
  // merge only after the whole text parsed; reserve first so that a failed merge changes nothing
  if (!r && t->cap < t->n + nt.n) {
    NnTuneEntry* q = (NnTuneEntry*)realloc(t->e, sizeof(NnTuneEntry) * (size_t)(t->n + nt.n));
    if (!q) r = nn_errorf(err, errlen, NN_ENOMEM, "%s: out of memory", name);
    else t->e = q, t->cap = t->n + nt.n;
  }
  for (int i = 0; !r && i < nt.n; i++) nn_tune_table_put(t, &nt.e[i]);  // cannot fail: capacity reserved
  free(line_of);
  nn_tune_table_free(&nt);
  return r;
}

int nn_tune_table_format(const NnTuneTable* t, char** out, size_t* len) {
  size_t cap = 512 + (size_t)t->n * 1024, n = 0;  // a line is < 900 characters (parser limit 1024)
  char* b = (char*)malloc(cap);
  if (!b) return NN_ENOMEM;
  n += (size_t)snprintf(b + n, cap - n,
                        "%s %d\n# nn/ cuBLASLt algorithm choices (NN_CUDA_TUNE); format: nn/nn_tune_table.h. ms/ms0: median "
                        "time of the chosen algorithm / of the heuristic's first when tuned\n",
                        NN_TUNE_MAGIC, NN_TUNE_VERSION);
  for (int i = 0; i < t->n; i++) {
    const NnTuneKey* k = &t->e[i].key;
    const NnTuneAlgo* a = &t->e[i].algo;
    int w = snprintf(b + n, cap - n,
                     "gpu=%s sms=%d lt=%d prec=%s op=%c%c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d count=%d sa=%lld sb=%lld "
                     "sc=%lld epi=%s red=%s algo=%d tile=%d splitk=%d rscheme=%d swizzle=%d custom=%d stages=%d inner=%d "
                     "cluster=%d ws=%lld raw=%016llx%016llx%016llx%016llx%016llx%016llx%016llx%016llx",
                     k->gpu, k->sms, k->lt, k->tf32 ? "tf32" : "fp32", k->ta ? 'T' : 'N', k->tb ? 'T' : 'N', k->m, k->n,
                     k->k, k->lda, k->ldb, k->ldc, k->count, k->sa, k->sb, k->sc, k->bias ? "bias" : "none",
                     k->splitk ? "ordered" : "none", a->id, a->tile, a->splitk_num, a->reduction, a->swizzle, a->custom,
                     a->stages, a->inner, a->cluster, t->e[i].ws, t->e[i].raw[0], t->e[i].raw[1], t->e[i].raw[2],
                     t->e[i].raw[3], t->e[i].raw[4], t->e[i].raw[5], t->e[i].raw[6], t->e[i].raw[7]);
    if (w < 0 || (size_t)w >= cap - n) {
      free(b);
      return NN_EINVAL;
    }
    n += (size_t)w;
    if (t->e[i].ms > 0 || t->e[i].ms0 > 0) w = snprintf(b + n, cap - n, " ms=%.6f ms0=%.6f", t->e[i].ms, t->e[i].ms0);
    else w = 0;
    n += (size_t)w;
    if (t->e[i].ncand > 0) n += (size_t)snprintf(b + n, cap - n, " cand=%d/%d", t->e[i].cand, t->e[i].ncand);
    n += (size_t)snprintf(b + n, cap - n, "\n");
  }
  *out = b, *len = n;
  return NN_OK;
}

int nn_tune_table_load(NnTuneTable* t, const char* path, char* err, size_t errlen) {
  if (!t || !path || !*path) return nn_errorf(err, errlen, NN_EINVAL, "tune table: empty path");
  FILE* f = fopen(path, "rb");
  if (!f) return nn_errorf(err, errlen, NN_EIO, "%s: cannot open: %s", path, strerror(errno));
  char* text = (char*)malloc(NN_TUNE_MAX_FILE + 1);
  if (!text) {
    fclose(f);
    return nn_errorf(err, errlen, NN_ENOMEM, "%s: out of memory", path);
  }
  size_t n = fread(text, 1, NN_TUNE_MAX_FILE + 1, f);
  int bad = ferror(f);
  fclose(f);
  int r;
  if (bad) r = nn_errorf(err, errlen, NN_EIO, "%s: read error", path);
  else if (n > NN_TUNE_MAX_FILE) r = nn_errorf(err, errlen, NN_EFORMAT, "%s: larger than %u bytes", path, NN_TUNE_MAX_FILE);
  else if (memchr(text, 0, n)) r = nn_errorf(err, errlen, NN_EFORMAT, "%s: NUL byte (not a text file)", path);
  else {
    text[n] = 0;
    r = nn_tune_table_parse(t, text, path, err, errlen);
  }
  free(text);
  return r;
}

int nn_tune_table_save(const NnTuneTable* t, const char* path, char* err, size_t errlen) {
  if (!t || !path || !*path) return nn_errorf(err, errlen, NN_EINVAL, "tune table: empty path");
  char* text;
  size_t len;
  if (nn_tune_table_format(t, &text, &len)) return nn_errorf(err, errlen, NN_ENOMEM, "%s: cannot format the table", path);
  int r = nn_export_write_atomic(path, text, len, err, errlen);
  free(text);
  return r;
}
