// sim_cuda.cu: CUDA backend of the engine, host side (allocation, copies, launches, timing). The per-world
// physics is the same source as the CPU engine (sim_forward.c and the stage files it includes); its kernels
// (sim_cuda_launch.h: one warp per world, 32 lanes striding each world's bodies, dofs and joints, __syncwarp
// between dependent phases) live in three translation units that compile in parallel.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_check.cuh"
#include "sim/cuda/sim_cuda.h"
#include "sim/cuda/sim_cuda_launch.h"
#include "sim/sim_common.h"

struct SimCuda {
  SimModel hm;        // host struct with device pointers
  SimData hd;         // host struct with device pointers
  SimModel* dm;       // device copy of hm
  SimData* dd;        // device copy of hd
  void* model_buf;
  void* data_buf;
  const void* host_model_buf;  // to rebase host pointers
  int staged;         // 0: fused kernels; 1, 2: one kernel per group of stages (simcuda_set_staged)
  int nstream;        // world groups on streams of the staged control step and backward (simcuda_set_streams;
                      // 0: by the batch's size)
  int carveout;       // the staged kernels' shared-memory carve-out mode (simcuda_set_carveout)
};

static char g_err[512] = "";
const char* simcuda_last_error(void) { return g_err; }

// the project's one CUDA check (common/cuda_check.cuh), recording into the buffer simcuda_last_error returns
#define CU_CHECK(call) ADJ_CUDA_CHECK(call, g_err, sizeof(g_err), SIM_ERR_CUDA)

extern "C" int simcuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

extern "C" int simcuda_create(const SimModel* m, int nworld, SimCuda** out) {
  *out = NULL;
  SimCuda* g = (SimCuda*)calloc(1, sizeof(SimCuda));
  if (!g) return SIM_ERR_ALLOC;
  *out = g;
  // model: one buffer, pointers rebased
  g->hm = *m;
  CU_CHECK(cudaMalloc(&g->model_buf, m->nbuffer ? m->nbuffer : 1));
  CU_CHECK(cudaMemcpy(g->model_buf, m->buffer, m->nbuffer, cudaMemcpyHostToDevice));
  char* base = (char*)g->model_buf;
  const char* hbase = (const char*)m->buffer;
#define X(type, name, count, width) g->hm.name = (type*)(base + ((const char*)m->name - hbase));
  SIM_MODEL_FIELDS
#undef X
  g->hm.buffer = g->model_buf;
  g->hm.on_device = 1;
  CU_CHECK(cudaMalloc((void**)&g->dm, sizeof(SimModel)));
  CU_CHECK(cudaMemcpy(g->dm, &g->hm, sizeof(SimModel), cudaMemcpyHostToDevice));
  // data: same layout as sim_data_create (64-byte aligned fields, world-major)
  size_t total = 0;
#define X(type, name, count, width) total += (sizeof(type) * (size_t)nworld * (size_t)m->count * (width) + 63) / 64 * 64;
  SIM_DATA_FIELDS
#undef X
  CU_CHECK(cudaMalloc(&g->data_buf, total));
  CU_CHECK(cudaMemset(g->data_buf, 0, total));
  size_t off = 0;
  char* dbase = (char*)g->data_buf;
#define X(type, name, count, width) \
  g->hd.name = (type*)(dbase + off); \
  off += (sizeof(type) * (size_t)nworld * (size_t)m->count * (width) + 63) / 64 * 64;
  SIM_DATA_FIELDS
#undef X
  g->hd.nworld = nworld;
  sim_world_strides(m, g->hd.world_stride);
  g->hd.buffer = g->data_buf;
  g->hd.nbuffer = total;
  g->hd.on_device = 1;
  CU_CHECK(cudaMalloc((void**)&g->dd, sizeof(SimData)));
  CU_CHECK(cudaMemcpy(g->dd, &g->hd, sizeof(SimData), cudaMemcpyHostToDevice));
  simcuda_set_staged(g, 2);  // the default launch
  simcuda_set_streams(g, 0);
  int rc = simcuda_set_carveout(g, SIMCUDA_DEFAULT_CARVEOUT);
  return rc < 0 ? rc : SIM_OK;
}

extern "C" int simcuda_set_staged(SimCuda* g, int staged) {
  int before = g->staged;
  g->staged = g->hm.integrator == SIM_INT_RK4 ? 0 : staged == 2 ? 2 : staged != 0;
  // the solver kernels' shared memory depends on the mode: the carve-out again, for it
  if (g->carveout && g->staged != before) {
    int rc = simcuda_set_carveout(g, g->carveout);
    if (rc < 0) return rc;
  }
  return g->staged;
}

