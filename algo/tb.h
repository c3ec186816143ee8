// tb.h: TensorBoard event files written by our own code: TFRecord framing (length, masked CRC32C of the
// length, data, masked CRC32C of the data) around hand-encoded `Event` protobufs. The first record carries
// file_version "brain.Event:2"; each later record one step's scalars as summary.value{tag, simple_value}.
#ifndef ADJ_ALGO_TB_H
#define ADJ_ALGO_TB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t tb_crc32c(const void* data, size_t n);           // Castagnoli, reflected, init/xorout ~0
uint32_t tb_crc32c_extend(uint32_t crc, const void* data, size_t n);
uint32_t tb_masked_crc(uint32_t crc);                     // ((crc >> 15) | (crc << 17)) + 0xa282ead8

typedef struct TbWriter TbWriter;
// Creates DIR/events.out.tfevents.<unix seconds>.<host> and writes the file_version event.
int tb_open(TbWriter** out, const char* dir, char* err, size_t errlen);
// One event with n scalars at `step` (wall_time = now). Flushed after each call.
int tb_scalars(TbWriter* w, int64_t step, const char* const* tags, const double* values, int n);
const char* tb_path(const TbWriter* w);
void tb_close(TbWriter* w);

// Encoders (exposed for tests): write one framed record / an Event into buf; return bytes written.
size_t tb_encode_event(uint8_t* buf, size_t cap, double wall_time, int64_t step, const char* file_version,
                       const char* const* tags, const double* values, int n);
int tb_write_record(FILE* f, const uint8_t* data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
