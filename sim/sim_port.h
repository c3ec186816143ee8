// sim_port.h: the one place where the CPU and CUDA builds of the per-world physics differ.
//
// Every per-world function is written once as SIM_FN and compiles as C (CPU backend, float64 or float32)
// and as CUDA device code (GPU backend, float32). Precision-dependent symbols are mangled with SIM_SFX so
// that one binary can hold the float64 and float32 CPU engines side by side.
//
// Lanes: a world may be processed by several GPU lanes (one warp per world). Per-world functions take
// (lane, nlane) and stride their element loops by nlane; SIM_SYNC() separates dependent phases. On the CPU
// lane = 0, nlane = 1 and SIM_SYNC() is a no-op.
//
// Floating-point contraction is off on both sides (-ffp-contract=off, nvcc --fmad=false): the float32 CPU
// build and the GPU then round identically except inside libm functions (sqrt is exact on both).
#ifndef ADJ_SIM_PORT_H
#define ADJ_SIM_PORT_H

#include <math.h>
#include <stddef.h>

#ifdef __CUDACC__
#define SIM_FN static inline __host__ __device__
// SIM_FN_STAGE: a stage-sized function (a pipeline stage, a solver phase) is a real call on the GPU. Inlined,
// each kernel became one body of ~75 k instructions under one register allocation: spills wherever the
// pressure peaked, and a code footprint far beyond the instruction cache. Called, each function gets its own
// allocation and appears once. SIM_CUDA_INLINE_ALL (a build switch for comparisons) inlines them again.
#ifdef SIM_CUDA_INLINE_ALL
#define SIM_FN_STAGE SIM_FN
#else
#define SIM_FN_STAGE static __noinline__ __host__ __device__
#endif
#define SIM_RESTRICT __restrict__
// SIM_FN_INLINE: a helper that must be inlined where it is called (its constant arguments then fold away)
#define SIM_FN_INLINE static __forceinline__ __host__ __device__
#ifdef __CUDA_ARCH__
#define SIM_SYNC() __syncwarp()
#else
#define SIM_SYNC() ((void)0)
#endif
#else
#define SIM_FN static inline
#define SIM_FN_STAGE static inline
#define SIM_FN_INLINE static inline
#define SIM_SYNC() ((void)0)
#define SIM_RESTRICT restrict
#endif

#ifdef SIM_DOUBLE
typedef double sim_real;
#define SIM_SFX(name) name##_f64
#define SIM_EPS_REAL 2.220446049250313e-16
#else
typedef float sim_real;
#define SIM_SFX(name) name##_f32
#define SIM_EPS_REAL 1.1920929e-07
#endif

// Geometry precision (sim_math_geo.h): body and geom frames, the narrow phase and joint-limit distances are
// computed in double in both builds. In float32 that is what keeps resting contacts accurate: a contact's
// reference acceleration is its stiffness (~2.5e3 / s^2 at the default solref) times its penetration, so the
// ~1e-8 m rounding of float32 positions and model offsets moves a resting body's (small) qacc by ~1e-4.
typedef double sim_geo;

// MuJoCo's constants (mjMINVAL, mjPI, mjMINMU, mjMAXVAL)
#define SIM_MINVAL 1e-15
#define SIM_PI 3.14159265358979323846
#define SIM_MINMU 1e-5
#define SIM_MAXVAL 1e10

// math wrappers: one spelling for both precisions
#ifdef SIM_DOUBLE
#define sim_sqrt sqrt
#define sim_sin sin
#define sim_cos cos
#define sim_atan2 atan2
#define sim_exp exp
#define sim_pow pow
#define sim_fabs fabs
#define sim_floor floor
#else
#define sim_sqrt sqrtf
#define sim_sin sinf
#define sim_cos cosf
#define sim_atan2 atan2f
#define sim_exp expf
#define sim_pow powf
#define sim_fabs fabsf
#define sim_floor floorf
#endif

