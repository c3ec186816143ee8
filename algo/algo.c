// algo.c: the algorithm registry and shared helpers.
#define _GNU_SOURCE  // clock_gettime
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "algo/algo.h"

const AlgoOps* algo_find(const char* name, char* err, size_t errlen) {
  if (!strcmp(name, "ppo")) return &algo_ppo;
  if (!strcmp(name, "shac") || !strcmp(name, "nablamimic")) return &algo_shac;
  snprintf(err, errlen, "algo.name '%s': unknown algorithm", name);
  return NULL;
}

double algo_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

