// Data-parallel training through the session's communicator (docs/data-parallel.md): N ranks,
// each a session in a thread of this process joined by an in-process communicator, train as one
// session of N times the batch does (within float tolerance: the sums are grouped otherwise),
// dropout included; every rank holds the same bits, batch norms' running statistics included;
// recomputation and spilling change no bit; a run repeats bitwise; a NaN on one rank skips the
// step on every rank; and the session's refusals and failure paths. On the backend its first
// argument names (default "cpu"): the GPU backends copy each bucket to host memory for the
// communicator (backends/gpu/host_staging.h). On the cuda backend, one rank through NCCL's
// communicator (CUDA device memory, no host copies) too.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#ifdef REMAT_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

#include "comm/nccl_communicator.h"
#include "compiler/compiler.h"
#include "remat/remat.h"
#include "tests/runtime/session_checks.h"

namespace rc = remat::compiler;
using remat_test::bindings;

namespace {

// The backend every session of the tests runs on.
std::string g_backend = "cpu";

const char* const kMlp = "mlp:layers=3,width=16,in=8,classes=4";
const char* const kTransformer =
    "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=4,vocab=20,classes=3";
// With dropout: each rank's masks must be those of its rows in the whole batch.
const char* const kDropout =
    "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=4,vocab=20,classes=3,dropout=0.2";
// The same with tensors of 30 and 18 elements a rank: rank 1's first element of the whole
// batch's is not a multiple of four (the GPU kernels' groups of four draws).
const char* const kOddDropout =
    "transformer:layers=1,hidden=5,heads=1,ffn=7,seq=3,vocab=20,classes=3,dropout=0.2";
// With batch norms: every rank must keep the same running statistics.
const char* const kCnn = "cnn:channels=4x8,in=1x8x8,classes=3";
constexpr int kSteps = 3;

// Ranks of one process, joined in the order they start each bucket: the last rank to start a
// bucket sums it, in rank order, into every rank's arrays.
class ThreadWorld {
 public:
  explicit ThreadWorld(int size) : size_(size) {}

  remat_status start(int rank, uint32_t bucket, const remat_buffer* parts, uint32_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    Entry& e = entries_[{bucket, rounds_[{rank, bucket}]++}];
    e.parts.resize(static_cast<size_t>(size_));
    e.parts[static_cast<size_t>(rank)].assign(parts, parts + count);
    if (++e.arrived < size_) return REMAT_OK;
    for (uint32_t k = 0; k < count; ++k) {
      for (uint64_t i = 0; i < parts[k].count; ++i) {
        float sum = 0.0f;
        for (int r = 0; r < size_; ++r) {
          if (e.parts[static_cast<size_t>(r)].size() != count ||
              e.parts[static_cast<size_t>(r)][k].count != parts[k].count)
            return REMAT_ERROR_INVALID_ARGUMENT;
          sum = r == 0 ? e.parts[0][k].data[i] : sum + e.parts[static_cast<size_t>(r)][k].data[i];
        }
        for (int r = 0; r < size_; ++r) e.parts[static_cast<size_t>(r)][k].data[i] = sum;
      }
    }
    e.done = true;
    done_.notify_all();
    return REMAT_OK;
  }

  remat_status wait(int rank, uint32_t bucket) {
    std::unique_lock<std::mutex> lock(mutex_);
    const int round = rounds_[{rank, bucket}] - 1;
    if (round < 0) return REMAT_ERROR_FAILED_PRECONDITION;
    Entry& e = entries_[{bucket, round}];
    done_.wait(lock, [&] { return e.done; });
    return REMAT_OK;
  }

