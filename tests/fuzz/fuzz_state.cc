// libFuzzer target: untrusted training-state bytes -> remat_session_load_state, through a read
// callback, into a session of one fixed plan (kModel, compiled once at start-up by the compiler
// library), then a step.
//
// Input: one control byte, then the state bytes.
//   bit 0  overwrite the state's plan fingerprint (bytes 8..23) with the session's, so that
//          mutations get past the STATE_MISMATCH check
//   bit 1  rewrite the trailing CRC32C to match the bytes before it, so that they get past the
//          DATA_LOSS check
//   bit 2  the reader fails at call N of the second pass (the copy into the session)
//   bit 3  the reader returns one flipped bit at call N of the second pass
//   N = the control byte >> 4. The second pass starts after the reader has given the trailer.
//
// What it holds the runtime to (include/remat/remat.h, docs/state.md): any bytes give OK,
// STATE_MISMATCH, DATA_LOSS or CALLBACK, never a crash, a leak or undefined behaviour (ASan +
// UBSan build); the library never reads outside the size it was given; after a failed load
// the session steps as before, unless the message says it is partly loaded, in which case
// step and save refuse with FAILED_PRECONDITION; after a successful load it steps (its step
// count grows by one, whatever the loss of loaded bytes turns out to be). Each input
// starts from the same session contents: a state saved at start-up is loaded back after it.
//
// Seeds: states of this very plan saved by `remat train PLAN --state FILE` after a few steps,
// behind control bytes 0x00, 0x03, 0x14 and 0x28 (tests/fuzz/run.sh makes them). With
// REMAT_FUZZ_WRITE_PLAN=FILE set, start-up writes the plan there first, for those trainings.
// Run: tests/fuzz/run.sh, or by hand
//   build-fuzz/tests/fuzz/fuzz_state CORPUS_DIR SEED_DIR      (docs/fuzzing.md)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <exception>
#include <vector>

#include "compiler/compiler.h"
#include "plan/crc32c.h"
#include "remat/remat.h"
#include "tests/fuzz/fuzz_inputs.h"

namespace {

// Small, with dropout and Adam: the state holds parameters and both moments.
constexpr const char* kModel = "mlp:layers=2,width=8,in=4,classes=3,dropout=0.1";
constexpr const char* kOptimizer = "adam:lr=0.01";
constexpr int64_t kBatch = 2;

[[noreturn]] void fail(const char* what, const char* detail) {
  fprintf(stderr, "fuzz_state: %s: %s\n", what, detail);
  abort();
}

struct Fixture {
  std::vector<uint8_t> plan_bytes;
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;
  std::vector<uint8_t> good;  // the state every input starts from
};
Fixture* fixture = nullptr;

// The reader: |state|, failing or lying at one call of the second pass when told to.
struct Reader {
  const std::vector<uint8_t>* state = nullptr;
  bool second_pass = false;
  uint32_t second_pass_calls = 0;
  bool fail = false, flip = false;
  uint32_t at = 0;
};

int read(void* context, uint64_t offset, void* data, size_t bytes) {
  Reader* r = static_cast<Reader*>(context);
  const std::vector<uint8_t>& state = *r->state;
  if (offset > state.size() || bytes > state.size() - offset)
    fail("load_state", "read past the size it was given");
  memcpy(data, state.data() + offset, bytes);
  if (r->second_pass) {
    const uint32_t call = r->second_pass_calls++;
    if (r->fail && call == r->at) return 1;
    if (r->flip && call == r->at && bytes > 0) static_cast<uint8_t*>(data)[bytes / 2] ^= 0x10;
  }
  if (offset + bytes == state.size() && bytes == 4) r->second_pass = true;
  return 0;
}

int append(void* context, const void* data, size_t bytes) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  out->insert(out->end(), static_cast<const uint8_t*>(data),
              static_cast<const uint8_t*>(data) + bytes);
  return 0;
}

