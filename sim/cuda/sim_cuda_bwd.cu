// sim_cuda_bwd.cu: the control-step backward kernel of the CUDA backend (sim_cuda_launch.h; sim_adjoint.c).
#include "sim/sim_forward.c"
#include "sim/cuda/sim_cuda_launch.h"

__global__ void SIMCUDA_BOUNDS k_control_step_backward(const SimModel* m, const SimData* d, int nsub) {
  int w = blockIdx.x * SIMCUDA_WPB + threadIdx.x / 32;
  if (w >= d->nworld) return;
  SIMCUDA_VIEW(m, d, w);
  sim_control_step_backward_world(m, wd, nsub, threadIdx.x & 31, 32);
}

void simcuda_launch_control_step_backward(const SimModel* m, const SimData* d, int nworld, int nsub) {
  k_control_step_backward<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d, nsub);
}
