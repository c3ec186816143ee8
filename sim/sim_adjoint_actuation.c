// sim_adjoint_actuation.c: reverse-mode VJPs of sim_actuation.c: actuator forces (gain/bias affine in
// length and velocity, ctrl clamp and force clamp frozen as recorded), qfrc_actuator = moment' force with the
// joint actuator-force clamp, and the smooth force qfrc_smooth = passive - bias + applied + actuator.
#include "sim_model.h"
#include "sim_math.h"

// discrete decisions of the actuation stage for actuator a at (len, vel, ctrl), as sim_actuation decides
SIM_FN int sim_adj_actuator_flag(const SimModel* m, const sim_real* ctrl, int a, sim_real len, sim_real vel, int bad) {
  if (bad) return SIM_ADJ_CTRL_BAD;
  int flags = 0;
  sim_real c = ctrl[a];
  if (m->actuator_ctrllimited[a] && !(m->disableflags & SIM_DSBL_CLAMPCTRL)) {
    const sim_real* r = m->actuator_ctrlrange + 2 * a;
    if (c < r[0] || c > r[1]) flags |= SIM_ADJ_CTRL_CLAMPED;
    c = c < r[0] ? r[0] : (c > r[1] ? r[1] : c);
  }
  if (m->actuator_forcelimited[a]) {
    const sim_real* gp = m->actuator_gainprm + 3 * a;
    const sim_real* bp = m->actuator_biasprm + 3 * a;
    sim_real gain = m->actuator_gaintype[a] == SIM_GAIN_FIXED ? gp[0] : gp[0] + gp[1] * len + gp[2] * vel;
    sim_real force = gain * c;
    if (m->actuator_biastype[a] == SIM_BIAS_AFFINE) force += bp[0] + bp[1] * len + bp[2] * vel;
    const sim_real* r = m->actuator_forcerange + 2 * a;
    if (force < r[0] || force > r[1]) flags |= SIM_ADJ_FORCE_CLAMPED;
  }
  return flags;
}

// flags of every actuator straight from a state (qpos, qvel, ctrl): lengths and velocities through the
// constant transmissions, summed in the forward's order (for the tape, before the step runs)
SIM_FN void sim_adj_flags_state(const SimModel* m, const sim_real* qpos, const sim_real* qvel, const sim_real* ctrl,
                                int* flags, int lane, int nlane) {
  int bad = 0;
  for (int i = 0; i < m->nu; i++) bad |= simu_isbad(ctrl[i]);
  SIM_NO_UNROLL
  for (int a = lane; a < m->nu; a += nlane) {
    int id = m->actuator_trnid[a];
    sim_real len;
    if (m->actuator_trntype[a] == SIM_TRN_JOINT) {
      len = m->actuator_gear[a] * qpos[m->jnt_qposadr[id]];
    } else {
      sim_real L = 0;
      for (int k = 0; k < m->tendon_num[id]; k++) L += m->wrap_prm[m->tendon_adr[id] + k] * qpos[m->wrap_qposadr[m->tendon_adr[id] + k]];
      len = m->actuator_gear[a] * L;
    }
    sim_real vel = 0;
    for (int k = 0; k < m->actuator_momnum[a]; k++)
      vel += m->moment_val[m->actuator_momadr[a] + k] * qvel[m->moment_dof[m->actuator_momadr[a] + k]];
    flags[a] = sim_adj_actuator_flag(m, ctrl, a, len, vel, bad);
  }
  SIM_SYNC();
}

// actuation VJP (qfrc_actuator cotangent qbar, (nv)) with frozen flags (nu): -> adj_du, adj_actuator_length,
// adj_actuator_velocity. Actuators across lanes (each writes its own entries).
SIM_FN_STAGE void sim_adj_actuation(const SimModel* m, SimWorld* d, const sim_real* qbar, const int* flags, int lane,
                              int nlane) {
  if (m->nu > 0 && !(m->disableflags & SIM_DSBL_ACTUATION)) {
    SIM_NO_UNROLL
    for (int a = lane; a < m->nu; a += nlane) {
      int adr = m->actuator_momadr[a], num = m->actuator_momnum[a];
      sim_real fbar = 0;
      for (int k = 0; k < num; k++) {
        int dof = m->moment_dof[adr + k];
        int j = m->dof_jntid[dof];
        sim_real g = qbar[dof];
        if (m->jnt_actfrclimited[j] && dof == m->jnt_dofadr[j]) {  // joint clamp on its first dof
          // recompute the unclamped joint force (sum over all actuators) and freeze the clamp
          sim_real f = 0;
          for (int b = 0; b < m->nu; b++)
            for (int q = m->actuator_momadr[b]; q < m->actuator_momadr[b] + m->actuator_momnum[b]; q++)
              if (m->moment_dof[q] == dof) f += m->moment_val[q] * d->actuator_force[b];
          const sim_real* r = m->jnt_actfrcrange + 2 * j;
          if (f < r[0] || f > r[1]) g = 0;
        }
        fbar += m->moment_val[adr + k] * g;
      }
      int fl = flags[a];
      if (fl & SIM_ADJ_FORCE_CLAMPED) continue;  // clamped force: no dependence on ctrl, length, velocity
      sim_real len = d->actuator_length[a], vel = d->actuator_velocity[a];
      const sim_real* gp = m->actuator_gainprm + 3 * a;
      const sim_real* bp = m->actuator_biasprm + 3 * a;
      sim_real c = sim_ctrl_clamped(m, d, a, fl & SIM_ADJ_CTRL_BAD);
      sim_real gain = m->actuator_gaintype[a] == SIM_GAIN_FIXED ? gp[0] : gp[0] + gp[1] * len + gp[2] * vel;
      if (!(fl & (SIM_ADJ_CTRL_CLAMPED | SIM_ADJ_CTRL_BAD))) d->adj_du[a] += fbar * gain;
      if (m->actuator_gaintype[a] == SIM_GAIN_AFFINE) {
        d->adj_actuator_length[a] += fbar * c * gp[1];
        d->adj_actuator_velocity[a] += fbar * c * gp[2];
      }
      if (m->actuator_biastype[a] == SIM_BIAS_AFFINE) {
        d->adj_actuator_length[a] += fbar * bp[1];
        d->adj_actuator_velocity[a] += fbar * bp[2];
      }
    }
  }
  SIM_SYNC();
}
