// algo_cuda_determinism: the CUDA trainer path (`adjoint train --device cuda`) through the CLI, for the SHAC,
// ∇Mimic and PPO presets, small (8 worlds, 16-step horizon, 40-step episodes so that time-outs and resets
// happen inside the rollouts):
//   - two runs with one seed in different directories give identical checkpoint datasets, one with the engine's
//     fused kernels, one staged (run.cuda_launch);
//   - stop at iteration 2 + `--resume` to 4 gives the same checkpoint datasets as an uninterrupted run to 4, the
//     stopped run's engine in two groups of worlds on streams of their own (run.cuda_streams);
//   - the checkpoint has the CPU path's dataset names, dtypes and shapes (a CPU run of the same config differs
//     in values only) and metrics.csv the same columns;
//   - `adjoint eval` (on the CPU) and `adjoint export` read the CUDA run's checkpoint;
//   - the same for quad_stand's SHAC preset and PPO on quad_stand: per-world task state and a critic
//     observation (env/task/*, env/critic_obs, the critic's normalizer */critic_obs_norm/*).
// ADJ_GPU_TEST_SMALL (tests/gpu_test_size.h): runs of 2 iterations (stop at 1 + resume to 2) with 24-step episodes
// (time-outs still inside the second rollout). Skips (77) without a device. Usage: algo_cuda_determinism
// PATH/TO/adjoint
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ckpt.h"
#include "sim/cuda/sim_cuda.h"
#include "tests/cli_run.h"
#include "tests/gpu_test_size.h"
#include "tests/test.h"

static char out[1 << 16];
static char report[1 << 15];

// %d: env.episode_steps, then run.checkpoint_every (the iteration a run stops at before its resume)
static const char* kShacArgs =
    "env.num_envs=8 algo.horizon=16 env.episode_steps=%d shac.critic_minibatches=2 shac.critic_iterations=4 "
    "policy.actor_hidden=[32,32] policy.critic_hidden=[32,32] run.checkpoint_every=%d --quiet";
static const char* kPpoArgs =
    "env.num_envs=8 algo.horizon=16 env.episode_steps=%d ppo.minibatches=2 ppo.epochs=2 "
    "policy.actor_hidden=[32,32] policy.critic_hidden=[32,32] run.checkpoint_every=%d --quiet";
static int iters = 4, stop = 2, episode = 40;  // the full size (ADJ_GPU_TEST_SMALL: 2, 1, 24)

static int same(const char* a, const char* b, const char* label) {
  int d = ckpt_compare(a, b, report, sizeof(report));
  TEST_CHECK(d == 0, "%s: %s vs %s: %d differences:\n%s", label, a, b, d, report);
  return d;
}

static void first_line(const char* path, char* line, size_t n) {
  line[0] = 0;
  FILE* f = fopen(path, "r");
  if (!f) return;
  if (!fgets(line, (int)n, f)) line[0] = 0;
  fclose(f);
}

