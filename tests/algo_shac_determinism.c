// algo_shac_determinism: SHAC and ∇Mimic-SHAC through the CLI, small (8 worlds, 16-step horizon, 40-step
// episodes so that time-outs happen inside the gradient window):
//   - two runs with one seed in different directories give identical checkpoint datasets;
//   - stop at iteration 2 + `--resume` to 4 gives the same checkpoint datasets as an uninterrupted run to 4;
//   - another seed gives a different actor; `adjoint eval` works (EMA policy for
//     the ∇Mimic preset, whose checkpoint holds shac/ema);
//   - the same on quad_stand, a task with per-world state (env/task/*) and a critic observation (env/critic_obs,
//     the critic's normalizer shac/critic_obs_norm/*): its checkpoints carry them and resume bit-identically.
// Usage: algo_shac_determinism PATH/TO/adjoint
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ckpt.h"
#include "tests/cli_run.h"
#include "tests/test.h"

static char out[1 << 16];
static char report[1 << 14];

static const char* kArgs =
    "env.num_envs=8 algo.horizon=16 env.episode_steps=40 shac.critic_minibatches=2 shac.critic_iterations=4 "
    "policy.actor_hidden=[32,32] policy.critic_hidden=[32,32] run.checkpoint_every=2 --quiet";

static int same(const char* a, const char* b, const char* label) {
  int d = ckpt_compare(a, b, report, sizeof(report));
  TEST_CHECK(d == 0, "%s: %s vs %s: %d differences:\n%s", label, a, b, d, report);
  return d;
}

static void run_preset(const char* adj, const char* dir, const char* cfg, const char* tag, int ema, int task_fields) {
  char p1[700], p2[700];
  int rc;
  for (int k = 0; k < 2; k++) {
    rc = cli_run(out, sizeof(out), "%s train %s %s --seed 7 --max-iterations 4 --run-dir %s/%s%c", adj, cfg, kArgs,
                 dir, tag, 'a' + k);
    TEST_CHECK(rc == 0, "%s run %c: exit %d\n%s", tag, 'a' + k, rc, out);
  }
  for (int it = 2; it <= 4; it += 2) {
    snprintf(p1, sizeof(p1), "%s/%sa/ckpt_%06d.h5", dir, tag, it);
    snprintf(p2, sizeof(p2), "%s/%sb/ckpt_%06d.h5", dir, tag, it);
    same(p1, p2, "two runs, one seed");
  }
  rc = cli_run(out, sizeof(out), "%s train %s %s --seed 7 --max-iterations 2 --run-dir %s/%sc", adj, cfg, kArgs, dir,
               tag);
  TEST_CHECK(rc == 0, "%s run c: exit %d\n%s", tag, rc, out);
  rc = cli_run(out, sizeof(out), "%s train --resume %s/%sc --max-iterations 4 --quiet", adj, dir, tag);
  TEST_CHECK(rc == 0, "%s resume c: exit %d\n%s", tag, rc, out);
  snprintf(p1, sizeof(p1), "%s/%sa/ckpt_000004.h5", dir, tag);
  snprintf(p2, sizeof(p2), "%s/%sc/ckpt_000004.h5", dir, tag);
  same(p1, p2, "resume");
  rc = cli_run(out, sizeof(out), "%s train %s %s --seed 8 --max-iterations 2 --run-dir %s/%sd", adj, cfg, kArgs, dir,
               tag);
  TEST_CHECK(rc == 0, "%s run d: exit %d\n%s", tag, rc, out);
  snprintf(p1, sizeof(p1), "%s/%sa/ckpt_000002.h5", dir, tag);
  snprintf(p2, sizeof(p2), "%s/%sd/ckpt_000002.h5", dir, tag);
  int d = ckpt_compare(p1, p2, report, sizeof(report));
  TEST_CHECK(d > 0 && strstr(report, "shac/actor"), "%s: another seed gives the same actor: %d\n%s", tag, d, report);
  TEST_CHECK(!ema || strstr(report, "shac/ema"), "%s: no shac/ema dataset\n%s", tag, report);
  TEST_CHECK(!task_fields || (strstr(report, "env/task/last_action") && strstr(report, "env/critic_obs") &&
                              strstr(report, "shac/critic_obs_norm/mean")),
             "%s: task state, critic observation or its normalizer missing from the datasets that differ\n%s", tag,
             report);
  rc = cli_run(out, sizeof(out), "%s eval %s/%sa --episodes 3", adj, dir, tag);
  TEST_CHECK(rc == 0 && strstr(out, "episodes 3") && strstr(out, "return"), "%s eval: exit %d\n%s", tag, rc, out);
  printf("  %s: %s", tag, out);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: algo_shac_determinism PATH/TO/adjoint\n");
    return 2;
  }
  const char* adj = argv[1];
  char dir[] = "/tmp/algo_shac_det_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  run_preset(adj, dir, "configs/cartpole_shac.yaml", "s", 0, 0);
  run_preset(adj, dir, "configs/cartpole_nablamimic.yaml", "n", 1, 0);
  run_preset(adj, dir, "configs/quad_stand_shac.yaml", "q", 0, 1);
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return test_report("algo_shac_determinism");
}
