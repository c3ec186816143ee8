// sim_param_fields.h: X-macro tables of the per-world parameter overrides (sim_params_enable, sim.h), included
// into the tables of sim_model.h. Same row format: X(type, name, count, width); sizes X(name, what).
//
// Off by default: the size `prm` is 0 and SimData holds none of these arrays (nothing is allocated, and every
// stage reads the model's constants as before). Enabled, each world carries its own body masses, COM offsets
// and geom frictions, and every stage that reads one of these reads the world's value (sim_prm_* in
// sim_model.h): kinematics (inertial frames), comPos (subtree_com, cinert), the implicitfast free-body block,
// and the friction of dynamic (non-<pair>) contacts, mixed per world as mj_contactParam (sim_collision.c).
// Derived per world on the host by sim_param_set: the subtree masses, summed as MuJoCo's compiler does (in
// double, children in decreasing id), so a world whose values equal the model's computes bit for bit what the
// engine computes without overrides.
#ifndef ADJ_SIM_PARAM_FIELDS_H
#define ADJ_SIM_PARAM_FIELDS_H

#define SIM_MODEL_SIZES_PARAM \
  X(prm, "1 when SimData carries per-world parameter overrides (sim_params_enable), else 0")

// float32 build: the COM offsets also in double, as the model's geo_body_ipos (sim_math_geo.h: the inertial
// frames are computed in double; SIM_GEO(d, prm_body_ipos) reads geo_prm_body_ipos there), and the masses in
// double as given (the model's from mjModel), which the subtree sums and sim_param_get read: values read back
// and set again reproduce the same subtree masses, bit for bit
#ifdef SIM_DOUBLE
#define SIM_MODEL_FIELDS_PARAM_F64
#define SIM_DATA_FIELDS_PARAM_F64
#else
#define SIM_MODEL_FIELDS_PARAM_F64                                                                 \
  X(double, body_mass_f64, nbody, 1)                /* (nbody) body_mass as compiled (double) */
#define SIM_DATA_FIELDS_PARAM_F64                                                                  \
  X(double, geo_prm_body_ipos, prm, m->nbody * 3)   /* (nbody, 3) COM offsets, double */           \
  X(double, prm_body_mass_f64, prm, m->nbody)       /* (nbody) masses as given, double */
#endif

// MuJoCo stores the mass-matrix rows of a "simple" body (a root or child of a static body, COM at the body
// origin, inertia axes along the body's: its block of M is diagonal) without their off-diagonal entries. A
// COM override makes that block full, so sim_params_enable widens those rows to all ancestors (M_extra marks
// the added entries; zeros while a world's COM offset equals the model's, sim_inertia.c).
#define SIM_MODEL_FIELDS_PARAM                                                                     \
  X(int, M_extra, nM, 1)              /* (nM) 1: entry outside MuJoCo's compiled pattern, else 0 */ \
  SIM_MODEL_FIELDS_PARAM_F64

#define SIM_DATA_FIELDS_PARAM                                                                      \
  X(sim_real, prm_body_mass, prm, m->nbody)         /* (nbody) the world's body masses */          \
  X(sim_real, prm_body_subtreemass, prm, m->nbody)  /* (nbody) derived: subtree sums of the above */ \
  X(sim_real, prm_body_ipos, prm, m->nbody * 3)     /* (nbody, 3) COM offsets in the body frame */ \
  X(sim_real, prm_geom_friction, prm, m->ngeom * 3) /* (ngeom, 3) sliding, torsional, rolling */  \
  SIM_DATA_FIELDS_PARAM_F64

#endif
