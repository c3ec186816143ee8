// sim_solver.c: constraint islands (mj_island), warm start (engine_forward.c:warmstart) and MuJoCo's primal
// Newton solver (engine_solver.c:mj_solPrimal with flg_Newton; dense Hessian, pyramidal cones), matching
// MuJoCo 3.12 iterate for iterate. Included by sim_constraint.c.
//
// Lanes: every lane runs the same control flow and computes the scalars (costs, dot products, the whole
// line search) from the same data, so all lanes take the same branches. Sums over rows or dofs are lane sums
// (sim_port.h: 32 strided partials, a fixed tree), so every lane gets the same bits on the CPU and the GPU.
// Vector work is partitioned: rows across lanes (J v, forces, quadratics, line-search terms), dofs across
// lanes (J' f, M v, updates, triangular solves; the certificate's LDL solve by dof depths), Hessian entries and
// Cholesky rows across lanes; island discovery runs on lane 0. Vectors live in dof space
// (SimData qacc, sol_*); an island solve reads and writes only its own dofs (map_idof2dof) and rows
// (map_iefc2efc), so islands never interact.

// Float32 builds: MuJoCo Warp clamps the tolerance to >= 1e-6 in float32 (its io.py); we do the same,
// because below that the improvement and gradient tests cannot fire in single precision and every solve
// would run to the iteration limit. tolerance = 0 (converged runs) is kept.
#ifdef SIM_DOUBLE
#define SIM_SOLVER_TOLMIN 0
#else
#define SIM_SOLVER_TOLMIN 1e-6
#endif

// ---- islands ----

SIM_FN int sim_dsu_root(int* parent, int t) {
  while (parent[t] != t) t = parent[t];
  return t;
}
// activate tree a (b < 0) or join the trees of a and b; the larger root links to the smaller
SIM_FN void sim_dsu_merge(int* parent, int a, int b) {
  if (a < 0) {
    a = b;
    b = -1;
  }
  if (a < 0) return;
  if (parent[a] < 0) parent[a] = a;
  if (b < 0) return;
  if (parent[b] < 0) parent[b] = b;
  int ra = sim_dsu_root(parent, a), rb = sim_dsu_root(parent, b);
  if (ra == rb) return;
  if (ra < rb) parent[rb] = ra;
  else parent[ra] = rb;
}

// the first tree of a row (any tree it touches; every row touches at least one)
SIM_FN int sim_row_tree(const SimModel* m, const SimWorld* d, int r, int* parent) {
  int type = d->efc_type[r], id = d->efc_id[r], t1 = -1;
  if (type == SIM_CNSTR_FRICTION_DOF) {
    t1 = m->dof_treeid[id];
    sim_dsu_merge(parent, t1, -1);
  } else if (type == SIM_CNSTR_LIMIT_JOINT) {
    t1 = m->dof_treeid[m->jnt_dofadr[id]];
    sim_dsu_merge(parent, t1, -1);
  } else if (type == SIM_CNSTR_FRICTION_TENDON || type == SIM_CNSTR_LIMIT_TENDON) {
    for (int k = 0; k < m->tendon_num[id]; k++) {
      int t = m->dof_treeid[m->wrap_dofadr[m->tendon_adr[id] + k]];
      if (t1 < 0) t1 = t;
      sim_dsu_merge(parent, t1, t);
    }
  } else {
    int ta = m->body_treeid[m->geom_bodyid[d->contact_geom[2 * id]]];
    int tb = m->body_treeid[m->geom_bodyid[d->contact_geom[2 * id + 1]]];
    t1 = ta >= 0 ? ta : tb;
    sim_dsu_merge(parent, ta, tb);
  }
  return t1;
}

// mj_island: islands are the connected components of trees joined by rows; dofs and rows of an island are
// kept in ascending order, islands numbered by their smallest tree. Serial (lane 0).
SIM_FN_STAGE void sim_island(const SimModel* m, SimWorld* d) {
  int nefc = d->nefc[0], nv = m->nv, ntree = m->ntree;
  d->nisland[0] = 0;
  if ((m->disableflags & SIM_DSBL_ISLAND) || nefc == 0 || ntree == 0) return;
  int* parent = d->tree_island;
  for (int t = 0; t < ntree; t++) parent[t] = -1;
  for (int r = 0; r < nefc; r++) d->efc_island[r] = sim_row_tree(m, d, r, parent);
  // point every active tree at its root first: roots are the smallest tree of their island and are
  // relabelled below before any later member reads them, so no walk may pass through a relabelled root
  for (int t = 0; t < ntree; t++)
    if (parent[t] >= 0) parent[t] = sim_dsu_root(parent, t);
  int nisland = 0;
  for (int t = 0; t < ntree; t++) {
    if (parent[t] < 0) continue;
    int root = parent[t];
    parent[t] = root == t ? -2 - nisland++ : parent[root];  // island i stored as -2-i
  }
  for (int t = 0; t < ntree; t++) parent[t] = parent[t] < 0 && parent[t] != -1 ? -2 - parent[t] : -1;
  d->nisland[0] = nisland;
  int* inv = d->island_nv;
  int* ine = d->island_nefc;
  for (int i = 0; i < nisland; i++) inv[i] = ine[i] = 0;
  for (int i = 0; i < nv; i++) {
    int isl = parent[m->dof_treeid[i]];
    if (isl >= 0) inv[isl]++;
  }
  int adr = 0;
  for (int i = 0; i < nisland; i++) {
    d->island_idofadr[i] = adr;
    adr += inv[i];
  }
  int nidof = adr, nfree = 0;
  for (int i = 0; i < nisland; i++) inv[i] = 0;
  for (int i = 0; i < nv; i++) {
    int isl = parent[m->dof_treeid[i]];
    int k = isl >= 0 ? d->island_idofadr[isl] + inv[isl]++ : nidof + nfree++;
    d->map_idof2dof[k] = i;
    d->map_dof2idof[i] = k;
  }
  for (int r = 0; r < nefc; r++) {
    int isl = parent[d->efc_island[r]];
    d->efc_island[r] = isl;
    ine[isl]++;
  }
  adr = 0;
  for (int i = 0; i < nisland; i++) {
    d->island_iefcadr[i] = adr;
    adr += ine[i];
    ine[i] = 0;
  }
  for (int r = 0; r < nefc; r++) {
    int isl = d->efc_island[r];
    d->map_iefc2efc[d->island_iefcadr[isl] + ine[isl]++] = r;
  }
}

// sim_island for a model of one kinematic tree (a single robot): every row touches the tree, so island 0 holds
// all dofs and all rows in order, which the lanes write directly (the result sim_island computes, serially)
SIM_FN void sim_island_onetree(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int nefc = d->nefc[0], nv = m->nv;
  if ((m->disableflags & SIM_DSBL_ISLAND) || nefc == 0) {
    if (lane == 0) d->nisland[0] = 0;
    return;
  }
  if (lane == 0) {
    d->nisland[0] = 1;
    d->tree_island[0] = 0;
    d->island_nv[0] = nv;
    d->island_idofadr[0] = 0;
    d->island_nefc[0] = nefc;
    d->island_iefcadr[0] = 0;
  }
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) d->map_idof2dof[i] = d->map_dof2idof[i] = i;
  SIM_NO_UNROLL
  for (int r = lane; r < nefc; r += nlane) {
    d->efc_island[r] = 0;
    d->map_iefc2efc[r] = r;
  }
}

// ---- shared pieces ----


// res = M v on a set of dofs closed under the tree (dofs NULL: all dofs), one output per lane. M's row i holds
// the ancestor dofs of i (ascending, diagonal last) and a dof's descendants follow it contiguously, each with i
// at position rownnz(i) - 1 of its row. Each output sums its own row (descending), then its descendants' entries
// (ascending, listed in M_desc, so that no load waits on the previous descendant's test): the order in which
// mju_mulSymVecSparse's row sweep accumulates it. Outputs go to lanes in passes of nlane, every second pass in
// reverse: a tree's first dofs (a free joint's six: all the other dofs descend from them) have the longest sums, and
// its last ones, which a second pass holds, short ones, so the lanes of the long sums take no second output.
SIM_FN void sim_mulM_dofs(const SimModel* m, const sim_real* M, sim_real* res, const sim_real* v, const int* dofs,
                          int n, int lane, int nlane) {
  for (int base = 0, pass = 0; base < n; base += nlane, pass++) {
    int k = base + (pass & 1 ? nlane - 1 - lane : lane);
    if (k >= n) continue;
    int i = dofs ? dofs[k] : k, adr = m->M_rowadr[i], diag = m->M_rownnz[i] - 1;
    sim_real s = M[adr + diag] * v[i];
    SIM_NO_UNROLL
    for (int q = diag - 1; q >= 0; q--) s = sim_fmadd(M[adr + q], v[m->M_colind[adr + q]], s);
    const int* desc = m->M_desc + 2 * m->M_desc_adr[i];
    SIM_NO_UNROLL
    for (int q = 0, nd = m->M_desc_num[i]; q < nd; q++) s = sim_fmadd(M[desc[2 * q + 1]], v[desc[2 * q]], s);
    res[i] = s;
  }
}

