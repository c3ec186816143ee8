// sim_inertia.c: joint-space inertia (mj_crb), its L'DL factorization (mj_factorI) and solves (mj_solveLD),
// in MuJoCo 3.12's layout: lower-triangular CSR, each row listing its ancestor dofs in increasing order with
// the diagonal last. M = L' D L; the factor multiplies by reciprocals and does not clamp the diagonal.
#include "sim_model.h"
#include "sim_math.h"

// composite rigid-body inertias and the mass matrix M (mj_crb; armature folded into dof_armature)
SIM_FN void sim_crb(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* crb = d->crb;
  sim_real* M = d->M;
  for (int i = lane; i < m->nbody; i += nlane) simu_copy(crb + 10 * i, d->cinert + 10 * i, 10);
  SIM_SYNC();
  sim_gather_children(m, crb, 10, 1, lane, nlane);  // into parents, not into the world
  for (int i = lane; i < m->nv; i += nlane) {
    int adr = m->M_rowadr[i];
    int Madr_ij = adr + m->M_rownnz[i] - 1;
    for (int k = adr; k < Madr_ij; k++) M[k] = 0;
    M[Madr_ij] = m->dof_armature[i];
    sim_real buf[6];
    simu_mulInertVec(buf, crb + 10 * m->dof_bodyid[i], d->cdof + 6 * i);
    // per-world overrides: a simple body's widened entries (M_extra) are its COM offset's coupling, exactly 0
    // (and left so, as MuJoCo's pattern leaves them out) while the world's offset is the model's
    int extra = m->prm && !sim_ipos_moved(m, d, m->dof_bodyid[i]);
    // the row stores a subset of the ancestors (MuJoCo leaves the zero blocks of simple bodies out of the
    // pattern): walk the ancestors and fill the stored ones, never another row's entries
    for (int j = i; j >= 0 && Madr_ij >= adr; j = m->dof_parentid[j])
      if (m->M_colind[Madr_ij] == j) {
        if (!(extra && m->M_extra[Madr_ij])) M[Madr_ij] += simu_dot(d->cdof + 6 * j, buf, 6);
        Madr_ij--;
      }
  }
  SIM_SYNC();
}

// in-place L'DL factorization of a matrix in M's CSR layout (mj_factorI). Rows are processed from the
// last; the updates of different ancestor rows are independent and run across lanes.
SIM_FN void sim_factorI(const SimModel* m, sim_real* mat, sim_real* diaginv, int lane, int nlane) {
  const int* rownnz = m->M_rownnz;
  const int* rowadr = m->M_rowadr;
  const int* colind = m->M_colind;
  for (int k = m->nv - 1; k >= 0; k--) {
    int start = rowadr[k];
    int diag = rownnz[k] - 1;
    int end = start + diag;
    sim_real invD = 1 / mat[end];
    if (lane == 0) diaginv[k] = invD;
    for (int adr = end - 1 - lane; adr >= start; adr -= nlane) {
      int i = colind[adr];
      sim_real scl = -mat[adr] * invD;
      sim_real* row = mat + rowadr[i];
      for (int e = 0; e < rownnz[i]; e++) row[e] += mat[start + e] * scl;
    }
    SIM_SYNC();
    for (int e = lane; e < diag; e += nlane) mat[start + e] *= invD;
    SIM_SYNC();
  }
}

// x <- (L'DL)^-1 x (mj_solveLD, one vector), serial: the recurrences are sequential
SIM_FN void sim_solveLD_serial(const SimModel* m, sim_real* x, const sim_real* qLD, const sim_real* diaginv) {
  const int* rownnz = m->M_rownnz;
  const int* rowadr = m->M_rowadr;
  const int* colind = m->M_colind;
  int nv = m->nv;
  for (int i = nv - 1; i >= 0; i--) {
    sim_real xi = x[i];
    if (rownnz[i] == 1 || xi == 0) continue;
    int start = rowadr[i], end = start + rownnz[i] - 1;
    for (int adr = start; adr < end; adr++) x[colind[adr]] -= qLD[adr] * xi;
  }
  for (int i = 0; i < nv; i++) x[i] *= diaginv[i];
  for (int i = 0; i < nv; i++) {
    int nd = rownnz[i] - 1;
    if (nd <= 0) continue;
    int adr = rowadr[i];
    sim_real s = 0;
    for (int k = 0; k < nd; k++) s += qLD[adr + k] * x[colind[adr + k]];
    x[i] -= s;
  }
}

// the same on lane 0, all lanes synchronized after
SIM_FN void sim_solveLD(const SimModel* m, sim_real* x, const sim_real* qLD, const sim_real* diaginv,
                        int lane) {
  if (lane == 0) sim_solveLD_serial(m, x, qLD, diaginv);
  SIM_SYNC();
}

// y = M x for M in lower-triangular CSR (symmetric product). Serial on lane 0.
SIM_FN void sim_mulM(const SimModel* m, const sim_real* M, sim_real* y, const sim_real* x, int lane) {
  if (lane == 0) {
    int nv = m->nv;
    for (int i = 0; i < nv; i++) {
      int adr = m->M_rowadr[i], diag = adr + m->M_rownnz[i] - 1;
      sim_real s = M[diag] * x[i];
      for (int k = adr; k < diag; k++) s += M[k] * x[m->M_colind[k]];
      y[i] = s;
    }
    for (int i = 0; i < nv; i++) {
      int adr = m->M_rowadr[i], diag = adr + m->M_rownnz[i] - 1;
      for (int k = adr; k < diag; k++) y[m->M_colind[k]] += M[k] * x[i];
    }
  }
  SIM_SYNC();
}
