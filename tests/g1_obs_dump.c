// g1_obs_dump CHECKPOINT CLIP STEPS OUT.json: the g1_tracking task's own observations and the trainer's own actions
// for tests/export_g1_check.py, which builds the same observations with tools/onnx_mujoco_eval.py from the states
// written here and runs the exported ONNX on them.
//
// One world of the checkpoint's task constants, evaluation settings on top (clip CLIP from its first frame, no
// reset noise, pushes or observation noise), then STEPS control steps with the trainer's policy
// (trainer_policy_actions, the reference `adjoint export --check` uses). Per step k (k = 0: the reset state):
// frame, qpos, qvel, last_action (the task state the observation shows), ctrl (the position targets the step
// before set, as the task wrote them: not clamped), obs and the trainer's action. JSON.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/cfg.h"
#include "algo/trainer.h"
#include "envs/env.h"

static void put_list(FILE* f, const char* key, const sim_real* v, int n, const char* end) {
  fprintf(f, "\"%s\": [", key);
  for (int i = 0; i < n; i++) fprintf(f, "%s%.9g", i ? ", " : "", (double)v[i]);
  fprintf(f, "]%s", end);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: g1_obs_dump CHECKPOINT CLIP STEPS OUT.json\n");
    return 2;
  }
  const char *ckpt = argv[1], *clip = argv[2], *out = argv[4];
  int steps = atoi(argv[3]);
  char err[4096];
  Cfg c;
  if (trainer_checkpoint_config(ckpt, &c, err, sizeof(err))) return fprintf(stderr, "%s\n", err), 2;
  if (strcmp(c.env_task, "g1_tracking")) return fprintf(stderr, "%s: task %s, not g1_tracking\n", ckpt, c.env_task), 2;
  char params[2048];  // later settings replace earlier ones
  snprintf(params, sizeof(params),
           "%s%smotion=%s, start_mode=1, obs_noise=0, push_max=0, reset_pos_xy=0, reset_pos_z=0, "
           "reset_rot_rp=0, reset_rot_yaw=0, reset_vel_xy=0, reset_vel_z=0, reset_angvel_rp=0, "
           "reset_angvel_yaw=0, reset_joint=0",
           c.env_params, c.env_params[0] ? ", " : "", clip);
  EnvBatch* e = NULL;
  if (env_create_params(&e, "g1_tracking", params, 1, 0, 1, err, sizeof(err))) return fprintf(stderr, "%s\n", err), 1;
  const SimModel* m = e->m;
  int O = e->obs_dim, A = e->act_dim, kframe = -1, klast = -1;
  for (int k = 0; k < e->task->info.nstate; k++) {
    if (!strcmp(e->task->info.state[k].name, "frame")) kframe = k;
    if (!strcmp(e->task->info.state[k].name, "last_action")) klast = k;
  }
  float* obs = (float*)malloc(sizeof(float) * O);
  float* act = (float*)malloc(sizeof(float) * A);
  sim_real* a = (sim_real*)malloc(sizeof(sim_real) * A);
  FILE* f = fopen(out, "w");
  int rc = 0;
  if (!obs || !act || !a || !f || kframe < 0 || klast < 0) {
    fprintf(stderr, "g1_obs_dump: cannot start (%s)\n", f ? "task state" : out);
    rc = 1;
    goto done;
  }
  fprintf(f, "{\"checkpoint\": \"%s\", \"params\": \"%s\", \"steps\": [\n", ckpt, params);
  for (int s = 0; s <= steps; s++) {
    for (int i = 0; i < O; i++) obs[i] = (float)e->obs[i];
    if (trainer_policy_actions(ckpt, &c, obs, 1, act, err, sizeof(err))) {
      fprintf(stderr, "g1_obs_dump: %s\n", err);
      rc = 1;
      goto done;
    }
    for (int i = 0; i < A; i++) a[i] = act[i];
    fprintf(f, "{\"frame\": %d, ", ((const int32_t*)e->state[kframe])[0]);
    put_list(f, "qpos", e->d->qpos, m->nq, ", ");
    put_list(f, "qvel", e->d->qvel, m->nv, ", ");
    put_list(f, "last_action", (const sim_real*)e->state[klast], A, ", ");
    put_list(f, "ctrl", e->d->ctrl, m->nu, ", ");  // the targets of the step before (0 at the start)
    put_list(f, "obs", e->obs, O, ", ");
    put_list(f, "action", a, A, "}");
    fprintf(f, "%s\n", s < steps ? "," : "");
    if (s < steps) {
      env_step(e, a);
      if (e->terminated[0] || e->truncated[0]) {  // the dump stops at an episode's end (a reset follows)
        fprintf(stderr, "g1_obs_dump: the episode ended at step %d\n", s + 1);
        rc = 1;
        goto done;
      }
    }
  }
  fprintf(f, "]}\n");
done:
  if (f && fclose(f)) rc = 1;
  free(obs), free(act), free(a);
  env_destroy(e);
  return rc;
}