// J row r times a dof vector, over the island's dofs (ascending). Where SIM_JMASK the sum walks the row's non-zero
// dofs (efc_Jmask), in the same ascending order: the island holds every dof of its rows, and a zero entry's term
// (+-0) leaves a sum that starts at +0 unchanged, so the result is the dense sum's, in about a third of the terms
// for a G1 contact row.
SIM_FN sim_real sim_rowdot(const SimModel* m, const SimWorld* d, int r, const sim_real* v, const int* dofs, int n) {
  const sim_real* J = d->efc_J + (size_t)r * m->nv;
  sim_real s = 0;
  if (SIM_JMASK(m)) {
    for (int w = 0; w < 2; w++)
      for (unsigned bits = (unsigned)d->efc_Jmask[2 * r + w]; bits; bits &= bits - 1) {
        int j = 32 * w + sim_ctz(bits);
        s = sim_fmadd(J[j], v[j], s);
      }
    return s;
  }
  for (int k = 0; k < n; k++) s = sim_fmadd(J[dofs[k]], v[dofs[k]], s);
  return s;
}

// J row r times two dof vectors over all dofs: each sum sim_rowdot's over an island holding the row (the terms at
// dofs outside it are signed zeros that leave the sum as it is), so the Newton solve may start from them
SIM_FN void sim_rowdot2(const SimModel* m, const SimWorld* d, int r, const sim_real* v, const sim_real* u, sim_real* sv,
                        sim_real* su) {
  const sim_real* J = d->efc_J + (size_t)r * m->nv;
  sim_real s = 0, t = 0;
  if (SIM_JMASK(m)) {
    for (int w = 0; w < 2; w++)
      for (unsigned bits = (unsigned)d->efc_Jmask[2 * r + w]; bits; bits &= bits - 1) {
        int j = 32 * w + sim_ctz(bits);
        s = sim_fmadd(J[j], v[j], s);
        t = sim_fmadd(J[j], u[j], t);
      }
  } else {
    for (int j = 0; j < m->nv; j++) {
      s = sim_fmadd(J[j], v[j], s);
      t = sim_fmadd(J[j], u[j], t);
    }
  }
  *sv = s, *su = t;
}

// mj_constraintUpdate_impl for one row (no equality or elliptic rows): force, state; returns the row's cost
SIM_FN sim_real sim_row_update(SimWorld* d, int i, sim_real x) {
  sim_real D = d->efc_D[i], R = d->efc_R[i], f = d->efc_frictionloss[i];
  int type = d->efc_type[i];
  d->efc_force[i] = -D * x;
  if (type == SIM_CNSTR_FRICTION_DOF || type == SIM_CNSTR_FRICTION_TENDON) {
    if (x <= -R * f) {
      d->efc_force[i] = f;
      d->efc_state[i] = SIM_CSTATE_LINEARNEG;
      return (sim_real)-0.5 * R * f * f - f * x;
    } else if (x >= R * f) {
      d->efc_force[i] = -f;
      d->efc_state[i] = SIM_CSTATE_LINEARPOS;
      return (sim_real)-0.5 * R * f * f + f * x;
    }
    d->efc_state[i] = SIM_CSTATE_QUADRATIC;
    return (sim_real)0.5 * D * x * x;
  }
  if (x >= 0) {
    d->efc_force[i] = 0;
    d->efc_state[i] = SIM_CSTATE_SATISFIED;
    return 0;
  }
  d->efc_state[i] = SIM_CSTATE_QUADRATIC;
  return (sim_real)0.5 * D * x * x;
}

// forces, states and costs of a row list (rows across lanes), synchronized after
SIM_FN void sim_rows_update(SimWorld* d, const int* rows, int nr, const sim_real* jar, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int q = lane; q < nr; q += nlane) {
    int i = rows[q];
    d->efc_cost[i] = sim_row_update(d, i, jar[i]);
  }
  SIM_SYNC();
}

// constraint update over a row list (rows across lanes); returns the total cost (a lane sum over rows)
SIM_FN sim_real sim_constraint_update(SimWorld* d, const int* rows, int nr, const sim_real* jar, int lane, int nlane) {
  sim_rows_update(d, rows, nr, jar, lane, nlane);
  sim_real s;
  SIM_LSUM(s, nr, q, d->efc_cost[rows[q]], lane, nlane);
  return s;
}

// ---- Newton solver on one island (or all rows and dofs: monolithic) ----

typedef struct SimPnt {
  sim_real alpha, cost, deriv[2];
} SimPnt;

typedef struct SimSolveCtx {
  const int* dofs;  // island dofs, ascending
  const int* rows;  // island rows, ascending
  int n, nr;
  sim_real scale;
  sim_real quadGauss[3];  // [1], [2]: the search direction's Gauss quadratic
  int LSiter;
} SimSolveCtx;

// Huber cost of a friction-loss row
SIM_FN sim_real sim_friction_cost(sim_real x, sim_real f, sim_real Rf, sim_real D) {
  if (-Rf < x && x < Rf) return (sim_real)0.5 * D * x * x;
  else if (x <= -Rf) return f * ((sim_real)-0.5 * Rf - x);
  else return f * ((sim_real)-0.5 * Rf + x);
}
SIM_FN sim_real sim_friction_costdif(sim_real start, sim_real x, sim_real f, sim_real Rf, sim_real D) {
  int s0 = (-Rf < start && start < Rf) ? 0 : (start <= -Rf ? -1 : 1);
  int s1 = (-Rf < x && x < Rf) ? 0 : (x <= -Rf ? -1 : 1);
  if (s0 == 0 && s1 == 0) return (sim_real)0.5 * D * (x - start) * (x + start);
  if (s0 == -1 && s1 == -1) return f * (start - x);
  if (s0 == 1 && s1 == 1) return f * (x - start);
  return sim_friction_cost(x, f, Rf, D) - sim_friction_cost(start, f, Rf, D);
}

// one row's terms of PrimalEval at step alpha, added to acc = (cost, deriv0, deriv1, qt0, qt1, qt2)
SIM_FN void sim_row_eval(const SimWorld* d, int i, sim_real alpha, sim_real* acc) {
  int type = d->efc_type[i];
  if (type == SIM_CNSTR_FRICTION_DOF || type == SIM_CNSTR_FRICTION_TENDON) {
    sim_real start = d->efc_Jaref[i], dir = d->efc_Jv[i];
    sim_real x = start + alpha * dir;
    sim_real f = d->efc_frictionloss[i], D = d->efc_D[i], Rf = d->efc_R[i] * f;
    acc[0] += sim_friction_costdif(start, x, f, Rf, D);
    if (-Rf < x && x < Rf) {
      acc[1] += D * x * dir;
      acc[2] += D * dir * dir;
    } else if (x <= -Rf) {
      acc[1] += -f * dir;
    } else {
      acc[1] += f * dir;
    }
    return;
  }
  const sim_real* quad = d->efc_quad + 3 * i;
  sim_real start = d->efc_Jaref[i];
  sim_real x = start + alpha * d->efc_Jv[i];
  sim_real cost0 = start < 0 ? quad[0] : 0;
  if (x < 0) {
    acc[3] += quad[0] - cost0;
    acc[4] += quad[1];
    acc[5] += quad[2];
  } else {
    acc[0] -= cost0;
  }
}

// PrimalEval's totals t (the six row sums) plus the Gauss quadratic into point p
SIM_FN void sim_pnt_finish(SimSolveCtx* c, SimPnt* p, const sim_real* t) {
  sim_real alpha = p->alpha;
  sim_real qt0 = t[3], qt1 = c->quadGauss[1] + t[4], qt2 = c->quadGauss[2] + t[5];
  sim_real cost = t[0] + (alpha * alpha * qt2 + alpha * qt1 + qt0);
  sim_real deriv0 = t[1] + (2 * alpha * qt2 + qt1);
  sim_real deriv1 = t[2] + 2 * qt2;
  if (deriv1 <= 0) deriv1 = (sim_real)SIM_MINVAL;  // not convex: SHOULD NOT OCCUR
  p->cost = cost;
  p->deriv[0] = deriv0;
  p->deriv[1] = deriv1;
  c->LSiter++;
}

