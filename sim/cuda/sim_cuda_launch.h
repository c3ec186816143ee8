// sim_cuda_launch.h: the engine's kernels for sim_cuda.cu (internal). Each group is its own translation unit,
// since each kernel inlines the whole per-world engine and the build then compiles them in parallel:
// sim_cuda_fwd.cu (forward, one stage), sim_cuda_step.cu (step, control step), sim_cuda_bwd.cu (control-step
// backward). One warp per world, SIMCUDA_WPB worlds per block, on the legacy default stream; launch errors are
// left for cudaGetLastError.
#ifndef ADJ_SIM_CUDA_LAUNCH_H
#define ADJ_SIM_CUDA_LAUNCH_H

#include "sim/sim_model.h"

#define SIMCUDA_WPB 4

static inline unsigned simcuda_blocks(int nworld) { return (unsigned)((nworld + SIMCUDA_WPB - 1) / SIMCUDA_WPB); }

void simcuda_launch_forward(const SimModel* m, const SimData* d, int nworld);
void simcuda_launch_stage(const SimModel* m, const SimData* d, int nworld, int stage);
void simcuda_launch_step(const SimModel* m, const SimData* d, int nworld);
void simcuda_launch_control_step(const SimModel* m, const SimData* d, int nworld, int nsub, int record);
void simcuda_launch_control_step_backward(const SimModel* m, const SimData* d, int nworld, int nsub);

#endif
