// sim_constraint.h: X-macro tables of the constraint stage (rows, solver state), included into the tables of
// sim_model.h. Same row format: X(type, name, count, width); sizes X(name, what).
#ifndef ADJ_SIM_CONSTRAINT_H
#define ADJ_SIM_CONSTRAINT_H

#define SIM_MODEL_SIZES_CONSTRAINT X(nefcmax, "constraint-row capacity per world")

#define SIM_MODEL_FIELDS_CONSTRAINT

#define SIM_DATA_FIELDS_CONSTRAINT                                                                 \
  X(int, nefc, one, 1)                /* constraint rows this step */                              \
  X(int, nefc_overflow, one, 1)       /* rows dropped for lack of capacity (cumulative) */         \
  X(int, solver_niter, one, 1)

#endif
