// nn_cuda_vs_cpu: the CUDA MLP (forward output, input gradient, every parameter gradient), Adam/AdamW+EMA step and
// normalizer against the float32 CPU reference; relative error ||gpu - cpu|| / ||cpu|| <= 1e-5 per tensor.
// NN_CUDA_FUSE_OUT cases also run the same model without the flag: with an identity output layer the hidden rows
// (and so, for the same dy, the input gradient and every parameter gradient) must be the same bits.
// ADJ_GPU_TEST_SMALL (tests/gpu_test_size.h): batches over 512 cut to 512 (1000 to 500: still a partial block,
// 512 still split over the batch). Skipped (77) without a CUDA device.
#include <cuda_runtime.h>
#include <string.h>

#include "nn/nn.h"
#include "nn/nn_cuda.h"
#include "tests/gpu_test_size.h"
#include "tests/nn_cuda_train.h"
#include "tests/test.h"

static void up(void* d, const void* h, size_t b) { TEST_CHECK(cudaMemcpy(d, h, b, cudaMemcpyHostToDevice) == cudaSuccess, "upload"); }
static void down(void* h, const void* d, size_t b) { TEST_CHECK(cudaMemcpy(h, d, b, cudaMemcpyDeviceToHost) == cudaSuccess, "download"); }

static int g_flags = 0;  // extra nn_cuda_mlp_create flags

static void mlp_case(const char* name, NnConfig c, int B, double tol) {
  NnMlp* cm;
  NnCudaMlp* gm;
  TEST_CHECK(nn_mlp_create(&cm, &c, B) == 0, "cpu create");
  int r = nn_cuda_mlp_create(&gm, &c, B, (tol > 1e-4 ? NN_CUDA_TF32 : 0) | g_flags, NULL);
  TEST_CHECK(r == 0, "%s: cuda create: %s", name, nn_strerror(r));
  if (r) return;
  if (g_flags & NN_CUDA_FUSE_OUT) {  // applied exactly where the output layer qualifies (out <= 32, in <= 512)
    int want = c.n_hidden > 0 && c.out_dim <= 32 && c.hidden[c.n_hidden - 1] <= 512;
    TEST_CHECK(!!(nn_cuda_mlp_flags(gm) & NN_CUDA_FUSE_OUT) == want, "%s: fused %d, expected %d", name,
               !!(nn_cuda_mlp_flags(gm) & NN_CUDA_FUSE_OUT), want);
  }
  uint64_t s = 5;
  float* p = reference_params(cm, &s);
  int64_t np = nn_mlp_param_count(cm);
  TEST_CHECK(nn_cuda_mlp_set_params(gm, p) == 0, "set params");
  size_t nx = (size_t)B * c.in_dim, ny = (size_t)B * c.out_dim;
  float* x = malloc(4 * nx);
  float* dy = malloc(4 * ny);
  float *y = malloc(4 * ny), *yg = malloc(4 * ny), *dx = malloc(4 * nx), *dxg = malloc(4 * nx), *gg = malloc(4 * np);
  for (size_t i = 0; i < nx; i++) x[i] = (float)(2 * nn_rng_uniform(&s) - 1);
  for (size_t i = 0; i < ny; i++) dy[i] = (float)(2 * nn_rng_uniform(&s) - 1);
  nn_mlp_forward(cm, x, B, y);
  nn_mlp_backward(cm, dy, dx);
  float *dx_d = dalloc(4 * nx), *dy_d = dalloc(4 * ny), *y_d = dalloc(4 * ny), *dxo_d = dalloc(4 * nx);
  up(dx_d, x, 4 * nx), up(dy_d, dy, 4 * ny);
  TEST_CHECK(nn_cuda_mlp_forward(gm, dx_d, B, y_d) == 0, "forward");
  TEST_CHECK(nn_cuda_mlp_backward(gm, dy_d, dxo_d) == 0, "backward");
  TEST_CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
  down(yg, y_d, 4 * ny), down(dxg, dxo_d, 4 * nx);
  nn_cuda_mlp_get_grads(gm, gg);
  int ident = c.out_act == NN_ACT_NONE && (c.out_scale == 0 || c.out_scale == 1);
  if ((g_flags & NN_CUDA_FUSE_OUT) && ident) {  // the unfused model: same dx and gradients, bit for bit
    NnCudaMlp* um;
    float *dxu = malloc(4 * nx), *gu = malloc(4 * np);
    r = nn_cuda_mlp_create(&um, &c, B, ((tol > 1e-4 ? NN_CUDA_TF32 : 0) | g_flags) & ~NN_CUDA_FUSE_OUT, NULL);
    TEST_CHECK(r == 0, "%s: unfused create: %s", name, nn_strerror(r));
    if (!r) {
      TEST_CHECK(nn_cuda_mlp_set_params(um, p) == 0, "unfused set params");
      TEST_CHECK(nn_cuda_mlp_forward(um, dx_d, B, y_d) == 0 && nn_cuda_mlp_backward(um, dy_d, dxo_d) == 0, "unfused");
      TEST_CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
      down(dxu, dxo_d, 4 * nx);
      nn_cuda_mlp_get_grads(um, gu);
      TEST_CHECK(!memcmp(dxu, dxg, 4 * nx), "%s: input grads differ from the unfused model's", name);
      TEST_CHECK(!memcmp(gu, gg, 4 * np), "%s: parameter grads differ from the unfused model's", name);
      nn_cuda_mlp_destroy(um);
    }
    free(dxu), free(gu);
  }
  double worst = 0, e;
  e = rel(yg, y, (int64_t)ny), worst = fmax(worst, e);
  TEST_CHECK(e <= tol, "%s: output rel err %.3g", name, e);
  e = rel(dxg, dx, (int64_t)nx), worst = fmax(worst, e);
  TEST_CHECK(e <= tol, "%s: input grad rel err %.3g", name, e);
  worst = fmax(worst, check_param_grads(name, &c, gg, nn_mlp_grads(cm), tol));
  printf("%-34s B=%-5d max rel err vs CPU %.2e (tol %.0e)\n", name, B, worst, tol);
  // EMA-style inference with the same parameters matches forward
  TEST_CHECK(nn_cuda_mlp_infer(gm, nn_cuda_mlp_params(gm), dx_d, B, y_d) == 0, "infer");
  down(yg, y_d, 4 * ny);
  TEST_CHECK(rel(yg, y, (int64_t)ny) <= tol, "%s: infer", name);
  cudaFree(dx_d), cudaFree(dy_d), cudaFree(y_d), cudaFree(dxo_d);
  free(x), free(dy), free(y), free(yg), free(dx), free(dxg), free(gg);
  nn_mlp_destroy(cm);
  nn_cuda_mlp_destroy(gm);
}

