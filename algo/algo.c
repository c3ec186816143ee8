// algo.c: the algorithm registry and shared helpers.
#define _GNU_SOURCE  // clock_gettime
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "algo/algo.h"
#ifdef ADJ_HAVE_CUDA
#include "algo/algo_cuda.h"
#include "sim/cuda/sim_cuda.h"
#endif

const AlgoOps* algo_find(const char* name, char* err, size_t errlen) {
  if (!strcmp(name, "ppo")) return &algo_ppo;
  if (!strcmp(name, "shac") || !strcmp(name, "nablamimic")) return &algo_shac;
  snprintf(err, errlen, "algo.name '%s': unknown algorithm", name);
  return NULL;
}

const AlgoOps* algo_find_device(const char* name, const char* device, char* err, size_t errlen) {
  const AlgoOps* cpu = algo_find(name, err, errlen);
  if (!cpu || !strcmp(device, "cpu")) return cpu;
  if (strcmp(device, "cuda")) {
    snprintf(err, errlen, "run.device '%s': unknown backend (cpu|cuda)", device);
    return NULL;
  }
#ifdef ADJ_HAVE_CUDA
  if (simcuda_device_count() < 1) {
    snprintf(err, errlen, "run.device cuda: no CUDA device found");
    return NULL;
  }
  return cpu == &algo_ppo ? &algo_ppo_cuda : &algo_shac_cuda;
#else
  snprintf(err, errlen, "run.device cuda: this build has no CUDA backend (nvcc was not found at configure time)");
  return NULL;
#endif
}

double algo_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

