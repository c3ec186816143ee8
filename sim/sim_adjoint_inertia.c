// sim_adjoint_inertia.c: reverse-mode VJPs of sim_inertia.c: mj_crb (M from cinert and cdof) and the
// cotangent of M from a linear solve x = M^-1 b (b-bar = M^-1 x-bar, M-bar = -b-bar x'), symmetrized onto the
// stored lower CSR triangle: an off-diagonal stored entry stands for M_ij and M_ji and gets both terms, the
// diagonal gets one (no double counting).
#include "sim_model.h"
#include "sim_math.h"

// Mbar += scale * sym(u v') on M's lower CSR pattern (rows across lanes)
SIM_FN void sim_adj_M_outer(const SimModel* m, sim_real* Mbar, const sim_real* u, const sim_real* v, sim_real scale,
                            int lane, int nlane) {
  for (int i = lane; i < m->nv; i += nlane) {
    int adr = m->M_rowadr[i], diag = adr + m->M_rownnz[i] - 1;
    for (int k = adr; k < diag; k++) {
      int j = m->M_colind[k];
      Mbar[k] += scale * (u[i] * v[j] + u[j] * v[i]);
    }
    Mbar[diag] += scale * u[i] * v[i];
  }
  SIM_SYNC();
}

// cotangent of the 10 inertia parameters of ubar' (I v) (simu_mulInertVec is linear in them), accumulated
SIM_FN void simu_adj_mulInertVec(sim_real ibar[10], const sim_real ubar[6], const sim_real v[6]) {
  ibar[0] += ubar[0] * v[0];
  ibar[1] += ubar[1] * v[1];
  ibar[2] += ubar[2] * v[2];
  ibar[3] += ubar[0] * v[1] + ubar[1] * v[0];
  ibar[4] += ubar[0] * v[2] + ubar[2] * v[0];
  ibar[5] += ubar[1] * v[2] + ubar[2] * v[1];
  ibar[6] += -ubar[1] * v[5] + ubar[2] * v[4] + ubar[4] * v[2] - ubar[5] * v[1];
  ibar[7] += ubar[0] * v[5] - ubar[2] * v[3] - ubar[3] * v[2] + ubar[5] * v[0];
  ibar[8] += -ubar[0] * v[4] + ubar[1] * v[3] + ubar[3] * v[1] - ubar[4] * v[0];
  ibar[9] += ubar[3] * v[3] + ubar[4] * v[4] + ubar[5] * v[5];
}

// crb VJP: adj_M -> adj_cdof, adj_crb -> adj_cinert (accumulated). Serial on lane 0 (shared cdof rows).
SIM_FN void sim_adj_crb(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* crbbar = d->adj_crb;
  for (int k = lane; k < 10 * m->nbody; k += nlane) crbbar[k] = 0;
  SIM_SYNC();
  if (lane == 0) {
    for (int i = 0; i < m->nv; i++) {
      int adr = m->M_rowadr[i];
      int Madr_ij = adr + m->M_rownnz[i] - 1;
      const sim_real* crb = d->crb + 10 * m->dof_bodyid[i];
      sim_real buf[6], bufbar[6] = {0, 0, 0, 0, 0, 0};
      simu_mulInertVec(buf, crb, d->cdof + 6 * i);
      for (int j = i; j >= 0; j = m->dof_parentid[j]) {
        sim_real mb = d->adj_M[Madr_ij--];
        for (int e = 0; e < 6; e++) {
          d->adj_cdof[6 * j + e] += mb * buf[e];
          bufbar[e] += mb * d->cdof[6 * j + e];
        }
      }
      sim_real t[6];
      simu_mulInertVec(t, crb, bufbar);  // the inertia operator is symmetric
      for (int e = 0; e < 6; e++) d->adj_cdof[6 * i + e] += t[e];
      simu_adj_mulInertVec(crbbar + 10 * m->dof_bodyid[i], bufbar, d->cdof + 6 * i);
    }
    // crb_p = sum of cinert over p's subtree (world excluded): push down the tree
    for (int l = 1; l < m->nlevel; l++) {
      for (int k = 0; k < m->level_num[l]; k++) {
        int i = m->level_body[m->level_adr[l] + k];
        int p = m->body_parentid[i];
        if (p > 0)
          for (int e = 0; e < 10; e++) crbbar[10 * i + e] += crbbar[10 * p + e];
        for (int e = 0; e < 10; e++) d->adj_cinert[10 * i + e] += crbbar[10 * i + e];
      }
    }
  }
  SIM_SYNC();
}
