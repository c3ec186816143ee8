// cfg.c: YAML (libyaml event parser) and `key=value` overrides into the typed Cfg of cfg.h; resolved YAML
// output and the config hash.
#define _GNU_SOURCE  // open_memstream, fsync
#include "algo/cfg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

static const CfgKey kKeys[] = {
#define X(sec, key, type, def, range, flags, help) \
  {#sec "." #key, CFG_T_##type, def, range, flags, help, offsetof(Cfg, sec##_##key)},
    CFG_TABLE(X)
#undef X
};
#define NKEYS ((int)(sizeof(kKeys) / sizeof(kKeys[0])))

int cfg_key_count(void) { return NKEYS; }
const CfgKey* cfg_key(int i) { return (i >= 0 && i < NKEYS) ? &kKeys[i] : NULL; }

const CfgKey* cfg_find(const char* dotted) {
  for (int i = 0; i < NKEYS; i++)
    if (!strcmp(kKeys[i].name, dotted)) return &kKeys[i];
  return NULL;
}

// whether some key lies under `prefix.` (a YAML mapping that is a section)
static int is_section(const char* prefix) {
  size_t n = strlen(prefix);
  for (int i = 0; i < NKEYS; i++)
    if (!strncmp(kKeys[i].name, prefix, n) && kKeys[i].name[n] == '.') return 1;
  return 0;
}

static const char* type_name(CfgType t) {
  switch (t) {
    case CFG_T_INT: return "an integer";
    case CFG_T_FLOAT: return "a number";
    case CFG_T_BOOL: return "a boolean (true/false)";
    case CFG_T_ENUM: return "one of";
    case CFG_T_STR: return "a string";
    case CFG_T_INTLIST: return "a list of integers";
  }
  return "?";
}

// ---- value parsing and range checks ----
// `where` prefixes every message ("FILE:LINE" or "override 'k=v'").
static int fail(char* err, size_t errlen, const char* where, const char* key, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (key)
    snprintf(err, errlen, "%s: key '%s': %s", where, key, msg);
  else
    snprintf(err, errlen, "%s: %s", where, msg);
  return CFG_EPARSE;
}

static int parse_bound(const char* s, size_t n, double* out) {
  char buf[64];
  while (n && (*s == ' ')) s++, n--;
  while (n && s[n - 1] == ' ') n--;
  if (n == 0 || n >= sizeof(buf)) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  if (!strcmp(buf, "inf")) return *out = INFINITY, 0;
  if (!strcmp(buf, "-inf")) return *out = -INFINITY, 0;
  char* end;
  *out = strtod(buf, &end);
  return *end ? -1 : 0;
}

// Checks x against "[lo, hi]" style ranges; writes the violation into msg.
static int in_range(const char* range, double x, char* msg, size_t msglen) {
  size_t n = strlen(range);
  if (!n) return 1;
  const char* comma = strchr(range, ',');
  double lo, hi;
  if (n < 5 || !comma || parse_bound(range + 1, (size_t)(comma - range - 1), &lo) ||
      parse_bound(comma + 1, (size_t)(range + n - 1 - comma - 1), &hi)) {
    snprintf(msg, msglen, "bad range '%s' in the key table", range);
    return 0;
  }
  int lo_ok = range[0] == '[' ? x >= lo : x > lo;
  int hi_ok = range[n - 1] == ']' ? x <= hi : x < hi;
  if (lo_ok && hi_ok) return 1;
  snprintf(msg, msglen, "out of range %s", range);
  return 0;
}

static int parse_int(const char* s, int64_t* out) {
  if (!*s) return -1;
  char* end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || *end) return -1;
  *out = x;
  return 0;
}

static int parse_float(const char* s, double* out) {
  if (!*s) return -1;
  char* end;
  errno = 0;
  double x = strtod(s, &end);
  if (errno == ERANGE && fabs(x) > 1) return -1;
  if (*end || x != x) return -1;
  if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2) || strchr(s, 'n') || strchr(s, 'N')) return -1;  // no hex/inf/nan
  *out = x;
  return 0;
}

static int parse_bool(const char* s, int* out) {
  static const char* t[] = {"true", "True", "TRUE", "yes", "on", "1"};
  static const char* f[] = {"false", "False", "FALSE", "no", "off", "0"};
  for (int i = 0; i < 6; i++) {
    if (!strcmp(s, t[i])) return *out = 1, 0;
    if (!strcmp(s, f[i])) return *out = 0, 0;
  }
  return -1;
}

