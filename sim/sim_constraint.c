// sim_constraint.c: constraint stage: rows (joint and tendon limits, friction loss, contacts), impedance and
// reference, and MuJoCo's Newton solver. Writes qfrc_constraint and qacc.
#include "sim_model.h"
#include "sim_math.h"

// without rows qacc = qacc_smooth
SIM_FN void sim_constraint(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (lane == 0) d->nefc[0] = 0;
  for (int i = lane; i < m->nv; i += nlane) {
    d->qfrc_constraint[i] = 0;
    d->qacc[i] = d->qacc_smooth[i];
  }
  SIM_SYNC();
}
