// sim_adjoint_constraint.c: the solver adjoint (physics.md section 3.1, "Reverse pass"): the implicit-function
// derivative of the converged Newton solution, with the row states (quadratic / satisfied / linear friction),
// the contact set and each contact's branch frozen, as they were in this evaluation's forward pass.
//
// Fixed point: r(a) = M a - tau - sum_r J_r' f_r = 0, with f_r = -D_r (J_r a - aref_r) for quadratic rows,
// f_r = -+frictionloss for linear friction rows, 0 for satisfied rows. H = dr/da = M + J_Q' D_Q J_Q. Then with
// lambda = H^-1 a-bar and u_r = J_r lambda, for a quadratic row:
//   tau-bar += lambda, M-bar -= sym(lambda a'), aref-bar = D u, D-bar = -u (J a - aref),
//   J-bar = f lambda' - aref-bar a' (+ the velocity term below), and for a linear row J-bar = f lambda'.
// Row constants: aref = -K1 vel - K0 imp (pos - margin), vel = J v, D = 1/R, R = c (1 - imp) / imp with c
// constant in pos (diagApprox from invweight0, the pyramid rule), imp = imp(pos). So
//   vel-bar = -K1 aref-bar (v-bar += vel-bar J, J-bar += vel-bar v'),
//   pos-bar = -K0 (imp + (pos - margin) imp') aref-bar + D-bar D (1/imp + 1/(1 - imp)) imp'.
// Every row's J-bar is alpha lambda + beta a + gamma v (three scalars per row), which keeps the geometry
// pass per contact and the gathers per dof / geom / body, each summing in contact or row order: the result
// does not depend on the number of lanes. Geometry: limit rows have d pos / d q = J (hinge, slide, fixed
// tendon through its length; ball: the cone angle), and a ball limit's J = -axis(q) is differentiated too;
// friction-loss rows have constant J and pos; contact rows go J -> (frame, pos, cdof, subtree_com of the
// roots) and dist -> the contact geometry VJP (sim_adjoint_collision.c) -> geom_xpos / geom_xmat.
// Contact friction mu (condim 3: the sliding friction, both tangents): it enters a pyramid edge's Jacobian,
// J = n.jd +- mu t_k.jd (mu-bar += +-t_k . w-bar of the row), and the pyramid rule's R, the same for all four
// rows: R = 2 mu^2 R0 / impratio with R0 = (1 - imp) tran (1 + mu^2) / imp (R-bar = -D-bar D^2 per row). Its
// cotangent goes to the geom that supplied it (simc_friction_src: the higher priority, else the larger, a tie
// to geom1 as MuJoCo's mju_max), in contact order per geom; explicit <pair>s, condim 1 and frictions clamped
// to mjMINMU give none. body_invweight0 (tran) is a model constant (sim.h), so masses do not enter here.
#include "sim_model.h"
#include "sim_math.h"

// per-contact scratch in adj_con (width SIM_ADJ_CON): geometry cotangents, root com cotangents, chain sums
#define SIM_ADJ_CON 46
#define SIM_ADJ_CON_GEOM 0   // (24) simc_adj_contact's g_bar: pos1, mat1, pos2, mat2
#define SIM_ADJ_CON_COM1 24  // (3) cotangent of subtree_com[root(b1)]
#define SIM_ADJ_CON_COM2 27  // (3) cotangent of subtree_com[root(b2)]
#define SIM_ADJ_CON_ABG 30   // (9) A, B, G: sum over the contact's rows of alpha w, beta w, gamma w
#define SIM_ADJ_CON_FRIC 39  // (1) cotangent of the contact's sliding friction (condim 3; 0 for condim 1)
#define SIM_ADJ_CON_OFF 40   // (6) pos - subtree_com[root(b1)], pos - subtree_com[root(b2)]

// a contact's row: frictionless, or an edge of its pyramid
SIM_FN_INLINE int sim_adj_contact_type(int type) {
  return type == SIM_CNSTR_CONTACT_FRICTIONLESS || type == SIM_CNSTR_CONTACT_PYRAMIDAL;
}

