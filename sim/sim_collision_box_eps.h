// sim_collision_box_eps.h: the box narrow phase's tolerances for the precision of the instance being
// compiled: float64 (SIM_DOUBLE, or SIMC_GEO_INSTANCE: the float32 build's double instance,
// sim_collision_geo.c) or float32. No include guard: each inclusion redefines them for what follows.
#undef SIMC_BOX_SEPEPS
#undef SIMC_BOX_PAREPS
#undef SIMC_BOX_SGNEPS
#undef SIMC_BOX_DUPEPS
#if defined(SIM_DOUBLE) || defined(SIMC_GEO_INSTANCE)
#define SIMC_BOX_SEPEPS 1e-13  // slack on the separation tests, times the box scale
#define SIMC_BOX_PAREPS 1e-16  // sin^2 below which an edge-cross axis is noise
#define SIMC_BOX_SGNEPS 1e-9   // axis component below which a support corner is ambiguous
#define SIMC_BOX_DUPEPS 1e-14  // squared relative radius for clip-vertex deduplication
#else
#define SIMC_BOX_SEPEPS 1e-6f
#define SIMC_BOX_PAREPS 1e-7f
#define SIMC_BOX_SGNEPS 1e-5f
#define SIMC_BOX_DUPEPS 1e-10f
#endif