static void adam_case(void) {
  const int64_t n = 100003;
  NnAdamConfig c = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.01, .decoupled = 1,
                    .max_grad_norm = 5.0, .schedule = NN_LR_LINEAR, .lr_end = 1e-5, .total_steps = 4, .ema_decay = 0.9};
  float *p = malloc(4 * n), *g = malloc(4 * n), *pg = malloc(4 * n), *mg = malloc(4 * n), *vg = malloc(4 * n),
        *eg = malloc(4 * n);
  uint64_t s = 9;
  for (int64_t i = 0; i < n; i++) p[i] = (float)(nn_rng_uniform(&s) - 0.5);
  float *p_d = dalloc(4 * n), *g_d = dalloc(4 * n);
  up(p_d, p, 4 * n);
  NnAdam* a;
  NnCudaAdam* ga;
  nn_adam_create(&a, &c, n, p);
  TEST_CHECK(nn_cuda_adam_create(&ga, &c, n, p_d, NULL) == 0, "cuda adam create");
  for (int t = 0; t < 5; t++) {
    for (int64_t i = 0; i < n; i++) g[i] = (float)((nn_rng_uniform(&s) - 0.5) * (t + 1) * 0.1);
    up(g_d, g, 4 * n);
    nn_adam_step(a, p, g);
    TEST_CHECK(nn_cuda_adam_step(ga, p_d, g_d) == 0, "cuda adam step");
  }
  down(pg, p_d, 4 * n);
  int64_t steps;
  double norm;
  nn_cuda_adam_download(ga, mg, vg, eg, &steps, &norm);
  TEST_CHECK(steps == 5, "steps %lld", (long long)steps);
  TEST_CHECK(fabs(norm - nn_adam_last_grad_norm(a)) <= 1e-12 * norm, "grad norm %.17g vs %.17g", norm,
             nn_adam_last_grad_norm(a));
  double ep = rel(pg, p, n), em = rel(mg, nn_adam_m(a), n), ev = rel(vg, nn_adam_v(a), n), ee = rel(eg, nn_adam_ema(a), n);
  TEST_CHECK(ep <= 1e-6 && em <= 1e-6 && ev <= 1e-6 && ee <= 1e-6, "adam rel err p %.3g m %.3g v %.3g ema %.3g", ep,
             em, ev, ee);
  printf("adamw+clip+linear lr+ema, 5 steps: rel err p %.2e m %.2e v %.2e ema %.2e\n", ep, em, ev, ee);
  nn_adam_destroy(a);
  nn_cuda_adam_destroy(ga);
  cudaFree(p_d), cudaFree(g_d);
  free(p), free(g), free(pg), free(mg), free(vg), free(eg);
}

