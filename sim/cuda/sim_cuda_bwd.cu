// sim_cuda_bwd.cu: the control-step backward kernels of the CUDA backend (sim_cuda_launch.h; sim_adjoint.c),
// fused (one kernel) and staged (three kernels per substep, in the fused kernel's order: the same bits).
#include "sim/sim_forward.c"
#include "sim/cuda/sim_cuda_launch.h"

__global__ void SIMCUDA_BOUNDS k_control_step_backward(const SimModel* m, const SimData* d, int nsub) {
  SIMCUDA_WORLD(m, d);
  sim_control_step_backward_world(m, wd, nsub, lane, 32);
}

// staged, per substep: the taped forward and the integrator's adjoint (the first substep saves the state) ...
__global__ void SIMCUDA_STAGED_BOUNDS k_bwd_pre(const SimModel* m, const SimData* d, int w0, int first,
                                                unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  if (first) sim_adj_save_state(m, wd, lane, 32);
  int k = wd->tape_n[0] - 1;  // < 0: an empty tape; this world's later kernels do nothing
  if (lane == 0) wd->tape_k[0] = k;
  if (k >= 0) sim_adj_substep_pre(m, wd, k, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
// ... the solver's adjoint ...
__global__ void SIMCUDA_SOLVER_BOUNDS k_bwd_solver(const SimModel* m, const SimData* d, int w0, int scratch,
                                                   unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  SIMCUDA_SOLVER_SCRATCH(m, wd, lane, scratch);
  if (wd->tape_k[0] >= 0) sim_adj_solver(m, wd, wd->tape_k[0], lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
// ... the smooth dynamics' adjoint, the input's cotangents, the tape popped (the last substep restores the state)
__global__ void SIMCUDA_STAGED_BOUNDS k_bwd_smooth(const SimModel* m, const SimData* d, int w0, int last,
                                                   unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  int k = wd->tape_k[0];
  if (k >= 0) {
    sim_adj_smooth(m, wd, wd->adj_flags, lane, 32);
    sim_adj_substep_post(m, wd, lane, 32);
    sim_adj_tape_pop(wd, k, lane);
  }
  if (last) sim_adj_restore_state(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}

int simcuda_bwd_kernels(SimcudaKernelRef* k, size_t solver_sh) {
  k[0] = SimcudaKernelRef{(const void*)k_bwd_pre, 0};
  k[1] = SimcudaKernelRef{(const void*)k_bwd_solver, solver_sh};
  k[2] = SimcudaKernelRef{(const void*)k_bwd_smooth, 0};
  return SIMCUDA_NBWD_KERNEL;
}

typedef struct {
  const SimModel* m;
  const SimData* d;
  int nworld, nsub;
  size_t sh;
  cudaEvent_t* ev;
  unsigned long long* clk;
} BwdArgs;

// substep s's three kernels for the worlds from w0, n of them, on stream st
static void group_bwd_substep(const void* ctx, int s, int w0, int n, cudaStream_t st) {
  const BwdArgs* a = (const BwdArgs*)ctx;
  unsigned nb = simcuda_blocks(n), nt = 32 * SIMCUDA_WPB;
  size_t cw = (size_t)SIMCUDA_CLOCK_WORDS * a->nworld;
  cudaEvent_t* e = a->ev ? a->ev + s * (SIMCUDA_NBWD_KERNEL + 1) : NULL;  // around the three kernels (timing)
  unsigned long long* c = a->clk ? a->clk + (size_t)s * SIMCUDA_NBWD_KERNEL * cw : NULL;  // world clocks
  if (e) cudaEventRecord(e[0]);
  k_bwd_pre<<<nb, nt, 0, st>>>(a->m, a->d, w0, s == 0, c);
  if (e) cudaEventRecord(e[1]);
  k_bwd_solver<<<nb, nt, a->sh, st>>>(a->m, a->d, w0, a->sh > 0, c ? c + cw : NULL);
  if (e) cudaEventRecord(e[2]);
  k_bwd_smooth<<<nb, nt, 0, st>>>(a->m, a->d, w0, s == a->nsub - 1, c ? c + 2 * cw : NULL);
  if (e) cudaEventRecord(e[3]);
}

void simcuda_launch_control_step_backward(const SimModel* m, const SimData* d, int nworld, int nsub, int staged,
                                          int nv, int ngroup, cudaEvent_t* ev, unsigned long long* clk) {
  if (!staged || nsub < 1) {
    k_control_step_backward<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d, nsub);
    return;
  }
  BwdArgs a = {m, d, nworld, nsub, simcuda_solver_shmem(nv, staged), ev, clk};
  simcuda_launch_groups(nworld, nsub, ev || clk ? 1 : ngroup, group_bwd_substep, &a);
}
