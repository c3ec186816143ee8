// sim_collision.h: X-macro tables of the collision stage (candidate pairs, contacts), included into the
// tables of sim_model.h. Same row format: X(type, name, count, width); sizes X(name, what).
//
// Candidate pairs (model constants, sim_collision_import.c) are every geom pair that MuJoCo 3.12's
// broadphase + filters can ever hand to the narrow phase, in the order in which mj_collision would emit
// their contacts (dynamic pairs by body-pair signature, explicit <pair>s first within a signature, mid-phase
// body pairs sorted like contactSort, remaining explicit pairs at the end). Geoms are stored swapped so that
// type(pair_geom1) <= type(pair_geom2), as MuJoCo's dispatch does; contact_geom keeps that order.
//
// Narrow phase (sim_collision.c): each lane evaluates its pairs into a per-pair slot window
// [pair_conadr, pair_conadr + pair_maxcon) of col_slot; a compaction then writes contact_* in pair order.
#ifndef ADJ_SIM_COLLISION_H
#define ADJ_SIM_COLLISION_H

#define SIM_MODEL_SIZES_COLLISION                                                   \
  X(npair, "candidate contact pairs after filtering (model constant)")              \
  X(nconslot, "narrow-phase slots: sum over pairs of the pair type's max contacts") \
  X(nconmax, "contact capacity per world (nconslot unless overridden)")

// contact parameters of each pair are mixed at import (mj_contactParam / explicit pair values) and the
// friction clamped to >= mjMINMU (mj_assignFriction)
#define SIM_MODEL_FIELDS_COLLISION                                                                 \
  X(int, pair_geom1, npair, 1)        /* type(geom1) <= type(geom2); normal points geom1 -> geom2 */ \
  X(int, pair_geom2, npair, 1)                                                                     \
  X(int, pair_ipair, npair, 1)        /* mjModel explicit <pair> id, -1: dynamic pair */           \
  X(int, pair_conadr, npair, 1)       /* first slot in col_slot */                                 \
  X(int, pair_maxcon, npair, 1)       /* slots of this pair (max contacts of its type) */          \
  X(int, pair_dim, npair, 1)          /* condim */                                                 \
  X(sim_real, pair_friction, npair, 5)                                                             \
  X(sim_real, pair_solref, npair, 2)                                                               \
  X(sim_real, pair_solreffriction, npair, 2) /* 0,0 unless an explicit pair sets it */             \
  X(sim_real, pair_solimp, npair, 5)                                                               \
  X(sim_real, pair_margin, npair, 1)  /* force margin (includemargin) */                          \
  X(sim_real, pair_gap, npair, 1)     /* detection at dist <= margin + gap */

// contact_witness: which discrete branch produced the contact (frozen when differentiating):
//   plane-sphere 0 | plane-capsule 0: +axis end, 1: -axis end | plane-box: corner bits (x 1, y 2, z 4)
//   sphere-sphere 0, 1: coincident centres (normal from z1 x z2)
//   sphere-capsule 10*clamp + ss  (clamp 0 interior, 1 at +halflen, 2 at -halflen; ss sphere-sphere code)
//   capsule-capsule 10*(3*c1 + c2) + ss (c: 0 free, 1 clamped +1, 2 clamped -1); parallel: 100 + 10*k + ss,
//       k = 0..3 the end tried (x1=+1, x1=-1, x2=+1, x2=-1)
//   sphere-box: outside 1 + (3^0 a0 + 3^1 a1 + 3^2 a2) with a = 0 free, 1 clamped -, 2 clamped +;
//       centre inside 100 + face k (order -x, +x, -y, +y, -z, +z)
//   capsule-box: sphere-box code + 1000*(cltype + 4) + 100000*(second point)
//   box-box: face: 100*code + accepted vertex index (code 0..5 winning face axis);
//       edge: 1000 + 4*(code - 6) + 2*v1 + v2 (edge pair i*3+j, ambiguous sign choices)
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
  X(sim_real, contact_includemargin, nconmax, 1) /* margin: rows see dist - includemargin */       \
  X(int, contact_pair, nconmax, 1)    /* candidate pair id */                                      \
  X(int, contact_witness, nconmax, 1) /* discrete branch code, see above */                        \
  /* narrow-phase scratch */                                                                       \
  X(sim_real, col_slot, nconslot, 10) /* per slot: dist, pos[3], normal[3], tangent[3] */          \
  X(int, col_slot_witness, nconslot, 1)                                                            \
  X(int, col_pair_ncon, npair, 1)     /* contacts found per pair */                                \
  X(int, col_pair_adr, npair, 1)      /* first contact of each pair after compaction */

// The contact capacity nconmax is derived as nconslot or set by the load option (sim_model_import_caps).
// Contacts beyond nconmax are dropped (the later pairs) and counted in ncon_overflow.

#endif
