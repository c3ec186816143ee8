// algo_env_fields: the task field tables (env.h) through a test task on the cartpole model that has every
// kind of field: a numeric constant with bounds, a string constant turned into task data by load_data, and
// per-world state (a gradient-carrying last action, an int32 step counter, a 3-wide trace). Checks: the
// host descriptions made from the tables; env.params parsing (numbers, strings, bounds, lengths, unknown
// names listing the known ones); the data blob; state allocation, its zeroing and the task's reset at every
// auto-reset, and its updates in act; per-world independence of the state.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envs/env.h"
#include "tests/test.h"

#define FT_P(P) P(gain, 2.0, 0, 10)
#define FT_S(S) S(tag, "none")
#define FT_X(X)                  \
  X(sim_real, last_action, 1, 1) \
  X(int32_t, steps, 1, 0)        \
  X(sim_real, trace, 3, 0)
ENV_TASK_FIELDS(FT_P, FT_X)

typedef struct {
  double tag_len;
  char tag[ENV_STR_MAX];
} FtData;

static void ft_reset(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, uint64_t* rng, int lane, int nlane) {
  // the state arrives zeroed; the reset marks the trace with the constant
  sim_real* tr = ENV_S(c, trace);
  tr[0] = (sim_real)ENV_P(c, gain), tr[1] = (sim_real)(ENV_S(c, steps)[0] + ENV_S(c, last_action)[0]), tr[2] = 7;
  d->ctrl[0] = 0;
}
static void ft_act(const SimModel* m, SimWorld* d, const EnvTaskCtx* c, const sim_real* a, int lane, int nlane) {
  ENV_S(c, last_action)[0] = a[0];
  ENV_S(c, steps)[0] += 1;
  d->ctrl[0] = a[0] > 1 ? 1 : (a[0] < -1 ? -1 : a[0]);
}
static sim_real ft_reward(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* a) {
  return (sim_real)ENV_P(c, gain) * ENV_S(c, last_action)[0];
}
static int ft_terminated(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c) { return 0; }
static void ft_observe(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, sim_real* o, int lane, int nlane) {
  const FtData* data = (const FtData*)c->data;
  o[0] = d->qpos[0], o[1] = ENV_S(c, last_action)[0], o[2] = (sim_real)ENV_S(c, steps)[0];
  o[3] = (sim_real)data->tag_len;
}
static void ft_observe_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* g,
                           sim_real* dq, sim_real* dv) {
  dq[0] += g[0];
  sim_real* ds = ENV_DS(c, last_action);
  if (ds) ds[0] += g[1];
}
static void ft_reward_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* a, sim_real dr,
                          sim_real* dq, sim_real* dv, sim_real* dc) {
  sim_real* ds = ENV_DS(c, last_action);
  if (ds) ds[0] += dr * (sim_real)ENV_P(c, gain);
}
static void ft_act_vjp(const SimModel* m, const SimWorld* d, const EnvTaskCtx* c, const sim_real* a,
                       const sim_real* dc, sim_real* da) {
  da[0] += dc[0];
}
static int ft_load_data(const SimModel* m, const double* p, const char* const* s, void** data, size_t* bytes,
                        char* err, size_t errlen) {
  if (!strcmp(s[0], "bad")) {
    snprintf(err, errlen, "tag 'bad' refused");
    return -1;
  }
  FtData* f = (FtData*)calloc(1, sizeof(FtData));
  f->tag_len = (double)strlen(s[0]);
  snprintf(f->tag, sizeof(f->tag), "%s", s[0]);
  *data = f, *bytes = sizeof(*f);
  return 0;
}
static const char* const ft_obs_names[4] = {"x", "last_action", "steps", "tag_len"};
static const char* const ft_act_names[1] = {"a"};
ENV_TASK_TABLES(ft, FT_P, FT_S, FT_X)
ENV_TASK_HOST(ft, {.name = "fields_test", .model = "cartpole/cartpole.xml", .obs_dim = 4, .act_dim = 1,
                   .episode_steps = 3, .frame_skip = 1, .obs_names = ft_obs_names, .act_names = ft_act_names,
                   ENV_TASK_TABLE_INFO(ft), .load_data = ft_load_data})

