// sim_integrate.c: integrators (MuJoCo's mj_Euler with implicit damping, mj_implicit in its implicitfast
// form, mj_RungeKutta(4)), position integration with quaternions (mj_integratePos), and mj_advance.
#include "sim_model.h"
#include "sim_math.h"

// qpos <- qpos (+) qvel*dt, quaternions by mju_quatIntegrate
SIM_FN void sim_integratePos(const SimModel* m, sim_real* qpos, const sim_real* qvel, sim_real dt, int lane,
                             int nlane) {
  SIM_NO_UNROLL
  for (int j = lane; j < m->njnt; j += nlane) {
    int padr = m->jnt_qposadr[j], vadr = m->jnt_dofadr[j];
    switch (m->jnt_type[j]) {
      case SIM_JNT_FREE:
        for (int i = 0; i < 3; i++) qpos[padr + i] += dt * qvel[vadr + i];
        simu_quatIntegrate(qpos + padr + 3, qvel + vadr + 3, dt);
        break;
      case SIM_JNT_BALL:
        simu_quatIntegrate(qpos + padr, qvel + vadr, dt);
        break;
      default:
        qpos[padr] += dt * qvel[vadr];
    }
  }
  SIM_SYNC();
}

// mj_advance: qvel += h*qacc; qpos integrated with qvel_pos (NULL: the new qvel); time; warm start
SIM_FN void sim_advance(const SimModel* m, SimWorld* d, const sim_real* qacc, const sim_real* qvel_pos, int lane,
                        int nlane) {
  sim_real h = m->timestep;
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) d->qvel[i] += qacc[i] * h;
  SIM_SYNC();
  sim_integratePos(m, d->qpos, qvel_pos ? qvel_pos : d->qvel, h, lane, nlane);
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) d->qacc_warmstart[i] = d->qacc[i];
  if (lane == 0) d->time[0] += h;
  SIM_SYNC();
}

// qDeriv restricted to M's lower-triangular pattern (what implicitfast reads, via MuJoCo's mapD2M):
// actuators with affine bias/gain (skipped while force-clamped), dof dampers, tendon dampers. Row i of the
// pattern belongs to lane i % nlane, which adds the terms that land in it in the serial order (actuators,
// dampers, tendons), so every entry sums the same terms in the same order for any number of lanes.
SIM_FN void sim_qDeriv(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* D = d->qDeriv;
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    int radr = m->M_rowadr[i], rnnz = m->M_rownnz[i];
    for (int k = radr; k < radr + rnnz; k++) D[k] = 0;
    if (!(m->disableflags & SIM_DSBL_ACTUATION)) {
      // the actuators acting on dof i, ascending (its moment entries by dof, one visit per actuator)
      for (int e = m->dof_momadr[i]; e < m->dof_momadr[i] + m->dof_momnum[i]; e++) {
        int a = m->dof_moment[2 * e + 1];
        if (e > m->dof_momadr[i] && m->dof_moment[2 * e - 1] == a) continue;
        int adr = m->actuator_momadr[a], num = m->actuator_momnum[a];
        if (m->actuator_forcelimited[a]) {
          sim_real f = d->actuator_force[a];
          if (f <= m->actuator_forcerange[2 * a] || f >= m->actuator_forcerange[2 * a + 1]) continue;
        }
        sim_real b = 0;
        if (m->actuator_biastype[a] == SIM_BIAS_AFFINE) b = m->actuator_biasprm[3 * a + 2];
        if (m->actuator_gaintype[a] == SIM_GAIN_AFFINE && m->actuator_gainprm[3 * a + 2] != 0)
          b += m->actuator_gainprm[3 * a + 2] * d->ctrl[a];  // raw ctrl, as MuJoCo
        if (b == 0) continue;
        // D += b * moment' moment, entries (i, j) with j ancestor-or-self of i
        for (int p = 0; p < num; p++) {
          if (m->moment_dof[adr + p] != i) continue;
          for (int q = 0; q < num; q++) {
            int j = m->moment_dof[adr + q];
            if (j > i) continue;
            for (int k = radr; k < radr + rnnz; k++)  // column j in row i
              if (m->M_colind[k] == j) {
                D[k] += b * m->moment_val[adr + p] * m->moment_val[adr + q];
                break;
              }
          }
        }
      }
    }
    if (!(m->disableflags & SIM_DSBL_DAMPER)) {
      D[radr + rnnz - 1] -= simu_xPolyForceDeriv(m->dof_damping[i], m->dof_dampingpoly + SIM_NPOLY * i, d->qvel[i], 1);
      for (int t = 0; t < m->ntendon; t++) {
        int adr = m->tendon_adr[t], num = m->tendon_num[t], in = 0;
        for (int p = 0; p < num && !in; p++) in = m->wrap_dofadr[adr + p] == i;
        if (!in) continue;
        sim_real B = -simu_xPolyForceDeriv(m->tendon_damping[t], m->tendon_dampingpoly + SIM_NPOLY * t,
                                           d->ten_velocity[t], 1);
        if (B == 0) continue;
        for (int p = 0; p < num; p++) {
          if (m->wrap_dofadr[adr + p] != i) continue;
          for (int q = 0; q < num; q++) {
            int j = m->wrap_dofadr[adr + q];
            if (j > i) continue;
            for (int k = radr; k < radr + rnnz; k++)
              if (m->M_colind[k] == j) {
                D[k] += B * m->wrap_prm[adr + p] * m->wrap_prm[adr + q];
                break;
              }
          }
        }
      }
    }
  }
  SIM_SYNC();
}

