// sim_kinematics.c: position stage of the smooth dynamics (MuJoCo's mj_kinematics, mj_comPos, mj_tendon,
// mj_transmission for joint and fixed-tendon transmissions).
//
// Per-world SIM_FN functions, compiled for the CPU engines and, through sim/cuda/sim_cuda.cu, as device code.
// Tree passes walk the body levels (all bodies of one depth are independent), so the lanes of a warp can
// share one world; accumulations into parents are gathers over each parent's children in reverse id order,
// which reproduces MuJoCo's summation order and needs no atomics.
#include "sim_model.h"
#include "sim_math.h"

// mjtSameFrame
enum { SIM_SAMEFRAME_NONE = 0, SIM_SAMEFRAME_BODY, SIM_SAMEFRAME_INERTIA, SIM_SAMEFRAME_BODYROT,
       SIM_SAMEFRAME_INERTIAROT };

// forward kinematics of one body from its parent (mj_kinematics1)
SIM_FN void sim_body_kinematics(const SimModel* m, SimWorld* d, int i) {
  const sim_real* qpos = d->qpos;
  sim_real xpos[3], xquat[4];
  int jntadr = m->body_jntadr[i];
  int jntnum = m->body_jntnum[i];

  if (jntnum == 1 && m->jnt_type[jntadr] == SIM_JNT_FREE) {
    int qadr = m->jnt_qposadr[jntadr];
    simu_copy3(xpos, qpos + qadr);
    for (int k = 0; k < 4; k++) xquat[k] = qpos[qadr + 3 + k];
    simu_normalize4(xquat);
    simu_copy3(d->xanchor + 3 * jntadr, xpos);
    simu_copy3(d->xaxis + 3 * jntadr, m->jnt_axis + 3 * jntadr);
  } else {
    int pid = m->body_parentid[i];
    const sim_real* bodypos = m->body_pos + 3 * i;
    const sim_real* bodyquat = m->body_quat + 4 * i;
    if (pid) {
      simu_mulMatVec3(xpos, d->xmat + 9 * pid, bodypos);
      simu_add3(xpos, xpos, d->xpos + 3 * pid);
      simu_mulQuat(xquat, d->xquat + 4 * pid, bodyquat);
    } else {
      simu_copy3(xpos, bodypos);
      for (int k = 0; k < 4; k++) xquat[k] = bodyquat[k];
    }

    for (int j = 0; j < jntnum; j++) {
      int jid = jntadr + j;
      int qadr = m->jnt_qposadr[jid];
      int jtype = m->jnt_type[jid];
      sim_real xanchor[3], xaxis[3];
      simu_rotVecQuat(xaxis, m->jnt_axis + 3 * jid, xquat);
      simu_rotVecQuat(xanchor, m->jnt_pos + 3 * jid, xquat);
      simu_add3(xanchor, xanchor, xpos);

      if (jtype == SIM_JNT_SLIDE) {
        simu_addscl3(xpos, xpos, xaxis, qpos[qadr] - m->qpos0[qadr]);
      } else {  // ball or hinge
        sim_real qloc[4], vec[3];
        if (jtype == SIM_JNT_BALL) {
          for (int k = 0; k < 4; k++) qloc[k] = qpos[qadr + k];
          simu_normalize4(qloc);
        } else {
          simu_axisAngle2Quat(qloc, m->jnt_axis + 3 * jid, qpos[qadr] - m->qpos0[qadr]);
        }
        simu_mulQuat(xquat, xquat, qloc);
        simu_rotVecQuat(vec, m->jnt_pos + 3 * jid, xquat);
        simu_sub3(xpos, xanchor, vec);
      }
      simu_copy3(d->xanchor + 3 * jid, xanchor);
      simu_copy3(d->xaxis + 3 * jid, xaxis);
    }
  }

  simu_normalize4(xquat);
  for (int k = 0; k < 4; k++) d->xquat[4 * i + k] = xquat[k];
  simu_copy3(d->xpos + 3 * i, xpos);
  simu_quat2Mat(d->xmat + 9 * i, xquat);
}

