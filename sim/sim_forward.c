// sim_forward.c: composition of the pipeline (MuJoCo's mj_forward / mj_step) per world, and the CPU
// backend's loops over worlds. The stage files are included here so that the whole per-world engine is one
// translation unit of SIM_FN functions; sim/cuda/sim_cuda.cu includes this file for the GPU backend.
#include "sim_kinematics.c"
#include "sim_inertia.c"
#include "sim_velocity.c"
#include "sim_actuation.c"
#include "sim_integrate.c"
#include "sim_collision.c"
#include "sim_constraint.c"

// world reset to qpos0 (MuJoCo's mj_resetData for the state we carry)
SIM_FN void sim_reset_world(const SimModel* m, SimWorld* d, int key, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int i = lane; i < m->nq; i += nlane) d->qpos[i] = key >= 0 ? m->key_qpos[key * m->nq + i] : m->qpos0[i];
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    d->qvel[i] = key >= 0 ? m->key_qvel[key * m->nv + i] : 0;
    d->qacc_warmstart[i] = 0;
    d->qfrc_applied[i] = 0;
  }
  SIM_NO_UNROLL
  for (int i = lane; i < m->nu; i += nlane) d->ctrl[i] = key >= 0 ? m->key_ctrl[key * m->nu + i] : 0;
  if (lane == 0) d->time[0] = 0;
  SIM_SYNC();
}

// the stages made of more than one call
SIM_FN void sim_factor_stage(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_copy_lanes(d->qLD, d->M, m->nM, lane, nlane);
  SIM_SYNC();
  sim_factorI(m, d->qLD, d->qLDiagInv, lane, nlane);
}
SIM_FN void sim_velocity_stage(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_tendon_actuator_velocity(m, d, lane, nlane);
  sim_comVel(m, d, lane, nlane);
}
SIM_FN void sim_acceleration_stage(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_qfrc_smooth(m, d, lane, nlane);
  sim_solveLD(m, d->qacc_smooth, d->qLD, d->qLDiagInv, lane, nlane);
}
SIM_FN void sim_integrate_stage(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (m->integrator == SIM_INT_IMPLICITFAST) sim_implicitfast(m, d, lane, nlane);
  else sim_euler(m, d, lane, nlane);  // RK4 is composed in sim_step_integrate_world
}

// one stage (SIM_STAGE_*): tests and per-stage launches
SIM_FN_STAGE void sim_stage_world(const SimModel* m, SimWorld* d, int stage, int lane, int nlane) {
  switch (stage) {
    case SIM_STAGE_KINEMATICS: sim_kinematics(m, d, lane, nlane); break;
    case SIM_STAGE_COMPOS: sim_comPos(m, d, lane, nlane); break;
    case SIM_STAGE_TENDON: sim_tendon_transmission(m, d, lane, nlane); break;
    case SIM_STAGE_CRB: sim_crb(m, d, lane, nlane); break;
    case SIM_STAGE_FACTOR: sim_factor_stage(m, d, lane, nlane); break;
    case SIM_STAGE_COLLISION: sim_collision(m, d, lane, nlane); break;
    case SIM_STAGE_VELOCITY: sim_velocity_stage(m, d, lane, nlane); break;
    case SIM_STAGE_PASSIVE: sim_passive(m, d, lane, nlane); break;
    case SIM_STAGE_RNE: sim_rne(m, d, lane, nlane); break;
    case SIM_STAGE_ACTUATION: sim_actuation(m, d, lane, nlane); break;
    case SIM_STAGE_ACCELERATION: sim_acceleration_stage(m, d, lane, nlane); break;
    case SIM_STAGE_CONSTRAINT: sim_constraint(m, d, lane, nlane); break;
    case SIM_STAGE_INTEGRATE: sim_integrate_stage(m, d, lane, nlane); break;
  }
}

