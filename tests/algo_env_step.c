// algo_env_step: the batched cartpole environment on the float32 engine: the reset streams are per world
// (independent of num_envs), time limits truncate and auto-reset, a world whose state turns non-finite is reset
// by the engine, counted and ends its episode (value 0) while the other worlds are unaffected.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "envs/env.h"
#include "tests/test.h"

int main(void) {
  EnvBatch *a, *b;
  char err[1024];
  if (env_create(&a, "cartpole", 4, 10, 99, err, sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  TEST_CHECK(env_create(&b, "cartpole", 2, 10, 99, err, sizeof(err)) == 0, "create b: %s", err);
  TEST_CHECK(a->obs_dim == 5 && a->act_dim == 1 && a->episode_steps == 10, "dims");
  TEST_CHECK(!strcmp(a->task->info.obs_names[2], "pole_sin") && !strcmp(a->task->info.act_names[0], "slide"), "names");
  TEST_CHECK(!memcmp(a->obs, b->obs, sizeof(float) * 2 * 5), "world streams depend on num_envs");
  TEST_CHECK(a->obs[1] < -0.99f, "pole starts down (cos %g)", a->obs[1]);
  TEST_CHECK(a->obs[0] != a->obs[5], "worlds share their reset noise");
  EnvBatch* bad;
  TEST_CHECK(env_create(&bad, "cartpol", 1, 0, 1, err, sizeof(err)) != 0 && strstr(err, "unknown task"), "unknown task");

  float act[4] = {0.5f, -0.5f, 2.0f, 0.0f};
  for (int t = 1; t <= 10; t++) {
    env_step(a, act);
    for (int w = 0; w < 4; w++) {
      TEST_CHECK(a->reward[w] >= 0 && a->reward[w] <= 1, "reward");
      TEST_CHECK(!a->terminated[w], "cartpole never terminates early");
      TEST_CHECK(a->truncated[w] == (t == 10), "time limit at step %d", t);
    }
  }
  TEST_CHECK(a->stats[0] == 4, "4 finished episodes, got %lld", (long long)a->stats[0]);
  TEST_CHECK(a->t[0] == 0 && a->obs[1] < -0.99f, "auto-reset");
  TEST_CHECK(a->final_obs[1] > a->obs[1] || a->final_obs[1] != a->obs[1], "final_obs kept");
  double mr, ml;
  env_recent_stats(a, &mr, &ml);
  TEST_CHECK(ml == 10, "mean length %g", ml);

  // poison world 2: the engine resets it and counts it; the env ends the episode (terminated, reward 0)
  float keep[5];
  memcpy(keep, a->obs + 5, sizeof(keep));
  a->d->qvel[2 * a->m->nv + 1] = NAN;
  env_step(a, act);
  TEST_CHECK(a->terminated[2] && a->reward[2] == 0, "non-finite world: terminated %d reward %g", a->terminated[2],
             a->reward[2]);
  TEST_CHECK(a->nan_last == 1 && a->stats[1] == 1, "non-finite resets counted: %lld", (long long)a->stats[1]);
  TEST_CHECK(!a->terminated[0] && !a->terminated[1] && !a->terminated[3], "other worlds unaffected");
  TEST_CHECK(a->d->nan_count[2] == 1 && a->d->nan_count[0] == 0, "engine nan_count");
  for (int i = 0; i < 4 * 2; i++) TEST_CHECK(isfinite(a->d->qpos[i]) && isfinite(a->d->qvel[i]), "finite state");
  TEST_CHECK(a->t[2] == 0 && a->t[0] == 1, "reset world restarts its episode");
  env_destroy(a);
  env_destroy(b);
  return test_report("algo_env_step");
}