// mj_local2Global with the sameframe shortcuts
SIM_FN void sim_local2global(const SimWorld* d, sim_real* xpos, sim_real* xmat, const sim_real* pos,
                             const sim_real* quat, int body, int sameframe) {
  switch (sameframe) {
    case SIM_SAMEFRAME_BODY:
      simu_copy3(xpos, d->xpos + 3 * body);
      break;
    case SIM_SAMEFRAME_INERTIA:
      simu_copy3(xpos, d->xipos + 3 * body);
      break;
    default:
      simu_mulMatVec3(xpos, d->xmat + 9 * body, pos);
      simu_add3(xpos, xpos, d->xpos + 3 * body);
  }
  switch (sameframe) {
    case SIM_SAMEFRAME_NONE: {
      sim_real tmp[4];
      simu_mulQuat(tmp, d->xquat + 4 * body, quat);
      simu_quat2Mat(xmat, tmp);
      break;
    }
    case SIM_SAMEFRAME_BODY:
    case SIM_SAMEFRAME_BODYROT:
      simu_copy(xmat, d->xmat + 9 * body, 9);
      break;
    default:
      simu_copy(xmat, d->ximat + 9 * body, 9);
  }
}

// x[parent] += x[child] over the tree, deepest level first, children in decreasing id (MuJoCo's summation
// order), for parents at levels >= minlevel (0: the world receives too); width values per body
SIM_FN void sim_gather_children(const SimModel* m, sim_real* x, int width, int minlevel, int lane, int nlane) {
  for (int l = m->nlevel - 2; l >= minlevel; l--) {
    int adr = m->level_adr[l], num = m->level_num[l];
    for (int k = lane; k < num; k += nlane) {
      int p = m->level_body[adr + k];
      int cadr = m->body_childadr[p];
      for (int c = m->body_childnum[p] - 1; c >= 0; c--) {
        const sim_real* src = x + width * m->body_child[cadr + c];
        for (int e = 0; e < width; e++) x[width * p + e] += src[e];
      }
    }
    SIM_SYNC();
  }
}

// mj_kinematics: body frames, inertial frames, geom frames
SIM_FN void sim_kinematics(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (lane == 0) {
    simu_zero3(d->xpos);
    d->xquat[0] = 1; d->xquat[1] = 0; d->xquat[2] = 0; d->xquat[3] = 0;
    simu_zero3(d->xipos);
    for (int k = 0; k < 9; k++) d->xmat[k] = d->ximat[k] = (k % 4 == 0) ? 1 : 0;
  }
  for (int l = 1; l < m->nlevel; l++) {
    int adr = m->level_adr[l], num = m->level_num[l];
    for (int k = lane; k < num; k += nlane) sim_body_kinematics(m, d, m->level_body[adr + k]);
    SIM_SYNC();
  }
  for (int i = 1 + lane; i < m->nbody; i += nlane) {
    sim_local2global(d, d->xipos + 3 * i, d->ximat + 9 * i, m->body_ipos + 3 * i, m->body_iquat + 4 * i, i,
                     m->body_sameframe[i]);
  }
  SIM_SYNC();
  for (int g = lane; g < m->ngeom; g += nlane) {
    sim_local2global(d, d->geom_xpos + 3 * g, d->geom_xmat + 9 * g, m->geom_pos + 3 * g, m->geom_quat + 4 * g,
                     m->geom_bodyid[g], m->geom_sameframe[g]);
  }
  SIM_SYNC();
}

// mju_inertCom: inertia about the subtree com, in the global frame
SIM_FN void simu_inertCom(sim_real* res, const sim_real inert[3], const sim_real mat[9], const sim_real dif[3],
                          sim_real mass) {
  sim_real tmp[9] = {mat[0] * inert[0], mat[3] * inert[0], mat[6] * inert[0],
                     mat[1] * inert[1], mat[4] * inert[1], mat[7] * inert[1],
                     mat[2] * inert[2], mat[5] * inert[2], mat[8] * inert[2]};
  // res_rot = mat * diag(inert) * mat'
  res[0] = mat[0] * tmp[0] + mat[1] * tmp[3] + mat[2] * tmp[6];
  res[1] = mat[3] * tmp[1] + mat[4] * tmp[4] + mat[5] * tmp[7];
  res[2] = mat[6] * tmp[2] + mat[7] * tmp[5] + mat[8] * tmp[8];
  res[3] = mat[0] * tmp[1] + mat[1] * tmp[4] + mat[2] * tmp[7];
  res[4] = mat[0] * tmp[2] + mat[1] * tmp[5] + mat[2] * tmp[8];
  res[5] = mat[3] * tmp[2] + mat[4] * tmp[5] + mat[5] * tmp[8];
  // res_rot -= mass * dif_cross * dif_cross
  res[0] += mass * (dif[1] * dif[1] + dif[2] * dif[2]);
  res[1] += mass * (dif[0] * dif[0] + dif[2] * dif[2]);
  res[2] += mass * (dif[0] * dif[0] + dif[1] * dif[1]);
  res[3] -= mass * dif[0] * dif[1];
  res[4] -= mass * dif[0] * dif[2];
  res[5] -= mass * dif[1] * dif[2];
  // res_tran = mass * dif
  res[6] = mass * dif[0];
  res[7] = mass * dif[1];
  res[8] = mass * dif[2];
  res[9] = mass;
}

