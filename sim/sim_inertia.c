// sim_inertia.c: joint-space inertia (mj_crb), its L'DL factorization (mj_factorI) and solves (mj_solveLD),
// in MuJoCo 3.12's layout: lower-triangular CSR, each row listing its ancestor dofs in increasing order with
// the diagonal last. M = L' D L; the factor multiplies by reciprocals and does not clamp the diagonal.
#include "sim_model.h"
#include "sim_math.h"

// composite rigid-body inertias and the mass matrix M (mj_crb; armature folded into dof_armature)
SIM_FN_STAGE void sim_crb(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* crb = d->crb;
  sim_real* M = d->M;
  sim_copy_lanes(crb, d->cinert, 10 * m->nbody, lane, nlane);
  SIM_SYNC();
  sim_gather_children(m, crb, 10, 1, lane, nlane);  // into parents, not into the world
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    int adr = m->M_rowadr[i];
    int diag = adr + m->M_rownnz[i] - 1, Madr_ij = diag;
    sim_real buf[6];
    simu_mulInertVec(buf, crb + 10 * m->dof_bodyid[i], d->cdof + 6 * i);
    // per-world overrides: a simple body's widened entries (M_extra) are its COM offset's coupling, exactly 0
    // (and left so, as MuJoCo's pattern leaves them out) while the world's offset is the model's
    int extra = m->prm && !sim_ipos_moved(m, d, m->dof_bodyid[i]);
    // the row stores a subset of the ancestors (MuJoCo leaves the zero blocks of simple bodies out of the
    // pattern): walk the ancestors and fill the stored ones, never another row's entries. Every stored entry is
    // met once and written once: its start (the armature on the diagonal, else 0) plus its term, as mj_crb's
    // zeroed row and += give it
    for (int j = i; j >= 0 && Madr_ij >= adr; j = m->dof_parentid[j])
      if (m->M_colind[Madr_ij] == j) {
        sim_real v = Madr_ij == diag ? m->dof_armature[i] : 0;
        if (!(extra && m->M_extra[Madr_ij])) v += simu_dot(d->cdof + 6 * j, buf, 6);
        M[Madr_ij] = v;
        Madr_ij--;
      }
  }
  SIM_SYNC();
}

// in-place L'DL factorization of a matrix in M's CSR layout (mj_factorI). Rows are processed from the
// last. Row k's update changes each entry (p, e) of its ancestors' rows once: the ancestor at position p of row
// k (row colind[start + p], whose stored entries are row k's first p + 1) gains mat[start + e] * scl_p, e <= p.
// One lane runs MuJoCo's loops; several lanes take the row's updates in turn from the model's list (M_fac: the
// addresses of each update, so that a lane's loads wait on one table read), so a deep row's update is a few passes
// instead of one lane per ancestor walking its whole row. Every entry gets the same single operation either way:
// the same bits. Row k's scaling by its inverse diagonal waits for the end there (one pass over all entries): no
// later row reads or writes row k, so each entry is scaled from the same value.
SIM_FN_STAGE void sim_factorI(const SimModel* m, sim_real* mat, sim_real* diaginv, int lane, int nlane) {
  const int* rownnz = m->M_rownnz;
  const int* rowadr = m->M_rowadr;
  const int* colind = m->M_colind;
  const int* fac = m->M_fac;
  // a lane's first update of each row is read during the row before (the table's loads wait on nothing)
  int d0 = -1, e0 = 0, p0 = 0;
  if (nlane > 1 && m->nv > 0 && lane < m->M_fac_num[m->nv - 1]) {
    const int* f = fac + 3 * (m->M_fac_adr[m->nv - 1] + lane);
    d0 = f[0], e0 = f[1], p0 = f[2];
  }
  for (int k = m->nv - 1; k >= 0; k--) {
    int start = rowadr[k];
    int diag = rownnz[k] - 1;
    int end = start + diag;
    sim_real invD = 1 / mat[end];
    if (lane == 0) diaginv[k] = invD;
    if (nlane == 1) {
      for (int adr = end - 1; adr >= start; adr--) {
        int i = colind[adr];
        sim_real scl = -mat[adr] * invD;
        sim_real* row = mat + rowadr[i];
        for (int e = 0; e < rownnz[i]; e++) row[e] += mat[start + e] * scl;
      }
    } else {
      const int* f = fac + 3 * m->M_fac_adr[k];
      int nf = m->M_fac_num[k];
      if (d0 >= 0) mat[d0] += mat[e0] * (-mat[p0] * invD);
      SIM_NO_UNROLL
      for (int t = lane + nlane; t < nf; t += nlane) {
        int dst = f[3 * t], se = f[3 * t + 1], sp = f[3 * t + 2];
        mat[dst] += mat[se] * (-mat[sp] * invD);
      }
      d0 = -1;
      if (k > 0 && lane < m->M_fac_num[k - 1]) {
        const int* g = fac + 3 * (m->M_fac_adr[k - 1] + lane);
        d0 = g[0], e0 = g[1], p0 = g[2];
      }
      SIM_SYNC();  // row k's update done: the next row reads its diagonal
      continue;
    }
    for (int e = 0; e < diag; e++) mat[start + e] *= invD;
  }
  if (nlane > 1) {  // the deferred scaling, the lanes over all entries (rows are stored one after another)
    SIM_SYNC();  // diaginv complete
    SIM_NO_UNROLL
    for (int a = lane; a < m->nM; a += nlane) {
      int i = m->M_rowind[a];
      if (a < rowadr[i] + rownnz[i] - 1) mat[a] *= diaginv[i];  // not the diagonal
    }
    SIM_SYNC();
  }
}

