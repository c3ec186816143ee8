// nn_blob_infer.c: see nn_blob_infer.h (format: nn/nn_blob_format.md). Self-contained: libm only.
#include "nn/nn_blob_infer.h"

#include <math.h>
#include <string.h>

uint32_t nn_blob_crc32(uint32_t crc, const void* data, size_t n) {
  const uint8_t* p = (const uint8_t*)data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

static uint32_t rd_u32(const uint8_t* p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static float rd_f32(const uint8_t* p) {
  uint32_t u = rd_u32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int nn_blob_load(NnBlob* b, const void* buf, size_t len) {
  const uint8_t* p = (const uint8_t*)buf;
  const uint32_t one = 1;
  if (!b || !p || ((uintptr_t)p & 3u) || *(const uint8_t*)&one != 1) return NN_BLOB_EARG;
  memset(b, 0, sizeof(*b));
  if (len < NN_BLOB_HEADER_BYTES) return len >= 8 && memcmp(p, NN_BLOB_MAGIC, 8) ? NN_BLOB_EMAGIC : NN_BLOB_ESIZE;
  if (memcmp(p, NN_BLOB_MAGIC, 8)) return NN_BLOB_EMAGIC;
  if (rd_u32(p + 8) != NN_BLOB_VERSION) return NN_BLOB_EVERSION;
  uint32_t hdr = rd_u32(p + 12), total = rd_u32(p + 16), L = rd_u32(p + 32), nf = rd_u32(p + 56);
  if (hdr != NN_BLOB_HEADER_BYTES || total != len) return NN_BLOB_ESIZE;
  if (L < 1 || L > NN_BLOB_MAX_LAYERS) return NN_BLOB_EFORMAT;
  if ((uint64_t)hdr + (uint64_t)L * NN_BLOB_LAYER_BYTES + 4 * (uint64_t)nf != total) return NN_BLOB_ESIZE;
  static const uint8_t zero[4] = {0, 0, 0, 0};
  uint32_t crc = nn_blob_crc32(nn_blob_crc32(nn_blob_crc32(0, p, 20), zero, 4), p + 24, total - 24);
  if (crc != rd_u32(p + 20)) return NN_BLOB_ECRC;
  b->obs_dim = (int)rd_u32(p + 24), b->act_dim = (int)rd_u32(p + 28), b->n_layers = (int)L;
  b->flags = (int)rd_u32(p + 36), b->max_width = (int)rd_u32(p + 40), b->norm_clip = rd_f32(p + 44);
  if (b->obs_dim < 1 || b->act_dim < 1 || b->max_width < b->obs_dim || b->max_width < b->act_dim) return NN_BLOB_EFORMAT;
  const float* f = (const float*)(p + hdr + L * NN_BLOB_LAYER_BYTES);  // data section, 4-byte aligned
  uint64_t used = 0;
  if (b->flags & NN_BLOB_NORM)  // (mean, var, inv_std); var is informational
    b->norm_mean = f, b->norm_inv_std = f + 2 * b->obs_dim, used = 3 * (uint64_t)b->obs_dim;
  if (used + 2 * (uint64_t)b->act_dim > nf) return NN_BLOB_ESIZE;
  b->act_scale = f + used, b->act_offset = f + used + b->act_dim, used += 2 * (uint64_t)b->act_dim;
  int prev = b->obs_dim;
  for (uint32_t l = 0; l < L; l++) {
    const uint8_t* t = p + hdr + l * NN_BLOB_LAYER_BYTES;
    NnBlobLayer* y = &b->layer[l];
    y->in = (int)rd_u32(t), y->out = (int)rd_u32(t + 4), y->act = (int)rd_u32(t + 8), y->layer_norm = (int)rd_u32(t + 12);
    y->ln_eps = rd_f32(t + 16), y->out_scale = rd_f32(t + 20);
    if (y->in != prev || y->out < 1 || y->out > b->max_width || y->act < 0 || y->act > NN_BLOB_ACT_TANH ||
        (uint32_t)y->layer_norm > 1 || (l + 1 == L && (y->out != b->act_dim || y->layer_norm)))
      return NN_BLOB_EFORMAT;
    uint64_t need = (uint64_t)y->in * y->out + (uint64_t)y->out * (y->layer_norm ? 3 : 1);
    if (used + need > nf) return NN_BLOB_ESIZE;
    y->w = f + used, used += (uint64_t)y->in * y->out;
    y->b = f + used, used += (uint64_t)y->out;
    if (y->layer_norm) y->gamma = f + used, y->beta = f + used + y->out, used += 2 * (uint64_t)y->out;
    prev = y->out;
  }
  return used == nf ? NN_BLOB_OK : NN_BLOB_ESIZE;
}

size_t nn_blob_work_floats(const NnBlob* b) { return b ? 2 * (size_t)b->max_width : 0; }

static float act_f(int a, float z) {
  switch (a) {
    case NN_BLOB_ACT_ELU: return z > 0 ? z : expm1f(z);
    case NN_BLOB_ACT_SILU: return z / (1.0f + expf(-z));
    case NN_BLOB_ACT_RELU: return z > 0 ? z : 0.0f;
    case NN_BLOB_ACT_TANH: return tanhf(z);
    default: return z;
  }
}

int nn_blob_run(const NnBlob* b, const float* obs, float* act, float* work) {
  if (!b || !obs || !act || !work || b->n_layers < 1) return NN_BLOB_EARG;
  float *x = work, *z = work + b->max_width;
  for (int j = 0; j < b->obs_dim; j++) {
    float v = obs[j];
    if (b->norm_mean) {
      v = (v - b->norm_mean[j]) * b->norm_inv_std[j];
      float c = b->norm_clip;
      if (c > 0) v = v > c ? c : (v < -c ? -c : v);
    }
    x[j] = v;
  }
  for (int l = 0; l < b->n_layers; l++) {
    const NnBlobLayer* y = &b->layer[l];
    for (int o = 0; o < y->out; o++) {
      const float* w = y->w + (size_t)o * y->in;
      float s = 0;
      for (int i = 0; i < y->in; i++) s += x[i] * w[i];
      z[o] = y->out_scale * act_f(y->act, s + y->b[o]);
    }
    if (y->layer_norm) {
      int h = y->out;
      float s = 0, v = 0;
      for (int j = 0; j < h; j++) s += z[j];
      float mu = s / (float)h;
      for (int j = 0; j < h; j++) v += (z[j] - mu) * (z[j] - mu);
      float rs = 1.0f / sqrtf(v / (float)h + y->ln_eps);
      for (int j = 0; j < h; j++) z[j] = (z[j] - mu) * rs * y->gamma[j] + y->beta[j];
    }
    float* t = x;
    x = z, z = t;
  }
  for (int j = 0; j < b->act_dim; j++) act[j] = x[j] * b->act_scale[j] + b->act_offset[j];
  return NN_BLOB_OK;
}

const char* nn_blob_strerror(int e) {
  switch (e) {
    case NN_BLOB_OK: return "ok";
    case NN_BLOB_EARG: return "invalid argument (NULL, unaligned buffer, or big-endian host)";
    case NN_BLOB_EMAGIC: return "not a policy blob (bad magic)";
    case NN_BLOB_EVERSION: return "unsupported blob version";
    case NN_BLOB_ESIZE: return "truncated or inconsistent sizes";
    case NN_BLOB_ECRC: return "checksum mismatch (corrupt blob)";
    case NN_BLOB_EFORMAT: return "bad field value";
    default: return "unknown error";
  }
}
