// gpu_test_size.h: the size of the gpu-label tests. ADJ_GPU_TEST_SMALL=1 in the environment shrinks what they run
// (worlds, batches, iterations, repetitions) so that each takes seconds natively and minutes under
// compute-sanitizer (tests/gpu_sanitize.sh sets it): every kernel the full size launches still runs, and the same
// comparisons (bitwise equality, error bounds) are asserted. Unset, empty or "0": the full size.
#ifndef ADJ_TESTS_GPU_TEST_SIZE_H
#define ADJ_TESTS_GPU_TEST_SIZE_H

#include <stdio.h>
#include <stdlib.h>

static inline int gpu_test_small(void) {
  static int small = -1;
  if (small < 0) {
    const char* s = getenv("ADJ_GPU_TEST_SMALL");
    small = s && s[0] && !(s[0] == '0' && !s[1]);
    // printed once, so that a log says which size ran
    if (small) printf("ADJ_GPU_TEST_SMALL=%s: reduced size\n", s);
  }
  return small;
}

// full normally, small under ADJ_GPU_TEST_SMALL
static inline int gpu_test_size(int full, int small) { return gpu_test_small() ? small : full; }

#endif
