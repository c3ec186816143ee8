// motion_sampler: the adaptive start sampler (motion/motion_sampler.h) on a hand-made table of three clips of
// 120, 50 and 49 frames at 50 Hz (3 + 2 + 1 bins): bin table, failure bins, counts, the EMA over three steps,
// probabilities and draws against values computed by hand, and a million draws against the probabilities; the
// lane-parallel step and blocked CDF (the batch's) against the serial functions, their statistics by hand.
#include <stdint.h>
#include <string.h>

#include "envs/env.h"  // env_rng_uniform: the tasks' splitmix64 draws
#include "motion/motion_sampler.h"
#include "tests/test.h"

int main(void) {
  const double dt = 0.02;
  // bins per clip: T // 50 + 1
  TEST_CHECK(motion_sampler_clip_bins(1, dt) == 1 && motion_sampler_clip_bins(49, dt) == 1 &&
                 motion_sampler_clip_bins(50, dt) == 2 && motion_sampler_clip_bins(100, dt) == 3 &&
                 motion_sampler_clip_bins(6574, dt) == 132,
             "clip bins %d %d %d %d %d", motion_sampler_clip_bins(1, dt), motion_sampler_clip_bins(49, dt),
             motion_sampler_clip_bins(50, dt), motion_sampler_clip_bins(100, dt), motion_sampler_clip_bins(6574, dt));
  const int len[3] = {120, 50, 49};
  int bin0[4], bin_clip[6];
  int B = motion_sampler_table(3, len, dt, bin0, NULL);
  TEST_CHECK(B == 6, "table size %d", B);
  motion_sampler_table(3, len, dt, bin0, bin_clip);
  const int want0[4] = {0, 3, 5, 6}, wantc[6] = {0, 0, 0, 1, 1, 2};
  TEST_CHECK(!memcmp(bin0, want0, sizeof(want0)) && !memcmp(bin_clip, wantc, sizeof(wantc)), "table");

  // failure bins: clip 0 frames 0-39 / 40-79 / 80-119; clip 1 frames 0-24 / 25-49; clip 2 one bin
  struct { int c, t, b; } fb[] = {{0, 0, 0}, {0, 39, 0}, {0, 40, 1}, {0, 79, 1}, {0, 80, 2}, {0, 119, 2},
                                  {1, 24, 3}, {1, 25, 4}, {1, 49, 4}, {2, 0, 5},  {2, 48, 5}};
  for (size_t i = 0; i < sizeof(fb) / sizeof(fb[0]); i++) {
    int b = motion_sampler_bin(len, bin0, fb[i].c, fb[i].t);
    TEST_CHECK(b == fb[i].b, "clip %d frame %d: bin %d, want %d", fb[i].c, fb[i].t, b, fb[i].b);
  }

  // step 1: six worlds, four fail (bins 2, 4, 4, 5); steps 2 (none) and 3 (bin 0)
  double fail[6] = {0, 0, 0, 0, 0, 0}, cdf[6];
  int count[6];
  const int step1[6] = {2, -1, 4, 4, 5, -1}, step2[6] = {-1, -1, -1, -1, -1, -1}, step3[6] = {-1, 0, -1, -1, -1, -1};
  motion_sampler_count(step1, 6, 6, count);
  const int wantn[6] = {0, 0, 1, 0, 2, 1};
  TEST_CHECK(!memcmp(count, wantn, sizeof(wantn)), "counts %d %d %d %d %d %d", count[0], count[1], count[2],
             count[3], count[4], count[5]);
  motion_sampler_update(fail, count, 6, MOTION_SAMPLER_ALPHA);
  const double f1[6] = {0, 0, 0.001, 0, 0.002, 0.001};
  test_close("EMA after step 1", fail, f1, 6, 1e-18, 0);

  // p_b = (fail_b + 0.1 / 6) / (0.004 + 0.1); times 60: {1, 1, 1.06, 1, 1.12, 1.06} / 6.24
  double total = motion_sampler_cdf(fail, 6, MOTION_SAMPLER_UNIFORM, cdf), p[6];
  for (int b = 0; b < 6; b++) p[b] = (cdf[b] - (b ? cdf[b - 1] : 0)) / total;
  const double p1[6] = {1 / 6.24, 1 / 6.24, 1.06 / 6.24, 1 / 6.24, 1.12 / 6.24, 1.06 / 6.24};
  test_close("probabilities after step 1", p, p1, 6, 1e-15, 0);
  TEST_CHECK(fabs(total - 0.104) < 1e-15, "total %.17g, want 0.104", total);

  // draws: cumulative p = {1, 2, 3.06, 4.06, 5.18, 6.24} / 6.24 = {.1603, .3205, .4904, .6506, .8301, 1}; frame
  // floor((i + U) / bins_c * (T - 1)) in the bin's clip
  struct { double u, v; int c, f; } dr[] = {
      {0.0, 0.999, 0, 39},       // bin 0: 0.999 / 3 * 119 = 39.63
      {0.16, 0.0, 0, 0},         // still bin 0
      {0.1603, 0.0, 0, 39},      // bin 1: 1 / 3 * 119 = 39.67
      {0.3, 0.5, 0, 59},         // bin 1: 1.5 / 3 * 119 = 59.5
      {0.49, 0.999, 0, 118},     // bin 2: 2.999 / 3 * 119 = 118.96
      {0.4904, 0.5, 1, 12},      // bin 3: 0.5 / 2 * 49 = 12.25
      {0.8, 0.0, 1, 24},         // bin 4: 1 / 2 * 49 = 24.5
      {0.8301, 0.999, 1, 48},    // bin 4: 1.999 / 2 * 49 = 48.98
      {0.8302, 0.75, 2, 36},     // bin 5: 0.75 * 48 = 36
      {0.9999999, 0.0, 2, 0}};
  for (size_t i = 0; i < sizeof(dr) / sizeof(dr[0]); i++) {
    int c = -1, f = -1;
    motion_sampler_draw(cdf, 6, bin_clip, bin0, len, dr[i].u, dr[i].v, &c, &f);
    TEST_CHECK(c == dr[i].c && f == dr[i].f, "draw (%g, %g): clip %d frame %d, want %d %d", dr[i].u, dr[i].v, c, f,
               dr[i].c, dr[i].f);
  }

  // a million draws: bin frequencies within 5 sigma of p; frames inside their bin's range
  const int N = 1000000;
  int hist[6] = {0}, lo[6], hi[6];
  for (int b = 0; b < 6; b++) lo[b] = 1 << 30, hi[b] = -1;
  uint64_t rng = 12345;
  int wrong_clip = 0;
  for (int k = 0; k < N; k++) {
    double u = env_rng_uniform(&rng), v = env_rng_uniform(&rng);
    int b = motion_sampler_pick(cdf, 6, u), c, f;
    motion_sampler_draw(cdf, 6, bin_clip, bin0, len, u, v, &c, &f);
    hist[b]++;
    lo[b] = f < lo[b] ? f : lo[b], hi[b] = f > hi[b] ? f : hi[b];
    wrong_clip += c != bin_clip[b];
  }
  TEST_CHECK(wrong_clip == 0, "%d draws landed outside their bin's clip", wrong_clip);
  // frame ranges [floor(i / n (T - 1)), floor((i + 1) / n (T - 1))): 0-39, 39-79, 79-118, 0-24, 24-48, 0-47
  const int wlo[6] = {0, 39, 79, 0, 24, 0}, whi[6] = {39, 79, 118, 24, 48, 47};
  for (int b = 0; b < 6; b++) {
    double freq = (double)hist[b] / N, sigma = sqrt(p1[b] * (1 - p1[b]) / N);
    TEST_CHECK(fabs(freq - p1[b]) < 5 * sigma, "bin %d drawn %.5f, p %.5f", b, freq, p1[b]);
    TEST_CHECK(lo[b] == wlo[b] && hi[b] == whi[b], "bin %d frames %d-%d, want %d-%d", b, lo[b], hi[b], wlo[b], whi[b]);
  }

  // steps 2 and 3: decay, then a failure in bin 0
  motion_sampler_count(step2, 6, 6, count);
  motion_sampler_update(fail, count, 6, MOTION_SAMPLER_ALPHA);
  motion_sampler_count(step3, 6, 6, count);
  motion_sampler_update(fail, count, 6, MOTION_SAMPLER_ALPHA);
  const double f3[6] = {0.001, 0, 0.000998001, 0, 0.001996002, 0.000998001};
  test_close("EMA after step 3", fail, f3, 6, 1e-18, 0);
  // no failures at all: every bin 1/6
  const double zero[6] = {0, 0, 0, 0, 0, 0}, sixth[6] = {1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0};
  total = motion_sampler_cdf(zero, 6, MOTION_SAMPLER_UNIFORM, cdf);
  for (int b = 0; b < 6; b++) p[b] = (cdf[b] - (b ? cdf[b - 1] : 0)) / total;
  test_close("probabilities without failures", p, sixth, 6, 1e-15, 0);

  // the lane-parallel step (one lane here: the batch's CPU path) against the serial functions: the same bits
  double fl[6] = {0, 0, 0, 0, 0, 0}, fs[6] = {0, 0, 0, 0, 0, 0};
  int cl[6], cs[6];
  const int* steps[3] = {step1, step2, step3};
  for (int k = 0; k < 3; k++) {
    motion_sampler_step_lanes(steps[k], 6, 6, MOTION_SAMPLER_ALPHA, cl, fl, 0, 1);
    motion_sampler_count(steps[k], 6, 6, cs);
    motion_sampler_update(fs, cs, 6, MOTION_SAMPLER_ALPHA);
    TEST_CHECK(!memcmp(cl, cs, sizeof(cs)) && !memcmp(fl, fs, sizeof(fs)), "step %d: lane-parallel EMA differs", k + 1);
  }
  // the blocked CDF over 1000 bins (chunks of 3 and 4 bins): p within 1e-15 of the serial CDF's, never
  // decreasing, the total; entropy, top bin and its p against a direct computation
  enum { NB = 1000 };
  static double fb1[NB], cb[NB], cserial[NB], part[4 * MOTION_SAMPLER_CHUNKS];
  double st[3];
  for (int b = 0; b < NB; b++) fb1[b] = (b % 7 == 3) ? 0.001 * (1 + b % 5) : 0;
  fb1[617] = 0.02;  // the top bin
  motion_sampler_cdf_lanes(fb1, NB, MOTION_SAMPLER_UNIFORM, cb, part, st, 0, 1);
  double ts = motion_sampler_cdf(fb1, NB, MOTION_SAMPLER_UNIFORM, cserial), worst = 0, h = 0, sum = 0;
  int mono = 1;
  for (int b = 0; b < NB; b++) {
    double pl = (cb[b] - (b ? cb[b - 1] : 0)) / cb[NB - 1], ps = (cserial[b] - (b ? cserial[b - 1] : 0)) / ts;
    worst = fmax(worst, fabs(pl - ps));
    mono &= !b || cb[b] >= cb[b - 1];
    double w = fb1[b] + MOTION_SAMPLER_UNIFORM / NB;
    sum += w;
  }
  for (int b = 0; b < NB; b++) {
    double q = (fb1[b] + MOTION_SAMPLER_UNIFORM / NB) / sum;
    h -= q * log(q);
  }
  TEST_CHECK(worst < 1e-15 && mono, "blocked CDF: p differs by %.3g from the serial CDF's, monotone %d", worst, mono);
  TEST_CHECK(fabs(cb[NB - 1] - ts) < 1e-13 * ts, "blocked CDF total %.17g, serial %.17g", cb[NB - 1], ts);
  TEST_CHECK(fabs(st[0] - h / log((double)NB)) < 1e-13, "entropy %.15g, want %.15g", st[0], h / log((double)NB));
  double ptop = (0.02 + MOTION_SAMPLER_UNIFORM / NB) / sum;
  TEST_CHECK(fabs(st[1] - ptop) < 1e-15 && st[2] == 617.0 / NB, "top bin %g (p %.15g), want 0.617 (p %.15g)", st[2],
             st[1], ptop);
  // no failures: entropy 1 (uniform), top p 1/nbin at the first bin
  static const double zb[NB];
  motion_sampler_cdf_lanes(zb, NB, MOTION_SAMPLER_UNIFORM, cb, part, st, 0, 1);
  TEST_CHECK(fabs(st[0] - 1) < 1e-12 && fabs(st[1] - 1.0 / NB) < 1e-15 && st[2] == 0,
             "uniform: entropy %.15g, top p %.15g at %g", st[0], st[1], st[2]);
  return test_report("motion_sampler");
}
