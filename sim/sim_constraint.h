// sim_constraint.h: X-macro tables of the constraint stage (rows, islands, Newton solver state), included
// into the tables of sim_model.h. Same row format: X(type, name, count, width); sizes X(name, what).
//
// Rows follow MuJoCo's mj_makeConstraint order: friction loss (dofs, then tendons), limits (joints, then
// tendons; hinge/slide lower then upper; ball cone), contacts in contact order (condim 1: one row; condim 3:
// four pyramid edges). The Jacobian is dense: efc_J row r is (nv) at efc_J + r*nv.
#ifndef ADJ_SIM_CONSTRAINT_H
#define ADJ_SIM_CONSTRAINT_H

// Row stride of sol_L (the Newton factor, island-local n x n): n rounded up to a multiple of 4 that is not one of 8.
// A row then starts 16-byte aligned, so the warp's factor reads four entries of a row per load, and eight lanes
// reading eight consecutive rows four entries each touch 32 different shared-memory banks.
#define SIM_SOL_LD(n) ((((n) + 3) & ~3) | 4)
// entry (i, j), j <= i, of a packed lower triangle (row i starts at i (i + 1) / 2): the island Hessian sol_H
#define SIM_TRI(i, j) ((i) * ((i) + 1) / 2 + (j))
// The island Hessian's factor runs in reverse island order: position p holds island entry n - 1 - p (and the
// reverse). The free joint's dofs, which every contact row touches, then come last, and a refactor after rows
// change state starts at the first position a changed row touches instead of at 0 (bench/RESULTS.md, 716835b)
#define SIM_POS(n, p) ((n) - 1 - (p))
// efc_Jmask holds each row's non-zero dofs (set where the row is filled) in models of at most 64 dofs
#define SIM_JMASK(m) ((m)->nv <= 64)

// efc_type values (= mjtConstraint; equality and elliptic rows are not produced)
enum {
  SIM_CNSTR_FRICTION_DOF = 1, SIM_CNSTR_FRICTION_TENDON = 2, SIM_CNSTR_LIMIT_JOINT = 3,
  SIM_CNSTR_LIMIT_TENDON = 4, SIM_CNSTR_CONTACT_FRICTIONLESS = 5, SIM_CNSTR_CONTACT_PYRAMIDAL = 6
};
// efc_state values (= mjtConstraintState)
enum { SIM_CSTATE_SATISFIED = 0, SIM_CSTATE_QUADRATIC = 1, SIM_CSTATE_LINEARNEG = 2, SIM_CSTATE_LINEARPOS = 3 };

#define SIM_MODEL_SIZES_CONSTRAINT                                                         \
  X(nefcmax, "constraint-row capacity per world")                                          \
  X(ntree, "kinematic trees (bodies with dofs below the world; islands are unions of these)")

#define SIM_MODEL_FIELDS_CONSTRAINT                                                                \
  X(sim_real, dof_solref, nv, 2)      /* friction-loss rows of each dof */                         \
  X(sim_real, dof_solimp, nv, 5)                                                                   \
  X(sim_real, tendon_solref_fri, ntendon, 2) /* friction-loss rows of each tendon */               \
  X(sim_real, tendon_solimp_fri, ntendon, 5)                                                       \
  X(int, dof_treeid, nv, 1)           /* tree of each dof */                                       \
  X(int, body_treeid, nbody, 1)       /* tree of each body, -1: static (welded to the world) */    \
  X(int, tree_dofnum, ntree, 1)

