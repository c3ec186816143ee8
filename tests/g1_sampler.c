// g1_sampler: the G1 tracking task's adaptive start sampler and domain randomisation in the batch (CPU,
// float32 engine), on one LAFAN1 clip (skipped, 77, when the clip or the model is absent):
//   - the shared update driven directly with fixed per-world reports: counts, the failure EMA and the
//     probabilities p_b = (fail_b + u / B) / (sum fail + u) against hand computation, the sampler statistics
//     (normalised entropy, top bin and its p) against a direct computation, a draw landing in the top bin;
//   - env_step with forced failures (term_anchor_z = 0: every world terminates): each world's failing bin is the
//     bin of the frame it was compared with, the EMA over three steps equals the serial formula bit for bit, and
//     every reset draws its start from the CDF updated in the same step (the world's reset stream replayed);
//   - the randomised foot frictions and torso COM offsets read back from the worlds' parameters (sim_param_get):
//     inside mjlab's ranges, different between worlds, redrawn at a reset, everything else the model's; with the
//     randomisation off the batch has no per-world parameters.
#include "envs/g1_tracking.c"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test.h"

#define NW 8
#define CLIP "lafan1_g1/walk1_subject1.csv.gz"

static EnvBatch* make(const char* extra) {
  char params[512], err[2048];
  snprintf(params, sizeof(params), "motion=" CLIP ", %s", extra);
  EnvBatch* e = NULL;
  if (env_create_params(&e, "g1_tracking", params, NW, 0, 11, err, sizeof(err))) {
    fprintf(stderr, "env_create_params(%s): %s\n", params, err);
    exit(1);
  }
  return e;
}

static double* G(EnvBatch* e, int k) { return (double*)e->shared[k]; }

