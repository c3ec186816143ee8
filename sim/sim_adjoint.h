// sim_adjoint.h: reverse-mode gradients of control steps (one precision; names mangled as sim.h's).
//
// Usage (CPU; the CUDA backend mirrors it):
//   sim_adjoint_enable(m, T * nsub);          // before sim_data_create: sizes the tape and cotangents
//   sim_data_create(m, nworld, &d);            // without enable, SimData holds no gradient memory
//   for t < T: set d->ctrl; sim_control_step(m, d, nsub, 1);         // records each substep's input
//   set d->adj_qpos (nv, tangent of mj_differentiatePos), d->adj_qvel = dL/d(final state)
//   for t = T-1..0: sim_control_step_backward(m, d, nsub);   // adj_qpos/adj_qvel <- input cotangents,
//                     read d->adj_ctrl (dL/dctrl_t); add per-step loss cotangents to adj_qpos/adj_qvel
// The tape holds each substep's inputs and, for Euler / implicitfast, what its forward decided and converged
// to (the contact list, each row's J qacc - aref at the solver's last update, qacc, qfrc_constraint); the
// backward recomputes only the smooth parts from it (kinematics, inertia and factor, velocities, forces, rows
// of the taped contacts), never the broadphase, narrow phase or Newton iterations, and gets the forward's
// intermediates bit for bit. RK4 recomputes each substep's four evaluations from its inputs. The backward
// keeps the world's state (not its intermediates). Not on the tape: qfrc_applied (held at its current value)
// and time. Constraint rows (contacts, joint/tendon limits, friction loss) are differentiated at the solver's
// fixed point with the discrete decisions of each evaluation frozen (contact set and branches, row states,
// clamps): they come from the tape, so the backward sees the decisions the forward took
// (sim_adjoint_constraint.c). The gradient is that of the converged solution: with the model's own
// tolerance it is exact to the solver's residual. d->adj_nconstraint counts evaluations that had rows.
// Parameter cotangents (adj_body_mass (nbody), adj_body_ipos (nbody, 3), adj_geom_friction (ngeom, 3)), per
// world: dL/d(the world's value) when per-world overrides are on (sim_params_enable, sim.h), else dL/d(the
// model's value) in each world. Zeroed by sim_tape_clear, accumulated over every backward pass after it (a
// rollout's backward sums its steps). Exact for the forward's semantics (sim.h): masses through subtree masses,
// subtree_com, cinert, M, the bias forces and the implicitfast free-body block; COM offsets through the inertial
// frames (the geoms stay put); friction through each pyramid edge's Jacobian and the pyramid rule's R, summed
// into the geom that supplied it (the higher priority, else the larger: a tie goes to the contact's first geom,
// the one MuJoCo's mju_max returns). Not through body_invweight0 / dof_invweight0 (model constants, as in
// MuJoCo without mj_setConst). Only the sliding component (0) of geom friction is nonzero (condim 1 or 3).
// With overrides off, the COM cotangent of a body MuJoCo compiled as simple (mass-matrix block stored diagonal)
// lacks the coupling a COM offset adds to that block: enable overrides to differentiate those offsets.
#ifndef ADJ_SIM_ADJOINT_H
#define ADJ_SIM_ADJOINT_H

#include "sim_common.h"
#include "sim_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define sim_adjoint_enable SIM_SFX(sim_adjoint_enable)
#define sim_tape_clear SIM_SFX(sim_tape_clear)
#define sim_control_step SIM_SFX(sim_control_step)
#define sim_control_step_backward SIM_SFX(sim_control_step_backward)

// Enables gradients for SimData created from m afterwards: cotangent buffers and a tape of ntape substeps.
int sim_adjoint_enable(SimModel* m, int ntape);
// Empties every world's tape.
void sim_tape_clear(const SimModel* m, SimData* d);
// nsub physics substeps (sim_step) per world; record: push each substep's input on the tape
// (SIM_ERR_ARG if gradients are not enabled or the tape would overflow; nothing is run then).
int sim_control_step(const SimModel* m, SimData* d, int nsub, int record);
// Pops nsub substeps: maps adj_qpos/adj_qvel (cotangents of the step's output) to those of its input and
// writes adj_ctrl (cotangent of the step's ctrl). SIM_ERR_ARG if fewer than nsub substeps are recorded.
int sim_control_step_backward(const SimModel* m, SimData* d, int nsub);

#ifdef __cplusplus
}
#endif

#endif
