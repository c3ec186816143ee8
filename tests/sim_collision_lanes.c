// sim_collision_lanes.c: the per-world engine compiled with real lanes on the CPU (SIM_SYNC() = a pthread
// barrier, one thread per lane, as a GPU warp runs one world), symbols suffixed _clanes so that it links
// beside adj_sim64/adj_sim32 (same SimModel/SimData layout for the precision it is compiled with). Used by
// sim_collision_narrow to check that the lane-parallel collision stage equals the single-lane one bit for bit.
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "sim/sim_port.h"

static pthread_barrier_t clanes_barrier;
#undef SIM_SYNC
#define SIM_SYNC() pthread_barrier_wait(&clanes_barrier)
#undef SIM_SFX
#define SIM_SFX(name) name##_clanes

#include "sim/sim_forward.c"

typedef struct {
  const SimModel* m;
  SimWorld w;
  int stage, lane, nlane;
} ClaneArg;

static void* clane_main(void* p) {
  ClaneArg* a = (ClaneArg*)p;
  sim_stage_world(a->m, &a->w, a->stage, a->lane, a->nlane);
  return 0;
}

// runs one stage of world w with nlane (<= 64) threads; model, data: the precision's SimModel/SimData
void sim_collision_lanes_run_stage(const void* model, void* data, int w, int stage, int nlane) {
  const SimModel* m = (const SimModel*)model;
  ClaneArg args[64];
  pthread_t th[64];
  if (nlane > 64) nlane = 64;
  pthread_barrier_init(&clanes_barrier, 0, (unsigned)nlane);
  for (int l = 0; l < nlane; l++) {
    args[l].m = m;
    sim_world(m, (const SimData*)data, w, &args[l].w);
    args[l].stage = stage;
    args[l].lane = l;
    args[l].nlane = nlane;
    pthread_create(&th[l], 0, clane_main, &args[l]);
  }
  for (int l = 0; l < nlane; l++) pthread_join(th[l], 0);
  pthread_barrier_destroy(&clanes_barrier);
}