 private:
  struct Entry {
    std::vector<std::vector<remat_buffer>> parts;
    int arrived = 0;
    bool done = false;
  };
  const int size_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<std::pair<uint32_t, int>, Entry> entries_;  // by bucket and round
  std::map<std::pair<int, uint32_t>, int> rounds_;     // a rank's starts of a bucket
};

struct Rank {
  ThreadWorld* world;
  int rank;
};

remat_status thread_start(void* user, uint32_t bucket, const remat_buffer* parts, uint32_t count) {
  Rank* r = static_cast<Rank*>(user);
  return r->world->start(r->rank, bucket, parts, count);
}

remat_status thread_wait(void* user, uint32_t bucket) {
  Rank* r = static_cast<Rank*>(user);
  return r->world->wait(r->rank, bucket);
}

std::vector<uint8_t> compile(const char* model, int64_t batch, const std::string& strategy,
                             bool data_parallel, uint64_t device_budget = 0) {
  rc::CompileOptions o;
  o.model = model;
  o.batch = batch;
  o.optimizer = "sgd:lr=0.1,momentum=0.9";
  o.strategy = strategy;
  o.device_budget = device_budget;
  o.data_parallel.enabled = data_parallel;
  o.data_parallel.bucket_bytes = 2048;  // several buckets even for these small models
  return rc::compile(o).plan;
}

// The bytes of binding |info| for the rows [first, first + rows) of step |step|'s global batch:
// floats in [-1, 1), integers in [0, 3) (ids and labels every test model takes).
std::vector<uint8_t> rows_of(const remat_tensor_info& info, int64_t first, int64_t rows, int step) {
  const uint64_t row_bytes = info.bytes / static_cast<uint64_t>(info.dims[0]);
  std::vector<uint8_t> out(row_bytes * static_cast<uint64_t>(rows));
  const uint64_t per_row = row_bytes / 4;
  for (int64_t r = 0; r < rows; ++r) {
    for (uint64_t e = 0; e < per_row; ++e) {
      uint64_t h = (static_cast<uint64_t>(first + r) * 1000003u + e) * 2654435761u +
                   static_cast<uint64_t>(step) * 40503u + strlen(info.name);
      h ^= h >> 13;
      h *= 0x9e3779b97f4a7c15ull;
      h ^= h >> 29;
      if (info.dtype == REMAT_DTYPE_F32) {
        const float v = static_cast<float>(h % 2000) / 1000.0f - 1.0f;
        memcpy(&out[(static_cast<uint64_t>(r) * per_row + e) * 4], &v, 4);
      } else {
        const int32_t v = static_cast<int32_t>(h % 3);
        memcpy(&out[(static_cast<uint64_t>(r) * per_row + e) * 4], &v, 4);
      }
    }
  }
  return out;
}

// What a session holds after training: its parameters' bytes by name, and each step's loss and
// status.
struct Trained {
  std::map<std::string, std::vector<float>> params, buffers;
  std::vector<float> losses;
  std::vector<remat_status> statuses;
};

// The steps a rank trains (each its rows of the global batch of that step number), and where a
// NaN goes into its first input: the first element at step |nan_step| on rank |nan_rank|.
struct Schedule {
  std::vector<int> steps{0, 1, 2};  // kSteps of them
  int nan_step = -1, nan_rank = -1;
};

// Throws |what| with the status's name unless |status| is REMAT_OK: the rank threads cannot use
// cmocka's assertions, so train() reports through exceptions, which the caller turns into a
// failure on the test's thread.
void check(remat_status status, const std::string& what) {
  if (status != REMAT_OK) throw std::runtime_error(what + ": " + remat_status_string(status));
}

// Trains |bytes| on |schedule|'s steps (by default kSteps) as rank |rank| (rows of the global
// batch of the ranks together), starting from |initial| parameters, with |communicator| (may be
// null); a step may fail only with the schedule's NaN (REMAT_ERROR_NONFINITE).
Trained train(const std::vector<uint8_t>& bytes, int rank,
              const std::map<std::string, std::vector<float>>& initial,
              const remat_communicator* communicator, const Schedule& schedule = Schedule()) {
  Trained t;
  remat_plan* plan = nullptr;
  char message[512] = "";
  check(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)),
        std::string("open: ") + message);
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = g_backend.c_str();
  options.threads = 1;
  options.communicator = communicator;
  remat_session* session = nullptr;
  check(remat_session_create(plan, &options, &session, message, sizeof(message)),
        std::string("create: ") + message);
  const auto params = bindings(plan, REMAT_BINDING_PARAM);
  for (const remat_tensor_info& p : params) {
    auto found = initial.find(p.name);
    if (found != initial.end())
      check(remat_session_write_param(session, p.name, found->second.data(), p.bytes), p.name);
  }
  std::vector<remat_tensor_info> data = bindings(plan, REMAT_BINDING_INPUT);
  for (const remat_tensor_info& l : bindings(plan, REMAT_BINDING_LABEL)) data.push_back(l);
  for (int step : schedule.steps) {
    for (const remat_tensor_info& d : data) {
      const int64_t batch = d.dims[0];
      std::vector<uint8_t> rows = rows_of(d, rank * batch, batch, step);
      if (step == schedule.nan_step && rank == schedule.nan_rank && &d == &data[0]) {
        const float nan = NAN;
        memcpy(rows.data(), &nan, sizeof(nan));
      }
      check(remat_session_set_input(session, d.name, rows.data(), rows.size()), d.name);
    }
    float loss = 0.0f;
    const remat_status status = remat_session_step(session, &loss);
    if (status != REMAT_ERROR_NONFINITE || step != schedule.nan_step) {
      check(status, "rank " + std::to_string(rank) + ", step " + std::to_string(step) + ": " +
                        remat_session_last_error(session));
    }
    t.losses.push_back(loss);
    t.statuses.push_back(status);
  }
  for (const remat_tensor_info& p : params) {
    std::vector<float> values(p.bytes / 4);
    check(remat_session_read_param(session, p.name, values.data(), p.bytes), p.name);
    t.params[p.name] = std::move(values);
  }
  // Batch norms' buffers (running statistics), as 32-bit words (a counter is two).
  for (const remat_tensor_info& b : bindings(plan, REMAT_BINDING_BUFFER)) {
    std::vector<float> words(b.bytes / 4);
    check(remat_session_read_param(session, b.name, words.data(), b.bytes), b.name);
    t.buffers[b.name] = std::move(words);
  }
  remat_session_destroy(session);
  remat_plan_close(plan);
  return t;
}

