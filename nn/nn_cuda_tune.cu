// NN_CUDA_TUNE (nn_cuda.h): cuBLASLt algorithm per GEMM shape from a process-wide tune table, filled by timing
// the heuristic's candidates when a shape is first planned. The table keeps each chosen cublasLtMatmulAlgo_t as
// the heuristic returned it (its bytes; cublasLt.h documents the struct as serializable for the same cuBLAS
// version) with its workspace size, so a table saved after tuning and loaded later runs exactly the algorithm
// that was timed, and a shape whose winner is the heuristic's first candidate runs the default mode's algorithm.
// The table's data structure and file format are plain C (nn_tune_table.c).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/nn_cuda_internal.h"
#include "nn/nn_tune_table.h"

#define NN_TUNE_CAND 8          // heuristic candidates with the model's reduction schemes
#define NN_TUNE_CAND_NOSPLIT 4  // and without split-K (when split-K is allowed)
#define NN_TUNE_WARMUP 2
#define NN_TUNE_SAMPLES 5
#define NN_TUNE_REPS 3  // launches per timed sample
#define NN_TUNE_MARGIN 0.98f  // another candidate replaces the heuristic's first only when faster than this fraction

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static NnTuneTable g_table;
static int g_frozen, g_timed, g_dirty, g_env_done, g_env_err;
static char g_err[512];

// ---------------------------------------------------------------------------------------------------------
// public table API
// ---------------------------------------------------------------------------------------------------------
static void copy_msg(char* dst, size_t len, const char* src) {
  if (dst && len) snprintf(dst, len, "%s", src);
}

// load or save under the table's lock; a failure's message also becomes nn_cuda_tune_last_error's
static int table_io(int save, const char* path, char* err, size_t errlen) {
  char msg[512] = "";
  pthread_mutex_lock(&g_mu);
  int r = save ? nn_tune_table_save(&g_table, path, msg, sizeof msg) : nn_tune_table_load(&g_table, path, msg, sizeof msg);
  if (r) copy_msg(g_err, sizeof g_err, msg);
  pthread_mutex_unlock(&g_mu);
  copy_msg(err, errlen, msg);
  return r;
}

extern "C" int nn_cuda_tune_load(const char* path, char* err, size_t errlen) { return table_io(0, path, err, errlen); }

extern "C" int nn_cuda_tune_save(const char* path, char* err, size_t errlen) { return table_io(1, path, err, errlen); }

extern "C" void nn_cuda_tune_clear(void) {
  pthread_mutex_lock(&g_mu);
  nn_tune_table_free(&g_table);
  g_dirty = 0;
  pthread_mutex_unlock(&g_mu);
}

extern "C" int nn_cuda_tune_count(void) {
  pthread_mutex_lock(&g_mu);
  int n = g_table.n;
  pthread_mutex_unlock(&g_mu);
  return n;
}

extern "C" int nn_cuda_tune_timed(void) {
  pthread_mutex_lock(&g_mu);
  int n = g_timed;
  pthread_mutex_unlock(&g_mu);
  return n;
}

extern "C" void nn_cuda_tune_freeze(int frozen) {
  pthread_mutex_lock(&g_mu);
  g_frozen = frozen != 0;
  pthread_mutex_unlock(&g_mu);
}

extern "C" void nn_cuda_tune_last_error(char* buf, size_t len) {
  pthread_mutex_lock(&g_mu);
  copy_msg(buf, len, g_err);
  pthread_mutex_unlock(&g_mu);
}

// ---------------------------------------------------------------------------------------------------------
// $ADJ_NN_TUNE_FILE
// ---------------------------------------------------------------------------------------------------------
int nn_tune_env_init(void) {
  pthread_mutex_lock(&g_mu);
  if (!g_env_done) {
    g_env_done = 1;
    const char* f = getenv("ADJ_NN_TUNE_FILE");
    if (f && *f && access(f, F_OK) == 0) g_env_err = nn_tune_table_load(&g_table, f, g_err, sizeof g_err);
  }
  int r = g_env_err;
  pthread_mutex_unlock(&g_mu);
  return r;
}

