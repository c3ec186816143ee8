// algo_env_step_hopper: the batched hopper environment on the float32 engine: with zero torques the hopper
// collapses and its episode terminates early (at the first state outside the healthy bounds, never before),
// auto-resets to the reset distribution and reports its episode statistics; a short time limit truncates
// (not terminates) a still-healthy hopper; the reset streams are per world. With clock_period (and a raised
// height_max) the observation gains sin/cos of the episode time, which restarts at 0 on an auto-reset, and
// nothing else changes while the torso stays below either height cap.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "envs/env.h"
#include "tests/test.h"

// the alive bonus as envs/hopper.c documents it (DiffRL's shaping): height margin term + uprightness term
static double alive_ref(double rootz, double rooty) {
  double e = 1 + rootz - 0.75;
  e = e < -1 ? -1 : (e > 0.3 ? 0.3 : e);
  double a = rooty / 0.2;
  return (e >= 0 ? e : -200 * e * e) + 1 - a * a;
}

static int unhealthy(const float* q, const float* v) {  // the documented thresholds (envs/hopper.c header)
  if (!(1 + q[1] > 0.6f) || !(fabsf(q[2]) < 0.2f)) return 1;
  for (int i = 2; i < 7; i++)
    if (!(fabsf(q[i]) < 100)) return 1;
  for (int i = 0; i < 7; i++)
    if (!(fabsf(v[i]) < 100)) return 1;
  return 0;
}

