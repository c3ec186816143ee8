// sim_common.h: precision-independent part of the sim API: error codes, load options, the asset search
// path and model checks. Everything here is host code.
#ifndef ADJ_SIM_COMMON_H
#define ADJ_SIM_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// error codes (negative); 0 is success
enum {
  SIM_OK = 0,
  SIM_ERR_IO = -1,           // file not found or unreadable
  SIM_ERR_MJCF = -2,         // MuJoCo's compiler rejected the model
  SIM_ERR_UNSUPPORTED = -3,  // the model uses elements this engine does not implement
  SIM_ERR_ALLOC = -4,
  SIM_ERR_CUDA = -5,
  SIM_ERR_ARG = -6
};

// option overrides applied to the compiled model before import; negative / empty means "keep the model's"
typedef struct SimLoadOptions {
  int integrator;          // SIM_INT_* or -1
  double timestep;         // > 0 to override
  int iterations;          // >= 0 to override
  int ls_iterations;       // >= 0 to override
  double tolerance;        // >= 0 to override
  int disable_add;         // disable flags to set (e.g. SIM_DSBL_CONTACT)
  int enable_add;          // enable flags to set
  double gear_scale;       // > 0 to multiply every actuator's gear (a task's strength parameter); else keep
  // per-world capacities (> 0; else derived from the model: every contact slot of every pair, and the rows
  // they and the limits can need), read by sim_model_import_caps. A world that finds more contacts or rows
  // keeps the first ones and counts the rest in its overflow counters
  int nconmax, nefcmax;
} SimLoadOptions;

void sim_load_options_default(SimLoadOptions* o);

// Resolves `name` through the asset search path: the name itself if it exists, then $ADJOINT_ASSETS,
// ./assets, ../shared/assets (each joined with name). Returns 0 and writes the path, or SIM_ERR_IO.
int sim_find_asset(const char* name, char* path, size_t pathlen);

// Loads an MJCF file with MuJoCo's compiler and applies the overrides. *out is an mjModel* (void* here so
// that this header does not need MuJoCo's). Returns 0 or an error code with a message in err.
int sim_load_mjcf(const char* path, const SimLoadOptions* opt, void** out, char* err, size_t errlen);
void sim_free_mjmodel(void* mjmodel);

// Lists every element the engine does not implement, one per line ("geom 'name' (cylinder): ...").
// Returns the number of offending elements (0: supported). msg may be NULL.
int sim_check_model(const void* mjmodel, char* msg, size_t msglen);

// Whether the model, as configured, needs the constraint stage (limits, contacts, friction loss, ...).
int sim_model_has_constraints(const void* mjmodel);

#ifdef __cplusplus
}
#endif

#endif
