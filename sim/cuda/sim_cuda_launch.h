// sim_cuda_launch.h: the engine's kernels for sim_cuda.cu (internal). Each group is its own translation unit,
// since each carries its own copy of the per-world engine (its stages as calls, SIM_FN_STAGE) and the build then
// compiles them in parallel:
// sim_cuda_fwd.cu (forward, one stage), sim_cuda_step.cu (step, control step), sim_cuda_bwd.cu (control-step
// backward). One warp per world, SIMCUDA_WPB worlds per block, on the legacy default stream; launch errors are
// left for cudaGetLastError.
#ifndef ADJ_SIM_CUDA_LAUNCH_H
#define ADJ_SIM_CUDA_LAUNCH_H

#include <cuda_runtime.h>

#include "sim/cuda/sim_cuda.h"
#include "sim/sim_model.h"

#ifndef SIMCUDA_WPB
#define SIMCUDA_WPB 4
#endif

// SIMCUDA_VIEW declares `wd`, world w's view (one pointer per data field, ~1.4 KB), in shared memory, one per
// warp, written by the lanes together. As a local variable it lived in every lane's stack (32 copies of one
// table per world, local memory that crowds L1).
// SIMCUDA_MIN_BLOCKS: __launch_bounds__'s minimum resident blocks per SM. 1 leaves ptxas all 255 registers (8
// warps per SM); 4 caps them at 128 for 16 warps per SM, at the price of spills.
#ifndef SIMCUDA_MIN_BLOCKS
#define SIMCUDA_MIN_BLOCKS 1
#endif
#define SIMCUDA_BOUNDS __launch_bounds__(32 * SIMCUDA_WPB, SIMCUDA_MIN_BLOCKS)
// the same for the staged launch's kernels, whose heaviest (collision, constraint, the solver's adjoint) use
// 140-180 registers uncapped (8-12 warps per SM); 16 resident warps cap them at 128 without spills, which
// took 1.6 % less time on the G1 forward and 5.7 % with the backward (H200, bench/RESULTS.md 2026-12-05)
#ifndef SIMCUDA_STAGED_MIN_BLOCKS
#define SIMCUDA_STAGED_MIN_BLOCKS (16 / SIMCUDA_WPB)
#endif
#define SIMCUDA_STAGED_BOUNDS __launch_bounds__(32 * SIMCUDA_WPB, SIMCUDA_STAGED_MIN_BLOCKS)
// the Newton solver's two kernels (k_sub_constraint, k_bwd_solver) may be bounded apart from the others: 20 resident
// warps per SM (96 registers) instead of 16 gave no net gain on the G1 (constraint +1 %, the solver's adjoint -2 %,
// the control step within 0.3 %; H100, bench/RESULTS.md 2026-12-06), so they share the staged kernels' bound
#ifndef SIMCUDA_SOLVER_MIN_BLOCKS
#define SIMCUDA_SOLVER_MIN_BLOCKS SIMCUDA_STAGED_MIN_BLOCKS
#endif
#define SIMCUDA_SOLVER_BOUNDS __launch_bounds__(32 * SIMCUDA_WPB, SIMCUDA_SOLVER_MIN_BLOCKS)
#define SIMCUDA_VIEW(m, d, w)                               \
  __shared__ SimWorld simcuda_view_[SIMCUDA_WPB];           \
  SimWorld* wd = &simcuda_view_[threadIdx.x / 32];          \
  sim_world_lanes((d), (w), wd, threadIdx.x & 31, 32);      \
  __syncwarp()

// staged == 2: in the staged launch's constraint and solver-adjoint kernels, the Newton solver's dense scratch
// (sol_H: the packed lower triangle, nv (nv + 1) / 2 padded to a multiple of 4 floats; sol_L: nv rows of
// SIM_SOL_LD(nv); read by nothing after the kernel) in dynamic shared memory instead of global memory, where the
// model's size lets a block's fit in 48 KB (nv <= 44). Each warp's block, and sol_L within it, starts 16-byte
// aligned (the factor's vector loads).
static inline __host__ __device__ size_t simcuda_solver_h_floats(int nv) {
  return (size_t)((nv * (nv + 1) / 2 + 3) & ~3);
}
static inline __host__ __device__ size_t simcuda_solver_warp_floats(int nv) {
  return simcuda_solver_h_floats(nv) + (size_t)nv * SIM_SOL_LD(nv);
}
static inline size_t simcuda_solver_shmem(int nv, int staged) {
  size_t b = (size_t)SIMCUDA_WPB * simcuda_solver_warp_floats(nv) * sizeof(float);
  return staged == 2 && b <= 48 * 1024 ? b : 0;
}
#define SIMCUDA_SOLVER_SCRATCH(m, wd, lane, on)                                                     \
  extern __shared__ float4 simcuda_scratch4_[];                                                     \
  if (on) {                                                                                         \
    if ((lane) == 0) {                                                                              \
      float* p_ = (float*)simcuda_scratch4_ + (threadIdx.x / 32) * simcuda_solver_warp_floats((m)->nv); \
      (wd)->sol_H = p_;                                                                             \
      (wd)->sol_L = p_ + simcuda_solver_h_floats((m)->nv);                                          \
    }                                                                                               \
    __syncwarp();                                                                                   \
  }

// Every kernel's prologue: world w of this warp (whole warps past the batch leave), its view `wd`, its `lane`;
// the staged kernels' launch covers the worlds from w0 on (simcuda_group)
#define SIMCUDA_WORLD_AT(m, d, w0)                            \
  int w = (w0) + blockIdx.x * SIMCUDA_WPB + threadIdx.x / 32; \
  if (w >= (d)->nworld) return;                               \
  SIMCUDA_VIEW(m, d, w);                                      \
  const int lane = threadIdx.x & 31
