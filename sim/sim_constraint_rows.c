// sim_constraint_rows.c: constraint rows (MuJoCo's mj_makeConstraint: mj_instantiateFriction,
// mj_instantiateLimit, mj_instantiateContact, mj_diagApprox, mj_makeImpedance) and the reference
// acceleration (mj_referenceConstraint). Included by sim_constraint.c.
//
// Two phases: the rows are enumerated (type, id, pos, margin; on lane 0, or by a warp placing each item's rows
// after a prefix count), then the lanes fill the rows independently (Jacobian, diagA, impedance, R, D, KBIP,
// vel, aref).

// one row's enumeration fields
SIM_FN void sim_row_put(SimWorld* d, int r, int type, int id, sim_real pos, sim_real margin, sim_real floss) {
  d->efc_type[r] = type;
  d->efc_id[r] = id;
  d->efc_pos[r] = pos;
  d->efc_margin[r] = margin;
  d->efc_frictionloss[r] = floss;
}

// rows a world can hold; a constraint that does not fit is dropped whole and counted
SIM_FN int sim_row_add(const SimModel* m, SimWorld* d, int size, int type, int id, sim_real pos, sim_real margin,
                       sim_real floss) {
  int n = d->nefc[0];
  if (n + size > m->nefcmax) {
    d->nefc_overflow[0] += size;
    return 0;
  }
  for (int k = 0; k < size; k++) sim_row_put(d, n + k, type, id, pos, margin, floss);
  d->nefc[0] = n + size;
  return 1;
}

// whether a fixed tendon's (constant) Jacobian has a nonzero entry (MuJoCo skips empty dense rows)
SIM_FN int sim_tendon_nonempty(const SimModel* m, int t) {
  for (int k = 0; k < m->tendon_num[t]; k++)
    if (m->wrap_prm[m->tendon_adr[t] + k] != 0) return 1;
  return 0;
}

// ball joint: unit rotation axis and angle of the joint quaternion (mju_quat2Vel of the normalized quat)
SIM_FN sim_real sim_ball_axis_angle(const SimModel* m, const SimWorld* d, int j, sim_real axis[3]) {
  int adr = m->jnt_qposadr[j];
  sim_real q[4] = {d->qpos[adr], d->qpos[adr + 1], d->qpos[adr + 2], d->qpos[adr + 3]};
  simu_normalize4(q);
  simu_quat2Vel(axis, q, 1);
  return simu_normalize3(axis);
}

// joint j's limit rows (0, 1 or 2: a hinge's or slide's lower then upper side; a ball's cone), their distances
// into pos; the margin is jnt_margin
SIM_FN int sim_limit_rows(const SimModel* m, const SimWorld* d, int j, sim_real pos[2]) {
  if (!m->jnt_limited[j]) return 0;
  sim_real margin = m->jnt_margin[j];
  int tp = m->jnt_type[j], n = 0;
  if (tp == SIM_JNT_SLIDE || tp == SIM_JNT_HINGE) {
    sim_real value = d->qpos[m->jnt_qposadr[j]];
    for (int side = -1; side <= 1; side += 2) {
      // the row's distance from the double range (sim_math_geo.h): a float32 range is off by up to
      // 2^-24 |range| (4e-8 rad at 90 deg), which a resting limit's stiffness turns into ~1e-4 rad/s^2;
      // whether the row exists stays the float test (sim_limit_sign repeats it)
      sim_real dist = (sim_real)side * (m->jnt_range[2 * j + (side + 1) / 2] - value);
      sim_real gdist = (sim_real)((sim_geo)side * (SIM_GEO(m, jnt_range)[2 * j + (side + 1) / 2] - value));
      if (dist < margin) pos[n++] = gdist;
    }
  } else if (tp == SIM_JNT_BALL) {
    sim_real axis[3];
    sim_real value = sim_ball_axis_angle(m, d, j, axis);
    sim_real dist = SIM_MAX(m->jnt_range[2 * j], m->jnt_range[2 * j + 1]) - value;
    if (dist < margin) pos[n++] = dist;
  }
  return n;
}

