// ckpt.h: checkpoints in HDF5. A checkpoint is a list of named arrays (datasets, chunked with Fletcher32 so
// that flipped bits are caught on read) plus string attributes on the root group. Datasets hold only what
// determines the run (parameters, optimizer and normalizer state, RNG state, iteration, env state, config
// hash); wall-clock times, hostnames and paths go into attributes, so two identical runs in different
// directories give identical datasets. Writes are atomic: the file is built in memory, written to PATH.tmp, fsync, rename, fsync of the directory.
#ifndef ADJ_ALGO_CKPT_H
#define ADJ_ALGO_CKPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CKPT_OK = 0, CKPT_EIO = -1, CKPT_EFORMAT = -2, CKPT_EMISSING = -3, CKPT_ESHAPE = -4, CKPT_EARG = -5, CKPT_EVALUE = -6 };

// the largest trainer/iteration a checkpoint may hold (run.max_iterations' range)
#define CKPT_MAX_ITERATION 1000000000

typedef enum { CK_F32 = 0, CK_F64, CK_I64, CK_I32, CK_U8 } CkDtype;

typedef struct {
  char name[64];     // dataset path, '/' separated ("ppo/actor_params")
  CkDtype dtype;
  int rank;          // 1 or 2
  int64_t dims[2];
  void* data;        // written from / read into
} CkTensor;

typedef struct {
  const char* name;
  const char* value;
} CkAttr;

size_t ckpt_dtype_size(CkDtype t);
int64_t ckpt_count(const CkTensor* t);
// Helpers to fill a CkTensor (returns the next free slot index).
int ckpt_add(CkTensor* t, int i, int max, const char* name, CkDtype dt, void* data, int64_t d0, int64_t d1);

int ckpt_write(const char* path, const CkTensor* t, int n, const CkAttr* attrs, int nattr, char* err, size_t errlen);
// Reads every listed dataset, checking it exists with the same dtype and shape; messages name file and dataset.
int ckpt_read(const char* path, CkTensor* t, int n, char* err, size_t errlen);
// The one validation every reader applies (eval, export, resume): every float element finite; counts,
// Adam second moments ('.../v'), normalizer counts and sums of squares ('.../count', '.../m2') and every integer
// array that is not an RNG state or hash non-negative; trainer/iteration at most CKPT_MAX_ITERATION.
// CKPT_EVALUE with a message naming file, dataset, element and value.
int ckpt_validate(const char* path, const CkTensor* t, int n, char* err, size_t errlen);
// ckpt_read, then ckpt_validate.
int ckpt_read_valid(const char* path, CkTensor* t, int n, char* err, size_t errlen);
// Reads one string attribute of the root group (0, or an error code).
int ckpt_read_attr(const char* path, const char* name, char* out, size_t outlen);
// Compares all datasets of two files (names, dtypes, shapes, bytes); returns the number of differences and
// lists them in report (one per line), or a negative code if a file cannot be read.
int ckpt_compare(const char* a, const char* b, char* report, size_t reportlen);

#ifdef __cplusplus
}
#endif
#endif
