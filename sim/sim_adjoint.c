// sim_adjoint.c: exact reverse-mode gradient of a control step (nsub physics substeps) for the smooth
// dynamics: the tape, the per-substep backward that composes the stage VJPs (sim_adjoint_*.c), and the CPU
// loops over worlds. An Euler / implicitfast substep's backward replays its forward from the tape without the
// geometry stages, collision detection, Newton iterations or factorizations (sim_adj_forward_taped); RK4
// recomputes its stages.
// Included at the end of sim_forward.c, so it is part of the engine's one translation unit (float64 and float32
// CPU engines, and the CUDA backend through sim/cuda/sim_cuda.cu).
//
// Backward of one evaluation of the dynamics at a state (physics.md section 3.1):
//   integrator adjoint: a_int-bar -> y = Q^-T a_int-bar, a-bar = M y, + position/damping/qDeriv terms
//   solver adjoint (SLOT): a-bar -> tau-bar = lambda = H^-1 a-bar, M-bar -= sym(lambda a')   [H = M: no rows yet]
//   smooth backward: tau-bar, M-bar -> actuation, rne, passive, comVel, crb, lengths, comPos, kinematics
// The constraint adjoint plugs in at sim_adj_solver (sim_adjoint_constraint.c; contract there).
#include "sim_adjoint_kinematics.c"
#include "sim_adjoint_inertia.c"
#include "sim_adjoint_velocity.c"
#include "sim_adjoint_actuation.c"
#include "sim_adjoint_integrate.c"
#include "sim_adjoint_collision.c"
#include "sim_adjoint_constraint.c"

// zero every per-evaluation cotangent (before the solver/collision adjoints write into them)
SIM_FN void sim_adj_zero_eval(const SimModel* m, SimWorld* d, int lane, int nlane) {
#define ZERO(name, n) for (int k = lane; k < (n); k += nlane) d->name[k] = 0;
  ZERO(adj_xpos, 3 * m->nbody) ZERO(adj_xmat, 9 * m->nbody) ZERO(adj_xipos, 3 * m->nbody)
  ZERO(adj_ximat, 9 * m->nbody) ZERO(adj_xanchor, 3 * m->njnt) ZERO(adj_xaxis, 3 * m->njnt)
  ZERO(adj_geom_xpos, 3 * m->ngeom) ZERO(adj_geom_xmat, 9 * m->ngeom) ZERO(adj_cinert, 10 * m->nbody)
  ZERO(adj_cdof, 6 * m->nv) ZERO(adj_M, m->nM) ZERO(adj_ten_length, m->ntendon) ZERO(adj_actuator_length, m->nu)
  ZERO(adj_ten_velocity, m->ntendon) ZERO(adj_actuator_velocity, m->nu) ZERO(adj_cvel, 6 * m->nbody)
  ZERO(adj_cdof_dot, 6 * m->nv) ZERO(adj_qfrc_smooth, m->nv) ZERO(adj_dq, m->nv) ZERO(adj_dv, m->nv)
  ZERO(adj_du, m->nu) ZERO(adj_subtree_com, 3 * m->nbody)
#undef ZERO
  SIM_SYNC();
}

// smooth backward: adj_qfrc_smooth, adj_M (and any geometry cotangents) -> adj_dq, adj_dv, adj_du (accumulated)
SIM_FN void sim_adj_smooth(const SimModel* m, SimWorld* d, const int* flags, int lane, int nlane) {
  const sim_real* tbar = d->adj_qfrc_smooth;  // = passive-bar = actuator-bar = applied-bar = -bias-bar
  sim_adj_actuation(m, d, tbar, flags, lane, nlane);
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) d->adj_tmp[i] = -tbar[i];
  SIM_SYNC();
  sim_adj_rne(m, d, d->adj_tmp, lane, nlane);
  sim_adj_passive(m, d, tbar, lane, nlane);
  sim_adj_comVel(m, d, lane, nlane);
  sim_adj_tendon_actuator_velocity(m, d, lane, nlane);
  sim_adj_crb(m, d, lane, nlane);
  sim_adj_tendon_transmission(m, d, lane, nlane);
  sim_adj_comPos(m, d, lane, nlane);
  sim_adj_kinematics(m, d, lane, nlane);
}