// lane 0: enumerate rows in MuJoCo's order
SIM_FN void sim_rows_enumerate(const SimModel* m, SimWorld* d) {
  int dis = m->disableflags;
  d->nefc[0] = 0;
  d->nf[0] = 0;
  if (dis & SIM_DSBL_CONSTRAINT) return;

  // friction loss: dofs, then tendons
  if (!(dis & SIM_DSBL_FRICTIONLOSS)) {
    for (int i = 0; i < m->nv; i++)
      if (m->dof_frictionloss[i] != 0) sim_row_add(m, d, 1, SIM_CNSTR_FRICTION_DOF, i, 0, 0, m->dof_frictionloss[i]);
    for (int t = 0; t < m->ntendon; t++)
      if (m->tendon_frictionloss[t] > 0 && sim_tendon_nonempty(m, t))
        sim_row_add(m, d, 1, SIM_CNSTR_FRICTION_TENDON, t, 0, 0, m->tendon_frictionloss[t]);
  }
  d->nf[0] = d->nefc[0];

  // limits: joints (hinge/slide lower then upper; ball cone), then tendons
  if (!(dis & SIM_DSBL_LIMIT)) {
    for (int j = 0; j < m->njnt; j++) {
      sim_real pos[2];
      int n = sim_limit_rows(m, d, j, pos);
      for (int k = 0; k < n; k++) sim_row_add(m, d, 1, SIM_CNSTR_LIMIT_JOINT, j, pos[k], m->jnt_margin[j], 0);
    }
    for (int t = 0; t < m->ntendon; t++) {
      if (!m->tendon_limited[t] || !sim_tendon_nonempty(m, t)) continue;
      sim_real value = d->ten_length[t], margin = m->tendon_margin[t];
      for (int side = -1; side <= 1; side += 2) {
        sim_real dist = (sim_real)side * (m->tendon_range[2 * t + (side + 1) / 2] - value);
        if (dist < margin) sim_row_add(m, d, 1, SIM_CNSTR_LIMIT_TENDON, t, dist, margin, 0);
      }
    }
  }

  // contacts in contact order (dense Jacobian: every included contact has rows, as in MuJoCo's dense mode)
  if (!(dis & SIM_DSBL_CONTACT) && m->nv > 0) {
    int ncon = SIM_MIN(d->ncon[0], m->nconmax);
    for (int c = 0; c < ncon; c++) {
      if (d->contact_exclude[c]) continue;
      int dim = d->contact_dim[c];
      sim_real dist = d->contact_dist[c], im = d->contact_includemargin[c];
      if (dim == 1) sim_row_add(m, d, 1, SIM_CNSTR_CONTACT_FRICTIONLESS, c, dist, im, 0);
      else sim_row_add(m, d, 2 * (dim - 1), SIM_CNSTR_CONTACT_PYRAMIDAL, c, dist, im, 0);
    }
  }
}

// a warp's chunk of items, each with cnt < 16 rows: where this lane's rows start (the rows so far, *n, plus the
// earlier lanes' counts: ballots over the counts' bits); *n advances by the chunk's total on every lane
SIM_FN int sim_rows_place(int* n, int cnt, int lane) {
  unsigned below = (1u << lane) - 1;
  int off = 0, tot = 0;
  for (int b = 0; b < 4; b++) {
    unsigned bits = sim_ballot((cnt >> b) & 1, lane);
    off += sim_popc(bits & below) << b;
    tot += sim_popc(bits) << b;
  }
  int at = *n + off;
  *n += tot;
  return at;
}

