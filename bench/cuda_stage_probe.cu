// cuda_stage_probe.cu: one kernel per pipeline stage (and per backward phase), each running only that stage of
// the engine in the production kernels' prologue (SIMCUDA_VIEW). Never launched: bench/cuda_resources.sh
// compiles it so that ptxas reports the registers, stack and spills each stage needs on its own, which the
// fused kernels (their maximum over every stage) hide.
#include "sim/sim_forward.c"
#include "sim/cuda/sim_cuda_launch.h"

#define PROBE(name, call)                                                   \
  __global__ void SIMCUDA_BOUNDS probe_##name(const SimModel* m, const SimData* d) { \
    int w = blockIdx.x * SIMCUDA_WPB + threadIdx.x / 32;                   \
    if (w >= d->nworld) return;                                            \
    SIMCUDA_VIEW(m, d, w);                                                 \
    int lane = threadIdx.x & 31, nlane = 32;                               \
    call;                                                                  \
  }

PROBE(kinematics, sim_kinematics(m, wd, lane, nlane); sim_comPos(m, wd, lane, nlane))
PROBE(inertia, sim_crb(m, wd, lane, nlane); sim_factorI(m, wd->qLD, wd->qLDiagInv, lane, nlane))
PROBE(collision, sim_collision(m, wd, lane, nlane))
PROBE(smooth, sim_comVel(m, wd, lane, nlane); sim_passive(m, wd, lane, nlane); sim_rne(m, wd, lane, nlane);
      sim_actuation(m, wd, lane, nlane))
PROBE(rows, sim_make_rows(m, wd, lane, nlane))
PROBE(solver, sim_solve(m, wd, 0, lane, nlane))
PROBE(integrator, sim_implicitfast(m, wd, lane, nlane))
PROBE(rk4, sim_rk4_world(m, wd, lane, nlane))
PROBE(one_stage, sim_stage_world(m, wd, d->nworld & 15, lane, nlane))
PROBE(two_stages, sim_stage_world(m, wd, SIM_STAGE_KINEMATICS, lane, nlane);
      sim_stage_world(m, wd, SIM_STAGE_COLLISION, lane, nlane))
PROBE(forward, sim_forward_world(m, wd, lane, nlane))
PROBE(forward_loop, for (int s = SIM_STAGE_KINEMATICS; s <= SIM_STAGE_CONSTRAINT; s++) sim_stage_world(m, wd, s, lane, nlane))
PROBE(adj_solver, sim_adj_solver(m, wd, 0, lane, nlane))
PROBE(adj_smooth, sim_adj_smooth(m, wd, wd->adj_flags, lane, nlane))
PROBE(adj_forward_taped, sim_adj_forward_taped(m, wd, 0, lane, nlane))
