// algo_ppo_determinism: the CI smoke of the trainer. PPO on cartpole, small (8 worlds, 16 steps, 40-step
// episodes so that resets happen), run through the CLI:
//   - two runs with one seed in different directories give identical checkpoint datasets;
//   - stop at iteration 2 + `--resume` to 4 gives the same checkpoint datasets as an uninterrupted run to 4,
//     and metrics.csv ends with 4 rows;
//   - another seed gives different parameters;
//   - `adjoint eval` works on the run; a corrupted checkpoint and a changed config.yaml are refused (exit 2);
//   - quad_stand (per-world task state, a critic observation): resume to 4 equals the uninterrupted run, and
//     the critic's own normalizer (ppo/critic_obs_norm/*) is in the checkpoint.
// Usage: algo_ppo_determinism PATH/TO/adjoint
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
    "env.num_envs=8 algo.horizon=16 env.episode_steps=40 ppo.minibatches=2 policy.actor_hidden=[32,32] "
    "policy.critic_hidden=[32,32] run.checkpoint_every=2 --quiet";

static int same(const char* a, const char* b, const char* label) {
  int d = ckpt_compare(a, b, report, sizeof(report));
  TEST_CHECK(d == 0, "%s: %s vs %s: %d differences:\n%s", label, a, b, d, report);
  return d;
}