static int enum_has(const char* choices, const char* s) {
  size_t n = strlen(s);
  const char* p = choices;
  while (*p) {
    const char* bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && !strncmp(p, s, n)) return 1;
    if (!bar) break;
    p = bar + 1;
  }
  return 0;
}

// Sets one scalar-typed key from text (INTLIST handled through set_list).
static int set_scalar(Cfg* c, const CfgKey* k, const char* v, const char* where, char* err, size_t errlen) {
  char* base = (char*)c + k->offset;
  char rmsg[128];
  switch (k->type) {
    case CFG_T_INT: {
      int64_t x;
      if (parse_int(v, &x)) return fail(err, errlen, where, k->name, "'%s' is not an integer", v);
      if (!in_range(k->range, (double)x, rmsg, sizeof(rmsg)))
        return fail(err, errlen, where, k->name, "%s is %s", v, rmsg);
      *(int64_t*)base = x;
      return CFG_OK;
    }
    case CFG_T_FLOAT: {
      double x;
      if (parse_float(v, &x)) return fail(err, errlen, where, k->name, "'%s' is not a finite number", v);
      if (!in_range(k->range, x, rmsg, sizeof(rmsg))) return fail(err, errlen, where, k->name, "%s is %s", v, rmsg);
      *(double*)base = x;
      return CFG_OK;
    }
    case CFG_T_BOOL: {
      int x;
      if (parse_bool(v, &x)) return fail(err, errlen, where, k->name, "'%s' is not a boolean (true/false)", v);
      *(int*)base = x;
      return CFG_OK;
    }
    case CFG_T_ENUM:
      if (!enum_has(k->range, v)) return fail(err, errlen, where, k->name, "'%s' is not one of %s", v, k->range);
      snprintf(base, 32, "%s", v);
      return CFG_OK;
    case CFG_T_STR:
      if (strlen(v) >= 256) return fail(err, errlen, where, k->name, "string longer than 255 characters");
      snprintf(base, 256, "%s", v);
      return CFG_OK;
    case CFG_T_INTLIST:
      return fail(err, errlen, where, k->name, "'%s' is not a list of integers (write [a, b, ...])", v);
  }
  return CFG_EPARSE;
}

static int set_list(Cfg* c, const CfgKey* k, char items[][64], int n, const char* where, char* err, size_t errlen) {
  if (k->type != CFG_T_INTLIST) return fail(err, errlen, where, k->name, "expected %s, got a list", type_name(k->type));
  if (n > CFG_LIST_MAX) return fail(err, errlen, where, k->name, "list longer than %d", CFG_LIST_MAX);
  CfgIntList l = {0, {0}};
  char rmsg[128];
  for (int i = 0; i < n; i++) {
    int64_t x;
    if (parse_int(items[i], &x)) return fail(err, errlen, where, k->name, "element '%s' is not an integer", items[i]);
    if (!in_range(k->range, (double)x, rmsg, sizeof(rmsg)))
      return fail(err, errlen, where, k->name, "element %s is %s", items[i], rmsg);
    l.v[l.n++] = (int)x;
  }
  *(CfgIntList*)((char*)c + k->offset) = l;
  return CFG_OK;
}

// "[1, 2, 3]" or "1,2,3" -> items
static int split_list(const char* v, char items[][64], int max) {
  char buf[1024];
  if (strlen(v) >= sizeof(buf)) return -1;  // too long to be a list of at most CFG_LIST_MAX integers
  snprintf(buf, sizeof(buf), "%s", v);
  char* s = buf;
  size_t n = strlen(s);
  if (n && s[0] == '[') {
    if (s[n - 1] != ']') return -1;
    s[n - 1] = 0, s++;
  }
  int cnt = 0;
  char* p = s;
  while (*p == ' ') p++;
  if (!*p) return 0;
  for (;;) {
    char* comma = strchr(p, ',');
    if (comma) *comma = 0;
    while (*p == ' ') p++;
    size_t len = strlen(p);
    while (len && p[len - 1] == ' ') p[--len] = 0;
    if (cnt >= max || len >= 64) return -1;
    snprintf(items[cnt++], 64, "%s", p);
    if (!comma) break;
    p = comma + 1;
  }
  return cnt;
}

static int set_text(Cfg* c, const CfgKey* k, const char* v, const char* where, char* err, size_t errlen) {
  if (k->type != CFG_T_INTLIST) return set_scalar(c, k, v, where, err, errlen);
  char items[CFG_LIST_MAX + 1][64];
  int n = split_list(v, items, CFG_LIST_MAX + 1);
  if (n < 0) return fail(err, errlen, where, k->name, "'%s' is not a list of at most %d integers", v, CFG_LIST_MAX);
  return set_list(c, k, items, n, where, err, errlen);
}

