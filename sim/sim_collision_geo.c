// sim_collision_geo.c: the narrow phase at double precision for the float32 build (sim_math_geo.h), as
// simcg_*: sim_collision_primitive.c and sim_collision_box.c compiled a second time with sim_real = double and
// every name they define or call renamed (simc_* -> simcg_*, simu_* -> simg_*); a name left out of the list
// fails to compile as a redefinition. The discrete-decision tapes (SimcCapBoxTape, SimcBoxTape) are not
// renamed: the double instance records into the build's own (float) tapes. Included by sim_collision.c in
// the float32 build only.
#ifdef SIM_DOUBLE
#error "sim_collision_geo.c is the float32 build's double narrow phase"
#endif

#define SIMC_GEO_INSTANCE 1
#define sim_real double
#undef sim_sqrt
#undef sim_fabs
#define sim_sqrt sqrt
#define sim_fabs fabs
// types and functions defined by the narrow-phase files
#define SimPreContact SimPreContactG
#define simc_clip simcg_clip
#define simc_plane_sphere simcg_plane_sphere
#define simc_plane_capsule simcg_plane_capsule
#define simc_plane_box simcg_plane_box
#define simc_sphere_sphere simcg_sphere_sphere
#define simc_sphere_capsule simcg_sphere_capsule
#define simc_capsule_capsule simcg_capsule_capsule
#define simc_sphere_box simcg_sphere_box
#define simc_capsule_box_rec simcg_capsule_box_rec
#define simc_capsule_box simcg_capsule_box
#define simc_clip_half_plane simcg_clip_half_plane
#define simc_box_box_rec simcg_box_box_rec
#define simc_box_box simcg_box_box
// vector helpers they call
#define simu_copy3 simg_copy3
#define simu_zero3 simg_zero3
#define simu_dot3 simg_dot3
#define simu_add3 simg_add3
#define simu_sub3 simg_sub3
#define simu_scl3 simg_scl3
#define simu_addscl3 simg_addscl3
#define simu_cross simg_cross
#define simu_normalize3 simg_normalize3
#define simu_mulMatVec3 simg_mulMatVec3
#define simu_mulMatTVec3 simg_mulMatTVec3

#include "sim_collision_primitive.c"
#include "sim_collision_box.c"

#undef SIMC_GEO_INSTANCE
#include "sim_collision_box_eps.h"  // the float instance's tolerances again
#undef sim_real
#undef sim_sqrt
#undef sim_fabs
#define sim_sqrt sqrtf
#define sim_fabs fabsf
#undef SimPreContact
#undef simc_clip
#undef simc_plane_sphere
#undef simc_plane_capsule
#undef simc_plane_box
#undef simc_sphere_sphere
#undef simc_sphere_capsule
#undef simc_capsule_capsule
#undef simc_sphere_box
#undef simc_capsule_box_rec
#undef simc_capsule_box
#undef simc_clip_half_plane
#undef simc_box_box_rec
#undef simc_box_box
#undef simu_copy3
#undef simu_zero3
#undef simu_dot3
#undef simu_add3
#undef simu_sub3
#undef simu_scl3
#undef simu_addscl3
#undef simu_cross
#undef simu_normalize3
#undef simu_mulMatVec3
#undef simu_mulMatTVec3