static void norm_case(void) {
  const int D = 37, B1 = 1000, B2 = 333;
  float* x = malloc(4 * (size_t)(B1 + B2) * D);
  uint64_t s = 21;
  for (int i = 0; i < (B1 + B2) * D; i++) x[i] = (float)((nn_rng_uniform(&s) - 0.2) * (1 + i % 7) * (i % 101 ? 1 : 30));
  NnNorm* n;
  NnCudaNorm* gn;
  nn_norm_create(&n, D, 1e-8, 4.0);
  TEST_CHECK(nn_cuda_norm_create(&gn, D, 1e-8, 4.0, B1, NULL) == 0, "cuda norm create");
  float* x_d = dalloc(4 * (size_t)(B1 + B2) * D);
  float *y_d = dalloc(4 * (size_t)B1 * D), *dx_d = dalloc(4 * (size_t)B1 * D);
  up(x_d, x, 4 * (size_t)(B1 + B2) * D);
  nn_norm_update(n, x, B1), nn_norm_update(n, x + B1 * D, B2);
  nn_cuda_norm_update(gn, x_d, B1), nn_cuda_norm_update(gn, x_d + B1 * D, B2);
  double cnt, mean[37], m2[37];
  TEST_CHECK(nn_cuda_norm_download(gn, &cnt, mean, m2) == 0, "download");
  TEST_CHECK(cnt == B1 + B2, "count");
  test_close("gpu normalizer mean", mean, nn_norm_mean(n), D, 1e-12, 1e-12);
  test_close("gpu normalizer m2", m2, nn_norm_m2(n), D, 1e-12, 1e-12);
  float *y = malloc(4 * (size_t)B1 * D), *yg = malloc(4 * (size_t)B1 * D), *dx = malloc(4 * (size_t)B1 * D),
        *dxg = malloc(4 * (size_t)B1 * D);
  nn_norm_apply(n, x, B1, y);
  nn_norm_backward(n, x, x + D, B1, dx);  // any dy will do
  nn_cuda_norm_apply(gn, x_d, B1, y_d);
  nn_cuda_norm_backward(gn, x_d, x_d + D, B1, dx_d);
  down(yg, y_d, 4 * (size_t)B1 * D), down(dxg, dx_d, 4 * (size_t)B1 * D);
  TEST_CHECK(rel(yg, y, (int64_t)B1 * D) <= 1e-6 && rel(dxg, dx, (int64_t)B1 * D) <= 1e-6, "normalizer apply/backward");
  printf("normalizer: apply rel err %.2e, backward %.2e\n", rel(yg, y, (int64_t)B1 * D), rel(dxg, dx, (int64_t)B1 * D));
  nn_norm_destroy(n);
  nn_cuda_norm_destroy(gn);
  cudaFree(x_d), cudaFree(y_d), cudaFree(dx_d);
  free(x), free(y), free(yg), free(dx), free(dxg);
}

