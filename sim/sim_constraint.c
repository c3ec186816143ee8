// sim_constraint.c: constraint stage: rows (friction loss, joint and tendon limits, contacts), impedance and
// reference (sim_constraint_rows.c), islands, warm start and MuJoCo's Newton solver (sim_solver.c).
// Writes efc_*, qfrc_constraint, qacc and solver_niter.
#include "sim_model.h"
#include "sim_math.h"
#include "sim_math_geo.h"

#include "sim_constraint_rows.c"
#include "sim_solver.c"

// mj_makeConstraint + mj_island + mj_referenceConstraint: the rows and their islands, everything the solve reads
// but M and the smooth forces (the CUDA backend's staged launch runs it as a kernel of its own)
SIM_FN_STAGE void sim_constraint_rows_islands(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_make_rows(m, d, lane, nlane);
  if (m->ntree == 1) sim_island_onetree(m, d, lane, nlane);
  else if (lane == 0) sim_island(m, d);
  SIM_SYNC();
}
// the rows, then mj_fwdConstraint (Newton); tape >= 0: the entry of a recorded substep, which gets the final Newton
// factor where sim_solve can tape it
SIM_FN_STAGE void sim_constraint_tape(const SimModel* m, SimWorld* d, int tape, int lane, int nlane) {
  sim_constraint_rows_islands(m, d, lane, nlane);
  sim_solve(m, d, tape, lane, nlane);
}
SIM_FN_STAGE void sim_constraint(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_constraint_tape(m, d, -1, lane, nlane);
}
