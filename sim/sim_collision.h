// sim_collision.h: X-macro tables of the collision stage (candidate pairs, contacts), included into the
// tables of sim_model.h. Same row format: X(type, name, count, width); sizes X(name, what).
#ifndef ADJ_SIM_COLLISION_H
#define ADJ_SIM_COLLISION_H

#define SIM_MODEL_SIZES_COLLISION                                         \
  X(npair, "candidate contact pairs after filtering (model constant)")    \
  X(nconmax, "contact capacity per world")

#define SIM_MODEL_FIELDS_COLLISION                                                                 \
  X(int, pair_geom1, npair, 1)                                                                     \
  X(int, pair_geom2, npair, 1)

#define SIM_DATA_FIELDS_COLLISION                                                                  \
  X(int, ncon, one, 1)                /* contacts this step */                                     \
  X(int, ncon_overflow, one, 1)       /* contacts dropped for lack of capacity (cumulative) */     \
  X(sim_real, contact_dist, nconmax, 1)                                                            \
  X(sim_real, contact_pos, nconmax, 3)                                                             \
  X(sim_real, contact_frame, nconmax, 9) /* rows: normal, tangent1, tangent2 */                    \
  X(int, contact_geom, nconmax, 2)    /* geom ids, g1 -> g2 (normal points from g1 to g2) */        \
  X(int, contact_dim, nconmax, 1)     /* condim (1 or 3) */                                        \
  X(int, contact_exclude, nconmax, 1) /* 0 include; 1 in gap (dist >= margin): no rows */          \
  X(sim_real, contact_friction, nconmax, 5)                                                        \
  X(sim_real, contact_solref, nconmax, 2)                                                          \
  X(sim_real, contact_solreffriction, nconmax, 2)                                                  \
  X(sim_real, contact_solimp, nconmax, 5)                                                          \
  X(sim_real, contact_includemargin, nconmax, 1) /* margin: rows see dist - includemargin */

#endif