int nn_tune_flush(void) {
  int r = NN_OK;
  pthread_mutex_lock(&g_mu);
  const char* f = getenv("ADJ_NN_TUNE_FILE");
  if (g_dirty && f && *f) {
    r = nn_tune_table_save(&g_table, f, g_err, sizeof g_err);
    if (!r) g_dirty = 0;
  }
  pthread_mutex_unlock(&g_mu);
  return r;
}

// ---------------------------------------------------------------------------------------------------------
// algorithms <-> configuration attributes
// ---------------------------------------------------------------------------------------------------------
__global__ void k_tune_fill(float* p, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)((unsigned long long)(i * 2654435761ull) % 2000ull) * 1e-3f - 1.f;
}

int nn_tune_fill(float* p, long long n, cudaStream_t st) {
  if (n <= 0) return NN_OK;
  k_tune_fill<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(p, n);
  CKL();
  return NN_OK;
}

static int attrs_of(const cublasLtMatmulAlgo_t* a, NnTuneAlgo* t) {
  int32_t id = 0, sk = 1;
  uint32_t tile = 0, red = 0, swz = 0, cust = 0, stages = 0;
  uint16_t inner = 0, cluster = 0;
  size_t w;
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &cust, sizeof cust, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner, &w));
  CKB(cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w));
  t->id = id, t->tile = (int)tile, t->splitk_num = sk, t->reduction = (int)red, t->swizzle = (int)swz;
  t->custom = (int)cust, t->stages = (int)stages, t->inner = inner, t->cluster = cluster;
  return NN_OK;
}

// The algorithm of a table entry: its raw bytes (cublasLt.h: trivially serializable for the same cuBLAS version,
// which the key's lt pins), provided that the attributes read back equal the entry's readable ones, the reduction
// scheme is one the model allows, and cublasLtMatmulAlgoCheck accepts it for g's descriptors.
static int entry_algo(NnCudaMlp* M, const NnGemm* g, const NnTuneEntry* e, cublasLtMatmulAlgo_t* a, size_t* ws,
                      char* why, size_t wl) {
  memcpy(a->data, e->raw, sizeof a->data);
  NnTuneAlgo t;
  memset(&t, 0, sizeof t);
  if (attrs_of(a, &t) || memcmp(&t, &e->algo, sizeof t)) {
    snprintf(why, wl, "table entry's attributes do not match its raw algorithm (algo=%d tile=%d splitk=%d rscheme=%d read back)",
             t.id, t.tile, t.splitk_num, t.reduction);
    return NN_EFORMAT;
  }
  if (t.reduction == CUBLASLT_REDUCTION_SCHEME_INPLACE || (t.reduction & ~nn_gemm_reduction_mask(M->splitk))) {
    snprintf(why, wl, "table entry's reduction scheme %d not allowed here", t.reduction);
    return NN_EFORMAT;
  }
  cublasLtMatmulHeuristicResult_t res;
  memset(&res, 0, sizeof res);
  cublasStatus_t s = cublasLtMatmulAlgoCheck(M->lt, g->desc, g->la, g->lb, g->lc, g->lc, a, &res);
  if (s != CUBLAS_STATUS_SUCCESS || res.workspaceSize > NN_LT_WORKSPACE || e->ws > (long long)NN_LT_WORKSPACE) {
    snprintf(why, wl, "cublasLtMatmulAlgoCheck refused the table entry (status %d, workspace %zu); re-tune", (int)s,
             res.workspaceSize);
    return NN_ECUBLAS;
  }
  // the workspace size recorded when tuned (what the heuristic reported), unless this library asks for more
  *ws = res.workspaceSize > (size_t)e->ws ? res.workspaceSize : (size_t)e->ws;
  return NN_OK;
}

static void make_key(const NnCudaMlp* M, const NnGemmShape* s, NnTuneKey* k) {
  memset(k, 0, sizeof *k);
  nn_tune_key_set_gpu(k, M->gpu);
  k->sms = M->sms, k->lt = (int)cublasLtGetVersion(), k->tf32 = M->tf32;
  k->ta = s->ta, k->tb = s->tb, k->m = s->m, k->n = s->n, k->k = s->k;
  k->lda = s->lda, k->ldb = s->ldb, k->ldc = s->ldc, k->count = s->count;
  k->sa = s->count > 1 ? s->sa : 0, k->sb = s->count > 1 ? s->sb : 0, k->sc = s->count > 1 ? s->sc : 0;
  k->bias = s->bias, k->splitk = M->splitk;
}