// Every rank of |ranks| trained on |bytes| in threads from |initial|; one Trained per rank.
std::vector<Trained> train_ranks(const std::vector<uint8_t>& bytes, int ranks,
                                 const std::map<std::string, std::vector<float>>& initial,
                                 const Schedule& schedule = Schedule()) {
  ThreadWorld world(ranks);
  std::vector<Rank> users(static_cast<size_t>(ranks));
  std::vector<remat_communicator> comms(static_cast<size_t>(ranks));
  std::vector<Trained> out(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    users[static_cast<size_t>(r)] = {&world, r};
    comms[static_cast<size_t>(r)] = {sizeof(remat_communicator),
                                     r,
                                     ranks,
                                     &users[static_cast<size_t>(r)],
                                     thread_start,
                                     thread_wait,
                                     REMAT_MEMORY_HOST,
                                     0};
  }
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        out[static_cast<size_t>(r)] =
            train(bytes, r, initial, &comms[static_cast<size_t>(r)], schedule);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) {
    if (!e.empty()) fail_msg("%s", e.c_str());
  }
  return out;
}

// The initial parameters of |model|'s plan at batch 1.
std::map<std::string, std::vector<float>> initial_params(const char* model) {
  rc::CompileOptions o;
  o.model = model;
  o.batch = 1;
  const std::vector<uint8_t> bytes = rc::compile(o).plan;
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, nullptr, 0), REMAT_OK);
  remat_session* session = nullptr;
  assert_int_equal(remat_session_create(plan, nullptr, &session, nullptr, 0), REMAT_OK);
  std::map<std::string, std::vector<float>> out;
  for (const remat_tensor_info& p : bindings(plan, REMAT_BINDING_PARAM)) {
    std::vector<float> values(p.bytes / 4);
    assert_int_equal(remat_session_read_param(session, p.name, values.data(), p.bytes), REMAT_OK);
    out[p.name] = std::move(values);
  }
  remat_session_destroy(session);
  remat_plan_close(plan);
  return out;
}

