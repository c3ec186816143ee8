// sim_adjoint_fields.h: X-macro tables of the reverse-mode gradient (tape and cotangent buffers), included
// into the tables of sim_model.h. Same row format: X(type, name, count, width); sizes X(name, what).
//
// Both sizes are 0 unless sim_adjoint_enable() set them before sim_data_create: a forward-only SimData then
// holds no gradient memory at all. The tape stores, per world, ntape entries of each physics substep's inputs
// (qpos, qvel, ctrl, warmstart, flags) and of what its forward decided and converged to (the contact list as
// the narrow phase left it, the solver's J qacc - aref per row, qacc, qfrc_constraint, the factors of M and of
// the integrator's matrix with its acceleration, and the outputs of the geometry stages): the backward recomputes
// the smooth forces from these, never the kinematics, com, tendon lengths, CRB, broadphase, narrow phase,
// Newton iterations or the factor of M. The Newton Hessian's factor at the converged rows is taped too where the
// solve covered all dofs and rows in order (one tree, or islands off): the backward's Hessian is then the same
// matrix, and its factor the same bits. Bytes per world and substep: sizeof(sim_real) (nq + 13 nv
// + nv (nv + 1) / 2 + 2 nu + 10 nconmax + nefcmax + 3 nM + 47 nbody + 6 njnt + 12 ngeom + ntendon)
// + 4 (nu + 2 + 2 nconmax).
// Cotangent buffers (adj_*) hold the cotangent of the forward field of the same name at the state being
// differentiated; adj_qpos is in the nv-dimensional tangent space of mj_integratePos/mj_differentiatePos.
#ifndef ADJ_SIM_ADJOINT_FIELDS_H
#define ADJ_SIM_ADJOINT_FIELDS_H

// per-row width of adj_efc (sim_adjoint_constraint.c)
#define SIM_ADJ_EFC 5

// per-actuator discrete decisions recorded on the tape (tape_flags), frozen in the backward pass
enum { SIM_ADJ_CTRL_CLAMPED = 1, SIM_ADJ_FORCE_CLAMPED = 2, SIM_ADJ_CTRL_BAD = 4 };

// The outputs of the geometry stages (sim_forward_geometry) that a later stage or the backward reads, as
// G(field, count) in their order on the tape (tape_geometry). Not taped: xquat, read by kinematics alone, and the
// float32 build's double frames (geo_*), read by kinematics and the narrow phase, which the replay skips.
#define SIM_ADJ_GEOMETRY(G, m)                                                                      \
  G(xpos, 3 * (m)->nbody) G(xmat, 9 * (m)->nbody) G(xipos, 3 * (m)->nbody) G(ximat, 9 * (m)->nbody)  \
  G(xanchor, 3 * (m)->njnt) G(xaxis, 3 * (m)->njnt) G(geom_xpos, 3 * (m)->ngeom)                     \
  G(geom_xmat, 9 * (m)->ngeom) G(subtree_com, 3 * (m)->nbody) G(cinert, 10 * (m)->nbody)              \
  G(cdof, 6 * (m)->nv) G(ten_length, (m)->ntendon) G(actuator_length, (m)->nu) G(crb, 10 * (m)->nbody) \
  G(M, (m)->nM)
#define SIM_ADJ_GEOMETRY_COUNT(name, n) +(n)
#define SIM_ADJ_NGEOMETRY(m) (0 SIM_ADJ_GEOMETRY(SIM_ADJ_GEOMETRY_COUNT, m))

#define SIM_MODEL_SIZES_ADJOINT                                                          \
  X(adj, "1 when SimData carries gradient buffers (sim_adjoint_enable), else 0")          \
  X(ntape, "tape capacity in physics substeps per world (0: no tape)")