extern "C" int simcuda_staged(const SimCuda* g) { return g->staged; }

extern "C" int simcuda_set_streams(SimCuda* g, int nstream) {
  g->nstream = nstream < 0 ? 0 : nstream > SIMCUDA_MAX_STREAMS ? SIMCUDA_MAX_STREAMS : nstream;
  return simcuda_streams(g);
}

// the least carve-out (percent of the SM's shared memory) that keeps kernel k's blocks per SM: as many blocks as
// the default allows, each with its static, dynamic and the driver's reserved shared memory
static int carveout_least(const SimcudaKernelRef* k, int nthread, int smem_sm, int reserved, int* pct) {
  cudaFuncAttributes fa;
  int nb = 0, nb2 = 0;
  CU_CHECK(cudaFuncSetAttribute(k->fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutDefault));
  CU_CHECK(cudaFuncGetAttributes(&fa, k->fn));
  CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k->fn, nthread, k->dyn));
  size_t need = (size_t)nb * (fa.sharedSizeBytes + k->dyn + (size_t)reserved);
  *pct = (int)((need * 100 + (size_t)smem_sm - 1) / (size_t)smem_sm);
  for (; *pct < 100; ++*pct) {  // the driver rounds up to a configuration; make sure it keeps nb
    CU_CHECK(cudaFuncSetAttribute(k->fn, cudaFuncAttributePreferredSharedMemoryCarveout, *pct));
    CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb2, k->fn, nthread, k->dyn));
    if (nb2 >= nb) return SIM_OK;
  }
  CU_CHECK(cudaFuncSetAttribute(k->fn, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  return SIM_OK;
}

// the preferred carve-out of each staged kernel as simcuda_set_carveout last set it (percent; -1: the driver's)
static int g_carveout_pct[SIMCUDA_NKERNEL] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

extern "C" int simcuda_set_carveout(SimCuda* g, int mode) {
  if (mode < 0 || mode > 4) {
    snprintf(g_err, sizeof(g_err), "simcuda_set_carveout: mode %d (0 to 4)", mode);
    return SIM_ERR_ARG;
  }
  SimcudaKernelRef k[SIMCUDA_NKERNEL];
  size_t sh = simcuda_solver_shmem(g->hm.nv, g->staged);
  int nstep = simcuda_step_kernels(k, sh);
  int n = nstep + simcuda_bwd_kernels(k + nstep, sh);
  int dev = 0, smem_sm = 0, reserved = 0, top = 0, top_step = 0;
  CU_CHECK(cudaGetDevice(&dev));
  CU_CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  CU_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  for (int i = 0; i < n; i++) {
    if (mode == 0 || (mode == 3 && i < nstep)) {
      CU_CHECK(cudaFuncSetAttribute(k[i].fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutDefault));
      g_carveout_pct[i] = -1;
      continue;
    }
    int rc = carveout_least(&k[i], 32 * SIMCUDA_WPB, smem_sm, reserved, &g_carveout_pct[i]);
    if (rc != SIM_OK) return rc;
    top = g_carveout_pct[i] > top ? g_carveout_pct[i] : top;
    if (i < nstep) top_step = g_carveout_pct[i] > top_step ? g_carveout_pct[i] : top_step;
  }
  for (int i = 0; i < n && (mode == 2 || (mode == 4 && i < nstep)); i++) {
    int pct = mode == 2 ? top : top_step;
    CU_CHECK(cudaFuncSetAttribute(k[i].fn, cudaFuncAttributePreferredSharedMemoryCarveout, pct));
    g_carveout_pct[i] = pct;
  }
  g->carveout = mode;
  return mode;
}

extern "C" int simcuda_carveout(int k) { return k >= 0 && k < SIMCUDA_NKERNEL ? g_carveout_pct[k] : -1; }

// 0: a group per SIMCUDA_GROUP_WORLDS worlds, up to SIMCUDA_AUTO_STREAMS; smaller batches stay on one stream,
// where more launches would cost more than the tails they fill
#define SIMCUDA_GROUP_WORLDS 1024
#define SIMCUDA_AUTO_STREAMS 4
extern "C" int simcuda_streams(const SimCuda* g) {
  if (g->nstream) return g->nstream;
  int n = g->hd.nworld / SIMCUDA_GROUP_WORLDS;
  return n < 1 ? 1 : n > SIMCUDA_AUTO_STREAMS ? SIMCUDA_AUTO_STREAMS : n;
}

extern "C" void simcuda_free(SimCuda* g) {
  if (!g) return;
  cudaFree(g->dm);
  cudaFree(g->dd);
  cudaFree(g->model_buf);
  cudaFree(g->data_buf);
  free(g);
}

extern "C" int simcuda_upload(SimCuda* g, const SimData* host) {
  if (host->nworld != g->hd.nworld || host->nbuffer != g->hd.nbuffer) {
    snprintf(g_err, sizeof(g_err), "simcuda_upload: batch shape differs from the device's");
    return SIM_ERR_ARG;
  }
  CU_CHECK(cudaMemcpy(g->data_buf, host->buffer, host->nbuffer, cudaMemcpyHostToDevice));
  return SIM_OK;
}

extern "C" int simcuda_download(SimCuda* g, SimData* host) {
  if (host->nworld != g->hd.nworld || host->nbuffer != g->hd.nbuffer) {
    snprintf(g_err, sizeof(g_err), "simcuda_download: batch shape differs from the device's");
    return SIM_ERR_ARG;
  }
  CU_CHECK(cudaMemcpy(host->buffer, g->data_buf, host->nbuffer, cudaMemcpyDeviceToHost));
  return SIM_OK;
}

extern "C" int simcuda_forward(SimCuda* g) {
  simcuda_launch_forward(g->dm, g->dd, g->hd.nworld);
  CU_CHECK(cudaGetLastError());
  return SIM_OK;
}

extern "C" int simcuda_step(SimCuda* g) {
  simcuda_launch_step(g->dm, g->dd, g->hd.nworld, g->staged, g->hm.nv);
  CU_CHECK(cudaGetLastError());
  return SIM_OK;
}

extern "C" int simcuda_stage(SimCuda* g, int stage) {
  simcuda_launch_stage(g->dm, g->dd, g->hd.nworld, stage);
  CU_CHECK(cudaGetLastError());
  return SIM_OK;
}

// nsub substeps per world, recording each substep's input on the tape (record: needs sim_adjoint_enable
// on the host model before simcuda_create; a full tape records nothing more)
extern "C" int simcuda_control_step(SimCuda* g, int nsub, int record) {
  if (record && !g->hm.adj) {
    snprintf(g_err, sizeof(g_err), "simcuda_control_step: gradients not enabled (sim_adjoint_enable)");
    return SIM_ERR_ARG;
  }
  simcuda_launch_control_step(g->dm, g->dd, g->hd.nworld, nsub, record, g->staged, g->hm.nv, simcuda_streams(g),
                              NULL, NULL);
  CU_CHECK(cudaGetLastError());
  return SIM_OK;
}

// pops nsub substeps: adj_qpos/adj_qvel (output cotangents) -> input cotangents, adj_ctrl
extern "C" int simcuda_control_step_backward(SimCuda* g, int nsub) {
  if (!g->hm.adj) {
    snprintf(g_err, sizeof(g_err), "simcuda_control_step_backward: gradients not enabled (sim_adjoint_enable)");
    return SIM_ERR_ARG;
  }
  simcuda_launch_control_step_backward(g->dm, g->dd, g->hd.nworld, nsub, g->staged, g->hm.nv, simcuda_streams(g),
                                       NULL, NULL);
  CU_CHECK(cudaGetLastError());
  return SIM_OK;
}

// empties every world's tape and zeroes the parameter cotangents (as sim_tape_clear)
extern "C" int simcuda_tape_clear(SimCuda* g) {
  if (!g->hm.adj) return SIM_OK;
  size_t nw = (size_t)g->hd.nworld;
  CU_CHECK(cudaMemset(g->hd.tape_n, 0, sizeof(int) * nw));
  CU_CHECK(cudaMemset(g->hd.adj_body_mass, 0, sizeof(float) * nw * g->hm.nbody));
  CU_CHECK(cudaMemset(g->hd.adj_body_ipos, 0, sizeof(float) * nw * 3 * g->hm.nbody));
  if (g->hm.ngeom) CU_CHECK(cudaMemset(g->hd.adj_geom_friction, 0, sizeof(float) * nw * 3 * g->hm.ngeom));
  return SIM_OK;
}

// the per-world parameter overrides of a host SimData (sim_param_set; same model and nworld) to the device
extern "C" int simcuda_upload_params(SimCuda* g, const SimData* host) {
  const SimModel* m = &g->hm;
  if (!m->prm) {
    snprintf(g_err, sizeof(g_err), "simcuda_upload_params: overrides not enabled (sim_params_enable)");
    return SIM_ERR_ARG;
  }
  if (host->nworld != g->hd.nworld || host->nbuffer != g->hd.nbuffer) {
    snprintf(g_err, sizeof(g_err), "simcuda_upload_params: batch shape differs from the device's");
    return SIM_ERR_ARG;
  }
  size_t nw = (size_t)g->hd.nworld;
#define X(type, name, count, width) \
  CU_CHECK(cudaMemcpy(g->hd.name, host->name, sizeof(type) * nw * (size_t)m->count * (width), cudaMemcpyHostToDevice));
  SIM_DATA_FIELDS_PARAM
#undef X
  return SIM_OK;
}

extern "C" int simcuda_sync(SimCuda* g) {
  CU_CHECK(cudaDeviceSynchronize());
  return SIM_OK;
}

extern "C" const SimModel* simcuda_model(const SimCuda* g) { return g->dm; }
extern "C" SimData* simcuda_data(SimCuda* g) { return g->dd; }

static int cmp_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

// median over nrep repetitions of the time of nstep consecutive steps (CUDA events), after one warm-up
extern "C" int simcuda_time_steps(SimCuda* g, int nstep, int nrep, double* ms_per_step) {
  cudaEvent_t a, b;
  CU_CHECK(cudaEventCreate(&a));
  CU_CHECK(cudaEventCreate(&b));
  float* t = (float*)malloc(sizeof(float) * (size_t)nrep);
  for (int r = -1; r < nrep; r++) {
    CU_CHECK(cudaEventRecord(a));
    for (int k = 0; k < nstep; k++) simcuda_launch_step(g->dm, g->dd, g->hd.nworld, g->staged, g->hm.nv);
    CU_CHECK(cudaGetLastError());
    CU_CHECK(cudaEventRecord(b));
    CU_CHECK(cudaEventSynchronize(b));
    if (r >= 0) CU_CHECK(cudaEventElapsedTime(&t[r], a, b));
  }
  qsort(t, (size_t)nrep, sizeof(float), cmp_float);
  *ms_per_step = (double)t[nrep / 2] / nstep;
  free(t);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return SIM_OK;
}

// median over nrep of one control step of nsub substeps, timed with CUDA events after one warm-up; the
// batch is reset to `start` (untimed) before each repetition. grad 0: plain steps (the step kernel, no
// adjoint code); 1: control step with gradients enabled, not recording; 2: recorded control step and its
// backward.
extern "C" int simcuda_time_control(SimCuda* g, const SimData* start, int nsub, int grad, int nrep,
                                    double* ms_median) {
  cudaEvent_t a, b;
  CU_CHECK(cudaEventCreate(&a));
  CU_CHECK(cudaEventCreate(&b));
  float* t = (float*)malloc(sizeof(float) * (size_t)nrep);
  int rc = SIM_OK;
  for (int r = -1; r < nrep && !rc; r++) {
    rc = simcuda_upload(g, start);
    if (!rc && grad == 2) rc = simcuda_tape_clear(g);
    if (rc) break;
    CU_CHECK(cudaEventRecord(a));
    if (grad == 0 && g->staged) {
      rc = simcuda_control_step(g, nsub, 0);  // the staged step's kernels nsub times, on the streams set
    } else if (grad == 0) {
      for (int k = 0; k < nsub && !rc; k++) rc = simcuda_step(g);
    } else {
      rc = simcuda_control_step(g, nsub, grad == 2);
      if (!rc && grad == 2) rc = simcuda_control_step_backward(g, nsub);
    }
    CU_CHECK(cudaEventRecord(b));
    CU_CHECK(cudaEventSynchronize(b));
    if (r >= 0) CU_CHECK(cudaEventElapsedTime(&t[r], a, b));
  }
  if (!rc) {
    qsort(t, (size_t)nrep, sizeof(float), cmp_float);
    *ms_median = (double)t[nrep / 2];
  }
  free(t);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return rc;
}

static_assert(SIMCUDA_NKERNEL == SIMCUDA_NSUB_KERNEL + SIMCUDA_NBWD_KERNEL, "the kernel list");

// the batch reset to start, then a recorded control step and its backward, staged, synchronised: ev and clk
// (NULL, or the forward's entries first) as simcuda_launch_control_step and _backward take them
static int recorded_run(SimCuda* g, const SimData* start, int nsub, cudaEvent_t* ev, unsigned long long* clk) {
  int rc = simcuda_upload(g, start);
  if (!rc) rc = simcuda_tape_clear(g);
  if (rc) return rc;
  size_t fw = (size_t)nsub * SIMCUDA_NSUB_KERNEL;
  simcuda_launch_control_step(g->dm, g->dd, g->hd.nworld, nsub, 1, g->staged, g->hm.nv, 1, ev, clk);
  simcuda_launch_control_step_backward(g->dm, g->dd, g->hd.nworld, nsub, g->staged, g->hm.nv, 1,
                                       ev ? ev + nsub * (SIMCUDA_NSUB_KERNEL + 1) : NULL,
                                       clk ? clk + fw * SIMCUDA_CLOCK_WORDS * g->hd.nworld : NULL);
  return cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ? SIM_ERR_CUDA : SIM_OK;
}

// per-kernel medians of the staged launch (simcuda_time_kernels): events between the kernels of each substep
extern "C" int simcuda_time_kernels(SimCuda* g, const SimData* start, int nsub, int nrep, double* ms) {
  if (!g->staged || !g->hm.adj || nsub < 1 || nrep < 1) {
    snprintf(g_err, sizeof(g_err), "simcuda_time_kernels: needs the staged launch, gradients enabled, nsub, nrep > 0");
    return SIM_ERR_ARG;
  }
  const int kf = SIMCUDA_NSUB_KERNEL + 1, kb = SIMCUDA_NBWD_KERNEL + 1, nk = SIMCUDA_NKERNEL;
  int nev = nsub * (kf + kb), rc = SIM_OK;
  cudaEvent_t* ev = (cudaEvent_t*)calloc((size_t)nev, sizeof(cudaEvent_t));
  float* t = (float*)calloc((size_t)nk * nrep, sizeof(float));
  if (!ev || !t) {
    free(ev), free(t);
    return SIM_ERR_ALLOC;
  }
  for (int i = 0; i < nev && !rc; i++)
    if (cudaEventCreate(&ev[i]) != cudaSuccess) rc = SIM_ERR_CUDA;
  for (int r = -1; r < nrep && !rc; r++) {
    rc = recorded_run(g, start, nsub, ev, NULL);
    for (int s = 0; s < nsub && !rc && r >= 0; s++)
      for (int k = 0; k < nk; k++) {
        cudaEvent_t* e = k < kf - 1 ? ev + s * kf + k : ev + nsub * kf + s * kb + (k - (kf - 1));
        float x = 0;
        if (cudaEventElapsedTime(&x, e[0], e[1]) != cudaSuccess) rc = SIM_ERR_CUDA;
        t[(size_t)k * nrep + r] += x;
      }
  }
  if (rc == SIM_ERR_CUDA) snprintf(g_err, sizeof(g_err), "simcuda_time_kernels: %s", cudaGetErrorString(cudaGetLastError()));
  for (int k = 0; k < nk && !rc; k++) {
    qsort(t + (size_t)k * nrep, (size_t)nrep, sizeof(float), cmp_float);
    ms[k] = (double)t[(size_t)k * nrep + nrep / 2];
  }
  for (int i = 0; i < nev; i++)
    if (ev[i]) cudaEventDestroy(ev[i]);
  free(ev), free(t);
  return rc;
}

// world clocks of one recorded control step and its backward (simcuda_world_clock), after one run as warm-up
extern "C" int simcuda_world_clock(SimCuda* g, const SimData* start, int nsub, unsigned long long* rec) {
  if (!g->staged || !g->hm.adj || nsub < 1) {
    snprintf(g_err, sizeof(g_err), "simcuda_world_clock: needs the staged launch, gradients enabled, nsub > 0");
    return SIM_ERR_ARG;
  }
  size_t nw = (size_t)g->hd.nworld, words = (size_t)nsub * SIMCUDA_NKERNEL * SIMCUDA_CLOCK_WORDS * nw;
  unsigned long long* clk = NULL;
  CU_CHECK(cudaMalloc((void**)&clk, words * sizeof(unsigned long long)));
  int rc = recorded_run(g, start, nsub, NULL, NULL);
  if (!rc) rc = recorded_run(g, start, nsub, NULL, clk);
  if (!rc && cudaMemcpy(rec, clk, words * sizeof(unsigned long long), cudaMemcpyDeviceToHost) != cudaSuccess)
    rc = SIM_ERR_CUDA;
  if (rc == SIM_ERR_CUDA) snprintf(g_err, sizeof(g_err), "simcuda_world_clock: %s", cudaGetErrorString(cudaGetLastError()));
  cudaFree(clk);
  return rc;
}

extern "C" const char* simcuda_kernel_name(int k) {
  static const char* name[SIMCUDA_NKERNEL] = {"position", "collision", "smooth", "rows", "constraint", "repair",
                                              "integrate", "bwd_pre", "bwd_solver", "bwd_smooth"};
  return k >= 0 && k < SIMCUDA_NKERNEL ? name[k] : "";
}