// s + the sum over dof i's descendants c (ascending, M_desc) of A(c, i) x[stride c], for a matrix A in M's layout:
// the terms of column i below the diagonal (a product and a sum each, with or without SIM_FMA, which fuses only the
// Newton solver's loops)
SIM_FN_INLINE sim_real sim_M_desc_sum(const SimModel* m, const sim_real* A, const sim_real* x, int stride, int i,
                                      sim_real s) {
  const int* desc = m->M_desc + 2 * m->M_desc_adr[i];
  SIM_NO_UNROLL
  for (int q = 0, nd = m->M_desc_num[i]; q < nd; q++) s += A[desc[2 * q + 1]] * x[stride * desc[2 * q]];
  return s;
}

// one past the last descendant of dof j (dofs are numbered depth-first: a subtree is contiguous, dof_ndesc long)
SIM_FN int sim_dof_subtree_end(const SimModel* m, int j) { return j + 1 + m->dof_ndesc[j]; }

// number of dof depths (dof_level_num is 0 beyond the deepest)
SIM_FN int sim_dof_nlevel(const SimModel* m) {
  int n = 0;
  while (n < m->nv && m->dof_level_num[n]) n++;
  return n;
}

// sim_solveLD's first sweep, the dof at position s of dof_level_dof (none below s0): its row's end and this
// lane's first entry of it (address, column, factor value)
typedef struct SimLDRow {
  int i, adr, end, col;
  sim_real lv;
} SimLDRow;
SIM_FN SimLDRow sim_solveLD_row(const SimModel* m, const sim_real* qLD, int s, int s0, int lane) {
  SimLDRow r = {0, 0, 0, 0, 0};
  if (s < s0) return r;
  r.i = m->dof_level_dof[s];
  r.adr = m->M_rowadr[r.i] + lane;
  r.end = m->M_rowadr[r.i] + m->M_rownnz[r.i] - 1;
  if (r.adr < r.end) {
    r.col = m->M_colind[r.adr];
    r.lv = qLD[r.adr];
  }
  return r;
}

