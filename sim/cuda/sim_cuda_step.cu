// sim_cuda_step.cu: step and control-step (tape) kernels of the CUDA backend (sim_cuda_launch.h), fused (one
// kernel per step or control step) and staged (one kernel per group of stages).
#include "sim/sim_forward.c"
#include "sim/cuda/sim_cuda_launch.h"

__global__ void SIMCUDA_BOUNDS k_step(const SimModel* m, const SimData* d) {
  SIMCUDA_WORLD(m, d);
  sim_step_world(m, wd, lane, 32);
}

// nsub substeps per world, each substep's input pushed on the tape when recording
__global__ void SIMCUDA_BOUNDS k_control_step(const SimModel* m, const SimData* d, int nsub, int record) {
  SIMCUDA_WORLD(m, d);
  sim_control_step_world(m, wd, nsub, record, lane, 32);
}

// The staged launch of one substep: the calls of sim_step_world / sim_control_step_world in the same order,
// split over six kernels. Each kernel gets the registers and the code of its own stages, so the light stages
// run with more warps per SM than the fused kernel allows (its register count is that of its heaviest stage),
// and a warp's code stays within the instruction cache. Euler and implicitfast only (RK4 stays fused).
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_position(const SimModel* m, const SimData* d, int record,
                                                     unsigned long long* clk) {
  SIMCUDA_WORLD(m, d);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  int k = record ? sim_tape_push(m, wd, lane, 32) : -1;
  sim_reset_if_bad(m, wd, 0, lane, 32);
  sim_forward_position(m, wd, lane, 32);
  if (k >= 0) sim_adj_tape_geometry(m, wd, k, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_collision(const SimModel* m, const SimData* d, unsigned long long* clk) {
  SIMCUDA_WORLD(m, d);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  sim_collision(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_smooth(const SimModel* m, const SimData* d, unsigned long long* clk) {
  SIMCUDA_WORLD(m, d);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  sim_forward_smooth(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_SOLVER_BOUNDS k_sub_constraint(const SimModel* m, const SimData* d, int scratch,
                                                       unsigned long long* clk) {
  SIMCUDA_WORLD(m, d);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  SIMCUDA_SOLVER_SCRATCH(m, wd, lane, scratch);
  sim_constraint(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
// a world whose acceleration is not finite is reset and its forward redone (rare: the other warps leave); its
// tape entry keeps the first forward's geometry (sim_step_forward_world)
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_repair(const SimModel* m, const SimData* d, unsigned long long* clk) {
  SIMCUDA_WORLD(m, d);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  if (sim_reset_if_bad(m, wd, 1, lane, 32)) sim_forward_world(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_integrate(const SimModel* m, const SimData* d, int record,
                                                      unsigned long long* clk) {
  SIMCUDA_WORLD(m, d);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  if (record && wd->tape_k[0] >= 0) sim_adj_tape_solution(m, wd, wd->tape_k[0], lane, 32);
  sim_integrate_stage(m, wd, lane, 32);
  if (record && wd->tape_k[0] >= 0) sim_adj_tape_factor(m, wd, wd->tape_k[0], lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}

// ev: NULL, or SIMCUDA_NSUB_KERNEL + 1 events recorded around the six kernels (simcuda_time_kernels); clk: NULL,
// or the six kernels' world clocks (sim_cuda_launch.h)
static void launch_substep(const SimModel* m, const SimData* d, int nworld, int record, int staged, int nv,
                           cudaEvent_t* ev, unsigned long long* clk) {
  unsigned nb = simcuda_blocks(nworld), nt = 32 * SIMCUDA_WPB;
  size_t sh = simcuda_solver_shmem(nv, staged), cw = (size_t)SIMCUDA_CLOCK_WORDS * nworld;
#define CLK(k) (clk ? clk + (k) * cw : NULL)
  if (ev) cudaEventRecord(ev[0]);
  k_sub_position<<<nb, nt>>>(m, d, record, CLK(0));
  if (ev) cudaEventRecord(ev[1]);
  k_sub_collision<<<nb, nt>>>(m, d, CLK(1));
  if (ev) cudaEventRecord(ev[2]);
  k_sub_smooth<<<nb, nt>>>(m, d, CLK(2));
  if (ev) cudaEventRecord(ev[3]);
  k_sub_constraint<<<nb, nt, sh>>>(m, d, sh > 0, CLK(3));
  if (ev) cudaEventRecord(ev[4]);
  k_sub_repair<<<nb, nt>>>(m, d, CLK(4));
  if (ev) cudaEventRecord(ev[5]);
  k_sub_integrate<<<nb, nt>>>(m, d, record, CLK(5));
  if (ev) cudaEventRecord(ev[6]);
#undef CLK
}

void simcuda_launch_step(const SimModel* m, const SimData* d, int nworld, int staged, int nv) {
  if (staged) launch_substep(m, d, nworld, 0, staged, nv, NULL, NULL);
  else k_step<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d);
}

void simcuda_launch_control_step(const SimModel* m, const SimData* d, int nworld, int nsub, int record, int staged,
                                 int nv, cudaEvent_t* ev, unsigned long long* clk) {
  if (staged)
    for (int s = 0; s < nsub; s++)
      launch_substep(m, d, nworld, record, staged, nv, ev ? ev + s * (SIMCUDA_NSUB_KERNEL + 1) : NULL,
                     clk ? clk + (size_t)s * SIMCUDA_NSUB_KERNEL * SIMCUDA_CLOCK_WORDS * nworld : NULL);
  else
    k_control_step<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d, nsub, record);
}
