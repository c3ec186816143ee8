// cfg_errors: the config parser's one-line errors (file:line and the key) for unknown keys, wrong types,
// out-of-range values, duplicate keys, truncated/malformed YAML; overrides validated the same way; defaults
// valid; the resolved YAML reloads to the same config and hash; the shipped configs parse.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/cfg.h"
#include "tests/test.h"

static char dir[] = "/tmp/cfg_errors_XXXXXX";

static const char* write_file(const char* name, const char* text) {
  static char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE* f = fopen(path, "wb");
  fputs(text, f);
  fclose(f);
  return path;
}

// loads text; expects failure with a message containing every needle
static void expect_error(const char* label, const char* text, const char* n1, const char* n2, const char* n3) {
  Cfg c;
  char err[1024] = "";
  cfg_defaults(&c, err, sizeof(err));
  const char* path = write_file("bad.yaml", text);
  int rc = cfg_load_yaml(&c, path, err, sizeof(err));
  TEST_CHECK(rc == CFG_EPARSE, "%s: expected a parse error, got %d", label, rc);
  const char* needles[3] = {n1, n2, n3};
  for (int i = 0; i < 3; i++)
    if (needles[i]) TEST_CHECK(strstr(err, needles[i]) != NULL, "%s: message '%s' lacks '%s'", label, err, needles[i]);
  TEST_CHECK(strchr(err, '\n') == NULL, "%s: message is not one line", label);
  printf("  %-22s %s\n", label, err);
}

