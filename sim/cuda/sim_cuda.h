// sim_cuda.h: the CUDA backend (float32). The device holds one copy of SimModel and one SimData batch with
// the same layout as the host's, so upload/download are single copies. One warp steps one world.
#ifndef ADJ_SIM_CUDA_H
#define ADJ_SIM_CUDA_H

#include "sim/sim_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct SimCuda SimCuda;

int simcuda_device_count(void);           // 0 when no device (or no driver)
const char* simcuda_last_error(void);     // message of the last failed call

// device copies of m and of a batch of nworld worlds (state zeroed; upload a host SimData to set it)
int simcuda_create(const SimModel_f32* m, int nworld, SimCuda** out);
void simcuda_free(SimCuda* g);

// whole-batch copies between a host SimData (same model and nworld) and the device
int simcuda_upload(SimCuda* g, const SimData_f32* host);
int simcuda_download(SimCuda* g, SimData_f32* host);

// How steps, control steps and their backward launch (the same bits in every mode): 0 fused (one kernel per
// step, control step or backward), 1 staged (one kernel per group of stages, each with its own registers and
// code; on the H200 1.3-1.5x faster than fused forward and 1.8-2.5x with the backward, G1 and humanoid,
// bench/RESULTS.md 2026-12-05), 2 (the default) staged with the Newton solver's dense scratch in shared memory,
// where the factor and its solves load it as shared memory (models with nv <= 39; otherwise as 1; on the H100
// 3 % / 8 % less time than 1 on the G1 / humanoid forward, bench/RESULTS.md 2026-12-06). Returns the mode set
// (RK4 models stay fused), or an error code where the carve-out (below), set again for the new mode, fails.
int simcuda_set_staged(SimCuda* g, int staged);
int simcuda_staged(const SimCuda* g);
// The staged control step and its backward in nstream groups of consecutive worlds, each group's kernels on a
// stream of its own, so that one group's kernels fill the GPU while another's launch waits on its slowest worlds
// (sim_cuda_launch.h). The same bits for every count; 1: one launch per kernel on the legacy stream; 0 (the
// default): one group per 1024 worlds, at most 4 (G1, 4096 worlds, H100: forward 7.94 -> 6.99 ms, with the
// backward 14.13 -> 12.62 ms against one stream; 2 and 8 streams less; bench/RESULTS.md 2026-12-07).
// simcuda_streams: the count the batch's launches use (1 to 8).
int simcuda_set_streams(SimCuda* g, int nstream);
int simcuda_streams(const SimCuda* g);

// The staged kernels' shared-memory carve-out (the part of each SM's 256 KB of L1 and shared memory kept as shared
// memory), set for the process, for the launch mode set now (simcuda_set_staged sets it again when the mode changes): 0
// the driver's choice, which sizes it for the blocks per SM the kernel's shared memory alone would allow (the position
// kernel: 14 blocks, 100 KB, where its registers allow 5); 1 each kernel the least that keeps the blocks per SM its
// registers allow, the rest left to L1; 2 one size for all, the largest of 1's, so that the groups' kernels on streams
// need no other configuration beside each other; 3 (the default, SIMCUDA_DEFAULT_CARVEOUT, set by simcuda_create) the
// backward's three kernels as 1, the substep's seven as 0; 4 the backward's as 1, the substep's seven at one size, the
// largest of their 1's, so that the groups' substep kernels need no other configuration beside each other. G1, 4096
// worlds, H100: mode 1 made the forward 3-4 % slower and the recorded forward + backward 1.2-1.4 % faster; mode 3 kept
// the forward and took 3 % off the forward + backward (bench/RESULTS.md 2026-12-07). The same bits in every mode.
// Returns the mode set, or an error code. simcuda_carveout: staged kernel k's preferred carve-out as last set, in
// percent of the SM's shared memory (-1: the driver's; kernels numbered as simcuda_kernel_name's).
#define SIMCUDA_DEFAULT_CARVEOUT 3
int simcuda_set_carveout(SimCuda* g, int mode);
int simcuda_carveout(int k);

int simcuda_forward(SimCuda* g);           // mj_forward for every world
int simcuda_step(SimCuda* g);              // mj_step for every world
int simcuda_stage(SimCuda* g, int stage);  // one SIM_STAGE_* for every world
int simcuda_sync(SimCuda* g);

// reverse-mode gradient (sim_adjoint.h semantics; enable it on the host model before simcuda_create):
// control step with optional recording, backward of the last recorded control step, tape reset
int simcuda_control_step(SimCuda* g, int nsub, int record);
int simcuda_control_step_backward(SimCuda* g, int nsub);
int simcuda_tape_clear(SimCuda* g);  // also zeroes the parameter cotangents, as sim_tape_clear

// per-world parameter overrides (sim.h; enable them on the host model before simcuda_create, so the device
// batch holds them): set them on a host SimData of the same shape with sim_param_set, then copy just those
// arrays (simcuda_upload copies them with everything else). SIM_ERR_ARG when overrides are off.
int simcuda_upload_params(SimCuda* g, const SimData_f32* host);

// median over nrep of the time of nstep consecutive steps (CUDA events, after one warm-up), per step in ms
int simcuda_time_steps(SimCuda* g, int nstep, int nrep, double* ms_per_step);

// median over nrep of one control step of nsub substeps (CUDA events; batch reset to start, untimed, before
// each repetition). grad 0: plain step kernel; 1: control step, gradients enabled, not recording;
// 2: recorded control step + its backward.
int simcuda_time_control(SimCuda* g, const SimData_f32* start, int nsub, int grad, int nrep, double* ms_median);

// the staged launch's kernels one by one (simcuda_kernel_name): the substep's seven (position, collision, smooth,
// rows, constraint, repair, integrate) and the backward's three (bwd_pre, bwd_solver, bwd_smooth). ms[k]: median over
// nrep of kernel k's time summed over a recorded control step of nsub substeps and its backward (CUDA events
// between the kernels; batch reset to start before each repetition). Needs the staged launch and gradients.
#define SIMCUDA_NSUB_KERNEL 7
#define SIMCUDA_NBWD_KERNEL 3
#define SIMCUDA_NKERNEL 10
#define SIMCUDA_SUB_SOLVER 4  // the substep's Newton solve ("constraint") among its kernels
int simcuda_time_kernels(SimCuda* g, const SimData_f32* start, int nsub, int nrep, double* ms);
const char* simcuda_kernel_name(int k);

// Where a staged kernel's time goes world by world: one recorded control step of nsub substeps and its backward
// from start (after the same run once as warm-up), each kernel launch's worlds clocked (sim_cuda_launch.h). rec:
// nsub x SIMCUDA_NKERNEL launches (the substeps' seven kernels in launch order, then the backward's three per
// substep), each SIMCUDA_CLOCK_WORDS x nworld words: per world its global-timer start and end (ns), its SM's cycles
// between them, and (SM id | contacts << 16 | rows << 32 | Newton iterations << 48) at its end. The same bits as
// without the clocks. Needs the staged launch and gradients.
#define SIMCUDA_CLOCK_WORDS 4
int simcuda_world_clock(SimCuda* g, const SimData_f32* start, int nsub, unsigned long long* rec);

// device pointers (for code that fuses work with the engine, e.g. the trainer)
const SimModel_f32* simcuda_model(const SimCuda* g);
SimData_f32* simcuda_data(SimCuda* g);

#ifdef __cplusplus
}
#endif

#endif
