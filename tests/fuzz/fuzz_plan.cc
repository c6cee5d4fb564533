// libFuzzer target: untrusted plan bytes -> remat_plan_open -> remat_session_create (CPU) ->
// every input and label set -> two steps -> the eval program and its outputs -> parameters read
// back -> state saved and loaded.
//
// What it holds the runtime to (DESIGN.md, "untrusted input never crashes the runtime"): any
// bytes give a status, never a crash, a leak, an out-of-bounds access or undefined behaviour
// (the build is ASan + UBSan, tests/fuzz/meson.build); every status is one remat.h defines;
// every message is NUL-terminated inside its buffer; a plan that opens describes its bindings
// consistently (bytes = elements x dtype size); a session that saved its state loads it back.
//
// Plans whose regions exceed kMaxRegionBytes are opened and queried but get no session: a
// verified plan may ask for terabytes, and the allocator's refusal is tested elsewhere
// (tests/runtime/test_session_api.cc), not worth an out-of-memory report here.
//
// Labels and token ids are small integers, in range for the seeds' models, and for about one
// plan in eight one id out of range (-1 or 1 << 20) that the step must refuse with a status.
//
// Seeds: compiled plans of several templates and strategies, a spilling one among them
// (tests/fuzz/run.sh makes them). Run: tests/fuzz/run.sh, or by hand
//   build-fuzz/tests/fuzz/fuzz_plan CORPUS_DIR SEED_DIR      (docs/fuzzing.md)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "plan/checksum.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"
#include "tests/fuzz/fuzz_inputs.h"

