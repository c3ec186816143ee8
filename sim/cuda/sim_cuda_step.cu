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
// split over seven kernels. Each kernel gets the registers and the code of its own stages, so the light stages
// run with more warps per SM than the fused kernel allows (its register count is that of its heaviest stage),
// and a warp's code stays within the instruction cache. Euler and implicitfast only (RK4 stays fused).
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_position(const SimModel* m, const SimData* d, int w0, int record,
                                                     unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  int k = record ? sim_tape_push(m, wd, lane, 32) : -1;
  sim_reset_if_bad(m, wd, 0, lane, 32);
  sim_forward_position(m, wd, lane, 32);
  if (k >= 0) sim_adj_tape_geometry(m, wd, k, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_collision(const SimModel* m, const SimData* d, int w0,
                                                      unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  sim_collision(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_smooth(const SimModel* m, const SimData* d, int w0,
                                                   unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  sim_forward_smooth(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
// the constraint rows and islands apart from the Newton solve: the solver's kernel then holds the solver's code
// alone (the fused constraint kernel lost 18 % of its stall cycles to instruction fetch, bench/RESULTS.md), and the
// rows run at the light kernels' registers
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_rows(const SimModel* m, const SimData* d, int w0, unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  sim_constraint_rows_islands(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_SOLVER_BOUNDS k_sub_constraint(const SimModel* m, const SimData* d, int w0, int scratch,
                                                       int record, unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  SIMCUDA_SOLVER_SCRATCH(m, wd, lane, scratch);
  sim_solve(m, wd, record ? wd->tape_k[0] : -1, lane, 32);  // the factor leaves shared memory here
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
// a world whose acceleration is not finite is reset and its forward redone (rare: the other warps leave); its
// tape entry keeps the first forward's geometry (sim_step_forward_world)
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_repair(const SimModel* m, const SimData* d, int w0,
                                                   unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  if (sim_reset_if_bad(m, wd, 1, lane, 32)) sim_forward_world(m, wd, lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}
__global__ void SIMCUDA_STAGED_BOUNDS k_sub_integrate(const SimModel* m, const SimData* d, int w0, int record,
                                                      unsigned long long* clk) {
  SIMCUDA_WORLD_AT(m, d, w0);
  SIMCUDA_CLOCK_BEGIN(clk, w, lane);
  if (record && wd->tape_k[0] >= 0) sim_adj_tape_solution(m, wd, wd->tape_k[0], lane, 32);
  sim_integrate_stage(m, wd, lane, 32);
  if (record && wd->tape_k[0] >= 0) sim_adj_tape_factor(m, wd, wd->tape_k[0], lane, 32);
  SIMCUDA_CLOCK_END(clk, w, wd, lane);
}

int simcuda_step_kernels(SimcudaKernelRef* k, size_t solver_sh) {
  const void* fn[SIMCUDA_NSUB_KERNEL] = {(const void*)k_sub_position, (const void*)k_sub_collision,
                                         (const void*)k_sub_smooth,   (const void*)k_sub_rows,
                                         (const void*)k_sub_constraint, (const void*)k_sub_repair,
                                         (const void*)k_sub_integrate};
  for (int i = 0; i < SIMCUDA_NSUB_KERNEL; i++)
    k[i] = SimcudaKernelRef{fn[i], i == SIMCUDA_SUB_SOLVER ? solver_sh : 0};
  return SIMCUDA_NSUB_KERNEL;
}

// The staged launch's streams (sim_cuda_launch.h): made on first use, kept for the process; streams_fork: the
// groups' streams wait for the work issued so far on the legacy stream (one group: none, the legacy stream)
static cudaStream_t g_stream[SIMCUDA_MAX_STREAMS];
static cudaEvent_t g_fork, g_join[SIMCUDA_MAX_STREAMS];
static int g_nstream = 0;

static int streams_fork(int ngroup, cudaStream_t* s) {
  if (ngroup > SIMCUDA_MAX_STREAMS) ngroup = SIMCUDA_MAX_STREAMS;
  s[0] = 0;
  if (ngroup <= 1) return 1;
  if (!g_nstream) {
    if (cudaEventCreateWithFlags(&g_fork, cudaEventDisableTiming) != cudaSuccess) return 1;
    for (int i = 0; i < SIMCUDA_MAX_STREAMS; i++)
      if (cudaStreamCreateWithFlags(&g_stream[i], cudaStreamNonBlocking) != cudaSuccess ||
          cudaEventCreateWithFlags(&g_join[i], cudaEventDisableTiming) != cudaSuccess)
        return 1;  // the error stays for the caller's cudaGetLastError; nothing is launched on the streams
    g_nstream = SIMCUDA_MAX_STREAMS;
  }
  cudaEventRecord(g_fork, 0);
  for (int i = 0; i < ngroup; i++) {
    s[i] = g_stream[i];
    cudaStreamWaitEvent(s[i], g_fork, 0);
  }
  return ngroup;
}

void simcuda_launch_groups(int nworld, int nsub, int ngroup, SimcudaGroupLaunch f, const void* ctx) {
  cudaStream_t st[SIMCUDA_MAX_STREAMS];
  int ng = streams_fork(ngroup, st);
  for (int s = 0; s < nsub; s++)
    for (int i = 0; i < ng; i++) {
      int w0, n = simcuda_group(nworld, ng, i, &w0);
      if (n > 0) f(ctx, s, w0, n, st[i]);
    }
  for (int i = 0; i < ng && ng > 1; i++) {  // the legacy stream waits for the groups
    cudaEventRecord(g_join[i], st[i]);
    cudaStreamWaitEvent(0, g_join[i], 0);
  }
}

// ev: NULL, or SIMCUDA_NSUB_KERNEL + 1 events recorded around the seven kernels (simcuda_time_kernels); clk: NULL,
// or the seven kernels' world clocks (sim_cuda_launch.h). The worlds from w0, n of them, on stream st.
static void launch_substep(const SimModel* m, const SimData* d, int nworld, int w0, int n, cudaStream_t st,
                           int record, int staged, int nv, cudaEvent_t* ev, unsigned long long* clk) {
  unsigned nb = simcuda_blocks(n), nt = 32 * SIMCUDA_WPB;
  size_t sh = simcuda_solver_shmem(nv, staged), cw = (size_t)SIMCUDA_CLOCK_WORDS * nworld;
#define CLK(k) (clk ? clk + (k) * cw : NULL)
  if (ev) cudaEventRecord(ev[0]);
  k_sub_position<<<nb, nt, 0, st>>>(m, d, w0, record, CLK(0));
  if (ev) cudaEventRecord(ev[1]);
  k_sub_collision<<<nb, nt, 0, st>>>(m, d, w0, CLK(1));
  if (ev) cudaEventRecord(ev[2]);
  k_sub_smooth<<<nb, nt, 0, st>>>(m, d, w0, CLK(2));
  if (ev) cudaEventRecord(ev[3]);
  k_sub_rows<<<nb, nt, 0, st>>>(m, d, w0, CLK(3));
  if (ev) cudaEventRecord(ev[4]);
  k_sub_constraint<<<nb, nt, sh, st>>>(m, d, w0, sh > 0, record, CLK(4));
  if (ev) cudaEventRecord(ev[5]);
  k_sub_repair<<<nb, nt, 0, st>>>(m, d, w0, CLK(5));
  if (ev) cudaEventRecord(ev[6]);
  k_sub_integrate<<<nb, nt, 0, st>>>(m, d, w0, record, CLK(6));
  if (ev) cudaEventRecord(ev[7]);
#undef CLK
}

void simcuda_launch_step(const SimModel* m, const SimData* d, int nworld, int staged, int nv) {
  if (staged) launch_substep(m, d, nworld, 0, nworld, 0, 0, staged, nv, NULL, NULL);
  else k_step<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d);
}

typedef struct {
  const SimModel* m;
  const SimData* d;
  int nworld, record, staged, nv;
  cudaEvent_t* ev;
  unsigned long long* clk;
} SubstepArgs;

static void group_substep(const void* ctx, int s, int w0, int n, cudaStream_t st) {
  const SubstepArgs* a = (const SubstepArgs*)ctx;
  launch_substep(a->m, a->d, a->nworld, w0, n, st, a->record, a->staged, a->nv,
                 a->ev ? a->ev + s * (SIMCUDA_NSUB_KERNEL + 1) : NULL,
                 a->clk ? a->clk + (size_t)s * SIMCUDA_NSUB_KERNEL * SIMCUDA_CLOCK_WORDS * a->nworld : NULL);
}

void simcuda_launch_control_step(const SimModel* m, const SimData* d, int nworld, int nsub, int record, int staged,
                                 int nv, int ngroup, cudaEvent_t* ev, unsigned long long* clk) {
  if (!staged) {
    k_control_step<<<simcuda_blocks(nworld), 32 * SIMCUDA_WPB>>>(m, d, nsub, record);
    return;
  }
  SubstepArgs a = {m, d, nworld, record, staged, nv, ev, clk};
  simcuda_launch_groups(nworld, nsub, ev || clk ? 1 : ngroup, group_substep, &a);
}
