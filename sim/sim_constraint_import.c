// sim_constraint_import.c: model constants of the constraint stage, from the compiled mjModel (host code,
// compiled per precision): row capacity, friction-loss row parameters and the tree structure of islands.
#include <mujoco/mujoco.h>

#include "sim.h"

// Rows a world can need: every friction-loss dof and tendon, two per limited hinge/slide joint and tendon
// (both sides can be active with a margin), one per ball limit, four per contact (condim 3 pyramid).
void sim_constraint_sizes(const void* mjmodel, SimModel* m) {
  const mjModel* mj = (const mjModel*)mjmodel;
  int n = 0;
  for (int i = 0; i < mj->nv; i++) n += mj->dof_frictionloss[i] != 0;
  for (int t = 0; t < mj->ntendon; t++) n += (mj->tendon_frictionloss[t] > 0) + 2 * (mj->tendon_limited[t] != 0);
  for (int j = 0; j < mj->njnt; j++) {
    if (!mj->jnt_limited[j]) continue;
    int tp = mj->jnt_type[j];
    n += (tp == mjJNT_HINGE || tp == mjJNT_SLIDE) ? 2 : tp == mjJNT_BALL ? 1 : 0;
  }
  n += 4 * m->nconmax;
  m->nefcmax = n;
  m->ntree = mj->ntree;
}

void sim_constraint_fill(const void* mjmodel, SimModel* m) {
  const mjModel* mj = (const mjModel*)mjmodel;
  for (int i = 0; i < mj->nv; i++) {
    for (int k = 0; k < 2; k++) m->dof_solref[2 * i + k] = (sim_real)mj->dof_solref[mjNREF * i + k];
    for (int k = 0; k < 5; k++) m->dof_solimp[5 * i + k] = (sim_real)mj->dof_solimp[mjNIMP * i + k];
    m->dof_treeid[i] = mj->dof_treeid[i];
  }
  for (int t = 0; t < mj->ntendon; t++) {
    for (int k = 0; k < 2; k++) m->tendon_solref_fri[2 * t + k] = (sim_real)mj->tendon_solref_fri[mjNREF * t + k];
    for (int k = 0; k < 5; k++) m->tendon_solimp_fri[5 * t + k] = (sim_real)mj->tendon_solimp_fri[mjNIMP * t + k];
  }
  for (int b = 0; b < mj->nbody; b++) m->body_treeid[b] = mj->body_treeid[b];
  for (int t = 0; t < mj->ntree; t++) m->tree_dofnum[t] = mj->tree_dofnum[t];
}
