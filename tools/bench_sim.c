// bench_sim.c: `adjoint bench sim MODEL`: physics steps per second of our CUDA backend beside MuJoCo C on
#define _POSIX_C_SOURCE 200809L
// all CPU threads, measured in the same run.
#include <mujoco/mujoco.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/sim.h"
#include "sim/sim_adjoint.h"
#include "tools/cli.h"
#if defined(ADJ_HAVE_CUDA)
#include "sim/cuda/sim_cuda.h"
#endif

static const char* kUsage =
    "usage: adjoint bench sim MODEL.xml [--nworld N] [--steps S] [--threads T] [--nconmax C] [--no-constraint]\n"
    "                       [--no-contact] [--grad NSUB]\n"
    "Physics steps/s: our CUDA backend (float32, CUDA events, median of 5 after warm-up) and MuJoCo C\n"
    "(float64, one mjData per world, T threads; default all cores). --grad NSUB also times one control step of\n"
    "NSUB substeps: plain steps, with gradients enabled (not recording), and recorded forward + backward.\n";

typedef struct {
  const mjModel* m;
  int w0, w1, nstep;
  const double* qpos0;
} Job;

static void* mj_worker(void* arg) {
  Job* j = (Job*)arg;
  mjData* d = mj_makeData(j->m);
  for (int w = j->w0; w < j->w1; w++) {
    mj_resetData(j->m, d);
    if (j->m->nkey) mj_resetDataKeyframe(j->m, d, 0);
    for (int k = 0; k < j->nstep; k++) mj_step(j->m, d);
  }
  mj_deleteData(d);
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int bench_sim_main(int argc, char** argv) {
  const char* model = NULL;
  int nworld = 4096, nstep = 100, nthread = (int)sysconf(_SC_NPROCESSORS_ONLN), gradsub = 0;
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      fputs(kUsage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--nworld")) {
      if (cli_int(argc, argv, &i, 1, 1 << 24, &nworld)) return 2;
    } else if (!strcmp(argv[i], "--steps")) {
      if (cli_int(argc, argv, &i, 1, 1 << 20, &nstep)) return 2;
    } else if (!strcmp(argv[i], "--threads")) {
      if (cli_int(argc, argv, &i, 1, 4096, &nthread)) return 2;
    } else if (!strcmp(argv[i], "--grad")) {
      if (cli_int(argc, argv, &i, 1, 64, &gradsub)) return 2;
    } else if (!strcmp(argv[i], "--nconmax")) {
      int c;
      if (cli_int(argc, argv, &i, 1, 1 << 20, &c)) return 2;
      sim_collision_nconmax_override = c;
    } else if (!strcmp(argv[i], "--no-constraint")) {
      opt.disable_add |= mjDSBL_CONSTRAINT;
    } else if (!strcmp(argv[i], "--no-contact")) {
      opt.disable_add |= mjDSBL_CONTACT;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "adjoint bench sim: unknown option '%s'\n", argv[i]);
      return 2;
    } else {
      model = argv[i];
    }
  }
  if (!model) {
    fputs(kUsage, stderr);
    return 2;
  }
  char err[4096];
  void* mjv = NULL;
  if (sim_load_mjcf(model, &opt, &mjv, err, sizeof(err))) {
    fprintf(stderr, "adjoint bench sim: %s\n", err);
    return 2;
  }
  const mjModel* mm = (const mjModel*)mjv;
  printf("model %s  nv %d  nworld %d  steps %d  constraints %s\n", model, (int)mm->nv, nworld, nstep,
         (mm->opt.disableflags & mjDSBL_CONSTRAINT) ? "off" : (mm->opt.disableflags & mjDSBL_CONTACT) ? "no contacts" : "on");
#if defined(ADJ_HAVE_CUDA)
  SimModel* m = NULL;
  SimData* d = NULL;
  SimCuda* g = NULL;
  if (sim_model_import(mjv, &m, err, sizeof(err))) {
    fprintf(stderr, "adjoint bench sim: %s\n", err);
    return 2;
  }
  if (simcuda_device_count() > 0 && !sim_data_create(m, nworld, &d) && !simcuda_create(m, nworld, &g)) {
    sim_reset(m, d, -1, m->nkey ? 0 : -1);
    double ms = 0;
    if (simcuda_upload(g, d) || simcuda_time_steps(g, nstep, 5, &ms)) {
      fprintf(stderr, "adjoint bench sim: CUDA: %s\n", simcuda_last_error());
      return 1;
    }
    printf("ours (CUDA float32, 1 warp/world, nconmax %d):  %.4f ms/step  %.3e steps/s\n", m->nconmax, ms,
           nworld / (ms * 1e-3));
    simcuda_free(g);
    sim_data_free(d);
    if (gradsub) {  // the same model with gradients enabled: a tape of one control step
      SimData* dg = NULL;
      SimCuda* gg = NULL;
      double t0 = 0, t1 = 0, t2 = 0;
      if (sim_adjoint_enable(m, gradsub) || sim_data_create(m, nworld, &dg) || simcuda_create(m, nworld, &gg)) {
        fprintf(stderr, "adjoint bench sim: gradient setup failed: %s\n", simcuda_last_error());
        return 1;
      }
      sim_reset(m, dg, -1, m->nkey ? 0 : -1);
      if (simcuda_time_control(gg, dg, gradsub, 0, 20, &t0) || simcuda_time_control(gg, dg, gradsub, 1, 20, &t1) ||
          simcuda_time_control(gg, dg, gradsub, 2, 20, &t2)) {
        fprintf(stderr, "adjoint bench sim: CUDA: %s\n", simcuda_last_error());
        return 1;
      }
      printf("control step (%d substeps, %d worlds): plain step kernel %.4f ms | gradients enabled, not "
             "recording %.4f ms | recorded forward + backward %.4f ms\n", gradsub, nworld, t0, t1, t2);
      simcuda_free(gg);
      sim_data_free(dg);
    }
  } else {
    printf("ours (CUDA): no device\n");
  }
  sim_model_free(m);
#endif
  // MuJoCo C, float64, nthread threads, a share of the worlds each, the same number of steps
  int nw = nworld < 256 ? nworld : 256;  // enough worlds to time the CPU without taking minutes
  pthread_t* th = (pthread_t*)malloc(sizeof(pthread_t) * nthread);
  Job* jobs = (Job*)malloc(sizeof(Job) * nthread);
  double t0 = now_s();
  for (int t = 0; t < nthread; t++) {
    jobs[t] = (Job){mm, nw * t / nthread, nw * (t + 1) / nthread, nstep, NULL};
    pthread_create(&th[t], NULL, mj_worker, &jobs[t]);
  }
  for (int t = 0; t < nthread; t++) pthread_join(th[t], NULL);
  double dt = now_s() - t0;
  printf("MuJoCo C (float64, %d threads, %d worlds): %.3e steps/s\n", nthread, nw, (double)nw * nstep / dt);
  free(th);
  free(jobs);
  sim_free_mjmodel(mjv);
  return 0;
}
