// sim_model.h: SimModel and SimData, described once as X-macro tables.
//
// SimModel holds the constants of one compiled model (from MuJoCo's compiler, see sim_import.c). It owns one
// host buffer; the CUDA backend copies the same table into one device buffer. SimData holds the state and
// intermediates of nworld worlds, world-major: field f of world w starts at f + w * (per-world size).
//
// Each table row is X(type, name, count, width): the array has count*width elements, where `count` names a
// size field of SimModel. Precision-dependent types are sim_real, so this header is compiled twice (float64
// and float32 CPU engines; symbols mangled by SIM_SFX, see sim_port.h).
#ifndef ADJ_SIM_MODEL_H
#define ADJ_SIM_MODEL_H

#include <string.h>

#include "sim_port.h"
#include "sim_collision.h"
#include "sim_constraint.h"
#include "sim_adjoint_fields.h"
#include "sim_param_fields.h"

#ifdef __cplusplus
extern "C" {
#endif

// joint types (= mjtJoint)
enum { SIM_JNT_FREE = 0, SIM_JNT_BALL = 1, SIM_JNT_SLIDE = 2, SIM_JNT_HINGE = 3 };
// geom types (= mjtGeom)
enum { SIM_GEOM_PLANE = 0, SIM_GEOM_HFIELD = 1, SIM_GEOM_SPHERE = 2, SIM_GEOM_CAPSULE = 3,
       SIM_GEOM_ELLIPSOID = 4, SIM_GEOM_CYLINDER = 5, SIM_GEOM_BOX = 6 };
// integrators (= mjtIntegrator)
enum { SIM_INT_EULER = 0, SIM_INT_RK4 = 1, SIM_INT_IMPLICIT = 2, SIM_INT_IMPLICITFAST = 3 };
// actuator transmission / gain / bias types (subset of mjtTrn, mjtGain, mjtBias)
enum { SIM_TRN_JOINT = 0, SIM_TRN_TENDON = 3 };
enum { SIM_GAIN_FIXED = 0, SIM_GAIN_AFFINE = 1 };
enum { SIM_BIAS_NONE = 0, SIM_BIAS_AFFINE = 1 };
// disable flags (= mjtDisableBit)
enum {
  SIM_DSBL_CONSTRAINT = 1 << 0, SIM_DSBL_EQUALITY = 1 << 1, SIM_DSBL_FRICTIONLOSS = 1 << 2,
  SIM_DSBL_LIMIT = 1 << 3, SIM_DSBL_CONTACT = 1 << 4, SIM_DSBL_SPRING = 1 << 5, SIM_DSBL_DAMPER = 1 << 6,
  SIM_DSBL_GRAVITY = 1 << 7, SIM_DSBL_CLAMPCTRL = 1 << 8, SIM_DSBL_WARMSTART = 1 << 9,
  SIM_DSBL_FILTERPARENT = 1 << 10, SIM_DSBL_ACTUATION = 1 << 11, SIM_DSBL_REFSAFE = 1 << 12,
  SIM_DSBL_SENSOR = 1 << 13, SIM_DSBL_MIDPHASE = 1 << 14, SIM_DSBL_EULERDAMP = 1 << 15,
  SIM_DSBL_AUTORESET = 1 << 16, SIM_DSBL_NATIVECCD = 1 << 17, SIM_DSBL_ISLAND = 1 << 18
};
#define SIM_NPOLY 2

// Pipeline stages, in order.
enum {
  SIM_STAGE_KINEMATICS = 0,  // xpos, xquat, xmat, xipos, ximat, xanchor, xaxis, geom_xpos, geom_xmat
  SIM_STAGE_COMPOS,          // subtree_com, cinert, cdof
  SIM_STAGE_TENDON,          // ten_length, actuator_length
  SIM_STAGE_CRB,             // crb, M
  SIM_STAGE_FACTOR,          // qLD, qLDiagInv
  SIM_STAGE_COLLISION,       // ncon, contact_*
  SIM_STAGE_VELOCITY,        // ten_velocity, actuator_velocity, cvel, cdof_dot
  SIM_STAGE_PASSIVE,         // qfrc_spring, qfrc_damper, qfrc_passive
  SIM_STAGE_RNE,             // qfrc_bias
  SIM_STAGE_ACTUATION,       // actuator_force, qfrc_actuator
  SIM_STAGE_ACCELERATION,    // qfrc_smooth, qacc_smooth
  SIM_STAGE_CONSTRAINT,      // qfrc_constraint, qacc
  SIM_STAGE_INTEGRATE,       // qpos, qvel, qacc_warmstart, time (one integrator step after forward)
  SIM_NSTAGE
};

// ---- model sizes: (name, what) ----
#define SIM_MODEL_SIZES                                                    \
  X(nq, "generalized coordinates")                                         \
  X(nv, "degrees of freedom")                                              \
  X(nu, "actuators")                                                       \
  X(nbody, "bodies, world included")                                       \
  X(njnt, "joints")                                                        \
  X(ngeom, "geoms")                                                        \
  X(ntendon, "fixed tendons")                                              \
  X(nwrap, "tendon wrap entries (joint, coef)")                            \
  X(nM, "non-zeros of the lower-triangular CSR inertia (MuJoCo's nC)")     \
  X(nMfac, "entry updates of the inertia's L'DL factor (sim_factorI)")     \
  X(nmoment, "non-zeros of the constant actuator moment (CSR)")            \
  X(nlevel, "depths of the kinematic tree (world = level 0)")              \
  X(nchild, "entries of the body child lists")                             \
  X(nkey, "keyframes")                                                     \
  X(one, "always 1 (for per-model scalars stored as arrays)")                 \
  SIM_MODEL_SIZES_COLLISION                                                \
  SIM_MODEL_SIZES_CONSTRAINT                                               \
  SIM_MODEL_SIZES_ADJOINT                                                  \
  SIM_MODEL_SIZES_PARAM

// ---- float32 build: float64 copies of the geometry (sim_math_geo.h; SIM_GEO(m, name) reads m->geo_name) ----
// Model: the constants of kinematics, the narrow phase and joint-limit distances. Data: the body frames (the
// kinematic recursion), inertial and geom frames (the narrow phase); the float32 fields of the same names hold
// these rounded. The float64 build has none of them (SIM_GEO(m, name) is m->name).
#ifdef SIM_DOUBLE
#define SIM_MODEL_FIELDS_GEO
#define SIM_DATA_FIELDS_GEO
#else
#define SIM_MODEL_FIELDS_GEO                                                                       \
  X(double, geo_body_pos, nbody, 3)                                                                \
  X(double, geo_body_quat, nbody, 4)                                                               \
  X(double, geo_body_ipos, nbody, 3)                                                               \
  X(double, geo_body_iquat, nbody, 4)                                                              \
  X(double, geo_jnt_pos, njnt, 3)                                                                  \
  X(double, geo_jnt_axis, njnt, 3)                                                                 \
  X(double, geo_jnt_range, njnt, 2)                                                                \
  X(double, geo_qpos0, nq, 1)                                                                      \
  X(double, geo_geom_pos, ngeom, 3)                                                                \
  X(double, geo_geom_quat, ngeom, 4)                                                               \
  X(double, geo_geom_size, ngeom, 3)
#define SIM_DATA_FIELDS_GEO                                                                        \
  X(double, geo_xpos, nbody, 3)                                                                    \
  X(double, geo_xquat, nbody, 4)                                                                   \
  X(double, geo_xmat, nbody, 9)                                                                    \
  X(double, geo_xipos, nbody, 3)                                                                   \
  X(double, geo_ximat, nbody, 9)                                                                   \
  X(double, geo_geom_xpos, ngeom, 3)                                                               \
  X(double, geo_geom_xmat, ngeom, 9)
#endif

// ---- model arrays: X(type, name, count, width) ----
#define SIM_MODEL_FIELDS                                                                           \
  /* bodies */                                                                                     \
  X(int, body_parentid, nbody, 1)     /* parent body id */                                         \
  X(int, body_rootid, nbody, 1)       /* id of the root body below the world */                    \
  X(int, body_weldid, nbody, 1)       /* id of the body this one is welded to */                   \
  X(int, body_jntnum, nbody, 1)                                                                    \
  X(int, body_jntadr, nbody, 1)                                                                    \
  X(int, body_dofnum, nbody, 1)                                                                    \
  X(int, body_dofadr, nbody, 1)                                                                    \
  X(int, body_geomnum, nbody, 1)                                                                   \
  X(int, body_geomadr, nbody, 1)                                                                   \
  X(int, body_sameframe, nbody, 1)    /* inertial frame == body frame shortcut (mjtSameFrame) */   \
  X(int, body_childadr, nbody, 1)     /* first entry in body_child */                              \
  X(int, body_childnum, nbody, 1)                                                                  \
  X(int, body_child, nchild, 1)       /* children of each body, in id order */                     \
  X(int, level_adr, nlevel, 1)        /* first entry of each depth in level_body */                \
  X(int, level_num, nlevel, 1)                                                                     \
  X(int, level_body, nbody, 1)        /* bodies sorted by depth (stable in id) */                  \
  X(sim_real, body_pos, nbody, 3)     /* position offset from parent */                            \
  X(sim_real, body_quat, nbody, 4)    /* orientation offset from parent */                         \
  X(sim_real, body_ipos, nbody, 3)    /* local position of the center of mass */                   \
  X(sim_real, body_iquat, nbody, 4)   /* local orientation of the inertia ellipsoid */             \
  X(sim_real, body_mass, nbody, 1)                                                                 \
  X(sim_real, body_subtreemass, nbody, 1)                                                          \
  X(sim_real, body_inertia, nbody, 3) /* diagonal inertia in the ipos/iquat frame */               \
  X(sim_real, body_invweight0, nbody, 2) /* mean inv inertia at qpos0 (trn, rot) */                \
  /* joints */                                                                                     \
  X(int, jnt_type, njnt, 1)                                                                        \
  X(int, jnt_qposadr, njnt, 1)                                                                     \
  X(int, jnt_dofadr, njnt, 1)                                                                      \
  X(int, jnt_bodyid, njnt, 1)                                                                      \
  X(int, jnt_limited, njnt, 1)                                                                     \
  X(int, jnt_actfrclimited, njnt, 1)                                                               \
  X(int, jnt_freebody, njnt, 1)       /* free joint of a standalone free body (implicitfast block) */ \
  X(sim_real, jnt_pos, njnt, 3)       /* local anchor */                                           \
  X(sim_real, jnt_axis, njnt, 3)      /* local axis */                                             \
  X(sim_real, jnt_stiffness, njnt, 1)                                                              \
  X(sim_real, jnt_stiffnesspoly, njnt, SIM_NPOLY)                                                  \
  X(sim_real, jnt_range, njnt, 2)                                                                  \
  X(sim_real, jnt_actfrcrange, njnt, 2)                                                            \
  X(sim_real, jnt_margin, njnt, 1)                                                                 \
  X(sim_real, jnt_solref, njnt, 2)                                                                 \
  X(sim_real, jnt_solimp, njnt, 5)                                                                 \
  X(sim_real, qpos0, nq, 1)           /* reference configuration */                                \
  X(sim_real, qpos_spring, nq, 1)     /* spring reference configuration */                         \
  /* dofs */                                                                                       \
  X(int, dof_bodyid, nv, 1)                                                                        \
  X(int, dof_jntid, nv, 1)                                                                         \
  X(int, dof_parentid, nv, 1)         /* parent dof, -1: none */                                   \
  X(int, dof_hasdamp, nv, 1)          /* Euler: takes the implicit-damping path (see integrate) */ \
  X(sim_real, dof_armature, nv, 1)    /* dof armature + gear^2 * actuator armature */              \
  X(sim_real, dof_damping, nv, 1)     /* dof damping + gear^2 * actuator damping */                \
  X(sim_real, dof_dampingpoly, nv, SIM_NPOLY) /* same, polynomial terms */                         \
  X(sim_real, dof_frictionloss, nv, 1)                                                             \
  X(sim_real, dof_invweight0, nv, 1)                                                               \
  X(int, M_rownnz, nv, 1)             /* lower-triangular CSR inertia: ancestors, diagonal last */ \
  X(int, M_rowadr, nv, 1)                                                                          \
  X(int, M_colind, nM, 1)                                                                          \
  X(int, M_rowind, nM, 1)             /* the row of each stored entry */                            \
  X(int, M_fac_adr, nv, 1)            /* first of row k's updates in M_fac */                      \
  X(int, M_fac_num, nv, 1)            /* number of them */                                         \
  X(int, M_fac, nMfac, 3)             /* (entry changed, row k's two entries): sim_factorI's lanes */ \
  X(int, M_desc_adr, nv, 1)           /* first of dof i's entries in M_desc */                     \
  X(int, M_desc_num, nv, 1)           /* number of them */                                         \
  X(int, M_desc, nM, 2)               /* (descendant c, address of M(c, i)), ascending c: M v */   \
  X(int, dof_depth, nv, 1)            /* number of ancestor dofs */                                \
  X(int, dof_ndesc, nv, 1)            /* number of descendant dofs (they follow it) */             \
  X(int, dof_level_adr, nv, 1)        /* first entry of each depth in dof_level_dof */             \
  X(int, dof_level_num, nv, 1)        /* dofs at each depth (0 beyond the deepest) */              \
  X(int, dof_level_dof, nv, 1)        /* dofs sorted by depth (ascending id within a depth) */     \
  /* geoms */                                                                                      \
  X(int, geom_type, ngeom, 1)                                                                      \
  X(int, geom_contype, ngeom, 1)                                                                   \
  X(int, geom_conaffinity, ngeom, 1)                                                               \
  X(int, geom_condim, ngeom, 1)                                                                    \
  X(int, geom_bodyid, ngeom, 1)                                                                    \
  X(int, geom_sameframe, ngeom, 1)                                                                 \
  X(int, geom_priority, ngeom, 1)                                                                  \
  X(sim_real, geom_pos, ngeom, 3)                                                                  \
  X(sim_real, geom_quat, ngeom, 4)                                                                 \
  X(sim_real, geom_size, ngeom, 3)                                                                 \
  X(sim_real, geom_rbound, ngeom, 1)                                                               \
  X(sim_real, geom_friction, ngeom, 3)                                                             \
  X(sim_real, geom_solmix, ngeom, 1)                                                               \
  X(sim_real, geom_solref, ngeom, 2)                                                               \
  X(sim_real, geom_solimp, ngeom, 5)                                                               \
  X(sim_real, geom_margin, ngeom, 1)                                                               \
  X(sim_real, geom_gap, ngeom, 1)                                                                  \
  /* fixed tendons */                                                                              \
  X(int, tendon_adr, ntendon, 1)      /* first wrap entry */                                       \
  X(int, tendon_num, ntendon, 1)                                                                   \
  X(int, tendon_limited, ntendon, 1)                                                               \
  X(sim_real, tendon_stiffness, ntendon, 1)                                                        \
  X(sim_real, tendon_stiffnesspoly, ntendon, SIM_NPOLY)                                            \
  X(sim_real, tendon_damping, ntendon, 1) /* + gear^2 * actuator damping */                        \
  X(sim_real, tendon_dampingpoly, ntendon, SIM_NPOLY)                                              \
  X(sim_real, tendon_lengthspring, ntendon, 2)                                                     \
  X(sim_real, tendon_range, ntendon, 2)                                                            \
  X(sim_real, tendon_margin, ntendon, 1)                                                           \
  X(sim_real, tendon_frictionloss, ntendon, 1)                                                     \
  X(sim_real, tendon_invweight0, ntendon, 1)                                                       \
  X(sim_real, tendon_solref, ntendon, 2)                                                           \
  X(sim_real, tendon_solimp, ntendon, 5)                                                           \
  X(int, wrap_dofadr, nwrap, 1)       /* dof of the wrapped hinge/slide joint */                   \
  X(int, wrap_qposadr, nwrap, 1)                                                                   \
  X(sim_real, wrap_prm, nwrap, 1)     /* coefficient */                                            \
  /* actuators (nu == nactuator: no stateful or multi-output actuators) */                        \
  X(int, actuator_trntype, nu, 1)                                                                  \
  X(int, actuator_trnid, nu, 1)       /* joint or tendon id */                                     \
  X(int, actuator_gaintype, nu, 1)                                                                 \
  X(int, actuator_biastype, nu, 1)                                                                 \
  X(int, actuator_ctrllimited, nu, 1)                                                              \
  X(int, actuator_forcelimited, nu, 1)                                                             \
  X(sim_real, actuator_gear, nu, 1)                                                                \
  X(sim_real, actuator_gainprm, nu, 3)                                                             \
  X(sim_real, actuator_biasprm, nu, 3)                                                             \
  X(sim_real, actuator_ctrlrange, nu, 2)                                                           \
  X(sim_real, actuator_forcerange, nu, 2)                                                          \
  X(int, actuator_momadr, nu, 1)      /* constant moment rows (joint: gear; tendon: gear*ten_J) */ \
  X(int, actuator_momnum, nu, 1)                                                                   \
  X(int, moment_dof, nmoment, 1)                                                                   \
  X(sim_real, moment_val, nmoment, 1)                                                              \
  X(int, dof_momadr, nv, 1)           /* moment entries acting on each dof: first in dof_moment */ \
  X(int, dof_momnum, nv, 1)                                                                        \
  X(int, dof_moment, nmoment, 2)      /* (moment entry, its actuator) by dof, in actuator order */ \
  /* keyframes */                                                                                  \
  X(sim_real, key_qpos, nkey, m->nq)                                                                  \
  X(sim_real, key_qvel, nkey, m->nv)                                                                  \
  X(sim_real, key_ctrl, nkey, m->nu)                                                              \
  SIM_MODEL_FIELDS_COLLISION                                                                       \
  SIM_MODEL_FIELDS_CONSTRAINT                                                                      \
  SIM_MODEL_FIELDS_GEO                                                                             \
  SIM_MODEL_FIELDS_PARAM

// ---- per-world state and intermediates: X(type, name, count, width), each world-major ----
#define SIM_DATA_FIELDS                                                                            \
  /* state */                                                                                      \
  X(sim_real, qpos, nq, 1)                                                                         \
  X(sim_real, qvel, nv, 1)                                                                         \
  X(sim_real, ctrl, nu, 1)                                                                         \
  X(sim_real, qacc_warmstart, nv, 1)  /* solver warm start: state carried across steps */          \
  X(sim_real, time, one, 1)                                                                        \
  X(sim_real, qfrc_applied, nv, 1)                                                                 \
  /* position stage */                                                                             \
  X(sim_real, xpos, nbody, 3)         /* Cartesian body position */                                \
  X(sim_real, xquat, nbody, 4)                                                                     \
  X(sim_real, xmat, nbody, 9)                                                                      \
  X(sim_real, xipos, nbody, 3)        /* Cartesian center of mass */                               \
  X(sim_real, ximat, nbody, 9)                                                                     \
  X(sim_real, xanchor, njnt, 3)                                                                    \
  X(sim_real, xaxis, njnt, 3)                                                                      \
  X(sim_real, geom_xpos, ngeom, 3)                                                                 \
  X(sim_real, geom_xmat, ngeom, 9)                                                                 \
  X(sim_real, subtree_com, nbody, 3)                                                               \
  X(sim_real, cinert, nbody, 10)      /* com-based body inertia */                                 \
  X(sim_real, cdof, nv, 6)            /* com-based motion axis of each dof */                      \
  X(sim_real, ten_length, ntendon, 1)                                                              \
  X(sim_real, actuator_length, nu, 1)                                                              \
  X(sim_real, crb, nbody, 10)         /* composite rigid-body inertia */                           \
  X(sim_real, M, nM, 1)               /* inertia, lower-triangular CSR */                          \
  X(sim_real, qLD, nM, 1)             /* L'DL factor of M */                                       \
  X(sim_real, qLDiagInv, nv, 1)                                                                    \
  /* velocity stage */                                                                             \
  X(sim_real, ten_velocity, ntendon, 1)                                                            \
  X(sim_real, actuator_velocity, nu, 1)                                                            \
  X(sim_real, cvel, nbody, 6)         /* com-based velocity */                                     \
  X(sim_real, cdof_dot, nv, 6)                                                                     \
  X(sim_real, qfrc_bias, nv, 1)       /* C(q,v): Coriolis, centrifugal, gravity */                 \
  X(sim_real, qfrc_spring, nv, 1)                                                                  \
  X(sim_real, qfrc_damper, nv, 1)                                                                  \
  X(sim_real, qfrc_passive, nv, 1)                                                                 \
  /* actuation and acceleration */                                                                 \
  X(sim_real, actuator_force, nu, 1)                                                               \
  X(sim_real, qfrc_actuator, nv, 1)                                                                \
  X(sim_real, qfrc_smooth, nv, 1)                                                                  \
  X(sim_real, qacc_smooth, nv, 1)                                                                  \
  X(sim_real, qfrc_constraint, nv, 1)                                                              \
  X(sim_real, qacc, nv, 1)                                                                         \
  /* integrator */                                                                                 \
  X(sim_real, qDeriv, nM, 1)          /* d(smooth force)/d qvel restricted to M's pattern */       \
  X(sim_real, qH, nM, 1)              /* factor of M - h*qDeriv (or M + h*B for Euler) */          \
  X(sim_real, qHDiagInv, nv, 1)                                                                    \
  X(sim_real, qacc_int, nv, 1)        /* the acceleration the integrator applied */                \
  /* RK4 stage storage */                                                                          \
  X(sim_real, rk_qpos, nq, 1)                                                                      \
  X(sim_real, rk_qvel, nv, 4)                                                                      \
  X(sim_real, rk_qacc, nv, 4)                                                                      \
  X(sim_real, rk_dacc, nv, 1)                                                                      \
  /* scratch */                                                                                    \
  X(sim_real, scratch_body6, nbody, 12) /* rne: cacc, cfrc */                                      \
  /* counters */                                                                                   \
  X(int, nan_count, one, 1)           /* resets of this world after a non-finite state */          \
  SIM_DATA_FIELDS_COLLISION                                                                        \
  SIM_DATA_FIELDS_CONSTRAINT                                                                       \
  SIM_DATA_FIELDS_GEO                                                                              \
  SIM_DATA_FIELDS_ADJOINT                                                                          \
  SIM_DATA_FIELDS_PARAM

typedef struct SIM_SFX(SimModel) {
#define X(name, what) int name;
  SIM_MODEL_SIZES
#undef X
  // options (mjOption subset; what the engine uses)
  sim_real timestep;
  sim_real gravity[3];
  sim_real tolerance;
  sim_real ls_tolerance;
  sim_real impratio;
  sim_real meaninertia;
  int integrator;
  int iterations;
  int ls_iterations;
  int disableflags;
  int enableflags;
  int has_tendon_armature;
#define X(type, name, count, width) type* name;
  SIM_MODEL_FIELDS
#undef X
  void* buffer;       // owns every array above
  size_t nbuffer;     // bytes
  int on_device;      // arrays point into device memory
} SIM_SFX(SimModel);

// number of per-world data fields
enum {
  SIM_NDATA = 0
#define X(type, name, count, width) +1
  SIM_DATA_FIELDS
#undef X
};

typedef struct SIM_SFX(SimData) {
  int nworld;
#define X(type, name, count, width) type* name;
  SIM_DATA_FIELDS
#undef X
  void* buffer;
  size_t nbuffer;
  int on_device;
  size_t world_stride[SIM_NDATA];  // bytes per world of each field, in table order (sim_world)
} SIM_SFX(SimData);

// one world's view of SimData: same field names, pointers offset to world w
typedef struct SIM_SFX(SimWorld) {
#define X(type, name, count, width) type* name;
  SIM_DATA_FIELDS
#undef X
} SIM_SFX(SimWorld);

#define SimModel SIM_SFX(SimModel)
#define SimData SIM_SFX(SimData)
#define SimWorld SIM_SFX(SimWorld)

// Both are a run of SIM_NDATA pointers in table order (SimData's from qpos), so a view is one loop over the
// fields, lanes striding it. Written field by field, the ~180 independent loads and stores let the GPU
// compiler hoist every load: a kernel's prologue alone then needed ~230 registers, the stages 40-170.
#ifdef __cplusplus
static_assert(sizeof(SimWorld) == SIM_NDATA * sizeof(void*), "SimWorld is a run of pointers");
static_assert(offsetof(SimData, buffer) - offsetof(SimData, qpos) == SIM_NDATA * sizeof(void*), "SimData's run");
#else
_Static_assert(sizeof(SimWorld) == SIM_NDATA * sizeof(void*), "SimWorld is a run of pointers");
_Static_assert(offsetof(SimData, buffer) - offsetof(SimData, qpos) == SIM_NDATA * sizeof(void*), "SimData's run");
#endif
SIM_FN void sim_world_lanes(const SimData* d, int w, SimWorld* out, int lane, int nlane) {
  const char* src = (const char*)d + offsetof(SimData, qpos);
  char* dst = (char*)out;
  for (int f = lane; f < SIM_NDATA; f += nlane) {
    char* p;
    memcpy(&p, src + f * sizeof(char*), sizeof p);
    p += (size_t)w * d->world_stride[f];
    memcpy(dst + f * sizeof(char*), &p, sizeof p);
  }
}

SIM_FN void sim_world(const SimModel* m, const SimData* d, int w, SimWorld* out) {
  (void)m;
  sim_world_lanes(d, w, out, 0, 1);
}

// world_stride for a model's sizes (sim_data_create and the device copies)
SIM_FN void sim_world_strides(const SimModel* m, size_t* stride) {
  int f = 0;
#define X(type, name, count, width) stride[f++] = sizeof(type) * (size_t)m->count * (width);
  SIM_DATA_FIELDS
#undef X
}

// Per-world parameters (sim_param_fields.h): the world's arrays when overrides are enabled, else the model's.
// The flag is uniform over the lanes and the batch, so the branch costs nothing measurable.
SIM_FN const sim_real* sim_prm_mass(const SimModel* m, const SimWorld* d) {  // (nbody)
  return m->prm ? d->prm_body_mass : m->body_mass;
}
SIM_FN const sim_real* sim_prm_subtreemass(const SimModel* m, const SimWorld* d) {  // (nbody)
  return m->prm ? d->prm_body_subtreemass : m->body_subtreemass;
}
SIM_FN const sim_real* sim_prm_friction(const SimModel* m, const SimWorld* d) {  // (ngeom, 3)
  return m->prm ? d->prm_geom_friction : m->geom_friction;
}

#ifdef __cplusplus
}
#endif

#endif
