// sim_actuation.c: actuator forces (mj_fwdActuation for stateless actuators with fixed or affine gain and
// affine bias on joint and fixed-tendon transmissions) and the smooth acceleration (mj_fwdAcceleration).
#include "sim_model.h"
#include "sim_math.h"

// ctrl as the actuator reads it: clamped to ctrlrange where limited (unless disabled); any non-finite or
// huge entry zeroes all controls (MuJoCo's mjWARN_BADCTRL behaviour).
SIM_FN int sim_ctrl_bad(const SimModel* m, const SimWorld* d) {
  for (int i = 0; i < m->nu; i++)
    if (simu_isbad(d->ctrl[i])) return 1;
  return 0;
}

SIM_FN sim_real sim_ctrl_clamped(const SimModel* m, const SimWorld* d, int a, int bad) {
  if (bad) return 0;
  sim_real c = d->ctrl[a];
  if (m->actuator_ctrllimited[a] && !(m->disableflags & SIM_DSBL_CLAMPCTRL)) {
    const sim_real* r = m->actuator_ctrlrange + 2 * a;
    c = c < r[0] ? r[0] : (c > r[1] ? r[1] : c);
  }
  return c;
}

// actuator_force and qfrc_actuator
SIM_FN_STAGE void sim_actuation(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int nu = m->nu;
  if (nu == 0 || (m->disableflags & SIM_DSBL_ACTUATION)) {
    SIM_NO_UNROLL
    for (int a = lane; a < nu; a += nlane) d->actuator_force[a] = 0;
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane) d->qfrc_actuator[i] = 0;
    SIM_SYNC();
    return;
  }
  int bad = sim_ctrl_bad(m, d);
  SIM_NO_UNROLL
  for (int a = lane; a < nu; a += nlane) {
    sim_real len = d->actuator_length[a], vel = d->actuator_velocity[a];
    const sim_real* gp = m->actuator_gainprm + 3 * a;
    const sim_real* bp = m->actuator_biasprm + 3 * a;
    sim_real gain = m->actuator_gaintype[a] == SIM_GAIN_FIXED ? gp[0] : gp[0] + gp[1] * len + gp[2] * vel;
    sim_real force = gain * sim_ctrl_clamped(m, d, a, bad);
    if (m->actuator_biastype[a] == SIM_BIAS_AFFINE) force += bp[0] + bp[1] * len + bp[2] * vel;
    if (m->actuator_forcelimited[a]) {
      const sim_real* r = m->actuator_forcerange + 2 * a;
      force = force < r[0] ? r[0] : (force > r[1] ? r[1] : force);
    }
    d->actuator_force[a] = force;
  }
  SIM_SYNC();
  // qfrc_actuator = moment' force, one dof per lane: its entries in actuator order (MuJoCo's summation order),
  // then the joint's actuator-force clamp (on the joint's first dof)
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    sim_real f = 0;
    for (int q = m->dof_momadr[i]; q < m->dof_momadr[i] + m->dof_momnum[i]; q++) {
      int e = m->dof_moment[2 * q], a = m->dof_moment[2 * q + 1];
      f += m->moment_val[e] * d->actuator_force[a];
    }
    int j = m->dof_jntid[i];
    if (m->jnt_actfrclimited[j] && m->jnt_dofadr[j] == i) {
      const sim_real* r = m->jnt_actfrcrange + 2 * j;
      f = f < r[0] ? r[0] : (f > r[1] ? r[1] : f);
    }
    d->qfrc_actuator[i] = f;
  }
  SIM_SYNC();
}

// qfrc_smooth = passive - bias + applied + actuator
SIM_FN_STAGE void sim_qfrc_smooth(const SimModel* m, SimWorld* d, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    d->qfrc_smooth[i] = d->qfrc_passive[i] - d->qfrc_bias[i] + d->qfrc_applied[i] + d->qfrc_actuator[i];
    d->qacc_smooth[i] = d->qfrc_smooth[i];
  }
  SIM_SYNC();
}
