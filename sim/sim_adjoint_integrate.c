// sim_adjoint_integrate.c: reverse-mode VJPs of sim_integrate.c: the position update (mj_integratePos with
// quaternions, in tangent space) and the integrator adjoints of physics.md section 3.1 for Euler with
// implicit damping and implicitfast (standalone free-body 6x6 block included). RK4 is in sim_adjoint.c.
//
// Integrators solve Q a_int = qfrc_smooth + qfrc_constraint = M a. With y = Q^-T a_int-bar:
//   a-bar += M y;   theta-bar += d_theta[y' M (a - a_int)] - d_theta[y' (Q - M) a_int]   (a, a_int frozen)
// Euler: Q - M = h diag(b(v)). implicitfast: Q - M = -h sym(qDeriv) (+ h G on free blocks, G = d bias / dv;
// G depends on the body's mass and COM offset too: their cotangents are accumulated here).
#include "sim_model.h"
#include "sim_math.h"

// VJP of qpos' = qpos (+) vel*h at (qpos, vel): qbar_out (nv, tangent at qpos') -> qbar_in += (tangent at
// qpos), velbar += . Quaternions: q' = q exp(h w): d' = R(hw)' d + Jr(hw) h dw (body frame).
SIM_FN void sim_adj_integratePos(const SimModel* m, const sim_real* vel, sim_real h, const sim_real* qbar_out,
                                 sim_real* qbar_in, sim_real* velbar, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int j = lane; j < m->njnt; j += nlane) {
    int vadr = m->jnt_dofadr[j], type = m->jnt_type[j];
    int nlin = type == SIM_JNT_FREE ? 3 : (type == SIM_JNT_BALL ? 0 : 1);
    for (int i = 0; i < nlin; i++) {
      qbar_in[vadr + i] += qbar_out[vadr + i];
      velbar[vadr + i] += h * qbar_out[vadr + i];
    }
    if (type == SIM_JNT_FREE || type == SIM_JNT_BALL) {
      int r = vadr + nlin;
      sim_real phi[3], R[9], t[3];
      simu_scl3(phi, vel + r, h);
      simu_adj_expmat(R, phi);
      simu_mulMatVec3(t, R, qbar_out + r);
      simu_add3(qbar_in + r, qbar_in + r, t);
      simu_adj_JrT(t, phi, qbar_out + r);
      for (int e = 0; e < 3; e++) velbar[r + e] += h * t[e];
    }
  }
  SIM_SYNC();
}

// derivative of b(v) = mjd_xPolyForce(damping, poly, v) (odd in v)
SIM_FN sim_real simu_adj_dampDeriv2(const sim_real* poly, sim_real v) {
  sim_real av = sim_fabs(v), res = 0, p = 1;
  for (int k = 0; k < SIM_NPOLY; k++) {
    res += (k + 2) * (k + 1) * poly[k] * p;
    p *= av;
  }
  return v < 0 ? -res : res;
}

// y' sym(w w')|pattern a: the part of y' qDeriv a that one rank-1 term (dofs, weights) contributes through
// M's lower pattern (entries outside it are dropped by implicitfast, as MuJoCo's mapD2M)
SIM_FN sim_real sim_adj_pattern_quad(const SimModel* m, const int* dofs, const sim_real* w, int num,
                                     const sim_real* y, const sim_real* a) {
  sim_real s = 0;
  for (int p = 0; p < num; p++) {
    int i = dofs[p];
    for (int q = 0; q < num; q++) {
      int j = dofs[q];
      if (j > i) continue;
      int found = 0;
      int radr = m->M_rowadr[i], rnnz = m->M_rownnz[i];
      for (int k = radr; k < radr + rnnz; k++)
        if (m->M_colind[k] == j) {
          found = 1;
          break;
        }
      if (!found) continue;
      sim_real wpq = w[p] * w[q];
      s += i == j ? wpq * y[i] * a[i] : wpq * (y[i] * a[j] + y[j] * a[i]);
    }
  }
  return s;
}

// theta-bar += h d_theta[y' qDeriv a] (implicitfast's D: actuators via raw ctrl, dof and tendon dampers via v)
SIM_FN_STAGE void sim_adj_qDeriv(const SimModel* m, SimWorld* d, const int* flags, const sim_real* y, const sim_real* a,
                                int lane, int nlane) {
  sim_real h = m->timestep;
  // actuators and dofs across lanes (each adj_du / adj_dv entry gets one term here), tendons on lane 0 after
  if (!(m->disableflags & SIM_DSBL_ACTUATION)) {
    SIM_NO_UNROLL
    for (int u = lane; u < m->nu; u += nlane) {
      if (flags[u] & SIM_ADJ_FORCE_CLAMPED) continue;
      if (m->actuator_gaintype[u] != SIM_GAIN_AFFINE || m->actuator_gainprm[3 * u + 2] == 0) continue;
      int adr = m->actuator_momadr[u], num = m->actuator_momnum[u];
      d->adj_du[u] += h * m->actuator_gainprm[3 * u + 2] *
                      sim_adj_pattern_quad(m, m->moment_dof + adr, m->moment_val + adr, num, y, a);
    }
  }
  if (!(m->disableflags & SIM_DSBL_DAMPER)) {
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane)
      d->adj_dv[i] -= h * simu_adj_dampDeriv2(m->dof_dampingpoly + SIM_NPOLY * i, d->qvel[i]) * y[i] * a[i];
  }
  SIM_SYNC();
  if (lane == 0) {
    if (!(m->disableflags & SIM_DSBL_DAMPER)) {
      for (int t = 0; t < m->ntendon; t++) {
        const sim_real* poly = m->tendon_dampingpoly + SIM_NPOLY * t;
        if (simu_isZero(poly, SIM_NPOLY)) continue;
        int adr = m->tendon_adr[t], num = m->tendon_num[t];
        sim_real g = -h * simu_adj_dampDeriv2(poly, d->ten_velocity[t]) *
                     sim_adj_pattern_quad(m, m->wrap_dofadr + adr, m->wrap_prm + adr, num, y, a);
        for (int k = 0; k < num; k++) d->adj_dv[m->wrap_dofadr[adr + k]] += g * m->wrap_prm[adr + k];
      }
    }
  }
  SIM_SYNC();
}