#define SIMCUDA_WORLD(m, d) SIMCUDA_WORLD_AT(m, d, 0)

// World clock (simcuda_world_clock): clk NULL, or SIMCUDA_CLOCK_WORDS words per world for this launch of the
// kernel: the global timer (ns) at the world's start and end, its SM's cycles from start to end, and its SM id,
// contacts, rows and Newton iterations at the end. The start is stored at once and read back at the end, so
// that nothing stays live in registers across the kernel; the results' bits are the same with or without.
static __device__ __forceinline__ unsigned long long simcuda_globaltimer(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define SIMCUDA_CLOCK_BEGIN(clk, w, lane)                                          \
  if ((clk) && (lane) == 0) {                                                      \
    (clk)[(size_t)(w) * SIMCUDA_CLOCK_WORDS] = simcuda_globaltimer();              \
    (clk)[(size_t)(w) * SIMCUDA_CLOCK_WORDS + 2] = (unsigned long long)clock64();  \
  }
#define SIMCUDA_CLOCK_END(clk, w, wd, lane)                                                                 \
  if (clk) {                                                                                               \
    __syncwarp();                                                                                          \
    if ((lane) == 0) {                                                                                     \
      unsigned long long* c_ = (clk) + (size_t)(w) * SIMCUDA_CLOCK_WORDS;                                  \
      unsigned sm_;                                                                                        \
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_));                                                     \
      c_[2] = (unsigned long long)clock64() - c_[2];                                                       \
      c_[1] = simcuda_globaltimer();                                                                       \
      c_[3] = (unsigned long long)(sm_ & 0xffffu) | (unsigned long long)((wd)->ncon[0] & 0xffff) << 16 |  \
              (unsigned long long)((wd)->nefc[0] & 0xffff) << 32 |                                         \
              (unsigned long long)((wd)->solver_niter[0] & 0xffff) << 48;                                  \
    }                                                                                                      \
  }

static inline unsigned simcuda_blocks(int nworld) { return (unsigned)((nworld + SIMCUDA_WPB - 1) / SIMCUDA_WPB); }

// World groups on streams (simcuda_set_streams): the staged launch may split the batch into ngroup groups of
// consecutive worlds (a multiple of SIMCUDA_WPB each, the last one shorter), each group's kernels, all substeps,
// in order on a stream of its own. A launch's last worlds leave most of the GPU idle until its slowest ends; the
// other groups' kernels fill it. A world's kernels and their order are the same: the same bits for any ngroup.
// simcuda_group: group i's first world and count (count 0: the group is empty). The streams and events are made
// once, on first use.
#define SIMCUDA_MAX_STREAMS 8
static inline int simcuda_group(int nworld, int ngroup, int i, int* w0) {
  int size = ((nworld + ngroup - 1) / ngroup + SIMCUDA_WPB - 1) / SIMCUDA_WPB * SIMCUDA_WPB;
  *w0 = i * size;
  return *w0 >= nworld ? 0 : SIM_MIN(size, nworld - *w0);
}
// simcuda_launch_groups: for each of nsub substeps, f(ctx, s, w0, n, stream) for each non-empty group (ngroup <= 1:
// the whole batch on the legacy stream); the groups' streams first wait for the work issued so far on the legacy
// default stream, which then waits for them.
typedef void (*SimcudaGroupLaunch)(const void* ctx, int s, int w0, int n, cudaStream_t st);
void simcuda_launch_groups(int nworld, int nsub, int ngroup, SimcudaGroupLaunch f, const void* ctx);

// The staged kernels with their dynamic shared memory (solver_sh: simcuda_solver_shmem's bytes for the Newton
// solver's two kernels), for simcuda_set_carveout: the substep's seven (sim_cuda_step.cu), the backward's three
// (sim_cuda_bwd.cu); each returns its count.
typedef struct {
  const void* fn;
  size_t dyn;
} SimcudaKernelRef;
int simcuda_step_kernels(SimcudaKernelRef* k, size_t solver_sh);
int simcuda_bwd_kernels(SimcudaKernelRef* k, size_t solver_sh);

void simcuda_launch_forward(const SimModel* m, const SimData* d, int nworld);
void simcuda_launch_stage(const SimModel* m, const SimData* d, int nworld, int stage);
// staged (1, 2): the substep as seven kernels (sim_cuda_step.cu), its backward as three (sim_cuda_bwd.cu); Euler
// and implicitfast only. nv: the model's, on the host. ev: NULL, or (staged only) nsub x (kernels + 1) events
// recorded between the kernels of each substep, for simcuda_time_kernels.
void simcuda_launch_step(const SimModel* m, const SimData* d, int nworld, int staged, int nv);
// clk (staged only; NULL: off): nsub x SIMCUDA_NSUB_KERNEL launches' world clocks, SIMCUDA_CLOCK_WORDS x nworld
// words each, in launch order; the backward's nsub x SIMCUDA_NBWD_KERNEL likewise.
// ngroup: world groups on streams (staged, without ev and clk; above); 1 or less: one launch per kernel.
void simcuda_launch_control_step(const SimModel* m, const SimData* d, int nworld, int nsub, int record, int staged,
                                 int nv, int ngroup, cudaEvent_t* ev, unsigned long long* clk);
void simcuda_launch_control_step_backward(const SimModel* m, const SimData* d, int nworld, int nsub, int staged,
                                          int nv, int ngroup, cudaEvent_t* ev, unsigned long long* clk);

#endif
