// sim_adjoint_velocity.c: reverse-mode VJPs of sim_velocity.c: tendon/actuator velocities, mj_comVel,
// mj_rne (flg_acc = 0) and mj_passive (joint springs incl. ball/free, dof dampers incl. dampingpoly, fixed
// tendon spring-dampers). Cotangents accumulate into adj_dq (tangent), adj_dv and the intermediates' adj_*.
#include "sim_model.h"
#include "sim_math.h"

// r = crossMotion(vel, v): accumulate velbar, vbar
SIM_FN void simu_adj_crossMotion(sim_real* velbar, sim_real* vbar, const sim_real vel[6], const sim_real v[6],
                                 const sim_real rbar[6]) {
  sim_real t[3];
  if (velbar) {
    simu_cross(t, v, rbar);          // w-bar += a x r1
    simu_add3(velbar, velbar, t);
    simu_cross(t, v + 3, rbar + 3);  // w-bar += b x r2
    simu_add3(velbar, velbar, t);
    simu_cross(t, v, rbar + 3);      // v-bar += a x r2
    simu_add3(velbar + 3, velbar + 3, t);
  }
  if (vbar) {
    simu_cross(t, rbar, vel);        // a-bar += r1 x w
    simu_add3(vbar, vbar, t);
    simu_cross(t, rbar + 3, vel + 3);  // a-bar += r2 x v
    simu_add3(vbar, vbar, t);
    simu_cross(t, rbar + 3, vel);    // b-bar += r2 x w
    simu_add3(vbar + 3, vbar + 3, t);
  }
}

// r = crossForce(vel, f): accumulate velbar, fbar
SIM_FN void simu_adj_crossForce(sim_real* velbar, sim_real* fbar, const sim_real vel[6], const sim_real f[6],
                                const sim_real rbar[6]) {
  sim_real t[3];
  simu_cross(t, f, rbar);            // w-bar += tau x r1
  simu_add3(velbar, velbar, t);
  simu_cross(t, f + 3, rbar + 3);    // w-bar += f x r2
  simu_add3(velbar, velbar, t);
  simu_cross(t, f + 3, rbar);        // v-bar += f x r1
  simu_add3(velbar + 3, velbar + 3, t);
  simu_cross(t, rbar, vel);          // tau-bar += r1 x w
  simu_add3(fbar, fbar, t);
  simu_cross(t, rbar, vel + 3);      // f-bar += r1 x v
  simu_add3(fbar + 3, fbar + 3, t);
  simu_cross(t, rbar + 3, vel);      // f-bar += r2 x w
  simu_add3(fbar + 3, fbar + 3, t);
}

// ten_velocity = ten_J qvel, actuator_velocity = moment qvel -> adj_dv
SIM_FN_STAGE void sim_adj_tendon_actuator_velocity(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (m->ntendon) {
    if (lane == 0)
      for (int t = 0; t < m->ntendon; t++) {
        int adr = m->tendon_adr[t], num = m->tendon_num[t];
        for (int k = 0; k < num; k++)
          d->adj_dv[m->wrap_dofadr[adr + k]] += m->wrap_prm[adr + k] * d->adj_ten_velocity[t];
      }
    SIM_SYNC();
  }
  // the actuators' terms after the tendons', per dof across lanes from its moment entries (in actuator order)
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane)
    for (int e = m->dof_momadr[i]; e < m->dof_momadr[i] + m->dof_momnum[i]; e++)
      d->adj_dv[i] += m->moment_val[m->dof_moment[2 * e]] * d->adj_actuator_velocity[m->dof_moment[2 * e + 1]];
  SIM_SYNC();
}

// cvel seen by each dof's cdof_dot (recomputed per body, as sim_body_comVel)
SIM_FN void sim_adj_cvelpre_body(const SimModel* m, SimWorld* d, int i) {
  sim_real cvel[6];
  simu_copy(cvel, d->cvel + 6 * m->body_parentid[i], 6);
  int bda = m->body_dofadr[i];
  for (int j = 0; j < m->body_dofnum[i]; j++) {
    int dof = bda + j;
    int jtype = m->jnt_type[m->dof_jntid[dof]];
    int n = jtype == SIM_JNT_BALL ? 3 : 1;
    if (jtype == SIM_JNT_FREE) {
      for (int k = 0; k < 3; k++) simu_copy(d->adj_cvelpre + 6 * (dof + k), cvel, 6);
      for (int k = 0; k < 3; k++)
        for (int e = 0; e < 6; e++) cvel[e] += d->cdof[6 * (dof + k) + e] * d->qvel[dof + k];
      j += 3;
      dof += 3;
      n = 3;
    }
    for (int k = 0; k < n; k++) simu_copy(d->adj_cvelpre + 6 * (dof + k), cvel, 6);
    for (int k = 0; k < n; k++)
      for (int e = 0; e < 6; e++) cvel[e] += d->cdof[6 * (dof + k) + e] * d->qvel[dof + k];
    j += n - 1;
  }
}