// 6x6 LU with partial pivoting, in place; returns 0 if singular
SIM_FN int simu_solve6(sim_real A[36], sim_real x[6], const sim_real b[6]) {
  int piv[6];
  for (int i = 0; i < 6; i++) piv[i] = i;
  for (int k = 0; k < 6; k++) {
    int p = k;
    for (int i = k + 1; i < 6; i++)
      if (sim_fabs(A[6 * i + k]) > sim_fabs(A[6 * p + k])) p = i;
    if (A[6 * p + k] == 0) return 0;
    if (p != k) {
      for (int c = 0; c < 6; c++) {
        sim_real t = A[6 * k + c]; A[6 * k + c] = A[6 * p + c]; A[6 * p + c] = t;
      }
      int t = piv[k]; piv[k] = piv[p]; piv[p] = t;
    }
    for (int i = k + 1; i < 6; i++) {
      sim_real f = A[6 * i + k] / A[6 * k + k];
      A[6 * i + k] = f;
      for (int c = k + 1; c < 6; c++) A[6 * i + c] -= f * A[6 * k + c];
    }
  }
  sim_real y[6];
  for (int i = 0; i < 6; i++) {
    sim_real s = b[piv[i]];
    for (int c = 0; c < i; c++) s -= A[6 * i + c] * y[c];
    y[i] = s;
  }
  for (int i = 5; i >= 0; i--) {
    sim_real s = y[i];
    for (int c = i + 1; c < 6; c++) s -= A[6 * i + c] * x[c];
    x[i] = s / A[6 * i + i];
  }
  return 1;
}