// sim_rows_enumerate by a warp (all 32 lanes): each lane takes one dof, joint or contact of a chunk of 32 and
// places its rows after the earlier items', so the rows, their order and their values are the serial loop's.
// Returns 0 where the serial loop must decide (tendons, or rows beyond nefcmax: which constraints it drops
// depends on the order), nefc and nf not set; it rewrites any rows written here.
SIM_FN int sim_rows_enumerate_warp(const SimModel* m, SimWorld* d, int lane) {
  int dis = m->disableflags, n = 0;
  if (m->ntendon || (dis & SIM_DSBL_CONSTRAINT)) return 0;
  if (!(dis & SIM_DSBL_FRICTIONLOSS))
    for (int i0 = 0; i0 < m->nv; i0 += 32) {
      int i = i0 + lane, has = i < m->nv && m->dof_frictionloss[i] != 0;
      int at = sim_rows_place(&n, has, lane);
      if (has && at < m->nefcmax) sim_row_put(d, at, SIM_CNSTR_FRICTION_DOF, i, 0, 0, m->dof_frictionloss[i]);
    }
  int nf = n;
  if (!(dis & SIM_DSBL_LIMIT))
    for (int j0 = 0; j0 < m->njnt; j0 += 32) {
      int j = j0 + lane;
      sim_real pos[2];
      int cnt = j < m->njnt ? sim_limit_rows(m, d, j, pos) : 0;
      int at = sim_rows_place(&n, cnt, lane);
      for (int k = 0; k < cnt && at + k < m->nefcmax; k++)
        sim_row_put(d, at + k, SIM_CNSTR_LIMIT_JOINT, j, pos[k], m->jnt_margin[j], 0);
    }
  if (!(dis & SIM_DSBL_CONTACT) && m->nv > 0) {
    int ncon = SIM_MIN(d->ncon[0], m->nconmax);
    for (int c0 = 0; c0 < ncon; c0 += 32) {
      int c = c0 + lane, cnt = 0;
      if (c < ncon && !d->contact_exclude[c]) cnt = d->contact_dim[c] == 1 ? 1 : 2 * (d->contact_dim[c] - 1);
      int at = sim_rows_place(&n, cnt, lane);
      if (cnt && at + cnt <= m->nefcmax) {
        int type = cnt == 1 ? SIM_CNSTR_CONTACT_FRICTIONLESS : SIM_CNSTR_CONTACT_PYRAMIDAL;
        for (int k = 0; k < cnt; k++)
          sim_row_put(d, at + k, type, c, d->contact_dist[c], d->contact_includemargin[c], 0);
      }
    }
  }
  if (n > m->nefcmax) return 0;
  if (lane == 0) {
    d->nefc[0] = n;
    d->nf[0] = nf;
  }
  return 1;
}

// jacp column of dof i for a point with offset = pos - subtree_com[root] (mj_jac)
SIM_FN void sim_jacp_col(const SimWorld* d, int i, const sim_real offset[3], sim_real out[3]) {
  const sim_real* cdof = d->cdof + 6 * i;
  sim_real tmp[3];
  simu_cross(tmp, cdof, offset);
  out[0] = cdof[3] + tmp[0];
  out[1] = cdof[4] + tmp[1];
  out[2] = cdof[5] + tmp[2];
}

// last dof on the chain of a body (after welding), -1 if none
SIM_FN int sim_body_lastdof(const SimModel* m, int body) {
  int b = m->body_weldid[body];
  if (m->body_dofnum[b] == 0) return -1;
  return m->body_dofadr[b] + m->body_dofnum[b] - 1;
}

// contact row: row = Jn + s*Jt where Jn, Jt are rows 0 and k of frame*(jacp(b2) - jacp(b1)); s = 0 for the
// frictionless row. The two dof chains are merged (both descend in dof index), as mj_jacDifPair's dense
// difference: common dofs give jac2 - jac1, the others +jac2 or 0 - jac1. The row is zero on entry (sim_make_rows).
SIM_FN void sim_contact_row(const SimModel* m, const SimWorld* d, int c, int k, sim_real s, sim_real* row) {
  const sim_real* pos = d->contact_pos + 3 * c;
  const sim_real* frame = d->contact_frame + 9 * c;
  int b1 = m->geom_bodyid[d->contact_geom[2 * c]], b2 = m->geom_bodyid[d->contact_geom[2 * c + 1]];
  sim_real off1[3], off2[3];
  simu_sub3(off1, pos, d->subtree_com + 3 * m->body_rootid[b1]);
  simu_sub3(off2, pos, d->subtree_com + 3 * m->body_rootid[b2]);
  int i1 = sim_body_lastdof(m, b1), i2 = sim_body_lastdof(m, b2);
  while (i1 >= 0 || i2 >= 0) {
    sim_real jd[3], p1[3], p2[3];
    int i;
    if (i1 == i2) {
      i = i1;
      sim_jacp_col(d, i, off1, p1);
      sim_jacp_col(d, i, off2, p2);
      simu_sub3(jd, p2, p1);
      i1 = m->dof_parentid[i1];
      i2 = m->dof_parentid[i2];
    } else if (i1 > i2) {
      i = i1;
      sim_jacp_col(d, i, off1, p1);
      jd[0] = -p1[0]; jd[1] = -p1[1]; jd[2] = -p1[2];
      i1 = m->dof_parentid[i1];
    } else {
      i = i2;
      sim_jacp_col(d, i, off2, jd);
      i2 = m->dof_parentid[i2];
    }
    sim_real jn = frame[0] * jd[0] + frame[1] * jd[1] + frame[2] * jd[2];
    if (s != 0) {
      sim_real jt = frame[3 * k] * jd[0] + frame[3 * k + 1] * jd[1] + frame[3 * k + 2] * jd[2];
      row[i] = jn + s * jt;
    } else {
      row[i] = jn;
    }
  }
}