// component e of simu_cross(a, b) (the same expression)
SIM_FN sim_real simu_cross_e(const sim_real a[3], const sim_real b[3], int e) {
  return e == 0 ? a[1] * b[2] - a[2] * b[1] : (e == 1 ? a[2] * b[0] - a[0] * b[2] : a[0] * b[1] - a[1] * b[0]);
}

// component e of simu_adj_crossMotion's velbar update: velbar_e plus its terms, in that function's order
SIM_FN sim_real simu_adj_crossMotion_vel_e(sim_real velbar_e, const sim_real v[6], const sim_real rbar[6], int e) {
  if (e < 3) return (velbar_e + simu_cross_e(v, rbar, e)) + simu_cross_e(v + 3, rbar + 3, e);
  return velbar_e + simu_cross_e(v, rbar + 3, e - 3);
}

// whether dof is one of a free joint's 3 translations (no crossMotion term: its cdof is constant)
SIM_FN int sim_dof_free_trn(const SimModel* m, int dof) {
  int jnt = m->dof_jntid[dof];
  return m->jnt_type[jnt] == SIM_JNT_FREE && dof - m->jnt_dofadr[jnt] < 3;
}

// comVel VJP: adj_cvel, adj_cdof_dot -> adj_cdof, adj_dv (accumulated). adj_cvel is consumed.
SIM_FN_STAGE void sim_adj_comVel(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* cbar_dof = d->adj_buf6;  // (nv, 6) the body's cvel cotangent each dof's terms see
  for (int i = 1 + lane; i < m->nbody; i += nlane) sim_adj_cvelpre_body(m, d, i);  // reads the forward's cvel only
  SIM_SYNC();
  // deepest level first; the body's cvel cotangent flows back through its dofs (last first) to the parent.
  // A level's bodies and their 6 components across lanes: a component's chain reads only that component
  // (the crossMotion terms into it come from cdof and cdof_dot's cotangent); the terms that need all six
  // (the dot into adj_dv, the crossMotion terms into adj_cdof) follow per dof from the saved cotangents.
  for (int l = m->nlevel - 1; l >= 1; l--) {
    int adr = m->level_adr[l], num = m->level_num[l];
    SIM_NO_UNROLL
    for (int t = lane; t < 6 * num; t += nlane) {
      int i = m->level_body[adr + t / 6], e = t % 6;
      sim_real c = d->adj_cvel[6 * i + e];
      int cadr = m->body_childadr[i];
      for (int ch = 0; ch < m->body_childnum[i]; ch++) c += d->adj_cvel[6 * m->body_child[cadr + ch] + e];
      int bda = m->body_dofadr[i];
      for (int dof = bda + m->body_dofnum[i] - 1; dof >= bda; dof--) {
        // cvel += cdof qvel (the cvel before it is the one seen by the dof's cdof_dot, except free
        // translations whose successor is the rotation's cvelpre; both equal the running value here)
        cbar_dof[6 * dof + e] = c;
        d->adj_cdof[6 * dof + e] += c * d->qvel[dof];
        int jnt = m->dof_jntid[dof], jtype = m->jnt_type[jnt];
        int is_free_trn = sim_dof_free_trn(m, dof);
        // the cdof_dot of a ball's (or free rotation's) 3 dofs all see the cvel before the 3 are added
        int first = m->jnt_dofadr[jnt] + (jtype == SIM_JNT_FREE ? 3 : 0);
        if (jtype == SIM_JNT_BALL || (jtype == SIM_JNT_FREE && !is_free_trn)) {
          if (dof == first)
            for (int q = 0; q < 3; q++)
              c = simu_adj_crossMotion_vel_e(c, d->cdof + 6 * (first + q), d->adj_cdof_dot + 6 * (first + q), e);
        } else if (!is_free_trn) {
          c = simu_adj_crossMotion_vel_e(c, d->cdof + 6 * dof, d->adj_cdof_dot + 6 * dof, e);
        }
      }
      // the body's cotangent of its parent's cvel, for the parent to gather
      d->adj_cvel[6 * i + e] = c;
    }
    SIM_SYNC();
  }
  SIM_NO_UNROLL
  for (int dof = lane; dof < m->nv; dof += nlane) {
    const sim_real* cdof = d->cdof + 6 * dof;
    d->adj_dv[dof] += simu_dot(cdof, cbar_dof + 6 * dof, 6);
    if (!sim_dof_free_trn(m, dof))
      simu_adj_crossMotion(0, d->adj_cdof + 6 * dof, d->adj_cvelpre + 6 * dof, cdof, d->adj_cdof_dot + 6 * dof);
  }
  SIM_SYNC();
}