void expect_same_bits(const Trained& a, const Trained& b, const char* what) {
  for (const auto& p : a.params) {
    if (memcmp(p.second.data(), b.params.at(p.first).data(), p.second.size() * 4) != 0)
      fail_msg("%s: parameter %s differs in its bits", what, p.first.c_str());
  }
  for (const auto& p : a.buffers) {
    if (memcmp(p.second.data(), b.buffers.at(p.first).data(), p.second.size() * 4) != 0)
      fail_msg("%s: buffer %s differs in its bits", what, p.first.c_str());
  }
  if (memcmp(a.losses.data(), b.losses.data(), a.losses.size() * 4) != 0)
    fail_msg("%s: the losses differ in their bits", what);
}

// N ranks of batch b against one session of batch N x b: losses and parameters within 2e-5 of
// the largest parameter (float32 sums grouped by rank instead of over all rows). SGD with
// momentum, whose update is linear in the gradient: Adam would turn rounding noise in a gradient
// that is zero in exact arithmetic (attention's key bias) into whole steps of its learning rate.
void n_ranks_train_as_one_session_of_the_whole_batch(void**) {
  for (const char* model : {kMlp, kTransformer, kDropout, kOddDropout}) {
    const auto initial = initial_params(model);
    // 2 and 4 divide the sums by multiplying by an exact inverse, 3 by dividing.
    for (int ranks : {2, 3, 4}) {
      const int64_t b = 2;
      const Trained whole = train(compile(model, ranks * b, "none", false), 0, initial, nullptr);
      const std::vector<Trained> parts =
          train_ranks(compile(model, b, "none", true), ranks, initial);
      for (int r = 1; r < ranks; ++r)
        expect_same_bits(parts[0], parts[static_cast<size_t>(r)], "ranks");
      for (int s = 0; s < kSteps; ++s) {
        if (fabsf(parts[0].losses[s] - whole.losses[s]) > 1e-5f * (1.0f + fabsf(whole.losses[s])))
          fail_msg("%s, %d ranks, step %d: loss %.9g, one session %.9g", model, ranks, s,
                   static_cast<double>(parts[0].losses[s]), static_cast<double>(whole.losses[s]));
      }
      for (const auto& p : whole.params) {
        float largest = 0.0f, worst = 0.0f;
        for (size_t i = 0; i < p.second.size(); ++i) {
          largest = fmaxf(largest, fabsf(p.second[i]));
          worst = fmaxf(worst, fabsf(p.second[i] - parts[0].params.at(p.first)[i]));
        }
        if (worst > 2e-5f * fmaxf(largest, 1.0f))
          fail_msg("%s, %d ranks: %s differs by %g (largest %g)", model, ranks, p.first.c_str(),
                   static_cast<double>(worst), static_cast<double>(largest));
      }
    }
  }
}

// Recomputation and spilling change no bit of a data-parallel run; nor does running it again.
void recomputation_spilling_and_a_rerun_keep_every_bit(void**) {
  const auto initial = initial_params(kTransformer);
  const std::vector<uint8_t> none = compile(kTransformer, 2, "none", true);
  const std::vector<Trained> reference = train_ranks(none, 2, initial);
  expect_same_bits(reference[0], train_ranks(none, 2, initial)[0], "a rerun");
  expect_same_bits(reference[0], train_ranks(compile(kTransformer, 2, "sqrt", true), 2, initial)[0],
                   "sqrt");
  rc::CompileOptions o;
  o.model = kTransformer;
  o.batch = 2;
  o.optimizer = "sgd:lr=0.1,momentum=0.9";
  o.strategy = "splits";
  o.data_parallel.enabled = true;
  o.data_parallel.bucket_bytes = 2048;
  const rc::CompileReport plain = rc::compile(o).report;
  const std::vector<uint8_t> spilled =
      compile(kTransformer, 2, "splits", true, plain.persistent_bytes + plain.arena_bytes * 8 / 10);
  o.device_budget = plain.persistent_bytes + plain.arena_bytes * 8 / 10;
  assert_false(rc::compile(o).report.spilled.empty());
  expect_same_bits(reference[0], train_ranks(spilled, 2, initial)[0], "splits with spills");
}

