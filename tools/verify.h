// verify.h: `adjoint verify`: conformance of our engine against MuJoCo C (float64) on sampled states.
#ifndef ADJ_VERIFY_H
#define ADJ_VERIFY_H
#include <stddef.h>

// a batch of states (inputs) and our engine's results (outputs), all float64, world-major
typedef struct VerifyBatch {
  int n;                          // states
  double *qpos, *qvel, *ctrl;     // (n, nq), (n, nv), (n, nu)
  double* warm;                   // (n, nv) qacc_warmstart
  double* qacc;                   // (n, nv) out: qacc at the state
  double *qpos_next, *qvel_next;  // (n, nq), (n, nv) out: after one step
  double* qfrc_constraint;        // (n, nv) out: qfrc_constraint at the state
  int con_cap;                    // contacts recorded per state (in)
  int* ncon;                      // (n) out: our contact count at the state
  int* con_geom;                  // (n, con_cap, 2) out: our contacts' geom pairs (first con_cap)
  int npair;                      // out: candidate pairs of our SimModel
  long long ncon_overflow;        // out: contacts / rows dropped for lack of capacity, summed over states
  long long nefc_overflow;
  // gradient block (verify_grad): cotangent c of the step's output, the input cotangents c' dx'/du
  const double *cot_qpos, *cot_qvel;         // (n, nv), (n, nv) in: c (qpos part in the tangent space)
  double *grad_qpos, *grad_qvel, *grad_ctrl;  // (n, nv), (n, nv), (n, nu) out
  int* grad_nconstraint;                      // (n) out: evaluations whose constraint rows were not differentiated
} VerifyBatch;

int verify_engine_f64(const void* mjmodel, VerifyBatch* b, int backend, char* err, size_t errlen);
int verify_engine_f32(const void* mjmodel, VerifyBatch* b, int backend, char* err, size_t errlen);
// one recorded control step (one substep) and its backward from each state of b
int verify_grad_f64(const void* mjmodel, VerifyBatch* b, int backend, char* err, size_t errlen);
int verify_grad_f32(const void* mjmodel, VerifyBatch* b, int backend, char* err, size_t errlen);

int verify_main(int argc, char** argv);

#endif
