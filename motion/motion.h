// motion.h: reference motions for free-base robots (LAFAN1 retargeted clips and the like), in MuJoCo's qpos
// layout, float64, host code. One reader for every consumer (the benchmark's states, the motion library, the
// tracking task).
//
// Clip files: CSV (gzip'd or plain), no header, one frame per row: root x, y, z, root quaternion x, y, z, w
// (scalar LAST), then the njoint joint angles in the model's qpos[7:7+njoint] order. Rows become qpos rows
// (nq = 7 + njoint): position, quaternion w, x, y, z (normalised), joints. A directory of clips carries a
// MANIFEST.tsv (header line, then "file<TAB>frames<TAB>..."); clips are read in its order and their frame counts
// checked against it; a clip's data file is DIR/file.gz, else DIR/file.
//
// Velocities follow mj_differentiatePos for a free joint followed by hinges: linear velocity of the root in the
// world frame, angular velocity in the root's body frame, joint rates; nv = 6 + njoint.
// Errors: a negative MOTION_ERR_* code and a message naming the file (and line) in the caller's buffer.
#ifndef ADJ_MOTION_H
#define ADJ_MOTION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MOTION_OK = 0, MOTION_ERR_IO = -1, MOTION_ERR_FORMAT = -2, MOTION_ERR_ALLOC = -3, MOTION_ERR_ARG = -4 };

#define MOTION_LAFAN1_FPS 30.0
#define MOTION_G1_NJOINT 29

typedef struct MotionClip {
  char name[256];  // the clip's file name as listed (e.g. "dance1_subject1.csv"), or the path's last part
  int nframe;
  int nq;          // 7 + njoint
  double fps;
  double* qpos;    // (nframe, nq), owned
} MotionClip;

typedef struct MotionSet {
  int nclip;
  MotionClip* clip;  // owned
} MotionSet;

// Reads one clip file of rows with 7 + njoint numbers. fps: the file's frame rate (LAFAN1: 30).
int motion_read_clip(const char* path, int njoint, double fps, MotionClip* out, char* err, size_t errlen);
// Every clip of dir in its MANIFEST.tsv order; each clip's frame count must equal the manifest's.
int motion_read_dir(const char* dir, int njoint, double fps, MotionSet* out, char* err, size_t errlen);
void motion_clip_free(MotionClip* c);
void motion_set_free(MotionSet* s);

// The clip at another frame rate: frames at k / fps for every k with k / fps within the clip's duration;
// positions and joints interpolated linearly, the root quaternion by slerp (shortest arc).
int motion_resample(const MotionClip* in, double fps, MotionClip* out, char* err, size_t errlen);

// Unit quaternion (w, x, y, z) between unit q0 (t = 0) and q1 (t = 1) on the shorter arc.
void motion_slerp(const double q0[4], const double q1[4], double t, double out[4]);

// mj_differentiatePos for [free joint, hinges]: v = (qb - qa) / dt in the tangent space (nv = nq - 1 values).
void motion_diff_pos(int nq, const double* qa, const double* qb, double dt, double* v);

// Velocities of every frame (nframe, nq - 1): central differences (qpos[k+1] - qpos[k-1]) over 2 / fps,
// one-sided at the first and last frames. A single-frame clip gets zeros.
void motion_qvel(const MotionClip* c, double* qvel);

#ifdef __cplusplus
}
#endif

#endif
