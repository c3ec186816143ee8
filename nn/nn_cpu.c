// CPU reference MLP, Adam/AdamW (+EMA) and observation normalizer in plain C. Compiled twice: float32
// (adj_nn) and, with -DNN_DOUBLE, float64 (adj_nn_f64, names suffixed _f64) for gradient checks.
// Loops are written for clarity and a fixed summation order, not speed; the GPU library is the fast path.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

#ifdef NN_DOUBLE
typedef double nn_real;
#else
typedef float nn_real;
#endif

#ifdef NN_DOUBLE
#define R_EXP exp
#define R_EXPM1 expm1
#define R_TANH tanh
#define R_SQRT sqrt
#define NN_DT_REAL NN_DT_F64
#else
#define R_EXP expf
#define R_EXPM1 expm1f
#define R_TANH tanhf
#define R_SQRT sqrtf
#define NN_DT_REAL NN_DT_F32
#endif

typedef NN_FN(NnMlp) Mlp;
typedef NN_FN(NnAdam) Adam;
typedef NN_FN(NnNorm) Norm;

// ---- activations ----
static nn_real act_f(NnAct a, nn_real z) {
  switch (a) {
    case NN_ACT_ELU: return z > 0 ? z : R_EXPM1(z);
    case NN_ACT_SILU: return z / ((nn_real)1 + R_EXP(-z));
    case NN_ACT_RELU: return z > 0 ? z : (nn_real)0;
    case NN_ACT_TANH: return R_TANH(z);
    default: return z;
  }
}

// derivative d act / d z at z
static nn_real act_df(NnAct a, nn_real z) {
  switch (a) {
    case NN_ACT_ELU: return z > 0 ? (nn_real)1 : R_EXP(z);
    case NN_ACT_SILU: {
      nn_real s = (nn_real)1 / ((nn_real)1 + R_EXP(-z));
      return s * ((nn_real)1 + z * ((nn_real)1 - s));
    }
    case NN_ACT_RELU: return z > 0 ? (nn_real)1 : (nn_real)0;
    case NN_ACT_TANH: {
      nn_real t = R_TANH(z);
      return (nn_real)1 - t * t;
    }
    default: return (nn_real)1;
  }
}

// ---- MLP ----
struct NN_FN(NnMlp) {
  NnConfig cfg;
  int n_layers, max_batch, batch, max_w;
  int64_t n_params;
  NnLayerOffsets lay[NN_MAX_HIDDEN + 1];
  nn_real ln_eps, out_scale;
  nn_real* params;  // (n_params)
  nn_real* grads;   // (n_params)
  // workspace, sized at creation
  nn_real* z[NN_MAX_HIDDEN + 1];  // pre-activation (batch, out_l)
  nn_real* y[NN_MAX_HIDDEN];      // hidden layer outputs (batch, out_l), inputs of the next layer
  nn_real* mean[NN_MAX_HIDDEN];   // LayerNorm row mean (batch)
  nn_real* rstd[NN_MAX_HIDDEN];   // LayerNorm row 1/sqrt(var+eps) (batch)
  nn_real* g0;                    // gradient ping-pong (batch, max_w)
  nn_real* g1;
  const nn_real* x;               // input of the last forward (batch, in)
  void* block;                    // the single allocation
};