// A batch norm normalises each rank's rows by their own statistics (as PyTorch DDP without
// SyncBatchNorm), so the run is not one process's of the whole batch; but the running
// statistics are averaged over the ranks, so every rank keeps the same buffers and parameters.
void batch_norm_ranks_keep_the_same_running_statistics(void**) {
  const auto initial = initial_params(kCnn);
  const std::vector<Trained> ranks = train_ranks(compile(kCnn, 4, "none", true), 2, initial);
  assert_false(ranks[0].buffers.empty());
  expect_same_bits(ranks[0], ranks[1], "ranks");
  // The running means moved from their zeros: the average was of real statistics.
  bool moved = false;
  for (const auto& b : ranks[0].buffers) {
    if (b.first.find("running_mean") == std::string::npos) continue;
    for (float v : b.second) moved = moved || v != 0.0f;
  }
  assert_true(moved);
}

// A NaN in one rank's input makes the mean loss, which every rank checks after the first bucket's
// sum, NaN on every rank: the step is skipped everywhere (REMAT_ERROR_NONFINITE, no update), and
// the ranks go on with the same bits, those of a run without that step.
void a_nan_on_one_rank_skips_the_step_on_every_rank(void**) {
  const auto initial = initial_params(kMlp);
  const std::vector<uint8_t> bytes = compile(kMlp, 2, "none", true);
  Schedule nan;
  nan.nan_step = 1;
  nan.nan_rank = 1;
  const std::vector<Trained> ranks = train_ranks(bytes, 2, initial, nan);
  for (const Trained& t : ranks) {
    const std::vector<remat_status> expected = {REMAT_OK, REMAT_ERROR_NONFINITE, REMAT_OK};
    if (t.statuses != expected) fail_msg("a rank did not skip step 1 alone");
  }
  expect_same_bits(ranks[0], ranks[1], "ranks after a skipped step");
  Schedule without;
  without.steps = {0, 2};
  const std::vector<Trained> skipped = train_ranks(bytes, 2, initial, without);
  for (const auto& p : skipped[0].params) {
    if (memcmp(p.second.data(), ranks[0].params.at(p.first).data(), p.second.size() * 4) != 0)
      fail_msg("parameter %s differs from a run without step 1", p.first.c_str());
  }
}

// ---- The session's refusals and failure paths ----

constexpr size_t kSize = sizeof(remat_communicator);
remat_status no_start(void*, uint32_t, const remat_buffer*, uint32_t) { return REMAT_OK; }
remat_status no_wait(void*, uint32_t) { return REMAT_OK; }

// Creates a session of |bytes| with |communicator|; returns the status, the message in
// |message|, and destroys what it made.
remat_status create_with(const std::vector<uint8_t>& bytes, const remat_communicator* communicator,
                         char (&message)[512]) {
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)),
                   REMAT_OK);
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = g_backend.c_str();
  options.communicator = communicator;
  remat_session* session = nullptr;
  const remat_status status =
      remat_session_create(plan, &options, &session, message, sizeof(message));
  if (status == REMAT_OK) assert_non_null(session);
  remat_session_destroy(session);
  remat_plan_close(plan);
  return status;
}

void expect_refused(const std::vector<uint8_t>& bytes, const remat_communicator* c,
                    const char* needle) {
  char message[512] = "";
  const remat_status status = create_with(bytes, c, message);
  if (status != REMAT_ERROR_INVALID_ARGUMENT || strstr(message, needle) == nullptr)
    fail_msg("expected invalid argument with '%s', got %s: '%s'", needle,
             remat_status_string(status), message);
}

