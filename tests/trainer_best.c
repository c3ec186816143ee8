// trainer_best: `run.eval_episodes` through the CLI (∇Mimic cartpole preset, small):
//   - the checkpoints of a run with evaluation are the same datasets as without it (training untouched);
//   - evals.csv has one row per checkpoint, and each row's return is what `adjoint eval CKPT --draw 1` (the
//     selection's reset draws) prints for that checkpoint; draw 0 (adjoint eval's default) gives other episodes;
//   - best.h5 is a byte copy of the checkpoint with the largest evaluation return;
//   - stop + --resume keeps the rows and the best so far: the same evals and the same best.h5 datasets.
// Usage: trainer_best PATH/TO/adjoint
#define _GNU_SOURCE
#include <math.h>
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
    "policy.actor_hidden=[32,32] policy.critic_hidden=[32,32] run.checkpoint_every=2 --seed 3";

typedef struct {
  long long it[16];
  double ret[16];
  int n;
} Evals;

static int read_evals(const char* path, Evals* e) {
  FILE* f = fopen(path, "rb");
  e->n = 0;
  if (!f) return -1;
  char line[2048];
  if (!fgets(line, sizeof(line), f) || strncmp(line, "iteration,env_steps,elapsed,return,", 35)) {
    fclose(f);
    return -1;
  }
  while (e->n < 16 && fgets(line, sizeof(line), f)) {
    double el;
    if (sscanf(line, "%lld,%*[^,],%lf,%lf", &e->it[e->n], &el, &e->ret[e->n]) == 3) e->n++;
  }
  fclose(f);
  return 0;
}

static int same_bytes(const char* a, const char* b) {
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "cmp -s %s %s", a, b);
  return system(cmd) == 0;
}

static double eval_return(const char* adj, const char* ck, int draw) {
  int rc = cli_run(out, sizeof(out), "%s eval %s --episodes 4 --draw %d", adj, ck, draw);
  const char* r = strstr(out, "return ");
  TEST_CHECK(rc == 0 && r, "eval %s --draw %d: exit %d\n%s", ck, draw, rc, out);
  return r ? atof(r + 7) : NAN;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: trainer_best PATH/TO/adjoint\n");
    return 2;
  }
  const char* adj = argv[1];
  const char* cfg = "configs/cartpole_nablamimic.yaml";
  char dir[] = "/tmp/trainer_best_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char p1[700], p2[700];
  int rc = cli_run(out, sizeof(out), "%s train %s %s --max-iterations 6 --quiet --run-dir %s/off", adj, cfg, kArgs, dir);
  TEST_CHECK(rc == 0, "run without evaluation: exit %d\n%s", rc, out);
  rc = cli_run(out, sizeof(out), "%s train %s %s run.eval_episodes=4 --max-iterations 6 --run-dir %s/on", adj, cfg,
               kArgs, dir);
  TEST_CHECK(rc == 0 && strstr(out, "eval at iteration 2: return") && strstr(out, "best evaluation: iteration"),
             "run with evaluation: exit %d\n%s", rc, out);
  snprintf(p1, sizeof(p1), "%s/on/best.h5", dir);
  TEST_CHECK(access(p1, R_OK) == 0, "no %s", p1);
  snprintf(p1, sizeof(p1), "%s/off/best.h5", dir);
  TEST_CHECK(access(p1, F_OK) != 0, "best.h5 written with evaluation off");
  for (int it = 2; it <= 6; it += 2) {
    snprintf(p1, sizeof(p1), "%s/off/ckpt_%06d.h5", dir, it);
    snprintf(p2, sizeof(p2), "%s/on/ckpt_%06d.h5", dir, it);
    int d = ckpt_compare(p1, p2, report, sizeof(report));
    TEST_CHECK(d == 0, "iteration %d: evaluation changed the checkpoint: %d differences\n%s", it, d, report);
  }
  Evals e, ec;
  snprintf(p1, sizeof(p1), "%s/on/evals.csv", dir);
  TEST_CHECK(read_evals(p1, &e) == 0 && e.n == 3, "%s: %d rows, expected 3", p1, e.n);
  int best = 0, differs = 0;
  for (int i = 0; i < e.n; i++) {
    TEST_CHECK(e.it[i] == 2 * (i + 1), "row %d: iteration %lld", i, e.it[i]);
    snprintf(p2, sizeof(p2), "%s/on/ckpt_%06lld.h5", dir, e.it[i]);
    double r1 = eval_return(adj, p2, 1), r0 = eval_return(adj, p2, 0);
    // eval prints 4 decimals
    TEST_CHECK(fabs(r1 - e.ret[i]) <= 0.5e-4 + 1e-9, "iteration %lld: evals.csv return %.9g, eval --draw 1 %.4f",
               e.it[i], e.ret[i], r1);
    differs += fabs(r0 - r1) > 1e-4;
    printf("  iteration %lld: evals.csv return %.6f, eval --draw 1 %.4f, --draw 0 %.4f\n", e.it[i], e.ret[i], r1, r0);
    if (e.ret[i] > e.ret[best]) best = i;
  }
  TEST_CHECK(differs > 0, "draw 0 and draw 1 gave the same returns at every checkpoint");
  snprintf(p1, sizeof(p1), "%s/on/best.h5", dir);
  snprintf(p2, sizeof(p2), "%s/on/ckpt_%06lld.h5", dir, e.n ? e.it[best] : 0LL);
  TEST_CHECK(same_bytes(p1, p2), "best.h5 is not a copy of %s (the largest evaluation return)", p2);
  // stop at 4, resume to 6
  rc = cli_run(out, sizeof(out), "%s train %s %s run.eval_episodes=4 --max-iterations 4 --quiet --run-dir %s/res", adj,
               cfg, kArgs, dir);
  TEST_CHECK(rc == 0, "run to 4: exit %d\n%s", rc, out);
  rc = cli_run(out, sizeof(out), "%s train --resume %s/res --max-iterations 6 --quiet", adj, dir);
  TEST_CHECK(rc == 0, "resume to 6: exit %d\n%s", rc, out);
  snprintf(p1, sizeof(p1), "%s/res/evals.csv", dir);
  TEST_CHECK(read_evals(p1, &ec) == 0 && ec.n == e.n, "%s: %d rows, expected %d", p1, ec.n, e.n);
  for (int i = 0; i < ec.n && i < e.n; i++)
    TEST_CHECK(ec.it[i] == e.it[i] && ec.ret[i] == e.ret[i], "resumed row %d: %lld %.9g vs %lld %.9g", i, ec.it[i],
               ec.ret[i], e.it[i], e.ret[i]);
  snprintf(p1, sizeof(p1), "%s/on/best.h5", dir);
  snprintf(p2, sizeof(p2), "%s/res/best.h5", dir);
  int d = ckpt_compare(p1, p2, report, sizeof(report));
  TEST_CHECK(d == 0, "resumed best.h5 differs: %d\n%s", d, report);
  char cmd[800];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return test_report("trainer_best");
}
