// cuda_check.cuh: the one check of CUDA runtime and CUDA library (cuBLASLt) calls for algo/, envs/, nn/ and sim/
// (CUDA C++ translation units only). Library code does not print: a failed call is recorded as
// "file:line: call: reason" in a message buffer owned by the caller of the API function (NULL: no message,
// the code alone) and the enclosing function returns the given error code.
#ifndef ADJ_COMMON_CUDA_CHECK_CUH
#define ADJ_COMMON_CUDA_CHECK_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdio.h>

// success of a status: cudaError_t, or a CUDA library status whose success value is 0 (cublasStatus_t)
static inline bool adj_cuda_ok(cudaError_t s) { return s == cudaSuccess; }
template <class S>
static inline bool adj_cuda_ok(S s) {
  return (int)s == 0;
}

static inline void adj_cuda_record(char* err, size_t errlen, const char* file, int line, const char* call,
                                   cudaError_t s) {
  if (err && errlen) snprintf(err, errlen, "%s:%d: %s: %s", file, line, call, cudaGetErrorString(s));
}
template <class S>
static inline void adj_cuda_record(char* err, size_t errlen, const char* file, int line, const char* call, S s) {
  if (err && errlen) snprintf(err, errlen, "%s:%d: %s: status %d", file, line, call, (int)s);
}

// ADJ_CUDA_CHECK(call, err, errlen, code): evaluates call once; on failure records it in err (errlen bytes)
// and returns code
#define ADJ_CUDA_CHECK(call, err, errlen, code)                        \
  do {                                                                 \
    auto s_ = (call);                                                  \
    if (!adj_cuda_ok(s_)) {                                            \
      adj_cuda_record((err), (errlen), __FILE__, __LINE__, #call, s_); \
      return (code);                                                   \
    }                                                                  \
  } while (0)

#endif
