// nn_blob_infer.h: dependency-free inference of an exported policy blob (`adjoint export --blob FILE`), for
// embedded controllers. Plain C99 + libm; no malloc; the blob stays in the caller's memory (flash or RAM).
//
//   static NnBlob pol;                        // parsed view: pointers into the buffer, no copies
//   static float work[2 * 256];               // >= nn_blob_work_floats(&pol) floats
//   if (nn_blob_load(&pol, buf, len)) ...;    // checks magic, version, sizes, CRC32; buf 4-byte aligned
//   nn_blob_run(&pol, obs, act, work);        // one observation (obs_dim) -> one action (act_dim)
//
// The computation is the nn library's CPU forward pass, operation for operation (same summation order, same
// float32 roundings), so a host build with -ffp-contract=off reproduces `nn_mlp_infer` bit for bit:
//   x   = clip((obs - mean) * inv_std, -clip, clip)        (if the blob has a normalizer; clip 0: none)
//   per layer l: z = W_l x + b_l (sum over inputs in order, then + b); x = act_l(z);
//                if LayerNorm: x = (x - mean(x)) * (1/sqrt(var(x) + eps)) * gamma + beta  (biased variance)
//                last layer: x = out_scale * act_out(z)
//   act = x * action_scale + action_offset
// The format is documented in nn/nn_blob_format.md (little-endian, float32 weights). Little-endian hosts only.
#ifndef ADJ_NN_BLOB_INFER_H
#define ADJ_NN_BLOB_INFER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NN_BLOB_MAGIC "ADJBLOB"  // 8 bytes with the terminating NUL
#define NN_BLOB_VERSION 1
#define NN_BLOB_HEADER_BYTES 64
#define NN_BLOB_LAYER_BYTES 24
#define NN_BLOB_MAX_LAYERS 16

enum { NN_BLOB_ACT_NONE = 0, NN_BLOB_ACT_ELU = 1, NN_BLOB_ACT_SILU = 2, NN_BLOB_ACT_RELU = 3, NN_BLOB_ACT_TANH = 4 };
enum { NN_BLOB_NORM = 1, NN_BLOB_NORM_CLIP = 2 };  // header flags
enum {
  NN_BLOB_OK = 0,
  NN_BLOB_EARG = -1,      // NULL pointer or unaligned buffer
  NN_BLOB_EMAGIC = -2,    // not a policy blob
  NN_BLOB_EVERSION = -3,  // unknown format version
  NN_BLOB_ESIZE = -4,     // truncated, or sizes inconsistent
  NN_BLOB_ECRC = -5,      // checksum mismatch (corrupt)
  NN_BLOB_EFORMAT = -6    // bad field value (dims, activation code, layer count)
};

typedef struct {
  int in, out, act, layer_norm;
  float ln_eps, out_scale;
  const float *w, *b, *gamma, *beta;  // w (out, in) row-major; gamma/beta NULL without LayerNorm
} NnBlobLayer;

typedef struct {
  int obs_dim, act_dim, n_layers, max_width, flags;
  float norm_clip;
  const float *norm_mean, *norm_inv_std;  // (obs_dim) each; NULL without a normalizer
  const float *act_scale, *act_offset;    // (act_dim) each
  NnBlobLayer layer[NN_BLOB_MAX_LAYERS];
} NnBlob;

// Parses and validates buf (len bytes, 4-byte aligned); b points into buf afterwards. 0 or NN_BLOB_E*.
int nn_blob_load(NnBlob* b, const void* buf, size_t len);
// Scratch floats nn_blob_run needs (2 * max_width).
size_t nn_blob_work_floats(const NnBlob* b);
// act (act_dim) = policy(obs (obs_dim)); work: nn_blob_work_floats(b) floats. No allocation. 0 or NN_BLOB_EARG.
int nn_blob_run(const NnBlob* b, const float* obs, float* act, float* work);
// CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of n bytes, continuing from crc (start with 0).
uint32_t nn_blob_crc32(uint32_t crc, const void* data, size_t n);
const char* nn_blob_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
