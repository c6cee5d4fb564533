// Failure paths of session creation in the C ABI: each wrong call gets its own status and a
// message naming what was wrong; the regions a session allocates, or is given, as the plan needs.
// (Calls on a session: test_session_calls.cc.)
#include "tests/cmocka_cpp.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "plan/checksum.h"
#include "plan/plan_generated.h"
#include "compiler/compiler.h"
#include "remat/remat.h"
#include "runtime/session.h"
#include "tests/runtime/session_checks.h"
#include "tests/sanitized.h"

// While |g_poison| is set, every posix_memalign block (the POSIX port's regions) comes back
// filled with 0xA5, so a test can tell memory the session zeroed from memory it merely got.
// Sanitizers own the allocator; AddressSanitizer fills the first 4 KiB of a block with 0xBE.
static volatile int g_poison = 0;
#if !defined(REMAT_SANITIZED)
extern "C" void* __libc_memalign(size_t, size_t);
extern "C" int posix_memalign(void** out, size_t alignment, size_t n) {
  *out = __libc_memalign(alignment, n);
  if (*out == nullptr) return 12;  // ENOMEM
  if (g_poison) memset(*out, 0xA5, n);
  return 0;
}
#endif

using namespace remat_test;  // the session checks shared by the session tests

namespace {

// ---- remat_session_create -------------------------------------------------------------------

void create_rejects_null_arguments_and_unknown_options_sizes(void**) {
  OpenPlan p(kMlp);
  char message[256];
  assert_int_equal(remat_session_create(p.plan, nullptr, nullptr, message, sizeof(message)),
                   REMAT_ERROR_INVALID_ARGUMENT);
  expect_mentions(message, {"out_session"});
  create_expecting(nullptr, nullptr, REMAT_ERROR_INVALID_ARGUMENT, {"plan is NULL"});
  remat_session_options options;
  remat_session_options_init(&options);
  const size_t first = offsetof(remat_session_options, init_params) + sizeof(int);
  for (size_t size : {size_t{0}, first - 1, sizeof(options) + 8}) {
    options.struct_size = size;
    create_expecting(p.plan, &options, REMAT_ERROR_INVALID_ARGUMENT,
                     {"struct_size is " + std::to_string(size), std::to_string(sizeof(options))});
  }
  // NULL options are the defaults.
  remat_session_destroy(create_expecting(p.plan, nullptr, REMAT_OK));
}

// The initialiser writes only the caller's size of struct (an older caller's smaller one is
// never written past its end) and refuses, writing nothing, a NULL struct or a size outside the
// struct_size rules.
void options_init_writes_only_the_callers_size_and_refuses_bad_sizes(void**) {
  assert_int_equal(remat_session_options_init_sized(nullptr, sizeof(remat_session_options)),
                   REMAT_ERROR_INVALID_ARGUMENT);
  const size_t first = offsetof(remat_session_options, init_params) + sizeof(int);
  alignas(remat_session_options) unsigned char bytes[sizeof(remat_session_options) + 16];
  remat_session_options* options = reinterpret_cast<remat_session_options*>(bytes);
  for (size_t size : {size_t{0}, first - 1, sizeof(remat_session_options) + 8}) {
    memset(bytes, 0x5A, sizeof(bytes));
    assert_int_equal(remat_session_options_init_sized(options, size), REMAT_ERROR_INVALID_ARGUMENT);
    for (unsigned char b : bytes) assert_int_equal(b, 0x5A);
  }
  memset(bytes, 0x5A, sizeof(bytes));
  assert_int_equal(remat_session_options_init_sized(options, first), REMAT_OK);
  assert_int_equal(options->struct_size, first);
  assert_string_equal(options->backend, "cpu");
  assert_null(options->arena);
  assert_int_equal(options->init_params, 1);
  for (size_t i = first; i < sizeof(bytes); ++i) assert_int_equal(bytes[i], 0x5A);
  // The macro passes the caller's sizeof.
  remat_session_options full;
  assert_int_equal(remat_session_options_init(&full), REMAT_OK);
  assert_int_equal(full.struct_size, sizeof(remat_session_options));
}

// The struct_size rules of remat.h on remat_session_options, whose first version (API 1) ends
// with init_params.
void options_from_a_newer_header_are_rejected_naming_both_sizes(void**) {
  OpenPlan p(kMlp);
  // A newer header's struct: this one with a field appended that this library does not know.
  struct {
    remat_session_options known;
    uint64_t appended;
  } newer;
  remat_session_options_init(&newer.known);
  newer.known.struct_size = sizeof(newer);
  newer.appended = 0;
  create_expecting(p.plan, &newer.known, REMAT_ERROR_INVALID_ARGUMENT,
                   {"options.struct_size is " + std::to_string(sizeof(newer)),
                    "larger than the " + std::to_string(sizeof(remat_session_options)) + " bytes"});
}

void options_ending_before_init_params_are_smaller_than_the_first_version_and_rejected(void**) {
  OpenPlan p(kMlp);
  remat_session_options options;
  remat_session_options_init(&options);
  const size_t first = offsetof(remat_session_options, init_params) + sizeof(int);
  for (size_t size : {offsetof(remat_session_options, init_params),
                      offsetof(remat_session_options, backend), first - 1}) {
    options.struct_size = size;
    create_expecting(p.plan, &options, REMAT_ERROR_INVALID_ARGUMENT,
                     {"options.struct_size is " + std::to_string(size),
                      "smaller than the " + std::to_string(first) + " bytes of its first version",
                      "knows " + std::to_string(sizeof(remat_session_options))});
  }
}

// Every size from the first version's fields to sizeof is accepted: here the first version
// without its trailing padding. The fields it has are read: the caller's persistent region and
// init_params = 0 (which leaves the caller's bytes in place).
void options_of_the_first_versions_size_are_read_up_to_that_size(void**) {
  OpenPlan p(kMlp);
  Buffer persistent(p.memory.persistent_bytes);
  memset(persistent.data, 0xA5, p.memory.persistent_bytes);
  remat_session_options options;
  remat_session_options_init(&options);
  options.struct_size = offsetof(remat_session_options, init_params) + sizeof(int);
  options.threads = 1u << 20;  // beyond the struct's size: never read, so never refused
  options.persistent = persistent.data;
  options.persistent_size = p.memory.persistent_bytes;
  options.init_params = 0;
  remat_session* s = create_expecting(p.plan, &options, REMAT_OK);
  const remat_tensor_info weight = bindings(p.plan, REMAT_BINDING_PARAM)[0];
  std::vector<uint8_t> got(weight.bytes);
  assert_int_equal(remat_session_read_param(s, weight.name, got.data(), got.size()), REMAT_OK);
  assert_true(got == std::vector<uint8_t>(weight.bytes, 0xA5));
  remat_session_destroy(s);
}

void threads_beyond_the_limit_are_rejected_naming_the_field(void**) {
  OpenPlan p(kMlp);
  remat_session_options options;
  remat_session_options_init(&options);
  assert_int_equal(options.threads, 0);
  for (size_t threads : {size_t{1025}, size_t{1} << 40}) {
    options.threads = threads;
    create_expecting(p.plan, &options, REMAT_ERROR_INVALID_ARGUMENT,
                     {"options.threads is " + std::to_string(threads), "1024"});
  }
  // One thread and an explicit team both run.
  for (size_t threads : {size_t{1}, size_t{3}}) {
    options.threads = threads;
    remat_session_destroy(create_expecting(p.plan, &options, REMAT_OK));
  }
}

void arena_smaller_than_the_plan_is_rejected(void**) {
  OpenPlan p(kMlp);
  Buffer arena(p.memory.arena_bytes);
  remat_session_options options;
  remat_session_options_init(&options);
  options.arena = arena.data;
  for (size_t size : {size_t{0}, size_t{1}, static_cast<size_t>(p.memory.arena_bytes - 1)}) {
    options.arena_size = size;
    create_expecting(
        p.plan, &options, REMAT_ERROR_ARENA_TOO_SMALL,
        {"arena", std::to_string(size) + " bytes", std::to_string(p.memory.arena_bytes)});
  }
}

void misaligned_arena_is_rejected(void**) {
  OpenPlan p(kMlp);
  Buffer arena(p.memory.arena_bytes + p.memory.alignment);
  remat_session_options options;
  remat_session_options_init(&options);
  for (size_t shift : {size_t{1}, size_t{4}, size_t{p.memory.alignment / 2}}) {
    options.arena = arena.bytes() + shift;
    options.arena_size = p.memory.arena_bytes;
    char address[32];
    snprintf(address, sizeof(address), "%p", static_cast<void*>(arena.bytes() + shift));
    create_expecting(p.plan, &options, REMAT_ERROR_MISALIGNED,
                     {"arena region at " + std::string(address),
                      "aligned to " + std::to_string(p.memory.alignment)});
  }
}

void persistent_region_smaller_than_the_plan_is_rejected(void**) {
  OpenPlan p(kMlp);
  Buffer persistent(p.memory.persistent_bytes + p.memory.alignment);
  remat_session_options options;
  remat_session_options_init(&options);
  options.persistent = persistent.data;
  options.persistent_size = p.memory.persistent_bytes - 4;
  create_expecting(p.plan, &options, REMAT_ERROR_ARENA_TOO_SMALL,
                   {"persistent", std::to_string(p.memory.persistent_bytes - 4) + " bytes",
                    std::to_string(p.memory.persistent_bytes)});
  options.persistent = persistent.bytes() + 8;
  options.persistent_size = p.memory.persistent_bytes;
  create_expecting(p.plan, &options, REMAT_ERROR_MISALIGNED, {"persistent region at", "aligned"});
}

void host_region_given_to_a_plan_that_spills_nothing_must_still_be_aligned(void**) {
  OpenPlan p(kMlp);
  assert_int_equal(p.memory.host_bytes, 0);
  Buffer host(256);
  remat_session_options options;
  remat_session_options_init(&options);
  options.host = host.bytes() + 1;
  options.host_size = 16;
  create_expecting(p.plan, &options, REMAT_ERROR_MISALIGNED, {"host region at", "aligned"});
  options.host = host.data;
  remat_session_destroy(create_expecting(p.plan, &options, REMAT_OK));
}

void backends_not_in_the_build_are_unavailable(void**) {
  OpenPlan p(kMlp);
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = "vulkan";
  create_expecting(p.plan, &options, REMAT_ERROR_UNAVAILABLE, {"'vulkan'", "built in: ", "cpu"});
  options.backend = "vulkan:0";
  create_expecting(p.plan, &options, REMAT_ERROR_UNAVAILABLE, {"'vulkan:0'", "cpu"});
  options.backend = "";
  create_expecting(p.plan, &options, REMAT_ERROR_UNAVAILABLE, {"cpu"});
  options.backend = "cpu:3";
  create_expecting(p.plan, &options, REMAT_ERROR_UNAVAILABLE, {"cpu", "'3'", "0"});
  options.backend = "cpux";  // shares "cpu"'s first three letters only
  create_expecting(p.plan, &options, REMAT_ERROR_UNAVAILABLE, {"'cpux'", "cpu"});
  // The CPU's one device is accepted by name and by number, and NULL means "cpu".
  for (const char* good : {"cpu", "cpu:0", static_cast<const char*>(nullptr)}) {
    options.backend = good;
    remat_session_destroy(create_expecting(p.plan, &options, REMAT_OK));
  }
}

void plan_needing_more_memory_than_exists_fails_with_resource_exhausted(void**) {
  rc::CompileOptions o;
  o.model = kMlp;
  o.batch = kBatch;
  rc::CompileResult r = rc::compile(o);
  // A valid plan whose arena is 2^62 bytes: every tensor still lies inside it.
  assert_true(remat::fb::GetMutablePlan(r.plan.data())->mutate_arena_size(uint64_t{1} << 62));
  remat::seal_plan(r.plan.data(), r.plan.size());
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(r.plan.data(), r.plan.size(), &plan, nullptr, 0), REMAT_OK);
  create_expecting(plan, nullptr, REMAT_ERROR_RESOURCE_EXHAUSTED, {"arena", "4611686018427387904"});
  // The caller's arena is checked against the same size.
  Buffer arena(4096);
  remat_session_options options;
  remat_session_options_init(&options);
  options.arena = arena.data;
  options.arena_size = 4096;
  create_expecting(plan, &options, REMAT_ERROR_ARENA_TOO_SMALL, {"4611686018427387904"});
  remat_plan_close(plan);
}