namespace {

constexpr uint64_t kMaxRegionBytes = 4u << 20;
constexpr size_t kMessageCapacity = 256;

[[noreturn]] void fail(const char* what, const char* detail) {
  fprintf(stderr, "fuzz_plan: %s: %s\n", what, detail);
  abort();
}

// A status remat.h defines: remat_status_string knows it (whatever codes the enum has gained).
void check_status(remat_status status, const char* call) {
  const char* text = remat_status_string(status);
  if (text == nullptr) fail(call, "remat_status_string gave NULL");
  if (static_cast<int>(status) < REMAT_OK || strcmp(text, "unknown status") == 0)
    fail(call, "status outside the enum");
}

void check_message(const char* message, const char* call) {
  if (memchr(message, '\0', kMessageCapacity) == nullptr)
    fail(call, "message not NUL-terminated in its buffer");
}

size_t dtype_bytes(remat_dtype dtype) {
  switch (dtype) {
    case REMAT_DTYPE_I64: return 8;
    case REMAT_DTYPE_F32:
    case REMAT_DTYPE_I32: return 4;
    case REMAT_DTYPE_F16:
    case REMAT_DTYPE_BF16: return 2;
  }
  return 0;
}

// FNV-1a of the plan bytes: picks, deterministically per input, the session's variations.
uint32_t hash(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

// Checks what the plan says about its bindings; returns false when a binding is too large to
// allocate here.
bool check_bindings(const remat_plan* plan) {
  for (int kind = REMAT_BINDING_INPUT; kind <= REMAT_BINDING_BUFFER; ++kind) {
    uint32_t count = 0;
    const remat_status status =
        remat_plan_binding_count(plan, static_cast<remat_binding_kind>(kind), &count);
    check_status(status, "remat_plan_binding_count");
    if (status != REMAT_OK) fail("remat_plan_binding_count", "failed on an opened plan");
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      const remat_status got =
          remat_plan_binding(plan, static_cast<remat_binding_kind>(kind), i, &info);
      if (got != REMAT_OK) fail("remat_plan_binding", "failed for an index below the count");
      if (info.name == nullptr) fail("remat_plan_binding", "NULL name");
      (void)strlen(info.name);
      if (info.rank > REMAT_MAX_RANK) fail("remat_plan_binding", "rank above REMAT_MAX_RANK");
      uint64_t elements = 1;
      for (uint32_t d = 0; d < info.rank; ++d) {
        if (info.dims[d] < 0) fail("remat_plan_binding", "negative dimension");
        if (info.dims[d] != 0 && elements > UINT64_MAX / static_cast<uint64_t>(info.dims[d])) {
          fail("remat_plan_binding", "element count overflows");
        }
        elements *= static_cast<uint64_t>(info.dims[d]);
      }
      const size_t item = dtype_bytes(info.dtype);
      if (item == 0) fail("remat_plan_binding", "unknown dtype");
      if (elements > UINT64_MAX / item || elements * item != info.bytes) {
        fail("remat_plan_binding", "bytes is not elements x dtype size");
      }
      if (info.bytes > kMaxRegionBytes) return false;
    }
    remat_tensor_info info;
    if (remat_plan_binding(plan, static_cast<remat_binding_kind>(kind), count, &info) == REMAT_OK) {
      fail("remat_plan_binding", "an index at the count was accepted");
    }
  }
  return true;
}

// Sets every input and label binding; returns false if one was refused.
bool set_inputs(remat_session* session, const remat_plan* plan, bool out_of_range) {
  const remat_status status = set_every_binding(session, plan, out_of_range);
  check_status(status, "remat_session_set_input");
  return status == REMAT_OK;
}

// Reads every binding of |kind| with |read| (named |what|): each read gives a status remat.h
// defines, and REMAT_OK when |must_succeed|.
void read_every(remat_session* session, const remat_plan* plan, remat_binding_kind kind,
                remat_status (*read)(remat_session*, const char*, void*, size_t), const char* what,
                bool must_succeed) {
  uint32_t count = 0;
  remat_plan_binding_count(plan, kind, &count);
  std::vector<uint8_t> bytes;
  for (uint32_t i = 0; i < count; ++i) {
    remat_tensor_info info;
    remat_plan_binding(plan, kind, i, &info);
    bytes.assign(info.bytes, 0);
    const remat_status status = read(session, info.name, bytes.data(), bytes.size());
    check_status(status, what);
    if (must_succeed && status != REMAT_OK) fail(what, remat_session_last_error(session));
  }
}

// Runs the eval program (NOT_FOUND when the plan has none) and reads every output after it.
void evaluate(remat_session* session, const remat_plan* plan) {
  float loss = 0.0f;
  const remat_status status = remat_session_eval(session, &loss);
  check_status(status, "remat_session_eval");
  if (status == REMAT_OK) {
    read_every(session, plan, REMAT_BINDING_OUTPUT, remat_session_read_output,
               "remat_session_read_output", true);
  }
}

int append(void* context, const void* data, size_t bytes) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  out->insert(out->end(), static_cast<const uint8_t*>(data),
              static_cast<const uint8_t*>(data) + bytes);
  return 0;
}

int read_back(void* context, uint64_t offset, void* data, size_t bytes) {
  const auto* in = static_cast<const std::vector<uint8_t>*>(context);
  if (offset > in->size() || bytes > in->size() - offset)
    fail("load_state", "read past the size it was given");
  memcpy(data, in->data() + offset, bytes);
  return 0;
}

