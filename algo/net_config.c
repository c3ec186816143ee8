// net_config.c: the MLP shape of a policy or critic from the policy.* config keys (shared by PPO and SHAC).
#include <string.h>

#include "algo/algo.h"

static NnAct act_of(const char* s) {
  if (!strcmp(s, "relu")) return NN_ACT_RELU;
  if (!strcmp(s, "tanh")) return NN_ACT_TANH;
  if (!strcmp(s, "silu")) return NN_ACT_SILU;
  return NN_ACT_ELU;
}

void algo_net_config(NnConfig* n, const Cfg* c, const CfgIntList* hidden, int in, int out, NnAct out_act) {
  memset(n, 0, sizeof(*n));
  n->in_dim = in, n->out_dim = out;
  n->n_hidden = hidden->n;
  for (int i = 0; i < hidden->n; i++) n->hidden[i] = hidden->v[i];
  n->act = act_of(c->policy_activation);
  n->layer_norm = c->policy_layer_norm;
  n->out_act = out_act;
  n->out_scale = 1;
}
