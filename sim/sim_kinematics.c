// sim_kinematics.c: position stage of the smooth dynamics (MuJoCo's mj_kinematics, mj_comPos, mj_tendon,
// mj_transmission for joint and fixed-tendon transmissions).
//
// Per-world SIM_FN functions, compiled for the CPU engines and, through sim/cuda/sim_cuda.cu, as device code.
// Tree passes walk the body levels (all bodies of one depth are independent), so the lanes of a warp can
// share one world; accumulations into parents are gathers over each parent's children in reverse id order,
// which reproduces MuJoCo's summation order and needs no atomics.
#include "sim_model.h"
#include "sim_math.h"
#include "sim_math_geo.h"

// mjtSameFrame
enum { SIM_SAMEFRAME_NONE = 0, SIM_SAMEFRAME_BODY, SIM_SAMEFRAME_INERTIA, SIM_SAMEFRAME_BODYROT,
       SIM_SAMEFRAME_INERTIAROT };

// forward kinematics of one body from its parent (mj_kinematics1), in sim_geo (sim_math_geo.h): the parent
// frame and the model offsets are read in double; every frame is stored in double and rounded to sim_real
SIM_FN void sim_body_kinematics(const SimModel* m, SimWorld* d, int i) {
  const sim_real* qpos = d->qpos;
  sim_geo xpos[3], xquat[4], xmat[9];
  int jntadr = m->body_jntadr[i];
  int jntnum = m->body_jntnum[i];

  if (jntnum == 1 && m->jnt_type[jntadr] == SIM_JNT_FREE) {
    int qadr = m->jnt_qposadr[jntadr];
    for (int k = 0; k < 3; k++) xpos[k] = qpos[qadr + k];
    for (int k = 0; k < 4; k++) xquat[k] = qpos[qadr + 3 + k];
    simg_normalize4(xquat);
    simu_copy3(d->xanchor + 3 * jntadr, qpos + qadr);
    simu_copy3(d->xaxis + 3 * jntadr, m->jnt_axis + 3 * jntadr);
  } else {
    int pid = m->body_parentid[i];
    const sim_geo* bodypos = SIM_GEO(m, body_pos) + 3 * i;
    const sim_geo* bodyquat = SIM_GEO(m, body_quat) + 4 * i;
    if (pid) {
      simg_mulMatVec3(xpos, SIM_GEO(d, xmat) + 9 * pid, bodypos);
      simg_add3(xpos, xpos, SIM_GEO(d, xpos) + 3 * pid);
      simg_mulQuat(xquat, SIM_GEO(d, xquat) + 4 * pid, bodyquat);
    } else {
      simg_copy3(xpos, bodypos);
      for (int k = 0; k < 4; k++) xquat[k] = bodyquat[k];
    }

    for (int j = 0; j < jntnum; j++) {
      int jid = jntadr + j;
      int qadr = m->jnt_qposadr[jid];
      int jtype = m->jnt_type[jid];
      const sim_geo* jpos = SIM_GEO(m, jnt_pos) + 3 * jid;
      const sim_geo* jaxis = SIM_GEO(m, jnt_axis) + 3 * jid;
      sim_geo xanchor[3], xaxis[3];
      simg_rotVecQuat(xaxis, jaxis, xquat);
      simg_rotVecQuat(xanchor, jpos, xquat);
      simg_add3(xanchor, xanchor, xpos);

      if (jtype == SIM_JNT_SLIDE) {
        simg_addscl3(xpos, xpos, xaxis, (sim_geo)qpos[qadr] - SIM_GEO(m, qpos0)[qadr]);
      } else {  // ball or hinge
        sim_geo qloc[4], vec[3];
        if (jtype == SIM_JNT_BALL) {
          for (int k = 0; k < 4; k++) qloc[k] = qpos[qadr + k];
          simg_normalize4(qloc);
        } else {
          simg_axisAngle2Quat(qloc, jaxis, (sim_geo)qpos[qadr] - SIM_GEO(m, qpos0)[qadr]);
        }
        simg_mulQuat(xquat, xquat, qloc);
        simg_rotVecQuat(vec, jpos, xquat);
        simg_sub3(xpos, xanchor, vec);
      }
      for (int k = 0; k < 3; k++) {
        d->xanchor[3 * jid + k] = (sim_real)xanchor[k];
        d->xaxis[3 * jid + k] = (sim_real)xaxis[k];
      }
    }
  }

  simg_normalize4(xquat);
  simg_quat2Mat(xmat, xquat);
  simg_store(d->xquat + 4 * i, SIM_GEO(d, xquat) + 4 * i, xquat, 4);
  simg_store(d->xpos + 3 * i, SIM_GEO(d, xpos) + 3 * i, xpos, 3);
  simg_store(d->xmat + 9 * i, SIM_GEO(d, xmat) + 9 * i, xmat, 9);
}

