// nn_bench_main for builds without CUDA: the benchmark needs the GPU library.
#include <stdio.h>

#include "nn/nn_bench.h"

int nn_bench_main(int argc, char** argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "adjoint bench nn: built without CUDA (no CUDA)\n");
  return 2;
}