static int count_lines(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: algo_ppo_determinism PATH/TO/adjoint\n");
    return 2;
  }
  const char* adj = argv[1];
  char dir[] = "/tmp/algo_ppo_det_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char p1[700], p2[700];
  int rc;
  rc = cli_run(out, sizeof(out), "%s train configs/cartpole_ppo.yaml %s --seed 7 --max-iterations 4 --run-dir %s/a", adj,
               kArgs, dir);
  TEST_CHECK(rc == 0, "run a: exit %d\n%s", rc, out);
  rc = cli_run(out, sizeof(out), "%s train configs/cartpole_ppo.yaml %s --seed 7 --max-iterations 4 --run-dir %s/b", adj,
               kArgs, dir);
  TEST_CHECK(rc == 0, "run b: exit %d\n%s", rc, out);
  for (int it = 2; it <= 4; it += 2) {
    snprintf(p1, sizeof(p1), "%s/a/ckpt_%06d.h5", dir, it);
    snprintf(p2, sizeof(p2), "%s/b/ckpt_%06d.h5", dir, it);
    same(p1, p2, "two runs, one seed");
  }
  // stop at 2, resume to 4
  rc = cli_run(out, sizeof(out), "%s train configs/cartpole_ppo.yaml %s --seed 7 --max-iterations 2 --run-dir %s/c", adj,
               kArgs, dir);
  TEST_CHECK(rc == 0, "run c: exit %d\n%s", rc, out);
  rc = cli_run(out, sizeof(out), "%s train --resume %s/c --max-iterations 4 --quiet", adj, dir);
  TEST_CHECK(rc == 0, "resume c: exit %d\n%s", rc, out);
  snprintf(p1, sizeof(p1), "%s/a/ckpt_000004.h5", dir);
  snprintf(p2, sizeof(p2), "%s/c/ckpt_000004.h5", dir);
  same(p1, p2, "resume");
  snprintf(p2, sizeof(p2), "%s/c/metrics.csv", dir);
  TEST_CHECK(count_lines(p2) == 5, "metrics.csv after resume: %d lines, expected header + 4", count_lines(p2));
  snprintf(p2, sizeof(p2), "%s/c/config.yaml", dir);
  TEST_CHECK(access(p2, R_OK) == 0, "config.yaml missing");
  // another seed differs
  rc = cli_run(out, sizeof(out), "%s train configs/cartpole_ppo.yaml %s --seed 8 --max-iterations 2 --run-dir %s/d", adj,
               kArgs, dir);
  TEST_CHECK(rc == 0, "run d: exit %d\n%s", rc, out);
  snprintf(p1, sizeof(p1), "%s/a/ckpt_000002.h5", dir);
  snprintf(p2, sizeof(p2), "%s/d/ckpt_000002.h5", dir);
  int d = ckpt_compare(p1, p2, report, sizeof(report));
  TEST_CHECK(d > 0 && strstr(report, "ppo/actor"), "another seed gives the same actor: %d\n%s", d, report);
  // a new run into a directory with checkpoints is refused
  rc = cli_run(out, sizeof(out), "%s train configs/cartpole_ppo.yaml %s --run-dir %s/a", adj, kArgs, dir);
  TEST_CHECK(rc == 2 && strstr(out, "--resume"), "reusing a run directory: exit %d\n%s", rc, out);
  // eval
  rc = cli_run(out, sizeof(out), "%s eval %s/a --episodes 3", adj, dir);
  TEST_CHECK(rc == 0 && strstr(out, "episodes 3") && strstr(out, "return"), "eval: exit %d\n%s", rc, out);
  printf("  %s", out);
  // corrupted checkpoint: eval and resume refuse it naming the file
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "head -c 3000 %s/a/ckpt_000004.h5 > %s/d/ckpt_000009.h5", dir, dir);
  TEST_CHECK(system(cmd) == 0, "truncate");
  rc = cli_run(out, sizeof(out), "%s eval %s/d", adj, dir);
  TEST_CHECK(rc == 2 && strstr(out, "ckpt_000009.h5"), "eval of a truncated checkpoint: exit %d\n%s", rc, out);
  // resume skips it, naming it, and continues from the newest checkpoint that validates
  rc = cli_run(out, sizeof(out), "%s train --resume %s/d --max-iterations 12 --quiet", adj, dir);
  TEST_CHECK(rc == 0 && strstr(out, "skipping") && strstr(out, "ckpt_000009.h5: ") && strstr(out, "corrupt"),
             "resume past a truncated checkpoint: exit %d\n%s", rc, out);
  // a config.yaml that no longer matches the checkpoint's hash
  snprintf(cmd, sizeof(cmd), "sed -i 's/gamma: 0.99/gamma: 0.98/' %s/b/config.yaml", dir);
  TEST_CHECK(system(cmd) == 0, "sed");
  rc = cli_run(out, sizeof(out), "%s train --resume %s/b --max-iterations 6 --quiet", adj, dir);
  TEST_CHECK(rc == 2 && strstr(out, "config hash"), "resume with a changed config: exit %d\n%s", rc, out);

  // quad_stand: task state and a critic observation
  const char* q = "env.task=quad_stand env.num_envs=8 algo.horizon=16 env.episode_steps=40 ppo.minibatches=2 "
                  "policy.actor_hidden=[32,32] policy.critic_hidden=[32,32] run.checkpoint_every=2 --quiet";
  rc = cli_run(out, sizeof(out), "%s train configs/cartpole_ppo.yaml %s --seed 7 --max-iterations 4 --run-dir %s/qa",
               adj, q, dir);
  TEST_CHECK(rc == 0, "quad_stand run: exit %d\n%s", rc, out);
  rc = cli_run(out, sizeof(out), "%s train configs/cartpole_ppo.yaml %s --seed 7 --max-iterations 2 --run-dir %s/qc",
               adj, q, dir);
  TEST_CHECK(rc == 0, "quad_stand run c: exit %d\n%s", rc, out);
  rc = cli_run(out, sizeof(out), "%s train --resume %s/qc --max-iterations 4 --quiet", adj, dir);
  TEST_CHECK(rc == 0, "quad_stand resume: exit %d\n%s", rc, out);
  snprintf(p1, sizeof(p1), "%s/qa/ckpt_000004.h5", dir);
  snprintf(p2, sizeof(p2), "%s/qc/ckpt_000004.h5", dir);
  same(p1, p2, "quad_stand resume");
  snprintf(p2, sizeof(p2), "%s/qa/ckpt_000002.h5", dir);
  int dq = ckpt_compare(p1, p2, report, sizeof(report));
  TEST_CHECK(dq > 0 && strstr(report, "ppo/critic_obs_norm/mean") && strstr(report, "env/critic_obs") &&
                 strstr(report, "env/task/prev_action"),
             "quad_stand: iterations 2 and 4 differ in %d datasets, without the critic's normalizer, the critic "
             "observation or the task state:\n%s", dq, report);

  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return test_report("algo_ppo_determinism");
}
