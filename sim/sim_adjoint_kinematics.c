// sim_adjoint_kinematics.c: reverse-mode VJPs of the position stage (sim_kinematics.c): mj_kinematics,
// mj_comPos and the fixed-tendon / transmission lengths.
//
// Kinematics is differentiated in the tangent space of qpos (nv), the space of mj_integratePos: a dof's
// motion moves everything downstream of it rigidly, with the 6D axis cdof (angular; linear velocity of the
// point at subtree_com[root]). So a cotangent on a world point x (x-bar) is the wrench (f = x-bar,
// torque (x - c) x x-bar about c = subtree_com[root]), on a world frame R (R-bar) a pure torque, on a world
// direction a (a-bar) the torque a x a-bar; wrenches are summed over subtrees and each dof reads
// qpos-bar_j = cdof_j . wrench. Quaternion normalization and the ball/free tangent are then implicit (the
// tangent of a quaternion is the body-frame rotation, as cdof's body xmat columns).
#include "sim_model.h"
#include "sim_math.h"

// ---- SO(3) helpers of the tangent-space VJPs (rotation vector phi, angle th = |phi|) ----

// below this angle the series replace the closed forms (their cancellation grows as the angle shrinks);
// four terms are exact to rounding there in either precision
#ifdef SIM_DOUBLE
#define SIM_ADJ_SERIES_ANGLE 0.1
#else
#define SIM_ADJ_SERIES_ANGLE 0.5
#endif

// (1 - cos th) / th^2, stably
SIM_FN sim_real simu_adj_cosc(sim_real th) {
  if (th < (sim_real)1e-4) return (sim_real)0.5 - th * th / 24;
  sim_real s = sim_sin(th / 2) / (th / 2);
  return (sim_real)0.5 * s * s;
}

// R = exp([phi]x) (Rodrigues)
SIM_FN void simu_adj_expmat(sim_real R[9], const sim_real phi[3]) {
  sim_real th2 = simu_dot3(phi, phi), th = sim_sqrt(th2);
  sim_real s = th < (sim_real)1e-4 ? 1 - th2 / 6 : sim_sin(th) / th;
  sim_real c = simu_adj_cosc(th);
  sim_real K[9] = {0, -phi[2], phi[1], phi[2], 0, -phi[0], -phi[1], phi[0], 0}, K2[9];
  simu_mulMatMat3(K2, K, K);
  for (int k = 0; k < 9; k++) R[k] = (k % 4 == 0 ? 1 : 0) + s * K[k] + c * K2[k];
}

// res = Jr(phi)' x, Jr the right Jacobian: exp(phi + dphi) = exp(phi) exp(Jr dphi). Safe at phi = 0.
SIM_FN void simu_adj_JrT(sim_real res[3], const sim_real phi[3], const sim_real x[3]) {
  sim_real th2 = simu_dot3(phi, phi), th = sim_sqrt(th2), b;
  sim_real a = simu_adj_cosc(th);
  if (th < (sim_real)SIM_ADJ_SERIES_ANGLE) {  // (th - sin th) / th^3
    b = (sim_real)(1.0 / 6.0) - th2 * ((sim_real)(1.0 / 120.0) - th2 * ((sim_real)(1.0 / 5040.0) - th2 * (sim_real)(1.0 / 362880.0)));
  } else {
    b = (th - sim_sin(th)) / (th2 * th);
  }
  sim_real t1[3], t2[3];
  simu_cross(t1, phi, x);
  simu_cross(t2, phi, t1);
  for (int e = 0; e < 3; e++) res[e] = x[e] + a * t1[e] + b * t2[e];
}

// res = Jr(phi)^-T x
SIM_FN void simu_adj_JrInvT(sim_real res[3], const sim_real phi[3], const sim_real x[3]) {
  sim_real th2 = simu_dot3(phi, phi), th = sim_sqrt(th2), c;
  if (th < (sim_real)SIM_ADJ_SERIES_ANGLE) {  // 1/th^2 - (1 + cos th) / (2 th sin th)
    c = (sim_real)(1.0 / 12.0) + th2 * ((sim_real)(1.0 / 720.0) + th2 * ((sim_real)(1.0 / 30240.0) + th2 * (sim_real)(1.0 / 1209600.0)));
  } else {
    c = 1 / th2 - (1 + sim_cos(th)) / (2 * th * sim_sin(th));
  }
  sim_real t1[3], t2[3];
  simu_cross(t1, phi, x);
  simu_cross(t2, phi, t1);
  for (int e = 0; e < 3; e++) res[e] = x[e] - (sim_real)0.5 * t1[e] + c * t2[e];
}