// the Euler integrator takes the implicit-damping path (as sim_euler)
SIM_FN int sim_adj_euler_damped(const SimModel* m) {
  int damped = 0;
  if (!(m->disableflags & (SIM_DSBL_EULERDAMP | SIM_DSBL_DAMPER)))
    for (int i = 0; i < m->nv; i++) damped |= m->dof_hasdamp[i];
  return damped;
}

// copy tape entry k into the world's state
SIM_FN void sim_adj_load(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int i = lane; i < m->nq; i += nlane) d->qpos[i] = d->tape_qpos[(size_t)k * m->nq + i];
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    d->qvel[i] = d->tape_qvel[(size_t)k * m->nv + i];
    d->qacc_warmstart[i] = d->tape_warm[(size_t)k * m->nv + i];
  }
  SIM_NO_UNROLL
  for (int i = lane; i < m->nu; i += nlane) {
    d->ctrl[i] = d->tape_ctrl[(size_t)k * m->nu + i];
    d->adj_flags[i] = d->tape_flags[(size_t)k * m->nu + i];
  }
  SIM_SYNC();
}

// tape entry k, second part: what the forward just decided and converged to (called between the forward and
// the integrator of a recorded Euler / implicitfast substep). Each contact keeps its narrow-phase slot, so
// the backward's mj_setContact (simc_set_contact) rebuilds it bit for bit; the solver's final row forces and
// states are sim_row_update of its last J qacc - aref, so that one number per row restores them.
SIM_FN_STAGE void sim_adj_tape_solution(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  int ncon = d->ncon[0], nefc = d->nefc[0];
  sim_real* con = d->tape_con + (size_t)k * m->nconmax * 10;
  int* id = d->tape_con_id + (size_t)k * m->nconmax * 2;
  SIM_NO_UNROLL
  for (int c = lane; c < ncon; c += nlane) {
    int p = d->contact_pair[c], slot = m->pair_conadr[p] + c - d->col_pair_adr[p];
    sim_real v[10];  // all ten loads before the stores, which may alias them as far as the compiler knows
    for (int i = 0; i < 10; i++) v[i] = d->col_slot[10 * slot + i];
    for (int i = 0; i < 10; i++) con[10 * c + i] = v[i];
    id[2 * c] = p;
    id[2 * c + 1] = d->contact_witness[c];
  }
  sim_copy_lanes(d->tape_jaref + (size_t)k * m->nefcmax, d->efc_Jaref, nefc, lane, nlane);
  sim_copy_lanes(d->tape_qacc + (size_t)k * m->nv, d->qacc, m->nv, lane, nlane);
  sim_copy_lanes(d->tape_qfrc_con + (size_t)k * m->nv, d->qfrc_constraint, m->nv, lane, nlane);
  if (lane == 0) {
    d->tape_ncon[k] = ncon;
    d->tape_hok[k] = d->tape_hnow[0];  // 0 after a redone forward (sim_step_forward_world), which tapes nothing
  }
  SIM_SYNC();
}

// tape entry k, third part (after the integrator): the factors of M (qLD) and of the integrator's matrix (qH,
// Euler with damping or implicitfast) and its acceleration qacc_int, which the backward reads rather than
// recomputes. M's factor is the forward's still: nothing after the factor stage writes qLD.
SIM_FN_STAGE void sim_adj_tape_factor(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  int nM = m->nM, nv = m->nv;
  sim_real* t = d->tape_factor + (size_t)k * (2 * nM + 3 * nv);
  sim_copy_lanes(t, d->qLD, nM, lane, nlane);
  sim_copy_lanes(t + nM, d->qLDiagInv, nv, lane, nlane);
  sim_copy_lanes(t + nM + nv, d->qH, nM, lane, nlane);
  sim_copy_lanes(t + 2 * nM + nv, d->qHDiagInv, nv, lane, nlane);
  sim_copy_lanes(t + 2 * nM + 2 * nv, d->qacc_int, nv, lane, nlane);
  SIM_SYNC();
}

