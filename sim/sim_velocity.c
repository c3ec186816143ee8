// sim_velocity.c: velocity stage of the smooth dynamics: tendon and actuator velocities, mj_comVel,
// mj_rne (bias forces, flg_acc = 0) and mj_passive (joint and tendon springs and dampers).
#include "sim_model.h"
#include "sim_math.h"

// ten_velocity = ten_J qvel, actuator_velocity = moment qvel (both constant Jacobians)
SIM_FN_STAGE void sim_tendon_actuator_velocity(const SimModel* m, SimWorld* d, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int t = lane; t < m->ntendon; t += nlane) {
    sim_real v = 0;
    int adr = m->tendon_adr[t], num = m->tendon_num[t];
    for (int k = 0; k < num; k++) v += m->wrap_prm[adr + k] * d->qvel[m->wrap_dofadr[adr + k]];
    d->ten_velocity[t] = v;
  }
  SIM_NO_UNROLL
  for (int a = lane; a < m->nu; a += nlane) {
    sim_real v = 0;
    int adr = m->actuator_momadr[a], num = m->actuator_momnum[a];
    for (int k = 0; k < num; k++) v += m->moment_val[adr + k] * d->qvel[m->moment_dof[adr + k]];
    d->actuator_velocity[a] = v;
  }
  SIM_SYNC();
}

// cvel of one body from its parent; cdof_dot of its dofs (mj_comVel)
SIM_FN void sim_body_comVel(const SimModel* m, SimWorld* d, int i) {
  sim_real cvel[6], tmp[6];
  simu_copy(cvel, d->cvel + 6 * m->body_parentid[i], 6);
  int dofnum = m->body_dofnum[i];
  int bda = m->body_dofadr[i];
  const sim_real* cdof = d->cdof;
  const sim_real* qvel = d->qvel;
  for (int j = 0; j < dofnum; j++) {
    int jtype = m->jnt_type[m->dof_jntid[bda + j]];
    if (jtype == SIM_JNT_FREE || jtype == SIM_JNT_BALL) {
      if (jtype == SIM_JNT_FREE) {
        simu_zero(d->cdof_dot + 6 * (bda + j), 18);
        // cvel += cdof(3 translations) * qvel
        for (int e = 0; e < 6; e++) {
          tmp[e] = cdof[6 * (bda + j) + e] * qvel[bda + j] + cdof[6 * (bda + j + 1) + e] * qvel[bda + j + 1] +
                   cdof[6 * (bda + j + 2) + e] * qvel[bda + j + 2];
        }
        for (int e = 0; e < 6; e++) cvel[e] += tmp[e];
        j += 3;
      }
      for (int k = 0; k < 3; k++) simu_crossMotion(d->cdof_dot + 6 * (bda + j + k), cvel, cdof + 6 * (bda + j + k));
      for (int e = 0; e < 6; e++) {
        tmp[e] = cdof[6 * (bda + j) + e] * qvel[bda + j] + cdof[6 * (bda + j + 1) + e] * qvel[bda + j + 1] +
                 cdof[6 * (bda + j + 2) + e] * qvel[bda + j + 2];
      }
      for (int e = 0; e < 6; e++) cvel[e] += tmp[e];
      j += 2;
    } else {
      simu_crossMotion(d->cdof_dot + 6 * (bda + j), cvel, cdof + 6 * (bda + j));
      for (int e = 0; e < 6; e++) cvel[e] += cdof[6 * (bda + j) + e] * qvel[bda + j];
    }
  }
  simu_copy(d->cvel + 6 * i, cvel, 6);
}

SIM_FN_STAGE void sim_comVel(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (lane == 0) simu_zero(d->cvel, 6);
  SIM_SYNC();
  for (int l = 1; l < m->nlevel; l++) {
    int adr = m->level_adr[l], num = m->level_num[l];
    SIM_NO_UNROLL
    for (int k = lane; k < num; k += nlane) sim_body_comVel(m, d, m->level_body[adr + k]);
    SIM_SYNC();
  }
}

// recursive Newton-Euler with zero acceleration: qfrc_bias = C(q, v) (mj_rne, flg_acc = 0)
SIM_FN_STAGE void sim_rne(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_real* cacc = d->scratch_body6;                  // (nbody, 6)
  sim_real* cfrc = d->scratch_body6 + 6 * m->nbody;   // (nbody, 6)
  if (lane == 0) {
    simu_zero(cacc, 6);
    if (!(m->disableflags & SIM_DSBL_GRAVITY)) simu_scl3(cacc + 3, m->gravity, -1);
  }
  SIM_SYNC();
  // cacc down the tree, a level's bodies and their 6 components across lanes (mju_mulDofVec's sum per
  // component), then every body's cfrc at once: it reads only its own body's cacc
  for (int l = 1; l < m->nlevel; l++) {
    int adr = m->level_adr[l], num = m->level_num[l];
    SIM_NO_UNROLL
    for (int t = lane; t < 6 * num; t += nlane) {
      int i = m->level_body[adr + t / 6], e = t % 6, bda = m->body_dofadr[i];
      sim_real acc = 0;
      for (int j = bda; j < bda + m->body_dofnum[i]; j++) acc += d->cdof_dot[6 * j + e] * d->qvel[j];
      cacc[6 * i + e] = cacc[6 * m->body_parentid[i] + e] + acc;
    }
    SIM_SYNC();
  }
  for (int i = 1 + lane; i < m->nbody; i += nlane) {
    sim_real tmp[6], tmp1[6];
    simu_mulInertVec(cfrc + 6 * i, d->cinert + 10 * i, cacc + 6 * i);
    simu_mulInertVec(tmp, d->cinert + 10 * i, d->cvel + 6 * i);
    simu_crossForce(tmp1, d->cvel + 6 * i, tmp);
    for (int e = 0; e < 6; e++) cfrc[6 * i + e] += tmp1[e];
  }
  SIM_SYNC();
  sim_gather_children(m, cfrc, 6, 1, lane, nlane);  // into parents, not into the world
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    d->qfrc_bias[i] = simu_dot(d->cdof + 6 * i, cfrc + 6 * m->dof_bodyid[i], 6);
  }
  SIM_SYNC();
}