int NN_FN(nn_mlp_create)(Mlp** out, const NnConfig* cfg, int max_batch) {
  if (!out || nn_config_check(cfg) || max_batch <= 0) return NN_EINVAL;
  *out = NULL;
  Mlp* m = (Mlp*)calloc(1, sizeof(Mlp));
  if (!m) return NN_ENOMEM;
  m->cfg = *cfg;
  m->n_layers = cfg->n_hidden + 1;
  m->max_batch = max_batch;
  m->max_w = nn_max_width(cfg);
  m->n_params = nn_param_count(cfg);
  m->ln_eps = (nn_real)(cfg->ln_eps > 0 ? cfg->ln_eps : 1e-5);
  m->out_scale = (nn_real)(cfg->out_scale != 0 ? cfg->out_scale : 1.0);
  int64_t total = 2 * m->n_params + 2 * (int64_t)max_batch * m->max_w;
  for (int l = 0; l < m->n_layers; l++) {
    nn_layer_offsets(cfg, l, &m->lay[l]);
    total += (int64_t)max_batch * m->lay[l].out * (l < cfg->n_hidden ? 2 : 1) + (l < cfg->n_hidden ? 2 * max_batch : 0);
  }
  nn_real* p = (nn_real*)calloc((size_t)total, sizeof(nn_real));
  if (!p) {
    free(m);
    return NN_ENOMEM;
  }
  m->block = p;
  m->params = p, p += m->n_params;
  m->grads = p, p += m->n_params;
  m->g0 = p, p += (int64_t)max_batch * m->max_w;
  m->g1 = p, p += (int64_t)max_batch * m->max_w;
  for (int l = 0; l < m->n_layers; l++) {
    int64_t sz = (int64_t)max_batch * m->lay[l].out;
    m->z[l] = p, p += sz;
    if (l < cfg->n_hidden) {
      m->y[l] = p, p += sz;
      m->mean[l] = p, p += max_batch;
      m->rstd[l] = p, p += max_batch;
    }
  }
  *out = m;
  return NN_OK;
}

void NN_FN(nn_mlp_destroy)(Mlp* m) {
  if (!m) return;
  free(m->block);
  free(m);
}

const NnConfig* NN_FN(nn_mlp_config)(const Mlp* m) { return &m->cfg; }
int64_t NN_FN(nn_mlp_param_count)(const Mlp* m) { return m->n_params; }
nn_real* NN_FN(nn_mlp_params)(Mlp* m) { return m->params; }
nn_real* NN_FN(nn_mlp_grads)(Mlp* m) { return m->grads; }

int NN_FN(nn_mlp_init)(Mlp* m, uint64_t seed) {
  if (!m) return NN_EINVAL;
  uint64_t s = seed;
  for (int l = 0; l < m->n_layers; l++) {
    const NnLayerOffsets* o = &m->lay[l];
    double bound = 1.0 / sqrt((double)o->in);
    for (int64_t i = 0; i < (int64_t)o->in * o->out; i++)
      m->params[o->w + i] = (nn_real)((2.0 * nn_rng_uniform(&s) - 1.0) * bound);
    for (int i = 0; i < o->out; i++) m->params[o->b + i] = (nn_real)((2.0 * nn_rng_uniform(&s) - 1.0) * bound);
    if (o->gamma >= 0)
      for (int i = 0; i < o->out; i++) m->params[o->gamma + i] = 1, m->params[o->beta + i] = 0;
  }
  return NN_OK;
}

// z (batch, out) = x (batch, in) W^T + b. Eight outputs at a time: eight independent chains, each summed in ascending
// i exactly as one output alone, so that they overlap instead of waiting on each other's adds (same results).
static void linear_fwd(const nn_real* x, const nn_real* w, const nn_real* b, int batch, int in, int out, nn_real* z) {
  for (int r = 0; r < batch; r++) {
    const nn_real* xr = x + (int64_t)r * in;
    nn_real* zr = z + (int64_t)r * out;
    int o = 0;
    for (; o + 8 <= out; o += 8) {
      const nn_real* wp[8];
      nn_real sv[8];
      for (int q = 0; q < 8; q++) wp[q] = w + (int64_t)(o + q) * in, sv[q] = 0;
      for (int i = 0; i < in; i++) {
        nn_real xi = xr[i];
        for (int q = 0; q < 8; q++) sv[q] += xi * wp[q][i];
      }
      for (int q = 0; q < 8; q++) zr[o + q] = sv[q] + b[o + q];
    }
    for (; o < out; o++) {
      const nn_real* wo = w + (int64_t)o * in;
      nn_real s = 0;
      for (int i = 0; i < in; i++) s += xr[i] * wo[i];
      zr[o] = s + b[o];
    }
  }
}

