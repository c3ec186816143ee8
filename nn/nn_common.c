// Precision-independent helpers shared by the CPU (float32/float64) and CUDA libraries: layout of the flat
// parameter vector, learning-rate schedule, seeded RNG, checkpoint format.
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "nn/nn.h"

int nn_config_check(const NnConfig* c) {
  if (!c || c->in_dim <= 0 || c->out_dim <= 0 || c->n_hidden < 0 || c->n_hidden > NN_MAX_HIDDEN) return NN_EINVAL;
  for (int i = 0; i < c->n_hidden; i++)
    if (c->hidden[i] <= 0) return NN_EINVAL;
  if (c->act < NN_ACT_NONE || c->act > NN_ACT_TANH || c->out_act < NN_ACT_NONE || c->out_act > NN_ACT_TANH)
    return NN_EINVAL;
  if (c->ln_eps < 0) return NN_EINVAL;
  return NN_OK;
}

// Each tensor starts at a multiple of 4 elements (16 bytes for float32), as cuBLASLt's vectorized kernels want;
// the padding elements stay zero (zero gradient).
#define NN_ALIGN4(n) (((n) + 3) & ~(int64_t)3)

int nn_layer_count(const NnConfig* c) { return c->n_hidden + 1; }

int nn_layer_offsets(const NnConfig* c, int layer, NnLayerOffsets* o) {
  if (layer < 0 || layer > c->n_hidden) return NN_EINVAL;
  int64_t off = 0;
  for (int l = 0; l <= layer; l++) {
    int in = l == 0 ? c->in_dim : c->hidden[l - 1];
    int out = l == c->n_hidden ? c->out_dim : c->hidden[l];
    int ln = l < c->n_hidden && c->layer_norm;
    o->in = in, o->out = out;
    o->w = off, off += NN_ALIGN4((int64_t)in * out);
    o->b = off, off += NN_ALIGN4(out);
    o->gamma = ln ? off : -1, off += ln ? NN_ALIGN4(out) : 0;
    o->beta = ln ? off : -1, off += ln ? NN_ALIGN4(out) : 0;
  }
  return NN_OK;
}

int64_t nn_param_count(const NnConfig* c) {
  NnLayerOffsets o;
  if (nn_config_check(c) || nn_layer_offsets(c, c->n_hidden, &o)) return 0;
  return o.gamma >= 0 ? o.beta + NN_ALIGN4(o.out) : o.b + NN_ALIGN4(o.out);
}

int nn_max_width(const NnConfig* c) {
  int w = c->in_dim > c->out_dim ? c->in_dim : c->out_dim;
  for (int i = 0; i < c->n_hidden; i++) w = c->hidden[i] > w ? c->hidden[i] : w;
  return w;
}

double nn_adam_lr(const NnAdamConfig* a, int64_t step) {
  if (a->schedule != NN_LR_LINEAR || a->total_steps <= 1) return a->lr;
  int64_t t = step - 1 < 0 ? 0 : step - 1;
  if (t > a->total_steps - 1) t = a->total_steps - 1;
  return a->lr + (a->lr_end - a->lr) * ((double)t / (double)(a->total_steps - 1));
}

uint64_t nn_rng_next(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double nn_rng_uniform(uint64_t* s) { return (double)(nn_rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

const char* nn_strerror(int e) {
  switch (e) {
    case NN_OK: return "ok";
    case NN_EINVAL: return "invalid argument";
    case NN_ENOMEM: return "out of memory";
    case NN_EIO: return "i/o error";
    case NN_EFORMAT: return "bad checkpoint format";
    case NN_ECUDA: return "CUDA error";
    case NN_ECUBLAS: return "cuBLAS error";
    default: return "unknown error";
  }
}

// ---- checkpoint format ----
static const char nn_magic[8] = {'A', 'D', 'J', 'N', 'N', '0', '0', '1'};

static size_t nn_dtype_size(NnDtype t) { return t == NN_DT_F32 ? 4 : 8; }

int nn_state_write(FILE* f, const NnTensorRef* refs, int n) {
  if (!f || n < 0) return NN_EINVAL;
  int32_t cnt = n;
  if (fwrite(nn_magic, 1, 8, f) != 8 || fwrite(&cnt, 4, 1, f) != 1) return NN_EIO;
  for (int i = 0; i < n; i++) {
    int32_t dt = refs[i].dtype;
    int64_t c = refs[i].count;
    if (fwrite(refs[i].name, 1, 32, f) != 32 || fwrite(&dt, 4, 1, f) != 1 || fwrite(&c, 8, 1, f) != 1)
      return NN_EIO;
    size_t sz = nn_dtype_size(refs[i].dtype);
    if (c > 0 && fwrite(refs[i].data, sz, (size_t)c, f) != (size_t)c) return NN_EIO;
  }
  return NN_OK;
}

int nn_state_read(FILE* f, const NnTensorRef* refs, int n) {
  if (!f || n < 0) return NN_EINVAL;
  char magic[8];
  int32_t cnt;
  if (fread(magic, 1, 8, f) != 8 || fread(&cnt, 4, 1, f) != 1) return NN_EIO;
  if (memcmp(magic, nn_magic, 8) || cnt < 0) return NN_EFORMAT;
  int found = 0;
  for (int i = 0; i < cnt; i++) {
    char name[32];
    int32_t dt;
    int64_t c;
    if (fread(name, 1, 32, f) != 32 || fread(&dt, 4, 1, f) != 1 || fread(&c, 8, 1, f) != 1) return NN_EIO;
    if (dt < NN_DT_F32 || dt > NN_DT_I64 || c < 0) return NN_EFORMAT;
    name[31] = 0;
    size_t sz = nn_dtype_size((NnDtype)dt);
    int j = 0;
    while (j < n && strncmp(refs[j].name, name, 32)) j++;
    if (j == n) {  // not asked for: skip its data
      if (fseek(f, (long)(sz * (size_t)c), SEEK_CUR)) return NN_EIO;
      continue;
    }
    if ((int32_t)refs[j].dtype != dt || refs[j].count != c) return NN_EFORMAT;
    if (c > 0 && fread(refs[j].data, sz, (size_t)c, f) != (size_t)c) return NN_EIO;
    found++;
  }
  return found == n ? NN_OK : NN_EFORMAT;
}

int nn_errorf(char* err, size_t errlen, int code, const char* fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}
