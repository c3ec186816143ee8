// cli_run.h: runs a command line for the CLI tests, capturing stdout+stderr and the exit code.
#ifndef ADJ_TESTS_CLI_RUN_H
#define ADJ_TESTS_CLI_RUN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

// returns the exit code (or -1); out receives the combined output
static int cli_run(char* out, size_t outlen, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static int cli_run(char* out, size_t outlen, const char* fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd) - 8, fmt, ap);
  va_end(ap);
  strcat(cmd, " 2>&1");
  FILE* p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = 0;
  out[0] = 0;
  char buf[4096];
  size_t k;
  while ((k = fread(buf, 1, sizeof(buf), p)) > 0) {
    size_t c = (n + k < outlen - 1) ? k : (outlen - 1 - n);
    memcpy(out + n, buf, c);
    n += c;
    out[n] = 0;
  }
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif
