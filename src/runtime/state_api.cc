// C ABI of training states: their size, saving through a writer callback, loading (checked
// whole, then copied in) through a reader callback. Layout, all integers little-endian:
//
//   0   "RMST"                      magic
//   4   u32 state format version    kStateFormat
//   8   u32 plan format version     the plan's format_version
//   12  u32 plan CRC32C             of the plan bytes: the plan's fingerprint
//   16  u64 plan size               bytes
//   24  u64 step count              steps completed
//   32  u32 tensor count            persistent params and optimizer state, in plan order
//   36  u32 zero                    reserved
//   40  u64 payload bytes           the sum of their sizes
//   48  payload                     each tensor's bytes, in plan order
//   end u32 CRC32C                  of every byte before it
#include <string.h>

#include "plan/crc32c.h"
#include "runtime/session.h"

using remat::ErrorBuffer;
using remat::set_error;

namespace {

constexpr uint32_t kStateFormat = 1;
constexpr size_t kHeaderBytes = 48;
constexpr size_t kTrailerBytes = 4;
// Bytes moved per callback and backend copy: on the stack, small enough for firmware.
constexpr size_t kChunk = 1024;

#define FAIL(session, status, ...) set_error(&(session)->err, (status), __VA_ARGS__)

// The tensors a state holds: persistent parameters and optimizer state (not the loss).
bool in_state(const remat::fb::Tensor* t) {
  return t->region() == remat::fb::Region::Persistent &&
         (t->role() == remat::fb::Role::Param || t->role() == remat::fb::Role::State);
}

struct Contents {
  uint32_t tensors = 0;
  uint64_t payload = 0;
};

Contents contents(const remat_plan* plan) {
  Contents c;
  const auto* tensors = plan->root->tensors();
  for (uint32_t t = 0; t < tensors->size(); ++t) {
    if (!in_state(tensors->Get(t))) continue;
    ++c.tensors;
    c.payload += tensors->Get(t)->size();
  }
  return c;
}

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The header |session| writes; its step count is |step|.
void make_header(const remat_session* s, uint64_t step, uint8_t* h) {
  const Contents c = contents(s->plan);
  memset(h, 0, kHeaderBytes);
  memcpy(h, "RMST", 4);
  put32(h + 4, kStateFormat);
  put32(h + 8, s->plan->root->format_version());
  put32(h + 12, remat::crc32c(0, s->plan->bytes, s->plan->size));
  put64(h + 16, s->plan->size);
  put64(h + 24, step);
  put32(h + 32, c.tensors);
  put64(h + 40, c.payload);
}

uint64_t state_bytes(const remat_plan* plan) {
  return kHeaderBytes + contents(plan).payload + kTrailerBytes;
}

// Reads |bytes| at |offset| through the caller's reader.
remat_status read_at(remat_session* s, remat_state_read_fn read, void* context, uint64_t offset,
                     void* data, size_t bytes) {
  if (read(context, offset, data, bytes) == 0) return REMAT_OK;
  return FAIL(s, REMAT_ERROR_CALLBACK, "load_state: the reader failed for %zu bytes at offset %llu",
              bytes, static_cast<unsigned long long>(offset));
}

// Checks |given|, the header read from a state, against the one |s| would write; the step
// count is the state's own.
remat_status check_header(remat_session* s, const uint8_t* given, uint64_t size) {
  uint8_t want[kHeaderBytes];
  make_header(s, 0, want);
  if (memcmp(given, "RMST", 4) != 0) {
    return FAIL(s, REMAT_ERROR_DATA_LOSS, "load_state: not a remat state (no 'RMST' at byte 0)");
  }
  if (get32(given + 4) != kStateFormat) {
    return FAIL(s, REMAT_ERROR_STATE_MISMATCH, "load_state: state format %u, this library reads %u",
                static_cast<unsigned>(get32(given + 4)), static_cast<unsigned>(kStateFormat));
  }
  if (get32(given + 8) != get32(want + 8) || get32(given + 12) != get32(want + 12) ||
      get64(given + 16) != get64(want + 16)) {
    return FAIL(
        s, REMAT_ERROR_STATE_MISMATCH,
        "load_state: the state is of another plan (plan format %u, CRC32C %08x, %llu bytes); "
        "this session's plan is format %u, CRC32C %08x, %llu bytes",
        static_cast<unsigned>(get32(given + 8)), static_cast<unsigned>(get32(given + 12)),
        static_cast<unsigned long long>(get64(given + 16)), static_cast<unsigned>(get32(want + 8)),
        static_cast<unsigned>(get32(want + 12)), static_cast<unsigned long long>(get64(want + 16)));
  }
  if (get32(given + 36) != 0) {
    return FAIL(s, REMAT_ERROR_DATA_LOSS,
                "load_state: the reserved header word at byte 36 is %u, expected 0",
                static_cast<unsigned>(get32(given + 36)));
  }
  if (get32(given + 32) != get32(want + 32) || get64(given + 40) != get64(want + 40) ||
      size != state_bytes(s->plan)) {
    return FAIL(
        s, REMAT_ERROR_DATA_LOSS,
        "load_state: the state of this plan holds %u tensors of %llu bytes (%llu in all); "
        "this one says %u tensors of %llu bytes and is %llu bytes",
        static_cast<unsigned>(get32(want + 32)), static_cast<unsigned long long>(get64(want + 40)),
        static_cast<unsigned long long>(state_bytes(s->plan)),
        static_cast<unsigned>(get32(given + 32)),
        static_cast<unsigned long long>(get64(given + 40)), static_cast<unsigned long long>(size));
  }
  return REMAT_OK;
}

// Calls |visit|(tensor index, ref, byte offset in the tensor, bytes) for each chunk of at most
// kChunk bytes of the state's tensors, in state order; stops at the first status that is not OK.
template <typename Visit>
remat_status for_each_chunk(remat_session* s, Visit visit) {
  const auto* tensors = s->plan->root->tensors();
  for (uint32_t t = 0; t < tensors->size(); ++t) {
    if (!in_state(tensors->Get(t))) continue;
    const remat::TensorRef& ref = s->tensors[t];
    for (uint64_t done = 0; done < ref.bytes;) {
      const size_t n = ref.bytes - done < kChunk ? static_cast<size_t>(ref.bytes - done) : kChunk;
      const remat_status status = visit(t, ref, done, n);
      if (status != REMAT_OK) return status;
      done += n;
    }
  }
  return REMAT_OK;
}

// Reads the payload at kHeaderBytes chunk by chunk, adding it to *|crc|; with |upload|, also
// copies each tensor's chunks into the session's persistent region.
remat_status pass_over_payload(remat_session* s, remat_state_read_fn read, void* context,
                               bool upload, uint32_t* crc) {
  uint8_t chunk[kChunk];
  uint64_t offset = kHeaderBytes;
  return for_each_chunk(s, [&](uint32_t, const remat::TensorRef& ref, uint64_t done, size_t n) {
    remat_status status = read_at(s, read, context, offset, chunk, n);
    if (status == REMAT_OK && upload)
      status = s->backend->upload(ref.region, ref.offset + done, chunk, n, &s->err);
    if (status != REMAT_OK) return status;
    *crc = remat::crc32c(*crc, chunk, n);
    offset += n;
    return REMAT_OK;
  });
}

}  // namespace