int main(void) {
  char path[1024];
  if (sim_find_asset(CLIP, path, sizeof(path)) || sim_find_asset("g1/scene_flat.xml", path, sizeof(path))) {
    printf("g1_sampler: %s or g1/scene_flat.xml not on the asset path: skipped\n", CLIP);
    return 77;
  }

  // ---- the shared update with fixed reports ----
  EnvBatch* e = make("adaptive_alpha=0.25");
  const G1Data* D = (const G1Data*)e->data;
  const int B = D->nbin;
  TEST_CHECK(B == 262 && e->shared_count[ENVG_fail] == B && e->shared_count[ENVG_cdf] == B, "bins %d (261.3 s: 262)",
             B);
  const double u = 0.1, fl = u / B;
  double* fail = G(e, ENVG_fail);
  double* cdf = G(e, ENVG_cdf);
  double* st = G(e, ENVG_stat);
  int32_t* cnt = (int32_t*)e->shared[ENVG_count];
  // at create: no failures, the uniform CDF, entropy 1
  double worst = 0;
  for (int b = 0; b < B; b++) worst = fmax(worst, fabs(cdf[b] - (b + 1) * fl) + fabs(fail[b]));
  TEST_CHECK(worst < 1e-15 && fabs(st[0] - 1) < 1e-12 && fabs(st[1] - 1.0 / B) < 1e-15 && st[2] == 0 && st[3] == 0,
             "at create: CDF off by %.3g, entropy %.15g, top p %.15g at %g, failures %g", worst, st[0], st[1], st[2],
             st[3]);
  // step 1: bins 5, 5, 100, 261 fail; step 2: bin 100
  const int32_t r1[NW] = {5, -1, 5, 100, -1, -1, 261, -1}, r2[NW] = {-1, -1, -1, -1, -1, 100, -1, -1};
  env_shared_update(e, r1);
  TEST_CHECK(cnt[5] == 2 && cnt[100] == 1 && cnt[261] == 1 && cnt[0] == 0 && st[3] == 4, "step 1: counts %d %d %d, "
             "failures %g", cnt[5], cnt[100], cnt[261], st[3]);
  env_shared_update(e, r2);
  // by hand: fail_5 = 0.75 * 0.5, fail_100 = 0.25 + 0.75 * 0.25, fail_261 = 0.75 * 0.25; sum 1; total 1.1
  const double f5 = 0.375, f100 = 0.4375, f261 = 0.1875, tot = 1.1;
  TEST_CHECK(fail[5] == f5 && fail[100] == f100 && fail[261] == f261 && cnt[100] == 1 && cnt[5] == 0 && st[3] == 5,
             "step 2: EMA %.17g %.17g %.17g, failures %g", fail[5], fail[100], fail[261], st[3]);
  double h = 0;
  worst = 0;
  for (int b = 0; b < B; b++) {
    double want = ((b == 5 ? f5 : b == 100 ? f100 : b == 261 ? f261 : 0) + fl) / tot;
    double got = (cdf[b] - (b ? cdf[b - 1] : 0)) / cdf[B - 1];
    worst = fmax(worst, fabs(got - want) / want);
    h -= want * log(want);
  }
  TEST_CHECK(worst < 1e-12, "probabilities: relative error %.3g against (fail_b + 0.1 / B) / 1.1", worst);
  TEST_CHECK(fabs(cdf[B - 1] - tot) < 1e-14, "total %.17g, want 1.1", cdf[B - 1]);
  TEST_CHECK(fabs(st[0] - h / log((double)B)) < 1e-12, "entropy %.15g, want %.15g", st[0], h / log((double)B));
  TEST_CHECK(fabs(st[1] - (f100 + fl) / tot) < 1e-14 && st[2] == 100.0 / B, "top bin %g p %.15g, want %g p %.15g",
             st[2] * B, st[1], 100.0, (f100 + fl) / tot);
  double m4[4];
  env_task_metrics(e, m4);
  TEST_CHECK(m4[0] == st[0] && m4[1] == st[1] && m4[2] == st[2] && m4[3] == 5, "task metrics");
  // a draw just past bin 99's cumulative p lands in bin 100: frame floor((100 + v) / B (T - 1))
  {
    double below = (f5 + 100 * fl) / tot, above = (f5 + f100 + 101 * fl) / tot;
    const int T = g1_clip_len(D, 0);
    int c = -1, f = -1;
    g1_sample_start(D, cdf, below + 1e-9, 0.5, &c, &f);
    TEST_CHECK(c == 0 && f == (int)floor(100.5 / B * (T - 1)), "draw at %.9f: clip %d frame %d, want frame %d", below,
               c, f, (int)floor(100.5 / B * (T - 1)));
    g1_sample_start(D, cdf, above - 1e-9, 0.0, &c, &f);
    TEST_CHECK(f == (int)floor(100.0 / B * (T - 1)), "draw at %.9f: frame %d, want %d", above, f,
               (int)floor(100.0 / B * (T - 1)));
  }
  env_destroy(e);

  // ---- env_step with forced failures: failing bins, the EMA, resets drawing from the updated CDF ----
  e = make("adaptive_alpha=0.25, term_anchor_z=0");
  D = (const G1Data*)e->data;
  fail = G(e, ENVG_fail), cdf = G(e, ENVG_cdf), cnt = (int32_t*)e->shared[ENVG_count];
  const int* len = G1_ARR(D, int, off_clip_len);
  const int* bin0 = G1_ARR(D, int, off_clip_bin0);
  double ema[512] = {0};
  sim_real act[NW * G1_NJ];
  memset(act, 0, sizeof(act));
  // the torso COM and foot frictions each world drew at create
  double fric0[NW][G1_NFOOT], com0[NW][3];
  const int ng = e->m->ngeom, nb = e->m->nbody, torso = D->body[G1_ANCHOR];
  double* gf = (double*)malloc(sizeof(double) * 3 * ng);
  double* bi = (double*)malloc(sizeof(double) * 3 * nb);
  double* gf_model = (double*)malloc(sizeof(double) * 3 * ng);
  double* bi_model = (double*)malloc(sizeof(double) * 3 * nb);
  for (int i = 0; i < 3 * ng; i++) gf_model[i] = e->m->geom_friction[i];
  for (int i = 0; i < 3 * nb; i++) bi_model[i] = e->m->geo_body_ipos[i];
  TEST_CHECK(e->m->prm == 1, "the batch has per-world parameters with the randomisation on");
  for (int step = 0; step <= 3; step++) {
    int bad_fric = 0, bad_com = 0, other = 0;
    for (int w = 0; w < NW; w++) {
      sim_param_get(e->m, e->d, w, SIM_PARAM_GEOM_FRICTION, gf);
      sim_param_get(e->m, e->d, w, SIM_PARAM_BODY_IPOS, bi);
      int* is_foot = (int*)calloc((size_t)ng, sizeof(int));
      for (int k = 0; k < G1_NFOOT; k++) {
        int g = D->foot_geom[k];
        is_foot[g] = 1;
        double v = gf[3 * g];
        bad_fric += !(v >= 0.3 - 1e-7 && v <= 1.2 + 1e-7) || gf[3 * g + 1] != gf_model[3 * g + 1] ||
                    gf[3 * g + 2] != gf_model[3 * g + 2];
        if (step) bad_fric += v == fric0[w][k];  // redrawn at the reset of every step
        fric0[w][k] = v;
      }
      for (int g = 0; g < ng; g++)
        if (!is_foot[g]) other += memcmp(gf + 3 * g, gf_model + 3 * g, 3 * sizeof(double)) != 0;
      free(is_foot);
      const double r[3] = {0.025, 0.05, 0.05};
      for (int i = 0; i < 3; i++) {
        double off = bi[3 * torso + i] - bi_model[3 * torso + i];
        bad_com += !(fabs(off) <= r[i]) || off == 0 || (step && bi[3 * torso + i] == com0[w][i]);
        com0[w][i] = bi[3 * torso + i];
      }
      for (int b = 0; b < nb; b++)
        if (b != torso) other += memcmp(bi + 3 * b, bi_model + 3 * b, 3 * sizeof(double)) != 0;
    }
    int distinct = 0;
    for (int w = 1; w < NW; w++) distinct += fric0[w][0] != fric0[0][0] && com0[w][0] != com0[0][0];
    TEST_CHECK(!bad_fric && !bad_com && !other && distinct == NW - 1, "step %d: %d foot frictions and %d COM offsets "
               "outside the ranges or not redrawn, %d other parameters changed, %d of %d worlds differ from world 0",
               step, bad_fric, bad_com, other, distinct, NW - 1);
    if (step == 3) break;
    uint64_t rng0[NW];
    memcpy(rng0, e->rng, sizeof(rng0));
    env_step(e, act);
    int nterm = 0, want_cnt[512] = {0}, bad_bin = 0, bad_draw = 0;
    for (int w = 0; w < NW; w++) {
      if (!e->terminated[w]) continue;
      nterm++;
      int fc = ((int32_t*)e->final_state[ENVS_clip])[w], ff = ((int32_t*)e->final_state[ENVS_frame])[w];
      int b = motion_sampler_bin(len, bin0, fc, ff - 1);
      bad_bin += e->report[w] != b;
      want_cnt[b]++;
    }
    TEST_CHECK(nterm == NW, "step %d: %d of %d worlds terminated (term_anchor_z = 0)", step + 1, nterm, NW);
    TEST_CHECK(!bad_bin && !memcmp(want_cnt, cnt, sizeof(int) * B), "step %d: %d reports off the failing frame's bin, "
               "counts %s", step + 1, bad_bin, memcmp(want_cnt, cnt, sizeof(int) * B) ? "differ" : "agree");
    int ema_off = 0;
    for (int b = 0; b < B; b++) {
      ema[b] = 0.25 * (double)want_cnt[b] + (1 - 0.25) * ema[b];
      ema_off += ema[b] != fail[b];
    }
    TEST_CHECK(!ema_off, "step %d: %d bins' EMA differ from the serial formula", step + 1, ema_off);
    // the reset stream: one draw for act's stream, then the start's two uniforms, from the CDF of this step
    for (int w = 0; w < NW; w++) {
      uint64_t s = rng0[w];
      env_rng_next(&s);
      double u1 = env_rng_uniform(&s), u2 = env_rng_uniform(&s);
      int c, f;
      g1_sample_start(D, cdf, u1, u2, &c, &f);
      bad_draw += c != ((int32_t*)e->state[ENVS_clip])[w] || f != ((int32_t*)e->state[ENVS_frame])[w];
    }
    TEST_CHECK(!bad_draw, "step %d: %d resets did not draw their start from the updated CDF", step + 1, bad_draw);
  }
  free(gf), free(bi), free(gf_model), free(bi_model);
  env_destroy(e);

  // ---- randomisation off: the model's own parameters, no per-world copies ----
  e = make("dr_friction_hi=0, dr_com_x=0, dr_com_y=0, dr_com_z=0");
  TEST_CHECK(e->m->prm == 0, "no per-world parameters with the randomisation off");
  env_destroy(e);
  char err[512];
  TEST_CHECK(env_create_params(&e, "g1_tracking", "motion=" CLIP ", dr_friction_lo=1.3", NW, 0, 1, err, sizeof(err)) &&
                 strstr(err, "dr_friction_lo"),
             "dr_friction_lo > dr_friction_hi refused: %s", err);
  return test_report("g1_sampler");
}