// G = d qfrc_bias / d qvel of a standalone free body (as sim_freebody_matrix, before the h scaling), with
// the angular velocity wloc (body frame) in place of the state's; lin = K R (out, for the q term)
SIM_FN void sim_adj_freebias_G(const SimModel* m, const SimWorld* d, int jnt, const sim_real wloc[3], sim_real G[36],
                               sim_real lin[9]) {
  sim_real rot[9];
  sim_real mass = sim_prm_mass(m, d)[m->jnt_bodyid[jnt]];
  sim_freebody_biasvel(m, d, jnt, wloc, lin, rot);
  for (int k = 0; k < 36; k++) G[k] = 0;
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) {
      G[6 * r + 3 + c] = -mass * lin[3 * r + c];
      G[6 * (3 + r) + 3 + c] = rot[3 * r + c];
    }
}

// free blocks: y_b = A^-T a_int-bar_b (overwrites adj_y there) and theta-bar -= h d_theta[y_b' G a_b]
SIM_FN void sim_adj_freebody(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real h = m->timestep;
  SIM_NO_UNROLL
  for (int j = lane; j < m->njnt; j += nlane) {
    if (!m->jnt_freebody[j]) continue;
    int adr = m->jnt_dofadr[j], body = m->jnt_bodyid[j];
    sim_real A[36], At[36], y[6], G[36], lin[9];
    sim_freebody_matrix(m, d, j, A);
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 6; c++) At[6 * r + c] = A[6 * c + r];
    if (!simu_solve6(At, y, d->adj_qacc_int + adr)) continue;
    for (int r = 0; r < 6; r++) d->adj_y[adr + r] = y[r];
    const sim_real* a = d->qacc_int + adr;
    // v-term: G is linear in w and y' G(v) a = y' G(a) v, so d/dv = G(a)' y
    sim_adj_freebias_G(m, d, j, a + 3, G, lin);
    for (int c = 3; c < 6; c++) {
      sim_real s = 0;
      for (int r = 0; r < 6; r++) s += G[6 * r + c] * y[r];
      d->adj_dv[adr + c] -= h * s;
    }
    // q-term: only the translational rows -m K R depend on the orientation (the rotational block is
    // frame-invariant): d/dtheta [y_t' (-m K R a_r)] = -m R' ((K R a_r) x y_t)
    sim_adj_freebias_G(m, d, j, d->qvel + adr + 3, G, lin);
    sim_real la[3], g[3], gl[3];
    simu_mulMatVec3(la, lin, a + 3);
    simu_cross(g, la, y);
    simu_mulMatTVec3(gl, d->xmat + 9 * body, g);
    sim_real mass = sim_prm_mass(m, d)[body];
    for (int e = 0; e < 3; e++) d->adj_dq[adr + 3 + e] -= h * (-mass) * gl[e];
    // parameters: y' G(v) a depends on the mass and on s = xipos - xpos = R ipos only through
    // -m p' K(s) ar, with p = y_t + yr x s, K(s) ar = (w x s) x ar + w x (s x ar), ar = R a_r, yr = R y_r,
    // w = R v_r (world frame); so mass-bar += h p'K ar and s-bar += h m d(p'K ar)/ds, where
    // d(p'K ar)/ds = (K ar) x yr - w x (ar x p) - ar x (w x p)
    const sim_real* R = d->xmat + 9 * body;
    sim_real sv[3], w[3], ar[3], yr[3], p[3], q[3], t[3], u[3], gs[3];
    simu_sub3(sv, d->xipos + 3 * body, d->xpos + 3 * body);
    simu_mulMatVec3(w, R, d->qvel + adr + 3);
    simu_mulMatVec3(ar, R, a + 3);
    simu_mulMatVec3(yr, R, y + 3);
    simu_cross(p, yr, sv);
    simu_add3(p, p, y);
    simu_cross(t, w, sv);
    simu_cross(q, t, ar);
    simu_cross(t, sv, ar);
    simu_cross(u, w, t);
    simu_add3(q, q, u);
    d->adj_body_mass[body] += h * simu_dot3(p, q);
    simu_cross(gs, q, yr);
    simu_cross(t, ar, p);
    simu_cross(u, w, t);
    simu_sub3(gs, gs, u);
    simu_cross(t, w, p);
    simu_cross(u, ar, t);
    simu_sub3(gs, gs, u);
    simu_scl3(gs, gs, h * mass);
    simu_mulMatTVec3(t, R, gs);
    simu_add3(d->adj_body_ipos + 3 * body, d->adj_body_ipos + 3 * body, t);
  }
  SIM_SYNC();
}
