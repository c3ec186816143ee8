// nn_tune_parse: the NN_CUDA_TUNE table file (nn/nn_tune_table.h) without a GPU. A valid file parses into the
// expected entries and survives format -> parse and an atomic save -> load unchanged; every kind of malformed
// file is refused with NN_EFORMAT (NN_EIO when unreadable), a message naming the line and the problem, and the
// table left as it was.
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <unistd.h>

#include "nn/nn_tune_table.h"
#include "tests/test.h"

#define KEY1                                                                                                     \
  "gpu=NVIDIA_H200 sms=132 lt=130100 prec=fp32 op=TN m=512 n=4096 k=160 lda=160 ldb=160 ldc=512 count=1 sa=0 sb=0 " \
  "sc=0 epi=bias red=ordered"
#define RAW \
  " ws=0 raw=0000000000000006000000000000001200000000000000000000000000000000" \
  "0000000000000000000000000000000000000000000000000000000000000000"
#define ALGO1 " algo=6 tile=18 splitk=1 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW
#define KEY2                                                                                                      \
  "gpu=NVIDIA_H200 sms=132 lt=130100 prec=tf32 op=NT m=160 n=512 k=1024 lda=160 ldb=512 ldc=160 count=4 sa=163840 " \
  "sb=524288 sc=81920 epi=none red=ordered"
#define ALGO2                                                                                       \
  " algo=21 tile=15 splitk=3 rscheme=2 swizzle=1 custom=1 stages=22 inner=0 cluster=2 ws=4194304 raw=" \
  "0000000000000015FFFFFFFFFFFFFFFF0123456789ABCDEF0000000000000003" \
  "0000000000000000000000000000000000000000000000000000000000000007"
#define HEAD "adjoint-nn-tune 1\n"

static const char* VALID =
    "# a comment\n"
    "\n" HEAD KEY1 ALGO1 " ms=0.010000 ms0=0.012500 cand=2/9\r\n"
    "   # indented comment\n" KEY2 ALGO2 "\n";

static int entries_equal(const NnTuneEntry* a, const NnTuneEntry* b) {
  return nn_tune_key_equal(&a->key, &b->key) && !memcmp(&a->algo, &b->algo, sizeof a->algo) && a->cand == b->cand &&
         a->ncand == b->ncand && a->ms == b->ms && a->ms0 == b->ms0 && a->ws == b->ws &&
         !memcmp(a->raw, b->raw, sizeof a->raw);
}

static int tables_equal(const NnTuneTable* a, const NnTuneTable* b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const NnTuneEntry* e = nn_tune_table_find(b, &a->e[i].key);
    if (!e || !entries_equal(&a->e[i], e)) return 0;
  }
  return 1;
}

// text must be refused with NN_EFORMAT, a message containing `want`, and t unchanged
static void bad(NnTuneTable* t, const char* label, const char* text, const char* want) {
  char err[256] = "";
  int n0 = t->n;
  int r = nn_tune_table_parse(t, text, "f.txt", err, sizeof err);
  TEST_CHECK(r == NN_EFORMAT, "%s: expected NN_EFORMAT, got %d (%s)", label, r, err);
  TEST_CHECK(strstr(err, want) != NULL, "%s: message '%s' lacks '%s'", label, err, want);
  TEST_CHECK(t->n == n0, "%s: table changed (%d -> %d entries)", label, n0, t->n);
  printf("  refused %-28s %s\n", label, err);
}