// the taped factors of entry k back into qLD (which = 0) or qH and qacc_int (which = 1)
SIM_FN void sim_adj_load_factor(const SimModel* m, SimWorld* d, int k, int which, int lane, int nlane) {
  int nM = m->nM, nv = m->nv;
  const sim_real* t = d->tape_factor + (size_t)k * (2 * nM + 3 * nv) + which * (nM + nv);
  sim_real* L = which ? d->qH : d->qLD;
  sim_real* Dinv = which ? d->qHDiagInv : d->qLDiagInv;
  sim_copy_lanes(L, t, nM, lane, nlane);
  sim_copy_lanes(Dinv, t + nM, nv, lane, nlane);
  if (which) sim_copy_lanes(d->qacc_int, t + nM + nv, nv, lane, nlane);
  SIM_SYNC();
}

// tape entry k, between its inputs and the second part (right after the forward's position stage): the outputs
// of the geometry stages that later stages and the backward read (SIM_ADJ_GEOMETRY)
SIM_FN_STAGE void sim_adj_tape_geometry(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  sim_real* t = d->tape_geometry + (size_t)k * SIM_ADJ_NGEOMETRY(m);
#define TAPE(name, n)                            \
  sim_copy_lanes(t, d->name, (n), lane, nlane);  \
  t += (n);
  SIM_ADJ_GEOMETRY(TAPE, m)
#undef TAPE
  SIM_SYNC();
}

// the taped geometry of entry k back into its fields, as the recorded forward's position stage left them
SIM_FN void sim_adj_load_geometry(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  const sim_real* t = d->tape_geometry + (size_t)k * SIM_ADJ_NGEOMETRY(m);
#define LOAD(name, n)                            \
  sim_copy_lanes(d->name, t, (n), lane, nlane);  \
  t += (n);
  SIM_ADJ_GEOMETRY(LOAD, m)
#undef LOAD
  SIM_SYNC();
}

// the forward of tape entry k (its inputs loaded) without kinematics, com, tendon lengths, CRB, broadphase,
// narrow phase, Newton iterations or the factor of M: their taped outputs, the velocity-dependent smooth stages
// (not the smooth acceleration, which the backward does not read), the taped contacts, their rows, and the
// converged solution with its row forces and states, as the solver adjoint and the integrator read them
SIM_FN_STAGE void sim_adj_forward_taped(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  sim_adj_load_geometry(m, d, k, lane, nlane);
  sim_adj_load_factor(m, d, k, 0, lane, nlane);
  if (lane == 0) d->ncon[0] = d->tape_ncon[k];
  SIM_SYNC();
  const sim_real* con = d->tape_con + (size_t)k * m->nconmax * 10;
  const int* id = d->tape_con_id + (size_t)k * m->nconmax * 2;
  SIM_NO_UNROLL
  for (int c = lane; c < d->ncon[0]; c += nlane) simc_set_contact(m, d, c, id[2 * c], con + 10 * c, id[2 * c + 1]);
  SIM_SYNC();
  sim_forward_forces(m, d, lane, nlane);
  sim_make_rows(m, d, lane, nlane);
  SIM_NO_UNROLL
  for (int r = lane; r < d->nefc[0]; r += nlane) {
    d->efc_Jaref[r] = d->tape_jaref[(size_t)k * m->nefcmax + r];
    d->efc_cost[r] = sim_row_update(d, r, d->efc_Jaref[r]);
  }
  sim_copy_lanes(d->qacc, d->tape_qacc + (size_t)k * m->nv, m->nv, lane, nlane);
  sim_copy_lanes(d->qfrc_constraint, d->tape_qfrc_con + (size_t)k * m->nv, m->nv, lane, nlane);
  SIM_SYNC();
}

