// sim_cuda_step.cu: step and control-step (tape) kernels of the CUDA backend (sim_cuda_launch.h).
#include "sim/sim_forward.c"
#include "sim/cuda/sim_cuda_launch.h"

__global__ void SIMCUDA_BOUNDS k_step(const SimModel* m, const SimData* d) {
  int w = blockIdx.x * SIMCUDA_WPB + threadIdx.x / 32;
  if (w >= d->nworld) return;
  SIMCUDA_VIEW(m, d, w);
  sim_step_world(m, wd, threadIdx.x & 31, 32);
}

// nsub substeps per world, each substep's input pushed on the tape when recording
__global__ void SIMCUDA_BOUNDS k_control_step(const SimModel* m, const SimData* d, int nsub, int record) {
  int w = blockIdx.x * SIMCUDA_WPB + threadIdx.x / 32;
  if (w >= d->nworld) return;
  SIMCUDA_VIEW(m, d, w);
  sim_control_step_world(m, wd, nsub, record, threadIdx.x & 31, 32);
}

void simcuda_launch_step(const SimModel* m, const SimData* d, int nworld) {
  k_step<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d);
}

void simcuda_launch_control_step(const SimModel* m, const SimData* d, int nworld, int nsub, int record) {
  k_control_step<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d, nsub, record);
}