void a_session_refuses_a_missing_or_wrong_communicator(void**) {
  const std::vector<uint8_t> parallel = compile(kMlp, 2, "none", true);
  const std::vector<uint8_t> alone = compile(kMlp, 2, "none", false);
  expect_refused(parallel, nullptr, "options.communicator is NULL: the plan is data-parallel");
  remat_communicator c{kSize, 2, 2, nullptr, no_start, no_wait, REMAT_MEMORY_HOST, 0};
  expect_refused(parallel, &c, "options.communicator: rank 2 of size 2");
  c = {kSize, 0, 0, nullptr, no_start, no_wait, REMAT_MEMORY_HOST, 0};
  expect_refused(parallel, &c, "rank 0 of size 0");
  c = {kSize, -1, 2, nullptr, no_start, no_wait, REMAT_MEMORY_HOST, 0};
  expect_refused(parallel, &c, "rank -1 of size 2");
  c = {kSize, 0, 2, nullptr, nullptr, no_wait, REMAT_MEMORY_HOST, 0};
  expect_refused(parallel, &c, "options.communicator.allreduce_start is NULL");
  c = {kSize, 0, 2, nullptr, no_start, nullptr, REMAT_MEMORY_HOST, 0};
  expect_refused(parallel, &c, "options.communicator.allreduce_wait is NULL");
  c = {kSize, 1, 2, nullptr, no_start, no_wait, REMAT_MEMORY_HOST, 0};
  expect_refused(alone, &c, "has 2 ranks, but the plan is not data-parallel");
  c = {kSize + 8, 0, 1, nullptr, no_start, no_wait, REMAT_MEMORY_HOST, 0};
  expect_refused(parallel, &c, "options.communicator.struct_size is");
  c = {4, 0, 1, nullptr, no_start, no_wait, REMAT_MEMORY_HOST, 0};
  expect_refused(parallel, &c, "options.communicator.struct_size is 4");
  char message[512] = "";
  // One rank: nothing to average.
  c = {kSize, 0, 1, nullptr, no_start, no_wait, REMAT_MEMORY_HOST, 0};
  assert_int_equal(create_with(alone, &c, message), REMAT_OK);
  assert_int_equal(create_with(parallel, &c, message), REMAT_OK);
}

// A communicator's arrays are where the backend keeps its tensors: host memory on every backend,
// CUDA device memory only on that device's cuda backend; an older caller's struct, which ends
// before |memory|, means host memory.
void a_communicator_in_other_memory_is_refused(void**) {
  const std::vector<uint8_t> parallel = compile(kMlp, 2, "none", true);
  char message[512] = "";
  remat_communicator c{
      offsetof(remat_communicator, memory), 0, 1, nullptr, no_start, no_wait, 7, 0};
  assert_int_equal(create_with(parallel, &c, message), REMAT_OK);  // |memory| not read
  c.struct_size = kSize;
  expect_refused(parallel, &c, "options.communicator.memory is 7: REMAT_MEMORY_HOST (0) or");
  c.memory = REMAT_MEMORY_CUDA;
  c.device = 9;
  const std::string other =
      "options.communicator.memory is REMAT_MEMORY_CUDA (device 9), but the session's backend "
      "is '" +
      g_backend + "'";
  expect_refused(parallel, &c, other.c_str());
  c.device = 0;
  if (g_backend == "cuda") {
    assert_int_equal(create_with(parallel, &c, message), REMAT_OK);
  } else {
    expect_refused(parallel, &c, "REMAT_MEMORY_CUDA (device 0), but the session's backend is");
  }
}

// A communicator of one rank that fails the start of one bucket and records its calls.
struct Recording {
  uint32_t fail_bucket;
  std::vector<std::string> calls;
};
remat_status recording_start(void* user, uint32_t bucket, const remat_buffer*, uint32_t) {
  Recording* r = static_cast<Recording*>(user);
  r->calls.push_back("start " + std::to_string(bucket));
  return bucket == r->fail_bucket ? REMAT_ERROR_UNAVAILABLE : REMAT_OK;
}
remat_status recording_wait(void* user, uint32_t bucket) {
  static_cast<Recording*>(user)->calls.push_back("wait " + std::to_string(bucket));
  return REMAT_OK;
}