// c + a b and c - a b. By default two roundings, the product's and the sum's: what the CPU build (no contraction)
// and the CUDA build (--fmad=false) both do unasked. With SIM_FMA (the ADJ_FMA build option) one rounding, fused
// explicitly, so that the CPU builds still round as the GPU does; used where a chain of them is the hot loop.
#ifdef SIM_FMA
#ifdef SIM_DOUBLE
#define sim_fmadd(a, b, c) fma((a), (b), (c))
#define sim_fmsub(a, b, c) fma(-(a), (b), (c))
#else
#define sim_fmadd(a, b, c) fmaf((a), (b), (c))
#define sim_fmsub(a, b, c) fmaf(-(a), (b), (c))
#endif
#else
#define sim_fmadd(a, b, c) ((c) + (a) * (b))
#define sim_fmsub(a, b, c) ((c) - (a) * (b))
#endif

#define SIM_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SIM_MIN(a, b) ((a) < (b) ? (a) : (b))

// Lane sums: a fixed-order reduction for the scalars every lane needs (dot products, costs). An element loop of
// length n is cut into SIM_NPART = 32 strided partials (partial p sums elements p, p + 32, ... in order) and
// the partials meet in a fixed tree (offsets 16, 8, 4, 2, 1). A lane computes the partials p = lane,
// lane + nlane, ... (< 32) into part[0], part[1], ...; sim_lsum_multi then gives every lane the same totals.
// On the GPU (nlane = 32) a lane holds one partial and the tree is a butterfly of __shfl_xor_sync, whose sums
// are the CPU tree's (a + b == b + a); on the CPU (nlane = 1) one lane holds all 32. The result is therefore
// bitwise the same on both and does not depend on the number of worlds. tests/sim_lanes.c (threads as lanes)
// provides its own sim_lsum_multi (shared array + barrier) by defining SIM_LSUM_EXTERNAL.
#define SIM_NPART 32
#ifdef __CUDA_ARCH__
#define SIM_LPART 1  // partials per lane (nlane = 32)
#else
#define SIM_LPART SIM_NPART
#endif