#define SIM_DATA_FIELDS_CONSTRAINT                                                                 \
  X(int, nefc, one, 1)                /* constraint rows this step */                              \
  X(int, nf, one, 1)                  /* friction-loss rows (the first nf rows) */                 \
  X(int, nefc_overflow, one, 1)       /* rows dropped for lack of capacity (cumulative) */         \
  X(int, solver_niter, one, 1)        /* Newton iterations, summed over islands */                 \
  X(int, solver_nls, one, 1)          /* line-search cost evaluations, summed (benchmark counter) */ \
  X(int, efc_type, nefcmax, 1)        /* SIM_CNSTR_* */                                            \
  X(int, efc_id, nefcmax, 1)          /* dof, tendon, joint or contact index */                    \
  X(sim_real, efc_J, nefcmax, m->nv)  /* dense Jacobian rows */                                    \
  X(int, efc_Jmask, nefcmax, 2)      /* dofs 0-31 and 32-63 where the row is non-zero (SIM_JMASK) */ \
  X(sim_real, efc_pos, nefcmax, 1)    /* distance (limit, contact), 0 for friction loss */         \
  X(sim_real, efc_margin, nefcmax, 1)                                                              \
  X(sim_real, efc_frictionloss, nefcmax, 1)                                                        \
  X(sim_real, efc_diagA, nefcmax, 1)  /* approximate J M^-1 J' diagonal, adjusted (MuJoCo's) */    \
  X(sim_real, efc_R, nefcmax, 1)      /* regularizer */                                            \
  X(sim_real, efc_D, nefcmax, 1)      /* 1/R */                                                    \
  X(sim_real, efc_KBIP, nefcmax, 4)   /* stiffness, damping, impedance, d impedance / d pos */     \
  X(sim_real, efc_vel, nefcmax, 1)    /* J qvel */                                                 \
  X(sim_real, efc_aref, nefcmax, 1)   /* reference acceleration */                                 \
  X(sim_real, efc_force, nefcmax, 1)                                                               \
  X(int, efc_state, nefcmax, 1)       /* SIM_CSTATE_* */                                           \
  X(int, efc_oldstate, nefcmax, 1)    /* solver scratch: state before the step */                  \
  X(sim_real, efc_Jaref, nefcmax, 1)  /* solver: J qacc - aref */                                  \
  X(sim_real, efc_Jv, nefcmax, 1)     /* solver: J search */                                       \
  X(sim_real, efc_quad, nefcmax, 3)   /* solver: per-row quadratic of the line search */           \
  X(sim_real, efc_cost, nefcmax, 1)   /* solver: per-row cost (summed in row order by every lane) */ \
  /* islands (mj_island): trees joined by rows; dofs and rows gathered per island, ascending */   \
  X(int, nisland, one, 1)                                                                          \
  X(int, tree_island, ntree, 1)       /* scratch: union-find parent, then island (-1: none) */     \
  X(int, island_nv, ntree, 1)                                                                      \
  X(int, island_idofadr, ntree, 1)                                                                 \
  X(int, island_nefc, ntree, 1)                                                                    \
  X(int, island_iefcadr, ntree, 1)                                                                 \
  X(int, efc_island, nefcmax, 1)                                                                   \
  X(int, map_iefc2efc, nefcmax, 1)                                                                 \
  X(int, map_idof2dof, nv, 1)         /* island dofs first, then unconstrained dofs */             \
  X(int, map_dof2idof, nv, 1)                                                                      \
  /* Newton solver vectors (dof space; an island solve touches its own dofs only) */             \
  X(sim_real, sol_Ma, nv, 1)                                                                       \
  X(sim_real, sol_Mv, nv, 1)                                                                       \
  X(sim_real, sol_grad, nv, 1)                                                                     \
  X(sim_real, sol_Mgrad, nv, 1)                                                                    \
  X(sim_real, sol_search, nv, 1)                                                                   \
  X(sim_real, sol_H, nv, (m->nv + 2) / 2) /* island Hessian M + J' D J (packed lower triangle, SIM_TRI) */ \
  X(sim_real, sol_L, nv, SIM_SOL_LD(m->nv)) /* factor of sol_H (lower; its transpose above; 1 / L(k, k) on the diagonal), stride SIM_SOL_LD */ \
  X(int, sol_chg, nefcmax, 1)         /* rows whose quadratic state changed in the last step */    \
  X(int, sol_qrow, nefcmax, 1)        /* the island's rows in the quadratic state (Hessian builds) */ \
  X(int, sol_tdof, nv, 1)             /* island dofs touched by the rows of a Hessian build */      \
  X(int, sol_flag, one, 3)            /* lane 0 -> all lanes: number of changed, of quadratic rows, touched dofs */

#endif
