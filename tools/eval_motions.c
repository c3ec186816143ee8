// eval_motions.c: `adjoint eval RUN_DIR|CHECKPOINT --motions FILE`: the policy on every clip of a motion-tracking
// task (algo/motion_eval.h): a table on stdout, eval.json and eval.csv (temp + rename) in the output directory,
// optionally the trajectories (HDF5).
#define _GNU_SOURCE  // open_memstream, realpath
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "algo/ckpt.h"
#include "algo/motion_eval.h"
#include "algo/trainer.h"
#include "nn/nn_export.h"
#include "tools/eval_motions.h"
#include "tools/outpath.h"

// a JSON string (the names and paths are the user's: escape what JSON requires)
static void json_str(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}
static void json_num(FILE* f, double x) {
  if (isfinite(x)) fprintf(f, "%.9g", x);
  else fputs("null", f);
}
// a CSV field: quoted where it holds a comma, quote or line break
static void csv_str(FILE* f, const char* s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static int write_text(const char* path, char* buf, size_t len, char* err, size_t errlen) {
  int rc = nn_export_write_atomic(path, buf, len, err, errlen);
  free(buf);
  return rc;
}

static int write_outputs(const EvalMotionsOptions* o, const MotionEvalResult* r, long long iteration,
                         const char* json_path, const char* csv_path, char* err, size_t errlen) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return snprintf(err, errlen, "out of memory"), -1;
  fputs("{\n  \"checkpoint\": ", f);
  json_str(f, o->checkpoint);
  fprintf(f, ",\n  \"iteration\": %lld,\n  \"task\": ", iteration);
  json_str(f, o->cfg->env_task);
  fputs(",\n  \"motions\": ", f);
  json_str(f, o->motions);
  fputs(",\n  \"device\": ", f);
  json_str(f, o->device);
  fprintf(f, ",\n  \"dt\": %.6g,\n  \"max_steps\": %d,\n  \"clips\": [\n", r->dt, o->max_steps);
  for (int i = 0; i < r->nclip; i++) {
    const MotionClipEval* c = &r->clip[i];
    fputs("    {\"name\": ", f);
    json_str(f, c->name);
    fprintf(f, ", \"steps\": %d, \"duration_s\": %.6g, \"fell\": %s, \"fall_step\": %d, \"fall_time_s\": ", c->steps,
            c->steps * r->dt, c->fall_step ? "true" : "false", c->fall_step);
    if (c->fall_step) fprintf(f, "%.6g", c->fall_time);
    else fputs("null", f);
    fputs(", \"normalized_return\": ", f);
    json_num(f, c->norm_return);
    fputs(", \"mpkpe_mm\": ", f);
    json_num(f, c->mpkpe_mm);
    fputs(", \"anchor_drift_m\": ", f);
    json_num(f, c->drift_m);
    fprintf(f, "}%s\n", i + 1 < r->nclip ? "," : "");
  }
  fprintf(f, "  ],\n  \"summary\": {\"clips\": %d, \"falls\": %d, \"normalized_return\": ", r->nclip, r->falls);
  json_num(f, r->norm_return);
  fputs(", \"mpkpe_mm\": ", f);
  json_num(f, r->mpkpe_mm);
  fputs(", \"anchor_drift_m\": ", f);
  json_num(f, r->drift_m);
  fprintf(f, ", \"seconds\": %.3f}\n}\n", r->seconds);
  fclose(f);
  if (write_text(json_path, buf, len, err, errlen)) return -1;
  buf = NULL, len = 0;
  if (!(f = open_memstream(&buf, &len))) return snprintf(err, errlen, "out of memory"), -1;
  fputs("clip,steps,duration_s,fall_time_s,normalized_return,mpkpe_mm,anchor_drift_m\n", f);
  for (int i = 0; i < r->nclip; i++) {
    const MotionClipEval* c = &r->clip[i];
    csv_str(f, c->name);
    fprintf(f, ",%d,%.6g,", c->steps, c->steps * r->dt);
    if (c->fall_step) fprintf(f, "%.6g", c->fall_time);  // empty: no fall
    fprintf(f, ",%.9g,%.9g,%.9g\n", c->norm_return, c->mpkpe_mm, c->drift_m);
  }
  fclose(f);
  return write_text(csv_path, buf, len, err, errlen);
}