static void expect_override_error(const char* a, const char* n1, const char* n2) {
  Cfg c;
  char err[1024] = "";
  cfg_defaults(&c, err, sizeof(err));
  int rc = cfg_override(&c, a, err, sizeof(err));
  TEST_CHECK(rc == CFG_EPARSE, "override %s: expected an error", a);
  TEST_CHECK(strstr(err, n1) != NULL, "override %s: message '%s' lacks '%s'", a, err, n1);
  if (n2) TEST_CHECK(strstr(err, n2) != NULL, "override %s: message '%s' lacks '%s'", a, err, n2);
  printf("  %-22s %s\n", "override", err);
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  char err[1024] = "", want[600];
  Cfg c, d;
  TEST_CHECK(cfg_defaults(&c, err, sizeof(err)) == CFG_OK, "defaults invalid: %s", err);
  TEST_CHECK(c.algo_horizon == 24 && c.algo_gamma == 0.99 && !strcmp(c.algo_name, "ppo"), "defaults not applied");
  TEST_CHECK(c.policy_actor_hidden.n == 2 && c.policy_actor_hidden.v[1] == 64, "list default");

  // unknown key: FILE:LINE: key 'algo.horizn': unknown key
  snprintf(want, sizeof(want), "%s/bad.yaml:3: key 'algo.horizn': unknown key", dir);
  expect_error("unknown key", "algo:\n  name: ppo\n  horizn: 32\n", want, NULL, NULL);
  expect_error("unknown section", "env:\n  task: cartpole\nalgoo:\n  horizon: 3\n", "bad.yaml:3", "'algoo'",
               "unknown key");
  expect_error("bad type int", "algo:\n  horizon: 3.5\n", "bad.yaml:2", "'algo.horizon'", "not an integer");
  expect_error("bad type float", "algo:\n  gamma: high\n", "bad.yaml:2", "'algo.gamma'", "not a finite number");
  expect_error("bad type bool", "policy:\n  obs_norm: maybe\n", "bad.yaml:2", "'policy.obs_norm'", "boolean");
  expect_error("bad enum", "algo:\n  name: sac\n", "bad.yaml:2", "'algo.name'", "ppo|shac|nablamimic");
  expect_error("quoted number", "algo:\n  horizon: \"32\"\n", "bad.yaml:2", "'algo.horizon'", "quoted");
  expect_error("out of range", "\n\nalgo:\n  gamma: 1.5\n", "bad.yaml:4", "'algo.gamma'", "out of range [0, 1]");
  expect_error("out of range int", "env:\n  num_envs: 0\n", "bad.yaml:2", "'env.num_envs'", "out of range");
  expect_error("list element", "policy:\n  actor_hidden: [64, x]\n", "bad.yaml:2", "'policy.actor_hidden'", "'x'");
  expect_error("scalar for list", "policy:\n  actor_hidden: 64\n", "bad.yaml:2", "'policy.actor_hidden'", "list");
  expect_error("mapping for scalar", "algo:\n  horizon:\n    a: 1\n", "bad.yaml:2", "'algo.horizon'", "mapping");
  expect_error("duplicate", "algo:\n  horizon: 3\n  horizon: 4\n", "bad.yaml:3", "'algo.horizon'", "duplicate");
  expect_error("missing value", "algo:\n  horizon:\n", "bad.yaml:2", "'algo.horizon'", "missing value");
  expect_error("truncated flow", "algo:\n  horizon: 32\npolicy:\n  actor_hidden: [64, 64\n", "bad.yaml:", "YAML",
               "'policy.actor_hidden'");
  expect_error("truncated quote", "run:\n  name: \"abc\n", "bad.yaml:", "YAML", "'run.name'");
  expect_error("malformed indent", "algo:\n  horizon: 3\n gamma: 0.9\n", "bad.yaml:3", "YAML", NULL);
  expect_error("top-level list", "- a\n- b\n", "bad.yaml:1", "mapping", NULL);
  expect_error("tab", "algo:\n\thorizon: 3\n", "bad.yaml:2", "YAML", NULL);

  // missing file: I/O error naming the file
  cfg_defaults(&c, err, sizeof(err));
  TEST_CHECK(cfg_load_yaml(&c, "/nonexistent/x.yaml", err, sizeof(err)) == CFG_EIO && strstr(err, "/nonexistent/x.yaml"),
             "missing file: %s", err);

  // a good file, then overrides
  const char* good = write_file("good.yaml",
                                "# comment\nenv:\n  num_envs: 8\nalgo:\n  name: ppo\n  horizon: 16\n  gamma: 0.98\n"
                                "policy:\n  actor_hidden: [32, 16, 8]\n  obs_norm: false\n");
  cfg_defaults(&c, err, sizeof(err));
  TEST_CHECK(cfg_load_yaml(&c, good, err, sizeof(err)) == CFG_OK, "good file: %s", err);
  TEST_CHECK(c.env_num_envs == 8 && c.algo_horizon == 16 && c.algo_gamma == 0.98 && !c.policy_obs_norm,
             "good file values");
  TEST_CHECK(c.policy_actor_hidden.n == 3 && c.policy_actor_hidden.v[2] == 8, "list value");
  TEST_CHECK(!strcmp(c.run_name, "good"), "run name from the file name: '%s'", c.run_name);
  TEST_CHECK(cfg_override(&c, "algo.horizon=32", err, sizeof(err)) == CFG_OK && c.algo_horizon == 32, "override int");
  TEST_CHECK(cfg_override(&c, "ppo.clip=0.1", err, sizeof(err)) == CFG_OK && c.ppo_clip == 0.1, "override float");
  TEST_CHECK(cfg_override(&c, "policy.critic_hidden=[128,128]", err, sizeof(err)) == CFG_OK &&
                 c.policy_critic_hidden.n == 2 && c.policy_critic_hidden.v[0] == 128,
             "override list");
  TEST_CHECK(cfg_override(&c, "policy.layer_norm=true", err, sizeof(err)) == CFG_OK && c.policy_layer_norm,
             "override bool");
  TEST_CHECK(cfg_override(&c, "algo.name=shac", err, sizeof(err)) == CFG_OK && !strcmp(c.algo_name, "shac"),
             "override enum");
  expect_override_error("algo.horizn=32", "override 'algo.horizn=32'", "key 'algo.horizn': unknown key");
  expect_override_error("algo.horizon=abc", "key 'algo.horizon'", "not an integer");
  expect_override_error("algo.gamma=2", "key 'algo.gamma'", "out of range");
  expect_override_error("algo.horizon", "override 'algo.horizon'", "section.key=value");
  expect_override_error("policy.actor_hidden=[1,2,3,4,5,6,7,8,9]", "'policy.actor_hidden'", "list");

  // resolved YAML reloads to the same config (and hash); the hash ignores non-determining keys
  const char* res = write_file("resolved.yaml", "");
  TEST_CHECK(cfg_save(&c, res, err, sizeof(err)) == CFG_OK, "save: %s", err);
  cfg_defaults(&d, err, sizeof(err));
  TEST_CHECK(cfg_load_yaml(&d, res, err, sizeof(err)) == CFG_OK, "reload: %s", err);
  TEST_CHECK(memcmp(&c, &d, sizeof(Cfg)) == 0, "reloaded config differs");
  TEST_CHECK(cfg_hash(&c) == cfg_hash(&d), "hash differs after reload");
  uint64_t h = cfg_hash(&c);
  cfg_override(&d, "run.max_iterations=12345", err, sizeof(err));
  cfg_override(&d, "run.checkpoint_every=7", err, sizeof(err));
  TEST_CHECK(cfg_hash(&d) == h, "max_iterations / checkpoint_every must not change the hash");
  cfg_override(&d, "run.seed=99", err, sizeof(err));
  TEST_CHECK(cfg_hash(&d) != h, "the seed must change the hash");

  // every default parses; every shipped config parses
  const char* shipped[] = {"configs/cartpole_ppo.yaml", "configs/cartpole_shac.yaml", "configs/cartpole_nablamimic.yaml"};
  for (int i = 0; i < 3; i++) {
    cfg_defaults(&c, err, sizeof(err));
    TEST_CHECK(cfg_load_yaml(&c, shipped[i], err, sizeof(err)) == CFG_OK, "%s: %s", shipped[i], err);
  }
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return test_report("cfg_errors");
}
