// sim.h: the engine's public API for one precision (float64 when SIM_DOUBLE is defined, else float32).
// Names are mangled by precision (sim_forward -> sim_forward_f64 / _f32; see sim_port.h), so one program can
// link both CPU engines. Include this header in a translation unit built for one precision.
#ifndef ADJ_SIM_H
#define ADJ_SIM_H

#include "sim_common.h"
#include "sim_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define sim_model_import SIM_SFX(sim_model_import)
#define sim_model_import_caps SIM_SFX(sim_model_import_caps)
#define sim_model_free SIM_SFX(sim_model_free)
#define sim_data_create SIM_SFX(sim_data_create)
#define sim_data_free SIM_SFX(sim_data_free)
#define sim_reset SIM_SFX(sim_reset)
#define sim_forward SIM_SFX(sim_forward)
#define sim_step SIM_SFX(sim_step)
#define sim_run_stage SIM_SFX(sim_run_stage)
#define sim_poison SIM_SFX(sim_poison)
#define sim_collision_sizes SIM_SFX(sim_collision_sizes)
#define sim_collision_fill SIM_SFX(sim_collision_fill)
#define sim_constraint_sizes SIM_SFX(sim_constraint_sizes)
#define sim_constraint_fill SIM_SFX(sim_constraint_fill)
#define sim_params_enable SIM_SFX(sim_params_enable)
#define sim_param_size SIM_SFX(sim_param_size)
#define sim_param_set SIM_SFX(sim_param_set)
#define sim_param_get SIM_SFX(sim_param_get)
#define sim_param_reset SIM_SFX(sim_param_reset)
#define sim_model_full_mass_pattern SIM_SFX(sim_model_full_mass_pattern)

// Builds a SimModel from a compiled mjModel (refuses unsupported models with the sim_check_model message).
int sim_model_import(const void* mjmodel, SimModel** out, char* err, size_t errlen);
// The same with per-world capacities (SimLoadOptions.nconmax / nefcmax; 0: derived from the model). A
// nconmax alone also bounds the derived row capacity (four rows per contact plus the limits' rows).
int sim_model_import_caps(const void* mjmodel, int nconmax, int nefcmax, SimModel** out, char* err, size_t errlen);
void sim_model_free(SimModel* m);

// SimData for nworld worlds (host memory), reset to qpos0.
int sim_data_create(const SimModel* m, int nworld, SimData** out);
void sim_data_free(SimData* d);

// Resets world w (all worlds if w < 0) to keyframe `key` (qpos0 and zero velocity if key < 0).
void sim_reset(const SimModel* m, SimData* d, int w, int key);

// Runs one pipeline stage (SIM_STAGE_*, sim_model.h) for every world (tests compare stage by stage).
void sim_run_stage(const SimModel* m, SimData* d, int stage);

// Full forward dynamics (qacc at the current state) and one physics step, for every world.
void sim_forward(const SimModel* m, SimData* d);
void sim_step(const SimModel* m, SimData* d);

// Import hooks of the collision and constraint stages (sim_*_import.c): sizes before allocation, arrays after.
void sim_collision_sizes(const void* mjmodel, SimModel* m);
void sim_collision_fill(const void* mjmodel, SimModel* m);
void sim_constraint_sizes(const void* mjmodel, SimModel* m);
void sim_constraint_fill(const void* mjmodel, SimModel* m);
// Internal (sim_params_enable): M's pattern with every ancestor, MuJoCo's simple-body rows widened (M_extra).
int sim_model_full_mass_pattern(SimModel* m);

// Fills every intermediate (non-state) field with NaN: a stage that fails to write an element shows.
void sim_poison(const SimModel* m, SimData* d);

// ---- per-world parameter overrides (sim_param_fields.h) ----
// Tasks randomize body masses, COM offsets and geom frictions per world; the gradient (sim_adjoint.h) returns
// their cotangents per world. Off by default: SimData then holds no override arrays and the engine runs
// exactly as before. sim_params_enable (before sim_data_create) gives every world its own copy, initialized
// to the model's values; each forward stage then reads the world's: inertial frames, subtree masses and
// subtree_com, cinert, the implicitfast free-body block, and the friction of dynamic contacts (mixed per world
// as MuJoCo's mj_contactParam: the higher-priority geom's, else the larger; explicit <pair>s keep their own).
// Model constants, as in MuJoCo when mjModel fields are edited without mj_setConst: body_invweight0 and
// dof_invweight0 (the constraint rows' regularisation scale), meaninertia, body_inertia, jnt_freebody (which
// free joints take the implicitfast 6x6 block). The subtree masses are derived (a mass change moves the
// subtree's COM), and a COM offset moves the mass only: geoms stay where they are on their body. Unlike an
// edited mjModel, a COM offset also couples the dofs of a body MuJoCo compiled as "simple" (its mass-matrix
// rows stored diagonal): sim_params_enable widens those rows (sim_param_fields.h); the extra entries stay 0
// while a world's offset is the model's, so such worlds give the bits of overrides off.
enum { SIM_PARAM_BODY_MASS = 0, SIM_PARAM_BODY_IPOS = 1, SIM_PARAM_GEOM_FRICTION = 2 };
// Before sim_data_create (it sizes SimData; the model's mass-matrix arrays may be re-laid out). SIM_ERR_ARG on
// a device copy, SIM_ERR_ALLOC.
int sim_params_enable(SimModel* m);
// Values per world of a parameter: nbody (mass), 3*nbody (ipos), 3*ngeom (friction); SIM_ERR_ARG if unknown.
int sim_param_size(const SimModel* m, int param);
// World w's values (all worlds if w < 0), from `values` (sim_param_size doubles; float32 build: rounded, ipos
// kept in double too). SIM_ERR_ARG when overrides are off, w or param is out of range, or a value is not
// finite, a mass or friction is negative, or the world body (0) gets a mass or offset other than 0.
int sim_param_set(const SimModel* m, SimData* d, int w, int param, const double* values);
// World w's values as stored (the model's when overrides are off; d and w are then ignored).
int sim_param_get(const SimModel* m, const SimData* d, int w, int param, double* values);
// World w's overrides (all if w < 0) back to the model's values.
int sim_param_reset(const SimModel* m, SimData* d, int w);

#ifdef __cplusplus
}
#endif

#endif