static void key_text(const NnTuneKey* k, char* b, size_t n) {
  snprintf(b, n, "%s GEMM op=%c%c m=%d n=%d k=%d count=%d epi=%s", k->tf32 ? "tf32" : "fp32", k->ta ? 'T' : 'N',
           k->tb ? 'T' : 'N', k->m, k->n, k->k, k->count, k->bias ? "bias" : "none");
}

// ---------------------------------------------------------------------------------------------------------
// timing
// ---------------------------------------------------------------------------------------------------------
typedef struct {
  NnTuneAlgo attr;
  cublasLtMatmulAlgo_t algo;  // as the heuristic returned it
  size_t ws;
  float ms;
} Cand;

// median ms per launch of algorithm c for g's shape on the model's stream (*ms < 0: the algorithm failed to run)
static int time_cand(NnCudaMlp* M, const NnGemm* g, Cand* c, const float* A, const float* B, float* C,
                     const float* bias, cudaEvent_t ev0, cudaEvent_t ev1) {
  NnGemm t = *g;
  t.algo = c->algo, t.ws = c->ws;
  c->ms = -1.f;
  for (int i = 0; i < NN_TUNE_WARMUP; i++)
    if (nn_gemm_run(M, &t, A, B, C, bias, M->stream, M->lt_ws)) return cudaGetLastError() == cudaSuccess ? NN_OK : NN_ECUDA;
  float v[NN_TUNE_SAMPLES];
  for (int s = 0; s < NN_TUNE_SAMPLES; s++) {
    CK(cudaEventRecord(ev0, M->stream));
    for (int i = 0; i < NN_TUNE_REPS; i++)
      if (nn_gemm_run(M, &t, A, B, C, bias, M->stream, M->lt_ws)) {
        CK(cudaStreamSynchronize(M->stream));
        return cudaGetLastError() == cudaSuccess ? NN_OK : NN_ECUDA;  // c->ms < 0: skipped
      }
    CK(cudaEventRecord(ev1, M->stream));
    CK(cudaEventSynchronize(ev1));
    CK(cudaEventElapsedTime(&v[s], ev0, ev1));
    v[s] /= NN_TUNE_REPS;
  }
  for (int i = 1; i < NN_TUNE_SAMPLES; i++)  // insertion sort, then the middle one
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      float x = v[j];
      v[j] = v[j - 1], v[j - 1] = x;
    }
  c->ms = v[NN_TUNE_SAMPLES / 2];
  return NN_OK;
}