// y = LN(act(z)) (or act(z)) row by row; keeps row mean and rstd
static void hidden_post(const Mlp* m, int l, const nn_real* params, int batch, const nn_real* z, nn_real* y,
                        nn_real* mean, nn_real* rstd) {
  const NnLayerOffsets* o = &m->lay[l];
  int h = o->out;
  for (int r = 0; r < batch; r++) {
    const nn_real* zr = z + (int64_t)r * h;
    nn_real* yr = y + (int64_t)r * h;
    for (int j = 0; j < h; j++) yr[j] = act_f(m->cfg.act, zr[j]);
    if (!m->cfg.layer_norm) continue;
    nn_real s = 0;
    for (int j = 0; j < h; j++) s += yr[j];
    nn_real mu = s / (nn_real)h, v = 0;
    for (int j = 0; j < h; j++) {
      nn_real d = yr[j] - mu;
      v += d * d;
    }
    nn_real rs = (nn_real)1 / R_SQRT(v / (nn_real)h + m->ln_eps);
    const nn_real* g = params + o->gamma;
    const nn_real* be = params + o->beta;
    for (int j = 0; j < h; j++) yr[j] = (yr[j] - mu) * rs * g[j] + be[j];
    if (mean) mean[r] = mu, rstd[r] = rs;
  }
}

static void out_post(const Mlp* m, int batch, const nn_real* z, nn_real* y) {
  int64_t n = (int64_t)batch * m->cfg.out_dim;
  for (int64_t i = 0; i < n; i++) y[i] = m->out_scale * act_f(m->cfg.out_act, z[i]);
}

static int forward_impl(Mlp* m, const nn_real* params, const nn_real* x, int batch, nn_real* y, int keep) {
  if (!m || !params || !x || !y || batch <= 0 || batch > m->max_batch) return NN_EINVAL;
  const nn_real* in = x;
  for (int l = 0; l < m->n_layers; l++) {
    const NnLayerOffsets* o = &m->lay[l];
    // for inference, reuse the first ping-pong buffers so that saved activations stay intact
    nn_real* z = keep ? m->z[l] : (l % 2 ? m->g1 : m->g0);
    linear_fwd(in, params + o->w, params + o->b, batch, o->in, o->out, z);
    if (l < m->cfg.n_hidden) {
      nn_real* yl = keep ? m->y[l] : z;  // in-place is fine for inference
      hidden_post(m, l, params, batch, z, yl, keep ? m->mean[l] : NULL, keep ? m->rstd[l] : NULL);
      in = yl;
    } else {
      out_post(m, batch, z, y);
    }
  }
  if (keep) m->x = x, m->batch = batch;
  return NN_OK;
}

int NN_FN(nn_mlp_forward)(Mlp* m, const nn_real* x, int batch, nn_real* y) {
  return forward_impl(m, m ? m->params : NULL, x, batch, y, 1);
}

int NN_FN(nn_mlp_infer)(Mlp* m, const nn_real* params, const nn_real* x, int batch, nn_real* y) {
  return forward_impl(m, params, x, batch, y, 0);
}