// backward of one evaluation at the current forward state: adj_qacc -> adj_dq, adj_dv, adj_du (added); k: its
// tape entry, -1 for none (RK4's stages)
SIM_FN_STAGE void sim_adj_eval(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  sim_adj_solver(m, d, k, lane, nlane);
  sim_adj_smooth(m, d, d->adj_flags, lane, nlane);
}

// Euler / implicitfast substep backward at tape entry k, first part: the forward replayed from the tape and the
// integrator's adjoint, down to adj_qacc (sim_adj_eval follows, then sim_adj_substep_post)
SIM_FN_STAGE void sim_adj_substep_pre(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  sim_real h = m->timestep;
  int nv = m->nv;
  sim_adj_load(m, d, k, lane, nlane);
  sim_adj_forward_taped(m, d, k, lane, nlane);
  int implicitfast = m->integrator == SIM_INT_IMPLICITFAST;
  int damped = implicitfast || sim_adj_euler_damped(m);
  sim_adj_load_factor(m, d, k, 1, lane, nlane);  // qH, qacc_int as the integrator left them
  sim_adj_zero_eval(m, d, lane, nlane);
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) {
    d->adj_vnew[i] = d->qvel[i] + d->qacc_int[i] * h;  // as sim_advance
    d->adj_tmp[i] = d->adj_qvel[i];                    // cotangent of the new qvel
  }
  SIM_SYNC();
  // qpos' = qpos (+) h qvel': adj_dq collects the input-qpos part, adj_tmp the qvel' part
  sim_adj_integratePos(m, d->adj_vnew, h, d->adj_qpos, d->adj_dq, d->adj_tmp, lane, nlane);
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) {
    d->adj_dv[i] += d->adj_tmp[i];        // qvel' = qvel + h a_int
    d->adj_qacc_int[i] = h * d->adj_tmp[i];
    d->adj_y[i] = d->adj_qacc_int[i];
  }
  SIM_SYNC();
  if (!damped) {
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) d->adj_qacc[i] = d->adj_qacc_int[i];
    SIM_SYNC();
  } else {
    // y = Q^-T a_int-bar (Q symmetric outside free blocks)
    sim_solveLD(m, d->adj_y, d->qH, d->qHDiagInv, lane, nlane);
    if (implicitfast) sim_adj_freebody(m, d, lane, nlane);
    sim_mulM(m, d->M, d->adj_qacc, d->adj_y, lane, nlane);
    // position term: M-bar += sym(y (a - a_int)')
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) d->adj_vnew[i] = d->qacc[i] - d->qacc_int[i];
    SIM_SYNC();
    sim_adj_M_outer(m, d->adj_M, d->adj_y, d->adj_vnew, 1, lane, nlane);
    if (implicitfast) {
      sim_adj_qDeriv(m, d, d->adj_flags, d->adj_y, d->qacc_int, lane, nlane);
    } else if (lane == 0 && !(m->disableflags & SIM_DSBL_DAMPER)) {
      for (int i = 0; i < nv; i++)  // Q - M = h diag(b(v))
        d->adj_dv[i] -= h * simu_adj_dampDeriv2(m->dof_dampingpoly + SIM_NPOLY * i, d->qvel[i]) * d->adj_y[i] * d->qacc_int[i];
    }
    SIM_SYNC();
  }
}

// last part: the input's cotangents and the control's
SIM_FN void sim_adj_substep_post(const SimModel* m, SimWorld* d, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    d->adj_qpos[i] = d->adj_dq[i];
    d->adj_qvel[i] = d->adj_dv[i];
  }
  SIM_NO_UNROLL
  for (int i = lane; i < m->nu; i += nlane) d->adj_ctrl[i] += d->adj_du[i];
  SIM_SYNC();
}

// Euler / implicitfast substep backward at tape entry k. In: adj_qpos, adj_qvel (of the substep's output).
// Out: adj_qpos, adj_qvel of its input; adj_ctrl += ctrl cotangent.
SIM_FN void sim_adj_substep_euler_implicit(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  sim_adj_substep_pre(m, d, k, lane, nlane);
  sim_adj_eval(m, d, k, lane, nlane);
  sim_adj_substep_post(m, d, lane, nlane);
}

