// motion_lib.h: the motion library, every clip of a motion set at the control rate with the robot's body poses
// by forward kinematics (our engine, float64): what a tracking task reads. Host code.
//
// In memory everything is float64, frame-major, the clips one after another (clip c is frames
// [clip_start[c], clip_start[c] + clip_len[c])). Bodies are the model's bodies 1 .. nbody-1 (the world left
// out), in model order; body_name gives them. Quaternions are (w, x, y, z). Velocities, per clip, by central
// differences over 2 / fps (one-sided at a clip's first and last frame):
//   qvel            tangent-space velocity of qpos (motion_qvel: root linear in the world, angular in the root
//                   frame, joint rates)
//   joint_pos/vel   qpos[7:], qvel[6:] (mjlab's names)
//   body_lin_vel_w  of body_pos_w, world frame
//   body_ang_vel_w  from q[k+1] (x) q[k-1]^-1 over 2 / fps, world frame
// The file (HDF5, `adjoint motion build`) holds the same datasets; its layout is documented in motion/README.md.
#ifndef ADJ_MOTION_LIB_H
#define ADJ_MOTION_LIB_H

#include <stddef.h>

#include "motion/motion.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOTION_NAME_MAX 64  // bytes of a joint or body name, NUL included

typedef struct MotionLib {
  int nclip, nframe;    // clips; frames over all clips
  int nq, nv, njoint;   // nq = 7 + njoint, nv = 6 + njoint
  int nbody;            // stored bodies (the model's nbody - 1)
  double fps;           // frames per second of every clip (the control rate, 50)
  char (*clip_name)[256];             // (nclip)
  int *clip_start, *clip_len;         // (nclip)
  char (*joint_name)[MOTION_NAME_MAX];  // (njoint) the hinge joints of qpos[7:], in order
  char (*body_name)[MOTION_NAME_MAX];   // (nbody)
  double *qpos, *qvel;                // (nframe, nq), (nframe, nv)
  double *joint_pos, *joint_vel;      // (nframe, njoint)
  double *body_pos_w, *body_quat_w;   // (nframe, nbody, 3), (nframe, nbody, 4)
  double *body_lin_vel_w, *body_ang_vel_w;  // (nframe, nbody, 3)
} MotionLib;

// Resamples every clip of set to fps (motion_resample) and fills the library: body poses by the engine's
// forward kinematics of the MJCF model_path (float64; looked up as sim_load_mjcf does: as given, then on the
// asset search path).
// The model's free joint and hinges must match the clips' nq. Errors: MOTION_ERR_* and a message naming the
// clip or model.
int motion_lib_build(const MotionSet* set, const char* model_path, double fps, MotionLib* out, char* err,
                     size_t errlen);
// Writes the library as HDF5 (temp file + rename: a failure leaves any existing file untouched).
int motion_lib_write(const MotionLib* lib, const char* path, char* err, size_t errlen);
// Reads a library file; every dataset's shape and every value checked (finite, unit quaternions, clip
// boundaries consistent). Errors name the file and dataset.
int motion_lib_read(const char* path, MotionLib* out, char* err, size_t errlen);
// Index of a body / joint by name, -1 when absent.
int motion_lib_body(const MotionLib* lib, const char* name);
int motion_lib_joint(const MotionLib* lib, const char* name);
void motion_lib_free(MotionLib* lib);
// Allocates every array of lib (zeroed) for the sizes already set in it (nclip, nframe, nq, nv, njoint,
// nbody); MOTION_ERR_ALLOC (the caller frees with motion_lib_free).
int motion_lib_alloc(MotionLib* lib);

#ifdef __cplusplus
}
#endif

#endif