// PrimalEval of np (<= SIM_LS_MAXPNT) step sizes in one pass over the rows: cost(alpha) - cost(0) and its
// first two derivatives (reads shared data only). Rows across lanes: each lane accumulates its strided partials
// of the six sums per point, and all 6 np sums meet in one lane-sum call. Each point's sums are those of a pass
// of its own (same partials, same tree), so batching does not change a bit.
#define SIM_LS_MAXPNT 3
SIM_FN void sim_primal_evaln(const SimWorld* d, SimSolveCtx* c, SimPnt* const* p, int np, int lane, int nlane) {
  sim_real part[6 * SIM_LS_MAXPNT * SIM_LPART];
  SIM_PART_LOOP(k, pp, lane, nlane) {
    if (np == 1) {  // the common case, with constant indices: the sums stay in registers
      sim_real a[6] = {0, 0, 0, 0, 0, 0};
      SIM_NO_UNROLL
      for (int q = pp; q < c->nr; q += SIM_NPART) sim_row_eval(d, c->rows[q], p[0]->alpha, a);
      for (int v = 0; v < 6; v++) part[v * SIM_LPART + k] = a[v];
      continue;
    }
    sim_real acc[SIM_LS_MAXPNT][6];
    for (int j = 0; j < np; j++)
      for (int v = 0; v < 6; v++) acc[j][v] = 0;
    SIM_NO_UNROLL
    for (int q = pp; q < c->nr; q += SIM_NPART)
      for (int j = 0; j < np; j++) sim_row_eval(d, c->rows[q], p[j]->alpha, acc[j]);
    for (int j = 0; j < np; j++)
      for (int v = 0; v < 6; v++) part[(6 * j + v) * SIM_LPART + k] = acc[j][v];
  }
  sim_real t[6 * SIM_LS_MAXPNT];
  sim_lsum_multi(part, 6 * np, t, lane, nlane);
  for (int j = 0; j < np; j++) sim_pnt_finish(c, p[j], t + 6 * j);
}

SIM_FN void sim_primal_eval(const SimWorld* d, SimSolveCtx* c, SimPnt* p, int lane, int nlane) {
  sim_primal_evaln(d, c, &p, 1, lane, nlane);
}

// updateBracket without its evaluation: move bracket p to a candidate with a same-sign derivative closer to 0
// and set the next point's step; the caller evaluates pnext when the flag is set
SIM_FN int sim_update_bracket(SimPnt* p, const SimPnt* cand, SimPnt* pnext) {
  int flag = 0;
  for (int i = 0; i < 3; i++) {
    if (p->deriv[0] < 0 && cand[i].deriv[0] < 0 && p->deriv[0] < cand[i].deriv[0]) {
      *p = cand[i];
      flag = 1;
    } else if (p->deriv[0] > 0 && cand[i].deriv[0] > 0 && p->deriv[0] > cand[i].deriv[0]) {
      *p = cand[i];
      flag = 2;
    }
  }
  if (flag) pnext->alpha = p->alpha - p->deriv[0] / p->deriv[1];
  return flag;
}

// a . b over the island's dofs (a lane sum)
SIM_FN sim_real sim_dot_dofs(const sim_real* a, const sim_real* b, const int* dofs, int n, int lane, int nlane) {
  sim_real s;
  SIM_LSUM(s, n, k, a[dofs[k]] * b[dofs[k]], lane, nlane);
  return s;
}

// PrimalSearch: exact piecewise-quadratic line search along sol_search; returns alpha and the improvement.
// PrimalPrepare (Jv and the row quadratics), the search direction's dof dots and the evaluation at alpha = 0
// share one pass and one lane-sum call. In the bracketed phase the points MuJoCo evaluates one after another
// but from data known beforehand (the two brackets' next points and the following midpoint) are evaluated in
// one pass; LSiter counts the evaluations MuJoCo makes, so the iterates and counts are MuJoCo's.
SIM_FN_STAGE sim_real sim_primal_search(const SimModel* m, SimWorld* d, SimSolveCtx* c, sim_real tolerance,
                                  int ls_iterations, sim_real* improvement, int lane, int nlane) {
  const int* dofs = c->dofs;
  int n = c->n;
  SimPnt p0, p1, p2, pmid, p1next, p2next;
  c->LSiter = 0;
  *improvement = 0;
  sim_real* v = d->sol_search;
  sim_mulM_dofs(m, d->M, d->sol_Mv, v, dofs, n, lane, nlane);
  SIM_SYNC();
  // partials: v.v, v.Ma, qfrc_smooth.v, v.Mv (dofs), then p0's six row sums
  sim_real part[10 * SIM_LPART];
  p0.alpha = 0;
  SIM_PART_LOOP(k, pp, lane, nlane) {
    sim_real vv = 0, vMa = 0, fv = 0, vMv = 0;
    SIM_NO_UNROLL
    for (int q = pp; q < n; q += SIM_NPART) {
      int j = dofs[q];
      vv += v[j] * v[j];
      vMa += v[j] * d->sol_Ma[j];
      fv += d->qfrc_smooth[j] * v[j];
      vMv += v[j] * d->sol_Mv[j];
    }
    sim_real acc[6] = {0, 0, 0, 0, 0, 0};
    SIM_NO_UNROLL
    for (int q = pp; q < c->nr; q += SIM_NPART) {
      int i = c->rows[q];
      sim_real Jv = sim_rowdot(m, d, i, v, dofs, n);
      d->efc_Jv[i] = Jv;
      // PrimalPrepare, per row
      sim_real* quad = d->efc_quad + 3 * i;
      sim_real D = d->efc_D[i], Jaref = d->efc_Jaref[i];
      sim_real DJ0 = D * Jaref;
      quad[0] = Jaref * DJ0;
      quad[1] = Jv * DJ0;
      quad[2] = Jv * D * Jv;
      quad[0] *= (sim_real)0.5;
      quad[2] *= (sim_real)0.5;
      sim_row_eval(d, i, p0.alpha, acc);
    }
    part[0 * SIM_LPART + k] = vv;
    part[1 * SIM_LPART + k] = vMa;
    part[2 * SIM_LPART + k] = fv;
    part[3 * SIM_LPART + k] = vMv;
    for (int t = 0; t < 6; t++) part[(4 + t) * SIM_LPART + k] = acc[t];
  }
  sim_real tot[10];
  sim_lsum_multi(part, 10, tot, lane, nlane);
  sim_real snorm = sim_sqrt(tot[0]);
  if (snorm < (sim_real)SIM_MINVAL) return 0;
  sim_real gtol = tolerance * snorm / c->scale;
  c->quadGauss[1] = tot[1] - tot[2];
  c->quadGauss[2] = (sim_real)0.5 * tot[3];
  sim_pnt_finish(c, &p0, tot + 4);

  p1.alpha = p0.alpha - p0.deriv[0] / p0.deriv[1];
  sim_primal_eval(d, c, &p1, lane, nlane);
  if (sim_fabs(p1.deriv[0]) < gtol && (p1.alpha == 0 || p1.cost < 0)) {
    *improvement = -p1.cost;
    return p1.alpha;
  }
  int dir = p1.deriv[0] < 0 ? 1 : -1;

  // one-sided Newton march
  p2 = p0;
  while (p1.deriv[0] * dir <= -gtol && c->LSiter < ls_iterations) {
    p2 = p1;
    p1.alpha -= p1.deriv[0] / p1.deriv[1];
    sim_primal_eval(d, c, &p1, lane, nlane);
    if (sim_fabs(p1.deriv[0]) < gtol && p1.cost < 0) {
      *improvement = -p1.cost;
      return p1.alpha;
    }
  }
  if (c->LSiter >= ls_iterations) {
    *improvement = -p1.cost;
    return p1.alpha;
  }

  // bracketed search: each pass evaluates the points whose steps are known (p1next first, or the brackets'
  // next points), plus the midpoint of the loop's next round when that round will run
  p2next = p1;
  p1next.alpha = p1.alpha - p1.deriv[0] / p1.deriv[1];
  SimPnt* batch[SIM_LS_MAXPNT];
  int nb = 0;
  batch[nb++] = &p1next;
  int have_mid = 0;  // pmid already evaluated for the coming round
  for (;;) {
    if (c->LSiter + nb < ls_iterations) {  // the round after these evaluations runs: its midpoint too
      pmid.alpha = (sim_real)0.5 * (p1.alpha + p2.alpha);
      batch[nb++] = &pmid;
      have_mid = 1;
    }
    if (nb) sim_primal_evaln(d, c, batch, nb, lane, nlane);
    if (!have_mid) break;  // LSiter reached ls_iterations
    have_mid = 0;
    SimPnt cand[3];
    cand[0] = p1next;
    cand[1] = p2next;
    cand[2] = pmid;
    sim_real bestcost = 0;
    int best = -1;
    for (int i = 0; i < 3; i++)
      if (sim_fabs(cand[i].deriv[0]) < gtol && (best == -1 || cand[i].cost < bestcost)) {
        bestcost = cand[i].cost;
        best = i;
      }
    if (best >= 0) {
      *improvement = -cand[best].cost;
      return cand[best].alpha;
    }
    int b1 = sim_update_bracket(&p1, cand, &p1next);
    int b2 = sim_update_bracket(&p2, cand, &p2next);
    if (!b1 && !b2) {
      *improvement = -pmid.cost;
      return pmid.alpha;
    }
    nb = 0;
    if (b1) batch[nb++] = &p1next;
    if (b2) batch[nb++] = &p2next;
  }
  if (p1.cost <= p2.cost && p1.cost < 0) {
    *improvement = -p1.cost;
    return p1.alpha;
  } else if (p2.cost <= p1.cost && p2.cost < 0) {
    *improvement = -p2.cost;
    return p2.alpha;
  }
  return 0;
}