// RK4 substep backward (one adjoint per stage), same contract
SIM_FN_STAGE void sim_adj_substep_rk4(const SimModel* m, SimWorld* d, int k, int lane, int nlane) {
  const sim_real A[9] = {0.5, 0, 0, 0, 0.5, 0, 0, 0, 1};
  const sim_real B[4] = {(sim_real)(1.0 / 6.0), (sim_real)(1.0 / 3.0), (sim_real)(1.0 / 3.0), (sim_real)(1.0 / 6.0)};
  sim_real h = m->timestep;
  int nv = m->nv;
  const sim_real* Xv = d->rk_qvel;  // (4, nv) stage velocities
  sim_real* Xvbar = d->adj_rk_v;    // (4, nv)
  sim_real* Fbar = d->adj_rk_a;     // (4, nv)
  sim_adj_load(m, d, k, lane, nlane);
  sim_forward_world(m, d, lane, nlane);
  sim_rk4_world(m, d, lane, nlane);  // Xv, F, final dXv (qacc_int); advances the state: reloaded below
  sim_adj_load(m, d, k, lane, nlane);
  SIM_NO_UNROLL
  for (int i = lane; i < 4 * nv; i += nlane) Xvbar[i] = 0;
  SIM_SYNC();
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) {
    d->adj_rk_dq[i] = 0;
    d->adj_rk_dv[i] = d->adj_qvel[i];  // qvel' = v0 + h sum B_j F_j
    d->adj_tmp[i] = 0;
    d->adj_vnew[i] = d->qacc_int[i];
    for (int j = 0; j < 4; j++) Fbar[j * nv + i] = h * B[j] * d->adj_qvel[i];
  }
  SIM_SYNC();
  // qpos' = q0 (+) h sum_j B_j Xv_j
  sim_adj_integratePos(m, d->adj_vnew, h, d->adj_qpos, d->adj_rk_dq, d->adj_tmp, lane, nlane);
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane)
    for (int j = 0; j < 4; j++) Xvbar[j * nv + i] += B[j] * d->adj_tmp[i];
  SIM_SYNC();
  for (int s = 3; s >= 0; s--) {
    // stage state: q_s = q0 (+) h sum_{j<s} A_sj Xv_j, v_s = Xv_s
    sim_adj_load(m, d, k, lane, nlane);
    if (s > 0) {
      SIM_NO_UNROLL
      for (int i = lane; i < nv; i += nlane) {
        sim_real a = 0;
        for (int j = 0; j < s; j++) a += Xv[j * nv + i] * A[(s - 1) * 3 + j];
        d->adj_vnew[i] = a;
        d->qvel[i] = Xv[s * nv + i];
      }
      SIM_SYNC();
      sim_integratePos(m, d->qpos, d->adj_vnew, h, lane, nlane);
    }
    sim_forward_world(m, d, lane, nlane);
    if (s > 0) {  // decisions at the stage state (the tape holds the first evaluation's)
      SIM_NO_UNROLL
      for (int a = lane; a < m->nu; a += nlane)
        d->adj_flags[a] = sim_adj_actuator_flag(m, d->ctrl, a, d->actuator_length[a], d->actuator_velocity[a],
                                                sim_ctrl_bad(m, d));
      SIM_SYNC();
    }
    sim_adj_zero_eval(m, d, lane, nlane);
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) d->adj_qacc[i] = Fbar[s * nv + i];
    SIM_SYNC();
    sim_adj_eval(m, d, -1, lane, nlane);
    SIM_NO_UNROLL
    for (int i = lane; i < m->nu; i += nlane) d->adj_ctrl[i] += d->adj_du[i];
    SIM_NO_UNROLL
    for (int i = lane; i < nv; i += nlane) {
      Xvbar[s * nv + i] += d->adj_dv[i];
      d->adj_tmp[i] = 0;
    }
    SIM_SYNC();
    if (s > 0) {
      SIM_NO_UNROLL
      for (int i = lane; i < nv; i += nlane) {  // v_s = v0 + h sum_{j<s} A_sj F_j
        d->adj_rk_dv[i] += Xvbar[s * nv + i];
        for (int j = 0; j < s; j++) Fbar[j * nv + i] += h * A[(s - 1) * 3 + j] * Xvbar[s * nv + i];
      }
      SIM_SYNC();
      sim_adj_integratePos(m, d->adj_vnew, h, d->adj_dq, d->adj_rk_dq, d->adj_tmp, lane, nlane);
      SIM_NO_UNROLL
      for (int i = lane; i < nv; i += nlane)
        for (int j = 0; j < s; j++) Xvbar[j * nv + i] += A[(s - 1) * 3 + j] * d->adj_tmp[i];
      SIM_SYNC();
    } else {
      SIM_NO_UNROLL
      for (int i = lane; i < nv; i += nlane) {
        d->adj_rk_dq[i] += d->adj_dq[i];
        d->adj_rk_dv[i] += Xvbar[i];  // Xv_0 = v0
      }
      SIM_SYNC();
    }
  }
  SIM_NO_UNROLL
  for (int i = lane; i < nv; i += nlane) {
    d->adj_qpos[i] = d->adj_rk_dq[i];
    d->adj_qvel[i] = d->adj_rk_dv[i];
  }
  SIM_SYNC();
}

