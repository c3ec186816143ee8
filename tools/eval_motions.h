// eval_motions.h: `adjoint eval ... --motions FILE` (eval_motions.c), called by eval.c.
#ifndef ADJ_TOOLS_EVAL_MOTIONS_H
#define ADJ_TOOLS_EVAL_MOTIONS_H
#include "algo/cfg.h"

#define EVAL_MAX_CLIPS 256  // --clip given at most this often

typedef struct {
  const char* checkpoint;
  const Cfg* cfg;            // the run's config
  const char* motions;       // --motions
  const char* const* clips;  // --clip names (nclips; 0: every clip)
  int nclips;
  int max_steps;             // --max-steps (0: full clips)
  const char* out_dir;       // --out (default: the run directory)
  const char* trajectory;    // --save-trajectory (NULL: none)
  const char* device;        // --device: cpu | cuda
} EvalMotionsOptions;

// Exit status: 0, 2 bad input, 1 runtime failure (messages on stderr).
int eval_motions_run(const EvalMotionsOptions* o);
#endif