int NN_FN(nn_mlp_backward)(Mlp* m, const nn_real* dy, nn_real* dx) {
  if (!m || !dy || m->batch <= 0) return NN_EINVAL;
  const int B = m->batch;
  const nn_real* P = m->params;
  nn_real* G = m->grads;
  // dz of the output layer
  nn_real* dz = m->g0;
  {
    const nn_real* z = m->z[m->n_layers - 1];
    int64_t n = (int64_t)B * m->cfg.out_dim;
    for (int64_t i = 0; i < n; i++) dz[i] = dy[i] * m->out_scale * act_df(m->cfg.out_act, z[i]);
  }
  for (int l = m->n_layers - 1; l >= 0; l--) {
    const NnLayerOffsets* o = &m->lay[l];
    const nn_real* xin = l == 0 ? m->x : m->y[l - 1];
    // dW (out, in) = dz^T x ; db = sum_r dz
    for (int oo = 0; oo < o->out; oo++) {
      nn_real sb = 0;
      for (int r = 0; r < B; r++) sb += dz[(int64_t)r * o->out + oo];
      G[o->b + oo] = sb;
      for (int i = 0; i < o->in; i++) {
        nn_real s = 0;
        for (int r = 0; r < B; r++) s += dz[(int64_t)r * o->out + oo] * xin[(int64_t)r * o->in + i];
        G[o->w + (int64_t)oo * o->in + i] = s;
      }
    }
    if (l == 0 && !dx) break;
    // d input (batch, in) = dz W
    nn_real* dxin = l == 0 ? dx : (dz == m->g0 ? m->g1 : m->g0);
    const nn_real* w = P + o->w;
    for (int r = 0; r < B; r++) {
      nn_real* d = dxin + (int64_t)r * o->in;
      for (int i = 0; i < o->in; i++) d[i] = 0;
      for (int oo = 0; oo < o->out; oo++) {
        nn_real g = dz[(int64_t)r * o->out + oo];
        const nn_real* wo = w + (int64_t)oo * o->in;
        for (int i = 0; i < o->in; i++) d[i] += g * wo[i];
      }
    }
    if (l == 0) break;
    // through the previous hidden layer's LayerNorm and activation: dxin holds dL/dy[l-1]; make it dL/dz[l-1]
    const NnLayerOffsets* p = &m->lay[l - 1];
    int h = p->out;
    const nn_real* zp = m->z[l - 1];
    if (m->cfg.layer_norm) {
      for (int j = 0; j < h; j++) G[p->gamma + j] = 0, G[p->beta + j] = 0;
    }
    for (int r = 0; r < B; r++) {
      nn_real* d = dxin + (int64_t)r * h;
      const nn_real* zr = zp + (int64_t)r * h;
      if (m->cfg.layer_norm) {
        const nn_real* gam = P + p->gamma;
        nn_real mu = m->mean[l - 1][r], rs = m->rstd[l - 1][r];
        nn_real sg = 0, sgx = 0;
        for (int j = 0; j < h; j++) {
          nn_real xh = (act_f(m->cfg.act, zr[j]) - mu) * rs;
          nn_real g = d[j] * gam[j];
          G[p->gamma + j] += d[j] * xh;
          G[p->beta + j] += d[j];
          sg += g, sgx += g * xh;
        }
        sg /= (nn_real)h, sgx /= (nn_real)h;
        for (int j = 0; j < h; j++) {
          nn_real xh = (act_f(m->cfg.act, zr[j]) - mu) * rs;
          d[j] = rs * (d[j] * gam[j] - sg - xh * sgx);
        }
      }
      for (int j = 0; j < h; j++) d[j] *= act_df(m->cfg.act, zr[j]);
    }
    dz = dxin;
  }
  return NN_OK;
}

int NN_FN(nn_mlp_state)(Mlp* m, NnTensorRef* refs, int max) {
  if (!m || !refs || max < 1) return NN_EINVAL;
  memset(refs, 0, sizeof(*refs));
  strcpy(refs[0].name, "mlp.params");
  refs[0].dtype = NN_DT_REAL, refs[0].count = m->n_params, refs[0].data = m->params;
  return 1;
}

// ---- Adam ----
struct NN_FN(NnAdam) {
  NnAdamConfig cfg;
  int64_t n, step;
  double last_norm;
  nn_real *m, *v, *ema;  // (n) each, one allocation
};

int NN_FN(nn_adam_create)(Adam** out, const NnAdamConfig* cfg, int64_t n, const nn_real* params0) {
  if (!out || !cfg || n <= 0 || (cfg->ema_decay > 0 && !params0)) return NN_EINVAL;
  *out = NULL;
  Adam* a = (Adam*)calloc(1, sizeof(Adam));
  if (!a) return NN_ENOMEM;
  a->cfg = *cfg, a->n = n;
  int k = cfg->ema_decay > 0 ? 3 : 2;
  a->m = (nn_real*)calloc((size_t)(k * n), sizeof(nn_real));
  if (!a->m) {
    free(a);
    return NN_ENOMEM;
  }
  a->v = a->m + n;
  if (k == 3) a->ema = a->m + 2 * n, memcpy(a->ema, params0, sizeof(nn_real) * (size_t)n);
  *out = a;
  return NN_OK;
}

void NN_FN(nn_adam_destroy)(Adam* a) {
  if (!a) return;
  free(a->m);
  free(a);
}

