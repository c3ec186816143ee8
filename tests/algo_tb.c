// algo_tb: TensorBoard event files. CRC32C against the RFC 3720 / iSCSI test vectors and "123456789", the
// masked CRC, and a written event file read back record by record (length + masked CRCs + Event protobuf
// decoded by a small independent reader: file_version first, then summary.value{tag, simple_value}).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/tb.h"
#include "tests/test.h"

static uint64_t rd_varint(const uint8_t** p, const uint8_t* end) {
  uint64_t x = 0;
  int s = 0;
  while (*p < end) {
    uint8_t b = *(*p)++;
    x |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) break;
    s += 7;
  }
  return x;
}

typedef struct {
  double wall_time;
  int64_t step;
  char file_version[64];
  int nvalues;
  char tags[8][64];
  float values[8];
} Ev;

static int decode_event(const uint8_t* p, size_t n, Ev* ev) {
  const uint8_t* end = p + n;
  memset(ev, 0, sizeof(*ev));
  while (p < end) {
    uint64_t key = rd_varint(&p, end);
    int field = (int)(key >> 3), wire = (int)(key & 7);
    if (field == 1 && wire == 1) {
      memcpy(&ev->wall_time, p, 8);
      p += 8;
    } else if (field == 2 && wire == 0) {
      ev->step = (int64_t)rd_varint(&p, end);
    } else if (field == 3 && wire == 2) {
      uint64_t l = rd_varint(&p, end);
      memcpy(ev->file_version, p, l < 63 ? l : 63);
      p += l;
    } else if (field == 5 && wire == 2) {
      uint64_t l = rd_varint(&p, end);
      const uint8_t* se = p + l;
      while (p < se) {
        uint64_t k = rd_varint(&p, se);
        if (k != ((1 << 3) | 2)) return -1;
        uint64_t vl = rd_varint(&p, se);
        const uint8_t* ve = p + vl;
        int i = ev->nvalues++;
        while (p < ve) {
          uint64_t vk = rd_varint(&p, ve);
          if (vk == ((1 << 3) | 2)) {
            uint64_t tl = rd_varint(&p, ve);
            memcpy(ev->tags[i], p, tl < 63 ? tl : 63);
            p += tl;
          } else if (vk == ((2 << 3) | 5)) {
            memcpy(&ev->values[i], p, 4);
            p += 4;
          } else {
            return -1;
          }
        }
      }
    } else {
      return -1;
    }
  }
  return 0;
}

static uint32_t le32(const uint8_t* p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

int main(void) {
  // CRC32C test vectors (RFC 3720 B.4)
  uint8_t buf[32];
  TEST_CHECK(tb_crc32c("123456789", 9) == 0xE3069283u, "crc32c('123456789') = %08x", tb_crc32c("123456789", 9));
  memset(buf, 0, 32);
  TEST_CHECK(tb_crc32c(buf, 32) == 0x8A9136AAu, "crc32c(32 zeros) = %08x", tb_crc32c(buf, 32));
  memset(buf, 0xff, 32);
  TEST_CHECK(tb_crc32c(buf, 32) == 0x62A8AB43u, "crc32c(32 x 0xff) = %08x", tb_crc32c(buf, 32));
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
  TEST_CHECK(tb_crc32c(buf, 32) == 0x46DD794Eu, "crc32c(0..31) = %08x", tb_crc32c(buf, 32));
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
  TEST_CHECK(tb_crc32c(buf, 32) == 0x113FDB5Cu, "crc32c(31..0) = %08x", tb_crc32c(buf, 32));
  TEST_CHECK(tb_crc32c_extend(tb_crc32c("1234", 4), "56789", 5) == 0xE3069283u, "crc32c extend");
  TEST_CHECK(tb_crc32c("", 0) == 0, "crc32c(empty)");
  // masked CRC (TensorFlow's crc32c::Mask): rotate right by 15, add 0xa282ead8
  TEST_CHECK(tb_masked_crc(0) == 0xa282ead8u, "mask(0)");
  TEST_CHECK(tb_masked_crc(0xE3069283u) == (((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u), "mask");

  // write a file, read it back
  char dir[] = "/tmp/algo_tb_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  TbWriter* w;
  char err[512];
  TEST_CHECK(tb_open(&w, dir, err, sizeof(err)) == 0, "tb_open: %s", err);
  const char* tags[3] = {"train/return", "ppo/loss_value", "perf/env_steps_per_s"};
  double v1[3] = {1.5, -0.25, 12345.0}, v2[3] = {2.5, 1e-3, 300.0};
  tb_scalars(w, 1, tags, v1, 3);
  tb_scalars(w, 200, tags, v2, 3);
  char path[4300];
  snprintf(path, sizeof(path), "%s", tb_path(w));
  tb_close(w);
  FILE* f = fopen(path, "rb");
  TEST_CHECK(f != NULL, "open %s", path);
  if (f) {
    uint8_t data[4096];
    int rec = 0;
    for (;;) {
      uint8_t hdr[12];
      if (fread(hdr, 1, 12, f) != 12) break;
      uint64_t len = 0;
      for (int i = 0; i < 8; i++) len |= (uint64_t)hdr[i] << (8 * i);
      TEST_CHECK(le32(hdr + 8) == tb_masked_crc(tb_crc32c(hdr, 8)), "record %d: length CRC", rec);
      TEST_CHECK(len < sizeof(data), "record %d: length %llu", rec, (unsigned long long)len);
      if (len >= sizeof(data) || fread(data, 1, len, f) != len) break;
      uint8_t ftr[4];
      if (fread(ftr, 1, 4, f) != 4) break;
      TEST_CHECK(le32(ftr) == tb_masked_crc(tb_crc32c(data, len)), "record %d: data CRC", rec);
      Ev ev;
      TEST_CHECK(decode_event(data, len, &ev) == 0, "record %d: protobuf decode", rec);
      TEST_CHECK(ev.wall_time > 1.6e9, "record %d: wall_time %f", rec, ev.wall_time);
      if (rec == 0) {
        TEST_CHECK(!strcmp(ev.file_version, "brain.Event:2") && ev.nvalues == 0, "first record: file_version");
      } else {
        const double* v = rec == 1 ? v1 : v2;
        TEST_CHECK(ev.step == (rec == 1 ? 1 : 200), "record %d: step %lld", rec, (long long)ev.step);
        TEST_CHECK(ev.nvalues == 3, "record %d: %d values", rec, ev.nvalues);
        for (int i = 0; i < 3 && i < ev.nvalues; i++) {
          TEST_CHECK(!strcmp(ev.tags[i], tags[i]), "record %d: tag '%s'", rec, ev.tags[i]);
          TEST_CHECK(ev.values[i] == (float)v[i], "record %d: value %g != %g", rec, ev.values[i], v[i]);
        }
      }
      rec++;
    }
    TEST_CHECK(rec == 3, "%d records, expected 3", rec);
    fclose(f);
  }
  unlink(path);
  rmdir(dir);
  return test_report("algo_tb");
}