extern "C" {

remat_status remat_session_state_size(const remat_session* s, uint64_t* out_bytes) {
  if (s == nullptr || out_bytes == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  *out_bytes = state_bytes(s->plan);
  return REMAT_OK;
}

remat_status remat_session_save_state(remat_session* s, remat_state_write_fn write, void* context) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (write == nullptr) return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "save_state: write is NULL");
  if (s->partly_loaded) {
    return FAIL(s, REMAT_ERROR_FAILED_PRECONDITION,
                "save_state: a load_state failed midway; load a state first");
  }
  uint8_t chunk[kChunk];
  static_assert(kChunk >= kHeaderBytes, "the header goes out in one chunk");
  make_header(s, s->step, chunk);
  uint32_t crc = remat::crc32c(0, chunk, kHeaderBytes);
  if (write(context, chunk, kHeaderBytes) != 0) {
    return FAIL(s, REMAT_ERROR_CALLBACK, "save_state: the writer failed on the header");
  }
  const remat_status status =
      for_each_chunk(s, [&](uint32_t t, const remat::TensorRef& ref, uint64_t done, size_t n) {
        const remat_status copied =
            s->backend->download(ref.region, ref.offset + done, chunk, n, &s->err);
        if (copied != REMAT_OK) return copied;
        crc = remat::crc32c(crc, chunk, n);
        if (write(context, chunk, n) == 0) return REMAT_OK;
        return FAIL(s, REMAT_ERROR_CALLBACK, "save_state: the writer failed in tensor '%s'",
                    s->plan->root->tensors()->Get(t)->name()->c_str());
      });
  if (status != REMAT_OK) return status;
  uint8_t trailer[kTrailerBytes];
  put32(trailer, crc);
  if (write(context, trailer, kTrailerBytes) != 0) {
    return FAIL(s, REMAT_ERROR_CALLBACK, "save_state: the writer failed on the checksum");
  }
  return REMAT_OK;
}

