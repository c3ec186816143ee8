// algo_env_vjp_hopper: the hopper task (float64 build of envs/hopper.c) on the real model (hopper/hopper.xml
// through the float64 engine): observation, reward and action against their documented formulas, the observe /
// reward / act VJPs against central differences of the forward functions at random states (including fast
// joints, where the soft velocity bound bends), termination thresholds, and the reset distribution. A third
// parameter set raises the height cap (height_max 0.6: both sides of the old cap 0.3) and turns the clock on
// (clock_period 0.5: 15 observations, the last two sin/cos of the time, with no state gradient); a fourth turns
// the hop reference on (a term in the torso height and the time).
#define SIM_DOUBLE
#include "envs/hopper.c"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/test.h"

// the task parameters (envs/hopper.c HP_*): forward weight, speed cap, alive weight, upright weight, max angle,
// min height, control cost, reset push, height max, clock period, hop weight / amplitude / centre, gear scale,
// height tolerance
#define NP 15
static double P[NP];

// the alive bonus as envs/hopper.c documents it (DiffRL's shaping): height margin term + uprightness term
static double alive_ref(double rootz, double rooty) {
  double e = 1 + rootz - (P[5] + P[14]);
  e = e < -1 ? -1 : (e > P[8] ? P[8] : e);
  double a = rooty / P[4];
  return P[2] * ((e >= 0 ? e : -200 * e * e) + P[3] * (1 - a * a));
}
static double hop_ref(double rootz, double t) {  // the hop reference term (0 unless hop_weight and the clock)
  if (!(P[10] > 0 && P[9] > 0)) return 0;
  double e = 1 + rootz - (P[12] + P[11] * sin(2 * SIM_PI * t / P[9]));
  return -P[10] * e * e;
}
static double forward_ref(double vx) { return P[0] * (P[1] > 0 && vx > P[1] ? P[1] : vx); }

static EnvTaskCtx C;  // the task's context: its constants P (no data, no per-world state)
static void set_params(SimModel* m, const double* p) {
  for (int i = 0; i < NP; i++) P[i] = p[i];
  C.p = P;
}

static double urand(uint64_t* s, double lo, double hi) { return lo + (hi - lo) * env_rng_uniform(s); }