// Side of a hinge/slide/tendon limit row: +1 for the lower side (pos = value - range[0]; J = +1, d pos /
// d value = +1), -1 for the upper side (pos = range[1] - value). The lower side is enumerated first whenever
// it is active, so a row is the lower one iff it is its joint's first row and the lower side is active.
SIM_FN sim_real sim_limit_sign(const SimModel* m, const SimWorld* d, int r) {
  int type = d->efc_type[r], id = d->efc_id[r];
  int first = r == 0 || d->efc_type[r - 1] != type || d->efc_id[r - 1] != id;
  sim_real lo, value, margin;
  if (type == SIM_CNSTR_LIMIT_TENDON) {
    lo = m->tendon_range[2 * id], value = d->ten_length[id], margin = m->tendon_margin[id];
  } else {
    lo = m->jnt_range[2 * id], value = d->qpos[m->jnt_qposadr[id]], margin = m->jnt_margin[id];
  }
  return (first && -(lo - value) < margin) ? 1 : -1;
}

// MuJoCo's getimpedance
SIM_FN sim_real sim_power(sim_real a, sim_real b) {
  if (b == 1) return a;
  if (b == 2) return a * a;
  return sim_pow(a, b);
}
SIM_FN void sim_impedance(const sim_real* solimp, sim_real pos, sim_real margin, sim_real* imp, sim_real* impP) {
  if (solimp[0] == solimp[1] || solimp[2] <= (sim_real)SIM_MINVAL) {
    *imp = (sim_real)0.5 * (solimp[0] + solimp[1]);
    *impP = 0;
    return;
  }
  sim_real x = (pos - margin) / solimp[2], sgn = 1;
  if (x < 0) {
    x = -x;
    sgn = -1;
  }
  if (x >= 1 || x <= 0) {
    *imp = x >= 1 ? solimp[1] : solimp[0];
    *impP = 0;
    return;
  }
  sim_real y, yP;
  if (solimp[4] == 1) {
    y = x;
    yP = 1;
  } else if (x <= solimp[3]) {
    sim_real a = 1 / sim_power(solimp[3], solimp[4] - 1);
    y = a * sim_power(x, solimp[4]);
    yP = solimp[4] * a * sim_power(x, solimp[4] - 1);
  } else {
    sim_real b = 1 / sim_power(1 - solimp[3], solimp[4] - 1);
    y = 1 - b * sim_power(1 - x, solimp[4]);
    yP = solimp[4] * b * sim_power(1 - x, solimp[4] - 1);
  }
  *imp = solimp[0] + y * (solimp[1] - solimp[0]);
  *impP = yP * sgn * (solimp[1] - solimp[0]) / solimp[2];
}

