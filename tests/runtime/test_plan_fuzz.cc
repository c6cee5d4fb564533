// Randomly corrupted plans (one bit, one byte or several bytes of a compiled plan) never crash
// remat_plan_open, session creation or a step: each comes back as a status, tallied per status.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/runtime/compiled_plan.h"

namespace {

using remat_test::compile_model;
using remat_test::set_inputs_to_zeros;

// The last status of remat.h's append-only enum.
constexpr int kLastStatus = REMAT_ERROR_NONFINITE;

const char kMlpDropout[] = "mlp:layers=2,width=8,in=4,classes=3,dropout=0.1";
const char kTransformer[] =
    "transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=11,classes=3,dropout=0.1";

// ---- Random corruption ----------------------------------------------------------------------

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct FuzzTally {
  long opened[kLastStatus + 2] = {};   // remat_plan_open status (last: unknown value)
  long created[kLastStatus + 2] = {};  // remat_session_create status, for opened plans
  long stepped[kLastStatus + 2] = {};  // first failing step status, or OK after 2 steps
  long unchanged = 0;
};

int bucket(remat_status s) {
  return s >= REMAT_OK && s <= kLastStatus ? static_cast<int>(s) : kLastStatus + 1;
}

// Largest total of regions a corrupted plan may ask the session to allocate itself; beyond it
// the regions are the caller's, too small on purpose, and creation must say so.
constexpr uint64_t kOwnedLimit = 16u << 20;
constexpr size_t kCallerRegion = 64u << 10;

// Runs a plan that passed verification: a session, every input set to zeros, two steps.
void run_opened_plan(const remat_plan* plan, FuzzTally* tally, void* caller_regions) {
  remat_plan_memory_info info;
  assert_int_equal(remat_plan_memory(plan, &info), REMAT_OK);
  remat_session_options options;
  remat_session_options_init(&options);
  const bool owned = info.arena_bytes + info.persistent_bytes + info.host_bytes <= kOwnedLimit &&
                     info.arena_bytes <= kOwnedLimit && info.persistent_bytes <= kOwnedLimit &&
                     info.host_bytes <= kOwnedLimit;
  if (!owned) {
    uint8_t* base = static_cast<uint8_t*>(caller_regions);
    options.arena = base;
    options.arena_size = kCallerRegion;
    options.persistent = base + kCallerRegion;
    options.persistent_size = kCallerRegion;
    options.host = base + 2 * kCallerRegion;
    options.host_size = kCallerRegion;
  }
  remat_session* session = nullptr;
  char message[256];
  const remat_status created =
      remat_session_create(plan, &options, &session, message, sizeof(message));
  ++tally->created[bucket(created)];
  if (created != REMAT_OK) {
    assert_null(session);
    if (!owned && created != REMAT_ERROR_ARENA_TOO_SMALL && created != REMAT_ERROR_MISALIGNED) {
      fail_msg("a plan needing %llu + %llu + %llu bytes got %s from caller regions of %zu: %s",
               static_cast<unsigned long long>(info.arena_bytes),
               static_cast<unsigned long long>(info.persistent_bytes),
               static_cast<unsigned long long>(info.host_bytes), remat_status_string(created),
               kCallerRegion, message);
    }
    return;
  }
  remat_status status = set_inputs_to_zeros(session, plan);
  for (int step = 0; step < 2 && status == REMAT_OK; ++step) {
    float loss = 0;
    status = remat_session_step(session, &loss);
  }
  ++tally->stepped[bucket(status)];
  remat_session_destroy(session);
}

void print_tally(const char* what, const long* counts) {
  print_message("  %s:", what);
  for (int s = 0; s <= kLastStatus + 1; ++s) {
    if (counts[s] != 0) {
      print_message(" %s %ld,",
                    s <= kLastStatus ? remat_status_string(static_cast<remat_status>(s)) : "other",
                    counts[s]);
    }
  }
  print_message("\n");
}

// Corrupts |count| copies of |plan| (one bit, one byte, or several bytes) with a fixed seed.
void fuzz_plan(const std::vector<uint8_t>& plan, int count, uint64_t seed, const char* model) {
  FuzzTally tally;
  void* caller_regions = aligned_alloc(4096, 3 * kCallerRegion);
  assert_non_null(caller_regions);
  uint64_t rng = seed;
  for (int iteration = 0; iteration < count; ++iteration) {
    std::vector<uint8_t> bytes(plan);  // exactly sized: a read past the end is a sanitizer error
    static const uint8_t kSpecial[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE};
    const uint64_t kind = splitmix64(&rng) % 4;
    const size_t changes = kind < 2 ? 1 : 2 + splitmix64(&rng) % 7;
    const size_t start = splitmix64(&rng) % bytes.size();
    for (size_t c = 0; c < changes; ++c) {
      const uint64_t draw = splitmix64(&rng);
      switch (kind) {
        case 0: bytes[start] ^= static_cast<uint8_t>(1u << (draw % 8)); break;          // one bit
        case 1: bytes[start] = static_cast<uint8_t>(draw); break;                       // one byte
        case 2: bytes[(draw >> 8) % bytes.size()] = static_cast<uint8_t>(draw); break;  // scattered
        default:  // a run of bytes set to values that make sizes and offsets extreme
          if (start + c < bytes.size()) bytes[start + c] = kSpecial[draw % sizeof(kSpecial)];
          break;
      }
    }
    if (bytes == plan) {
      ++tally.unchanged;
      continue;
    }
    // Sealed, the damage meets the verifier and the steps, as a compiler bug's would; unsealed,
    // the checksum alone refuses it (test_plan_checksum.cc).
    bytes = remat_test::sealed(bytes);
    char message[512];
    remat_plan* opened = nullptr;
    const remat_status status =
        remat_plan_open(bytes.data(), bytes.size(), &opened, message, sizeof(message));
    ++tally.opened[bucket(status)];
    if (status != REMAT_OK) {
      assert_null(opened);
      assert_true(message[0] != '\0');
      continue;
    }
    run_opened_plan(opened, &tally, caller_regions);
    remat_plan_close(opened);
  }
  free(caller_regions);
  print_message("%s, %d corruptions of %zu bytes (%ld left the plan unchanged)\n", model, count,
                plan.size(), tally.unchanged);
  print_tally("plan_open", tally.opened);
  print_tally("session_create", tally.created);
  print_tally("set_input + 2 steps", tally.stepped);
  // The verifier must be what catches most damage, not luck in the steps.
  assert_true(tally.opened[REMAT_ERROR_PLAN_CORRUPT] > 0);
  assert_int_equal(tally.opened[kLastStatus + 1], 0);
}

void corrupted_mlp_plans_never_crash_open_or_step(void**) {
  fuzz_plan(compile_model(kMlpDropout, "adam:lr=0.01").plan, 40000, 0x5EED0001u, kMlpDropout);
}

void corrupted_transformer_plans_never_crash_open_or_step(void**) {
  fuzz_plan(compile_model(kTransformer, "sgd:lr=0.1,momentum=0.9").plan, 20000, 0x5EED0002u,
            kTransformer);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(corrupted_mlp_plans_never_crash_open_or_step),
      cmocka_unit_test(corrupted_transformer_plans_never_crash_open_or_step),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
