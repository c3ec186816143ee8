// fd_errors.h: a gradient against central differences, for the task VJP tests: per-partial relative errors
// |g - fd| / max(|fd|, 1e-6 max_k |fd_k|) and their median. Header only (static functions).
#ifndef ADJ_TESTS_FD_ERRORS_H
#define ADJ_TESTS_FD_ERRORS_H

#include <math.h>
#include <stdlib.h>

static int fd_cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
// the median of v (n > 0; v is sorted in place)
static double fd_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), fd_cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
// the errors of g against fd (n partials) appended to err[*ne], the largest kept in *worst; skip_zero: partials
// with both |g| and |fd| below 1e-9 max_k |fd_k| are left out (a block of terms a function does not depend on)
static void fd_rel_errors(const double* g, const double* fd, int n, int skip_zero, double* err, int* ne,
                          double* worst) {
  double scale = 0;
  for (int i = 0; i < n; i++) scale = fmax(scale, fabs(fd[i]));
  for (int i = 0; i < n; i++) {
    if (skip_zero && fabs(fd[i]) <= 1e-9 * scale && fabs(g[i]) <= 1e-9 * scale) continue;
    double e = fabs(g[i] - fd[i]) / fmax(fabs(fd[i]), 1e-6 * scale + 1e-300);
    err[(*ne)++] = e;
    *worst = fmax(*worst, e);
  }
}

#endif
