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

// Builds a SimModel from a compiled mjModel (refuses unsupported models with the sim_check_model message).
int sim_model_import(const void* mjmodel, SimModel** out, char* err, size_t errlen);
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

// Fills every intermediate (non-state) field with NaN: a stage that fails to write an element shows.
void sim_poison(const SimModel* m, SimData* d);

#ifdef __cplusplus
}
#endif

#endif