// mj_local2Global with the sameframe shortcuts, from the body's (and its inertial) double frames into the
// frame (fpos, fmat) stored in double (gpos, gmat) and rounded
SIM_FN void sim_local2global(const SimWorld* d, sim_real* fpos, sim_real* fmat, sim_geo* gpos, sim_geo* gmat,
                             const sim_geo* pos, const sim_geo* quat, int body, int sameframe) {
  sim_geo xpos[3], xmat[9];
  switch (sameframe) {
    case SIM_SAMEFRAME_BODY:
      simg_copy3(xpos, SIM_GEO(d, xpos) + 3 * body);
      break;
    case SIM_SAMEFRAME_INERTIA:
      simg_copy3(xpos, SIM_GEO(d, xipos) + 3 * body);
      break;
    default:
      simg_mulMatVec3(xpos, SIM_GEO(d, xmat) + 9 * body, pos);
      simg_add3(xpos, xpos, SIM_GEO(d, xpos) + 3 * body);
  }
  switch (sameframe) {
    case SIM_SAMEFRAME_NONE: {
      sim_geo tmp[4];
      simg_mulQuat(tmp, SIM_GEO(d, xquat) + 4 * body, quat);
      simg_quat2Mat(xmat, tmp);
      break;
    }
    case SIM_SAMEFRAME_BODY:
    case SIM_SAMEFRAME_BODYROT:
      for (int k = 0; k < 9; k++) xmat[k] = SIM_GEO(d, xmat)[9 * body + k];
      break;
    default:
      for (int k = 0; k < 9; k++) xmat[k] = SIM_GEO(d, ximat)[9 * body + k];
  }
  simg_store(fpos, gpos, xpos, 3);
  simg_store(fmat, gmat, xmat, 9);
}

// x[b] += x[child] for the bodies b of level l, children in increasing (desc = 0) or decreasing id; width values
// per body, a level's bodies and their components across lanes (a level holds a few bodies). No sync.
SIM_FN void sim_gather_level(const SimModel* m, sim_real* x, int width, int l, int desc, int lane, int nlane) {
  int adr = m->level_adr[l], num = m->level_num[l];
  SIM_NO_UNROLL
  for (int k = lane; k < num * width; k += nlane) {
    int b = m->level_body[adr + k / width], e = k % width, cadr = m->body_childadr[b], nc = m->body_childnum[b];
    for (int c = 0; c < nc; c++) x[width * b + e] += x[width * m->body_child[cadr + (desc ? nc - 1 - c : c)] + e];
  }
}

// x[parent] += x[child] over the tree, deepest level first, children in decreasing id (MuJoCo's summation
// order), for parents at levels >= minlevel (0: the world receives too); width values per body
SIM_FN void sim_gather_children(const SimModel* m, sim_real* x, int width, int minlevel, int lane, int nlane) {
  for (int l = m->nlevel - 2; l >= minlevel; l--) {
    sim_gather_level(m, x, width, l, 1, lane, nlane);
    SIM_SYNC();
  }
}

// Whether world d's COM offset of body i differs from the model's (per-world overrides). The compiler's
// sameframe shortcuts assume the compiled offset: a body whose frame was its inertial frame (BODY) then gets
// its inertial position computed (BODYROT), and a geom that sat at the compiled inertial frame (INERTIA) stays
// where it was on the body (INERTIAROT: from geom_pos, which holds that position): a COM override moves the
// mass, not the geometry. An override equal to the model's keeps the shortcuts (bitwise the same frames).
SIM_FN int sim_ipos_moved(const SimModel* m, const SimWorld* d, int i) {
  if (!m->prm) return 0;
  const sim_geo *a = SIM_GEO(d, prm_body_ipos) + 3 * i, *b = SIM_GEO(m, body_ipos) + 3 * i;
  return a[0] != b[0] || a[1] != b[1] || a[2] != b[2];
}