int main(void) {
  if (nn_cuda_device_count() < 1) {
    printf("nn_cuda_vs_cpu: no CUDA device, skipped\n");
    return TEST_SKIP;
  }
  NnConfig actor = {.in_dim = 160, .out_dim = 29, .n_hidden = 3, .hidden = {512, 256, 128}, .act = NN_ACT_ELU, .layer_norm = 1};
  NnConfig critic = actor;
  critic.in_dim = 286, critic.out_dim = 1;
  mlp_case("actor elu+layernorm", actor, gpu_test_size(2048, 512), 1e-5);
  mlp_case("critic elu+layernorm", critic, 300, 1e-5);
  NnConfig odd = {.in_dim = 37, .out_dim = 5, .n_hidden = 2, .hidden = {45, 33}, .act = NN_ACT_SILU, .layer_norm = 0,
                  .out_act = NN_ACT_TANH, .out_scale = 1.5};
  mlp_case("odd sizes silu, tanh out x1.5", odd, gpu_test_size(1000, 500), 1e-5);
  odd.act = NN_ACT_TANH, odd.layer_norm = 1, odd.out_act = NN_ACT_NONE, odd.out_scale = 0;
  mlp_case("odd sizes tanh+layernorm", odd, 513, 1e-5);
  odd.act = NN_ACT_RELU, odd.hidden[0] = 1000;
  mlp_case("relu+layernorm, width 1000", odd, gpu_test_size(1024, 512), 1e-5);
  NnConfig wide = {.in_dim = 64, .out_dim = 40, .n_hidden = 2, .hidden = {1024, 256}, .act = NN_ACT_ELU, .layer_norm = 1};
  mlp_case("width 1024, 40 outputs (cuBLASLt out)", wide, 300, 1e-5);
  wide.layer_norm = 0, wide.act = NN_ACT_SILU, wide.out_dim = 7;
  mlp_case("width 1024 silu, no layernorm", wide, 1, 1e-5);
  mlp_case("actor tf32 (loose tolerance)", actor, gpu_test_size(2048, 512), 2e-2);
  g_flags = NN_CUDA_THIN;
  mlp_case("actor, thin output kernels", actor, gpu_test_size(2048, 512), 1e-5);
  mlp_case("critic, thin output kernels", critic, 300, 1e-5);
  mlp_case("odd sizes, thin output kernels", odd, 1, 1e-5);
  g_flags = NN_CUDA_NO_VEC;
  mlp_case("actor, scalar row kernels", actor, gpu_test_size(2048, 512), 1e-5);
  // NN_CUDA_FUSE_OUT: output layer inside the last row kernel (32 rows per block: batches 300, 1000, 1 leave a
  // partial block); h = 128 vector rows, h = 96 / 33 and NO_VEC scalar rows, no LayerNorm with tanh x1.5 output
  g_flags = NN_CUDA_FUSE_OUT;
  mlp_case("actor, fused output layer", actor, gpu_test_size(2048, 512), 1e-5);
  mlp_case("critic, fused output layer", critic, 300, 1e-5);
  NnConfig f7 = {.in_dim = 50, .out_dim = 7, .n_hidden = 2, .hidden = {64, 96}, .act = NN_ACT_ELU, .layer_norm = 1};
  mlp_case("out 7, in 96, fused", f7, gpu_test_size(1000, 500), 1e-5);
  mlp_case("out 7, in 96, fused, batch 1", f7, 1, 1e-5);
  NnConfig f5 = {.in_dim = 37, .out_dim = 5, .n_hidden = 2, .hidden = {45, 33}, .act = NN_ACT_SILU, .layer_norm = 0,
                 .out_act = NN_ACT_TANH, .out_scale = 1.5};
  mlp_case("in 33 silu, tanh out x1.5, fused", f5, gpu_test_size(1000, 500), 1e-5);
  f5.out_act = NN_ACT_NONE, f5.out_scale = 0, f5.out_dim = 32, f5.hidden[1] = 512;
  mlp_case("out 32, in 512 silu, fused", f5, 77, 1e-5);
  mlp_case("width 1024 silu, 256 -> 7, fused", wide, 300, 1e-5);
  NnConfig nf = {.in_dim = 64, .out_dim = 40, .n_hidden = 2, .hidden = {64, 256}, .act = NN_ACT_ELU, .layer_norm = 1};
  mlp_case("out 40 (not fused: normal path)", nf, 300, 1e-5);
  nf.out_dim = 3, nf.hidden[1] = 1024;
  mlp_case("in 1024 (not fused: normal path)", nf, 300, 1e-5);
  mlp_case("actor tf32, fused (loose tolerance)", actor, gpu_test_size(2048, 512), 2e-2);
  mlp_case("critic tf32, fused (loose tolerance)", critic, 300, 2e-2);
  g_flags = NN_CUDA_FUSE_OUT | NN_CUDA_NO_VEC;
  mlp_case("actor, scalar rows, fused", actor, gpu_test_size(2048, 512), 1e-5);
  g_flags = NN_CUDA_FUSE_OUT | NN_CUDA_THIN;
  mlp_case("critic, fused forward + thin backward", critic, 300, 1e-5);
  g_flags = 0;
  adam_case();
  norm_case();
  return test_report("nn_cuda_vs_cpu");
}