// Per-step scalars, computed in float64 the same way on CPU and GPU (nn_cuda.cu mirrors this).
int NN_FN(nn_adam_step)(Adam* a, nn_real* p, const nn_real* g) {
  if (!a || !p || !g) return NN_EINVAL;
  const NnAdamConfig* c = &a->cfg;
  // global norm in float64, fixed order
  double ss = 0;
  for (int64_t i = 0; i < a->n; i++) ss += (double)g[i] * (double)g[i];
  a->last_norm = sqrt(ss);
  double clip = 1.0;
  if (c->max_grad_norm > 0) {
    double cc = c->max_grad_norm / (a->last_norm + 1e-6);
    clip = cc < 1.0 ? cc : 1.0;
  }
  int64_t t = ++a->step;
  double lr = nn_adam_lr(c, t);
  double bc1 = 1.0 - pow(c->beta1, (double)t), bc2 = 1.0 - pow(c->beta2, (double)t);
  nn_real step_size = (nn_real)(lr / bc1), inv_sqrt_bc2 = (nn_real)(1.0 / sqrt(bc2));
  nn_real b1 = (nn_real)c->beta1, b2 = (nn_real)c->beta2, eps = (nn_real)c->eps, cl = (nn_real)clip;
  nn_real wd = (nn_real)c->weight_decay, decay = (nn_real)(1.0 - lr * c->weight_decay);
  nn_real ed = (nn_real)c->ema_decay, ed1 = (nn_real)(1.0 - c->ema_decay);
  for (int64_t i = 0; i < a->n; i++) {
    nn_real gi = g[i] * cl, pi = p[i];
    if (wd != 0 && !c->decoupled) gi = gi + wd * pi;
    nn_real mi = b1 * a->m[i] + ((nn_real)1 - b1) * gi;
    nn_real vi = b2 * a->v[i] + ((nn_real)1 - b2) * gi * gi;
    a->m[i] = mi, a->v[i] = vi;
    if (wd != 0 && c->decoupled) pi = pi * decay;
    pi = pi - step_size * (mi / (R_SQRT(vi) * inv_sqrt_bc2 + eps));
    p[i] = pi;
    if (a->ema) a->ema[i] = ed * a->ema[i] + ed1 * pi;
  }
  return NN_OK;
}

int64_t NN_FN(nn_adam_steps)(const Adam* a) { return a->step; }
double NN_FN(nn_adam_last_grad_norm)(const Adam* a) { return a->last_norm; }
nn_real* NN_FN(nn_adam_m)(Adam* a) { return a->m; }
nn_real* NN_FN(nn_adam_v)(Adam* a) { return a->v; }
nn_real* NN_FN(nn_adam_ema)(Adam* a) { return a->ema; }

int NN_FN(nn_adam_state)(Adam* a, NnTensorRef* refs, int max) {
  if (!a || !refs) return NN_EINVAL;
  int k = a->ema ? 4 : 3;
  if (max < k) return NN_EINVAL;
  memset(refs, 0, sizeof(*refs) * (size_t)k);
  strcpy(refs[0].name, "adam.m"), refs[0].dtype = NN_DT_REAL, refs[0].count = a->n, refs[0].data = a->m;
  strcpy(refs[1].name, "adam.v"), refs[1].dtype = NN_DT_REAL, refs[1].count = a->n, refs[1].data = a->v;
  strcpy(refs[2].name, "adam.step"), refs[2].dtype = NN_DT_I64, refs[2].count = 1, refs[2].data = &a->step;
  if (a->ema) strcpy(refs[3].name, "ema"), refs[3].dtype = NN_DT_REAL, refs[3].count = a->n, refs[3].data = a->ema;
  return k;
}

// ---- normalizer ----
struct NN_FN(NnNorm) {
  int dim;
  double eps, clip;
  double count;
  double *mean, *m2;  // (dim) each
};

