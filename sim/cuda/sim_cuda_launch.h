// sim_cuda_launch.h: the engine's kernels for sim_cuda.cu (internal). Each group is its own translation unit,
// since each carries its own copy of the per-world engine (its stages as calls, SIM_FN_STAGE) and the build then
// compiles them in parallel:
// sim_cuda_fwd.cu (forward, one stage), sim_cuda_step.cu (step, control step), sim_cuda_bwd.cu (control-step
// backward). One warp per world, SIMCUDA_WPB worlds per block, on the legacy default stream; launch errors are
// left for cudaGetLastError.
#ifndef ADJ_SIM_CUDA_LAUNCH_H
#define ADJ_SIM_CUDA_LAUNCH_H

#include "sim/sim_model.h"

#define SIMCUDA_WPB 4

// A kernel's prologue: SIMCUDA_VIEW declares `wd`, world w's view (one pointer per data field, ~1.4 KB), in
// shared memory, one per warp, written by the lanes together. As a local variable it lived in every lane's
// stack (32 copies of one table per world, local memory that crowds L1).
// SIMCUDA_MIN_BLOCKS: __launch_bounds__'s minimum resident blocks per SM. 1 leaves ptxas all 255 registers (8
// warps per SM); 4 caps them at 128 for 16 warps per SM, at the price of spills.
#ifndef SIMCUDA_MIN_BLOCKS
#define SIMCUDA_MIN_BLOCKS 1
#endif
#define SIMCUDA_BOUNDS __launch_bounds__(32 * SIMCUDA_WPB, SIMCUDA_MIN_BLOCKS)
#define SIMCUDA_VIEW(m, d, w)                               \
  __shared__ SimWorld simcuda_view_[SIMCUDA_WPB];           \
  SimWorld* wd = &simcuda_view_[threadIdx.x / 32];          \
  sim_world_lanes((d), (w), wd, threadIdx.x & 31, 32);      \
  __syncwarp()

static inline unsigned simcuda_blocks(int nworld) { return (unsigned)((nworld + SIMCUDA_WPB - 1) / SIMCUDA_WPB); }

void simcuda_launch_forward(const SimModel* m, const SimData* d, int nworld);
void simcuda_launch_stage(const SimModel* m, const SimData* d, int nworld, int stage);
// staged: the substep as six kernels (sim_cuda_step.cu), its backward as three (sim_cuda_bwd.cu); Euler and
// implicitfast only
void simcuda_launch_step(const SimModel* m, const SimData* d, int nworld, int staged);
void simcuda_launch_control_step(const SimModel* m, const SimData* d, int nworld, int nsub, int record, int staged);
void simcuda_launch_control_step_backward(const SimModel* m, const SimData* d, int nworld, int nsub, int staged);

#endif
