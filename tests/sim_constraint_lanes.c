// sim_constraint_lanes.c: the per-world engine compiled with real lanes on the CPU: SIM_SYNC() becomes a
// pthread barrier and each lane is a thread, as a GPU warp runs one world. Symbols are suffixed _lanes so
// this translation unit links beside adj_sim64 (same SimModel/SimData layout). Used by sim_constraint to
// check that the lane-parallel constraint stage equals the single-lane one bit for bit.
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "sim/sim_port.h"

static pthread_barrier_t lanes_barrier;
#undef SIM_SYNC
#define SIM_SYNC() pthread_barrier_wait(&lanes_barrier)
#undef SIM_SFX
#define SIM_SFX(name) name##_lanes

#include "sim/sim_forward.c"

typedef struct {
  const SimModel* m;
  SimWorld w;
  int stage, lane, nlane;
} LaneArg;

static void* lane_main(void* p) {
  LaneArg* a = (LaneArg*)p;
  sim_stage_world(a->m, &a->w, a->stage, a->lane, a->nlane);
  return 0;
}

// runs one stage of world w with nlane threads (m, d: the float64 library's SimModel/SimData)
void sim_lanes_run_stage(const void* model, void* data, int w, int stage, int nlane) {
  const SimModel* m = (const SimModel*)model;
  LaneArg args[64];
  pthread_t th[64];
  if (nlane > 64) nlane = 64;
  pthread_barrier_init(&lanes_barrier, 0, (unsigned)nlane);
  for (int l = 0; l < nlane; l++) {
    args[l].m = m;
    sim_world(m, (const SimData*)data, w, &args[l].w);
    args[l].stage = stage;
    args[l].lane = l;
    args[l].nlane = nlane;
    pthread_create(&th[l], 0, lane_main, &args[l]);
  }
  for (int l = 0; l < nlane; l++) pthread_join(th[l], 0);
  pthread_barrier_destroy(&lanes_barrier);
}
