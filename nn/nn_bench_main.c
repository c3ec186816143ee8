// Standalone `adjoint bench nn` (the adjoint CLI calls the same nn_bench_main).
#include "nn/nn_bench.h"

int main(int argc, char** argv) { return nn_bench_main(argc, argv); }
