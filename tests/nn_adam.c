// nn_adam: the Adam/AdamW step against closed forms (float64 and float32 CPU libraries):
//  - constant gradient: bias-corrected moments are exactly g and g^2, so each step moves p by lr*g/(|g|+eps);
//  - random gradients: m_t = (1-b1) sum_s b1^(t-s) g_s, v_t likewise, EMA e_T = d^T p_0 + (1-d) sum_t d^(T-t) p_t;
//  - AdamW decay, L2 weight decay, global-norm clipping, linear learning-rate schedule.
#include <string.h>

#include "nn/nn.h"
#define NN_DOUBLE
#include "nn/nn.h"
#include "tests/test.h"

#define N 37
#define T 25

static void closed_form_random(NnAdamConfig c, const char* label) {
  double p0[N], p[N], g[T][N], ptraj[T + 1][N];
  uint64_t s = 5;
  for (int i = 0; i < N; i++) p0[i] = p[i] = 2 * nn_rng_uniform(&s) - 1;
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) g[t][i] = (2 * nn_rng_uniform(&s) - 1) * (1 + t % 3);
  NnAdam_f64* a;
  TEST_CHECK(nn_adam_create_f64(&a, &c, N, p0) == 0, "create");
  memcpy(ptraj[0], p0, sizeof p0);
  for (int t = 0; t < T; t++) {
    nn_adam_step_f64(a, p, g[t]);
    memcpy(ptraj[t + 1], p, sizeof p);
  }
  TEST_CHECK(nn_adam_steps_f64(a) == T, "step count");
  // replay with closed-form moments
  double q[N], m[N], v[N], e[N];
  memcpy(q, p0, sizeof q);
  for (int t = 1; t <= T; t++) {
    double norm = 0;
    for (int i = 0; i < N; i++) norm += g[t - 1][i] * g[t - 1][i];
    norm = sqrt(norm);
    double clip = c.max_grad_norm > 0 ? fmin(1.0, c.max_grad_norm / (norm + 1e-6)) : 1.0;
    double lr = c.schedule == NN_LR_LINEAR
                    ? c.lr + (c.lr_end - c.lr) * fmin(t - 1, c.total_steps - 1) / (double)(c.total_steps - 1)
                    : c.lr;
    for (int i = 0; i < N; i++) {
      // gradients actually used at each step s <= t (L2 decay uses the parameters of that step)
      double mm = 0, vv = 0;
      for (int u = 1; u <= t; u++) {
        double nu = 0;
        for (int k = 0; k < N; k++) nu += g[u - 1][k] * g[u - 1][k];
        double cu = c.max_grad_norm > 0 ? fmin(1.0, c.max_grad_norm / (sqrt(nu) + 1e-6)) : 1.0;
        double gu = g[u - 1][i] * cu + (c.decoupled ? 0 : c.weight_decay * ptraj[u - 1][i]);
        mm += (1 - c.beta1) * pow(c.beta1, t - u) * gu;
        vv += (1 - c.beta2) * pow(c.beta2, t - u) * gu * gu;
      }
      m[i] = mm, v[i] = vv;
      double mhat = mm / (1 - pow(c.beta1, t)), vhat = vv / (1 - pow(c.beta2, t));
      if (c.decoupled) q[i] *= 1 - lr * c.weight_decay;
      q[i] -= lr * mhat / (sqrt(vhat) + c.eps);
    }
    (void)clip;
  }
  char lab[96];
  snprintf(lab, sizeof lab, "%s params", label);
  test_close(lab, p, q, N, 1e-13, 1e-11);
  snprintf(lab, sizeof lab, "%s m", label);
  test_close(lab, nn_adam_m_f64(a), m, N, 1e-15, 1e-12);
  snprintf(lab, sizeof lab, "%s v", label);
  test_close(lab, nn_adam_v_f64(a), v, N, 1e-15, 1e-12);
  if (c.ema_decay > 0) {
    for (int i = 0; i < N; i++) {
      double d = c.ema_decay, ee = pow(d, T) * p0[i];
      for (int t = 1; t <= T; t++) ee += (1 - d) * pow(d, T - t) * ptraj[t][i];
      e[i] = ee;
    }
    snprintf(lab, sizeof lab, "%s ema", label);
    test_close(lab, nn_adam_ema_f64(a), e, N, 1e-14, 1e-12);
  }
  nn_adam_destroy_f64(a);
}

int main(void) {
  NnAdamConfig c = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
  // constant gradient, float64 and float32
  {
    double p[N], g[N], q[N];
    float pf[N], gf[N];
    for (int i = 0; i < N; i++) p[i] = q[i] = pf[i] = 0.5f - 0.03f * i, g[i] = gf[i] = 0.25f * (i - 18);
    NnAdam_f64* a;
    NnAdam* af;
    nn_adam_create_f64(&a, &c, N, NULL);
    nn_adam_create(&af, &c, N, NULL);
    for (int t = 0; t < T; t++) nn_adam_step_f64(a, p, g), nn_adam_step(af, pf, gf);
    for (int i = 0; i < N; i++) q[i] -= T * c.lr * g[i] / (fabs(g[i]) + c.eps);
    test_close("constant gradient f64", p, q, N, 1e-12, 1e-12);
    double pfd[N];
    for (int i = 0; i < N; i++) pfd[i] = pf[i];
    test_close("constant gradient f32", pfd, q, N, 1e-6, 1e-5);
    nn_adam_destroy_f64(a);
    nn_adam_destroy(af);
  }
  closed_form_random(c, "adam");
  c.ema_decay = 0.95;
  closed_form_random(c, "adam+ema");
  c.weight_decay = 0.1, c.decoupled = 1;
  closed_form_random(c, "adamw");
  c.decoupled = 0, c.beta1 = 0.7, c.beta2 = 0.95;
  closed_form_random(c, "adam+l2");
  c.weight_decay = 0, c.max_grad_norm = 1.5;
  closed_form_random(c, "adam+clip");
  c.schedule = NN_LR_LINEAR, c.lr_end = 1e-4, c.total_steps = 20;
  closed_form_random(c, "adam+linear lr");
  TEST_CHECK(fabs(nn_adam_lr(&c, 1) - 1e-2) < 1e-18 && fabs(nn_adam_lr(&c, 20) - 1e-4) < 1e-18 &&
                 fabs(nn_adam_lr(&c, 100) - 1e-4) < 1e-18,
             "schedule endpoints");
  return test_report("nn_adam");
}