// PrimalUpdateConstraint + PrimalUpdateGrad: forces and states (rows across lanes), island
// qfrc_constraint and grad (dofs across lanes). MuJoCo's total cost here feeds only its statistics: not summed.
SIM_FN_STAGE void sim_primal_update(const SimModel* m, SimWorld* d, SimSolveCtx* c, int lane, int nlane) {
  const int* dofs = c->dofs;
  int n = c->n, nv = m->nv;
  sim_rows_update(d, c->rows, c->nr, d->efc_Jaref, lane, nlane);
  // two dofs per lane and pass (k and k + nlane), their sums as two chains in one walk over the rows: the G1's 35
  // dofs take one pass of the warp instead of a second one for three lanes. A row without force (satisfied) is
  // skipped, the same test on every lane: its terms are signed zeros, and a sum that starts at +0 never becomes -0
  // (x + -x rounds to +0), so adding them leaves every sum's bits as they are.
  for (int k = lane; k < n; k += 2 * nlane) {
    int j0 = dofs[k], two = k + nlane < n, j1 = two ? dofs[k + nlane] : j0;
    sim_real s0 = 0, s1 = 0;
    for (int q = 0; q < c->nr; q++) {
      int r = c->rows[q];
      sim_real f = d->efc_force[r];
      if (f == 0) continue;
      const sim_real* J = d->efc_J + (size_t)r * nv;
      s0 += J[j0] * f;
      s1 += J[j1] * f;
    }
    d->qfrc_constraint[j0] = s0;
    d->sol_grad[j0] = d->sol_Ma[j0] - d->qfrc_smooth[j0] - s0;
    if (two) {
      d->qfrc_constraint[j1] = s1;
      d->sol_grad[j1] = d->sol_Ma[j1] - d->qfrc_smooth[j1] - s1;
    }
  }
  SIM_SYNC();
}

// The island's rows in the quadratic state, ascending, into sol_qrow (their count returned to every lane) and,
// with chg, those whose quadratic state changed since efc_oldstate into chg (their count in *nchg). A warp
// (SIM_WARP) takes 32 rows per pass and places each listed row by a ballot's prefix count; elsewhere lane 0 walks
// them. Both give the same lists.
SIM_FN int sim_hessian_rows(SimWorld* d, const SimSolveCtx* c, int* chg, int* nchg_out, int lane, int nlane) {
  if (SIM_WARP && nlane == 32) {
    int k = 0, nchg = 0;
    for (int base = 0; base < c->nr; base += 32) {
      int q = base + lane, r = -1, is = 0, ch = 0;
      if (q < c->nr) {
        r = c->rows[q];
        is = d->efc_state[r] == SIM_CSTATE_QUADRATIC;
        ch = chg && is != (d->efc_oldstate[r] == SIM_CSTATE_QUADRATIC);
      }
      k = sim_ballot_append(d->sol_qrow, k, is, r, lane);
      if (chg) nchg = sim_ballot_append(chg, nchg, ch, r, lane);
    }
    SIM_SYNC();  // the lists are read by other lanes
    if (nchg_out) *nchg_out = nchg;
    return k;
  }
  if (lane == 0) {
    int k = 0, nchg = 0;
    for (int q = 0; q < c->nr; q++) {
      int r = c->rows[q], is = d->efc_state[r] == SIM_CSTATE_QUADRATIC;
      if (is) d->sol_qrow[k++] = r;
      if (chg && is != (d->efc_oldstate[r] == SIM_CSTATE_QUADRATIC)) chg[nchg++] = r;
    }
    d->sol_flag[0] = nchg;
    d->sol_flag[1] = k;
  }
  SIM_SYNC();
  if (nchg_out) *nchg_out = d->sol_flag[0];
  return d->sol_flag[1];
}

// M(ja, jb), ja >= jb: the diagonal, or where jb is an ancestor of ja its entry in ja's row, else +0. A row lists
// the dof's ancestors ascending (mj_makeM's sparsity), the one at depth p at position p, and jb's depth is
// M_rownnz[jb] - 1: one test of the entry at that position says whether jb is an ancestor.
SIM_FN_INLINE sim_real sim_M_entry(const SimModel* m, const SimWorld* d, int ja, int jb) {
  int adr = m->M_rowadr[ja], p = m->M_rownnz[jb] - 1;
  if (ja == jb) return d->M[adr + p];
  return p < m->M_rownnz[ja] - 1 && m->M_colind[adr + p] == jb ? d->M[adr + p] : (sim_real)0;
}

// entry (a, b), a >= b, of the island Hessian H = M + J' D J (island-local n x n): the nq quadratic rows in
// ascending order (MuJoCo's accumulation order), then M (mju_sqrMatTD_impl, mju_addToSymSparse; the island lists
// its dofs ascending, so ja >= jb). Where M has no entry the sum adds +0, which leaves it unchanged: it starts at
// +0 and so is never -0. MuJoCo skips a row whose J(r, a) is 0; its term here is a signed zero, which leaves such a
// sum unchanged as well (finite J), and without the test the rows' loads do not wait on each other's. Four rows a
// pass, their loads issued before the four terms are added in order: the worlds with the most rows end a launch
// (bench/RESULTS.md 2026-12-07, world clocks), their warps often alone on a scheduler, where each pass of a loop of
// dependent loads waits out their latency.
SIM_FN sim_real sim_hessian_entry(const SimModel* m, const SimWorld* d, const SimSolveCtx* c, int nq, int a, int b) {
  int nv = m->nv, ja = c->dofs[a], jb = c->dofs[b], q = 0;
  const int* qrow = d->sol_qrow;
  const sim_real *J = d->efc_J, *D = d->efc_D;
  sim_real s = 0;
  SIM_NO_UNROLL
  for (; q + 4 <= nq; q += 4) {
    size_t r0 = (size_t)qrow[q], r1 = (size_t)qrow[q + 1], r2 = (size_t)qrow[q + 2], r3 = (size_t)qrow[q + 3];
    sim_real u0 = J[r0 * nv + ja] * D[r0], u1 = J[r1 * nv + ja] * D[r1];
    sim_real u2 = J[r2 * nv + ja] * D[r2], u3 = J[r3 * nv + ja] * D[r3];
    sim_real v0 = J[r0 * nv + jb], v1 = J[r1 * nv + jb], v2 = J[r2 * nv + jb], v3 = J[r3 * nv + jb];
    s = sim_fmadd(v0, u0, s);
    s = sim_fmadd(v1, u1, s);
    s = sim_fmadd(v2, u2, s);
    s = sim_fmadd(v3, u3, s);
  }
  SIM_NO_UNROLL
  for (; q < nq; q++) {
    size_t r = (size_t)qrow[q];
    s = sim_fmadd(J[r * nv + jb], J[r * nv + ja] * D[r], s);
  }
  return s + sim_M_entry(m, d, ja, jb);
}