#define SIM_DATA_FIELDS_ADJOINT                                                                    \
  /* tape: inputs of each recorded substep, oldest first */                                       \
  X(int, tape_n, adj, 1)                /* substeps recorded (tape cursor) */                      \
  X(int, tape_k, adj, 1)                /* the entry of the substep in progress (-1: none) */      \
  X(int, adj_nconstraint, adj, 1)       /* evaluations differentiated through constraint rows */     \
  X(int, tape_hnow, adj, 1)             /* 1: the last solve put its final factor on its tape entry */ \
  X(sim_real, tape_qpos, ntape, m->nq)                                                             \
  X(sim_real, tape_qvel, ntape, m->nv)                                                             \
  X(sim_real, tape_ctrl, ntape, m->nu)                                                             \
  X(sim_real, tape_warm, ntape, m->nv)  /* qacc_warmstart (state of the solver, not differentiated) */ \
  X(int, tape_flags, ntape, m->nu)      /* SIM_ADJ_* bits per actuator */                          \
  /* what the forward decided and converged to (Euler / implicitfast; sim_adjoint.c) */            \
  X(int, tape_ncon, ntape, 1)           /* contacts */                                             \
  X(sim_real, tape_con, ntape, m->nconmax * 10) /* per contact its narrow-phase slot (col_slot) */ \
  X(int, tape_con_id, ntape, m->nconmax * 2)    /* per contact: pair, witness */                   \
  X(sim_real, tape_jaref, ntape, m->nefcmax)    /* efc_Jaref at the solver's last update */        \
  X(sim_real, tape_qacc, ntape, m->nv)  /* converged qacc */                                       \
  X(sim_real, tape_qfrc_con, ntape, m->nv) /* qfrc_constraint at it */                             \
  X(int, tape_hok, ntape, 1)            /* 1: tape_hfac holds the Newton Hessian's final factor */   \
  X(sim_real, tape_hfac, ntape, m->nv * (m->nv + 1) / 2) /* its lower triangle, 1 / L(k, k) on the diagonal, packed */ \
  X(sim_real, tape_factor, ntape, 2 * m->nM + 3 * m->nv) /* qLD, qLDiagInv, qH, qHDiagInv, qacc_int */ \
  X(sim_real, tape_geometry, ntape, SIM_ADJ_NGEOMETRY(m)) /* SIM_ADJ_GEOMETRY, after the position stage */ \
  /* cotangents of the step's state: in = outputs', out = inputs' (qpos: tangent space, nv) */     \
  X(sim_real, adj_qpos, adj, m->nv)                                                                \
  X(sim_real, adj_qvel, adj, m->nv)                                                                \
  X(sim_real, adj_ctrl, adj, m->nu)     /* d loss / d ctrl of the control step(s) popped */         \
  /* saved state across a backward pass (it recomputes in place) */                               \
  X(sim_real, adj_save_qpos, adj, m->nq)                                                           \
  X(sim_real, adj_save_qvel, adj, m->nv)                                                           \
  X(sim_real, adj_save_ctrl, adj, m->nu)                                                           \
  X(sim_real, adj_save_warm, adj, m->nv)                                                           \
  X(sim_real, adj_save_time, adj, 1)                                                               \
  /* cotangents at one evaluation of the smooth dynamics */                                        \
  X(sim_real, adj_dq, adj, m->nv)       /* qpos (tangent) cotangent collected by the smooth backward */ \
  X(sim_real, adj_dv, adj, m->nv)       /* qvel cotangent collected by the smooth backward */      \
  X(sim_real, adj_du, adj, m->nu)       /* ctrl cotangent collected by the smooth backward */      \
  X(int, adj_flags, adj, m->nu)         /* SIM_ADJ_* of the evaluation being differentiated */     \
  X(sim_real, adj_xpos, adj, m->nbody * 3)                                                         \
  X(sim_real, adj_xmat, adj, m->nbody * 9)                                                         \
  X(sim_real, adj_xipos, adj, m->nbody * 3)                                                        \
  X(sim_real, adj_ximat, adj, m->nbody * 9)                                                        \
  X(sim_real, adj_xanchor, adj, m->njnt * 3)                                                       \
  X(sim_real, adj_xaxis, adj, m->njnt * 3)                                                         \
  X(sim_real, adj_geom_xpos, adj, m->ngeom * 3) /* filled by the contact geometry adjoint */       \
  X(sim_real, adj_geom_xmat, adj, m->ngeom * 9)                                                    \
  X(sim_real, adj_subtree_com, adj, m->nbody * 3)                                                  \
  X(sim_real, adj_cinert, adj, m->nbody * 10)                                                      \
  X(sim_real, adj_cdof, adj, m->nv * 6)                                                            \
  X(sim_real, adj_crb, adj, m->nbody * 10)                                                         \
  X(sim_real, adj_M, adj, m->nM)        /* cotangent of the stored lower-CSR entries of M */        \
  X(sim_real, adj_ten_length, adj, m->ntendon)                                                     \
  X(sim_real, adj_actuator_length, adj, m->nu)                                                     \
  X(sim_real, adj_ten_velocity, adj, m->ntendon)                                                   \
  X(sim_real, adj_actuator_velocity, adj, m->nu)                                                   \
  X(sim_real, adj_cvel, adj, m->nbody * 6)                                                         \
  X(sim_real, adj_cdof_dot, adj, m->nv * 6)                                                        \
  X(sim_real, adj_cacc, adj, m->nbody * 6)                                                         \
  X(sim_real, adj_cfrc, adj, m->nbody * 6)                                                         \
  X(sim_real, adj_wrench, adj, m->nbody * 6) /* kinematics: subtree wrench about subtree_com[root] */ \
  X(sim_real, adj_buf6, adj, m->nv * 12)    /* crb: buf = crb cdof and its cotangent; comVel: cvel-bar per dof */ \
  X(sim_real, adj_cvelpre, adj, m->nv * 6)   /* comVel: cvel seen by each dof's cdof_dot (recomputed) */ \
  X(sim_real, adj_qfrc_smooth, adj, m->nv)   /* tau-bar = lambda: where the solver adjoint delivers */ \
  X(sim_real, adj_qacc, adj, m->nv)          /* a-bar: cotangent of the solver's qacc */            \
  X(sim_real, adj_qacc_int, adj, m->nv)      /* cotangent of the integrator's acceleration */       \
  X(sim_real, adj_y, adj, m->nv)             /* integrator adjoint y = Q^-T adj_qacc_int */         \
  X(sim_real, adj_vnew, adj, m->nv)          /* scratch: velocity used by the position update */    \
  X(sim_real, adj_tmp, adj, m->nv)           /* scratch */                                          \
  X(sim_real, adj_rk_v, adj, m->nv * 4)      /* RK4: cotangents of the stage velocities */          \
  X(sim_real, adj_rk_a, adj, m->nv * 4)      /* RK4: cotangents of the stage accelerations */       \
  X(sim_real, adj_rk_dq, adj, m->nv)         /* RK4: accumulated qpos cotangent of the step input */ \
  X(sim_real, adj_rk_dv, adj, m->nv)         /* RK4: accumulated qvel cotangent of the step input */ \
  /* solver adjoint scratch (sim_adjoint_constraint.c) */                                          \
  X(sim_real, adj_efc, adj, m->nefcmax * SIM_ADJ_EFC) /* per row: J-bar coefficients of [0] lambda, */ \
                                             /* [1] qacc, [2] qvel; [3] pos-bar; [4] R-bar */          \
  X(sim_real, adj_con, adj, m->nconmax * 46) /* per contact: geometry, root com cotangents, chain */    \
                                             /* sums, friction cotangent, offsets from the roots */   \
  X(int, adj_map, adj, m->nv + m->nefcmax + 6 * m->nconmax) /* identity dof/row lists; per contact: first */ \
                                             /* row, each side's last dof and root, friction geom */ \
  /* parameter cotangents of the world's values (sim_param_fields.h; the model's when overrides are off), */ \
  /* accumulated over the backward pass, zeroed by sim_tape_clear */                                        \
  X(sim_real, adj_body_mass, adj, m->nbody)                                                        \
  X(sim_real, adj_body_ipos, adj, m->nbody * 3)                                                    \
  X(sim_real, adj_geom_friction, adj, m->ngeom * 3)

#endif