// per row: the J-bar coefficients (alpha, beta, gamma) and pos-bar, from lambda (rows across lanes)
SIM_FN void sim_adj_rows(const SimModel* m, SimWorld* d, const sim_real* lambda, int lane, int nlane) {
  int nv = m->nv, nefc = d->nefc[0];
  SIM_NO_UNROLL
  for (int r = lane; r < nefc; r += nlane) {
    sim_real* co = d->adj_efc + SIM_ADJ_EFC * r;
    const sim_real* J = d->efc_J + (size_t)r * nv;
    int st = d->efc_state[r];
    co[0] = co[1] = co[2] = co[3] = co[4] = 0;
    if (st == SIM_CSTATE_SATISFIED) continue;
    co[0] = d->efc_force[r];  // J-bar = f lambda' for every active row
    if (st != SIM_CSTATE_QUADRATIC) continue;
    sim_real u = simu_dot(J, lambda, nv), D = d->efc_D[r];
    const sim_real* kbip = d->efc_KBIP + 4 * r;
    sim_real arefbar = D * u;
    sim_real Dbar = -u * d->efc_Jaref[r];  // Jaref = J a - aref at the solver's last update
    co[1] = -arefbar;
    co[2] = -kbip[1] * arefbar;  // vel-bar
    sim_real imp = kbip[2], impP = kbip[3], pm = d->efc_pos[r] - d->efc_margin[r];
    sim_real posbar = -kbip[0] * (imp + pm * impP) * arefbar;
    if (impP != 0 && d->efc_R[r] > (sim_real)SIM_MINVAL) posbar += Dbar * D * (1 / imp + 1 / (1 - imp)) * impP;
    co[3] = posbar;
    co[4] = -Dbar * D * D;  // R-bar (D = 1/R): the contact friction's pyramid rule reads it
  }
  SIM_SYNC();
}

// limit rows: pos-bar -> q (hinge/slide dof, tendon length, ball angle) and a ball row's J-bar -> its axis.
// Serial (lane 0): there are few such rows, and they come before the contact rows.
SIM_FN void sim_adj_limit_rows(const SimModel* m, SimWorld* d, const sim_real* lambda, int lane) {
  if (lane == 0) {
    int nv = m->nv, nefc = d->nefc[0];
    for (int r = 0; r < nefc; r++) {
      int type = d->efc_type[r], id = d->efc_id[r];
      if (sim_adj_contact_type(type)) break;  // contacts come last
      const sim_real* co = d->adj_efc + SIM_ADJ_EFC * r;
      if (type == SIM_CNSTR_LIMIT_TENDON) {
        d->adj_ten_length[id] += co[3] * sim_limit_sign(m, d, r);
      } else if (type == SIM_CNSTR_LIMIT_JOINT) {
        int adr = m->jnt_dofadr[id];
        if (m->jnt_type[id] != SIM_JNT_BALL) {
          d->adj_dq[adr] += co[3] * d->efc_J[(size_t)r * nv + adr];  // pos = +-(value - range): d pos / dq = J
          continue;
        }
        // pos = max(range) - angle, J = -axis: angle-bar = -pos-bar, axis-bar = -J-bar; phi = angle axis is
        // the rotation vector of the joint quaternion, whose tangent is dphi = Jr(phi)^-1 dq
        sim_real axis[3], phi[3], abar[3], phibar[3];
        sim_real angle = sim_ball_axis_angle(m, d, id, axis);
        for (int k = 0; k < 3; k++) {
          abar[k] = -(co[0] * lambda[adr + k] + co[1] * d->qacc[adr + k] + co[2] * d->qvel[adr + k]);
          phi[k] = angle * axis[k];
        }
        sim_real s = simu_dot3(axis, abar);
        for (int k = 0; k < 3; k++)
          phibar[k] = -co[3] * axis[k] + (angle > (sim_real)SIM_MINVAL ? (abar[k] - s * axis[k]) / angle : 0);
        simu_adj_JrInvT(abar, phi, phibar);
        for (int k = 0; k < 3; k++) d->adj_dq[adr + k] += abar[k];
      }
    }
  }
  SIM_SYNC();
}