#ifdef __CUDA_ARCH__
// a - u.x v.x - u.y v.y - u.z v.z - u.w v.w, in that order
SIM_FN_INLINE float sim_chol_fmsub4(float4 u, float4 v, float a) {
  a = sim_fmsub(u.x, v.x, a);
  a = sim_fmsub(u.y, v.y, a);
  a = sim_fmsub(u.z, v.z, a);
  return sim_fmsub(u.w, v.w, a);
}
#endif
// a[c] - x[0] y_c[0] - ... - x[k-1] y_c[k-1] for the four rows y_c of a block (c = 0..3), each one term at a time
// in ascending j: the chains of row x's entries in the block's four columns. vec: the rows lie in shared memory,
// 16-byte aligned (SIM_SOL_LD), and k is a multiple of 4: the GPU reads them four entries at a time, and each entry
// of x serves four chains.
SIM_FN_INLINE void sim_chol_chain4(const sim_real* x, const sim_real* y0, const sim_real* y1, const sim_real* y2,
                                   const sim_real* y3, int k, sim_real* a, int vec) {
  sim_real s0 = a[0], s1 = a[1], s2 = a[2], s3 = a[3];
#ifdef __CUDA_ARCH__
  if (vec) {
    for (int j = 0; j < k; j += 4) {
      float4 u = *(const float4*)(x + j);
      s0 = sim_chol_fmsub4(u, *(const float4*)(y0 + j), s0);
      s1 = sim_chol_fmsub4(u, *(const float4*)(y1 + j), s1);
      s2 = sim_chol_fmsub4(u, *(const float4*)(y2 + j), s2);
      s3 = sim_chol_fmsub4(u, *(const float4*)(y3 + j), s3);
    }
    a[0] = s0, a[1] = s1, a[2] = s2, a[3] = s3;
    return;
  }
#else
  (void)vec;
#endif
  for (int j = 0; j < k; j++) {
    sim_real u = x[j];
    s0 = sim_fmsub(u, y0[j], s0);
    s1 = sim_fmsub(u, y1[j], s1);
    s2 = sim_fmsub(u, y2[j], s2);
    s3 = sim_fmsub(u, y3[j], s3);
  }
  a[0] = s0, a[1] = s1, a[2] = s2, a[3] = s3;
}

// the warp form of sim_chol_factor (below), four columns a block; shared: L and H lie in shared memory, loaded as
// such, L's rows 16-byte aligned. Lane l takes the block's rows k + l and, while more than 32 rows remain,
// k + l + 32, and keeps one chain per row and block column in registers. The chains over the final columns j < k
// carry nothing from one block column to the next, so the four run side by side, each entry of a row read once
// for four terms; then the block's columns in turn: the diagonal's chain (lane c's, for column k + c) reaches
// every lane by a shuffle, the column is scaled by its inverse, and its entries L(i, k + c) enter the later block
// columns' chains as their next term, L(k + c', k + c) from lane c' by a shuffle. Each entry's chain is the
// sequence of operations of sim_chol_factor's loop, ascending j, and one sync per block, not per column. Each loop
// is uniform over the warp: a lane past the last row (or a block column past the last, n mod 4) computes at a
// clamped address (row or column n - 1) and discards the value. From the block holding column k0 on: the columns
// before it are final.
SIM_FN_INLINE void sim_chol_factor_warp(sim_real* L, const sim_real* H, int n, int k0, int lane, int shared) {
  if (shared) {
    SIM_ASSUME_SHARED(L);
    SIM_ASSUME_SHARED(H);
  }
  int ld = SIM_SOL_LD(n);
  for (int k = k0 & ~3; k < n; k += 4) {
    int r0 = k + lane, r1 = k + lane + 32, two = n - k > 32;  // two: warp-uniform
    int i0 = SIM_MIN(r0, n - 1), i1 = SIM_MIN(r1, n - 1);
    int col[4] = {k, SIM_MIN(k + 1, n - 1), SIM_MIN(k + 2, n - 1), SIM_MIN(k + 3, n - 1)};
    sim_real a[4], b[4] = {0, 0, 0, 0};
    // H's lower triangle only: a lane above a block column (i0 < col) reads its mirror entry, a value it discards
    for (int c = 0; c < 4; c++) a[c] = H[SIM_TRI(SIM_MAX(i0, col[c]), SIM_MIN(i0, col[c]))];
    sim_chol_chain4(L + i0 * ld, L + col[0] * ld, L + col[1] * ld, L + col[2] * ld, L + col[3] * ld, k, a, shared);
    if (two) {
      for (int c = 0; c < 4; c++) b[c] = H[SIM_TRI(i1, col[c])];
      sim_chol_chain4(L + i1 * ld, L + col[0] * ld, L + col[1] * ld, L + col[2] * ld, L + col[3] * ld, k, b,
                      shared);
    }
    for (int c = 0; c < 4; c++) {  // a constant count, so that a and b stay in registers
      int kc = k + c;
      if (kc >= n) break;
      sim_real tmp = sim_shfl(a[c], c, lane);
      int deficient = tmp < (sim_real)SIM_MINVAL;
      if (deficient) tmp = (sim_real)SIM_MINVAL;
      sim_real diag = sim_sqrt(tmp), inv = 1 / diag;
      sim_real v = deficient ? 0 : a[c] * inv, w = deficient ? 0 : b[c] * inv;
      if (r0 > kc && r0 < n) {
        L[r0 * ld + kc] = v;
        L[kc * ld + r0] = v;
      }
      if (two && r1 < n) {
        L[r1 * ld + kc] = w;
        L[kc * ld + r1] = w;
      }
      if (lane == c) L[kc * ld + kc] = inv;
      for (int e = c + 1; e < 4; e++) {  // term j = kc of the later block columns' chains
        sim_real lek = sim_shfl(v, e, lane);
        a[e] = sim_fmsub(v, lek, a[e]);
        b[e] = sim_fmsub(w, lek, b[e]);
      }
    }
    SIM_SYNC();
  }
}

// L = chol(H) (lower H in sol_H, by position, SIM_POS; mju_cholFactor with mindiag = MINVAL) from column k0 on (the
// columns before it are final), left-looking: column k's entries
// (i >= k) start from H(i, k) and subtract L(i, j) L(k, j) for the final columns j < k in ascending j, the
// terms and order in which the right-looking update (each final column applied to the trailing triangle) and
// MuJoCo's dot form subtract them; then the diagonal's square root, and the column scaled by its inverse. The
// diagonal's slot keeps that inverse: the solves multiply by it where mju_cholSolve divides by L(k, k) (one
// multiply instead of an IEEE division, on every lane, twice a step of each solve; results within an ulp a step).
// Lanes own rows: a lane keeps its entry's chain in a register and reads L(i, j) from row j's transposed copy
// (U(j, i) = L(i, j), i > j: consecutive entries for consecutive lanes), L(k, j) being one value for the warp.
// Each final column is also written there, where sim_chol_solve's forward substitution reads it along a row.
// Rows are SIM_SOL_LD(n) apart.
SIM_FN_STAGE void sim_chol_factor(SimWorld* d, int n, int k0, int lane, int nlane) {
  sim_real* L = d->sol_L;
  const sim_real* H = d->sol_H;
  int ld = SIM_SOL_LD(n);
  // the warp's form of the same arithmetic (sim_port.h, SIM_WARP), four columns a sync
  if (SIM_WARP && nlane == 32 && n <= 64) {
    if (SIM_IS_SHARED(L) && SIM_IS_SHARED(H)) sim_chol_factor_warp(L, H, n, k0, lane, 1);
    else sim_chol_factor_warp(L, H, n, k0, lane, 0);
    return;
  }
  for (int k = k0; k < n; k++) {
    const sim_real* lk = L + k * ld;  // L(k, j), j < k
    for (int i = k + lane; i < n; i += nlane) {
      sim_real acc = H[SIM_TRI(i, k)];
      for (int j = 0; j < k; j++) acc = sim_fmsub(L[j * ld + i], lk[j], acc);
      L[i * ld + k] = acc;
    }
    SIM_SYNC();  // every lane reads the diagonal's chain, row k's lane wrote it
    sim_real tmp = L[k * ld + k];
    int deficient = tmp < (sim_real)SIM_MINVAL;
    if (deficient) tmp = (sim_real)SIM_MINVAL;
    sim_real diag = sim_sqrt(tmp), inv = 1 / diag;
    for (int i = k + 1 + lane; i < n; i += nlane) {
      sim_real v = deficient ? 0 : L[i * ld + k] * inv;
      L[i * ld + k] = v;
      L[k * ld + i] = v;
    }
    SIM_SYNC();  // column k final (the next column's rows belong to other lanes); every lane has read L(k, k)
    if (lane == 0) L[k * ld + k] = inv;
  }
  SIM_SYNC();
}