#ifndef SIM_LSUM_EXTERNAL
// part: nval x SIM_LPART partials (value v's at part + v * SIM_LPART); out: the nval totals
SIM_FN void sim_lsum_multi(sim_real* part, int nval, sim_real* out, int lane, int nlane) {
  (void)lane;
  (void)nlane;
#ifdef __CUDA_ARCH__
  for (int v = 0; v < nval; v++) {
    sim_real x = part[v];
    for (int off = SIM_NPART / 2; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    out[v] = x;
  }
#else
  for (int v = 0; v < nval; v++) {
    sim_real* p = part + v * SIM_LPART;
    for (int off = SIM_NPART / 2; off > 0; off >>= 1)
      for (int l = 0; l < off; l++) p[l] = p[l] + p[l + off];
    out[v] = p[0];
  }
#endif
}
#else
SIM_FN void sim_lsum_multi(sim_real* part, int nval, sim_real* out, int lane, int nlane);  // defined by the includer
#endif

SIM_FN sim_real sim_lsum(sim_real* part, int lane, int nlane) {
  sim_real out;
  sim_lsum_multi(part, 1, &out, lane, nlane);
  return out;
}

// Warp exchange: the warp forms of some loops (the Newton factor and solve, list compaction) keep per-lane values
// in registers and exchange them by shuffle and ballot. They run where SIM_WARP is 1 and nlane is 32: on the GPU,
// and in tests/sim_lanes.c (threads as lanes), which defines SIM_WARP_EXTERNAL and provides sim_shfl and
// sim_ballot through a shared array and barriers, so that the CPU tests check these forms against the one-lane
// code bit for bit. Elsewhere SIM_WARP is 0 and the branches fold away. Calls must be reached by all 32 lanes.
#ifdef __CUDA_ARCH__
#define SIM_WARP 1
SIM_FN sim_real sim_shfl(sim_real x, int src, int lane) {  // lane src's x, to every lane
  (void)lane;
  return __shfl_sync(0xffffffffu, x, src);
}
SIM_FN unsigned sim_ballot(int pred, int lane) {  // bit l set where lane l's pred is non-zero
  (void)lane;
  return __ballot_sync(0xffffffffu, pred);
}
SIM_FN int sim_popc(unsigned x) { return __popc(x); }
SIM_FN int sim_ctz(unsigned x) { return __ffs((int)x) - 1; }  // x != 0: its lowest set bit
#elif defined(SIM_WARP_EXTERNAL)
#define SIM_WARP 1
SIM_FN sim_real sim_shfl(sim_real x, int src, int lane);  // defined by the includer
SIM_FN unsigned sim_ballot(int pred, int lane);
SIM_FN int sim_popc(unsigned x) { return __builtin_popcount(x); }
SIM_FN int sim_ctz(unsigned x) { return __builtin_ctz(x); }
#else
#define SIM_WARP 0
SIM_FN sim_real sim_shfl(sim_real x, int src, int lane) {  // never reached: one lane
  (void)src;
  (void)lane;
  return x;
}
SIM_FN unsigned sim_ballot(int pred, int lane) { return (unsigned)(pred != 0) << lane; }
SIM_FN int sim_popc(unsigned x) { return __builtin_popcount(x); }
SIM_FN int sim_ctz(unsigned x) { return __builtin_ctz(x); }
#endif

// SIM_IS_SHARED(p): p points into the block's shared memory (CUDA; 0 elsewhere). SIM_ASSUME_SHARED(p) tells the
// CUDA compiler so, where a branch on SIM_IS_SHARED has established it: loads through p (and pointers derived from
// it) then use shared-memory instructions, whose latency is the shared memory's, where a generic load waits as long
// as a global one. The arithmetic is unchanged.
#ifdef __CUDA_ARCH__
#define SIM_IS_SHARED(p) __isShared((const void*)(p))
#define SIM_ASSUME_SHARED(p) __builtin_assume(__isShared((const void*)(p)))
#else
#define SIM_IS_SHARED(p) 0
#define SIM_ASSUME_SHARED(p) ((void)0)
#endif

// list compaction by a warp: every lane offers v where pred holds; the offers land in lane order at list[cnt...].
// Returns the new count, the same on every lane.
SIM_FN int sim_ballot_append(int* list, int cnt, int pred, int v, int lane) {
  unsigned bits = sim_ballot(pred, lane);
  if (pred) list[cnt + sim_popc(bits & ((1u << lane) - 1))] = v;
  return cnt + sim_popc(bits);
}

// Partial loop: k counts a lane's partials, p is the partial's index. On the GPU a lane has exactly one
// (p = lane, k = 0, a constant), so partial arrays stay in registers instead of local memory.
#ifdef __CUDA_ARCH__
#define SIM_PART_LOOP(k, p, lane, nlane) for (int k = 0, p = (lane); k < 1; k++)
#else
#define SIM_PART_LOOP(k, p, lane, nlane) for (int k = 0, p = (lane); p < SIM_NPART; k++, p += (nlane))
#endif

// SIM_NO_UNROLL before a loop: compiled as written. For short loops (a lane's share of a world's dofs or rows, a
// dependent chain over a dof's ancestors or a few rows), which the GPU compiler otherwise unrolls with remainder
// code at every inlined call site: code, and instruction fetches, for passes that rarely run. The build switch
// SIM_GPU_COMPILER_UNROLL (-DSIM_GPU_COMPILER_UNROLL in CMAKE_CUDA_FLAGS) leaves these loops to the compiler again,
// to measure what the marks do.
#if defined(__CUDA_ARCH__) && !defined(SIM_GPU_COMPILER_UNROLL)
#define SIM_NO_UNROLL _Pragma("unroll 1")
#else
#define SIM_NO_UNROLL
#endif

// out = sum over I in [0, n) of EXPR (an expression in the int I), in the lane-sum order above
#define SIM_LSUM(out, n, I, EXPR, lane, nlane)                               \
  do {                                                                       \
    sim_real lsum_part_[SIM_LPART];                                          \
    SIM_PART_LOOP(lsum_k_, lsum_p_, lane, nlane) {                           \
      sim_real lsum_s_ = 0;                                                  \
      SIM_NO_UNROLL                                                          \
      for (int I = lsum_p_; I < (n); I += SIM_NPART) lsum_s_ += (EXPR);      \
      lsum_part_[lsum_k_] = lsum_s_;                                         \
    }                                                                        \
    (out) = sim_lsum(lsum_part_, (lane), (nlane));                           \
  } while (0)

#endif