// The pipeline calls its stages in order, the same as sim_stage_world over SIM_STAGE_KINEMATICS..CONSTRAINT.
// Not that loop itself: on the GPU a loop over the switch held ~55 registers more than its largest stage
// (bench/cuda_stage_probe.cu: probe_forward_loop against probe_forward).
// Stages before collision (kinematics, com, tendons, CRB; then the mass matrix's factor)
SIM_FN void sim_forward_geometry(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_kinematics(m, d, lane, nlane);
  sim_comPos(m, d, lane, nlane);
  sim_tendon_transmission(m, d, lane, nlane);
  sim_crb(m, d, lane, nlane);
}
SIM_FN void sim_forward_position(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_forward_geometry(m, d, lane, nlane);
  sim_factor_stage(m, d, lane, nlane);
}
// stages between collision and constraint (velocity, passive, RNE, actuation; then the smooth acceleration)
SIM_FN void sim_forward_forces(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_velocity_stage(m, d, lane, nlane);
  sim_passive(m, d, lane, nlane);
  sim_rne(m, d, lane, nlane);
  sim_actuation(m, d, lane, nlane);
}
SIM_FN void sim_forward_smooth(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_forward_forces(m, d, lane, nlane);
  sim_acceleration_stage(m, d, lane, nlane);
}

SIM_FN_STAGE void sim_adj_tape_geometry(const SimModel* m, SimWorld* d, int k, int lane, int nlane);  // sim_adjoint.c

// mj_forward at the current state; tape >= 0: tape entry tape gets the geometry stages' outputs (a recorded
// Euler / implicitfast substep's replay loads them instead of recomputing them)
SIM_FN void sim_forward_world_tape(const SimModel* m, SimWorld* d, int tape, int lane, int nlane) {
  sim_forward_position(m, d, lane, nlane);
  if (tape >= 0) sim_adj_tape_geometry(m, d, tape, lane, nlane);
  sim_collision(m, d, lane, nlane);
  sim_forward_smooth(m, d, lane, nlane);
  sim_constraint_tape(m, d, tape, lane, nlane);
}
SIM_FN void sim_forward_world(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_forward_world_tape(m, d, -1, lane, nlane);
}

// mj_RungeKutta(4) after mj_forward; stage states kept in rk_* (MuJoCo's X[i], F[i])
SIM_FN_STAGE void sim_rk4_world(const SimModel* m, SimWorld* d, int lane, int nlane) {
  const sim_real A[9] = {0.5, 0, 0, 0, 0.5, 0, 0, 0, 1};
  const sim_real B[4] = {(sim_real)(1.0 / 6.0), (sim_real)(1.0 / 3.0), (sim_real)(1.0 / 3.0), (sim_real)(1.0 / 6.0)};
  int nq = m->nq, nv = m->nv;
  sim_real h = m->timestep, time0 = d->time[0];
  sim_real* X0q = d->rk_qpos;   // (nq) initial qpos
  sim_real* Xv = d->rk_qvel;    // (4, nv) stage velocities
  sim_real* F = d->rk_qacc;     // (4, nv) stage accelerations
  sim_real* dXv = d->qacc_int;  // (nv) velocity combination (reused buffer)
  sim_real* dXa = d->rk_dacc;   // (nv) acceleration combination
  SIM_NO_UNROLL
  for (int i = lane; i < nq; i += nlane) X0q[i] = d->qpos[i];
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) {
    Xv[i] = d->qvel[i];
    F[i] = d->qacc[i];
  }
  SIM_SYNC();
  for (int s = 1; s < 4; s++) {
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) {
      sim_real a = 0, b = 0;
      for (int j = 0; j < s; j++) {
        a += Xv[j * nv + i] * A[(s - 1) * 3 + j];
        b += F[j * nv + i] * A[(s - 1) * 3 + j];
      }
      dXv[i] = a;
      d->qvel[i] = Xv[i] + b * h;
    }
    SIM_NO_UNROLL
    for (int i = lane; i < nq; i += nlane) d->qpos[i] = X0q[i];
    SIM_SYNC();
    sim_integratePos(m, d->qpos, dXv, h, lane, nlane);
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) Xv[s * nv + i] = d->qvel[i];
    if (lane == 0) {
      sim_real c = 0;
      for (int j = 0; j < s; j++) c += A[(s - 1) * 3 + j];
      d->time[0] = time0 + c * h;
    }
    SIM_SYNC();
    sim_forward_world(m, d, lane, nlane);
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) F[s * nv + i] = d->qacc[i];
    SIM_SYNC();
  }
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) {
    sim_real a = 0, b = 0;
    for (int j = 0; j < 4; j++) {
      a += Xv[j * nv + i] * B[j];
      b += F[j * nv + i] * B[j];
    }
    dXv[i] = a;
    dXa[i] = b;
    d->qvel[i] = Xv[i];
  }
  SIM_NO_UNROLL
  for (int i = lane; i < nq; i += nlane) d->qpos[i] = X0q[i];
  if (lane == 0) d->time[0] = time0;
  SIM_SYNC();
  sim_advance(m, d, dXa, dXv, lane, nlane);
}