// The island's dofs at which one of the nr rows listed has a non-zero J entry, ascending, into sol_tdof (their
// count returned to every lane). An entry (a, b) of J' D J over those rows with a dof not listed sums only exact
// zeros: skipped, or J(r, b) t D(r) with J(r, b) = 0, which leaves a sum that starts at +0 at +0. Each dof's test
// on its own lane; a warp (SIM_WARP) places 32 dofs per pass by a ballot's prefix count, elsewhere the lanes flag
// the dofs in the list's own storage and lane 0 compacts it. Both give the same list.
SIM_FN int sim_hessian_touched(const SimModel* m, SimWorld* d, const SimSolveCtx* c, const int* rows, int nr, int lane,
                               int nlane) {
  int* list = d->sol_tdof;
  if (SIM_WARP && nlane == 32) {
    // the rows' non-zero dofs (efc_Jmask) in one walk, the same on every lane, where the model has them
    unsigned any[2] = {0, 0};
    int masked = SIM_JMASK(m);
    if (masked) {
      SIM_NO_UNROLL
      for (int k = 0; k < nr; k++) {
        any[0] |= (unsigned)d->efc_Jmask[2 * rows[k]];
        any[1] |= (unsigned)d->efc_Jmask[2 * rows[k] + 1];
      }
    }
    int cnt = 0;
    for (int base = 0; base < c->n; base += 32) {
      int a = base + lane, t = 0;
      if (a < c->n) {
        int ja = c->dofs[a];
        if (masked) t = (any[ja >> 5] >> (ja & 31)) & 1;
        else
          for (int k = 0; k < nr && !t; k++) t = d->efc_J[(size_t)rows[k] * m->nv + ja] != 0;
      }
      cnt = sim_ballot_append(list, cnt, t, a, lane);
    }
    SIM_SYNC();
    return cnt;
  }
  SIM_NO_UNROLL
  for (int a = lane; a < c->n; a += nlane) {
    int ja = c->dofs[a], t = 0;
    for (int k = 0; k < nr && !t; k++) t = d->efc_J[(size_t)rows[k] * m->nv + ja] != 0;
    list[a] = t;
  }
  SIM_SYNC();
  if (lane == 0) {  // compacted in place: entry cnt <= a is written after flag a is read
    int cnt = 0;
    for (int a = 0; a < c->n; a++)
      if (list[a]) list[cnt++] = a;
    d->sol_flag[2] = cnt;
  }
  SIM_SYNC();
  return d->sol_flag[2];
}

// The lower triangle's entries (a, b), b <= a, over the k dofs listed (list NULL: the island's first k), each as
// sim_hessian_entry sums it over the first nq quadratic rows. The lanes take the packed triangle in turn, entry e
// of row p being e - p (p + 1) / 2, so that no lane waits on a row shorter than the warp; the entries do not
// depend on each other.
SIM_FN void sim_hessian_entries(const SimModel* m, SimWorld* d, const SimSolveCtx* c, const int* list, int k, int nq,
                                int lane, int nlane) {
  int n = c->n, p = 0, base = 0;  // row p of the packed triangle starts at entry base
  SIM_NO_UNROLL
  for (int e = lane; e < k * (k + 1) / 2; e += nlane) {
    while (e >= base + p + 1) base += ++p;
    int a = list ? list[p] : p, b = list ? list[e - base] : e - base;
    d->sol_H[SIM_TRI(SIM_POS(n, b), SIM_POS(n, a))] = sim_hessian_entry(m, d, c, nq, a, b);
  }
  SIM_SYNC();
}

// the island's quadratic rows listed, then H: every entry as M's alone (+0 + M(a, b), what the row walk gives an
// entry with a dof that no quadratic row touches), then the entries whose two dofs a quadratic row touches summed
// over those rows; then L = chol(H)
SIM_FN_STAGE void sim_hessian_factor(const SimModel* m, SimWorld* d, SimSolveCtx* c, int lane, int nlane) {
  int n = c->n, nq = sim_hessian_rows(d, c, NULL, NULL, lane, nlane);
  int nt = sim_hessian_touched(m, d, c, d->sol_qrow, nq, lane, nlane);
  sim_hessian_entries(m, d, c, NULL, n, 0, lane, nlane);
  sim_hessian_entries(m, d, c, d->sol_tdof, nt, nq, lane, nlane);
  sim_chol_factor(d, n, 0, lane, nlane);
}

// HessianIncremental: where MuJoCo applies rank-1 updates (serial) for the rows entering or leaving the
// quadratic state, we recompute the entries of H whose two dofs are both touched by such rows (non-zero in a
// changed row's J) and refactor with all lanes. An entry that no changed row touches at both dofs gains or loses
// only exact zero terms, so its recomputed sum is the stored one bit for bit: recomputing a superset of the
// entries that changed is exact. H is then exactly the Hessian a full rebuild gives, in any precision; the
// factor differs from MuJoCo's updated one by rounding.
SIM_FN_STAGE void sim_hessian_incremental(const SimModel* m, SimWorld* d, SimSolveCtx* c, int lane, int nlane) {
  int n = c->n;
  int* chg = d->sol_chg;
  int nchg, nq = sim_hessian_rows(d, c, chg, &nchg, lane, nlane);
  if (nchg == 0) return;
  int nt = sim_hessian_touched(m, d, c, chg, nchg, lane, nlane);
  sim_hessian_entries(m, d, c, d->sol_tdof, nt, nq, lane, nlane);
  // the factor's columns before the first touched position depend on unchanged entries only
  sim_chol_factor(d, n, nt > 0 ? SIM_POS(n, d->sol_tdof[nt - 1]) : n, lane, nlane);
}

// the warp form of sim_chol_solve (below): out = H^-1 g over the dofs listed; shared: L lies in shared memory
SIM_FN_INLINE void sim_chol_solve_warp(const sim_real* L, const sim_real* g, sim_real* out, const int* dofs, int n,
                                       int lane, int shared) {
  if (shared) SIM_ASSUME_SHARED(L);
  int ld = SIM_SOL_LD(n);
  sim_real r0 = lane < n ? g[dofs[SIM_POS(n, lane)]] : 0, r1 = lane + 32 < n ? g[dofs[SIM_POS(n, lane + 32)]] : 0;
  int e0 = lane, e1 = lane + 32;  // the entries this lane holds
  for (int k = 0; k < n; k += 2) {
    int k1 = SIM_MIN(k + 1, n - 1);  // n odd: the last step finishes one entry
    sim_real a = sim_shfl(k < 32 ? r0 : r1, k & 31, lane), b = sim_shfl(k1 < 32 ? r0 : r1, k1 & 31, lane);
    sim_real x = a * L[k * ld + k], y = 0;
    if (k1 > k) {
      b = sim_fmsub(L[k * ld + k1], x, b);
      y = b * L[k1 * ld + k1];
    }
    if (e0 == k) r0 = x;
    if (e1 == k) r1 = x;
    if (k1 > k && e0 == k1) r0 = y;
    if (k1 > k && e1 == k1) r1 = y;
    if (e0 > k1 && e0 < n) {
      r0 = sim_fmsub(L[k * ld + e0], x, r0);
      r0 = sim_fmsub(L[k1 * ld + e0], y, r0);
    }
    if (e1 > k1 && e1 < n) {
      r1 = sim_fmsub(L[k * ld + e1], x, r1);
      r1 = sim_fmsub(L[k1 * ld + e1], y, r1);
    }
  }
  for (int j = n - 1; j >= 0; j -= 2) {
    int j1 = SIM_MAX(j - 1, 0);  // the last step finishes entry 0 alone where n is odd
    sim_real a = sim_shfl(j < 32 ? r0 : r1, j & 31, lane), b = sim_shfl(j1 < 32 ? r0 : r1, j1 & 31, lane);
    sim_real x = a * L[j * ld + j], y = 0;
    if (j1 < j) {
      b = sim_fmsub(L[j * ld + j1], x, b);
      y = b * L[j1 * ld + j1];
    }
    if (e0 == j) r0 = x;
    if (e1 == j) r1 = x;
    if (j1 < j && e0 == j1) r0 = y;
    if (j1 < j && e1 == j1) r1 = y;
    if (e0 < j1) {
      r0 = sim_fmsub(L[j * ld + e0], x, r0);
      r0 = sim_fmsub(L[j1 * ld + e0], y, r0);
    }
    if (e1 < j1) {
      r1 = sim_fmsub(L[j * ld + e1], x, r1);
      r1 = sim_fmsub(L[j1 * ld + e1], y, r1);
    }
  }
  if (lane < n) out[dofs[SIM_POS(n, lane)]] = r0;
  if (lane + 32 < n) out[dofs[SIM_POS(n, lane + 32)]] = r1;
}