// mju_polyForce: linear + sum_i poly_i x^(i+1) (|x| when flg_odd)
SIM_FN sim_real simu_polyForce(sim_real linear, const sim_real* poly, sim_real x, int flg_odd) {
  if (flg_odd) x = sim_fabs(x);
  sim_real res = linear, xpow = 1;
  for (int i = 0; i < SIM_NPOLY; i++) {
    xpow *= x;
    res += poly[i] * xpow;
  }
  return res;
}

// mjd_xPolyForce: d(x * polyForce)/dx
SIM_FN sim_real simu_xPolyForceDeriv(sim_real linear, const sim_real* poly, sim_real x, int flg_odd) {
  if (flg_odd) x = sim_fabs(x);
  sim_real res = linear, xpow = 1;
  for (int i = 0; i < SIM_NPOLY; i++) {
    xpow *= x;
    res += (i + 2) * poly[i] * xpow;
  }
  return res;
}

SIM_FN int simu_isZero(const sim_real* x, int n) {
  for (int i = 0; i < n; i++)
    if (x[i] != 0) return 0;
  return 1;
}

// passive forces: joint springs, dof dampers, tendon spring-dampers (mj_passive / mj_springdamper)
SIM_FN_STAGE void sim_passive(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int enbl_spring = !(m->disableflags & SIM_DSBL_SPRING);
  int enbl_damper = !(m->disableflags & SIM_DSBL_DAMPER);
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) d->qfrc_spring[i] = d->qfrc_damper[i] = d->qfrc_passive[i] = 0;
  SIM_SYNC();
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
        if (type == SIM_JNT_FREE) {
          sim_real dif[3];
          simu_sub3(dif, d->qpos + padr, m->qpos_spring + padr);
          sim_real k = simu_polyForce(stiffness, spoly, simu_norm3(dif), 0);
          for (int e = 0; e < 3; e++) d->qfrc_spring[dadr + e] += dif[e] * -k;
          dadr += 3;
          padr += 3;
        }
        sim_real dif[3], quat[4];
        for (int e = 0; e < 4; e++) quat[e] = d->qpos[padr + e];
        simu_normalize4(quat);
        simu_subQuat(dif, quat, m->qpos_spring + padr);
        sim_real k = simu_polyForce(stiffness, spoly, simu_norm3(dif), 0);
        for (int e = 0; e < 3; e++) d->qfrc_spring[dadr + e] += dif[e] * -k;
      } else {
        sim_real x = d->qpos[padr] - m->qpos_spring[padr];
        d->qfrc_spring[dadr] = -x * simu_polyForce(stiffness, spoly, x, 0);
      }
    }
  }
  if (enbl_damper) {
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane) {
      sim_real damping = m->dof_damping[i];
      const sim_real* poly = m->dof_dampingpoly + SIM_NPOLY * i;
      if (damping != 0 || !simu_isZero(poly, SIM_NPOLY)) {
        sim_real v = d->qvel[i];
        d->qfrc_damper[i] = -v * simu_polyForce(damping, poly, v, 1);
      }
    }
  }
  SIM_SYNC();

  // tendons touch several dofs: serial, in tendon order (MuJoCo's summation order)
  if (lane == 0) {
    for (int t = 0; t < m->ntendon; t++) {
      sim_real stiffness = enbl_spring ? m->tendon_stiffness[t] : 0;
      const sim_real* spoly = m->tendon_stiffnesspoly + SIM_NPOLY * t;
      sim_real damping = enbl_damper ? m->tendon_damping[t] : 0;
      const sim_real* dpoly = m->tendon_dampingpoly + SIM_NPOLY * t;
      int dpoly_on = enbl_damper && !simu_isZero(dpoly, SIM_NPOLY);
      if (stiffness == 0 && (!enbl_spring || simu_isZero(spoly, SIM_NPOLY)) && damping == 0 && !dpoly_on) continue;
      sim_real zero[SIM_NPOLY] = {0};
      sim_real length = d->ten_length[t];
      sim_real lower = m->tendon_lengthspring[2 * t], upper = m->tendon_lengthspring[2 * t + 1];
      sim_real x = (length > upper) ? length - upper : (length < lower) ? length - lower : 0;
      sim_real frc_spring = enbl_spring ? -x * simu_polyForce(stiffness, spoly, x, 0) : 0;
      sim_real v = d->ten_velocity[t];
      sim_real frc_damper = enbl_damper ? -v * simu_polyForce(damping, dpoly_on ? dpoly : zero, v, 1) : 0;
      if (frc_spring != 0 || frc_damper != 0) {
        int adr = m->tendon_adr[t], num = m->tendon_num[t];
        for (int k = 0; k < num; k++) {
          int dof = m->wrap_dofadr[adr + k];
          d->qfrc_spring[dof] += m->wrap_prm[adr + k] * frc_spring;
          d->qfrc_damper[dof] += m->wrap_prm[adr + k] * frc_damper;
        }
      }
    }
  }
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) d->qfrc_passive[i] = d->qfrc_spring[i] + d->qfrc_damper[i];
  SIM_SYNC();
}