// The state saved from |session| loads back into it.
void save_and_load(remat_session* session) {
  uint64_t size = 0;
  if (remat_session_state_size(session, &size) != REMAT_OK)
    fail("remat_session_state_size", "failed");
  if (size > 3 * kMaxRegionBytes + 52)
    fail("remat_session_state_size", "larger than the persistent region allows");
  std::vector<uint8_t> state;
  const remat_status saved = remat_session_save_state(session, append, &state);
  check_status(saved, "remat_session_save_state");
  if (saved != REMAT_OK) return;
  if (state.size() != size) fail("remat_session_save_state", "wrote another size than state_size");
  const remat_status loaded = remat_session_load_state(session, read_back, &state, state.size());
  if (loaded != REMAT_OK) fail("remat_session_load_state", remat_session_last_error(session));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly |size| bytes: malloc's 16-byte alignment is more than the 8 a plan
  // needs, and AddressSanitizer's redzone starts right after the last byte.
  uint8_t* bytes = static_cast<uint8_t*>(malloc(size == 0 ? 1 : size));
  if (size != 0) memcpy(bytes, data, size);
  // Sealed (plan/checksum.h) where FlatBuffers can read the bytes, so that the fuzzer's changes
  // meet the verifier's checks, not only the checksum (test_plan_checksum.cc holds the checksum
  // to refusing every unsealed change).
  if (size >= 8 && remat::fb::PlanBufferHasIdentifier(bytes)) {
    flatbuffers::Verifier verifier(bytes, size, 16, 10000000);
    if (remat::fb::VerifyPlanBuffer(verifier)) remat::seal_plan(bytes, size);
  }
  char message[kMessageCapacity];
  remat_plan* plan = nullptr;
  remat_status status = remat_plan_open(bytes, size, &plan, message, sizeof(message));
  check_status(status, "remat_plan_open");
  check_message(message, "remat_plan_open");
  if (status != REMAT_OK) {
    if (plan != nullptr) fail("remat_plan_open", "failed but gave a plan");
    free(bytes);
    return 0;
  }
  remat_plan_memory_info memory;
  if (remat_plan_memory(plan, &memory) != REMAT_OK)
    fail("remat_plan_memory", "failed on an opened plan");
  const bool small = check_bindings(plan) && memory.arena_bytes <= kMaxRegionBytes &&
                     memory.persistent_bytes <= kMaxRegionBytes &&
                     memory.host_bytes <= kMaxRegionBytes;
  if (small) {
    const uint32_t h = hash(data, size);
    remat_session_options options;
    remat_session_options_init(&options);
    // One plan in four runs in caller regions of exactly the size it needs (the other path
    // through session creation); one in four leaves the parameters uninitialised.
    void* regions[3] = {nullptr, nullptr, nullptr};
    if ((h & 3) == 0 && memory.alignment >= 8 && memory.alignment <= 4096 &&
        (memory.alignment & (memory.alignment - 1)) == 0) {
      const uint64_t sizes[3] = {memory.arena_bytes, memory.persistent_bytes, memory.host_bytes};
      for (int r = 0; r < 3; ++r) {
        if (sizes[r] == 0 || posix_memalign(&regions[r], memory.alignment, sizes[r]) != 0) continue;
        memset(regions[r], 0, sizes[r]);
      }
      options.arena = regions[0];
      options.arena_size = memory.arena_bytes;
      options.persistent = regions[1];
      options.persistent_size = memory.persistent_bytes;
      options.host = regions[2];
      options.host_size = memory.host_bytes;
    }
    if ((h & 12) == 0) options.init_params = 0;
    remat_session* session = nullptr;
    status = remat_session_create(plan, &options, &session, message, sizeof(message));
    check_status(status, "remat_session_create");
    check_message(message, "remat_session_create");
    if (status == REMAT_OK) {
      if (set_inputs(session, plan, (h >> 4 & 7) == 0)) {
        for (int step = 0; step < 2; ++step) {
          float loss = 0.0f;
          status = remat_session_step(session, &loss);
          check_status(status, "remat_session_step");
          if (status != REMAT_OK) break;
        }
        evaluate(session, plan);
      }
      (void)strlen(remat_session_last_error(session));
      read_every(session, plan, REMAT_BINDING_PARAM, remat_session_read_param,
                 "remat_session_read_param", false);
      read_every(session, plan, REMAT_BINDING_BUFFER, remat_session_read_param,
                 "remat_session_read_param", false);
      save_and_load(session);
      remat_session_destroy(session);
    } else if (session != nullptr) {
      fail("remat_session_create", "failed but gave a session");
    }
    for (void* region : regions) free(region);
  }
  remat_plan_close(plan);
  free(bytes);
  return 0;
}
