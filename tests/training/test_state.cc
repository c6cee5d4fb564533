// Training states (remat_session_save_state / load_state): resuming is exact, byte for byte,
// for every optimizer, with dropout, recomputation and spilling; a state of another plan, a
// corrupt, truncated or half-read one is refused with its own status and leaves the session as
// it was; CRC32C gives the published check value.
#include "tests/cmocka_cpp.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/synthetic_task.h"
#include "plan/crc32c.h"
#include "training_harness.h"

namespace {

constexpr int64_t kBatch = 8;
constexpr uint64_t kSeed = 5;
const char* const kMlp = "mlp:layers=4,width=32,in=16,classes=4,dropout=0.2";
const char* const kTransformer =
    "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3,dropout=0.1";

// A state held in memory, written and read through the C callbacks.
struct MemoryState {
  std::vector<uint8_t> bytes;
  int fail_write_at = -1;  // The call number that fails (-1: none).
  int fail_read_at = -1;
  int writes = 0, reads = 0;
  uint64_t flip_on_second_pass =
      UINT64_MAX;  // Offset whose byte the reader flips after a full pass.
  bool first_pass_done = false;
};

int write_memory(void* context, const void* data, size_t bytes) {
  MemoryState* m = static_cast<MemoryState*>(context);
  if (m->writes++ == m->fail_write_at) return 1;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  m->bytes.insert(m->bytes.end(), p, p + bytes);
  return 0;
}

int read_memory(void* context, uint64_t offset, void* data, size_t bytes) {
  MemoryState* m = static_cast<MemoryState*>(context);
  if (m->reads++ == m->fail_read_at) return 1;
  if (offset > m->bytes.size() || bytes > m->bytes.size() - offset) return 1;
  memcpy(data, m->bytes.data() + offset, bytes);
  if (offset + bytes == m->bytes.size()) m->first_pass_done = true;  // The trailer ends pass one.
  if (m->first_pass_done && m->flip_on_second_pass >= offset &&
      m->flip_on_second_pass < offset + bytes && offset + bytes != m->bytes.size()) {
    static_cast<uint8_t*>(data)[m->flip_on_second_pass - offset] ^= 0x01;
  }
  return 0;
}

void feed_and_step(TrainingRun& run, remat::io::SyntheticTask& task, uint64_t first, int steps) {
  for (int s = 0; s < steps; ++s) {
    const auto values = task.batch(first + static_cast<uint64_t>(s));
    const auto names = task.names();
    for (size_t i = 0; i < names.size(); ++i) run.set(names[i], values[i].data(), values[i].size());
    run.step();
  }
}

MemoryState save(TrainingRun& run) {
  MemoryState m;
  if (remat_session_save_state(run.session, write_memory, &m) != REMAT_OK) {
    fail_msg("save_state: %s", remat_session_last_error(run.session));
  }
  uint64_t size = 0;
  assert_int_equal(remat_session_state_size(run.session, &size), REMAT_OK);
  assert_int_equal(m.bytes.size(), size);
  return m;
}

// N steps, save, load into a fresh session, M steps: the parameters equal N + M steps in one go.
void check_resume(const char* model, const char* optimizer, const char* strategy,
                  uint64_t device_budget = 0) {
  constexpr int kFirst = 3, kThen = 3;
  std::vector<uint8_t> straight;
  {
    TrainingRun run(model, kBatch, optimizer, kSeed, strategy, 0, device_budget);
    remat::io::SyntheticTask task(model, kBatch, kSeed);
    feed_and_step(run, task, 0, kFirst + kThen);
    straight = run.params();
  }
  MemoryState state;
  {
    TrainingRun run(model, kBatch, optimizer, kSeed, strategy, 0, device_budget);
    remat::io::SyntheticTask task(model, kBatch, kSeed);
    feed_and_step(run, task, 0, kFirst);
    state = save(run);
  }
  TrainingRun resumed(model, kBatch, optimizer, kSeed, strategy, 0, device_budget);
  const std::vector<uint8_t> initial = resumed.params();
  if (remat_session_load_state(resumed.session, read_memory, &state, state.bytes.size()) !=
      REMAT_OK) {
    fail_msg("load_state: %s", remat_session_last_error(resumed.session));
  }
  assert_int_equal(remat_session_step_count(resumed.session), kFirst);
  if (resumed.params() == initial) fail_msg("%s: loading changed no parameter", model);
  remat::io::SyntheticTask task(model, kBatch, kSeed);
  feed_and_step(resumed, task, kFirst, kThen);
  if (resumed.params() != straight) {
    fail_msg("%s with %s, %s: %d + %d resumed steps differ from %d straight", model, optimizer,
             strategy, kFirst, kThen, kFirst + kThen);
  }
  printf("%-60s %-34s %-7s resumed exactly (%zu-byte state)\n", model, optimizer, strategy,
         state.bytes.size());
}

void crc32c_gives_the_check_value_and_continues(void**) {
  assert_int_equal(remat::crc32c(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(remat::crc32c(remat::crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
  assert_int_equal(remat::crc32c(0, "", 0), 0u);
  uint8_t zeros[32] = {};
  assert_int_equal(remat::crc32c(0, zeros, sizeof(zeros)), 0x8A9136AAu);  // RFC 3720, B.4
}

void resume_is_exact_for_every_optimizer(void**) {
  for (const char* optimizer : {"sgd:lr=0.05", "sgd:lr=0.05,momentum=0.9,weight_decay=0.01",
                                "adam:lr=0.01", "adamw:lr=0.01,weight_decay=0.01"}) {
    check_resume(kMlp, optimizer, "none");
  }
}

void resume_is_exact_with_recomputation_and_spilling(void**) {
  check_resume(kTransformer, "adamw:lr=0.01,weight_decay=0.01", "sqrt");
  check_resume(kMlp, "adam:lr=0.01", "selective");
  // A device budget a quarter of the way from splits' arena down: some checkpoints spill.
  remat::compiler::CompileOptions o;
  o.model = kTransformer;
  o.batch = kBatch;
  o.optimizer = "sgd:lr=0.05,momentum=0.9";
  o.strategy = "splits";
  const auto plain = remat::compiler::compile(o).report;
  o.device_budget = plain.persistent_bytes + plain.arena_bytes * 3 / 4;
  const auto spilled = remat::compiler::compile(o).report;
  if (spilled.spilled.empty()) fail_msg("the device budget spills nothing");
  check_resume(kTransformer, "sgd:lr=0.05,momentum=0.9", "splits", o.device_budget);
}

// The session's parameters and step count, to show a failed load left them alone.
struct Snapshot {
  std::vector<uint8_t> params;
  uint64_t step;
  bool operator==(const Snapshot& o) const { return params == o.params && step == o.step; }
};
Snapshot snapshot(const TrainingRun& run) {
  return {run.params(), remat_session_step_count(run.session)};
}

// Loads |m| into |run| expecting |want| and a message containing |needle|; the session must be
// as it was.
void expect_refused(TrainingRun& run, MemoryState& m, uint64_t size, remat_status want,
                    const char* needle) {
  const Snapshot before = snapshot(run);
  m.reads = 0;
  const remat_status got = remat_session_load_state(run.session, read_memory, &m, size);
  const char* message = remat_session_last_error(run.session);
  if (got != want) fail_msg("load_state: status %d, expected %d (%s)", got, want, message);
  if (strstr(message, needle) == nullptr) fail_msg("message '%s' lacks '%s'", message, needle);
  if (!(snapshot(run) == before)) fail_msg("a refused load (%s) changed the session", message);
  printf("refused: %s\n", message);
}

void bad_states_are_refused_and_leave_the_session_as_it_was(void**) {
  TrainingRun source(kMlp, kBatch, "adam:lr=0.01", kSeed);
  remat::io::SyntheticTask task(kMlp, kBatch, kSeed);
  feed_and_step(source, task, 0, 2);
  const MemoryState good = save(source);
  const size_t n = good.bytes.size();

  TrainingRun target(kMlp, kBatch, "adam:lr=0.01", kSeed);
  feed_and_step(target, task, 0, 1);
  struct Flip {
    size_t at;
    remat_status want;
    const char* needle;
  } flips[] = {
      {0, REMAT_ERROR_DATA_LOSS, "not a remat state"},
      {4, REMAT_ERROR_STATE_MISMATCH, "state format"},
      {8, REMAT_ERROR_STATE_MISMATCH, "another plan"},
      {12, REMAT_ERROR_STATE_MISMATCH, "another plan"},
      {16, REMAT_ERROR_STATE_MISMATCH, "another plan"},
      {24, REMAT_ERROR_DATA_LOSS, "checksum"},  // The step count: only the checksum sees it.
      {32, REMAT_ERROR_DATA_LOSS, "tensors"},
      {36, REMAT_ERROR_DATA_LOSS, "reserved"},
      {40, REMAT_ERROR_DATA_LOSS, "tensors"},
      {48, REMAT_ERROR_DATA_LOSS, "checksum"},
      {n / 2, REMAT_ERROR_DATA_LOSS, "checksum"},
      {n - 5, REMAT_ERROR_DATA_LOSS, "checksum"},
      {n - 1, REMAT_ERROR_DATA_LOSS, "checksum"},
  };
  for (const Flip& f : flips) {
    MemoryState bad = good;
    bad.bytes[f.at] ^= 0x10;
    expect_refused(target, bad, n, f.want, f.needle);
  }
  MemoryState truncated = good;
  truncated.bytes.resize(n - 4);
  expect_refused(target, truncated, truncated.bytes.size(), REMAT_ERROR_DATA_LOSS, "is ");
  truncated.bytes.resize(20);
  expect_refused(target, truncated, 20, REMAT_ERROR_DATA_LOSS, "too short");
  MemoryState longer = good;
  longer.bytes.push_back(0);
  expect_refused(target, longer, longer.bytes.size(), REMAT_ERROR_DATA_LOSS, "bytes");
  for (int call : {0, 1, 5}) {
    MemoryState failing = good;
    failing.fail_read_at = call;
    expect_refused(target, failing, n, REMAT_ERROR_CALLBACK, "reader failed");
  }
  // Another plan: the same model under another optimizer (other tensors), and another seed.
  TrainingRun sgd(kMlp, kBatch, "sgd:lr=0.05,momentum=0.9", kSeed);
  MemoryState copy = good;
  expect_refused(sgd, copy, n, REMAT_ERROR_STATE_MISMATCH, "another plan");
  TrainingRun seeded(kMlp, kBatch, "adam:lr=0.01", kSeed + 1);
  expect_refused(seeded, copy, n, REMAT_ERROR_STATE_MISMATCH, "another plan");
  // And the good state still loads.
  MemoryState fine = good;
  assert_int_equal(remat_session_load_state(target.session, read_memory, &fine, n), REMAT_OK);
  assert_true(target.params() == source.params());
  assert_int_equal(remat_session_step_count(target.session), 2);
}

void a_reader_that_changes_its_bytes_leaves_a_session_that_will_not_step(void**) {
  TrainingRun source(kMlp, kBatch, "sgd:lr=0.05", kSeed);
  MemoryState good = save(source);
  TrainingRun target(kMlp, kBatch, "sgd:lr=0.05", kSeed);
  remat::io::SyntheticTask task(kMlp, kBatch, kSeed);
  MemoryState changing = good;
  changing.flip_on_second_pass = 60;
  assert_int_equal(
      remat_session_load_state(target.session, read_memory, &changing, good.bytes.size()),
      REMAT_ERROR_DATA_LOSS);
  assert_non_null(strstr(remat_session_last_error(target.session), "partly loaded"));
  const auto values = task.batch(0);
  const auto names = task.names();
  for (size_t i = 0; i < names.size(); ++i)
    target.set(names[i], values[i].data(), values[i].size());
  assert_int_equal(remat_session_step(target.session, nullptr), REMAT_ERROR_FAILED_PRECONDITION);
  MemoryState sink;
  assert_int_equal(remat_session_save_state(target.session, write_memory, &sink),
                   REMAT_ERROR_FAILED_PRECONDITION);
  assert_int_equal(remat_session_load_state(target.session, read_memory, &good, good.bytes.size()),
                   REMAT_OK);
  assert_int_equal(remat_session_step(target.session, nullptr), REMAT_OK);
}

void save_and_load_refuse_null_arguments_and_failing_writers(void**) {
  TrainingRun run(kMlp, kBatch, "sgd:lr=0.05", kSeed);
  uint64_t size = 0;
  assert_int_equal(remat_session_state_size(nullptr, &size), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_state_size(run.session, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  MemoryState m;
  assert_int_equal(remat_session_save_state(nullptr, write_memory, &m),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_save_state(run.session, nullptr, &m),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(remat_session_last_error(run.session), "write is NULL"));
  assert_int_equal(remat_session_load_state(nullptr, read_memory, &m, 100),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_load_state(run.session, nullptr, &m, 100),
                   REMAT_ERROR_INVALID_ARGUMENT);
  for (int call : {0, 1, 3}) {
    MemoryState failing;
    failing.fail_write_at = call;
    assert_int_equal(remat_session_save_state(run.session, write_memory, &failing),
                     REMAT_ERROR_CALLBACK);
    assert_non_null(strstr(remat_session_last_error(run.session), "writer failed"));
  }
  // Size: header, every parameter and optimizer tensor, checksum.
  assert_int_equal(remat_session_state_size(run.session, &size), REMAT_OK);
  uint64_t params = 0;
  uint32_t count = 0;
  remat_plan_binding_count(run.plan, REMAT_BINDING_PARAM, &count);
  for (uint32_t i = 0; i < count; ++i) {
    remat_tensor_info info;
    remat_plan_binding(run.plan, REMAT_BINDING_PARAM, i, &info);
    params += info.bytes;
  }
  assert_int_equal(size, 48 + params + 4);  // Plain SGD keeps no optimizer state.
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(crc32c_gives_the_check_value_and_continues),
      cmocka_unit_test(resume_is_exact_for_every_optimizer),
      cmocka_unit_test(resume_is_exact_with_recomputation_and_spilling),
      cmocka_unit_test(bad_states_are_refused_and_leave_the_session_as_it_was),
      cmocka_unit_test(a_reader_that_changes_its_bytes_leaves_a_session_that_will_not_step),
      cmocka_unit_test(save_and_load_refuse_null_arguments_and_failing_writers),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