// one row: Jacobian (its entries zero on entry), diagA, R, D, KBIP, vel, aref
SIM_FN void sim_row_fill(const SimModel* m, SimWorld* d, int r) {
  int nv = m->nv, type = d->efc_type[r], id = d->efc_id[r];
  sim_real* row = d->efc_J + (size_t)r * nv;
  sim_real solref[2], solimp[5], dA = 0, fri0 = 0, tran = 0;
  const sim_real *sr = 0, *si = 0;
  int pyr = 0;

  if (type == SIM_CNSTR_FRICTION_DOF || type == SIM_CNSTR_LIMIT_JOINT) {
    if (type == SIM_CNSTR_FRICTION_DOF) {
      row[id] = 1;
      dA = m->dof_invweight0[id];
      sr = m->dof_solref + 2 * id;
      si = m->dof_solimp + 5 * id;
    } else {
      int adr = m->jnt_dofadr[id];
      if (m->jnt_type[id] == SIM_JNT_BALL) {
        sim_real axis[3];
        sim_ball_axis_angle(m, d, id, axis);
        for (int k = 0; k < 3; k++) row[adr + k] = -axis[k];
      } else {
        row[adr] = sim_limit_sign(m, d, r);
      }
      dA = m->dof_invweight0[adr];
      sr = m->jnt_solref + 2 * id;
      si = m->jnt_solimp + 5 * id;
    }
  } else if (type == SIM_CNSTR_FRICTION_TENDON || type == SIM_CNSTR_LIMIT_TENDON) {
    sim_real sgn = type == SIM_CNSTR_LIMIT_TENDON ? sim_limit_sign(m, d, r) : 1;
    for (int k = 0; k < m->tendon_num[id]; k++) {
      int w = m->tendon_adr[id] + k;
      row[m->wrap_dofadr[w]] += m->wrap_prm[w];
    }
    if (sgn < 0)
      for (int j = 0; j < nv; j++) row[j] = -row[j];
    dA = m->tendon_invweight0[id];
    sr = type == SIM_CNSTR_LIMIT_TENDON ? m->tendon_solref + 2 * id : m->tendon_solref_fri + 2 * id;
    si = type == SIM_CNSTR_LIMIT_TENDON ? m->tendon_solimp + 5 * id : m->tendon_solimp_fri + 5 * id;
  } else {
    // contact: pyramid edge e of the contact (rows 2(k-1), 2(k-1)+1 are J0 +/- mu_k Jk)
    int c = id;
    int b1 = m->geom_bodyid[d->contact_geom[2 * c]], b2 = m->geom_bodyid[d->contact_geom[2 * c + 1]];
    tran = m->body_invweight0[2 * b1] + m->body_invweight0[2 * b2];
    sim_real rot = m->body_invweight0[2 * b1 + 1] + m->body_invweight0[2 * b2 + 1];
    const sim_real* fr = d->contact_friction + 5 * c;
    if (type == SIM_CNSTR_CONTACT_FRICTIONLESS) {
      sim_contact_row(m, d, c, 0, 0, row);
      dA = tran;
    } else {
      pyr = 1;
      int e = 0;
      while (r - e - 1 >= 0 && d->efc_type[r - e - 1] == type && d->efc_id[r - e - 1] == id) e++;
      int k = e / 2 + 1;
      sim_real f = fr[k - 1];
      sim_contact_row(m, d, c, k, (e & 1) ? -f : f, row);
      dA = tran + f * f * (k - 1 < 2 ? tran : rot);
      fri0 = fr[0];
    }
    sr = d->contact_solref + 2 * c;
    si = d->contact_solimp + 5 * c;
  }

  // getsolparam: mixed-sign solref -> default (0.02, 1); refsafe; solimp clamps
  solref[0] = sr[0];
  solref[1] = sr[1];
  if ((solref[0] > 0) ^ (solref[1] > 0)) {
    solref[0] = (sim_real)0.02;
    solref[1] = 1;
  }
  if (!(m->disableflags & SIM_DSBL_REFSAFE) && solref[0] > 0) solref[0] = SIM_MAX(solref[0], 2 * m->timestep);
  for (int k = 0; k < 5; k++) solimp[k] = si[k];
  const sim_real minimp = (sim_real)0.0001, maximp = (sim_real)0.9999;
  solimp[0] = SIM_MIN(maximp, SIM_MAX(minimp, solimp[0]));
  solimp[1] = SIM_MIN(maximp, SIM_MAX(minimp, solimp[1]));
  solimp[2] = SIM_MAX(0, solimp[2]);
  solimp[3] = SIM_MIN(maximp, SIM_MAX(minimp, solimp[3]));
  solimp[4] = SIM_MAX(1, solimp[4]);

  sim_real imp, impP;
  sim_impedance(solimp, d->efc_pos[r], d->efc_margin[r], &imp, &impP);
  sim_real R = SIM_MAX((sim_real)SIM_MINVAL, (1 - imp) * dA / imp);
  if (pyr) {
    // mj_makeImpedance's pyramid rule: R of the first row (dA0 = tran(1 + f0^2)), R1 = R0/impratio,
    // mu = f0 sqrt(R1/R0), every row gets 2 mu^2 R0
    sim_real dA0 = tran + fri0 * fri0 * tran;
    sim_real R0 = SIM_MAX((sim_real)SIM_MINVAL, (1 - imp) * dA0 / imp);
    sim_real R1 = R0 / SIM_MAX((sim_real)SIM_MINVAL, m->impratio);
    sim_real mu = fri0 * sim_sqrt(R1 / R0);
    R = 2 * mu * mu * R0;
  }
  sim_real* kbip = d->efc_KBIP + 4 * r;
  if (type == SIM_CNSTR_FRICTION_DOF || type == SIM_CNSTR_FRICTION_TENDON) kbip[0] = 0;
  else if (solref[0] > 0)
    kbip[0] = 1 / SIM_MAX((sim_real)SIM_MINVAL, solimp[1] * solimp[1] * solref[0] * solref[0] * solref[1] * solref[1]);
  else kbip[0] = -solref[0] / SIM_MAX((sim_real)SIM_MINVAL, solimp[1] * solimp[1]);
  if (solref[1] > 0) kbip[1] = 2 / SIM_MAX((sim_real)SIM_MINVAL, solimp[1] * solref[0]);
  else kbip[1] = -solref[1] / SIM_MAX((sim_real)SIM_MINVAL, solimp[1]);
  kbip[2] = imp;
  kbip[3] = impP;
  d->efc_R[r] = R;
  d->efc_D[r] = 1 / R;
  d->efc_diagA[r] = R * imp / (1 - imp);

  // mj_referenceConstraint
  sim_real vel = 0;
  if (SIM_JMASK(m)) {
    // with the row's non-zero dofs (its mask, for the solver's products with it: sim_rowdot) in one walk; a zero
    // entry's term (+-0) leaves a sum that starts at +0 unchanged, so vel is the dense sum's
    unsigned bits[2] = {0, 0};
    for (int j = 0; j < nv; j++) {
      sim_real x = row[j];
      if (x != 0) {
        vel += x * d->qvel[j];
        bits[j >> 5] |= 1u << (j & 31);
      }
    }
    d->efc_Jmask[2 * r] = (int)bits[0];
    d->efc_Jmask[2 * r + 1] = (int)bits[1];
  } else {
    for (int j = 0; j < nv; j++) vel += row[j] * d->qvel[j];
  }
  d->efc_vel[r] = vel;
  d->efc_aref[r] = -kbip[1] * vel - kbip[0] * kbip[2] * (d->efc_pos[r] - d->efc_margin[r]);
}

// rows of this world (enumeration by the warp where it can, else on lane 0; rows filled across lanes)
SIM_FN_STAGE void sim_make_rows(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (!(SIM_WARP && nlane == 32 && sim_rows_enumerate_warp(m, d, lane))) {  // the same answer on every lane
    SIM_SYNC();  // the warp's row writes, if any, before lane 0 rewrites them
    if (lane == 0) sim_rows_enumerate(m, d);
  }
  SIM_SYNC();
  int nefc = d->nefc[0];
  // the rows' zeros written by the lanes together (consecutive entries), each row's fill then writes its non-zeros
  SIM_NO_UNROLL
  for (size_t i = (size_t)lane; i < (size_t)nefc * m->nv; i += (size_t)nlane) d->efc_J[i] = 0;
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int r = lane; r < nefc; r += nlane) sim_row_fill(m, d, r);
  SIM_SYNC();
}
