// nn_gradcheck: parameter and input gradients of the float64 CPU MLP against central differences
// (Richardson-extrapolated, error O(h^4)), for every activation, with and without LayerNorm and output scaling.
// Criterion: |g - fd| <= 1e-7 * max(|fd|, 1e-3 * max|fd|) per element.
#include <string.h>

#include "nn/nn.h"
#define NN_DOUBLE
#include "nn/nn.h"
#include "tests/test.h"

static double loss(NnMlp_f64* m, const double* x, int B, const double* r, double* y) {
  nn_mlp_forward_f64(m, x, B, y);
  const NnConfig* c = nn_mlp_config_f64(m);
  double s = 0;
  for (int i = 0; i < B * c->out_dim; i++) s += y[i] * r[i];
  return s;
}

// Richardson-extrapolated central difference of loss wrt *v
static double fd(NnMlp_f64* m, double* v, double h, const double* x, int B, const double* r, double* y) {
  double v0 = *v, d[2];
  for (int k = 0; k < 2; k++) {
    double hk = k ? h / 2 : h;
    *v = v0 + hk;
    double lp = loss(m, x, B, r, y);
    *v = v0 - hk;
    double lm = loss(m, x, B, r, y);
    d[k] = (lp - lm) / (2 * hk);
  }
  *v = v0;
  return (4 * d[1] - d[0]) / 3;
}

static double check(const char* label, const double* g, const double* ref, int n) {
  double mx = 0, worst = 0;
  int wi = 0;
  for (int i = 0; i < n; i++) mx = fmax(mx, fabs(ref[i]));
  for (int i = 0; i < n; i++) {
    double rel = fabs(g[i] - ref[i]) / fmax(fabs(ref[i]), 1e-3 * mx);
    if (!(rel <= worst)) worst = rel, wi = i;
  }
  TEST_CHECK(worst <= 1e-7, "%s: max rel err %.3g at [%d] (g %.17g fd %.17g)", label, worst, wi, g[wi], ref[wi]);
  return worst;
}

static void run(const char* name, NnConfig c, double h) {
  const int B = 5;
  NnMlp_f64* m;
  TEST_CHECK(nn_mlp_create_f64(&m, &c, B) == 0, "create");
  nn_mlp_init_f64(m, 1234);
  int64_t np = nn_mlp_param_count_f64(m);
  double* p = nn_mlp_params_f64(m);
  // perturb LayerNorm's gamma/beta away from 1/0 so their gradients are generic
  uint64_t s = 99;
  for (int64_t i = 0; i < np; i++) p[i] += 0.1 * (2 * nn_rng_uniform(&s) - 1);
  int nx = B * c.in_dim, ny = B * c.out_dim;
  double* x = malloc(sizeof(double) * nx);
  double* r = malloc(sizeof(double) * ny);
  double* y = malloc(sizeof(double) * ny);
  double* dx = malloc(sizeof(double) * nx);
  double* g = malloc(sizeof(double) * np);
  double* gfd = malloc(sizeof(double) * np);
  double* dxfd = malloc(sizeof(double) * nx);
  for (int i = 0; i < nx; i++) x[i] = 2 * nn_rng_uniform(&s) - 1;
  for (int i = 0; i < ny; i++) r[i] = 2 * nn_rng_uniform(&s) - 1;
  loss(m, x, B, r, y);
  TEST_CHECK(nn_mlp_backward_f64(m, r, dx) == 0, "backward");
  memcpy(g, nn_mlp_grads_f64(m), sizeof(double) * np);
  for (int64_t i = 0; i < np; i++) gfd[i] = fd(m, &p[i], h, x, B, r, y);
  for (int i = 0; i < nx; i++) dxfd[i] = fd(m, &x[i], h, x, B, r, y);
  char lab[128];
  snprintf(lab, sizeof lab, "%s params", name);
  double e1 = check(lab, g, gfd, (int)np);
  snprintf(lab, sizeof lab, "%s input", name);
  double e2 = check(lab, dx, dxfd, nx);
  // backward without dx gives the same parameter gradients
  loss(m, x, B, r, y);
  nn_mlp_backward_f64(m, r, NULL);
  TEST_CHECK(memcmp(g, nn_mlp_grads_f64(m), sizeof(double) * np) == 0, "%s: grads differ without dx", name);
  printf("%-28s params %5lld  max rel err: params %.2e input %.2e\n", name, (long long)np, e1, e2);
  free(x), free(r), free(y), free(dx), free(g), free(gfd), free(dxfd);
  nn_mlp_destroy_f64(m);
}

int main(void) {
  NnConfig c = {.in_dim = 7, .out_dim = 4, .n_hidden = 2, .hidden = {9, 6}, .act = NN_ACT_ELU, .layer_norm = 1};
  run("elu+layernorm (SHAC)", c, 1e-3);
  c.act = NN_ACT_SILU, c.layer_norm = 0, c.out_act = NN_ACT_TANH, c.out_scale = 2.5;
  run("silu, tanh out x2.5", c, 1e-3);
  c.act = NN_ACT_TANH, c.layer_norm = 1, c.n_hidden = 3, c.hidden[2] = 5, c.out_act = NN_ACT_NONE, c.out_scale = 0;
  run("tanh+layernorm, 3 hidden", c, 1e-3);
  c.act = NN_ACT_RELU, c.layer_norm = 1, c.out_dim = 1;
  run("relu+layernorm, 1 output", c, 1e-4);
  c.act = NN_ACT_SILU, c.n_hidden = 0, c.out_dim = 3;
  run("linear only", c, 1e-3);

  // initialization bounds: W, b within 1/sqrt(in), and not degenerate
  NnConfig a = {.in_dim = 160, .out_dim = 29, .n_hidden = 3, .hidden = {512, 256, 128}, .act = NN_ACT_ELU, .layer_norm = 1};
  NnMlp_f64* m;
  nn_mlp_create_f64(&m, &a, 1);
  nn_mlp_init_f64(m, 7);
  for (int l = 0; l < 4; l++) {
    NnLayerOffsets o;
    nn_layer_offsets(&a, l, &o);
    const double* p = nn_mlp_params_f64(m);
    double bound = 1 / sqrt((double)o.in), mx = 0, s2 = 0;
    int64_t n = (int64_t)o.in * o.out;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs(p[o.w + i])), s2 += p[o.w + i] * p[o.w + i];
    TEST_CHECK(mx <= bound && mx > 0.99 * bound, "layer %d W bound %g vs %g", l, mx, bound);
    double var = s2 / n, want = bound * bound / 3;  // U(-b, b) has variance b^2/3
    TEST_CHECK(fabs(var - want) < 0.05 * want, "layer %d W var %g vs %g", l, var, want);
    if (o.gamma >= 0) TEST_CHECK(p[o.gamma] == 1 && p[o.beta] == 0, "layer %d LayerNorm init", l);
  }
  nn_mlp_destroy_f64(m);
  return test_report("nn_gradcheck");
}