// Mgrad = H^-1 grad (mju_cholSolve on the island-local factor). Column-oriented substitutions: once res[k] is
// final every lane subtracts its multiple from the entries it holds, lane l the entries k + 1 + l, k + 1 + l +
// nlane, ... (forward; L's column k read from row k's transposed copy) or k - 1 - l, ... (backward; L's row k).
// Lane 0 thus holds the next entry to finish and scales it (by 1 / L(k, k), the factor's diagonal slot) without
// waiting. The forward solve subtracts in ascending position k, the backward one in descending order. Positions run
// in reverse island order (SIM_POS): entry k of the solve is the island's dof dofs[n - 1 - k].
SIM_FN_STAGE void sim_chol_solve(SimWorld* d, SimSolveCtx* c, int lane, int nlane) {
  const int* dofs = c->dofs;
  int n = c->n;
  const sim_real* L = d->sol_L;
  int ld = SIM_SOL_LD(n);
  // The warp's form of the same arithmetic (sim_port.h, SIM_WARP): lane l holds entries l and l + 32 in
  // registers. Two entries become final per step: both reach every lane by shuffles issued together, and every
  // lane scales the first, subtracts its term from the second and scales that, as their owners would; the
  // owners keep the results, the other lanes subtract both terms in order. One shuffle's wait per two entries,
  // and no lane works alone.
  if (SIM_WARP && nlane == 32 && n <= 64) {
    if (SIM_IS_SHARED(L)) sim_chol_solve_warp(L, d->sol_grad, d->sol_Mgrad, dofs, n, lane, 1);
    else sim_chol_solve_warp(L, d->sol_grad, d->sol_Mgrad, dofs, n, lane, 0);
    SIM_SYNC();
    return;
  }
  sim_real* res = d->sol_Mgrad;  // solved in place, position p at dof dofs[SIM_POS(n, p)]
  SIM_NO_UNROLL
  for (int i = lane; i < n; i += nlane) res[dofs[i]] = d->sol_grad[dofs[i]];
  SIM_SYNC();
  for (int k = 0; k < n; k++) {
    if (lane == 0) res[dofs[SIM_POS(n, k)]] *= L[k * ld + k];
    SIM_SYNC();
    sim_real x = res[dofs[SIM_POS(n, k)]];
    for (int i = k + 1 + lane; i < n; i += nlane) {
      sim_real* ri = res + dofs[SIM_POS(n, i)];
      *ri = sim_fmsub(L[k * ld + i], x, *ri);
    }
  }
  SIM_SYNC();  // every lane has read entry n - 1 before lane 0 scales it again
  for (int j = n - 1; j >= 0; j--) {
    if (lane == 0) res[dofs[SIM_POS(n, j)]] *= L[j * ld + j];
    SIM_SYNC();
    sim_real x = res[dofs[SIM_POS(n, j)]];
    for (int i = j - 1 - lane; i >= 0; i -= nlane) {
      sim_real* ri = res + dofs[SIM_POS(n, i)];
      *ri = sim_fmsub(L[j * ld + i], x, *ri);
    }
  }
  SIM_SYNC();
}

// The factor in sol_L (n = nv) to (unpack 0) or from tape entry k's packed lower triangle (row i from i (i + 1) / 2;
// the diagonal's slot keeps 1 / L(i, i)), entries across lanes: each lane carries its entry's row and column along
// rather than taking a square root. Unpacking writes each entry to both halves, as the factor does.
SIM_FN void sim_hfac_tape(const SimModel* m, SimWorld* d, int k, int unpack, int lane, int nlane) {
  int n = m->nv, ld = SIM_SOL_LD(n), ntri = n * (n + 1) / 2;
  sim_real* t = d->tape_hfac + (size_t)k * ntri;
  sim_real* L = d->sol_L;
  int i = 0, j = lane;
  while (j > i) j -= ++i;
  // four entries a pass, their loads before their stores, so that the loads overlap
  SIM_NO_UNROLL
  for (int e = lane; e < ntri; e += 4 * nlane) {
    int ii[4], jj[4];
    sim_real v[4];
    for (int q = 0; q < 4; q++) {
      ii[q] = i, jj[q] = j;
      j += nlane;
      while (j > i) j -= ++i;
    }
    for (int q = 0; q < 4; q++)
      if (e + q * nlane < ntri) v[q] = unpack ? t[e + q * nlane] : L[ii[q] * ld + jj[q]];
    for (int q = 0; q < 4; q++) {
      if (e + q * nlane >= ntri) break;
      if (unpack) {
        L[ii[q] * ld + jj[q]] = v[q];
        L[jj[q] * ld + ii[q]] = v[q];
      } else {
        t[e + q * nlane] = v[q];
      }
    }
  }
  SIM_SYNC();
}

// mj_solPrimal (Newton) on one island (island < 0: all dofs and rows, monolithic scale); returns iterations.
// start (sim_warmstart's): 1 efc_Jaref, 2 also sol_Ma, already hold J qacc - aref and M qacc at the island's rows
// and dofs, the sums MuJoCo recomputes here, term for term. *fac: what sol_L holds at the end (0 no factor, 1 the
// factor at the final row states, 2 the factor one update behind them), for sim_newton_tape.
SIM_FN_STAGE int sim_newton_island(const SimModel* m, SimWorld* d, const int* dofs, int n, const int* rows, int nr,
                                   int island, int start, int* fac_out, int lane, int nlane) {
  SimSolveCtx ctx;
  SimSolveCtx* c = &ctx;
  c->dofs = dofs;
  c->rows = rows;
  c->n = n;
  c->nr = nr;
  c->LSiter = 0;
  sim_real tol = m->tolerance;
  if (tol > 0 && tol < (sim_real)SIM_SOLVER_TOLMIN) tol = (sim_real)SIM_SOLVER_TOLMIN;
  sim_real* grad = d->sol_grad;
  sim_real* Mgrad = d->sol_Mgrad;

  if (start < 2) sim_mulM_dofs(m, d->M, d->sol_Ma, d->qacc, dofs, n, lane, nlane);
  if (start < 1)
    SIM_NO_UNROLL
    for (int q = lane; q < nr; q += nlane) {
      int r = rows[q];
      d->efc_Jaref[r] = sim_rowdot(m, d, r, d->qacc, dofs, n) - d->efc_aref[r];
    }
  SIM_SYNC();
  sim_primal_update(m, d, c, lane, nlane);
  if (island < 0) {
    c->scale = 1 / (m->meaninertia * (sim_real)SIM_MAX(1, m->nv));
  } else {
    sim_real inertia;
    SIM_LSUM(inertia, n, k, d->M[m->M_rowadr[dofs[k]] + m->M_rownnz[dofs[k]] - 1], lane, nlane);
    c->scale = 1 / inertia;
  }
  sim_real scale = c->scale;

  // zero-iteration certificate: both the gradient and the gap with Mgrad = M^-1 grad below tol. The gap is
  // computed only where the gradient test passes (rarely at a solve's start): without it the certificate fails
  // whatever the gap, and Mgrad is overwritten by the Newton step's solve before anything reads it.
  sim_real gMg, gg = sim_dot_dofs(grad, grad, dofs, n, lane, nlane);
  int flg_gradient = scale * sim_sqrt(gg) < tol;
  int done = 0;
  if (flg_gradient) {
    SIM_NO_UNROLL
    for (int j = lane; j < m->nv; j += nlane) Mgrad[j] = 0;
    SIM_SYNC();
    SIM_NO_UNROLL
    for (int k = lane; k < n; k += nlane) Mgrad[dofs[k]] = grad[dofs[k]];
    sim_solveLD(m, Mgrad, d->qLD, d->qLDiagInv, lane, nlane);
    gMg = sim_dot_dofs(grad, Mgrad, dofs, n, lane, nlane);
    done = SIM_MAX(0, (sim_real)0.5 * scale * gMg) < tol;
  }
  int fac = 0;  // sol_L: 0 no factor, 1 the factor at the row states, 2 at those before the last update
  if (!done) {
    fac = 1;
    sim_hessian_factor(m, d, c, lane, nlane);
    sim_chol_solve(d, c, lane, nlane);
    done = flg_gradient && SIM_MAX(0, (sim_real)0.5 * scale * sim_dot_dofs(grad, Mgrad, dofs, n, lane, nlane)) < tol;
  }
  if (!done)
    SIM_NO_UNROLL
    for (int k = lane; k < n; k += nlane) d->sol_search[dofs[k]] = -Mgrad[dofs[k]];
  SIM_SYNC();

  int iter = 0;
  while (!done && iter < m->iterations) {
    sim_real ls_improvement;
    sim_real alpha =
        sim_primal_search(m, d, c, tol * m->ls_tolerance, m->ls_iterations, &ls_improvement, lane, nlane);
    if (lane == 0) d->solver_nls[0] += c->LSiter;
    SIM_SYNC();  // every lane is done reading the search data before it changes
    if (alpha == 0) break;
    SIM_NO_UNROLL
    for (int k = lane; k < n; k += nlane) {
      int j = dofs[k];
      d->qacc[j] += alpha * d->sol_search[j];
      d->sol_Ma[j] += alpha * d->sol_Mv[j];
    }
    SIM_NO_UNROLL
    for (int q = lane; q < nr; q += nlane) {
      int r = rows[q];
      d->efc_Jaref[r] += alpha * d->efc_Jv[r];
      d->efc_oldstate[r] = d->efc_state[r];
    }
    SIM_SYNC();
    sim_primal_update(m, d, c, lane, nlane);
    fac = 2;
    // MuJoCo updates the Hessian and solves for Mgrad before its three stopping tests; the improvement and
    // gradient tests do not read them, and where either stops the solve (or the iteration limit does) nothing
    // reads them after it. So those two tests come first, and the update only where the solve goes on or the
    // decrement decides: the same iterates, iterations and results.
    sim_real improvement = scale * ls_improvement;
    sim_real gradient = scale * sim_sqrt(sim_dot_dofs(grad, grad, dofs, n, lane, nlane));
    iter++;
    if ((improvement > 0 && improvement < tol) || gradient < tol || iter >= m->iterations) break;
    sim_hessian_incremental(m, d, c, lane, nlane);
    fac = 1;
    sim_chol_solve(d, c, lane, nlane);
    gMg = sim_dot_dofs(grad, Mgrad, dofs, n, lane, nlane);
    if (SIM_MAX(0, (sim_real)0.5 * scale * gMg) < tol) break;
    SIM_NO_UNROLL
    for (int k = lane; k < n; k += nlane) d->sol_search[dofs[k]] = -Mgrad[dofs[k]];
    SIM_SYNC();
  }
  SIM_SYNC();
  *fac_out = fac;
  return iter;
}

