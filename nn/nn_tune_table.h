// nn_tune_table.h: the table behind NN_CUDA_TUNE (nn_cuda.h) as plain data, and its text file format. Plain C
// (library adj_nn), so that the parser is tested without CUDA (tests/nn_tune_parse.c); nn_cuda_tune.cu keeps
// one process-wide table and fills/uses it.
//
// File format (text, one GEMM per line; blank lines and lines starting with '#' are ignored):
//   adjoint-nn-tune 1
//   gpu=NVIDIA_H200 sms=132 lt=130100 prec=fp32 op=TN m=512 n=4096 k=160 lda=160 ldb=160 ldc=512 count=1 sa=0
//     sb=0 sc=0 epi=bias red=ordered algo=6 tile=18 splitk=1 rscheme=0 swizzle=0 custom=0 stages=0 inner=0
//     cluster=0 ws=0 raw=<128 hex digits> ms=0.012345 ms0=0.015000 cand=2/9          (all on one line)
// Key (what must match for an entry to be used): gpu (device name, spaces written as '_'), sms (multiprocessor
// count), lt (cublasLtGetVersion()), prec (fp32 | tf32), op (transposes of A and B: NN NT TN TT), m n k lda ldb
// ldc count (strided-batch count) sa sb sc (batch strides; 0 when count = 1), epi (bias | none: the epilogue),
// red (ordered | none: split-K allowed only with workspace reductions, or not at all).
// Algorithm: raw (the cublasLtMatmulAlgo_t as returned by the heuristic, 8 x 64-bit words as 16 hex digits each;
// cublasLt.h: "can be trivially serialized and later restored for use with the same version of cuBLAS", hence lt
// in the key) and ws (its workspace bytes, as the heuristic reported); the readable CUBLASLT_ALGO_CONFIG_*
// attributes algo (ID), tile (TILE_ID), splitk (SPLITK_NUM), rscheme (REDUCTION_SCHEME: 0 none, 2 compute type,
// 4 output type; 1, the in-place atomics scheme, is rejected: not deterministic), swizzle, custom, stages, inner,
// cluster must equal those read back from raw when the entry is used (a hand-edited line is refused).
// Notes (optional, informational): ms (median time of the chosen algorithm when it was tuned), ms0 (time of the
// heuristic's first choice), cand (index of the chosen candidate / number timed; 0 = heuristic's first).
// Every key= must appear once per line; unknown keys, duplicate keys, bad numbers, and two lines with the same
// key are errors (NN_EFORMAT, message "NAME:LINE: ..."), and a failed load leaves the table unchanged.
#ifndef NN_TUNE_TABLE_H
#define NN_TUNE_TABLE_H
#include <stddef.h>

#include "nn/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NN_TUNE_GPU_LEN 64
#define NN_TUNE_MAGIC "adjoint-nn-tune"
#define NN_TUNE_VERSION 1

typedef struct {
  char gpu[NN_TUNE_GPU_LEN];  // device name with spaces (and '=') written as '_'
  int sms, lt, tf32;
  int ta, tb, m, n, k, lda, ldb, ldc, count;
  long long sa, sb, sc;
  int bias;    // 1: bias epilogue
  int splitk;  // 1: split-K allowed with ordered (workspace) reductions; 0: no split-K
} NnTuneKey;

typedef struct {
  int id, tile, splitk_num, reduction, swizzle, custom, stages, inner, cluster;
} NnTuneAlgo;

typedef struct {
  NnTuneKey key;
  NnTuneAlgo algo;
  unsigned long long raw[8];  // cublasLtMatmulAlgo_t.data
  long long ws;               // workspace bytes
  double ms, ms0;   // notes: median ms of the chosen algorithm and of the heuristic's first (0: unknown)
  int cand, ncand;  // notes: chosen candidate index and candidates timed (0/0: unknown)
} NnTuneEntry;

typedef struct {
  NnTuneEntry* e;
  int n, cap;
} NnTuneTable;

// Copies name into key->gpu with spaces and '=' as '_' (truncated to NN_TUNE_GPU_LEN - 1 characters).
void nn_tune_key_set_gpu(NnTuneKey* key, const char* name);
int nn_tune_key_equal(const NnTuneKey* a, const NnTuneKey* b);
// Entry with this key or NULL.
const NnTuneEntry* nn_tune_table_find(const NnTuneTable* t, const NnTuneKey* key);
// Inserts e, or replaces the entry with the same key. NN_ENOMEM.
int nn_tune_table_put(NnTuneTable* t, const NnTuneEntry* e);
void nn_tune_table_free(NnTuneTable* t);
// Checks one entry as the parser does (ranges, deterministic reduction scheme); 0 or NN_EFORMAT with message.
int nn_tune_entry_check(const NnTuneEntry* e, char* err, size_t errlen);
// Parses text (name: for messages) and merges its entries into t (same key: replaced). On any error t is
// unchanged and err holds "NAME:LINE: what". Returns NN_OK, NN_EFORMAT or NN_ENOMEM.
int nn_tune_table_parse(NnTuneTable* t, const char* text, const char* name, char* err, size_t errlen);
// The file text of t in a malloc'ed, NUL-terminated buffer (*out, *len without the NUL; free() it).
int nn_tune_table_format(const NnTuneTable* t, char** out, size_t* len);
// Files: load = read (at most 16 MiB) + parse (NN_EIO when unreadable); save = format + atomic write (PATH.tmp,
// fsync, rename).
int nn_tune_table_load(NnTuneTable* t, const char* path, char* err, size_t errlen);
int nn_tune_table_save(const NnTuneTable* t, const char* path, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
