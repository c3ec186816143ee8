// sim_adjoint_inertia.c: reverse-mode VJPs of sim_inertia.c: mj_crb (M from cinert and cdof) and the
// cotangent of M from a linear solve x = M^-1 b (b-bar = M^-1 x-bar, M-bar = -b-bar x'), symmetrized onto the
// stored lower CSR triangle: an off-diagonal stored entry stands for M_ij and M_ji and gets both terms, the
// diagonal gets one (no double counting).
#include "sim_model.h"
#include "sim_math.h"

// Mbar += scale * sym(u v') on M's lower CSR pattern, the stored entries across lanes (each its own sum: rows
// across lanes left a G1's longest arm rows, 16 entries, on a lane each, and three of them for a second pass)
SIM_FN void sim_adj_M_outer(const SimModel* m, sim_real* Mbar, const sim_real* u, const sim_real* v, sim_real scale,
                            int lane, int nlane) {
  SIM_NO_UNROLL
  for (int k = lane; k < m->nM; k += nlane) {
    int i = m->M_rowind[k], j = m->M_colind[k];
    if (j == i) Mbar[k] += scale * u[i] * v[i];
    else Mbar[k] += scale * (u[i] * v[j] + u[j] * v[i]);
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

// crb VJP: adj_M -> adj_cdof, adj_crb -> adj_cinert (accumulated). M(i,j) = cdof_j' buf_i with
// buf_i = crb_body(i) cdof_i, j ancestor-or-self of i. Lane-parallel in three gathers (no shared writes):
// rows i (buf, buf-bar), columns j (cdof_j-bar from the rows below j), bodies (crb-bar from their dofs).
SIM_FN_STAGE void sim_adj_crb(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* crbbar = d->adj_crb;
  sim_real* buf = d->adj_buf6;              // (nv, 6)
  sim_real* bufbar = d->adj_buf6 + 6 * m->nv;  // (nv, 6)
  int nv = m->nv;
  // per-world overrides: widened entries left 0 by the forward (sim_crb: a simple body whose COM offset is
  // the model's) are 0 for every state and mass but not for every COM offset. With the offset o = xipos -
  // xanchor = R ipos (0 here), such an entry is m v_i . v_j (v the linear part of cdof, v = v0 + w x o), so its
  // cotangent goes to ipos alone: o-bar += M-bar m (v_j x w_i + v_i x w_j); the generic pass below skips it
  // (the other cotangents then keep the bits of overrides off)
  if (m->prm) {
    const sim_real* mass = sim_prm_mass(m, d);
    for (int b = 1 + lane; b < m->nbody; b += nlane) {
      if (m->body_dofnum[b] == 0 || sim_ipos_moved(m, d, b)) continue;
      sim_real obar[3] = {0, 0, 0}, t[3];
      for (int i = m->body_dofadr[b]; i < m->body_dofadr[b] + m->body_dofnum[b]; i++) {
        int adr = m->M_rowadr[i], diag = adr + m->M_rownnz[i] - 1;
        for (int k = adr; k < diag; k++) {
          if (!m->M_extra[k]) continue;
          const sim_real *ci = d->cdof + 6 * i, *cj = d->cdof + 6 * m->M_colind[k];
          sim_real s = d->adj_M[k] * mass[b];
          simu_cross(t, cj + 3, ci);
          simu_addscl3(obar, obar, t, s);
          simu_cross(t, ci + 3, cj);
          simu_addscl3(obar, obar, t, s);
          d->adj_M[k] = 0;
        }
      }
      simu_mulMatTVec3(t, d->xmat + 9 * b, obar);
      simu_add3(d->adj_body_ipos + 3 * b, d->adj_body_ipos + 3 * b, t);
    }
    SIM_SYNC();
  }
  SIM_NO_UNROLL
  for (int k = lane; k < 10 * m->nbody; k += nlane) crbbar[k] = 0;
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) simu_mulInertVec(buf + 6 * i, d->crb + 10 * m->dof_bodyid[i], d->cdof + 6 * i);
  // bufbar_i = sum over row i's entries (i, j), last first, of M-bar(i,j) cdof_j: rows and components across
  // lanes (rows differ in length by their depth; each component sums its terms in the same order)
  SIM_NO_UNROLL
  for (int t = lane; t < 6 * nv; t += nlane) {
    int i = t / 6, e = t % 6, adr = m->M_rowadr[i];
    sim_real bb = 0;
    for (int k = adr + m->M_rownnz[i] - 1; k >= adr; k--) bb += d->adj_M[k] * d->cdof[6 * m->M_colind[k] + e];
    bufbar[t] = bb;
  }
  SIM_SYNC();
  // cdof_j-bar += sum over rows i >= j holding column j of M-bar(i,j) buf_i, ascending in i: j itself (its
  // diagonal), then its descendants (M_desc); columns and components across lanes
  SIM_NO_UNROLL
  for (int t = lane; t < 6 * nv; t += nlane) {
    int j = t / 6, e = t % 6;
    sim_real acc = d->adj_cdof[t] + d->adj_M[m->M_rowadr[j] + m->M_rownnz[j] - 1] * buf[t];
    d->adj_cdof[t] = sim_M_desc_sum(m, d->adj_M, buf + e, 6, j, acc);
  }
  SIM_SYNC();
  // buf_i = crb cdof_i: cdof_i-bar += crb bufbar_i (the inertia operator is symmetric), crb-bar per body
  for (int b = 1 + lane; b < m->nbody; b += nlane) {
    const sim_real* crb = d->crb + 10 * b;
    for (int i = m->body_dofadr[b]; i < m->body_dofadr[b] + m->body_dofnum[b]; i++) {
      sim_real t[6];
      simu_mulInertVec(t, crb, bufbar + 6 * i);
      for (int e = 0; e < 6; e++) d->adj_cdof[6 * i + e] += t[e];
      simu_adj_mulInertVec(crbbar + 10 * b, bufbar + 6 * i, d->cdof + 6 * i);
    }
  }
  SIM_SYNC();
  // crb_p = sum of cinert over p's subtree (world excluded): push the cotangent down, parents first
  // (a level's bodies and their 10 components across lanes)
  for (int l = 1; l < m->nlevel; l++) {
    int adr = m->level_adr[l], num = m->level_num[l];
    SIM_NO_UNROLL
    for (int k = lane; k < 10 * num; k += nlane) {
      int i = m->level_body[adr + k / 10], e = k % 10;
      int p = m->body_parentid[i];
      if (p > 0) crbbar[10 * i + e] += crbbar[10 * p + e];
      d->adj_cinert[10 * i + e] += crbbar[10 * i + e];
    }
    SIM_SYNC();
  }
}
