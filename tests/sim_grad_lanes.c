// sim_grad_lanes.c: the engine (adjoint included) compiled with real lanes on the CPU: SIM_SYNC() is a
// pthread barrier and each lane a thread, as a GPU warp runs one world. Symbols are suffixed _gl so this
// translation unit links beside adj_sim64. sim_grad checks that the lane-parallel control step and its
// backward equal the single-lane ones bit for bit.
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "sim/sim_port.h"

static pthread_barrier_t gl_barrier;
#undef SIM_SYNC
#define SIM_SYNC() pthread_barrier_wait(&gl_barrier)
#undef SIM_SFX
#define SIM_SFX(name) name##_gl

#include "sim/sim_forward.c"

typedef struct {
  const SimModel* m;
  SimWorld w;
  int nsub, record, backward, lane, nlane;
} GlArg;

static void* gl_main(void* p) {
  GlArg* a = (GlArg*)p;
  if (a->backward) sim_control_step_backward_world(a->m, &a->w, a->nsub, a->lane, a->nlane);
  else sim_control_step_world(a->m, &a->w, a->nsub, a->record, a->lane, a->nlane);
  return 0;
}

// control step (backward = 0) or its backward (1) of world w with nlane threads; model/data: the float64
// library's SimModel/SimData (same layout)
void sim_grad_lanes_run(const void* model, void* data, int w, int nsub, int record, int backward, int nlane) {
  const SimModel* m = (const SimModel*)model;
  GlArg args[64];
  pthread_t th[64];
  if (nlane > 64) nlane = 64;
  pthread_barrier_init(&gl_barrier, 0, (unsigned)nlane);
  for (int l = 0; l < nlane; l++) {
    args[l].m = m;
    sim_world(m, (const SimData*)data, w, &args[l].w);
    args[l].nsub = nsub;
    args[l].record = record;
    args[l].backward = backward;
    args[l].lane = l;
    args[l].nlane = nlane;
    pthread_create(&th[l], 0, gl_main, &args[l]);
  }
  for (int l = 0; l < nlane; l++) pthread_join(th[l], 0);
  pthread_barrier_destroy(&gl_barrier);
}