int main(void) {
  SimLoadOptions opt;
  sim_load_options_default(&opt);
  void* mj = NULL;
  char msg[2048];
  if (sim_load_mjcf("hopper/hopper.xml", &opt, &mj, msg, sizeof(msg))) {
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  SimModel* m = NULL;
  SimData* dd = NULL;
  TEST_CHECK(sim_model_import(mj, &m, msg, sizeof(msg)) == 0, "import: %s", msg);
  TEST_CHECK(sim_data_create(m, 1, &dd) == 0, "data");
  TEST_CHECK(m->nq == 7 && m->nv == 7 && m->nu == 4 && m->njnt == 7, "model sizes nq %d nv %d nu %d", m->nq, m->nv,
             m->nu);
  TEST_CHECK(fabs(m->timestep - 0.005) < 1e-15, "timestep %g (the task assumes 5 ms)", m->timestep);
  TEST_CHECK(m->body_pos[1 * 3 + 2] == HOPPER_Z0, "torso body z %g != HOPPER_Z0", m->body_pos[5]);
  for (int i = 0; i < 4; i++)
    TEST_CHECK(m->actuator_ctrlrange[2 * i] == -1 && m->actuator_ctrlrange[2 * i + 1] == 1, "ctrlrange %d", i);
  SimWorld d;
  sim_world(m, dd, 0, &d);
  const EnvTaskInfo* info = &env_task_hopper.info;
  TEST_CHECK(info->obs_dim == 13 && info->act_dim == 4 && info->frame_skip == 4 && info->episode_steps == 1000,
             "task info");

  double defaults[NP];
  for (int i = 0; i < NP; i++) defaults[i] = info->params[i].def;
  TEST_CHECK(info->nparam == NP && !strcmp(info->params[4].name, "max_angle") &&
                 !strcmp(info->params[8].name, "height_max") && !strcmp(info->params[9].name, "clock_period") &&
                 defaults[8] == 0.3 && defaults[9] == 0 && !strcmp(info->params[14].name, "height_tol") &&
                 defaults[14] == 0.15 && info->nstr == 0 && info->nstate == 0,
             "task parameters");
  TEST_CHECK(info->obs_dim_of && info->obs_dim_of(defaults) == 13, "default observation size");
  // the VJPs at the defaults (the committed task), at a second parameter set (every term re-weighted) and at a
  // third (height cap 0.6, clock on)
  static const double other[NP] = {2.0, 1.5, 0.5, 0.3, 0.6, 0.55, 1e-2, 0.0, 0.3, 0.0, 0.0, 0.1, 1.0, 1.0, 0.25};
  static const double tall[NP] = {1.0, 0.0, 1.0, 1.0, 0.2, 0.6, 1e-3, 0.0, 0.6, 0.5, 0.0, 0.1, 1.0, 1.0, 0.15};
  // a fourth (the hop reference on: weight 2, amplitude 0.15 m about 1.02 m, period 0.4 s)
  static const double hop[NP] = {1.0, 0.0, 0.5, 1.0, 1.0, 0.6, 1e-3, 0.0, 0.3, 0.4, 2.0, 0.15, 1.02, 1.0, 0.15};
  TEST_CHECK(!strcmp(info->params[10].name, "hop_weight") && defaults[10] == 0,
             "hop reference off by default");
  TEST_CHECK(info->obs_dim_of(tall) == 15 && !strcmp(info->obs_names[13], "clock_sin") &&
                 !strcmp(info->obs_names[14], "clock_cos"), "clock observation size and names");
  uint64_t rng = 2024;
  double worst = 0;
  int checked = 0, above_old_cap = 0, above_cap = 0;
  for (int k = 0; k < 600; k++) {
    set_params(m, k < 300 ? defaults : (k < 400 ? other : (k < 500 ? tall : hop)));
    const int O = info->obs_dim_of(P);
    if (k >= 400) d.time[0] = urand(&rng, 0, 20);  // the clock's input (the earlier states keep their draws)
    for (int i = 0; i < 7; i++) d.qpos[i] = urand(&rng, -1, 1);
    double vs = k % 3 == 0 ? 30 : 3;  // a third of the states with fast joints (tanh's bend)
    for (int i = 0; i < 7; i++) d.qvel[i] = urand(&rng, -vs, vs);
    double a[4];
    for (int i = 0; i < 4; i++) a[i] = urand(&rng, -1.3, 1.3);
    hopper_act(m, &d, &C, a, 0, 1);
    for (int i = 0; i < 4; i++)
      TEST_CHECK(d.ctrl[i] == (a[i] > 1 ? 1 : (a[i] < -1 ? -1 : a[i])), "act clip %d: %g -> %g", i, a[i], d.ctrl[i]);
    // forward functions against the documented formulas
    double obs[15];
    hopper_observe(m, &d, &C, obs, 0, 1);
    if (O == 15)
      TEST_CHECK(obs[13] == sin(2 * SIM_PI * d.time[0] / P[9]) && obs[14] == cos(2 * SIM_PI * d.time[0] / P[9]),
                 "clock at t %g: %g %g", d.time[0], obs[13], obs[14]);
    double e = 1 + d.qpos[1] - 0.75;  // the height term's argument (min_height 0.6 in every set)
    if (k >= 400 && k < 500) above_old_cap += e > 0.3 && e < P[8], above_cap += e > P[8];
    for (int i = 0; i < 6; i++) TEST_CHECK(obs[i] == d.qpos[i + 1], "obs %d", i);
    for (int i = 0; i < 7; i++)
      TEST_CHECK(fabs(obs[6 + i] - 10 * tanh(d.qvel[i] / 10)) <= 1e-15 * 10 && fabs(obs[6 + i]) < 10, "obs vel %d", i);
    double u2 = 0;
    for (int i = 0; i < 4; i++) u2 += d.ctrl[i] * d.ctrl[i];
    double r = hopper_reward(m, &d, &C, a);
    double rref = forward_ref(d.qvel[0]) + alive_ref(d.qpos[1], d.qpos[2]) - P[6] * u2 + hop_ref(d.qpos[1], d.time[0]);
    TEST_CHECK(fabs(r - rref) < 1e-12 * (1 + fabs(rref)), "reward %g vs %g", r, rref);
    if (k >= 500) TEST_CHECK(hop_ref(d.qpos[1], d.time[0]) < 0, "hop term on at state %d", k);
    // VJPs vs central differences of g . obs + dr * reward over qpos, qvel and the action
    double g[15], dr = urand(&rng, -2, 2);
    for (int i = 0; i < O; i++) g[i] = urand(&rng, -1, 1);
    double dq[7] = {0}, dv[7] = {0}, dc[4] = {0}, da[4] = {0};
    hopper_observe_vjp(m, &d, &C, g, dq, dv);
    hopper_reward_vjp(m, &d, &C, a, dr, dq, dv, dc);
    hopper_act_vjp(m, &d, &C, a, dc, da);
    double* vars[18];
    double an[18];
    for (int i = 0; i < 7; i++) vars[i] = &d.qpos[i], an[i] = dq[i];
    for (int i = 0; i < 7; i++) vars[7 + i] = &d.qvel[i], an[7 + i] = dv[i];
    for (int i = 0; i < 4; i++) vars[14 + i] = &a[i], an[14 + i] = da[i];
    for (int j = 0; j < 18; j++) {
      if (j >= 14 && fabs(fabs(a[j - 14]) - 1) < 1e-5) continue;  // the clip's kink
      if (j == 7 && P[1] > 0 && fabs(d.qvel[0] - P[1]) < 1e-5) continue;  // the speed cap's kink
      if (j == 1 && fabs(e - P[8]) < 1e-5) continue;                       // the height cap's kink
      double h = 1e-6, f[2];
      for (int s = 0; s < 2; s++) {
        double keep = *vars[j];
        *vars[j] = keep + (s ? -h : h);
        hopper_act(m, &d, &C, a, 0, 1);
        double o[15];
        hopper_observe(m, &d, &C, o, 0, 1);
        f[s] = dr * hopper_reward(m, &d, &C, a);
        for (int i = 0; i < O; i++) f[s] += g[i] * o[i];
        *vars[j] = keep;
      }
      hopper_act(m, &d, &C, a, 0, 1);
      double fd = (f[0] - f[1]) / (2 * h), err = fabs(fd - an[j]) / (1 + fabs(fd));
      worst = fmax(worst, err);
      checked++;
      TEST_CHECK(err <= 1e-7, "state %d var %d: vjp %.12g fd %.12g", k, j, an[j], fd);
    }
    // outside the clip the action gets no gradient; inside, d reward / d a = -2e-3 u
    for (int i = 0; i < 4; i++)
      if (fabs(a[i]) > 1) TEST_CHECK(da[i] == 0, "clipped action %d has gradient %g", i, da[i]);
    // height_max 0.6: rising between the old cap and the new one pays (d alive / d rootz = 1), above it not
    if (k >= 400 && k < 500 && e > 0.3 && e < P[8] - 1e-5) TEST_CHECK(fabs(dq[1] - dr * 1 - g[0]) < 1e-12, "dheight %g", dq[1]);
    if (k >= 400 && k < 500 && e > P[8] + 1e-5) TEST_CHECK(fabs(dq[1] - g[0]) < 1e-12, "capped dheight %g", dq[1]);
  }
  TEST_CHECK(above_old_cap >= 5 && above_cap >= 5, "height_max states: %d in (0.3, 0.6), %d above", above_old_cap,
             above_cap);

  // termination: healthy upright pose, then each threshold crossed
  set_params(m, defaults);
  memset(d.qpos, 0, 7 * sizeof(double)), memset(d.qvel, 0, 7 * sizeof(double));
  d.qpos[1] = -0.06;
  TEST_CHECK(!hopper_terminated(m, &d, &C), "standing is healthy");
  d.qpos[1] = 0.6 - 1 + 1e-9;
  TEST_CHECK(!hopper_terminated(m, &d, &C), "h just above 0.6 is healthy");
  d.qpos[1] = 0.6 - 1 - 1e-9;
  TEST_CHECK(hopper_terminated(m, &d, &C), "h below 0.6 terminates");
  d.qpos[1] = 0, d.qpos[2] = 0.199;
  TEST_CHECK(!hopper_terminated(m, &d, &C), "pitch 0.199 healthy");
  d.qpos[2] = -0.201;
  TEST_CHECK(hopper_terminated(m, &d, &C), "pitch -0.201 terminates");
  d.qpos[2] = 0, d.qvel[5] = 150;
  TEST_CHECK(hopper_terminated(m, &d, &C), "|qvel| >= 100 terminates");
  d.qvel[5] = NAN;
  TEST_CHECK(hopper_terminated(m, &d, &C), "NaN terminates");
  d.qvel[5] = 0, d.qpos[0] = 1e6, d.qvel[0] = 50;
  TEST_CHECK(!hopper_terminated(m, &d, &C), "rootx position is not bounded");

  // reset: qpos0 clamped into the joint ranges + U(-c, c), rootx exact, qvel U(-c, c)
  double lo_seen = 1, hi_seen = -1;
  for (int k = 0; k < 500; k++) {
    sim_reset(m, dd, 0, -1);
    hopper_reset(m, &d, &C, &rng, 0, 1);
    TEST_CHECK(d.qpos[0] == 0, "rootx noise");
    for (int j = 0; j < 7; j++) {
      double base = m->qpos0[j];
      if (m->jnt_limited[j]) {
        double lo = m->jnt_range[2 * j], hi = m->jnt_range[2 * j + 1];
        TEST_CHECK(d.qpos[j] >= lo && d.qpos[j] <= hi, "reset joint %d %g outside [%g, %g]", j, d.qpos[j], lo, hi);
        base = fmin(fmax(base, lo + 5e-3), hi - 5e-3);
      }
      TEST_CHECK(fabs(d.qpos[j] - base) <= 5e-3, "reset joint %d: %g vs base %g", j, d.qpos[j], base);
      TEST_CHECK(fabs(d.qvel[j]) <= 5e-3, "reset qvel %d", j);
    }
    lo_seen = fmin(lo_seen, d.qpos[2]), hi_seen = fmax(hi_seen, d.qpos[2]);
    TEST_CHECK(!hopper_terminated(m, &d, &C), "reset state is healthy");
  }
  TEST_CHECK(lo_seen < -4e-3 && hi_seen > 4e-3, "reset noise spans U(-c, c): [%g, %g]", lo_seen, hi_seen);
  TEST_CHECK(fabs(d.qpos[5] - (5 * SIM_PI / 180 + 5e-3)) <= 5e-3 + 1e-12, "knee starts at 5 deg + c: %g", d.qpos[5]);
  // a forward push at reset: qvel[rootx] in [-c, push + c], the same draws otherwise
  {
    double p[NP];
    memcpy(p, defaults, sizeof(p));
    p[7] = 2.0;
    set_params(m, p);
    double vmin = 1e9, vmax = -1e9;
    for (int k = 0; k < 200; k++) {
      sim_reset(m, dd, 0, -1);
      hopper_reset(m, &d, &C, &rng, 0, 1);
      vmin = fmin(vmin, d.qvel[0]), vmax = fmax(vmax, d.qvel[0]);
    }
    TEST_CHECK(vmin >= -5e-3 && vmin < 0.1 && vmax <= 2 + 5e-3 && vmax > 1.9, "reset push range [%g, %g]", vmin, vmax);
    // at the second set's max_angle 0.6 a pitch of 0.5 is healthy, 0.61 is not
    set_params(m, other);
    memset(d.qpos, 0, 7 * sizeof(double)), memset(d.qvel, 0, 7 * sizeof(double));
    d.qpos[2] = 0.5;
    TEST_CHECK(!hopper_terminated(m, &d, &C), "max_angle 0.6: pitch 0.5 healthy");
    d.qpos[2] = 0.61;
    TEST_CHECK(hopper_terminated(m, &d, &C), "max_angle 0.6: pitch 0.61 terminates");
    set_params(m, defaults);
  }
  // episode statistics
  d.qpos[0] = 3, d.time[0] = 2;
  double st[2];
  hopper_episode_stats(m, &d, &C, st);
  TEST_CHECK(st[0] == 3 && st[1] == 1.5, "stats %g %g", st[0], st[1]);
  printf("hopper VJPs vs central differences: max rel error %.3g over %d partials (%d / %d states between / above "
         "the caps at height_max 0.6)\n", worst, checked, above_old_cap, above_cap);
  sim_data_free(dd);
  sim_model_free(m);
  sim_free_mjmodel(mj);
  return test_report("algo_env_vjp_hopper");
}
