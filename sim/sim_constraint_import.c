// sim_constraint_import.c: model constants of the constraint stage, from the compiled mjModel (host code,
// compiled per precision): row capacity and row parameters.
#include <mujoco/mujoco.h>

#include "sim.h"

void sim_constraint_sizes(const void* mjmodel, SimModel* m) {
  (void)mjmodel;
  m->nefcmax = 0;
}

void sim_constraint_fill(const void* mjmodel, SimModel* m) { (void)mjmodel; (void)m; }
