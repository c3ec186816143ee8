// nn_checkpoint: MLP parameters, Adam moments and step, EMA and normalizer statistics written as named arrays
// and read back; training resumed from the checkpoint gives the same bits as training straight through.
#include <string.h>

#include "nn/nn.h"
#include "tests/test.h"

#define B 16

typedef struct {
  NnMlp* m;
  NnAdam* a;
  NnNorm* n;
} Trainer;

static const NnConfig cfg = {.in_dim = 6, .out_dim = 3, .n_hidden = 2, .hidden = {16, 8}, .act = NN_ACT_ELU, .layer_norm = 1};
static const NnAdamConfig acfg = {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-2,
                                  .decoupled = 1, .max_grad_norm = 1.0, .schedule = NN_LR_LINEAR, .lr_end = 1e-4,
                                  .total_steps = 50, .ema_decay = 0.99};

static void make(Trainer* t) {
  nn_mlp_create(&t->m, &cfg, B);
  nn_mlp_init(t->m, 42);
  nn_adam_create(&t->a, &acfg, nn_mlp_param_count(t->m), nn_mlp_params(t->m));
  nn_norm_create(&t->n, cfg.in_dim, 1e-8, 5.0);
}

static void destroy(Trainer* t) {
  nn_mlp_destroy(t->m), nn_adam_destroy(t->a), nn_norm_destroy(t->n);
}

// one step of regression onto a fixed target, data drawn from the step number
static void step(Trainer* t, int k) {
  float x[B * 6], xn[B * 6], y[B * 3], dy[B * 3];
  uint64_t s = 1000 + (uint64_t)k;
  for (int i = 0; i < B * 6; i++) x[i] = (float)(3 * nn_rng_uniform(&s) + 1);
  nn_norm_update(t->n, x, B);
  nn_norm_apply(t->n, x, B, xn);
  nn_mlp_forward(t->m, xn, B, y);
  for (int i = 0; i < B * 3; i++) dy[i] = 2 * (y[i] - 0.5f) / (B * 3);
  nn_mlp_backward(t->m, dy, NULL);
  nn_adam_step(t->a, nn_mlp_params(t->m), nn_mlp_grads(t->m));
}

static int refs(Trainer* t, NnTensorRef* r) {
  int k = nn_mlp_state(t->m, r, 8);
  k += nn_adam_state(t->a, r + k, 8 - k);
  k += nn_norm_state(t->n, r + k, 8 - k);
  return k;
}

int main(void) {
  Trainer a, b;
  make(&a), make(&b);
  for (int k = 0; k < 20; k++) step(&a, k);
  NnTensorRef ra[8], rb[8];
  int na = refs(&a, ra), nb = refs(&b, rb);
  TEST_CHECK(na == 8 && nb == 8, "state arrays %d %d", na, nb);
  FILE* f = tmpfile();
  TEST_CHECK(f && nn_state_write(f, ra, na) == 0, "write");
  rewind(f);
  TEST_CHECK(nn_state_read(f, rb, nb) == 0, "read");
  for (int i = 0; i < na; i++) {
    size_t sz = (size_t)ra[i].count * (ra[i].dtype == NN_DT_F32 ? 4 : 8);
    TEST_CHECK(!strcmp(ra[i].name, rb[i].name) && memcmp(ra[i].data, rb[i].data, sz) == 0, "%s restored", ra[i].name);
  }
  // a wrong size is refused
  rewind(f);
  NnTensorRef bad = rb[0];
  bad.count--;
  TEST_CHECK(nn_state_read(f, &bad, 1) == NN_EFORMAT, "size mismatch refused");
  fclose(f);
  for (int k = 20; k < 40; k++) step(&a, k), step(&b, k);
  int64_t np = nn_mlp_param_count(a.m);
  TEST_CHECK(memcmp(nn_mlp_params(a.m), nn_mlp_params(b.m), sizeof(float) * np) == 0, "resumed params identical");
  TEST_CHECK(memcmp(nn_adam_ema(a.a), nn_adam_ema(b.a), sizeof(float) * np) == 0, "resumed ema identical");
  TEST_CHECK(nn_adam_steps(b.a) == 40, "step count");
  // EMA evaluation through infer gives a finite, different output from the live parameters
  float x[6] = {1, 2, 3, 4, 1, 2}, y1[3], y2[3];
  nn_mlp_infer(a.m, nn_adam_ema(a.a), x, 1, y1);
  nn_mlp_infer(a.m, nn_mlp_params(a.m), x, 1, y2);
  TEST_CHECK(isfinite(y1[0]) && y1[0] != y2[0], "ema inference");
  destroy(&a), destroy(&b);
  return test_report("nn_checkpoint");
}