int eval_motions_run(const EvalMotionsOptions* o) {
  static const char* kCmd = "adjoint eval";
  char json_path[4400], csv_path[4400], err[8192];
  struct stat st;
  if (stat(o->out_dir, &st) || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "%s: --out %s: not a directory\n", kCmd, o->out_dir);
    return 2;
  }
  snprintf(json_path, sizeof(json_path), "%s/eval.json", o->out_dir);
  snprintf(csv_path, sizeof(csv_path), "%s/eval.csv", o->out_dir);
  const char* in[2] = {o->checkpoint, o->motions};
  const char* outs[3] = {json_path, csv_path, o->trajectory};
  if (outpath_check(kCmd, "--out", json_path, in, 2, NULL, 0) ||
      outpath_check(kCmd, "--out", csv_path, in, 2, outs, 1) ||
      (o->trajectory && outpath_check(kCmd, "--save-trajectory", o->trajectory, in, 2, outs, 2)))
    return 2;
  int64_t iteration = -1;
  CkTensor it;
  ckpt_add(&it, 0, 1, "trainer/iteration", CK_I64, &iteration, 1, 0);
  if (ckpt_read(o->checkpoint, &it, 1, err, sizeof(err))) iteration = -1;  // the policy read reports a bad file
  MotionEval* me = NULL;
  int rc = motion_eval_open(&me, o->cfg, o->motions, NULL, o->clips, o->nclips, 0, o->max_steps, err, sizeof(err));
  if (!rc) rc = motion_eval_set_device(me, o->device, err, sizeof(err));
  MotionEvalResult r;
  if (!rc) rc = motion_eval_run(me, o->checkpoint, o->trajectory != NULL, &r, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "%s: %s\n", kCmd, err);
    motion_eval_close(me);
    return rc == TRAIN_EUSER ? 2 : 1;
  }
  printf("checkpoint %s (iteration %lld), motions %s, %d clips, control period %.3f s, device %s\n",
         o->checkpoint, (long long)iteration, o->motions, r.nclip, r.dt, o->device);
  printf("%-32s %8s %9s %10s %10s %10s %9s\n", "clip", "steps", "length_s", "fall_s", "norm_ret", "mpkpe_mm",
         "drift_m");
  for (int i = 0; i < r.nclip; i++) {
    const MotionClipEval* c = &r.clip[i];
    char fall[32];
    if (c->fall_step) snprintf(fall, sizeof(fall), "%.2f", c->fall_time);
    else snprintf(fall, sizeof(fall), "-");
    printf("%-32s %8d %9.2f %10s %10.4f %10.1f %9.3f\n", c->name, c->steps, c->steps * r.dt, fall, c->norm_return,
           c->mpkpe_mm, c->drift_m);
  }
  printf("mean over %d clips: falls %d/%d  normalized return %.4f  MPKPE %.1f mm  anchor drift %.3f m  (%.1f s)\n",
         r.nclip, r.falls, r.nclip, r.norm_return, r.mpkpe_mm, r.drift_m, r.seconds);
  rc = write_outputs(o, &r, (long long)iteration, json_path, csv_path, err, sizeof(err));
  if (!rc && o->trajectory) rc = motion_eval_write_trajectory(me, o->trajectory, o->checkpoint, err, sizeof(err));
  motion_eval_close(me);
  if (rc) {
    fprintf(stderr, "%s: %s\n", kCmd, err);
    return 1;
  }
  printf("wrote %s, %s%s%s\n", json_path, csv_path, o->trajectory ? ", " : "", o->trajectory ? o->trajectory : "");
  if (fflush(stdout) || ferror(stdout)) return 1;
  return 0;
}
