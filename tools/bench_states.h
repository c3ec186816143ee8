// bench_states.h: the start states of `adjoint bench sim` (float64, host): LAFAN1 frames on a free-base robot,
// MuJoCo rollouts under random controls, or the model's keyframe; and the file that hands them to other
// simulators (bench/mjx_bench.py).
#ifndef ADJ_BENCH_STATES_H
#define ADJ_BENCH_STATES_H

#include <stddef.h>
#include <stdint.h>

typedef struct BenchStates {
  int n, nq, nv, nu;
  double *qpos, *qvel, *ctrl;  // (n, nq), (n, nv), (n, nu)
  char source[160];            // what the states are, for the report
} BenchStates;

// n frames drawn without replacement (fixed seed) from every 0.5 s of every clip of the LAFAN1 directory found
// on the asset path (lafan1_g1/): qpos from the clip with the root moved vertically so that the lowest point of
// any collision geom (not on the world body) lies on the highest floor plane (our float64 kinematics); qvel by
// central differences of the clip; ctrl = the reference angles of each actuator's joint. The model must be a
// free joint followed by njoint hinges whose actuators are joint transmissions.
int bench_states_lafan1(const void* mjmodel, int n, uint64_t seed, BenchStates* out, char* err, size_t errlen);
// n states of MuJoCo C rollouts from the keyframe (or qpos0) under uniform random controls held for 4 steps,
// each world for its own number of steps in [40, 200) (per-world seeds: the same for any nthread).
int bench_states_rollout(const void* mjmodel, int n, uint64_t seed, int nthread, BenchStates* out, char* err,
                         size_t errlen);
// n copies of keyframe 0 (qpos0, zero velocity and control without one)
int bench_states_keyframe(const void* mjmodel, int n, BenchStates* out, char* err, size_t errlen);
// "ADJSTATES 1 n nq nv nu\n" then qpos, qvel, ctrl as little-endian float64 (written to a temp file, renamed)
int bench_states_write(const BenchStates* s, const char* path, char* err, size_t errlen);
void bench_states_free(BenchStates* s);

#endif