// d qfrc_bias / d qvel of a standalone free body at body-frame angular velocity wloc (mjd_freeBias_vel):
// translational rows -m*lin with lin = K R, rotational rows rot = R' C R; both only on the rotational columns
SIM_FN void sim_freebody_biasvel(const SimModel* m, const SimWorld* d, int jnt, const sim_real wloc[3],
                                 sim_real lin[9], sim_real rot[9]) {
  int body = m->jnt_bodyid[jnt];
  const sim_real* R = d->xmat + 9 * body;
  const sim_real* Xi = d->ximat + 9 * body;
  const sim_real* inertia = m->body_inertia + 3 * body;
  sim_real mass = sim_prm_mass(m, d)[body];
  sim_real s[3], w[3];
  simu_sub3(s, d->xipos + 3 * body, d->xpos + 3 * body);
  simu_mulMatVec3(w, R, wloc);
  sim_real XiI[9], Iw[9];
  for (int i = 0; i < 3; i++)
    for (int c = 0; c < 3; c++) XiI[3 * i + c] = Xi[3 * i + c] * inertia[c];
  Iw[0] = XiI[0] * Xi[0] + XiI[1] * Xi[1] + XiI[2] * Xi[2];
  Iw[4] = XiI[3] * Xi[3] + XiI[4] * Xi[4] + XiI[5] * Xi[5];
  Iw[8] = XiI[6] * Xi[6] + XiI[7] * Xi[7] + XiI[8] * Xi[8];
  Iw[1] = Iw[3] = XiI[0] * Xi[3] + XiI[1] * Xi[4] + XiI[2] * Xi[5];
  Iw[2] = Iw[6] = XiI[0] * Xi[6] + XiI[1] * Xi[7] + XiI[2] * Xi[8];
  Iw[5] = Iw[7] = XiI[3] * Xi[6] + XiI[4] * Xi[7] + XiI[5] * Xi[8];
  sim_real ws[3], Iww[3];
  simu_cross(ws, w, s);
  simu_mulMatVec3(Iww, Iw, w);
  sim_real wds = w[0] * s[0] + w[1] * s[1] + w[2] * s[2];
  // K = [w x s]x + [w]x [s]x
  sim_real K[9] = {s[0] * w[0] - wds, s[0] * w[1] - ws[2], s[0] * w[2] + ws[1],
                   s[1] * w[0] + ws[2], s[1] * w[1] - wds, s[1] * w[2] - ws[0],
                   s[2] * w[0] - ws[1], s[2] * w[1] + ws[0], s[2] * w[2] - wds};
  sim_real C[9], RtC[9];
  simu_mulMatMat3(lin, K, R);
  // C = -m [s]x K + [w]x Iw - [Iw w]x
  for (int c = 0; c < 3; c++) {
    sim_real sk0 = s[1] * K[6 + c] - s[2] * K[3 + c];
    sim_real sk1 = s[2] * K[c] - s[0] * K[6 + c];
    sim_real sk2 = s[0] * K[3 + c] - s[1] * K[c];
    sim_real wi0 = w[1] * Iw[6 + c] - w[2] * Iw[3 + c];
    sim_real wi1 = w[2] * Iw[c] - w[0] * Iw[6 + c];
    sim_real wi2 = w[0] * Iw[3 + c] - w[1] * Iw[c];
    C[c] = -mass * sk0 + wi0 + (c == 1 ? Iww[2] : (c == 2 ? -Iww[1] : 0));
    C[3 + c] = -mass * sk1 + wi1 + (c == 0 ? -Iww[2] : (c == 2 ? Iww[0] : 0));
    C[6 + c] = -mass * sk2 + wi2 + (c == 0 ? Iww[1] : (c == 1 ? -Iww[0] : 0));
  }
  for (int i = 0; i < 3; i++)
    for (int c = 0; c < 3; c++) RtC[3 * i + c] = R[i] * C[c] + R[3 + i] * C[3 + c] + R[6 + i] * C[6 + c];
  simu_mulMatMat3(rot, RtC, R);
}

// implicitfast block of a standalone free body: A = M_b - h*D_b + h*d(bias)/dv (mjd_freeMhat)
SIM_FN void sim_freebody_matrix(const SimModel* m, const SimWorld* d, int jnt, sim_real A[36]) {
  int body = m->jnt_bodyid[jnt], adr = m->jnt_dofadr[jnt];
  sim_real h = m->timestep;
  for (int k = 0; k < 36; k++) A[k] = 0;
  for (int r = 0; r < 6; r++) {
    int radr = m->M_rowadr[adr + r], rnnz = m->M_rownnz[adr + r];
    for (int k = 0; k < rnnz; k++) {
      int c = m->M_colind[radr + k] - adr;
      A[6 * r + c] = A[6 * c + r] = d->M[radr + k];
    }
  }
  for (int r = 0; r < 6; r++) {  // qDeriv is symmetric here: mirror the stored lower triangle
    int radr = m->M_rowadr[adr + r], rnnz = m->M_rownnz[adr + r];
    for (int k = 0; k < rnnz; k++) {
      int c = m->M_colind[radr + k] - adr;
      A[6 * r + c] -= h * d->qDeriv[radr + k];
      if (c != r) A[6 * c + r] -= h * d->qDeriv[radr + k];
    }
  }
  sim_real lin[9], rot[9];
  sim_freebody_biasvel(m, d, jnt, d->qvel + adr + 3, lin, rot);
  sim_real hm = -h * sim_prm_mass(m, d)[body];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) {
      A[6 * r + 3 + c] += hm * lin[3 * r + c];
      A[6 * (3 + r) + 3 + c] += h * rot[3 * r + c];
    }
}

