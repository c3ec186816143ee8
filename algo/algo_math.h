// algo_math.h: what the algorithms' formula headers (shac_math.h, ppo_math.h) share: the expanders of their
// metric tables and the derivation of a run's seeds.
#ifndef ADJ_ALGO_ALGO_MATH_H
#define ADJ_ALGO_ALGO_MATH_H

#include <stdint.h>

#include "envs/env.h"  // SIM_FN, env_rng_next

// a metric table is X(id, "column name") entries: the enum of ids and the names in metrics.csv's order
#define ALGO_METRIC_ID(id, name) id,
#define ALGO_METRIC_NAME(id, name) name,

// the k-th seed of a run from run.seed; mult: the algorithm's odd constant (its streams differ from another's)
SIM_FN uint64_t algo_seed(uint64_t seed, uint64_t mult, uint64_t k) {
  uint64_t s = seed ^ (mult * (k + 1));
  return env_rng_next(&s);
}

#endif