// The factor of H at the final row states of a solve over all dofs and rows in order (the island maps' identity
// lists) to tape entry `tape`, for the solver's adjoint; fac as sim_newton_island left it. A call of its own, so
// that the untaped forward's solve carries none of it.
SIM_FN_STAGE void sim_newton_tape(const SimModel* m, SimWorld* d, int fac, int tape, int lane, int nlane) {
  if (!fac) return;
  SimSolveCtx ctx;
  ctx.dofs = d->map_idof2dof;
  ctx.rows = d->map_iefc2efc;
  ctx.n = m->nv;
  ctx.nr = d->nefc[0];
  // the usual exit (a stopping test after the update) leaves the factor one update behind the row states
  if (fac == 2) sim_hessian_incremental(m, d, &ctx, lane, nlane);
  sim_hfac_tape(m, d, tape, 0, lane, nlane);
  if (lane == 0) d->tape_hnow[0] = 1;
}

// engine_forward.c:warmstart: start from qacc_warmstart unless qacc_smooth is strictly cheaper. Returns what the
// Newton solve may start from (sim_newton_island's start): 2 at qacc_warmstart (efc_Jaref and sol_Ma), 1 at
// qacc_smooth (efc_Jaref), 0 with the warm start disabled.
SIM_FN_STAGE int sim_warmstart(const SimModel* m, SimWorld* d, const int* allrows, int lane, int nlane) {
  int nv = m->nv, nefc = d->nefc[0];
  if (m->disableflags & SIM_DSBL_WARMSTART) {
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) d->qacc[i] = d->qacc_smooth[i];
    SIM_SYNC();
    return 0;
  }
  // jar at qacc_warmstart (efc_Jaref) and at qacc_smooth (efc_b, kept in efc_Jv), rows across lanes
  SIM_NO_UNROLL
  for (int r = lane; r < nefc; r += nlane) {
    sim_real s, t;
    sim_rowdot2(m, d, r, d->qacc_warmstart, d->qacc_smooth, &s, &t);
    d->efc_Jaref[r] = s - d->efc_aref[r];
    d->efc_Jv[r] = t - d->efc_aref[r];
  }
  sim_mulM_dofs(m, d->M, d->sol_Ma, d->qacc_warmstart, 0, nv, lane, nlane);
  SIM_SYNC();
  sim_real cost_ws = sim_constraint_update(d, allrows, nefc, d->efc_Jaref, lane, nlane), gauss_ws;
  SIM_LSUM(gauss_ws, nv, i,
           (sim_real)0.5 * (d->sol_Ma[i] - d->qfrc_smooth[i]) * (d->qacc_warmstart[i] - d->qacc_smooth[i]), lane,
           nlane);
  cost_ws += gauss_ws;
  SIM_SYNC();
  sim_real cost_smooth = sim_constraint_update(d, allrows, nefc, d->efc_Jv, lane, nlane);
  int smooth = cost_ws > cost_smooth;
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) d->qacc[i] = smooth ? d->qacc_smooth[i] : d->qacc_warmstart[i];
  if (smooth)
    SIM_NO_UNROLL
    for (int r = lane; r < nefc; r += nlane) d->efc_Jaref[r] = d->efc_Jv[r];
  SIM_SYNC();
  return smooth ? 1 : 2;
}

// mj_fwdConstraint for the Newton solver: warm start, then each island (or everything at once). tape >= 0: the
// tape entry for the final Newton factor, taped where one solve covers all dofs and rows in order (tape_hnow).
SIM_FN_STAGE void sim_solve(const SimModel* m, SimWorld* d, int tape, int lane, int nlane) {
  int nv = m->nv, nefc = d->nefc[0];
  if (m->adj && lane == 0) d->tape_hnow[0] = 0;
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) d->qfrc_constraint[i] = 0;
  if (lane == 0) d->solver_niter[0] = 0, d->solver_nls[0] = 0;
  if (nefc == 0) {
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) d->qacc[i] = d->qacc_smooth[i];
    SIM_SYNC();
    return;
  }
  // the warm start runs over all rows (identity list in efc_oldstate, free until the iterations)
  int nisland = d->nisland[0];
  int* ident = d->efc_oldstate;
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int r = lane; r < nefc; r += nlane) ident[r] = r;
  SIM_SYNC();
  int start = sim_warmstart(m, d, ident, lane, nlane);
  if (nisland > 0) {
    int nidof = d->island_idofadr[nisland - 1] + d->island_nv[nisland - 1];
    if (!(m->disableflags & SIM_DSBL_WARMSTART))
      for (int k = nidof + lane; k < nv; k += nlane) d->qacc[d->map_idof2dof[k]] = d->qacc_smooth[d->map_idof2dof[k]];
    SIM_SYNC();
    int niter = 0, fac = 0;
    for (int i = 0; i < nisland; i++)
      niter += sim_newton_island(m, d, d->map_idof2dof + d->island_idofadr[i], d->island_nv[i],
                                 d->map_iefc2efc + d->island_iefcadr[i], d->island_nefc[i], i, start, &fac, lane,
                                 nlane);
    if (lane == 0) d->solver_niter[0] = niter;
    if (tape >= 0 && m->ntree == 1) sim_newton_tape(m, d, fac, tape, lane, nlane);  // one island: all, in order
  } else {
    // monolithic: identity dof and row lists in the island maps
    SIM_NO_UNROLL
    for (int r = lane; r < nefc; r += nlane) d->map_iefc2efc[r] = r;
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) d->map_idof2dof[i] = i;
    SIM_SYNC();
    int fac = 0, niter = sim_newton_island(m, d, d->map_idof2dof, nv, d->map_iefc2efc, nefc, -1, start, &fac,
                                           lane, nlane);
    if (lane == 0) d->solver_niter[0] = niter;
    if (tape >= 0) sim_newton_tape(m, d, fac, tape, lane, nlane);
  }
  SIM_SYNC();
}