// A failed start stops the step with REMAT_ERROR_CALLBACK naming the bucket, and the session
// still waits for the bucket it started before, so no sum is left writing its arena; the next
// step runs.
void a_failing_communicator_stops_the_step_and_drains_its_buckets(void**) {
  const std::vector<uint8_t> bytes = compile(kMlp, 2, "none", true);
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, nullptr, 0), REMAT_OK);
  Recording recording{1, {}};
  const remat_communicator c{
      kSize, 0, 1, &recording, recording_start, recording_wait, REMAT_MEMORY_HOST, 0};
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = g_backend.c_str();
  options.communicator = &c;
  remat_session* session = nullptr;
  assert_int_equal(remat_session_create(plan, &options, &session, nullptr, 0), REMAT_OK);
  for (const remat_tensor_info& d : bindings(plan, REMAT_BINDING_INPUT)) {
    const std::vector<uint8_t> rows = rows_of(d, 0, d.dims[0], 0);
    assert_int_equal(remat_session_set_input(session, d.name, rows.data(), rows.size()), REMAT_OK);
  }
  for (const remat_tensor_info& d : bindings(plan, REMAT_BINDING_LABEL)) {
    const std::vector<uint8_t> rows = rows_of(d, 0, d.dims[0], 0);
    assert_int_equal(remat_session_set_input(session, d.name, rows.data(), rows.size()), REMAT_OK);
  }
  assert_int_equal(remat_session_step(session, nullptr), REMAT_ERROR_CALLBACK);
  const char* error = remat_session_last_error(session);
  if (strstr(error, "the communicator's allreduce_start of bucket 1 returned") == nullptr)
    fail_msg("message: %s", error);
  const std::vector<std::string> expected = {"start 0", "start 1", "wait 0"};
  assert_true(recording.calls == expected);
  recording.fail_bucket = 1000;
  recording.calls.clear();
  assert_int_equal(remat_session_step(session, nullptr), REMAT_OK);
  assert_string_equal(recording.calls.front().c_str(), "start 0");
  assert_string_equal(recording.calls.back().c_str(),
                      ("wait " + std::to_string(recording.calls.size() / 2 - 1)).c_str());
  remat_session_destroy(session);
  remat_plan_close(plan);
}

