// sim_math_geo.h: the geometry's precision (see sim_port.h): sim_geo (double) helpers for kinematics and the
// narrow phase, and SIM_GEO(s, name), the double view of a model constant or a frame.
//
// The float64 build computes everything in double already: there SIM_GEO(s, name) is s->name and each simg_*
// helper is its simu_* twin, so that build's arithmetic is unchanged. The float32 build (CPU and CUDA) reads
// the float64 copies m->geo_* / d->geo_* (sim_model.h) and runs the double helpers, which are the simu_*
// code at type double (sim_math_vec.inc instantiated twice) (same operations, same order; sin/cos/sqrt in double). IEEE double arithmetic without
// contraction rounds identically on the CPU and the GPU, so the float32 CPU and CUDA builds still agree (up to
// libm's and CUDA's double sin/cos, whose rare last-bit differences almost never survive the rounding to float).
#ifndef ADJ_SIM_MATH_GEO_H
#define ADJ_SIM_MATH_GEO_H

#include "sim_math.h"

#ifdef SIM_DOUBLE

#define SIM_GEO(s, name) ((s)->name)
#define simg_copy3 simu_copy3
#define simg_zero3 simu_zero3
#define simg_dot3 simu_dot3
#define simg_add3 simu_add3
#define simg_sub3 simu_sub3
#define simg_scl3 simu_scl3
#define simg_addscl3 simu_addscl3
#define simg_cross simu_cross
#define simg_normalize3 simu_normalize3
#define simg_normalize4 simu_normalize4
#define simg_mulMatVec3 simu_mulMatVec3
#define simg_mulMatTVec3 simu_mulMatTVec3
#define simg_mulQuat simu_mulQuat
#define simg_axisAngle2Quat simu_axisAngle2Quat
#define simg_quat2Mat simu_quat2Mat
#define simg_rotVecQuat simu_rotVecQuat

#else

#define SIM_GEO(s, name) ((s)->geo_##name)

#define SIMV_T sim_geo
#define SIMV(name) simg_##name
#define SIMV_SQRT sqrt
#define SIMV_SIN sin
#define SIMV_COS cos
#define SIMV_FABS fabs
#include "sim_math_vec.inc"
#undef SIMV_T
#undef SIMV
#undef SIMV_SQRT
#undef SIMV_SIN
#undef SIMV_COS
#undef SIMV_FABS

#endif

// a geometry result v (n values) into its double field g and its float field f (the same array in float64)
SIM_FN void simg_store(sim_real* f, sim_geo* g, const sim_geo* v, int n) {
  for (int k = 0; k < n; k++) {
    g[k] = v[k];
    f[k] = (sim_real)v[k];
  }
}

#endif
