// train_eval.h: entry points of `adjoint train` (train.c) and `adjoint eval` (eval.c).
#ifndef ADJ_TOOLS_TRAIN_EVAL_H
#define ADJ_TOOLS_TRAIN_EVAL_H
int train_main(int argc, char** argv);
int eval_main(int argc, char** argv);
#endif
