// sim_cuda_fwd.cu: forward and per-stage kernels of the CUDA backend (sim_cuda_launch.h).
#include "sim/sim_forward.c"
#include "sim/cuda/sim_cuda_launch.h"

__global__ void SIMCUDA_BOUNDS k_forward(const SimModel* m, const SimData* d) {
  SIMCUDA_WORLD(m, d);
  sim_forward_world(m, wd, lane, 32);
}

__global__ void SIMCUDA_BOUNDS k_stage(const SimModel* m, const SimData* d, int stage) {
  SIMCUDA_WORLD(m, d);
  sim_stage_world(m, wd, stage, lane, 32);
}

void simcuda_launch_forward(const SimModel* m, const SimData* d, int nworld) {
  k_forward<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d);
}

void simcuda_launch_stage(const SimModel* m, const SimData* d, int nworld, int stage) {
  k_stage<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d, stage);
}