// Euler: implicit in joint damping when any dof has damping (unless eulerdamp/damper disabled)
SIM_FN_STAGE void sim_euler(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int damped = 0;
  if (!(m->disableflags & (SIM_DSBL_EULERDAMP | SIM_DSBL_DAMPER)))
    for (int i = 0; i < m->nv; i++) damped |= m->dof_hasdamp[i];
  if (!damped) {
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane) d->qacc_int[i] = d->qacc[i];
  } else {
    sim_real h = m->timestep;
    sim_copy_lanes(d->qH, d->M, m->nM, lane, nlane);
    SIM_SYNC();
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane) {
      d->qH[m->M_rowadr[i] + m->M_rownnz[i] - 1] +=
          h * simu_xPolyForceDeriv(m->dof_damping[i], m->dof_dampingpoly + SIM_NPOLY * i, d->qvel[i], 1);
    }
    SIM_SYNC();
    sim_factorI(m, d->qH, d->qHDiagInv, lane, nlane);
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane) d->qacc_int[i] = d->qfrc_smooth[i] + d->qfrc_constraint[i];
    SIM_SYNC();
    sim_solveLD(m, d->qacc_int, d->qH, d->qHDiagInv, lane, nlane);
  }
  SIM_SYNC();
  sim_advance(m, d, d->qacc_int, 0, lane, nlane);
}

// implicitfast: (M - h*qDeriv) qacc_int = qfrc_smooth + qfrc_constraint; standalone free bodies get
// their unsymmetric 6x6 block with the gyroscopic derivative
SIM_FN_STAGE void sim_implicitfast(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real h = m->timestep;
  sim_qDeriv(m, d, lane, nlane);
  SIM_NO_UNROLL
  for (int k = lane; k < m->nM; k += nlane) d->qH[k] = d->M[k] - d->qDeriv[k] * h;
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int j = lane; j < m->njnt; j += nlane) {
    if (!m->jnt_freebody[j]) continue;
    int adr = m->jnt_dofadr[j];
    for (int r = 0; r < 6; r++) {
      int radr = m->M_rowadr[adr + r];
      for (int k = 0; k < m->M_rownnz[adr + r]; k++) d->qH[radr + k] = d->M[radr + k];
    }
  }
  SIM_SYNC();
  sim_factorI(m, d->qH, d->qHDiagInv, lane, nlane);
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) d->qacc_int[i] = d->qfrc_smooth[i] + d->qfrc_constraint[i];
  SIM_SYNC();
  sim_solveLD(m, d->qacc_int, d->qH, d->qHDiagInv, lane, nlane);
  SIM_NO_UNROLL
  for (int j = lane; j < m->njnt; j += nlane) {
    if (!m->jnt_freebody[j]) continue;
    int adr = m->jnt_dofadr[j];
    sim_real A[36], x[6], b[6];
    sim_freebody_matrix(m, d, j, A);
    for (int r = 0; r < 6; r++) b[r] = d->qfrc_smooth[adr + r] + d->qfrc_constraint[adr + r];
    if (simu_solve6(A, x, b))
      for (int r = 0; r < 6; r++) d->qacc_int[adr + r] = x[r];
  }
  SIM_SYNC();
  sim_advance(m, d, d->qacc_int, 0, lane, nlane);
}
