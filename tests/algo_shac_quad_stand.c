// algo_shac_quad_stand: SHAC trains the free-base task (envs/quad_stand.c: a free joint, nq != nv, contacts)
// through the CLI: configs/quad_stand_shac.yaml, 30 iterations of 16 worlds x 16 steps, episodes starting at
// step 0; the task as it stands: per-world state (the last two actions, an action-rate penalty, the last action
// observed) and a critic observation (the critic and its own normalizer read it). The mean return of iterations
// 26-30 must exceed that of iterations 1-5 by at least 15 (measured on the CPU at seed 1: about -0.5 -> +31),
// with no non-finite gradient. Built twice: for the CPU, and with
// ALGO_QS_CUDA for `--device cuda` (label gpu; skips with 77 without a device). ADJ_GPU_TEST_SMALL
// (tests/gpu_test_size.h): 12 iterations and a rise of at least 4 between iterations 1-5 and 8-12 (measured on the
// CPU at seed 1: -0.5 -> +7.8).
// Usage: algo_shac_quad_stand PATH/TO/adjoint
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cli_run.h"
#include "tests/gpu_test_size.h"
#include "tests/test.h"
#ifdef ALGO_QS_CUDA
#include "sim/cuda/sim_cuda.h"
#define DEVICE "cuda"
#else
#define DEVICE "cpu"
#endif

#define MAX_ITERS 30

static char out[1 << 16];

// column `name` of metrics.csv, one value per iteration; returns the number of rows
static int read_column(const char* path, const char* name, double* v, int max, int* missing) {
  FILE* f = fopen(path, "r");
  *missing = 1;
  if (!f) return 0;
  char line[8192];
  int col = -1, n = 0;
  if (fgets(line, sizeof(line), f)) {
    int k = 0;
    for (char* t = strtok(line, ",\n"); t; t = strtok(NULL, ",\n"), k++)
      if (!strcmp(t, name)) col = k;
  }
  *missing = col < 0;
  while (col >= 0 && n < max && fgets(line, sizeof(line), f)) {
    int k = 0;
    for (char* t = strtok(line, ",\n"); t; t = strtok(NULL, ",\n"), k++)
      if (k == col) v[n++] = strtod(t, NULL);
  }
  fclose(f);
  return n;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH/TO/adjoint\n", argv[0]);
    return 2;
  }
  int small = 0;  // ADJ_GPU_TEST_SMALL applies to the gpu build only: the CPU test keeps its size
#ifdef ALGO_QS_CUDA
  if (simcuda_device_count() == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  small = gpu_test_small();
#endif
  const int iters = small ? 12 : MAX_ITERS;
  const double margin = small ? 4.0 : 15.0;
  char dir[] = "/tmp/adj_qs_XXXXXX";
  TEST_CHECK(mkdtemp(dir) != NULL, "temp dir");
  int rc = cli_run(out, sizeof(out),
                   "%s train configs/quad_stand_shac.yaml --max-iterations %d --device "
                   "%s --quiet --run-dir %s/run",
                   argv[1], iters, DEVICE, dir);
  TEST_CHECK(rc == 0, "train exited %d:\n%s", rc, out);
  char path[256];
  snprintf(path, sizeof(path), "%s/run/metrics.csv", dir);
  double ret[MAX_ITERS + 1], bad[MAX_ITERS + 1];
  int miss_r, miss_b;
  int n = read_column(path, "return", ret, iters, &miss_r);
  int nb = read_column(path, "nonfinite_grads", bad, iters, &miss_b);
  TEST_CHECK(!miss_r && !miss_b && n == iters && nb == iters, "metrics.csv: %d rows of return, %d of nonfinite_grads",
             n, nb);
  if (n == iters && nb == iters) {
    double first = 0, last = 0, nonfinite = 0;
    for (int i = 0; i < 5; i++) first += ret[i] / 5, last += ret[iters - 5 + i] / 5;
    for (int i = 0; i < iters; i++) nonfinite += bad[i];
    TEST_CHECK(isfinite(first) && isfinite(last) && last - first >= margin,
               "return: iterations 1-5 %.3f, %d-%d %.3f (want a rise >= %.0f)", first, iters - 4, iters, last,
               margin);
    TEST_CHECK(nonfinite == 0, "%g non-finite gradients", nonfinite);
    printf("quad_stand SHAC (%s): mean return iterations 1-5 %.3f -> %d-%d %.3f\n", DEVICE, first, iters - 4, iters,
           last);
  }
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
  return test_report("algo_shac_quad_stand");
}