int main(void) {
  const EnvTaskInfo* in = &env_task_ft.info;
  TEST_CHECK(in->nparam == 1 && !strcmp(in->params[0].name, "gain") && in->params[0].def == 2 &&
                 in->params[0].lo == 0 && in->params[0].hi == 10,
             "constant table");
  TEST_CHECK(in->nstr == 1 && !strcmp(in->strs[0].name, "tag") && !strcmp(in->strs[0].def, "none"), "string table");
  TEST_CHECK(in->nstate == 3 && !strcmp(in->state[0].name, "last_action") && in->state[0].grad == 1 &&
                 !in->state[0].is_int && in->state[1].is_int && !in->state[1].grad && in->state[2].count == 3 &&
                 env_state_row_bytes(&env_task_ft, 2) == 12,
             "state table");
  char err[1024];
  EnvBatch* e = NULL;
  enum { N = 3 };
  TEST_CHECK(env_create_task(&e, &env_task_ft, "gain=3, tag=hello", N, 0, 5, err, sizeof(err)) == 0, "create: %s",
             err);
  if (!e) return test_report("algo_env_fields");
  TEST_CHECK(e->param[0] == 3 && !strcmp(e->str[0], "hello") && e->data_bytes == sizeof(FtData) &&
                 !strcmp(((FtData*)e->data)->tag, "hello"),
             "constants and data");
  float* la = (float*)e->state[0];
  int32_t* st = (int32_t*)e->state[1];
  float* tr = (float*)e->state[2];
  for (int w = 0; w < N; w++)
    TEST_CHECK(la[w] == 0 && st[w] == 0 && tr[3 * w] == 3 && tr[3 * w + 1] == 0 && tr[3 * w + 2] == 7 &&
                   e->obs[4 * w + 3] == 5,
               "world %d after create: state zeroed, then the task's reset", w);
  // two steps: the state follows the actions per world
  float act[N];
  for (int k = 0; k < 2; k++) {
    for (int w = 0; w < N; w++) act[w] = 0.1f * (float)(w + 1) + (float)k;
    env_step(e, act);
  }
  for (int w = 0; w < N; w++) {
    TEST_CHECK(st[w] == 2 && la[w] == act[w] && e->obs[4 * w + 1] == act[w] && e->obs[4 * w + 2] == 2,
               "world %d after 2 steps: steps %d last %g", w, st[w], la[w]);
    TEST_CHECK(e->reward[w] == 3 * act[w], "reward reads the state and the constant");
  }
  // the third step ends the episodes (episode_steps 3): the state is zeroed and reset
  for (int w = 0; w < N; w++) la[w] = 100, act[w] = 0.5f;
  env_step(e, act);
  for (int w = 0; w < N; w++)
    TEST_CHECK(e->truncated[w] && st[w] == 0 && la[w] == 0 && tr[3 * w + 1] == 0 && e->final_obs[4 * w + 2] == 3,
               "world %d auto-reset: steps %d last %g (final obs saw 3 steps)", w, st[w], la[w]);
  // cotangents: ENV_DS is NULL without them, and points at world w's row with them
  {
    EnvTaskCtx c;
    env_task_ctx(e, 1, &c);
    TEST_CHECK(ENV_DS(&c, last_action) == NULL, "no cotangent without ds");
    float ds0[N] = {0};
    void* dsv[ENV_MAX_STATE] = {ds0};
    c.ds = dsv;
    sim_real g[4] = {0, 2, 0, 0}, dq[2] = {0}, dv[2] = {0};
    ft_observe_vjp(e->m, NULL, &c, g, dq, dv);
    TEST_CHECK(ds0[1] == 2 && ds0[0] == 0 && ds0[2] == 0, "observe VJP into world 1's state cotangent");
  }
  env_destroy(e), e = NULL;
  // bad specs name the culprit
  char longtag[400];
  memset(longtag, 'x', sizeof(longtag) - 1), longtag[sizeof(longtag) - 1] = 0;
  char spec[500];
  snprintf(spec, sizeof(spec), "tag=%s", longtag);
  const char* bad[5][2] = {{"gain=11", "outside [0, 10]"}, {"gain=x", "not a finite number"},
                           {"gian=1", "known: gain, tag"}, {spec, "longer than"}, {"tag=bad", "tag 'bad' refused"}};
  for (int i = 0; i < 5; i++) {
    err[0] = 0;
    int rc = env_create_task(&e, &env_task_ft, bad[i][0], N, 0, 5, err, sizeof(err));
    TEST_CHECK(rc != 0 && !e && strstr(err, bad[i][1]), "bad spec %d: '%s'", i, err);
    if (e) env_destroy(e), e = NULL;
  }
  return test_report("algo_env_fields");
}
