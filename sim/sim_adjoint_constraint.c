// sim_adjoint_constraint.c: the solver adjoint, the slot where the constraint adjoint (physics.md section 3.1,
// "Reverse pass") plugs into the smooth backward. Today: the smooth case, H = M (no rows).
//
// Contract of sim_adj_solver (called once per evaluation of the dynamics, after sim_adj_zero_eval, with the
// forward intermediates of that evaluation in d, including the solver's state at its converged qacc):
//   in:  adj_qacc (nv)  cotangent of the solver's output qacc (from the integrator adjoint)
//   out (add to):  adj_qfrc_smooth  tau-bar = lambda = H^-1 adj_qacc
//                  adj_M            -= sym(lambda qacc') on the lower CSR pattern (sim_adj_M_outer)
//   with rows, also: adj_dv (J v, aref), adj_dq (limit rows' pos), adj_cdof / adj_subtree_com (Jacobians),
//                  adj_geom_xpos / adj_geom_xmat / adj_xpos ... (contact geometry): every adj_* field of
//                  the position and velocity stages is consumed by the smooth backward that follows.
#include "sim_model.h"
#include "sim_math.h"

SIM_FN void sim_adj_solver(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (lane == 0 && d->nefc[0] > 0) d->adj_nconstraint[0]++;  // rows present: their adjoint is missing
  for (int i = lane; i < m->nv; i += nlane) d->adj_tmp[i] = d->adj_qacc[i];
  SIM_SYNC();
  sim_solveLD(m, d->adj_tmp, d->qLD, d->qLDiagInv, lane);  // lambda = M^-1 a-bar
  for (int i = lane; i < m->nv; i += nlane) d->adj_qfrc_smooth[i] += d->adj_tmp[i];
  SIM_SYNC();
  sim_adj_M_outer(m, d->adj_M, d->adj_tmp, d->qacc, -1, lane, nlane);
}