// heuristic candidates for g with reduction schemes `red`, appended to c (deduplicated by their bytes)
static int gather(NnCudaMlp* M, const NnGemm* g, uint32_t red, int want, Cand* c, int* n, int cap) {
  cublasLtMatmulPreference_t pref;
  int r = nn_gemm_pref(&pref, red);
  if (r) return r;
  cublasLtMatmulHeuristicResult_t res[NN_TUNE_CAND];
  int found = 0;
  cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(M->lt, g->desc, g->la, g->lb, g->lc, g->lc, pref, want, res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return NN_OK;  // no candidates of this kind
  for (int i = 0; i < found && *n < cap; i++) {
    if (res[i].state != CUBLAS_STATUS_SUCCESS || res[i].workspaceSize > NN_LT_WORKSPACE) continue;
    Cand x;
    memset(&x, 0, sizeof x);
    x.algo = res[i].algo, x.ws = res[i].workspaceSize;
    if (attrs_of(&x.algo, &x.attr)) continue;
    if (x.attr.reduction == CUBLASLT_REDUCTION_SCHEME_INPLACE || (x.attr.reduction & ~red)) continue;  // never atomics
    int dup = 0;
    for (int j = 0; j < *n && !dup; j++) dup = !memcmp(c[j].algo.data, x.algo.data, sizeof x.algo.data);
    if (!dup) c[(*n)++] = x;
  }
  return NN_OK;
}

static int set_err(int code, const char* what, const char* why) {
  pthread_mutex_lock(&g_mu);
  snprintf(g_err, sizeof g_err, "NN_CUDA_TUNE, %s: %s", what, why);
  pthread_mutex_unlock(&g_mu);
  return code;
}

int nn_tune_gemm(NnCudaMlp* M, NnGemm* g, const NnGemmShape* s, const float* A, const float* B, float* C,
                 const float* bias) {
  NnTuneKey key;
  make_key(M, s, &key);
  char what[160];
  key_text(&key, what, sizeof what);
  NnTuneEntry e;
  pthread_mutex_lock(&g_mu);
  const NnTuneEntry* hit = nn_tune_table_find(&g_table, &key);
  int found = hit != NULL, frozen = g_frozen;
  if (hit) e = *hit;
  pthread_mutex_unlock(&g_mu);
  char why[256];
  if (found) {
    int r = entry_algo(M, g, &e, &g->algo, &g->ws, why, sizeof why);
    return r ? set_err(r, what, why) : NN_OK;
  }
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(M->stream, &cs) != cudaSuccess) cudaGetLastError(), cs = cudaStreamCaptureStatusActive;
  if (frozen || cs != cudaStreamCaptureStatusNone) return NN_OK;  // heuristic's first choice, not recorded
  Cand c[NN_TUNE_CAND + NN_TUNE_CAND_NOSPLIT];
  int n = 0, r = gather(M, g, nn_gemm_reduction_mask(M->splitk), NN_TUNE_CAND, c, &n, NN_TUNE_CAND);
  if (!r && M->splitk) r = gather(M, g, nn_gemm_reduction_mask(0), NN_TUNE_CAND_NOSPLIT, c, &n, NN_TUNE_CAND + NN_TUNE_CAND_NOSPLIT);
  if (r) return r;
  cudaEvent_t ev0 = NULL, ev1 = NULL;
  if (cudaEventCreate(&ev0) != cudaSuccess || cudaEventCreate(&ev1) != cudaSuccess) {
    if (ev0) cudaEventDestroy(ev0);
    cudaGetLastError();
    return NN_ECUDA;
  }
  int best = -1;
  for (int i = 0; i < n && !r; i++) {
    r = time_cand(M, g, &c[i], A, B, C, bias, ev0, ev1);
    if (!r && c[i].ms >= 0.f && (best < 0 || c[i].ms < c[best].ms)) best = i;  // ties: the earlier candidate
  }
  cudaEventDestroy(ev0), cudaEventDestroy(ev1);
  if (r) {
    snprintf(why, sizeof why, "timing its candidates failed (%s)", nn_strerror(r));
    return set_err(r, what, why);
  }
  if (best < 0) return NN_OK;  // nothing ran: keep the heuristic's first choice, not recorded
  // within timing noise of the heuristic's first choice: keep that (the default mode's algorithm)
  if (best > 0 && c[0].ms >= 0.f && c[best].ms >= NN_TUNE_MARGIN * c[0].ms) best = 0;
  memset(&e, 0, sizeof e);
  e.key = key, e.algo = c[best].attr, e.ws = (long long)c[best].ws;
  memcpy(e.raw, c[best].algo.data, sizeof e.raw);
  e.ms = c[best].ms, e.ms0 = c[0].ms > 0 ? c[0].ms : 0, e.cand = best, e.ncand = n;
  pthread_mutex_lock(&g_mu);
  hit = nn_tune_table_find(&g_table, &key);  // another thread may have tuned the same shape meanwhile: use its
  if (hit) e = *hit;
  else if (nn_tune_table_put(&g_table, &e) == NN_OK) g_timed++, g_dirty = 1;
  else r = NN_ENOMEM;
  pthread_mutex_unlock(&g_mu);
  if (r) return r;
  if (!hit) {
    g->algo = c[best].algo, g->ws = c[best].ws;
    return NN_OK;
  }
  r = entry_algo(M, g, &e, &g->algo, &g->ws, why, sizeof why);
  return r ? set_err(r, what, why) : NN_OK;
}

extern "C" void nn_tune_summary(int* n, int* changed, double* ms, double* ms0) {
  pthread_mutex_lock(&g_mu);
  *n = g_table.n, *changed = 0, *ms = 0, *ms0 = 0;
  for (int i = 0; i < g_table.n; i++) {
    const NnTuneEntry* e = &g_table.e[i];
    if (e->cand <= 0) continue;
    ++*changed;
    if (e->ms > 0 && e->ms0 > 0) *ms += e->ms, *ms0 += e->ms0;
  }
  pthread_mutex_unlock(&g_mu);
}