// A build with compact session tables (-Dcompact_tables, TensorBytes of 32 bits) refuses a plan
// with a tensor past 2^31 bytes at creation, naming it, before it allocates any region; other
// builds take such a plan (their tables are 64-bit), so there the case is skipped.
void plan_past_compact_tables_is_refused_naming_the_tensor(void**) {
#if REMAT_COMPACT_TABLES
  rc::CompileOptions o;
  o.model = kMlp;
  o.batch = kBatch;
  rc::CompileResult r = rc::compile(o);
  remat::fb::Plan* root = remat::fb::GetMutablePlan(r.plan.data());
  // The last arena tensor moved to 2^32, in an arena grown to hold it: a valid plan.
  uint32_t moved = root->tensors()->size();
  for (uint32_t t = 0; t < root->tensors()->size(); ++t) {
    if (root->tensors()->Get(t)->region() == remat::fb::Region::Arena &&
        root->tensors()->Get(t)->offset() > 0)
      moved = t;
  }
  assert_true(moved < root->tensors()->size());
  remat::fb::Tensor* tensor = root->mutable_tensors()->GetMutableObject(moved);
  assert_true(tensor->mutate_offset(uint64_t{1} << 32));
  assert_true(root->mutate_arena_size((uint64_t{1} << 32) + root->arena_size()));
  remat::seal_plan(r.plan.data(), r.plan.size());
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(r.plan.data(), r.plan.size(), &plan, nullptr, 0), REMAT_OK);
  const std::string name = "'" + tensor->name()->str() + "'";
  create_expecting(plan, nullptr, REMAT_ERROR_RESOURCE_EXHAUSTED,
                   {name.c_str(), "compact session tables", "2^31 - 1"});
  remat_plan_close(plan);