int cfg_defaults(Cfg* c, char* err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  for (int i = 0; i < NKEYS; i++) {
    int rc = set_text(c, &kKeys[i], kKeys[i].def, "default", err, errlen);
    if (rc) return rc;
  }
  return CFG_OK;
}

int cfg_override(Cfg* c, const char* a, char* err, size_t errlen) {
  char where[600], key[256];
  snprintf(where, sizeof(where), "override '%s'", a);
  const char* eq = strchr(a, '=');
  if (!eq) return fail(err, errlen, where, NULL, "expected section.key=value");
  size_t kn = (size_t)(eq - a);
  if (kn == 0 || kn >= sizeof(key)) return fail(err, errlen, where, NULL, "expected section.key=value");
  memcpy(key, a, kn);
  key[kn] = 0;
  const CfgKey* k = cfg_find(key);
  if (!k) return fail(err, errlen, where, key, "unknown key");
  return set_text(c, k, eq + 1, where, err, errlen);
}

// ---- YAML ----
typedef struct {
  yaml_parser_t p;
  const char* path;
  char* err;
  size_t errlen;
  char last_key[256];
  char seen[sizeof(kKeys) / sizeof(kKeys[0])];
} Yp;

static int next(Yp* y, yaml_event_t* ev) {
  if (yaml_parser_parse(&y->p, ev)) return 0;
  char where[600];
  snprintf(where, sizeof(where), "%s:%zu", y->path, y->p.problem_mark.line + 1);
  if (y->last_key[0])
    fail(y->err, y->errlen, where, y->last_key, "YAML syntax error after this key: %s%s%s",
         y->p.problem ? y->p.problem : "malformed", y->p.context ? " " : "", y->p.context ? y->p.context : "");
  else
    fail(y->err, y->errlen, where, NULL, "YAML syntax error: %s%s%s", y->p.problem ? y->p.problem : "malformed",
         y->p.context ? " " : "", y->p.context ? y->p.context : "");
  return CFG_EPARSE;
}

static int parse_mapping(Yp* y, Cfg* c, const char* prefix);