#ifdef REMAT_TEST_CUDA
// A communicator of CUDA device memory standing for two ranks that hold the same gradients: its
// start copies each array to the host on a stream of its own, doubles it there (x + x, exact)
// and copies it back; its wait waits for that stream. The session then divides by 2, which
// gives each array back bit for bit, so a plan trained through it ends with the bits of the plan
// without data-parallel training, but only if the backend hands over each tensor's own device
// address once the ops that wrote it are done (the copies do not wait for the backend's stream).
struct Doubling {
  cudaStream_t stream = nullptr;
  std::vector<float> host;
};
remat_status doubling_start(void* user, uint32_t, const remat_buffer* parts, uint32_t count) {
  Doubling* d = static_cast<Doubling*>(user);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t bytes = static_cast<size_t>(parts[i].count) * sizeof(float);
    d->host.resize(static_cast<size_t>(parts[i].count));
    if (cudaMemcpyAsync(d->host.data(), parts[i].data, bytes, cudaMemcpyDeviceToHost, d->stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(d->stream) != cudaSuccess)
      return REMAT_ERROR_INTERNAL;
    for (float& x : d->host) x = x + x;
    if (cudaMemcpyAsync(parts[i].data, d->host.data(), bytes, cudaMemcpyHostToDevice, d->stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(d->stream) != cudaSuccess)
      return REMAT_ERROR_INTERNAL;
  }
  return REMAT_OK;
}
remat_status doubling_wait(void* user, uint32_t) {
  return cudaStreamSynchronize(static_cast<Doubling*>(user)->stream) == cudaSuccess
             ? REMAT_OK
             : REMAT_ERROR_INTERNAL;
}

void a_device_memory_communicator_reads_each_tensor_after_its_ops(void**) {
  Doubling doubling;
  assert_int_equal(cudaSetDevice(0), cudaSuccess);
  assert_int_equal(cudaStreamCreateWithFlags(&doubling.stream, cudaStreamNonBlocking), cudaSuccess);
  const remat_communicator c{
      kSize, 0, 2, &doubling, doubling_start, doubling_wait, REMAT_MEMORY_CUDA, 0};
  for (const char* model : {kMlp, kDropout, kCnn}) {
    const Trained alone = train(compile(model, 2, "none", false), 0, {}, nullptr);
    const Trained doubled = train(compile(model, 2, "none", true), 0, {}, &c);
    assert_true(doubled.losses == alone.losses);
    assert_true(doubled.params == alone.params);
    assert_true(doubled.buffers == alone.buffers);
  }
  cudaStreamDestroy(doubling.stream);
}

// One rank through NCCL's communicator, which sums the tensors in CUDA device memory: NCCL's
// sum of one rank and the division by 1 change nothing, so a data-parallel plan ends with the
// bits of the plan without data-parallel training, dropout included; and the communicator's
// refusals. On the cuda backend only (the test is not registered elsewhere).
void one_rank_through_nccl_keeps_every_bit(void**) {
  std::unique_ptr<remat::comm::NcclCommunicator> nccl;
  try {
    nccl = remat::comm::NcclCommunicator::open(0, 60);
    nccl->connect(nccl->new_id(), 0, 1);
  } catch (const std::exception& e) {
    // NCCL is a run-time dependency the machine may lack; anything else is a failure.
    if (strstr(e.what(), "cannot load NCCL") != nullptr ||
        strstr(e.what(), "built without NCCL") != nullptr) {
      printf("not run: %s\n", e.what());
      skip();
    }
    fail_msg("NCCL on device 0: %s", e.what());
  }
  const remat_communicator* c = nccl->communicator();
  assert_int_equal(c->memory, REMAT_MEMORY_CUDA);
  assert_int_equal(c->device, 0);
  assert_int_equal(c->rank, 0);
  assert_int_equal(c->size, 1);
  for (const char* model : {kMlp, kDropout, kCnn}) {
    const Trained alone = train(compile(model, 2, "none", false), 0, {}, nullptr);
    const Trained summed = train(compile(model, 2, "none", true), 0, {}, c);
    assert_true(summed.losses == alone.losses);
    assert_true(summed.params == alone.params);
    assert_true(summed.buffers == alone.buffers);
  }
  remat_buffer nine[9] = {};
  assert_int_equal(c->allreduce_start(c->user, 0, nine, 9), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(c->allreduce_wait(c->user, 77), REMAT_ERROR_FAILED_PRECONDITION);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_backend = argv[1];
  if (!remat_test::backend_available(g_backend, compile(kMlp, 2, "none", false))) return 77;
  printf("data-parallel training on the %s backend\n", g_backend.c_str());
  std::vector<CMUnitTest> tests = {
      cmocka_unit_test(n_ranks_train_as_one_session_of_the_whole_batch),
      cmocka_unit_test(recomputation_spilling_and_a_rerun_keep_every_bit),
      cmocka_unit_test(batch_norm_ranks_keep_the_same_running_statistics),
      cmocka_unit_test(a_nan_on_one_rank_skips_the_step_on_every_rank),
      cmocka_unit_test(a_session_refuses_a_missing_or_wrong_communicator),
      cmocka_unit_test(a_communicator_in_other_memory_is_refused),
      cmocka_unit_test(a_failing_communicator_stops_the_step_and_drains_its_buckets),
  };
#ifdef REMAT_TEST_CUDA
  if (g_backend == "cuda") {
    tests.push_back(cmocka_unit_test(a_device_memory_communicator_reads_each_tensor_after_its_ops));
    tests.push_back(cmocka_unit_test(one_rank_through_nccl_keeps_every_bit));
  }
#endif
  return _cmocka_run_group_tests("data_parallel", tests.data(), tests.size(), nullptr, nullptr);
}
