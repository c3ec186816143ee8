// Minimal test harness shared by all test executables: each test is one executable whose exit code is the
// verdict (0 pass, 1 fail, 77 skipped: ctest's SKIP_RETURN_CODE).
#ifndef ADJ_TEST_H
#define ADJ_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TEST_SKIP 77

static int test_failures = 0;
static int test_checks = 0;

#define TEST_CHECK(cond, ...)                                                         \
  do {                                                                                \
    test_checks++;                                                                    \
    if (!(cond)) {                                                                    \
      test_failures++;                                                                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                            \
      fprintf(stderr, __VA_ARGS__);                                                   \
      fprintf(stderr, "\n");                                                          \
    }                                                                                 \
  } while (0)

// Compares n values with tol = atol + rtol*|ref|; prints the worst element. NaN always fails.
// Returns the max relative error (|got-ref| / max(|ref|, 1e-12)) for reporting.
static double test_close(const char* label, const double* got, const double* ref, int n, double atol,
                         double rtol) {
  int worst = -1, bad = 0;
  double worst_excess = -1, maxrel = 0;
  for (int i = 0; i < n; i++) {
    double diff = fabs(got[i] - ref[i]);
    double tol = atol + rtol * fabs(ref[i]);
    double rel = diff / fmax(fabs(ref[i]), 1e-12);
    if (rel > maxrel || got[i] != got[i]) maxrel = (got[i] != got[i]) ? INFINITY : fmax(maxrel, rel);
    if (!(diff <= tol)) {
      bad++;
      double ex = (diff != diff) ? INFINITY : diff - tol;
      if (ex > worst_excess) worst_excess = ex, worst = i;
    }
  }
  test_checks++;
  if (bad) {
    test_failures++;
    fprintf(stderr, "FAIL %s: %d of %d elements off; worst [%d] got %.17g ref %.17g (atol %g rtol %g)\n",
            label, bad, n, worst, got[worst], ref[worst], atol, rtol);
  }
  return maxrel;
}

static int test_report(const char* name) {
  if (test_failures) {
    fprintf(stderr, "%s: %d of %d checks failed\n", name, test_failures, test_checks);
    return 1;
  }
  printf("%s: all %d checks passed\n", name, test_checks);
  return 0;
}

#endif
