// g1_sampler_cuda: the G1 tracking task's adaptive start sampler on the CUDA batch (env_cuda_step: the step
// kernel's reports, the one-block shared update, the reset kernel) against the CPU batch (env_step, float32
// engine), 64 worlds on one LAFAN1 clip with forced failures (term_anchor_z = 0: every world terminates every
// step, so the failing bins follow from the starts alone, whatever the physics' rounding) for four steps: the
// failure counts, the EMA, the CDF and the top bin equal bit for bit, the entropy within 1e-12 (log differs
// between the C library and CUDA), and every world's start (clip, frame) and reset stream agree.
// ADJ_GPU_TEST_SMALL (tests/gpu_test_size.h): 16 worlds. Skips (77) without a device, the clip or the model.
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "envs/env_cuda.h"
#include "sim/cuda/sim_cuda.h"
#include "tests/gpu_test_size.h"
#include "tests/test.h"

#define NA 29
#define CLIP "lafan1_g1/walk1_subject1.csv.gz"
#define PARAMS "motion=" CLIP ", term_anchor_z=0, adaptive_alpha=0.25"

static int field(const EnvBatch* e, const char* name) {
  for (int k = 0; k < e->task->info.nshared; k++)
    if (!strcmp(e->task->info.shared[k].name, name)) return k;
  return -1;
}
static int state_field(const EnvBatch* e, const char* name) {
  for (int k = 0; k < e->task->info.nstate; k++)
    if (!strcmp(e->task->info.state[k].name, name)) return k;
  return -1;
}

int main(void) {
  char path[1024], err[2048];
  if (simcuda_device_count() == 0) {
    printf("g1_sampler_cuda: no CUDA device: skipped\n");
    return 77;
  }
  if (sim_find_asset(CLIP, path, sizeof(path)) || sim_find_asset("g1/scene_flat.xml", path, sizeof(path))) {
    printf("g1_sampler_cuda: %s or g1/scene_flat.xml not on the asset path: skipped\n", CLIP);
    return 77;
  }
  const int nw = gpu_test_size(64, 16);
  EnvBatch *cpu = NULL, *gpu = NULL;
  if (env_create_params(&cpu, "g1_tracking", PARAMS, nw, 0, 5, err, sizeof(err)) ||
      env_create_params(&gpu, "g1_tracking", PARAMS, nw, 0, 5, err, sizeof(err))) {
    fprintf(stderr, "g1_sampler_cuda: %s\n", err);
    return 1;
  }
  EnvCuda* g = NULL;
  if (env_cuda_create(&g, gpu, err, sizeof(err))) {
    fprintf(stderr, "g1_sampler_cuda: env_cuda_create: %s\n", err);
    return strstr(err, "not in the CUDA build") ? 77 : 1;  // ADJ_CUDA_TASKS without g1_tracking
  }
  float* act = (float*)calloc(nw * NA, sizeof(float));
  float* dact = NULL;
  if (cudaMalloc((void**)&dact, sizeof(float) * nw * NA) != cudaSuccess ||
      cudaMemset(dact, 0, sizeof(float) * nw * NA) != cudaSuccess) {
    fprintf(stderr, "g1_sampler_cuda: cudaMalloc failed\n");
    return 1;
  }
  const int kf = field(cpu, "fail"), kc = field(cpu, "cdf"), kn = field(cpu, "count"), ks = field(cpu, "stat");
  const int sc = state_field(cpu, "clip"), sf = state_field(cpu, "frame");
  TEST_CHECK(kf >= 0 && kc >= 0 && kn >= 0 && ks >= 0 && sc >= 0 && sf >= 0, "the task's sampler fields");
  for (int step = 1; step <= 4; step++) {
    env_step(cpu, act);
    TEST_CHECK(env_cuda_step(g, dact, NULL, 0) == 0, "step %d: %s", step, env_cuda_last_error(g));
    TEST_CHECK(env_cuda_download(g, gpu) == 0, "download: %s", env_cuda_last_error(g));
    int nterm = 0;
    for (int w = 0; w < nw; w++) nterm += cpu->terminated[w];
    TEST_CHECK(nterm == nw, "step %d: %d of %d CPU worlds terminated", step, nterm, nw);
    TEST_CHECK(!memcmp(cpu->shared[kn], gpu->shared[kn], env_shared_bytes(cpu, kn)), "step %d: failure counts differ",
               step);
    TEST_CHECK(!memcmp(cpu->shared[kf], gpu->shared[kf], env_shared_bytes(cpu, kf)), "step %d: failure EMA differs",
               step);
    const double *c1 = (const double*)cpu->shared[kc], *c2 = (const double*)gpu->shared[kc];
    int nb = cpu->shared_count[kc], first = -1;
    for (int b = 0; b < nb && first < 0; b++)
      if (c1[b] != c2[b]) first = b;
    TEST_CHECK(first < 0, "step %d: CDFs differ from bin %d (cpu %.17g, cuda %.17g)", step, first,
               first < 0 ? 0 : c1[first], first < 0 ? 0 : c2[first]);
    const double *s1 = (const double*)cpu->shared[ks], *s2 = (const double*)gpu->shared[ks];
    TEST_CHECK(fabs(s1[0] - s2[0]) < 1e-12 && s1[1] == s2[1] && s1[2] == s2[2] && s1[3] == s2[3],
               "step %d: statistics cpu (%.15g %.15g %g %g), cuda (%.15g %.15g %g %g)", step, s1[0], s1[1], s1[2], s1[3],
               s2[0], s2[1], s2[2], s2[3]);
    TEST_CHECK(!memcmp(cpu->state[sc], gpu->state[sc], 4 * nw) && !memcmp(cpu->state[sf], gpu->state[sf], 4 * nw) &&
                   !memcmp(cpu->rng, gpu->rng, 8 * nw),
               "step %d: the worlds' starts or reset streams differ", step);
    printf("  step %d: %d failures, entropy cpu %.15f cuda %.15f, top p %.6g\n", step, nterm, s1[0], s2[0], s1[1]);
  }
  cudaFree(dact);
  free(act);
  env_cuda_destroy(g);
  env_destroy(cpu);
  env_destroy(gpu);
  return test_report("g1_sampler_cuda");
}