// pushes the substep's input (state, warm start, controls and the actuators' clamp flags) on the tape; returns
// the entry, -1 when the tape is full (also kept in tape_k for the staged CUDA launch's later kernels)
SIM_FN int sim_tape_push(const SimModel* m, SimWorld* d, int lane, int nlane) {
  int k = d->tape_n[0];
  if (k >= m->ntape) k = -1;
  if (k >= 0) {
    SIM_NO_UNROLL
    for (int i = lane; i < m->nq; i += nlane) d->tape_qpos[(size_t)k * m->nq + i] = d->qpos[i];
    SIM_NO_UNROLL
    for (int i = lane; i < m->nv; i += nlane) {
      d->tape_qvel[(size_t)k * m->nv + i] = d->qvel[i];
      d->tape_warm[(size_t)k * m->nv + i] = d->qacc_warmstart[i];
    }
    SIM_NO_UNROLL
    for (int i = lane; i < m->nu; i += nlane) d->tape_ctrl[(size_t)k * m->nu + i] = d->ctrl[i];
    sim_adj_flags_state(m, d->qpos, d->qvel, d->ctrl, d->tape_flags + (size_t)k * m->nu, lane, nlane);
    SIM_SYNC();
  }
  if (lane == 0) {
    if (k >= 0) d->tape_n[0] = k + 1;
    d->tape_k[0] = k;
  }
  SIM_SYNC();
  return k;
}

// one control step of nsub physics substeps; with record, each substep's input is pushed on the tape, and
// for Euler / implicitfast its geometry and what its forward decided and converged to (RK4's backward
// recomputes its stages)
SIM_FN void sim_control_step_world(const SimModel* m, SimWorld* d, int nsub, int record, int lane, int nlane) {
  for (int s = 0; s < nsub; s++) {
    int k = record ? sim_tape_push(m, d, lane, nlane) : -1;
    int kt = m->integrator != SIM_INT_RK4 ? k : -1;  // the entry that gets the forward's outputs
    sim_step_forward_world(m, d, kt, lane, nlane);
    if (kt >= 0) sim_adj_tape_solution(m, d, kt, lane, nlane);
    sim_step_integrate_world(m, d, lane, nlane);
    if (kt >= 0) sim_adj_tape_factor(m, d, kt, lane, nlane);
  }
}