// torque of a frame cotangent: <Rbar, [w]x R> = w . t with t = vee-like part of B = Rbar R'
SIM_FN void simu_adj_frame_torque(sim_real t[3], const sim_real R[9], const sim_real Rbar[9]) {
  sim_real B[9];
  for (int a = 0; a < 3; a++)
    for (int d = 0; d < 3; d++) B[3 * a + d] = Rbar[3 * a] * R[3 * d] + Rbar[3 * a + 1] * R[3 * d + 1] + Rbar[3 * a + 2] * R[3 * d + 2];
  t[0] += B[7] - B[5];
  t[1] += B[2] - B[6];
  t[2] += B[3] - B[1];
}

// wrench (about c) of a point cotangent
SIM_FN void simu_adj_point_wrench(sim_real W[6], const sim_real x[3], const sim_real c[3], const sim_real xbar[3]) {
  sim_real r[3], t[3];
  simu_sub3(r, x, c);
  simu_cross(t, r, xbar);
  for (int e = 0; e < 3; e++) {
    W[e] += t[e];
    W[3 + e] += xbar[e];
  }
}

// kinematics VJP: adj_xpos/xmat/xipos/ximat/xanchor/xaxis/geom_x* -> adj_dq (accumulated, tangent)
SIM_FN_STAGE void sim_adj_kinematics(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* W = d->adj_wrench;  // (nbody, 6)
  // own contributions of each body (independent across bodies); body_ipos hook: xipos = xpos + xmat ipos
  for (int b = 1 + lane; b < m->nbody; b += nlane) {
    sim_real t[3];
    simu_mulMatTVec3(t, d->xmat + 9 * b, d->adj_xipos + 3 * b);
    simu_add3(d->adj_body_ipos + 3 * b, d->adj_body_ipos + 3 * b, t);
  }
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int k = lane; k < 6 * m->nbody; k += nlane) W[k] = 0;
  SIM_SYNC();
  for (int b = 1 + lane; b < m->nbody; b += nlane) {
    const sim_real* c = d->subtree_com + 3 * m->body_rootid[b];
    sim_real* Wb = W + 6 * b;
    simu_adj_point_wrench(Wb, d->xpos + 3 * b, c, d->adj_xpos + 3 * b);
    simu_adj_frame_torque(Wb, d->xmat + 9 * b, d->adj_xmat + 9 * b);
    simu_adj_point_wrench(Wb, d->xipos + 3 * b, c, d->adj_xipos + 3 * b);
    simu_adj_frame_torque(Wb, d->ximat + 9 * b, d->adj_ximat + 9 * b);
    for (int g = m->body_geomadr[b]; g < m->body_geomadr[b] + m->body_geomnum[b]; g++) {
      simu_adj_point_wrench(Wb, d->geom_xpos + 3 * g, c, d->adj_geom_xpos + 3 * g);
      simu_adj_frame_torque(Wb, d->geom_xmat + 9 * g, d->adj_geom_xmat + 9 * g);
    }
  }
  SIM_SYNC();
  // deepest level first: joints of the body from last to first, then the subtree wrench into the parent
  for (int l = m->nlevel - 1; l >= 1; l--) {
    int adr = m->level_adr[l], num = m->level_num[l];
    sim_gather_level(m, W, 6, l, 0, lane, nlane);  // children (one level deeper, complete)
    SIM_SYNC();
    SIM_NO_UNROLL
    for (int k = lane; k < num; k += nlane) {
      int b = m->level_body[adr + k];
      sim_real* Wb = W + 6 * b;
      const sim_real* c = d->subtree_com + 3 * m->body_rootid[b];
      for (int j = m->body_jntadr[b] + m->body_jntnum[b] - 1; j >= m->body_jntadr[b]; j--) {
        int type = m->jnt_type[j], dadr = m->jnt_dofadr[j];
        int ndof = type == SIM_JNT_FREE ? 6 : (type == SIM_JNT_BALL ? 3 : 1);
        for (int q = 0; q < ndof; q++) d->adj_dq[dadr + q] += simu_dot(d->cdof + 6 * (dadr + q), Wb, 6);
        // anchor and axis of joint j depend on the dofs before j only
        if (type == SIM_JNT_FREE) {
          for (int e = 0; e < 3; e++) d->adj_dq[dadr + e] += d->adj_xanchor[3 * j + e];  // xanchor = qpos[0:3]
        } else {
          simu_adj_point_wrench(Wb, d->xanchor + 3 * j, c, d->adj_xanchor + 3 * j);
          sim_real t[3];
          simu_cross(t, d->xaxis + 3 * j, d->adj_xaxis + 3 * j);
          simu_add3(Wb, Wb, t);
        }
      }
    }
    SIM_SYNC();
  }
}