// x <- (L'DL)^-1 x (mj_solveLD, one vector), by dof depths. L' x: each dof scatters its terms into its ancestors,
// the deepest depth first and within a depth descending in id (MuJoCo's sweep runs descending in id: the same
// terms, subtracted in another order where the tree branches); a dof's ancestors across lanes, a sync after
// each dof (two dofs of one depth share ancestors). The diagonal and L x (each row's ancestors, ascending, then
// subtracted: MuJoCo's order) follow, the dofs of one depth across lanes.
SIM_FN_STAGE void sim_solveLD(const SimModel* m, sim_real* x, const sim_real* qLD, const sim_real* diaginv, int lane,
                        int nlane) {
  const int* rownnz = m->M_rownnz;
  const int* rowadr = m->M_rowadr;
  const int* colind = m->M_colind;
  int nv = m->nv;
  SIM_SYNC();  // x complete
  int s0 = nv > 0 ? m->dof_level_num[0] : 0;
  // The warp's form of the same arithmetic (sim_port.h, SIM_WARP): lane l holds x[l] and x[l + 32] in registers.
  // A row lists its stored ancestors ascending, and a stored ancestor j sits where j's own row has its diagonal
  // (rownnz(j) - 1: the pattern below j is j's own, as M_desc also takes it), so a lane finds its dof's entry in
  // row i at that position, or none. L' x: the dofs in the same order, each one's x sent to the lanes by a
  // shuffle. L x: the dofs ascending, each final x sent to its descendants, which add its term to their own
  // sum in the row's ascending order and subtract that sum when their turn comes.
  if (SIM_WARP && nlane == 32 && nv <= 64) {
    int j0 = lane, j1 = lane + 32, in0 = j0 < nv, in1 = j1 < nv;
    int d0 = in0 ? rownnz[j0] - 1 : 0, d1 = in1 ? rownnz[j1] - 1 : 0;
    sim_real x0 = in0 ? x[j0] : 0, x1 = in1 ? x[j1] : 0;
    for (int s = nv - 1; s >= s0; s--) {
      int i = m->dof_level_dof[s], adr = rowadr[i], nd = rownnz[i] - 1;
      sim_real xi = sim_shfl(i < 32 ? x0 : x1, i & 31, lane);
      if (xi == 0) continue;  // the same for every lane
      if (j0 < i && d0 < nd && colind[adr + d0] == j0) x0 -= qLD[adr + d0] * xi;
      if (j1 < i && d1 < nd && colind[adr + d1] == j1) x1 -= qLD[adr + d1] * xi;
    }
    if (in0) x0 *= diaginv[j0];
    if (in1) x1 *= diaginv[j1];
    int a0 = in0 ? rowadr[j0] : 0, a1 = in1 ? rowadr[j1] : 0;
    int n0 = in0 ? rownnz[j0] - 1 : 0, n1 = in1 ? rownnz[j1] - 1 : 0;
    sim_real acc0 = 0, acc1 = 0;
    for (int j = 0; j < nv; j++) {
      if (lane == (j & 31)) {
        if (j < 32 && n0 > 0) x0 -= acc0;
        if (j >= 32 && n1 > 0) x1 -= acc1;
      }
      sim_real xj = sim_shfl(j < 32 ? x0 : x1, j & 31, lane);
      int dj = rownnz[j] - 1;
      if (j0 > j && dj < n0 && colind[a0 + dj] == j) acc0 += qLD[a0 + dj] * xj;
      if (j1 > j && dj < n1 && colind[a1 + dj] == j) acc1 += qLD[a1 + dj] * xj;
    }
    if (in0) x[j0] = x0;
    if (in1) x[j1] = x1;
    SIM_SYNC();
    return;
  }
  // The dofs of depth >= 1, deepest first and descending in id within a depth, are dof_level_dof read backwards
  // from its end. Each dof's row is read during the step before, so that a step waits only on x: the pattern's
  // loads do not depend on it.
  SimLDRow r = sim_solveLD_row(m, qLD, nv - 1, s0, lane);
  for (int s = nv - 1; s >= s0; s--) {
    SimLDRow next = sim_solveLD_row(m, qLD, s - 1, s0, lane);
    sim_real xi = x[r.i];
    if (xi != 0) {
      if (r.adr < r.end) x[r.col] -= r.lv * xi;
      SIM_NO_UNROLL
      for (int a = r.adr + nlane; a < r.end; a += nlane) x[colind[a]] -= qLD[a] * xi;
      SIM_SYNC();
    }
    r = next;
  }
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) x[i] *= diaginv[i];
  SIM_SYNC();
  for (int l = 1, nlev = sim_dof_nlevel(m); l < nlev; l++) {
    int ladr = m->dof_level_adr[l], num = m->dof_level_num[l];
    SIM_NO_UNROLL
    for (int q = lane; q < num; q += nlane) {
      int i = m->dof_level_dof[ladr + q];
      int nd = rownnz[i] - 1;
      if (nd <= 0) continue;
      int adr = rowadr[i];
      sim_real s = 0;
      SIM_NO_UNROLL
      for (int k = 0; k < nd; k++) s += qLD[adr + k] * x[colind[adr + k]];
      x[i] -= s;
    }
    SIM_SYNC();
  }
}

// y = M x for M in lower-triangular CSR (symmetric product), one output per lane: its row (diagonal first, then
// ascending), then its descendants' entries ascending in id, the order of the serial row-then-scatter sweep
SIM_FN void sim_mulM(const SimModel* m, const sim_real* M, sim_real* y, const sim_real* x, int lane, int nlane) {
  SIM_SYNC();  // x complete
  SIM_NO_UNROLL
  for (int j = lane; j < m->nv; j += nlane) {
    int adr = m->M_rowadr[j], diag = adr + m->M_rownnz[j] - 1;
    sim_real s = M[diag] * x[j];
    for (int k = adr; k < diag; k++) s += M[k] * x[m->M_colind[k]];
    y[j] = sim_M_desc_sum(m, M, x, 1, j, s);
  }
  SIM_SYNC();
}