Fixture* make_fixture() {
  Fixture* f = new Fixture;
  try {
    remat::compiler::CompileOptions options;
    options.model = kModel;
    options.batch = kBatch;
    options.optimizer = kOptimizer;
    f->plan_bytes = remat::compiler::compile(options).plan;
  } catch (const std::exception& e) {
    fail("compile", e.what());
  }
  if (const char* path = getenv("REMAT_FUZZ_WRITE_PLAN")) {
    FILE* out = fopen(path, "wb");
    if (out == nullptr ||
        fwrite(f->plan_bytes.data(), 1, f->plan_bytes.size(), out) != f->plan_bytes.size() ||
        fclose(out) != 0) {
      fail("REMAT_FUZZ_WRITE_PLAN", path);
    }
  }
  char message[256];
  if (remat_plan_open(f->plan_bytes.data(), f->plan_bytes.size(), &f->plan, message,
                      sizeof(message)) != REMAT_OK) {
    fail("remat_plan_open", message);
  }
  if (remat_session_create(f->plan, nullptr, &f->session, message, sizeof(message)) != REMAT_OK) {
    fail("remat_session_create", message);
  }
  if (set_every_binding(f->session, f->plan, false) != REMAT_OK) {
    fail("remat_session_set_input", remat_session_last_error(f->session));
  }
  if (remat_session_step(f->session, nullptr) != REMAT_OK)
    fail("remat_session_step", remat_session_last_error(f->session));
  if (remat_session_save_state(f->session, append, &f->good) != REMAT_OK) {
    fail("remat_session_save_state", remat_session_last_error(f->session));
  }
  return f;
}

// Puts the start-up state back, so that every input starts from the same session.
void restore(Fixture* f) {
  Reader r;
  r.state = &f->good;
  if (remat_session_load_state(f->session, read, &r, f->good.size()) != REMAT_OK) {
    fail("restoring the start-up state", remat_session_last_error(f->session));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fixture = make_fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Fixture* f = fixture;
  const uint8_t control = data[0];
  std::vector<uint8_t> state(data + 1, data + size);
  if ((control & 1) && state.size() >= 24) memcpy(state.data() + 8, f->good.data() + 8, 16);
  if ((control & 2) && state.size() >= 4) {
    const uint32_t crc = remat::crc32c(0, state.data(), state.size() - 4);
    for (int i = 0; i < 4; ++i) state[state.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
  }
  Reader reader;
  reader.state = &state;
  reader.fail = (control & 4) != 0;
  reader.flip = (control & 8) != 0;
  reader.at = control >> 4;

  const remat_status loaded = remat_session_load_state(f->session, read, &reader, state.size());
  if (loaded != REMAT_OK && loaded != REMAT_ERROR_STATE_MISMATCH &&
      loaded != REMAT_ERROR_DATA_LOSS && loaded != REMAT_ERROR_CALLBACK) {
    fail("remat_session_load_state", remat_session_last_error(f->session));
  }
  const bool partly = loaded != REMAT_OK &&
                      strstr(remat_session_last_error(f->session), "partly loaded") != nullptr;
  const uint64_t steps = remat_session_step_count(f->session);
  float loss = 0.0f;
  const remat_status stepped = remat_session_step(f->session, &loss);
  if (partly) {
    if (stepped != REMAT_ERROR_FAILED_PRECONDITION)
      fail("a partly loaded session stepped", remat_status_string(stepped));
    std::vector<uint8_t> ignored;
    if (remat_session_save_state(f->session, append, &ignored) != REMAT_ERROR_FAILED_PRECONDITION) {
      fail("a partly loaded session saved its state", "");
    }
    if (remat_session_step_count(f->session) != steps)
      fail("remat_session_step", "a refused step counted");
  } else if (loaded != REMAT_OK) {
    // Untouched: the start-up state, whose step is finite.
    if (stepped != REMAT_OK)
      fail("remat_session_step after a failed load", remat_session_last_error(f->session));
  } else {
    // Loaded parameters are any bytes: the step may find a loss that is not finite, but it runs.
    if (stepped == REMAT_ERROR_FAILED_PRECONDITION)
      fail("remat_session_step after a load", remat_session_last_error(f->session));
    if (remat_session_step_count(f->session) != steps + 1)
      fail("remat_session_step", "the step count did not grow by one");
  }
  restore(f);
  return 0;
}