// mju_dofCom: 6D motion axis about the com (offset NULL: translation)
SIM_FN void simu_dofCom(sim_real res[6], const sim_real axis[3], const sim_real* offset) {
  if (offset) {
    simu_copy3(res, axis);
    simu_cross(res + 3, axis, offset);
  } else {
    simu_zero3(res);
    simu_copy3(res + 3, axis);
  }
}

// mj_comPos: subtree centers of mass, com-based inertias and motion dofs
SIM_FN void sim_comPos(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int nbody = m->nbody;
  sim_real* subtree_com = d->subtree_com;
  for (int i = lane; i < nbody; i += nlane) simu_scl3(subtree_com + 3 * i, d->xipos + 3 * i, m->body_mass[i]);
  SIM_SYNC();
  sim_gather_children(m, subtree_com, 3, 0, lane, nlane);  // children's moments, the world included
  for (int i = lane; i < nbody; i += nlane) {
    if (m->body_subtreemass[i] < SIM_MINVAL) {
      simu_copy3(subtree_com + 3 * i, d->xipos + 3 * i);
    } else {
      simu_scl3(subtree_com + 3 * i, subtree_com + 3 * i, 1 / m->body_subtreemass[i]);
    }
  }
  SIM_SYNC();

  if (lane == 0) simu_zero(d->cinert, 10);
  for (int i = 1 + lane; i < nbody; i += nlane) {
    sim_real offset[3];
    simu_sub3(offset, d->xipos + 3 * i, subtree_com + 3 * m->body_rootid[i]);
    simu_inertCom(d->cinert + 10 * i, m->body_inertia + 3 * i, d->ximat + 9 * i, offset, m->body_mass[i]);
  }

  for (int j = lane; j < m->njnt; j += nlane) {
    int i = m->jnt_bodyid[j];
    sim_real* cdof = d->cdof + 6 * m->jnt_dofadr[j];
    sim_real offset[3];
    simu_sub3(offset, subtree_com + 3 * m->body_rootid[i], d->xanchor + 3 * j);
    switch (m->jnt_type[j]) {
      case SIM_JNT_FREE:
      case SIM_JNT_BALL: {
        int skip = 0;
        if (m->jnt_type[j] == SIM_JNT_FREE) {
          simu_zero(cdof, 18);
          cdof[3] = 1; cdof[10] = 1; cdof[17] = 1;
          skip = 18;
        }
        for (int k = 0; k < 3; k++) {
          sim_real axis[3] = {d->xmat[9 * i + k], d->xmat[9 * i + k + 3], d->xmat[9 * i + k + 6]};
          simu_dofCom(cdof + skip + 6 * k, axis, offset);
        }
        break;
      }
      case SIM_JNT_SLIDE:
        simu_dofCom(cdof, d->xaxis + 3 * j, 0);
        break;
      default:
        simu_dofCom(cdof, d->xaxis + 3 * j, offset);
    }
  }
  SIM_SYNC();
}

// mj_tendon (fixed tendons only) and mj_transmission (joint and tendon transmissions): lengths.
// Fixed-tendon Jacobians and actuator moments are constants of the model (SimModel.wrap_*, moment_*).
SIM_FN void sim_tendon_transmission(const SimModel* m, SimWorld* d, int lane, int nlane) {
  for (int t = lane; t < m->ntendon; t += nlane) {
    sim_real L = 0;
    int adr = m->tendon_adr[t], num = m->tendon_num[t];
    for (int k = 0; k < num; k++) L += m->wrap_prm[adr + k] * d->qpos[m->wrap_qposadr[adr + k]];
    d->ten_length[t] = L;
  }
  SIM_SYNC();
  for (int a = lane; a < m->nu; a += nlane) {
    int id = m->actuator_trnid[a];
    if (m->actuator_trntype[a] == SIM_TRN_JOINT) {
      d->actuator_length[a] = m->actuator_gear[a] * d->qpos[m->jnt_qposadr[id]];
    } else {
      d->actuator_length[a] = m->actuator_gear[a] * d->ten_length[id];
    }
  }
  SIM_SYNC();
}