remat_status remat_session_load_state(remat_session* s, remat_state_read_fn read, void* context,
                                      uint64_t size) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (read == nullptr) return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "load_state: read is NULL");
  if (size < kHeaderBytes + kTrailerBytes) {
    return FAIL(s, REMAT_ERROR_DATA_LOSS,
                "load_state: %llu bytes is too short for a state (at least %zu)",
                static_cast<unsigned long long>(size), kHeaderBytes + kTrailerBytes);
  }
  // First pass: the whole state is checked; the session is not touched.
  uint8_t header[kHeaderBytes];
  remat_status status = read_at(s, read, context, 0, header, kHeaderBytes);
  if (status == REMAT_OK) status = check_header(s, header, size);
  uint32_t crc = remat::crc32c(0, header, kHeaderBytes);
  if (status == REMAT_OK) status = pass_over_payload(s, read, context, false, &crc);
  uint8_t trailer[kTrailerBytes];
  if (status == REMAT_OK)
    status = read_at(s, read, context, size - kTrailerBytes, trailer, kTrailerBytes);
  if (status != REMAT_OK) return status;
  if (get32(trailer) != crc) {
    return FAIL(s, REMAT_ERROR_DATA_LOSS,
                "load_state: checksum %08x, the bytes give %08x: the state is corrupt",
                static_cast<unsigned>(get32(trailer)), static_cast<unsigned>(crc));
  }
  // Second pass: copy in, checking that the reader gives the same bytes again.
  s->partly_loaded = true;
  uint32_t again = remat::crc32c(0, header, kHeaderBytes);
  status = pass_over_payload(s, read, context, true, &again);
  if (status != REMAT_OK) {
    char why[REMAT_SESSION_ERROR_CAPACITY];
    memcpy(why, s->error, sizeof(why));
    return FAIL(s, status,
                "%s; the session is partly loaded and will not step until a load succeeds", why);
  }
  if (again != crc) {
    return FAIL(
        s, REMAT_ERROR_DATA_LOSS,
        "load_state: the reader gave other bytes the second time (checksum %08x, then %08x); "
        "the session is partly loaded and will not step until a load succeeds",
        static_cast<unsigned>(crc), static_cast<unsigned>(again));
  }
  s->partly_loaded = false;
  s->step = get64(header + 24);
  // The state's loss scale from the next step on; a state holding a bad one is not loaded.
  const remat_status scale = remat::load_loss_scale(s, /*zero_is_unset=*/false);
  if (scale != REMAT_OK) s->partly_loaded = true;
  return scale;
}

}  // extern "C"