int NN_FN(nn_norm_create)(Norm** out, int dim, double eps, double clip) {
  if (!out || dim <= 0 || eps < 0) return NN_EINVAL;
  *out = NULL;
  Norm* n = (Norm*)calloc(1, sizeof(Norm));
  if (!n) return NN_ENOMEM;
  n->mean = (double*)calloc((size_t)(2 * dim), sizeof(double));
  if (!n->mean) {
    free(n);
    return NN_ENOMEM;
  }
  n->m2 = n->mean + dim;
  n->dim = dim, n->eps = eps, n->clip = clip;
  *out = n;
  return NN_OK;
}

void NN_FN(nn_norm_destroy)(Norm* n) {
  if (!n) return;
  free(n->mean);
  free(n);
}

int NN_FN(nn_norm_update)(Norm* n, const nn_real* x, int batch) {
  if (!n || !x || batch <= 0) return NN_EINVAL;
  double nb = batch, na = n->count, nt = na + nb;
  for (int j = 0; j < n->dim; j++) {
    double s = 0;
    for (int r = 0; r < batch; r++) s += (double)x[(int64_t)r * n->dim + j];
    double mb = s / nb, m2b = 0;
    for (int r = 0; r < batch; r++) {
      double d = (double)x[(int64_t)r * n->dim + j] - mb;
      m2b += d * d;
    }
    double delta = mb - n->mean[j];
    n->mean[j] = n->mean[j] + delta * (nb / nt);
    n->m2[j] = n->m2[j] + m2b + delta * delta * (na * nb / nt);
  }
  n->count = nt;
  return NN_OK;
}

// float scale and shift as both CPU and GPU use them: y = (x - mean) * inv_std
static void norm_coeffs(const Norm* n, int j, nn_real* mean, nn_real* inv_std) {
  double var = n->count > 0 ? n->m2[j] / n->count : 1.0;
  *mean = (nn_real)n->mean[j];
  *inv_std = (nn_real)(1.0 / sqrt(var + n->eps));
}

int NN_FN(nn_norm_apply)(const Norm* n, const nn_real* x, int batch, nn_real* y) {
  if (!n || !x || !y || batch < 0) return NN_EINVAL;
  nn_real c = (nn_real)n->clip;
  for (int j = 0; j < n->dim; j++) {
    nn_real mu, is;
    norm_coeffs(n, j, &mu, &is);
    for (int r = 0; r < batch; r++) {
      nn_real v = (x[(int64_t)r * n->dim + j] - mu) * is;
      if (c > 0) v = v > c ? c : (v < -c ? -c : v);
      y[(int64_t)r * n->dim + j] = v;
    }
  }
  return NN_OK;
}

int NN_FN(nn_norm_backward)(const Norm* n, const nn_real* x, const nn_real* dy, int batch, nn_real* dx) {
  if (!n || !x || !dy || !dx || batch < 0) return NN_EINVAL;
  nn_real c = (nn_real)n->clip;
  for (int j = 0; j < n->dim; j++) {
    nn_real mu, is;
    norm_coeffs(n, j, &mu, &is);
    for (int r = 0; r < batch; r++) {
      int64_t k = (int64_t)r * n->dim + j;
      nn_real v = (x[k] - mu) * is;
      dx[k] = (c > 0 && (v > c || v < -c)) ? (nn_real)0 : dy[k] * is;
    }
  }
  return NN_OK;
}

double NN_FN(nn_norm_count)(const Norm* n) { return n->count; }
const double* NN_FN(nn_norm_mean)(const Norm* n) { return n->mean; }
const double* NN_FN(nn_norm_m2)(const Norm* n) { return n->m2; }

int NN_FN(nn_norm_state)(Norm* n, NnTensorRef* refs, int max) {
  if (!n || !refs || max < 3) return NN_EINVAL;
  memset(refs, 0, sizeof(*refs) * 3);
  strcpy(refs[0].name, "norm.count"), refs[0].dtype = NN_DT_F64, refs[0].count = 1, refs[0].data = &n->count;
  strcpy(refs[1].name, "norm.mean"), refs[1].dtype = NN_DT_F64, refs[1].count = n->dim, refs[1].data = n->mean;
  strcpy(refs[2].name, "norm.m2"), refs[2].dtype = NN_DT_F64, refs[2].count = n->dim, refs[2].data = n->m2;
  return 3;
}