int main(void) {
  NnTuneTable t = {NULL, 0, 0};
  char err[256] = "";
  int r = nn_tune_table_parse(&t, VALID, "valid", err, sizeof err);
  TEST_CHECK(r == NN_OK, "valid text: %d %s", r, err);
  TEST_CHECK(t.n == 2, "entries %d", t.n);
  if (t.n == 2) {
    const NnTuneEntry *a = &t.e[0], *b = &t.e[1];
    TEST_CHECK(!strcmp(a->key.gpu, "NVIDIA_H200") && a->key.sms == 132 && a->key.lt == 130100 && !a->key.tf32,
               "entry 1 device/precision");
    TEST_CHECK(a->key.ta == 1 && a->key.tb == 0 && a->key.m == 512 && a->key.n == 4096 && a->key.k == 160 &&
                   a->key.lda == 160 && a->key.ldb == 160 && a->key.ldc == 512 && a->key.count == 1 && a->key.bias == 1 &&
                   a->key.splitk == 1,
               "entry 1 shape");
    TEST_CHECK(a->algo.id == 6 && a->algo.tile == 18 && a->algo.splitk_num == 1 && a->cand == 2 && a->ncand == 9 &&
                   a->ms == 0.01 && a->ms0 == 0.0125,
               "entry 1 algorithm and notes");
    TEST_CHECK(b->key.tf32 == 1 && b->key.ta == 0 && b->key.tb == 1 && b->key.count == 4 && b->key.sa == 163840 &&
                   b->key.sb == 524288 && b->key.sc == 81920 && b->key.bias == 0,
               "entry 2 key");
    TEST_CHECK(b->algo.id == 21 && b->algo.splitk_num == 3 && b->algo.reduction == 2 && b->algo.swizzle == 1 &&
                   b->algo.stages == 22 && b->algo.cluster == 2 && b->ncand == 0 && b->ms == 0,
               "entry 2 algorithm");
    TEST_CHECK(a->raw[0] == 6 && a->raw[1] == 18 && a->raw[7] == 0 && a->ws == 0, "entry 1 raw words");
    TEST_CHECK(b->raw[0] == 21 && b->raw[1] == 0xFFFFFFFFFFFFFFFFull && b->raw[2] == 0x0123456789abcdefull &&
                   b->raw[3] == 3 && b->raw[7] == 7 && b->ws == 4194304,
               "entry 2 raw words, upper-case hex");
  }
  // gpu names are stored with '_' for spaces, so a key built from the device name matches
  NnTuneKey k;
  memset(&k, 0, sizeof k);
  if (t.n) k = t.e[0].key;
  nn_tune_key_set_gpu(&k, "NVIDIA H200");
  TEST_CHECK(t.n && nn_tune_table_find(&t, &k) == &t.e[0], "lookup with the device's own name");

  // format -> parse round trip
  char* text;
  size_t len;
  TEST_CHECK(nn_tune_table_format(&t, &text, &len) == NN_OK && strlen(text) == len, "format");
  NnTuneTable u = {NULL, 0, 0};
  r = nn_tune_table_parse(&u, text, "formatted", err, sizeof err);
  TEST_CHECK(r == NN_OK && tables_equal(&t, &u), "format -> parse round trip: %d %s", r, err);
  free(text);
  // merging: an entry with the same key replaces, a new one is added
  char merge[1024];
  snprintf(merge, sizeof merge, HEAD KEY1 " algo=7 tile=1 splitk=1 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n");
  r = nn_tune_table_parse(&u, merge, "merge", err, sizeof err);
  TEST_CHECK(r == NN_OK && u.n == 2 && nn_tune_table_find(&u, &t.e[0].key)->algo.id == 7, "merge replaces: %s", err);
  nn_tune_table_free(&u);
  // splitk=-1 is what cuBLASLt reports for kernels without a split-K count (written so by the H200's tuner)
  snprintf(merge, sizeof merge, HEAD KEY1 " algo=7 tile=1 splitk=-1 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n");
  r = nn_tune_table_parse(&u, merge, "splitk-1", err, sizeof err);
  TEST_CHECK(r == NN_OK && u.n == 1 && u.e[0].algo.splitk_num == -1, "splitk=-1 accepted: %d %s", r, err);
  nn_tune_table_free(&u);

  // atomic save + load
  char path[] = "/tmp/nn_tune_parse_XXXXXX";
  int fd = mkstemp(path);
  TEST_CHECK(fd >= 0, "mkstemp");
  if (fd >= 0) close(fd);
  r = nn_tune_table_save(&t, path, err, sizeof err);
  TEST_CHECK(r == NN_OK, "save: %s", err);
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  TEST_CHECK(access(tmp, F_OK) != 0, "temporary file left behind");
  r = nn_tune_table_load(&u, path, err, sizeof err);
  TEST_CHECK(r == NN_OK && tables_equal(&t, &u), "save -> load round trip: %d %s", r, err);
  nn_tune_table_free(&u);
  // malformed file on disk: error with the path and line
  FILE* f = fopen(path, "w");
  if (f) fputs(HEAD "gpu=x\n", f), fclose(f);
  r = nn_tune_table_load(&u, path, err, sizeof err);
  TEST_CHECK(r == NN_EFORMAT && strstr(err, path) && strstr(err, ":2:") && u.n == 0, "malformed file: %d %s", r, err);
  printf("  refused %-28s %s\n", "malformed file", err);
  unlink(path);
  r = nn_tune_table_load(&u, path, err, sizeof err);
  TEST_CHECK(r == NN_EIO && strstr(err, path) && strstr(err, "cannot open"), "missing file: %d %s", r, err);
  printf("  refused %-28s %s\n", "missing file", err);

  // malformed texts (t has 2 entries and must keep them)
  static char buf[4096];
  bad(&t, "empty", "", "empty");
  bad(&t, "comments only", "# nothing\n\n", "empty");
  bad(&t, "no header", KEY1 ALGO1 "\n", "f.txt:1: expected the header");
  bad(&t, "wrong magic", "adjoint-nn-tuning 1\n", "expected the header");
  bad(&t, "future version", "adjoint-nn-tune 2\n", "format version 2");
  bad(&t, "header junk", "adjoint-nn-tune 1 x\n", "expected the header");
  bad(&t, "token without =", HEAD KEY1 ALGO1 " stray\n", "f.txt:2: expected key=value, got 'stray'");
  bad(&t, "unknown key", HEAD KEY1 ALGO1 " speed=3\n", "unknown key 'speed'");
  bad(&t, "duplicate key", HEAD KEY1 ALGO1 " m=512\n", "key 'm' given twice");
  bad(&t, "missing key", HEAD "gpu=A sms=1 lt=1 prec=fp32 m=1 n=1 k=1 lda=1 ldb=1 ldc=1 count=1 sa=0 sb=0 sc=0 epi=none red=none" ALGO1 "\n",
      "missing key 'op'");
  snprintf(buf, sizeof buf, HEAD "%s", KEY1 ALGO1 "\n");
  *strstr(buf, " tile=18") = 0;
  bad(&t, "truncated line", buf, "missing key 'tile'");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, "m=512"), "m=5x2", 5);
  bad(&t, "bad integer", buf, "bad integer for 'm': '5x2'");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, "n=4096"), "n=-096", 6);
  bad(&t, "negative size", buf, "must be positive");
  bad(&t, "int overflow", HEAD KEY1 " algo=99999999999 tile=18 splitk=1 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n",
      "bad integer for 'algo'");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, "prec=fp32"), "prec=fp16", 9);
  bad(&t, "bad precision", buf, "prec must be fp32 or tf32");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, "op=TN"), "op=TX", 5);
  bad(&t, "bad op", buf, "op must be NN, NT, TN or TT");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, "epi=bias"), "epi=relu", 8);
  bad(&t, "bad epilogue", buf, "epi must be bias or none");
  bad(&t, "splitk 0", HEAD KEY1 " algo=6 tile=18 splitk=0 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n",
      "splitk must be");
  bad(&t, "splitk -2", HEAD KEY1 " algo=6 tile=18 splitk=-2 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n",
      "splitk must be");
  bad(&t, "atomics reduction", HEAD KEY1 " algo=6 tile=18 splitk=4 rscheme=1 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n",
      "not deterministic");
  bad(&t, "unknown reduction", HEAD KEY1 " algo=6 tile=18 splitk=4 rscheme=3 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n",
      "rscheme must be 0, 2 or 4");
  bad(&t, "split-K without reduction", HEAD KEY1 " algo=6 tile=18 splitk=4 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n",
      "needs a reduction scheme");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 " algo=6 tile=18 splitk=2 rscheme=2 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n");
  memcpy(strstr(buf, "red=ordered"), "red=none   ", 11);
  bad(&t, "split-K where forbidden", buf, "red=none allows only splitk=1");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, "lda=160"), "lda=100", 7);
  bad(&t, "leading dimension", buf, "leading dimension");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, "sa=0"), "sa=9", 4);
  bad(&t, "stride without batch", buf, "batch strides with count=1");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  *strstr(buf, " raw=") = 0;
  bad(&t, "missing raw", buf, "missing key 'raw'");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  strstr(buf, " raw=")[10] = 'g';
  bad(&t, "raw not hex", buf, "raw: not a hex digit at position 6");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  strcpy(strstr(buf, " raw=") + 20, "\n");
  bad(&t, "raw too short", buf, "got 15 characters");
  snprintf(buf, sizeof buf, "%s", HEAD KEY1 ALGO1 "\n");
  memcpy(strstr(buf, " ws=0"), " ws=-", 5);
  bad(&t, "bad ws", buf, "bad integer for 'ws'");
  bad(&t, "bad note", HEAD KEY1 ALGO1 " ms=fast\n", "bad number for 'ms'");
  bad(&t, "bad cand", HEAD KEY1 ALGO1 " cand=9/9\n", "cand must be I/N");
  bad(&t, "duplicate entry", HEAD KEY1 ALGO1 "\n#\n" KEY1 ALGO1 "\n", "f.txt:4: same key as line 2");
  bad(&t, "long gpu name",
      HEAD "gpu=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA sms=1" ALGO1 "\n",
      "'gpu' must have 1 to 63 characters");
  memset(buf, 'x', 2000);
  memcpy(buf, HEAD, strlen(HEAD));
  buf[2000] = 0;
  bad(&t, "overlong line", buf, "f.txt:2: line longer than");
  // an error after valid lines adds nothing either
  bad(&t, "valid then invalid", HEAD KEY1 " algo=8 tile=18 splitk=1 rscheme=0 swizzle=0 custom=0 stages=0 inner=0 cluster=0" RAW "\n" KEY2 "\n",
      "f.txt:3: missing key 'algo'");
  TEST_CHECK(t.n == 2 && t.e[0].algo.id == 6, "table unchanged after refused texts");
  nn_tune_table_free(&t);
  return test_report("nn_tune_parse");
}