// the value of key `full` (its event already read into ev)
static int parse_value(Yp* y, Cfg* c, const char* full, yaml_event_t* ev, size_t key_line) {
  char where[600];
  snprintf(where, sizeof(where), "%s:%zu", y->path, key_line);
  if (ev->type == YAML_MAPPING_START_EVENT) {
    if (!is_section(full)) {
      const CfgKey* k = cfg_find(full);
      return k ? fail(y->err, y->errlen, where, full, "expected %s, got a mapping", type_name(k->type))
               : fail(y->err, y->errlen, where, full, "unknown key");
    }
    return parse_mapping(y, c, full);
  }
  const CfgKey* k = cfg_find(full);
  if (!k) return fail(y->err, y->errlen, where, full, is_section(full) ? "expected a mapping (section)" : "unknown key");
  int idx = (int)(k - kKeys);
  if (y->seen[idx]) return fail(y->err, y->errlen, where, full, "duplicate key");
  y->seen[idx] = 1;
  if (ev->type == YAML_SCALAR_EVENT) {
    snprintf(where, sizeof(where), "%s:%zu", y->path, ev->start_mark.line + 1);
    const char* v = (const char*)ev->data.scalar.value;
    if (strlen(v) != ev->data.scalar.length) return fail(y->err, y->errlen, where, full, "value contains a NUL byte");
    if (k->type != CFG_T_STR && k->type != CFG_T_ENUM && ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
      return fail(y->err, y->errlen, where, full, "expected %s, got a quoted string", type_name(k->type));
    if (ev->data.scalar.length == 0 && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && k->type != CFG_T_STR)
      return fail(y->err, y->errlen, where, full, "missing value (expected %s)", type_name(k->type));
    if (k->type == CFG_T_INTLIST) return fail(y->err, y->errlen, where, full, "'%s' is not a list of integers", v);
    return set_scalar(c, k, v, where, y->err, y->errlen);
  }
  if (ev->type == YAML_SEQUENCE_START_EVENT) {
    char items[CFG_LIST_MAX + 1][64];
    int n = 0;
    for (;;) {
      yaml_event_t e;
      if (next(y, &e)) return CFG_EPARSE;
      if (e.type == YAML_SEQUENCE_END_EVENT) {
        yaml_event_delete(&e);
        break;
      }
      if (e.type != YAML_SCALAR_EVENT) {
        snprintf(where, sizeof(where), "%s:%zu", y->path, e.start_mark.line + 1);
        yaml_event_delete(&e);
        return fail(y->err, y->errlen, where, full, "list elements must be scalars");
      }
      if (e.data.scalar.length >= 64) {  // no list element is that long: refuse rather than cut it
        snprintf(where, sizeof(where), "%s:%zu", y->path, e.start_mark.line + 1);
        yaml_event_delete(&e);
        return fail(y->err, y->errlen, where, full, "list element %d is longer than 63 characters", n + 1);
      }
      if (n <= CFG_LIST_MAX) snprintf(items[n], 64, "%s", (const char*)e.data.scalar.value);
      n++;
      yaml_event_delete(&e);
    }
    if (n > CFG_LIST_MAX) return fail(y->err, y->errlen, where, full, "list longer than %d", CFG_LIST_MAX);
    return set_list(c, k, items, n, where, y->err, y->errlen);
  }
  if (ev->type == YAML_ALIAS_EVENT) return fail(y->err, y->errlen, where, full, "YAML aliases are not supported");
  return fail(y->err, y->errlen, where, full, "unexpected YAML node");
}

static int parse_mapping(Yp* y, Cfg* c, const char* prefix) {
  for (;;) {
    yaml_event_t kev, vev;
    if (next(y, &kev)) return CFG_EPARSE;
    if (kev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&kev);
      return CFG_OK;
    }
    size_t line = kev.start_mark.line + 1;
    char where[600];
    snprintf(where, sizeof(where), "%s:%zu", y->path, line);
    if (kev.type != YAML_SCALAR_EVENT) {
      yaml_event_delete(&kev);
      return fail(y->err, y->errlen, where, NULL, "mapping keys must be plain names");
    }
    char full[256];
    if (strlen(prefix) + 1 + kev.data.scalar.length >= sizeof(full)) {
      yaml_event_delete(&kev);
      return fail(y->err, y->errlen, where, NULL, "key longer than %zu characters", sizeof(full) - 2);
    }
    snprintf(full, sizeof(full), "%s%s%s", prefix, prefix[0] ? "." : "", (const char*)kev.data.scalar.value);
    yaml_event_delete(&kev);
    snprintf(y->last_key, sizeof(y->last_key), "%s", full);
    if (next(y, &vev)) return CFG_EPARSE;
    int rc = parse_value(y, c, full, &vev, line);
    yaml_event_delete(&vev);
    if (rc) return rc;
  }
}

static int load_stream(Cfg* c, FILE* f, const char* path, char* err, size_t errlen);

int cfg_load_yaml(Cfg* c, const char* path, char* err, size_t errlen) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return CFG_EIO;
  }
  return load_stream(c, f, path, err, errlen);
}

int cfg_load_yaml_text(Cfg* c, const char* text, const char* name, char* err, size_t errlen) {
  FILE* f = fmemopen((void*)text, strlen(text), "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot read: %s", name, strerror(errno));
    return CFG_EIO;
  }
  return load_stream(c, f, name, err, errlen);
}

