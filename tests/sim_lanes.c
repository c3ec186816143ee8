// sim_lanes.c: the per-world engine (adjoint included) compiled with real lanes on the CPU: SIM_SYNC() becomes
// a pthread barrier and each lane a thread, as a GPU warp runs one world. Symbols are suffixed _lanes so this
// translation unit links beside adj_sim64 or adj_sim32 (it is compiled in the test's precision: same
// SimModel/SimData layout). The collision, constraint and gradient tests use it to check that lane-parallel
// code equals the single-lane code bit for bit.
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#define SIM_LSUM_EXTERNAL
#define SIM_WARP_EXTERNAL
#include "sim/sim_port.h"

static pthread_barrier_t lanes_barrier;
#undef SIM_SYNC
#define SIM_SYNC() pthread_barrier_wait(&lanes_barrier)

// lane sums as a warp does them: each lane puts its partials (p = lane, lane + nlane, ...) into a shared array,
// then every lane runs the fixed tree over the 32 partials; the second barrier keeps the array until all read
#define LANES_MAXVAL 32
static sim_real lanes_part[LANES_MAXVAL][SIM_NPART];
static inline void sim_lsum_multi(sim_real* part, int nval, sim_real* out, int lane, int nlane) {
  for (int v = 0; v < nval; v++)
    for (int p = lane, k = 0; p < SIM_NPART; p += nlane, k++) lanes_part[v][p] = part[v * SIM_LPART + k];
  SIM_SYNC();
  for (int v = 0; v < nval; v++) {
    sim_real t[SIM_NPART];
    for (int l = 0; l < SIM_NPART; l++) t[l] = lanes_part[v][l];
    for (int off = SIM_NPART / 2; off > 0; off >>= 1)
      for (int l = 0; l < off; l++) t[l] = t[l] + t[l + off];
    out[v] = t[0];
  }
  SIM_SYNC();
}
// shuffle and ballot as a warp does them: every lane posts its value, then reads lane src's (or all 32); the
// second barrier keeps the slots until every lane has read
static sim_real lanes_xchg[32];
static int lanes_pred[32];
static inline sim_real sim_shfl(sim_real x, int src, int lane) {
  lanes_xchg[lane] = x;
  SIM_SYNC();
  sim_real v = lanes_xchg[src];
  SIM_SYNC();
  return v;
}
static inline unsigned sim_ballot(int pred, int lane) {
  lanes_pred[lane] = pred != 0;
  SIM_SYNC();
  unsigned bits = 0;
  for (int l = 0; l < 32; l++) bits |= (unsigned)lanes_pred[l] << l;
  SIM_SYNC();
  return bits;
}
#undef SIM_SFX
#define SIM_SFX(name) name##_lanes

#include "sim/sim_forward.c"

typedef struct {
  const SimModel* m;
  SimWorld w;
  int stage;                       // >= 0: one pipeline stage; < 0: a control step (or its backward)
  int nsub, record, backward, lane, nlane;
} LaneArg;

static void* lane_main(void* p) {
  LaneArg* a = (LaneArg*)p;
  if (a->stage >= 0) sim_stage_world(a->m, &a->w, a->stage, a->lane, a->nlane);
  else if (a->backward) sim_control_step_backward_world(a->m, &a->w, a->nsub, a->lane, a->nlane);
  else sim_control_step_world(a->m, &a->w, a->nsub, a->record, a->lane, a->nlane);
  return 0;
}

static void run_lanes(LaneArg proto, const void* data, int w, int nlane) {
  const SimModel* m = proto.m;
  LaneArg args[64];
  pthread_t th[64];
  if (nlane > 64) nlane = 64;
  pthread_barrier_init(&lanes_barrier, 0, (unsigned)nlane);
  for (int l = 0; l < nlane; l++) {
    args[l] = proto;
    sim_world(m, (const SimData*)data, w, &args[l].w);
    args[l].lane = l;
    args[l].nlane = nlane;
    pthread_create(&th[l], 0, lane_main, &args[l]);
  }
  for (int l = 0; l < nlane; l++) pthread_join(th[l], 0);
  pthread_barrier_destroy(&lanes_barrier);
}

// one stage of world w with nlane (<= 64) threads; model, data: the precision's SimModel/SimData
void sim_lanes_run_stage(const void* model, void* data, int w, int stage, int nlane) {
  LaneArg proto = {0};
  proto.m = (const SimModel*)model;
  proto.stage = stage;
  run_lanes(proto, data, w, nlane);
}

// control step (backward = 0) or its backward (1) of world w with nlane (<= 64) threads
void sim_lanes_run_control(const void* model, void* data, int w, int nsub, int record, int backward, int nlane) {
  LaneArg proto = {0};
  proto.m = (const SimModel*)model;
  proto.stage = -1;
  proto.nsub = nsub, proto.record = record, proto.backward = backward;
  run_lanes(proto, data, w, nlane);
}