#else
  skip();
#endif
}

// ---- Memory the session allocates -----------------------------------------------------------

bool all_zero(const void* data, uint64_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (uint64_t i = 0; i < bytes; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Arena, persistent and host regions the session allocates start as zeros, over an allocator
// that hands out dirty blocks: nothing a plan leaves uninitialised (padding, persistent tensors
// with init_params = 0) reads as what the allocator left there. The arena and host region are
// not reachable through the C API: they are read through the session's own pointers.
void regions_the_session_allocates_start_zeroed(void**) {
  rc::CompileOptions o;
  o.model = "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3";
  o.batch = 8;
  o.strategy = "splits";
  o.optimizer = "adam:lr=0.01";
  const rc::CompileReport plain = rc::compile(o).report;
  o.device_budget = plain.persistent_bytes + plain.arena_bytes * 8 / 10;
  const rc::CompileResult compiled = rc::compile(o);
  assert_false(compiled.report.spilled.empty());
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(compiled.plan.data(), compiled.plan.size(), &plan, nullptr, 0),
                   REMAT_OK);
  remat_plan_memory_info memory;
  assert_int_equal(remat_plan_memory(plan, &memory), REMAT_OK);
  assert_true(memory.arena_bytes > 0 && memory.persistent_bytes > 0 && memory.host_bytes > 0);
#if !defined(REMAT_SANITIZED)
  {  // The poison is real: a block of the arena's size comes back dirty.
    g_poison = 1;
    void* probe = nullptr;
    assert_int_equal(
        posix_memalign(&probe, memory.alignment, static_cast<size_t>(memory.arena_bytes)), 0);
    g_poison = 0;
    assert_false(all_zero(probe, memory.arena_bytes));
    free(probe);
  }
#endif
  remat_session_options options;
  remat_session_options_init(&options);
  options.init_params = 0;
  g_poison = 1;
  remat_session* s = create_expecting(plan, &options, REMAT_OK);
  g_poison = 0;
  const uint64_t sizes[3] = {memory.arena_bytes, memory.persistent_bytes, memory.host_bytes};
  for (int region = 0; region < 3; ++region) {
    assert_non_null(s->owned[region]);
    if (!all_zero(s->owned[region], sizes[region]))
      fail_msg("region %d of %llu bytes is not zeroed", region,
               static_cast<unsigned long long>(sizes[region]));
  }
  for (const remat_tensor_info& w : bindings(plan, REMAT_BINDING_PARAM)) {
    std::vector<uint8_t> got(w.bytes, 0xFF);
    assert_int_equal(remat_session_read_param(s, w.name, got.data(), got.size()), REMAT_OK);
    assert_true(all_zero(got.data(), got.size()));
  }
  remat_session_destroy(s);
  remat_plan_close(plan);
}

// ---- Caller-provided memory -----------------------------------------------------------------

// Regions of exactly the plan's sizes (so a sanitizer sees any access past them) give the same
// losses, bit for bit, as regions the session allocates.
void caller_regions_of_exactly_the_plan_size_match_session_regions(void**) {
  for (const char* model : {kMlp, kTransformer}) {
    OpenPlan p(model, "adamw:lr=0.01");
    Buffer arena(p.memory.arena_bytes, p.memory.alignment),
        persistent(p.memory.persistent_bytes, p.memory.alignment);
    assert_int_equal(p.memory.arena_bytes % p.memory.alignment, 0);  // so the buffers are exact
    assert_int_equal(p.memory.persistent_bytes % p.memory.alignment, 0);
    remat_session_options options;
    remat_session_options_init(&options);
    options.arena = arena.data;
    options.arena_size = p.memory.arena_bytes;
    options.persistent = persistent.data;
    options.persistent_size = p.memory.persistent_bytes;
    remat_session* mine = create_expecting(p.plan, &options, REMAT_OK);
    remat_session* owned = create_expecting(p.plan, nullptr, REMAT_OK);
    set_all_inputs(mine, p.plan, kVocab);
    set_all_inputs(owned, p.plan, kVocab);
    for (int step = 0; step < 3; ++step) {
      float a = 0.0f, b = 1.0f;
      assert_int_equal(remat_session_step(mine, &a), REMAT_OK);
      assert_int_equal(remat_session_step(owned, &b), REMAT_OK);
      assert_memory_equal(&a, &b, sizeof(float));
    }
    assert_true(read_params(mine, p.plan) == read_params(owned, p.plan));
    remat_session_destroy(owned);
    remat_session_destroy(mine);
  }
}

// ---- Initial values --------------------------------------------------------------------------

// A Normal-initialised tensor of more than 65536 values is drawn by a team of the port's
// threads (runtime/param_init.cc), in chunks of 2^20: the word embeddings here, 16500 x 64, take
// a full chunk and part of a second. Its values depend only on
// their indices, so a session created while the process may run on one CPU (drawn on one
// thread) starts from the same bytes as one created on all of them. On a one-CPU machine both
// are drawn on one thread, and the test says so.
void initial_values_are_the_same_drawn_on_one_thread_or_many(void**) {
#if defined(__linux__)
  OpenPlan p("transformer:layers=1,hidden=64,heads=2,ffn=64,seq=8,vocab=16500,classes=3");
  cpu_set_t all, one;
  assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  }
  assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
  remat_session* single = create_expecting(p.plan, nullptr, REMAT_OK);
  assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
  remat_session* team = create_expecting(p.plan, nullptr, REMAT_OK);
  printf("drawn on 1 thread and on %d\n", CPU_COUNT(&all));
  const std::vector<uint8_t> a = read_params(single, p.plan), b = read_params(team, p.plan);
  assert_true(a.size() > 16500 * 64 * sizeof(float));
  assert_true(a == b);
  remat_session_destroy(team);
  remat_session_destroy(single);
#else
  skip();
#endif
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(create_rejects_null_arguments_and_unknown_options_sizes),
      cmocka_unit_test(options_init_writes_only_the_callers_size_and_refuses_bad_sizes),
      cmocka_unit_test(options_from_a_newer_header_are_rejected_naming_both_sizes),
      cmocka_unit_test(
          options_ending_before_init_params_are_smaller_than_the_first_version_and_rejected),
      cmocka_unit_test(options_of_the_first_versions_size_are_read_up_to_that_size),
      cmocka_unit_test(threads_beyond_the_limit_are_rejected_naming_the_field),
      cmocka_unit_test(arena_smaller_than_the_plan_is_rejected),
      cmocka_unit_test(misaligned_arena_is_rejected),
      cmocka_unit_test(persistent_region_smaller_than_the_plan_is_rejected),
      cmocka_unit_test(host_region_given_to_a_plan_that_spills_nothing_must_still_be_aligned),
      cmocka_unit_test(backends_not_in_the_build_are_unavailable),
      cmocka_unit_test(plan_needing_more_memory_than_exists_fails_with_resource_exhausted),
      cmocka_unit_test(plan_past_compact_tables_is_refused_naming_the_tensor),
      cmocka_unit_test(regions_the_session_allocates_start_zeroed),
      cmocka_unit_test(caller_regions_of_exactly_the_plan_size_match_session_regions),
      cmocka_unit_test(initial_values_are_the_same_drawn_on_one_thread_or_many),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