// parses YAML from f (closed here); path names it in messages and gives the default run name
static int load_stream(Cfg* c, FILE* f, const char* path, char* err, size_t errlen) {
  Yp y;
  memset(&y, 0, sizeof(y));
  y.path = path, y.err = err, y.errlen = errlen;
  yaml_parser_initialize(&y.p);
  yaml_parser_set_input_file(&y.p, f);
  int rc = CFG_OK, in_doc = 0, docs = 0;
  for (;;) {
    yaml_event_t ev;
    if (next(&y, &ev)) {
      rc = CFG_EPARSE;
      break;
    }
    yaml_event_type_t t = ev.type;
    size_t line = ev.start_mark.line + 1;
    if (t == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    if (t == YAML_DOCUMENT_START_EVENT) {
      in_doc = 1;
      if (++docs > 1) {
        char where[600];
        snprintf(where, sizeof(where), "%s:%zu", path, line);
        rc = fail(err, errlen, where, NULL, "more than one YAML document");
      }
    } else if (t == YAML_MAPPING_START_EVENT && in_doc) {
      rc = parse_mapping(&y, c, "");
    } else if (t == YAML_SCALAR_EVENT || t == YAML_SEQUENCE_START_EVENT || t == YAML_ALIAS_EVENT) {
      char where[600];
      snprintf(where, sizeof(where), "%s:%zu", path, line);
      // an empty file parses as one empty plain scalar: accept it (all defaults)
      if (!(t == YAML_SCALAR_EVENT && ev.data.scalar.length == 0))
        rc = fail(err, errlen, where, NULL, "the top level must be a mapping of sections");
    }
    yaml_event_delete(&ev);
    if (rc) break;
  }
  yaml_parser_delete(&y.p);
  fclose(f);
  if (!rc && !c->run_name[0]) {  // default run name: the file's base name without extension
    const char* b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char name[sizeof(c->run_name)];
    snprintf(name, sizeof(name), "%s", b);
    char* dot = strrchr(name, '.');
    if (dot && dot != name) *dot = 0;
    memset(c->run_name, 0, sizeof(c->run_name));
    snprintf(c->run_name, sizeof(c->run_name), "%s", name);
  }
  return rc;
}

// ---- output ----
static void write_double(FILE* f, double x) {
  char buf[64];
  for (int p = 15; p <= 17; p++) {
    snprintf(buf, sizeof(buf), "%.*g", p, x);
    if (strtod(buf, NULL) == x) break;
  }
  // keep it a float in YAML 1.1's eyes (PyYAML wants a dot: 1.0e-05, not 1e-05)
  if (!strchr(buf, '.') && strcmp(buf, "inf") && strcmp(buf, "-inf")) {
    char* e = strpbrk(buf, "eE");
    if (e) {
      char tail[32];
      snprintf(tail, sizeof(tail), "%s", e);
      snprintf(e, sizeof(buf) - (size_t)(e - buf), ".0%s", tail);
    } else {
      strcat(buf, ".0");
    }
  }
  fputs(buf, f);
}

int cfg_write_yaml(const Cfg* c, FILE* f, int hashed_only) {
  char section[64] = "";
  for (int i = 0; i < NKEYS; i++) {
    const CfgKey* k = &kKeys[i];
    if (hashed_only && !(k->flags & CFG_H)) continue;
    const char* dot = strchr(k->name, '.');
    size_t sn = (size_t)(dot - k->name);
    if (strlen(section) != sn || strncmp(section, k->name, sn)) {
      memcpy(section, k->name, sn);
      section[sn] = 0;
      fprintf(f, "%s:\n", section);
    }
    fprintf(f, "  %s: ", dot + 1);
    const char* base = (const char*)c + k->offset;
    switch (k->type) {
      case CFG_T_INT: fprintf(f, "%lld", (long long)*(const int64_t*)base); break;
      case CFG_T_FLOAT: write_double(f, *(const double*)base); break;
      case CFG_T_BOOL: fputs(*(const int*)base ? "true" : "false", f); break;
      case CFG_T_ENUM: fputs(base, f); break;
      case CFG_T_STR: {
        fputc('"', f);
        for (const char* s = base; *s; s++) {
          if (*s == '"' || *s == '\\') fputc('\\', f);
          fputc(*s, f);
        }
        fputc('"', f);
        break;
      }
      case CFG_T_INTLIST: {
        const CfgIntList* l = (const CfgIntList*)base;
        fputc('[', f);
        for (int j = 0; j < l->n; j++) fprintf(f, "%s%d", j ? ", " : "", l->v[j]);
        fputc(']', f);
        break;
      }
    }
    fputc('\n', f);
  }
  return ferror(f) ? CFG_EIO : CFG_OK;
}

int cfg_save(const Cfg* c, const char* path, char* err, size_t errlen) {
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
    return CFG_EIO;
  }
  fprintf(f, "# resolved configuration (defaults + file + overrides), written by adjoint train\n");
  int rc = cfg_write_yaml(c, f, 0);
  if (fflush(f) || fsync(fileno(f))) rc = CFG_EIO;
  if (fclose(f)) rc = CFG_EIO;
  if (!rc && rename(tmp, path)) rc = CFG_EIO;
  if (rc) snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
  return rc;
}

uint64_t cfg_hash(const Cfg* c) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return 0;
  cfg_write_yaml(c, f, 1);
  fclose(f);
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
  free(buf);
  return h;
}

void cfg_print_keys(FILE* f) {
  for (int i = 0; i < NKEYS; i++) {
    const CfgKey* k = &kKeys[i];
    static const char* tn[] = {"int", "float", "bool", "enum", "string", "int list"};
    fprintf(f, "  %-34s %-8s default %-10s %s%s%s%s\n", k->name, tn[k->type], k->def[0] ? k->def : "\"\"", k->help,
            k->range[0] ? " (" : "", k->range, k->range[0] ? ")" : "");
  }
}