// mj_kinematics: body frames, inertial frames, geom frames
SIM_FN_STAGE void sim_kinematics(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (lane == 0) {
    const sim_geo zero[3] = {0, 0, 0}, unit[4] = {1, 0, 0, 0}, eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    simg_store(d->xpos, SIM_GEO(d, xpos), zero, 3);
    simg_store(d->xquat, SIM_GEO(d, xquat), unit, 4);
    simg_store(d->xipos, SIM_GEO(d, xipos), zero, 3);
    simg_store(d->xmat, SIM_GEO(d, xmat), eye, 9);
    simg_store(d->ximat, SIM_GEO(d, ximat), eye, 9);
  }
  for (int l = 1; l < m->nlevel; l++) {
    int adr = m->level_adr[l], num = m->level_num[l];
    SIM_NO_UNROLL
    for (int k = lane; k < num; k += nlane) sim_body_kinematics(m, d, m->level_body[adr + k]);
    SIM_SYNC();
  }
  // inertial frames from the world's COM offsets (sim_param_fields.h) where overrides are on
  const sim_geo* ipos = m->prm ? SIM_GEO(d, prm_body_ipos) : SIM_GEO(m, body_ipos);
  for (int i = 1 + lane; i < m->nbody; i += nlane) {
    int sf = m->body_sameframe[i];
    if (sf == SIM_SAMEFRAME_BODY && sim_ipos_moved(m, d, i)) sf = SIM_SAMEFRAME_BODYROT;
    sim_local2global(d, d->xipos + 3 * i, d->ximat + 9 * i, SIM_GEO(d, xipos) + 3 * i, SIM_GEO(d, ximat) + 9 * i,
                     ipos + 3 * i, SIM_GEO(m, body_iquat) + 4 * i, i, sf);
  }
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int g = lane; g < m->ngeom; g += nlane) {
    int sf = m->geom_sameframe[g];
    if (sf == SIM_SAMEFRAME_INERTIA && sim_ipos_moved(m, d, m->geom_bodyid[g])) sf = SIM_SAMEFRAME_INERTIAROT;
    sim_local2global(d, d->geom_xpos + 3 * g, d->geom_xmat + 9 * g, SIM_GEO(d, geom_xpos) + 3 * g,
                     SIM_GEO(d, geom_xmat) + 9 * g, SIM_GEO(m, geom_pos) + 3 * g, SIM_GEO(m, geom_quat) + 4 * g,
                     m->geom_bodyid[g], sf);
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
SIM_FN_STAGE void sim_comPos(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int nbody = m->nbody;
  sim_real* subtree_com = d->subtree_com;
  const sim_real* mass = sim_prm_mass(m, d);           // (nbody) the world's masses
  const sim_real* stmass = sim_prm_subtreemass(m, d);  // (nbody) and their subtree sums
  SIM_NO_UNROLL
  for (int i = lane; i < nbody; i += nlane) simu_scl3(subtree_com + 3 * i, d->xipos + 3 * i, mass[i]);
  SIM_SYNC();
  sim_gather_children(m, subtree_com, 3, 0, lane, nlane);  // children's moments, the world included
  SIM_NO_UNROLL
  for (int i = lane; i < nbody; i += nlane) {
    if (stmass[i] < SIM_MINVAL) {
      simu_copy3(subtree_com + 3 * i, d->xipos + 3 * i);
    } else {
      simu_scl3(subtree_com + 3 * i, subtree_com + 3 * i, 1 / stmass[i]);
    }
  }
  SIM_SYNC();

  if (lane == 0) simu_zero(d->cinert, 10);
  for (int i = 1 + lane; i < nbody; i += nlane) {
    sim_real offset[3];
    simu_sub3(offset, d->xipos + 3 * i, subtree_com + 3 * m->body_rootid[i]);
    simu_inertCom(d->cinert + 10 * i, m->body_inertia + 3 * i, d->ximat + 9 * i, offset, mass[i]);
  }

  SIM_NO_UNROLL
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
SIM_FN_STAGE void sim_tendon_transmission(const SimModel* m, SimWorld* d, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int t = lane; t < m->ntendon; t += nlane) {
    sim_real L = 0;
    int adr = m->tendon_adr[t], num = m->tendon_num[t];
    for (int k = 0; k < num; k++) L += m->wrap_prm[adr + k] * d->qpos[m->wrap_qposadr[adr + k]];
    d->ten_length[t] = L;
  }
  SIM_SYNC();
  SIM_NO_UNROLL
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
