// nn_normalizer: running mean/variance merged over batches of different sizes against a direct two-pass
// computation over all rows; normalization, clipping and the gradient through it against direct formulas.
#include <string.h>

#include "nn/nn.h"
#include "tests/test.h"

#define D 11
#define ROWS 1000

int main(void) {
  static float x[ROWS * D];
  uint64_t s = 3;
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < D; j++)
      x[r * D + j] = (float)((nn_rng_uniform(&s) - 0.3) * (j + 1) * (r % 97 == 0 ? 20 : 1) + 100.0 * (j % 3));
  NnNorm* n;
  TEST_CHECK(nn_norm_create(&n, D, 1e-8, 3.0) == 0, "create");
  int sizes[] = {1, 7, 64, 300, 128, 500}, off = 0;
  for (int k = 0; k < 6; k++) {
    TEST_CHECK(nn_norm_update(n, x + (size_t)off * D, sizes[k]) == 0, "update");
    off += sizes[k];
  }
  TEST_CHECK(off == ROWS, "rows");
  double mean[D], var[D], got_var[D];
  for (int j = 0; j < D; j++) {
    double sum = 0, ss = 0;
    for (int r = 0; r < ROWS; r++) sum += x[r * D + j];
    mean[j] = sum / ROWS;
    for (int r = 0; r < ROWS; r++) ss += (x[r * D + j] - mean[j]) * (x[r * D + j] - mean[j]);
    var[j] = ss / ROWS;
    got_var[j] = nn_norm_m2(n)[j] / nn_norm_count(n);
  }
  TEST_CHECK(nn_norm_count(n) == ROWS, "count");
  test_close("mean", nn_norm_mean(n), mean, D, 1e-12, 1e-13);
  test_close("var", got_var, var, D, 1e-12, 1e-11);

  static float y[ROWS * D], dy[ROWS * D], dx[ROWS * D];
  static double yd[ROWS * D], yr[ROWS * D], dxd[ROWS * D], dxr[ROWS * D];
  nn_norm_apply(n, x, ROWS, y);
  for (int i = 0; i < ROWS * D; i++) dy[i] = (float)(nn_rng_uniform(&s) - 0.5);
  nn_norm_backward(n, x, dy, ROWS, dx);
  int clipped = 0;
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < D; j++) {
      int i = r * D + j;
      double is = 1 / sqrt(var[j] + 1e-8), v = (x[i] - mean[j]) * is;
      yr[i] = fmax(-3.0, fmin(3.0, v));
      dxr[i] = fabs(v) > 3.0 ? 0.0 : dy[i] * is;
      clipped += fabs(v) > 3.0;
      yd[i] = y[i], dxd[i] = dx[i];
    }
  test_close("apply", yd, yr, ROWS * D, 1e-5, 1e-5);
  test_close("backward", dxd, dxr, ROWS * D, 1e-7, 1e-5);
  printf("normalizer: %d of %d values clipped\n", clipped, ROWS * D);
  nn_norm_destroy(n);
  return test_report("nn_normalizer");
}