// cotangent of cinert (simu_inertCom) -> ximat, dif = xipos - subtree_com[root], mass (hook)
SIM_FN void simu_adj_inertCom(const sim_real rbar[10], const sim_real inert[3], const sim_real mat[9],
                              const sim_real dif[3], sim_real mass, sim_real* matbar, sim_real difbar[3],
                              sim_real* massbar) {
  // rot = mat diag(inert) mat': matbar = G mat diag(inert), G the symmetric cotangent (diag doubled)
  sim_real G[9] = {2 * rbar[0], rbar[3], rbar[4], rbar[3], 2 * rbar[1], rbar[5], rbar[4], rbar[5], 2 * rbar[2]};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      matbar[3 * a + b] += (G[3 * a] * mat[b] + G[3 * a + 1] * mat[3 + b] + G[3 * a + 2] * mat[6 + b]) * inert[b];
  difbar[0] += mass * (2 * dif[0] * (rbar[1] + rbar[2]) - dif[1] * rbar[3] - dif[2] * rbar[4] + rbar[6]);
  difbar[1] += mass * (2 * dif[1] * (rbar[0] + rbar[2]) - dif[0] * rbar[3] - dif[2] * rbar[5] + rbar[7]);
  difbar[2] += mass * (2 * dif[2] * (rbar[0] + rbar[1]) - dif[0] * rbar[4] - dif[1] * rbar[5] + rbar[8]);
  if (massbar) {
    *massbar += rbar[0] * (dif[1] * dif[1] + dif[2] * dif[2]) + rbar[1] * (dif[0] * dif[0] + dif[2] * dif[2]) +
                rbar[2] * (dif[0] * dif[0] + dif[1] * dif[1]) - rbar[3] * dif[0] * dif[1] -
                rbar[4] * dif[0] * dif[2] - rbar[5] * dif[1] * dif[2] + rbar[6] * dif[0] + rbar[7] * dif[1] +
                rbar[8] * dif[2] + rbar[9];
  }
}