int main(void) {
  EnvBatch *a, *b;
  char err[1024];
  if (env_create(&a, "hopper", 4, 0, 7, err, sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  TEST_CHECK(a->obs_dim == 13 && a->act_dim == 4 && a->episode_steps == 1000, "dims %d %d %d", a->obs_dim,
             a->act_dim, a->episode_steps);
  TEST_CHECK(a->task->info.frame_skip == 4 && fabsf(a->m->timestep - 0.005f) < 1e-9f, "5 ms x 4 substeps");
  TEST_CHECK(a->task->nstat == 2 && !strcmp(a->task->stat_names[1], "forward_speed"), "stat names");
  TEST_CHECK(!strcmp(a->task->info.obs_names[0], "rootz") && !strcmp(a->task->info.act_names[3], "ankle"), "names");
  TEST_CHECK(env_create(&b, "hopper", 2, 10, 7, err, sizeof(err)) == 0, "create b: %s", err);
  TEST_CHECK(!memcmp(a->obs, b->obs, sizeof(float) * 2 * 13), "world streams depend on num_envs");
  TEST_CHECK(memcmp(a->obs, a->obs + 13, sizeof(float) * 13), "worlds share their reset noise");
  // env.params: defaults in EnvBatch.param; a spec overrides by name; bad specs (unknown name, not a number,
  // outside the table's bounds) name the culprit
  TEST_CHECK(a->param[4] == 0.2 && a->param[0] == 1.0, "default task parameters");
  {
    EnvBatch* c = NULL;
    TEST_CHECK(env_create_params(&c, "hopper", " max_angle=0.5,forward_weight = 2; reset_push=1", 2, 0, 7, err,
                                 sizeof(err)) != 0, "blanks around '=' are separators: must fail");
    TEST_CHECK(env_create_params(&c, "hopper", " max_angle=0.5,forward_weight=2; reset_push=1", 2, 0, 7, err,
                                 sizeof(err)) == 0, "create with params: %s", err);
    if (c) {
      TEST_CHECK(c->param[4] == 0.5 && c->param[0] == 2 && c->param[7] == 1 && c->param[2] == 1.0,
                 "parsed task parameters");
      env_destroy(c), c = NULL;
    }
    static const char* bad[5][2] = {{"max_angel=0.5", "max_angel"}, {"max_angle=abc", "max_angle"},
                                    {"max_angle", "name=value"}, {"max_angle=4", "outside [1e-06, 3.2]"},
                                    {"ctrl_cost=-1", "ctrl_cost = -1 is outside"}};
    for (int i = 0; i < 5; i++) {
      err[0] = 0;
      TEST_CHECK(env_create_params(&c, "hopper", bad[i][0], 2, 0, 7, err, sizeof(err)) != 0 && !c &&
                 strstr(err, "env.params") && strstr(err, bad[i][1]), "bad spec '%s': %s", bad[i][0], err);
    }
  }

  // zero torques: every world falls and terminates early, at its first unhealthy state
  float act[16] = {0};
  int ended[4] = {0}, nv = a->m->nv;
  for (int t = 1; t <= 1000; t++) {
    env_step(a, act);
    for (int w = 0; w < 4; w++) {
      if (ended[w]) continue;
      TEST_CHECK(!a->truncated[w], "world %d truncated at %d", w, t);
      if (a->terminated[w]) {
        ended[w] = t;
        const float* q = a->final_qpos + (size_t)w * 7;
        const float* v = a->final_qvel + (size_t)w * nv;
        TEST_CHECK(unhealthy(q, v), "world %d terminated in a healthy state", w);
        double rr = v[0] + alive_ref(q[1], q[2]);
        TEST_CHECK(fabs(a->reward[w] - rr) < 1e-4 * fmax(1, fabs(rr)), "reward at the end %g vs %g", a->reward[w], rr);
        float* st = a->final_stats + (size_t)w * 2;
        TEST_CHECK(st[0] == q[0] && fabsf(st[1] - q[0] / (t * 0.02f)) < 1e-4f, "stats %g %g (x %g, %d steps)", st[0],
                   st[1], q[0], t);
        TEST_CHECK(a->t[w] == 0 && fabsf(a->obs[(size_t)w * 13 + 0]) < 0.006f && fabsf(a->obs[(size_t)w * 13 + 1]) < 0.006f,
                   "auto-reset to the reset pose");
      } else {
        // still running: the env's state is healthy
        float q[7], v[7];
        SimWorld wd;
        sim_world(a->m, a->d, w, &wd);
        memcpy(q, wd.qpos, sizeof(q)), memcpy(v, wd.qvel, sizeof(v));
        TEST_CHECK(!unhealthy(q, v), "world %d unhealthy at %d but not terminated", w, t);
      }
    }
  }
  for (int w = 0; w < 4; w++) TEST_CHECK(ended[w] > 5 && ended[w] < 200, "world %d fell at step %d", w, ended[w]);
  printf("zero torques: terminated at control steps %d %d %d %d\n", ended[0], ended[1], ended[2], ended[3]);
  TEST_CHECK(a->stats[1] == 0, "non-finite resets %lld", (long long)a->stats[1]);

  // time limit 10 steps: truncated (the hopper is still healthy after 0.2 s), not terminated
  for (int t = 1; t <= 10; t++) {
    env_step(b, act);
    for (int w = 0; w < 2; w++) {
      TEST_CHECK(!b->terminated[w], "world %d terminated at step %d", w, t);
      TEST_CHECK(b->truncated[w] == (t == 10), "time limit at step %d", t);
    }
  }
  TEST_CHECK(b->stats[0] == 2 && b->t[0] == 0, "2 finished episodes, auto-reset");
  TEST_CHECK(fabsf(b->final_stats[1] - b->final_qpos[0] / 0.2f) < 1e-5f, "forward_speed over 0.2 s: %g",
             b->final_stats[1]);
  double mr, ml;
  env_recent_stats(b, &mr, &ml);
  TEST_CHECK(ml == 10 && mr > 5 && mr < 15, "mean length %g return %g", ml, mr);
  env_destroy(a);
  env_destroy(b);

  // the clock: 15 observations, the last two sin/cos(2 pi t / 0.5) of the world's episode time
  TEST_CHECK(env_task_obs_dim(env_find_task("hopper"), NULL, err, sizeof(err)) == 13 &&
                 env_task_obs_dim(env_find_task("hopper"), "clock_period=0.5", err, sizeof(err)) == 15 &&
                 env_task_obs_dim(env_find_task("hopper"), "clock_period=x", err, sizeof(err)) == -1,
             "env_task_obs_dim");
  TEST_CHECK(env_create_params(&a, "hopper", "clock_period=0.5;height_max=0.6", 4, 0, 7, err, sizeof(err)) == 0,
             "create with the clock: %s", err);
  TEST_CHECK(env_create(&b, "hopper", 4, 0, 7, err, sizeof(err)) == 0, "create b: %s", err);
  TEST_CHECK(a->obs_dim == 15 && b->obs_dim == 13, "obs dims %d %d", a->obs_dim, b->obs_dim);
  int resets = 0, same = 1, steps[4] = {0};
  for (int t = 1; t <= 300; t++) {
    for (int w = 0; w < 4; w++) {  // before the step: the clock of the current (possibly just reset) episode
      const float* o = a->obs + (size_t)w * 15;
      double tw = a->d->time[w];
      TEST_CHECK(o[13] == (float)sin(6.283185307179586 * tw / 0.5) && o[14] == (float)cos(6.283185307179586 * tw / 0.5),
                 "world %d step %d: clock %g %g at t %g", w, t, o[13], o[14], tw);
      TEST_CHECK(fabs(tw - 0.02 * steps[w]) < 1e-4, "world %d: time %g after %d steps", w, tw, steps[w]);
      same &= !memcmp(o, b->obs + (size_t)w * 13, sizeof(float) * 13);
    }
    env_step(a, act);
    env_step(b, act);
    for (int w = 0; w < 4; w++) {
      steps[w]++;
      same &= a->reward[w] == b->reward[w] && a->terminated[w] == b->terminated[w];
      if (!a->terminated[w] && !a->truncated[w]) continue;
      resets++;
      // the final observation's clock is at the ended episode's time; the new episode's at 0
      const float* f = a->final_obs + (size_t)w * 15;
      double te = 0.02 * steps[w];
      TEST_CHECK(fabs(f[13] - sin(6.283185307179586 * te / 0.5)) < 1e-3 &&
                     fabs(f[14] - cos(6.283185307179586 * te / 0.5)) < 1e-3,
                 "world %d: final clock %g %g after %d steps", w, f[13], f[14], steps[w]);
      TEST_CHECK(a->d->time[w] == 0 && a->obs[(size_t)w * 15 + 13] == 0 && a->obs[(size_t)w * 15 + 14] == 1,
                 "world %d: clock restarts at 0 (time %g)", w, a->d->time[w]);
      steps[w] = 0;
    }
  }
  TEST_CHECK(resets >= 4, "auto-resets %d", resets);
  TEST_CHECK(same, "the clock or height_max 0.6 changed the other observations, rewards or terminations");
  printf("clock: %d auto-resets in 300 steps, clock restarted at 0 each time\n", resets);
  env_destroy(a);
  env_destroy(b);

  // gear_scale: every motor's gear times the constant at load (the engine's moments with it); the same state
  // and action then move the joints differently; bad values are refused naming the constant
  TEST_CHECK(env_create_params(&a, "hopper", "gear_scale=5", 2, 0, 7, err, sizeof(err)) == 0, "gear 5: %s", err);
  TEST_CHECK(env_create(&b, "hopper", 2, 0, 7, err, sizeof(err)) == 0, "create b: %s", err);
  for (int i = 0; i < b->m->nu; i++)
    TEST_CHECK(a->m->actuator_gear[i] == 5 * b->m->actuator_gear[i] && b->m->actuator_gear[i] > 0,
               "gear %d: %g vs 5 x %g", i, a->m->actuator_gear[i], b->m->actuator_gear[i]);
  for (int k = 0; k < 4; k++) act[k] = 0.5f;
  env_step(a, act);
  env_step(b, act);
  double dmax = 0;
  for (int i = 3; i < 7; i++) dmax = fmax(dmax, fabs((double)a->d->qvel[i] - (double)b->d->qvel[i]));
  TEST_CHECK(dmax > 0.1, "gear 5 vs 1: joint velocities after one step differ by %g only", dmax);
  env_destroy(a);
  env_destroy(b);
  const char* bad_gear[3] = {"gear_scale=0", "gear_scale=-1", "gear_scale=1000"};
  for (int i = 0; i < 3; i++) {
    EnvBatch* c = NULL;
    TEST_CHECK(env_create_params(&c, "hopper", bad_gear[i], 2, 0, 7, err, sizeof(err)) != 0 && !c &&
                   strstr(err, "gear_scale"), "%s: refused with '%s'", bad_gear[i], err);
  }
  printf("gear_scale 5: gears x5, joint velocities after one step differ by up to %.3g rad/s; 0, -1, 1000 refused\n",
         dmax);
  return test_report("algo_env_step_hopper");
}