// rne VJP (qfrc_bias cotangent bbar, (nv)): -> adj_cdof, adj_cdof_dot, adj_cinert, adj_cvel, adj_dv.
// Needs the forward's scratch_body6 (cacc, accumulated cfrc) intact.
SIM_FN_STAGE void sim_adj_rne(const SimModel* m, SimWorld* d, const sim_real* bbar, int lane, int nlane) {
  const sim_real* cacc = d->scratch_body6;
  const sim_real* cfrc = d->scratch_body6 + 6 * m->nbody;
  sim_real* caccbar = d->adj_cacc;
  sim_real* cfrcbar = d->adj_cfrc;
  SIM_NO_UNROLL
  for (int k = lane; k < 6 * m->nbody; k += nlane) caccbar[k] = cfrcbar[k] = 0;
  SIM_SYNC();
  for (int b = 1 + lane; b < m->nbody; b += nlane) {  // per body: its dofs write its cfrc cotangent
    for (int i = m->body_dofadr[b]; i < m->body_dofadr[b] + m->body_dofnum[b]; i++) {
      for (int e = 0; e < 6; e++) {
        cfrcbar[6 * b + e] += bbar[i] * d->cdof[6 * i + e];
        d->adj_cdof[6 * i + e] += bbar[i] * cfrc[6 * b + e];
      }
    }
  }
  SIM_SYNC();
  // cfrc was summed into parents (world excluded): push the cotangent down, parents first
  for (int l = 2; l < m->nlevel; l++) {  // a level's bodies and their 6 components across lanes
    int adr = m->level_adr[l], num = m->level_num[l];
    SIM_NO_UNROLL
    for (int k = lane; k < 6 * num; k += nlane) {
      int i = m->level_body[adr + k / 6], e = k % 6;
      cfrcbar[6 * i + e] += cfrcbar[6 * m->body_parentid[i] + e];
    }
    SIM_SYNC();
  }
  // cfrc_b = I cacc_b + cvel x* (I cvel)
  for (int i = 1 + lane; i < m->nbody; i += nlane) {
    const sim_real* I = d->cinert + 10 * i;
    const sim_real* cvel = d->cvel + 6 * i;
    const sim_real* fb = cfrcbar + 6 * i;
    sim_real t[6], tbar[6] = {0, 0, 0, 0, 0, 0}, u[6];
    simu_adj_mulInertVec(d->adj_cinert + 10 * i, fb, cacc + 6 * i);
    simu_mulInertVec(u, I, fb);
    for (int e = 0; e < 6; e++) caccbar[6 * i + e] += u[e];
    simu_mulInertVec(t, I, cvel);
    simu_adj_crossForce(d->adj_cvel + 6 * i, tbar, cvel, t, fb);
    simu_mulInertVec(u, I, tbar);
    for (int e = 0; e < 6; e++) d->adj_cvel[6 * i + e] += u[e];
    simu_adj_mulInertVec(d->adj_cinert + 10 * i, tbar, cvel);
  }
  SIM_SYNC();
  // cacc_b = cacc_parent + cdof_dot qvel: deepest first, into the parent (world cacc is constant). A body's
  // cotangent is final once its children's are gathered, so the dofs' terms follow in one pass over all dofs
  // (each entry gets its one term: the same bits as a pass per level)
  for (int l = m->nlevel - 1; l >= 1; l--) {
    sim_gather_level(m, caccbar, 6, l, 0, lane, nlane);
    SIM_SYNC();
  }
  SIM_NO_UNROLL
  for (int k = lane; k < 6 * m->nv; k += nlane) {
    int j = k / 6;
    d->adj_cdof_dot[k] += caccbar[6 * m->dof_bodyid[j] + k % 6] * d->qvel[j];
  }
  SIM_NO_UNROLL
  for (int j = lane; j < m->nv; j += nlane)
    d->adj_dv[j] += simu_dot(d->cdof_dot + 6 * j, caccbar + 6 * m->dof_bodyid[j], 6);
  SIM_SYNC();
}

