// tb.c: TensorBoard event writer (TFRecord + Event protobuf, encoded by hand).
#define _GNU_SOURCE  // gethostname, fsync
#include "algo/tb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

// ---- CRC32C (Castagnoli polynomial 0x82F63B78, reflected) ----
static uint32_t crc_table[256];
static int crc_ready = 0;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[i] = c;
  }
  crc_ready = 1;
}

uint32_t tb_crc32c_extend(uint32_t crc, const void* data, size_t n) {
  if (!crc_ready) crc_init();
  const uint8_t* p = (const uint8_t*)data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t tb_crc32c(const void* data, size_t n) { return tb_crc32c_extend(0, data, n); }

uint32_t tb_masked_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// ---- protobuf encoding ----
typedef struct {
  uint8_t* p;
  size_t n, cap;
} Buf;

static void put(Buf* b, const void* d, size_t n) {
  if (b->n + n <= b->cap) memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void put_varint(Buf* b, uint64_t x) {
  uint8_t t[10];
  int k = 0;
  do {
    t[k] = (uint8_t)(x & 0x7f);
    x >>= 7;
    if (x) t[k] |= 0x80;
    k++;
  } while (x);
  put(b, t, (size_t)k);
}
static void put_tag(Buf* b, int field, int wire) { put_varint(b, ((uint64_t)field << 3) | (uint64_t)wire); }
static void put_le(Buf* b, uint64_t x, int bytes) {
  uint8_t t[8];
  for (int i = 0; i < bytes; i++) t[i] = (uint8_t)(x >> (8 * i));
  put(b, t, (size_t)bytes);
}
static size_t varint_len(uint64_t x) {
  size_t k = 1;
  while (x >= 0x80) x >>= 7, k++;
  return k;
}

// Summary.Value {tag = 1 (string), simple_value = 2 (float)}
static size_t value_len(const char* tag) {
  size_t tl = strlen(tag);
  return 1 + varint_len(tl) + tl + 1 + 4;
}

size_t tb_encode_event(uint8_t* buf, size_t cap, double wall_time, int64_t step, const char* file_version,
                       const char* const* tags, const double* values, int n) {
  Buf b = {buf, 0, cap};
  uint64_t wt;
  memcpy(&wt, &wall_time, 8);
  put_tag(&b, 1, 1);  // wall_time: double
  put_le(&b, wt, 8);
  if (step) {  // step: int64 (proto3: default 0 not written)
    put_tag(&b, 2, 0);
    put_varint(&b, (uint64_t)step);
  }
  if (file_version) {  // file_version: string
    size_t l = strlen(file_version);
    put_tag(&b, 3, 2);
    put_varint(&b, l);
    put(&b, file_version, l);
  }
  if (n > 0) {  // summary: Summary {repeated Value value = 1}
    size_t sl = 0;
    for (int i = 0; i < n; i++) sl += 1 + varint_len(value_len(tags[i])) + value_len(tags[i]);
    put_tag(&b, 5, 2);
    put_varint(&b, sl);
    for (int i = 0; i < n; i++) {
      size_t tl = strlen(tags[i]);
      put_tag(&b, 1, 2);
      put_varint(&b, value_len(tags[i]));
      put_tag(&b, 1, 2);
      put_varint(&b, tl);
      put(&b, tags[i], tl);
      float v = (float)values[i];
      uint32_t u;
      memcpy(&u, &v, 4);
      put_tag(&b, 2, 5);
      put_le(&b, u, 4);
    }
  }
  return b.n;
}

int tb_write_record(FILE* f, const uint8_t* data, size_t n) {
  uint8_t hdr[12];
  uint64_t len = n;
  for (int i = 0; i < 8; i++) hdr[i] = (uint8_t)(len >> (8 * i));
  uint32_t c1 = tb_masked_crc(tb_crc32c(hdr, 8));
  for (int i = 0; i < 4; i++) hdr[8 + i] = (uint8_t)(c1 >> (8 * i));
  uint32_t c2 = tb_masked_crc(tb_crc32c(data, n));
  uint8_t ftr[4];
  for (int i = 0; i < 4; i++) ftr[i] = (uint8_t)(c2 >> (8 * i));
  if (fwrite(hdr, 1, 12, f) != 12 || fwrite(data, 1, n, f) != n || fwrite(ftr, 1, 4, f) != 4) return -1;
  return 0;
}

// ---- writer ----
struct TbWriter {
  FILE* f;
  char path[4200];
  uint8_t* buf;
  size_t cap;
};

static double now_s(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

int tb_open(TbWriter** out, const char* dir, char* err, size_t errlen) {
  *out = NULL;
  TbWriter* w = (TbWriter*)calloc(1, sizeof(TbWriter));
  if (!w) return -1;
  char host[128] = "localhost";
  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = 0;
  double t = now_s();
  snprintf(w->path, sizeof(w->path), "%s/events.out.tfevents.%lld.%s", dir, (long long)t, host);
  w->f = fopen(w->path, "wb");
  if (!w->f) {
    snprintf(err, errlen, "%s: cannot create: %s", w->path, strerror(errno));
    free(w);
    return -1;
  }
  w->cap = 1 << 16;
  w->buf = (uint8_t*)malloc(w->cap);
  size_t n = tb_encode_event(w->buf, w->cap, t, 0, "brain.Event:2", NULL, NULL, 0);
  if (!w->buf || tb_write_record(w->f, w->buf, n) || fflush(w->f)) {
    snprintf(err, errlen, "%s: write failed", w->path);
    tb_close(w);
    return -1;
  }
  *out = w;
  return 0;
}

int tb_scalars(TbWriter* w, int64_t step, const char* const* tags, const double* values, int n) {
  size_t need = tb_encode_event(NULL, 0, 0, step, NULL, tags, values, n);
  if (need > w->cap) {
    uint8_t* nb = (uint8_t*)realloc(w->buf, need);
    if (!nb) return -1;
    w->buf = nb, w->cap = need;
  }
  size_t len = tb_encode_event(w->buf, w->cap, now_s(), step, NULL, tags, values, n);
  if (tb_write_record(w->f, w->buf, len) || fflush(w->f)) return -1;
  return 0;
}

const char* tb_path(const TbWriter* w) { return w->path; }

void tb_close(TbWriter* w) {
  if (!w) return;
  if (w->f) fclose(w->f);
  free(w->buf);
  free(w);
}