static void run_preset(const char* adj, const char* dir, const char* cfg, const char* fmt, const char* tag) {
  char p1[700], p2[700], args[1024];
  int rc;
  snprintf(args, sizeof(args), fmt, episode, stop);
  // run a launches the engine fused, run b staged (run.cuda_launch): the same bits
  for (int k = 0; k < 2; k++) {
    rc = cli_run(out, sizeof(out), "%s train %s %s --device cuda --seed 7 --max-iterations %d --run-dir %s/%s%c%s",
                 adj, cfg, args, iters, dir, tag, 'a' + k, k ? " run.cuda_launch=staged" : " run.cuda_launch=fused");
    TEST_CHECK(rc == 0, "%s run %c: exit %d\n%s", tag, 'a' + k, rc, out);
  }
  for (int it = stop; it <= iters; it += stop) {
    snprintf(p1, sizeof(p1), "%s/%sa/ckpt_%06d.h5", dir, tag, it);
    snprintf(p2, sizeof(p2), "%s/%sb/ckpt_%06d.h5", dir, tag, it);
    same(p1, p2, "two CUDA runs, one seed, fused and staged");
  }
  rc = cli_run(out, sizeof(out),
               "%s train %s %s --device cuda --seed 7 --max-iterations %d --run-dir %s/%sc run.cuda_streams=2", adj,
               cfg, args, stop, dir, tag);
  TEST_CHECK(rc == 0, "%s run c: exit %d\n%s", tag, rc, out);
  rc = cli_run(out, sizeof(out), "%s train --resume %s/%sc --max-iterations %d --quiet", adj, dir, tag, iters);
  TEST_CHECK(rc == 0, "%s resume c: exit %d\n%s", tag, rc, out);
  snprintf(p1, sizeof(p1), "%s/%sa/ckpt_%06d.h5", dir, tag, iters);
  snprintf(p2, sizeof(p2), "%s/%sc/ckpt_%06d.h5", dir, tag, iters);
  same(p1, p2, "CUDA stop + resume");
  // the CPU path of the same config: same datasets (names, dtypes, shapes), values differ; same metric columns
  rc = cli_run(out, sizeof(out), "%s train %s %s --device cpu --seed 7 --max-iterations %d --run-dir %s/%sd", adj, cfg,
               args, stop, dir, tag);
  TEST_CHECK(rc == 0, "%s cpu run d: exit %d\n%s", tag, rc, out);
  snprintf(p1, sizeof(p1), "%s/%sa/ckpt_%06d.h5", dir, tag, stop);
  snprintf(p2, sizeof(p2), "%s/%sd/ckpt_%06d.h5", dir, tag, stop);
  int d = ckpt_compare(p1, p2, report, sizeof(report));
  TEST_CHECK(d >= 0 && !strstr(report, "only in") && !strstr(report, "shape or type"),
             "%s: CUDA and CPU checkpoints differ in their datasets:\n%s", tag, report);
  char h1[4096], h2[4096];
  snprintf(p1, sizeof(p1), "%s/%sa/metrics.csv", dir, tag);
  snprintf(p2, sizeof(p2), "%s/%sd/metrics.csv", dir, tag);
  first_line(p1, h1, sizeof(h1));
  first_line(p2, h2, sizeof(h2));
  TEST_CHECK(h1[0] && !strcmp(h1, h2), "%s: metrics.csv columns differ:\n  cuda %s  cpu  %s", tag, h1, h2);
  rc = cli_run(out, sizeof(out), "%s eval %s/%sa --episodes 3", adj, dir, tag);
  TEST_CHECK(rc == 0 && strstr(out, "episodes 3") && strstr(out, "return"), "%s eval: exit %d\n%s", tag, rc, out);
  printf("  %s: %s", tag, out);
  rc = cli_run(out, sizeof(out), "%s export %s/%sa --blob %s/%s.blob", adj, dir, tag, dir, tag);
  TEST_CHECK(rc == 0, "%s export: exit %d\n%s", tag, rc, out);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: algo_cuda_determinism PATH/TO/adjoint\n");
    return 2;
  }
  const char* adj = argv[1];
  char dir[] = "/tmp/algo_cuda_det_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char cmd[2048];
  if (simcuda_device_count() == 0) {
    // without a device the CUDA path is refused as bad input (exit 2), naming the reason
    int rc = cli_run(out, sizeof(out),
                     "%s train configs/cartpole_shac.yaml --device cuda --max-iterations 1 --quiet "
                     "--run-dir %s/x",
                     adj, dir);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd)) return 1;
    if (rc != 2 || !strstr(out, "run.device cuda")) {
      fprintf(stderr, "FAIL: --device cuda without a device: exit %d\n%s", rc, out);
      return 1;
    }
    printf("no CUDA device (refused with exit 2: %s): skipped\n", strtok(out, "\n"));
    return TEST_SKIP;
  }
  if (gpu_test_small()) iters = 2, stop = 1, episode = 24;
  run_preset(adj, dir, "configs/cartpole_shac.yaml", kShacArgs, "s");
  run_preset(adj, dir, "configs/cartpole_nablamimic.yaml", kShacArgs, "n");
  run_preset(adj, dir, "configs/cartpole_ppo.yaml", kPpoArgs, "p");
  run_preset(adj, dir, "configs/quad_stand_shac.yaml", kShacArgs, "q");
  char qppo[1024];
  snprintf(qppo, sizeof(qppo), "env.task=quad_stand %s", kPpoArgs);  // still a format for run_preset
  run_preset(adj, dir, "configs/cartpole_ppo.yaml", qppo, "qp");
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return test_report("algo_cuda_determinism");
}