// passive VJP (qfrc_passive cotangent fbar, (nv)): -> adj_dq, adj_dv, adj_ten_length, adj_ten_velocity
SIM_FN_STAGE void sim_adj_passive(const SimModel* m, SimWorld* d, const sim_real* fbar, int lane, int nlane) {
  int enbl_spring = !(m->disableflags & SIM_DSBL_SPRING);
  int enbl_damper = !(m->disableflags & SIM_DSBL_DAMPER);
  if (!enbl_spring && !enbl_damper) return;
  if (enbl_spring) {
    SIM_NO_UNROLL
    for (int j = lane; j < m->njnt; j += nlane) {
      sim_real stiffness = m->jnt_stiffness[j];
      const sim_real* spoly = m->jnt_stiffnesspoly + SIM_NPOLY * j;
      if (stiffness == 0 && simu_isZero(spoly, SIM_NPOLY)) continue;
      int padr = m->jnt_qposadr[j], dadr = m->jnt_dofadr[j];
      int type = m->jnt_type[j];
      if (type == SIM_JNT_FREE || type == SIM_JNT_BALL) {
        for (int part = type == SIM_JNT_FREE ? 0 : 1; part < 2; part++) {
          sim_real dif[3];
          if (part == 0) {
            simu_sub3(dif, d->qpos + padr, m->qpos_spring + padr);
          } else {
            sim_real quat[4];
            for (int e = 0; e < 4; e++) quat[e] = d->qpos[padr + e];
            simu_normalize4(quat);
            simu_subQuat(dif, quat, m->qpos_spring + padr);
          }
          // f = -k(r) dif, k(r) = k0 + p1 r + p2 r^2
          sim_real r = simu_norm3(dif);
          sim_real k = simu_polyForce(stiffness, spoly, r, 0);
          sim_real dk = 0, rp = 1;
          for (int p = 0; p < SIM_NPOLY; p++) {
            dk += (p + 1) * spoly[p] * rp;
            rp *= r;
          }
          const sim_real* fb = fbar + dadr;
          sim_real difbar[3], s = r > 0 ? dk * simu_dot3(dif, fb) / r : 0;
          for (int e = 0; e < 3; e++) difbar[e] = -k * fb[e] - s * dif[e];
          if (part == 0) {
            for (int e = 0; e < 3; e++) d->adj_dq[dadr + e] += difbar[e];
          } else {  // dif = log(qs^-1 q): d dif / d tangent = Jr(dif)^-1
            sim_real g[3];
            simu_adj_JrInvT(g, dif, difbar);
            for (int e = 0; e < 3; e++) d->adj_dq[dadr + e] += g[e];
          }
          dadr += 3;
          padr += 3;
        }
      } else {
        sim_real x = d->qpos[padr] - m->qpos_spring[padr];
        d->adj_dq[dadr] -= fbar[dadr] * simu_xPolyForceDeriv(stiffness, spoly, x, 0);
      }
    }
  }
  if (enbl_damper) {
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane) {
      sim_real damping = m->dof_damping[i];
      const sim_real* poly = m->dof_dampingpoly + SIM_NPOLY * i;
      if (damping != 0 || !simu_isZero(poly, SIM_NPOLY))
        d->adj_dv[i] -= fbar[i] * simu_xPolyForceDeriv(damping, poly, d->qvel[i], 1);
    }
  }
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int t = lane; t < m->ntendon; t += nlane) {
    sim_real stiffness = enbl_spring ? m->tendon_stiffness[t] : 0;
    const sim_real* spoly = m->tendon_stiffnesspoly + SIM_NPOLY * t;
    sim_real damping = enbl_damper ? m->tendon_damping[t] : 0;
    const sim_real* dpoly = m->tendon_dampingpoly + SIM_NPOLY * t;
    int dpoly_on = enbl_damper && !simu_isZero(dpoly, SIM_NPOLY);
    int spoly_on = enbl_spring && !simu_isZero(spoly, SIM_NPOLY);
    if (stiffness == 0 && !spoly_on && damping == 0 && !dpoly_on) continue;
    sim_real zero[SIM_NPOLY] = {0};
    int adr = m->tendon_adr[t], num = m->tendon_num[t];
    sim_real gbar = 0;  // ten_J fbar
    for (int k = 0; k < num; k++) gbar += m->wrap_prm[adr + k] * fbar[m->wrap_dofadr[adr + k]];
    if (enbl_spring) {
      sim_real length = d->ten_length[t];
      sim_real lower = m->tendon_lengthspring[2 * t], upper = m->tendon_lengthspring[2 * t + 1];
      int in = !(length > upper) && !(length < lower);
      sim_real x = (length > upper) ? length - upper : (length < lower) ? length - lower : 0;
      if (!in) d->adj_ten_length[t] -= gbar * simu_xPolyForceDeriv(stiffness, spoly_on ? spoly : zero, x, 0);
    }
    if (enbl_damper)
      d->adj_ten_velocity[t] -= gbar * simu_xPolyForceDeriv(damping, dpoly_on ? dpoly : zero, d->ten_velocity[t], 1);
  }
  SIM_SYNC();
}