// first row of each contact in adj_map (-1: a contact without rows), rows across lanes: a contact's rows are
// consecutive, so its first row is the one whose predecessor is not a row of the same contact
SIM_FN void sim_adj_contact_rows(const SimModel* m, SimWorld* d, int* conrow, int ncon, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int c = lane; c < ncon; c += nlane) conrow[c] = -1;
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int r = lane; r < d->nefc[0]; r += nlane) {
    int type = d->efc_type[r], id = d->efc_id[r], prev = -1;  // prev: the contact of row r - 1, if any
    if (!sim_adj_contact_type(type)) continue;
    if (r > 0 && sim_adj_contact_type(d->efc_type[r - 1])) prev = d->efc_id[r - 1];
    if (prev != id) conrow[id] = r;
  }
  SIM_SYNC();
}

// one contact's geometry pass: J-bar of its rows -> frame-bar, pos-bar, dist-bar -> geometry VJP; the root
// com cotangents and the chain sums A, B, G that the per-dof gather needs, into its adj_con slot. Row r of the
// contact is w_r . jd_i over the dofs i of the two chains (w_r = normal + s_r tangent_k, jd_i the frame-free
// Jacobian difference column, as sim_contact_row walks it) and J-bar_r[i] = alpha_r lambda_i + beta_r a_i +
// gamma_r v_i.
SIM_FN void sim_adj_contact_geometry(const SimModel* m, SimWorld* d, int c, int r0, const sim_real* lambda) {
  sim_real* out = d->adj_con + (size_t)SIM_ADJ_CON * c;
  int dim = d->contact_dim[c], nrow = dim == 1 ? 1 : 2 * (dim - 1);
  const sim_real* frame = d->contact_frame + 9 * c;
  const sim_real* fr = d->contact_friction + 5 * c;
  const sim_real* pos = d->contact_pos + 3 * c;
  sim_real w[4][3];  // w of each row (nrow <= 4: condim 1 or 3)
  sim_real* ABG = out + SIM_ADJ_CON_ABG;
  for (int k = 0; k < 9; k++) ABG[k] = 0;
  for (int q = 0; q < nrow; q++) {
    const sim_real* co = d->adj_efc + SIM_ADJ_EFC * (r0 + q);
    int k = dim == 1 ? 0 : q / 2 + 1;  // tangent of the pyramid edge
    simu_copy3(w[q], frame);
    if (dim > 1) simc_adj_acc3(w[q], frame + 3 * k, (q & 1) ? -fr[k - 1] : fr[k - 1]);
    for (int e = 0; e < 3; e++) simc_adj_acc3(ABG + 3 * e, w[q], co[e]);
  }
  // one walk over the chains: S = sum_i x_i jd_i for x = lambda, a, v (for w-bar), and the offsets' cotangents
  // (off = pos - subtree_com[root]): off-bar = sum over the chain of +-X_i x cdof_ang_i, X_i = sum over rows of
  // J-bar_r[i] w_r = lambda_i A + a_i B + v_i G
  int b1 = m->geom_bodyid[d->contact_geom[2 * c]], b2 = m->geom_bodyid[d->contact_geom[2 * c + 1]];
  sim_real off1[3], off2[3], off1bar[3] = {0, 0, 0}, off2bar[3] = {0, 0, 0}, posbar[3];
  sim_real S[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  simu_sub3(off1, pos, d->subtree_com + 3 * m->body_rootid[b1]);
  simu_sub3(off2, pos, d->subtree_com + 3 * m->body_rootid[b2]);
  int i1 = sim_body_lastdof(m, b1), i2 = sim_body_lastdof(m, b2);
  while (i1 >= 0 || i2 >= 0) {
    int i = i1 > i2 ? i1 : i2;
    sim_real jd[3] = {0, 0, 0}, p[3], X[3] = {0, 0, 0}, t[3];
    simc_adj_acc3(X, ABG, lambda[i]);
    simc_adj_acc3(X, ABG + 3, d->qacc[i]);
    simc_adj_acc3(X, ABG + 6, d->qvel[i]);
    simu_cross(t, X, d->cdof + 6 * i);
    if (i == i1) {
      sim_jacp_col(d, i, off1, p);
      simu_sub3(jd, jd, p);
      simu_sub3(off1bar, off1bar, t);
      i1 = m->dof_parentid[i1];
    }
    if (i == i2) {
      sim_jacp_col(d, i, off2, p);
      simu_add3(jd, jd, p);
      simu_add3(off2bar, off2bar, t);
      i2 = m->dof_parentid[i2];
    }
    simc_adj_acc3(S, jd, lambda[i]);
    simc_adj_acc3(S + 3, jd, d->qacc[i]);
    simc_adj_acc3(S + 6, jd, d->qvel[i]);
  }
  // w-bar_r = alpha_r Lambda + beta_r Aa + gamma_r V -> normal-bar, tangent-bar, friction-bar (through the
  // edge's +-mu and through R); pyramid rows share dist
  sim_real framebar[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, distbar = 0, mubar = 0, Rbar = 0;
  for (int q = 0; q < nrow; q++) {
    const sim_real* co = d->adj_efc + SIM_ADJ_EFC * (r0 + q);
    int k = dim == 1 ? 0 : q / 2 + 1;
    sim_real wbar[3] = {0, 0, 0};
    for (int e = 0; e < 3; e++) simc_adj_acc3(wbar, S + 3 * e, co[e]);
    simu_add3(framebar, framebar, wbar);
    if (dim > 1) {
      simc_adj_acc3(framebar + 3 * k, wbar, (q & 1) ? -fr[k - 1] : fr[k - 1]);
      sim_real sbar = simu_dot3(frame + 3 * k, wbar);
      mubar += (q & 1) ? -sbar : sbar;
      Rbar += co[4];
    }
    distbar += co[3];
  }
  if (dim > 1 && Rbar != 0) {
    // the pyramid rule as sim_row_fill evaluates it: R = 2 mu^2 R0 / impratio, R0 = max(MINVAL, (1 - imp) dA0 / imp)
    sim_real f0 = fr[0], imp = d->efc_KBIP[4 * r0 + 2];
    sim_real tran = m->body_invweight0[2 * b1] + m->body_invweight0[2 * b2];
    sim_real R0raw = (1 - imp) * (tran + f0 * f0 * tran) / imp;
    sim_real R0 = SIM_MAX((sim_real)SIM_MINVAL, R0raw);
    sim_real dR0 = R0raw > (sim_real)SIM_MINVAL ? (1 - imp) * 2 * f0 * tran / imp : 0;
    mubar += Rbar * (4 * f0 * R0 + 2 * f0 * f0 * dR0) / SIM_MAX((sim_real)SIM_MINVAL, m->impratio);
  }
  out[SIM_ADJ_CON_FRIC] = mubar;
  simu_add3(posbar, off1bar, off2bar);
  simu_copy3(out + SIM_ADJ_CON_OFF, off1);
  simu_copy3(out + SIM_ADJ_CON_OFF + 3, off2);
  simu_scl3(out + SIM_ADJ_CON_COM1, off1bar, -1);
  simu_scl3(out + SIM_ADJ_CON_COM2, off2bar, -1);
  simc_adj_contact(m, d, c, distbar, posbar, framebar, out + SIM_ADJ_CON_GEOM);
}

// contact rows: geometry pass per contact (lanes), then gathers per geom, per root body and per dof, each in
// contact order. The geometry pass also leaves per contact what the gathers look up (chain ends, roots, the
// friction's geom, the offsets), so that no gather lane walks contact -> geom -> body -> root.
SIM_FN_STAGE void sim_adj_contacts(const SimModel* m, SimWorld* d, const sim_real* lambda, int lane, int nlane) {
  int ncon = SIM_MIN(d->ncon[0], m->nconmax);
  if (ncon == 0) return;
  int* conrow = d->adj_map + m->nv + m->nefcmax;
  int* conlast = conrow + m->nconmax;      // (2 per contact) the last dof of each side's chain (-1: none)
  int* conroot = conlast + 2 * m->nconmax;  // (2 per contact) each side's root body (0: the world, or a world geom)
  int* confric = conroot + 2 * m->nconmax;  // the geom that takes the sliding friction's cotangent (-1: none)
  sim_adj_contact_rows(m, d, conrow, ncon, lane, nlane);
  const sim_real* gf = sim_prm_friction(m, d);  // (ngeom, 3) the frictions the contacts were mixed from
  SIM_NO_UNROLL
  for (int c = lane; c < ncon; c += nlane)
    if (conrow[c] >= 0) {
      sim_adj_contact_geometry(m, d, c, conrow[c], lambda);
      int g1 = d->contact_geom[2 * c], g2 = d->contact_geom[2 * c + 1];
      int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
      conlast[2 * c] = sim_body_lastdof(m, b1);
      conlast[2 * c + 1] = sim_body_lastdof(m, b2);
      // a geom of the world body takes none: the kinematics adjoint reads the geoms of the moving bodies only
      conroot[2 * c] = b1 ? m->body_rootid[b1] : 0;
      conroot[2 * c + 1] = b2 ? m->body_rootid[b2] : 0;
      // sliding friction: to the geom it was mixed from (dynamic pairs; not where clamped to mjMINMU)
      int pr = d->contact_pair[c], gs = -1;
      if (d->contact_dim[c] > 1 && m->pair_ipair[pr] < 0) {
        int g = simc_friction_src(m, gf, pr, 0);
        if ((g1 == g || g2 == g) && gf[3 * g] >= (sim_real)SIM_MINMU) gs = g;
      }
      confric[c] = gs;
    }
  SIM_SYNC();
  // The gathers to geoms (position and frame of each side, the sliding friction's source) and to root bodies (the
  // subtree com of each side's root): the contacts in order, the 16 components across lanes (lane k owns component k
  // of every geom or body), so that each accumulator receives its terms in contact order, then side order, as a walk
  // per geom or per body gives them, while no lane waits on another's geoms.
  for (int c = 0; c < ncon; c++) {
    if (conrow[c] < 0) continue;
    const sim_real* cb = d->adj_con + (size_t)SIM_ADJ_CON * c;
    SIM_NO_UNROLL
    for (int k = lane; k < 16; k += nlane) {
      if (k == 12) {
        int g = confric[c];
        if (g >= 0) d->adj_geom_friction[3 * g] += cb[SIM_ADJ_CON_FRIC];
        continue;
      }
      for (int side = 0; side < 2; side++) {
        int b = conroot[2 * c + side];
        if (b == 0) continue;  // the world's geoms and root take none
        if (k < 12) {
          int g = d->contact_geom[2 * c + side];
          if (k < 3)
            d->adj_geom_xpos[3 * g + k] += cb[SIM_ADJ_CON_GEOM + 12 * side + k];
          else
            d->adj_geom_xmat[9 * g + k - 3] += cb[SIM_ADJ_CON_GEOM + 12 * side + k];
        } else {
          d->adj_subtree_com[3 * b + k - 13] += cb[(side ? SIM_ADJ_CON_COM2 : SIM_ADJ_CON_COM1) + k - 13];
        }
      }
    }
  }
  // cdof-bar of dof i: jacp column p = lin + ang x off gets p-bar = +X_i (chain of b2), -X_i (chain of b1)
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    sim_real* cb = d->adj_cdof + 6 * i;
    // dof i lies on the dof chain ending at dof `last` where last is i or one of i's descendants: i <= last < iend
    // (the answer of a walk up last's parents to i, without the walk's dependent loads)
    int iend = sim_dof_subtree_end(m, i);
    for (int c = 0; c < ncon; c++) {
      if (conrow[c] < 0) continue;
      const sim_real* con = d->adj_con + (size_t)SIM_ADJ_CON * c;
      for (int side = 0; side < 2; side++) {
        int last = conlast[2 * c + side];
        if (last < i || last >= iend) continue;  // also where last is -1 (no dof): i >= 0
        sim_real X[3] = {0, 0, 0}, t[3], sg = side ? 1 : -1;
        simc_adj_acc3(X, con + SIM_ADJ_CON_ABG, sg * lambda[i]);
        simc_adj_acc3(X, con + SIM_ADJ_CON_ABG + 3, sg * d->qacc[i]);
        simc_adj_acc3(X, con + SIM_ADJ_CON_ABG + 6, sg * d->qvel[i]);
        simu_cross(t, con + SIM_ADJ_CON_OFF + 3 * side, X);
        simu_add3(cb, cb, t);
        simu_add3(cb + 3, cb + 3, X);
      }
    }
  }
  SIM_SYNC();
}

// Contract (called once per evaluation of the dynamics, after sim_adj_zero_eval, with the forward
// intermediates of that evaluation in d, the solver's state at its converged qacc included):
//   in:  adj_qacc (nv)  cotangent of the solver's output qacc (from the integrator adjoint)
//   out (added to): adj_qfrc_smooth (lambda), adj_M, adj_dv (row velocities), adj_dq (limit rows),
//        adj_ten_length (tendon limits), adj_cdof, adj_subtree_com, adj_geom_xpos, adj_geom_xmat (contacts):
//        consumed by the smooth backward that follows.
SIM_FN_STAGE void sim_adj_solver(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  int nv = m->nv, nefc = d->nefc[0];
  sim_real* lambda = d->adj_tmp;
  if (nefc == 0) {  // H = M: reuse the forward's LDL' factor
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) lambda[i] = d->adj_qacc[i];
    SIM_SYNC();
    sim_solveLD(m, lambda, d->qLD, d->qLDiagInv, lane, nlane);
  } else {
    // H = M + J_Q' D_Q J_Q over all dofs and rows (block-diagonal over islands), factored in sol_L; the forward's
    // final factor from tape entry k where it taped one (the same rows, states and order: the same bits)
    if (lane == 0) d->adj_nconstraint[0]++;
    int* ident = d->adj_map;  // (nv) dofs, then (nefc) rows, the latter for a fresh factor only
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) {
      ident[i] = i;
      d->sol_grad[i] = d->adj_qacc[i];
    }
    SimSolveCtx ctx;
    ctx.dofs = ident;
    ctx.rows = ident + nv;
    ctx.n = nv;
    ctx.nr = nefc;
    if (k >= 0 && d->tape_hok[k]) {
      sim_hfac_tape(m, d, k, 1, lane, nlane);  // its sync also ends the loop above
    } else {
      SIM_NO_UNROLL
      for (int r = lane; r < nefc; r += nlane) ident[nv + r] = r;
      SIM_SYNC();
      sim_hessian_factor(m, d, &ctx, lane, nlane);
    }
    sim_chol_solve(d, &ctx, lane, nlane);
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) lambda[i] = d->sol_Mgrad[i];
  }
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) d->adj_qfrc_smooth[i] += lambda[i];
  SIM_SYNC();
  sim_adj_M_outer(m, d->adj_M, lambda, d->qacc, -1, lane, nlane);
  if (nefc == 0) return;
  sim_adj_rows(m, d, lambda, lane, nlane);
  // efc_vel = J v; two dofs per lane and pass (j and j + nlane), two chains in one walk over the rows. Rows out of
  // the quadratic state (vel-bar +0) are skipped, the same test on every lane: their terms are signed zeros, which
  // leave a sum that starts at +0 as it is (sim_primal_update's J' f likewise).
  for (int j = lane; j < nv; j += 2 * nlane) {
    int two = j + nlane < nv, j1 = two ? j + nlane : j;
    sim_real s0 = 0, s1 = 0;
    for (int r = 0; r < nefc; r++) {
      sim_real vb = d->adj_efc[SIM_ADJ_EFC * r + 2];
      if (vb == 0) continue;
      const sim_real* J = d->efc_J + (size_t)r * nv;
      s0 += vb * J[j];
      s1 += vb * J[j1];
    }
    d->adj_dv[j] += s0;
    if (two) d->adj_dv[j1] += s1;
  }
  SIM_SYNC();
  sim_adj_limit_rows(m, d, lambda, lane);
  sim_adj_contacts(m, d, lambda, lane, nlane);
}