// comPos VJP: adj_cinert, adj_cdof, adj_subtree_com -> adj_ximat, adj_xipos, adj_xmat, adj_xaxis, adj_xanchor
// (accumulated) through subtree_com; body_mass hook. Lane-parallel: per body (its joints' cdof and its
// cinert), then per root (gather of the subtree_com cotangents), then down the tree level by level.
SIM_FN_STAGE void sim_adj_comPos(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int nbody = m->nbody;
  const sim_real* mass = sim_prm_mass(m, d);           // (nbody) the world's masses (as the forward)
  const sim_real* stmass = sim_prm_subtreemass(m, d);  // (nbody) their subtree sums
  sim_real* cbar = d->adj_subtree_com;  // zeroed per evaluation; the constraint adjoint may add to it
  sim_real* O = d->adj_buf6;            // (njnt, 3) cotangent of each joint's offset com_root - xanchor
  sim_real* D = d->adj_wrench;          // (nbody, 6): [0] T (below), [3:6] cotangent of xipos - com_root
  for (int i = 1 + lane; i < nbody; i += nlane) {
    for (int j = m->body_jntadr[i]; j < m->body_jntadr[i] + m->body_jntnum[i]; j++) {
      int root = m->body_rootid[i];
      const sim_real* cdof = d->cdof + 6 * m->jnt_dofadr[j];
      const sim_real* cdbar = d->adj_cdof + 6 * m->jnt_dofadr[j];
      sim_real off[3], offbar[3] = {0, 0, 0}, t[3];
      simu_sub3(off, d->subtree_com + 3 * root, d->xanchor + 3 * j);
      switch (m->jnt_type[j]) {
        case SIM_JNT_FREE:
        case SIM_JNT_BALL: {
          int skip = m->jnt_type[j] == SIM_JNT_FREE ? 3 : 0;
          for (int k = 0; k < 3; k++) {
            const sim_real* cd = cdof + 6 * (skip + k);
            const sim_real* cb = cdbar + 6 * (skip + k);
            sim_real abar[3];
            simu_cross(abar, off, cb + 3);
            simu_add3(abar, abar, cb);
            for (int r = 0; r < 3; r++) d->adj_xmat[9 * i + 3 * r + k] += abar[r];
            simu_cross(t, cb + 3, cd);
            simu_add3(offbar, offbar, t);
          }
          break;
        }
        case SIM_JNT_SLIDE:
          simu_add3(d->adj_xaxis + 3 * j, d->adj_xaxis + 3 * j, cdbar + 3);
          break;
        default: {
          sim_real abar[3];
          simu_cross(abar, off, cdbar + 3);
          simu_add3(abar, abar, cdbar);
          simu_add3(d->adj_xaxis + 3 * j, d->adj_xaxis + 3 * j, abar);
          simu_cross(t, cdbar + 3, cdof);
          simu_add3(offbar, offbar, t);
        }
      }
      simu_copy3(O + 3 * j, offbar);
      simu_sub3(d->adj_xanchor + 3 * j, d->adj_xanchor + 3 * j, offbar);
    }
    sim_real dif[3], difbar[3] = {0, 0, 0};
    simu_sub3(dif, d->xipos + 3 * i, d->subtree_com + 3 * m->body_rootid[i]);
    simu_adj_inertCom(d->adj_cinert + 10 * i, m->body_inertia + 3 * i, d->ximat + 9 * i, dif, mass[i],
                      d->adj_ximat + 9 * i, difbar, d->adj_body_mass + i);
    simu_add3(d->adj_xipos + 3 * i, d->adj_xipos + 3 * i, difbar);
    simu_copy3(D + 6 * i + 3, difbar);
  }
  SIM_SYNC();
  // gather into each root's subtree_com cotangent, then scale: subtree_com_p = sum m_k xipos_k / M_p (bodies
  // and their 3 components across lanes: a model has few roots, each gathers over every joint and body)
  SIM_NO_UNROLL
  for (int t = lane; t < 3 * nbody; t += nlane) {
    int p = t / 3, c = t % 3;
    sim_real v = cbar[t];
    if (p > 0 && m->body_rootid[p] == p) {
      for (int j = 0; j < m->njnt; j++)
        if (m->body_rootid[m->jnt_bodyid[j]] == p) v = v + O[3 * j + c];
      for (int i = 1; i < nbody; i++)
        if (m->body_rootid[i] == p) v = v - D[6 * i + 3 + c];
    }
    if (stmass[p] < SIM_MINVAL) {
      d->adj_xipos[t] = d->adj_xipos[t] + v;
      v = 0;
    } else {
      v = v * (1 / stmass[p]);
    }
    cbar[t] = v;
  }
  SIM_SYNC();
  // push down the tree; cumulative T_i = sum over ancestors-or-self p of cbar_p . subtree_com_p gives the
  // mass hook (d com_p / d m_k = (xipos_k - com_p) / M_p)
  sim_real* T = D;
  if (lane == 0) T[0] = simu_dot3(cbar, d->subtree_com);
  SIM_SYNC();
  for (int l = 1; l < m->nlevel; l++) {
    int adr = m->level_adr[l], num = m->level_num[l];
    SIM_NO_UNROLL
    for (int k = lane; k < num; k += nlane) {
      int i = m->level_body[adr + k], p = m->body_parentid[i];
      T[6 * i] = T[6 * p] + simu_dot3(cbar + 3 * i, d->subtree_com + 3 * i);
      simu_add3(cbar + 3 * i, cbar + 3 * i, cbar + 3 * p);
      for (int e = 0; e < 3; e++) d->adj_xipos[3 * i + e] += mass[i] * cbar[3 * i + e];
      d->adj_body_mass[i] += simu_dot3(cbar + 3 * i, d->xipos + 3 * i) - T[6 * i];
    }
    SIM_SYNC();
  }
}

// lengths VJP: adj_actuator_length, adj_ten_length -> adj_dq (hinge/slide dofs only)
SIM_FN_STAGE void sim_adj_tendon_transmission(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (m->ntendon) {
    if (lane == 0) {
      for (int a = 0; a < m->nu; a++) {
        int id = m->actuator_trnid[a];
        sim_real g = m->actuator_gear[a] * d->adj_actuator_length[a];
        if (m->actuator_trntype[a] == SIM_TRN_JOINT) d->adj_dq[m->jnt_dofadr[id]] += g;
        else d->adj_ten_length[id] += g;
      }
      for (int t = 0; t < m->ntendon; t++) {
        int adr = m->tendon_adr[t], num = m->tendon_num[t];
        for (int k = 0; k < num; k++) d->adj_dq[m->wrap_dofadr[adr + k]] += m->wrap_prm[adr + k] * d->adj_ten_length[t];
      }
    }
  } else {
    // joint transmissions only: per dof across lanes, its actuators ascending (a joint transmission's moment
    // includes its joint's first dof, so the dof's moment list names every actuator that lands there)
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane)
      for (int e = m->dof_momadr[i]; e < m->dof_momadr[i] + m->dof_momnum[i]; e++) {
        int a = m->dof_moment[2 * e + 1];
        if (e > m->dof_momadr[i] && m->dof_moment[2 * e - 1] == a) continue;  // one visit per actuator
        if (m->actuator_trntype[a] == SIM_TRN_JOINT && m->jnt_dofadr[m->actuator_trnid[a]] == i)
          d->adj_dq[i] += m->actuator_gear[a] * d->adj_actuator_length[a];
      }
  }
  SIM_SYNC();
}