// The control-step backward keeps the world's state: saved before the substeps' backward, restored after
SIM_FN void sim_adj_save_state(const SimModel* m, SimWorld* d, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int i = lane; i < m->nq; i += nlane) d->adj_save_qpos[i] = d->qpos[i];
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    d->adj_save_qvel[i] = d->qvel[i];
    d->adj_save_warm[i] = d->qacc_warmstart[i];
  }
  SIM_NO_UNROLL
  for (int i = lane; i < m->nu; i += nlane) {
    d->adj_save_ctrl[i] = d->ctrl[i];
    d->adj_ctrl[i] = 0;
  }
  if (lane == 0) d->adj_save_time[0] = d->time[0];
  SIM_SYNC();
}
SIM_FN void sim_adj_restore_state(const SimModel* m, SimWorld* d, int lane, int nlane) {
  SIM_NO_UNROLL
  for (int i = lane; i < m->nq; i += nlane) d->qpos[i] = d->adj_save_qpos[i];
  SIM_NO_UNROLL
  for (int i = lane; i < m->nv; i += nlane) {
    d->qvel[i] = d->adj_save_qvel[i];
    d->qacc_warmstart[i] = d->adj_save_warm[i];
  }
  SIM_NO_UNROLL
  for (int i = lane; i < m->nu; i += nlane) d->ctrl[i] = d->adj_save_ctrl[i];
  if (lane == 0) d->time[0] = d->adj_save_time[0];
  SIM_SYNC();
}

// pops the substep just taken back (tape entry k)
SIM_FN void sim_adj_tape_pop(SimWorld* d, int k, int lane) {
  SIM_SYNC();
  if (lane == 0) d->tape_n[0] = k;
  SIM_SYNC();
}

// backward of the last nsub recorded substeps (a control step). In: adj_qpos (tangent), adj_qvel of the
// step's output. Out: the same of its input, adj_ctrl = cotangent of the step's ctrl. The world's state is
// kept (intermediates are not).
SIM_FN void sim_control_step_backward_world(const SimModel* m, SimWorld* d, int nsub, int lane, int nlane) {
  sim_adj_save_state(m, d, lane, nlane);
  for (int s = 0; s < nsub; s++) {
    int k = d->tape_n[0] - 1;
    if (k < 0) break;
    if (m->integrator == SIM_INT_RK4) sim_adj_substep_rk4(m, d, k, lane, nlane);
    else sim_adj_substep_euler_implicit(m, d, k, lane, nlane);
    sim_adj_tape_pop(d, k, lane);
  }
  sim_adj_restore_state(m, d, lane, nlane);
}

#ifndef __CUDACC__
// ---- CPU backend ----
#include "sim_adjoint.h"

int sim_adjoint_enable(SimModel* m, int ntape) {
  if (ntape < 0) return SIM_ERR_ARG;
  m->adj = 1;
  m->ntape = ntape;
  return SIM_OK;
}

void sim_tape_clear(const SimModel* m, SimData* d) {
  if (!m->adj) return;
  for (int w = 0; w < d->nworld; w++) d->tape_n[w] = 0;
  size_t nw = (size_t)d->nworld;
  for (size_t k = 0; k < nw * m->nbody; k++) d->adj_body_mass[k] = 0;
  for (size_t k = 0; k < nw * 3 * m->nbody; k++) d->adj_body_ipos[k] = 0;
  for (size_t k = 0; k < nw * 3 * m->ngeom; k++) d->adj_geom_friction[k] = 0;
}

int sim_control_step(const SimModel* m, SimData* d, int nsub, int record) {
  if (record) {
    if (!m->adj) return SIM_ERR_ARG;
    for (int w = 0; w < d->nworld; w++)
      if (d->tape_n[w] + nsub > m->ntape) return SIM_ERR_ARG;
  }
  for (int w = 0; w < d->nworld; w++) {
    SimWorld wd;
    sim_world(m, d, w, &wd);
    sim_control_step_world(m, &wd, nsub, record, 0, 1);
  }
  return SIM_OK;
}

int sim_control_step_backward(const SimModel* m, SimData* d, int nsub) {
  if (!m->adj) return SIM_ERR_ARG;
  for (int w = 0; w < d->nworld; w++)
    if (d->tape_n[w] < nsub) return SIM_ERR_ARG;
  for (int w = 0; w < d->nworld; w++) {
    SimWorld wd;
    sim_world(m, d, w, &wd);
    sim_control_step_backward_world(m, &wd, nsub, 0, 1);
  }
  return SIM_OK;
}
#endif
