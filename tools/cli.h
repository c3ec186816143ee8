// cli.h: small helpers for parsing command-line flags; each prints a one-line error naming the flag.
#ifndef ADJ_CLI_H
#define ADJ_CLI_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

// value of the flag at argv[*i] (advances *i), or NULL with a message if missing
static inline const char* cli_value(int argc, char** argv, int* i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "adjoint: option %s needs a value\n", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

static inline int cli_int(int argc, char** argv, int* i, long lo, long hi, int* out) {
  const char* flag = argv[*i];
  const char* v = cli_value(argc, argv, i);
  if (!v) return 2;
  char* end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || end == v || x < lo || x > hi) {
    fprintf(stderr, "adjoint: option %s: '%s' is not an integer in [%ld, %ld]\n", flag, v, lo, hi);
    return 2;
  }
  *out = (int)x;
  return 0;
}

static inline int cli_u64(int argc, char** argv, int* i, unsigned long long* out) {
  const char* flag = argv[*i];
  const char* v = cli_value(argc, argv, i);
  if (!v) return 2;
  char* end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || *end || end == v || v[0] == '-') {
    fprintf(stderr, "adjoint: option %s: '%s' is not a non-negative integer\n", flag, v);
    return 2;
  }
  *out = x;
  return 0;
}
#endif