// mj_step's checks: a world whose state (qpos, qvel; acc: its acceleration qacc) is not finite is reset to
// qpos0 and counted; returns whether it was
SIM_FN int sim_reset_if_bad(const SimModel* m, SimWorld* d, int acc, int lane, int nlane) {
  int bad = 0;
  if (acc) {
    for (int i = 0; i < m->nv; i++) bad |= simu_isbad(d->qacc[i]);
  } else {
    for (int i = 0; i < m->nq; i++) bad |= simu_isbad(d->qpos[i]);
    for (int i = 0; i < m->nv; i++) bad |= simu_isbad(d->qvel[i]);
  }
  SIM_SYNC();
  if (bad) {
    sim_reset_world(m, d, -1, lane, nlane);
    if (lane == 0) d->nan_count[0]++;
  }
  return bad;
}

// mj_step's first half: state checks, forward, acceleration check (a reset world's forward is redone). tape >= 0:
// that tape entry gets the first forward's geometry, the one at the entry's qpos that the replay computed before
// it was taped (a redone forward's would differ there, from qpos0)
SIM_FN void sim_step_forward_world(const SimModel* m, SimWorld* d, int tape, int lane, int nlane) {
  sim_reset_if_bad(m, d, 0, lane, nlane);
  sim_forward_world_tape(m, d, tape, lane, nlane);
  if (sim_reset_if_bad(m, d, 1, lane, nlane)) sim_forward_world(m, d, lane, nlane);
}

// mj_step's second half: the integrator (a recorded step tapes the forward's solution between the halves)
SIM_FN void sim_step_integrate_world(const SimModel* m, SimWorld* d, int lane, int nlane) {
  if (m->integrator == SIM_INT_RK4) sim_rk4_world(m, d, lane, nlane);
  else sim_integrate_stage(m, d, lane, nlane);
}

// mj_step
SIM_FN void sim_step_world(const SimModel* m, SimWorld* d, int lane, int nlane) {
  sim_step_forward_world(m, d, -1, lane, nlane);
  sim_step_integrate_world(m, d, lane, nlane);
}

#ifndef __CUDACC__
// ---- CPU backend: loops over worlds ----
#include "sim.h"

void sim_run_stage(const SimModel* m, SimData* d, int stage) {
  for (int w = 0; w < d->nworld; w++) {
    SimWorld wd;
    sim_world(m, d, w, &wd);
    sim_stage_world(m, &wd, stage, 0, 1);
  }
}

void sim_forward(const SimModel* m, SimData* d) {
  for (int w = 0; w < d->nworld; w++) {
    SimWorld wd;
    sim_world(m, d, w, &wd);
    sim_forward_world(m, &wd, 0, 1);
  }
}

void sim_step(const SimModel* m, SimData* d) {
  for (int w = 0; w < d->nworld; w++) {
    SimWorld wd;
    sim_world(m, d, w, &wd);
    sim_step_world(m, &wd, 0, 1);
  }
}

void sim_reset(const SimModel* m, SimData* d, int w, int key) {
  for (int i = 0; i < d->nworld; i++) {
    if (w >= 0 && i != w) continue;
    SimWorld wd;
    sim_world(m, d, i, &wd);
    sim_reset_world(m, &wd, key, 0, 1);
  }
}
#endif
#include "sim_adjoint.c"
