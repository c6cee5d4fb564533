// `remat size`: its figures equal what the runtime binds, its max-batch search answers the
// question exactly, its JSON parses, bad input is refused by name, and the timeline draws.
#include "tests/cmocka_cpp.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_args.h"
#include "cli/size_timeline.h"
#include "cli/sizing.h"
#include "compiler/compiler.h"
#include "compiler/templates/aliases.h"
#include "remat/remat.h"

#if !defined(REMAT_CLI) || !defined(REMAT_TEST_TMP)
#error "REMAT_CLI must name the remat binary and REMAT_TEST_TMP a scratch folder"
#endif

namespace {

using remat::cli::SizeRow;
using remat::cli::SizeSetup;

const char* const kMlp = "mlp:layers=6,width=48,in=16,classes=5";
const char* const kTransformer =
    "transformer:layers=3,hidden=32,heads=4,ffn=64,seq=16,vocab=50,classes=3";

struct Result {
  int code;
  std::string out;  // stdout only
  std::string all;  // stdout and stderr
};

// A scratch file of this process, removed when it exits: cli_size and cli_size_timeline_render
// run this binary at the same time, so fixed names would collide.
std::string scratch(const char* name) {
  static std::vector<std::string> files;
  if (files.empty()) {
    atexit([] {
      for (const std::string& f : files) remove(f.c_str());
    });
  }
  files.push_back(std::string(REMAT_TEST_TMP) + "/size-" + std::to_string(getpid()) + "-" + name);
  return files.back();
}

// Runs `remat ARGS`; stdout alone and stdout + stderr.
Result run_remat(const std::string& args) {
  const std::string err = scratch("stderr.txt");
  const std::string command = std::string(REMAT_CLI) + " " + args + " 2>" + err;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) fail_msg("cannot run %s", command.c_str());
  Result r{0, "", ""};
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.all = r.out;
  if (FILE* f = fopen(err.c_str(), "r")) {
    while ((n = fread(buffer, 1, sizeof(buffer), f)) > 0) r.all.append(buffer, n);
    fclose(f);
  }
  remove(err.c_str());
  return r;
}

void expect(const Result& r, int code, const char* needle) {
  if (r.code != code || r.all.find(needle) == std::string::npos) {
    fail_msg("expected exit %d and '%s', got exit %d:\n%s", code, needle, r.code, r.all.c_str());
  }
}

// A small JSON reader: enough to check the output is well-formed and to read its fields.
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // string value, or the number's digits
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json& operator[](const std::string& key) const {
    auto it = fields.find(key);
    if (kind != kObject || it == fields.end()) fail_msg("JSON has no field '%s'", key.c_str());
    return it->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse_document() {
    Json v = value();
    space();
    if (at_ != s_.size()) error("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void error(const char* what) {
    fail_msg("invalid JSON (%s) at byte %zu: ...%s", what, at_, s_.substr(at_, 40).c_str());
    abort();
  }
  void space() {
    while (at_ < s_.size() && strchr(" \t\r\n", s_[at_]) != nullptr) ++at_;
  }
  bool take(char c) {
    space();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  void want(char c) {
    if (!take(c)) error("unexpected character");
  }
  std::string string() {
    want('"');
    std::string out;
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c == '\\') {
        if (at_ >= s_.size()) error("bad escape");
        c = s_[at_++];
        if (c == 'u') {
          at_ += 4;
          c = '?';
        } else if (strchr("\"\\/bfnrt", c) == nullptr)
          error("bad escape");
      }
      out += c;
    }
    want('"');
    return out;
  }
  Json value() {
    space();
    Json v;
    if (at_ >= s_.size()) error("end of input");
    const char c = s_[at_];
    if (c == '{') {
      v.kind = Json::kObject;
      ++at_;
      if (take('}')) return v;
      do {
        const std::string key = string();
        want(':');
        v.fields[key] = value();
      } while (take(','));
      want('}');
    } else if (c == '[') {
      v.kind = Json::kArray;
      ++at_;
      if (take(']')) return v;
      do v.items.push_back(value());
      while (take(','));
      want(']');
    } else if (c == '"') {
      v.kind = Json::kString;
      v.text = string();
    } else if (s_.compare(at_, 4, "null") == 0) {
      at_ += 4;
    } else if (s_.compare(at_, 4, "true") == 0 || s_.compare(at_, 5, "false") == 0) {
      v.kind = Json::kBool;
      v.boolean = s_[at_] == 't';
      at_ += v.boolean ? 4 : 5;
    } else {
      const size_t start = at_;
      while (at_ < s_.size() && strchr("+-0123456789.eE", s_[at_]) != nullptr) ++at_;
      if (at_ == start) error("unexpected character");
      v.kind = Json::kNumber;
      v.text = s_.substr(start, at_ - start);
      v.number = strtod(v.text.c_str(), nullptr);
    }
    return v;
  }
  const std::string& s_;
  size_t at_ = 0;
};

uint64_t as_u64(const Json& v) {
  if (v.kind != Json::kNumber) fail_msg("expected a number");
  return strtoull(v.text.c_str(), nullptr, 10);
}

SizeSetup setup_for(const char* model, uint64_t budget = 0) {
  SizeSetup s;
  s.model = model;
  s.device_budget = budget;
  return s;
}

struct PlanCloser {
  void operator()(remat_plan* p) const { remat_plan_close(p); }
};

// Creates a CPU session for |plan| over a caller arena of exactly |arena_bytes| bytes and, when
// |host_bytes| is not 0, a caller host spill region of exactly |host_bytes| bytes.
remat_status session_with_regions(const std::vector<uint8_t>& plan, uint32_t alignment,
                                  uint64_t arena_bytes, uint64_t host_bytes = 0) {
  remat_plan* opened = nullptr;
  char message[512];
  const remat_status status =
      remat_plan_open(plan.data(), plan.size(), &opened, message, sizeof(message));
  if (status != REMAT_OK) fail_msg("plan does not open: %s", message);
  std::unique_ptr<remat_plan, PlanCloser> closer(opened);
  auto aligned = [alignment](uint64_t bytes) {
    return aligned_alloc(alignment, (bytes + alignment) / alignment * alignment);
  };
  void* arena = aligned(arena_bytes);
  void* host = host_bytes ? aligned(host_bytes) : nullptr;
  // One rank, for a data-parallel plan (any other plan takes a communicator of one rank too).
  static const remat_communicator one_rank{
      sizeof(remat_communicator),
      0,
      1,
      nullptr,
      [](void*, uint32_t, const remat_buffer*, uint32_t) { return REMAT_OK; },
      [](void*, uint32_t) { return REMAT_OK; },
      REMAT_MEMORY_HOST,
      0};
  remat_session_options options;
  remat_session_options_init(&options);
  options.communicator = &one_rank;
  options.arena = arena;
  options.arena_size = arena_bytes;
  options.host = host;
  options.host_size = host_bytes;
  remat_session* session = nullptr;
  const remat_status created =
      remat_session_create(opened, &options, &session, message, sizeof(message));
  remat_session_destroy(session);
  free(host);
  free(arena);
  return created;
}

// The plan that |row| describes binds an arena (and, when it spills, a host region) of exactly
// the row's sizes, and refuses one byte less of either.
void expect_row_is_what_the_runtime_binds(const SizeSetup& setup, const SizeRow& row) {
  const char* what = row.strategy.c_str();
  if (!row.ok()) fail_msg("%s %s: %s", setup.model.c_str(), what, row.error.c_str());
  const remat::compiler::CompileResult plan = remat::compiler::compile(
      remat::cli::size_options(setup, row.strategy, row.batch, row.arena_budget));
  assert_int_equal(plan.report.arena_bytes, row.arena_bytes);
  assert_int_equal(plan.report.host_bytes, row.host_bytes);
  assert_int_equal(plan.report.spilled.size(), row.spills);
  if (session_with_regions(plan.plan, setup.alignment, row.arena_bytes, row.host_bytes) !=
      REMAT_OK) {
    fail_msg("%s %s: the printed arena %llu / host %llu bytes are refused", setup.model.c_str(),
             what, static_cast<unsigned long long>(row.arena_bytes),
             static_cast<unsigned long long>(row.host_bytes));
  }
  assert_int_equal(
      session_with_regions(plan.plan, setup.alignment, row.arena_bytes - 1, row.host_bytes),
      REMAT_ERROR_ARENA_TOO_SMALL);
  if (row.host_bytes > 0) {
    assert_int_equal(
        session_with_regions(plan.plan, setup.alignment, row.arena_bytes, row.host_bytes - 1),
        REMAT_ERROR_ARENA_TOO_SMALL);
  }
}

// Checkpoints of the test models for a `manual:` row (one per model, in kModels order).
const char* const kManual[] = {
    "manual:fc1.out,fc3.relu",
    "manual:encoder.layer.0.output.LayerNorm.out,encoder.layer.1.attention.output.residual"};
const char* const kModels[] = {kMlp, kTransformer};

// A device budget that makes |strategy| spill: 80% of the arena it needs without spilling.
uint64_t spilling_budget(const SizeSetup& setup, const std::string& strategy, int64_t batch) {
  const SizeRow plain = remat::cli::size_row(setup, strategy, batch);
  if (!plain.ok()) fail_msg("%s: %s", strategy.c_str(), plain.error.c_str());
  return plain.persistent_bytes + plain.arena_bytes * 8 / 10;
}

}  // namespace

static void the_printed_arena_is_the_arena_the_runtime_binds_to_the_byte(void**) {
  for (size_t m = 0; m < 2; ++m) {
    const SizeSetup setup = setup_for(kModels[m]);
    for (const char* strategy : {"none", "sqrt", "selective", kManual[m]}) {
      const SizeRow row = remat::cli::size_row(setup, strategy, 4);
      // selective on the mlp keeps every layer's activation (each product's chain down to its
      // relu, which relu's backward reads), as none does; elsewhere each recomputes something.
      const bool keeps_all =
          std::string(strategy) == "none" || (m == 0 && std::string(strategy) == "selective");
      if (!keeps_all && !(row.recomputed_flops > 0)) {
        fail_msg("%s %s recomputes nothing", kModels[m], strategy);
      }
      expect_row_is_what_the_runtime_binds(setup, row);
    }
    // A `budget` row halfway between the arenas of sqrt and none: it has to recompute.
    const uint64_t none = remat::cli::size_row(setup, "none", 4).arena_bytes;
    const uint64_t half = (none + remat::cli::size_row(setup, "sqrt", 4).arena_bytes) / 2;
    const SizeRow budget = remat::cli::size_row(setup, "budget", 4, half);
    assert_true(budget.ok() && budget.arena_bytes <= half && budget.recomputed_flops > 0);
    expect_row_is_what_the_runtime_binds(setup, budget);
  }
}

// The host memory a GPU backend takes for |plan|'s buckets, worked out from its parameter
// bindings: the buckets hold every parameter's gradient (float32, each padded to 64 bytes) and
// the loss (one float, padded too), in whole 4096-byte pages.
static uint64_t allreduce_host_bytes_from_bindings(const std::vector<uint8_t>& bytes) {
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, nullptr, 0), REMAT_OK);
  uint32_t count = 0;
  assert_int_equal(remat_plan_binding_count(plan, REMAT_BINDING_PARAM, &count), REMAT_OK);
  uint64_t slots = 64;  // the loss
  for (uint32_t i = 0; i < count; ++i) {
    remat_tensor_info info{};
    assert_int_equal(remat_plan_binding(plan, REMAT_BINDING_PARAM, i, &info), REMAT_OK);
    slots += (info.bytes + 63) / 64 * 64;
  }
  remat_plan_close(plan);
  return (slots + 4095) / 4096 * 4096;
}

// --data-parallel: each rank's plan, whose gradients live until their bucket's sum is done, and
// the host memory a GPU backend's session of it takes for the buckets' copies.
static void a_data_parallel_row_is_the_plan_a_rank_binds(void**) {
  for (const char* model : kModels) {
    SizeSetup setup = setup_for(model);
    setup.data_parallel.enabled = true;
    setup.data_parallel.bucket_bytes = 2048;
    for (const char* strategy : {"none", "sqrt"}) {
      const SizeRow row = remat::cli::size_row(setup, strategy, 4);
      expect_row_is_what_the_runtime_binds(setup, row);
      assert_true(row.arena_bytes >=
                  remat::cli::size_row(setup_for(model), strategy, 4).arena_bytes);
      const std::vector<uint8_t> bytes =
          remat::compiler::compile(remat::cli::size_options(setup, strategy, 4, 0)).plan;
      assert_int_equal(row.allreduce_host_bytes, allreduce_host_bytes_from_bindings(bytes));
    }
    assert_int_equal(remat::cli::size_row(setup_for(model), "none", 4).allreduce_host_bytes, 0);
  }
  const Result r = run_remat(std::string("size ") + kMlp +
                             " --batch 4 --data-parallel --bucket-size 2KiB --json");
  expect(r, 0, "\"data_parallel_bucket_bytes\": 2048");
  SizeSetup mlp = setup_for(kMlp);
  mlp.data_parallel.enabled = true;
  mlp.data_parallel.bucket_bytes = 2048;
  const uint64_t slots = allreduce_host_bytes_from_bindings(
      remat::compiler::compile(remat::cli::size_options(mlp, "none", 4, 0)).plan);
  expect(r, 0, ("\"allreduce_host_bytes\": " + std::to_string(slots)).c_str());
  expect(run_remat(std::string("size ") + kMlp + " --batch 4 --data-parallel --bucket-size 2KiB"),
         0,
         ("on OpenCL, and CUDA with --communicator mpi, their host copies take " +
          remat::cli::format_bytes(slots))
             .c_str());
  expect(run_remat(std::string("size ") + kMlp + " --batch 4 --json"), 0,
         "\"allreduce_host_bytes\": null");
  expect(run_remat(std::string("size ") + kMlp + " --batch 4 --bucket-size 2KiB"), 2,
         "--bucket-size applies to --data-parallel");
}

static void a_spilled_row_prints_the_arena_and_host_region_the_runtime_binds(void**) {
  for (const char* model : kModels) {
    SizeSetup setup = setup_for(model);
    setup.device_budget = spilling_budget(setup, "splits", 4);
    setup.host_budget = UINT64_MAX;  // what --device-budget without --host-budget gives
    const SizeRow row = remat::cli::size_row(setup, "splits", 4);
    if (!row.ok()) fail_msg("%s: %s", model, row.error.c_str());
    if (row.spills == 0 || row.host_bytes == 0)
      fail_msg("%s: nothing spilled at the budget", model);
    assert_true(row.device_bytes() <= setup.device_budget);
    expect_row_is_what_the_runtime_binds(setup, row);
  }
  // The command prints the same figures, in JSON and in the table.
  SizeSetup setup = setup_for(kTransformer);
  setup.device_budget = spilling_budget(setup, "splits", 4);
  setup.host_budget = UINT64_MAX;
  const SizeRow want = remat::cli::size_row(setup, "splits", 4);
  const std::string size = std::string("size ") + kTransformer +
                           " --batch 4 --strategy splits --device-budget " +
                           std::to_string(setup.device_budget);
  const Result r = run_remat(size + " --json");
  expect(r, 0, "\"rows\"");
  const Json doc = JsonParser(r.out).parse_document();
  assert_int_equal(as_u64(doc["device_budget_bytes"]), setup.device_budget);
  assert_true(doc["arena_budget_bytes"].kind == Json::kNull);
  assert_true(doc["host_budget_bytes"].kind == Json::kNull);  // no limit
  assert_true(doc["rows"].items.at(0)["fits"].boolean);
  const Json& row = doc["rows"].items.at(0);
  assert_int_equal(as_u64(row["arena_bytes"]), want.arena_bytes);
  assert_int_equal(as_u64(row["host_bytes"]), want.host_bytes);
  assert_int_equal(as_u64(row["spills"]), want.spills);
  const Result table = run_remat(size);
  expect(table, 0, (" " + std::to_string(want.arena_bytes) + " ").c_str());
  expect(table, 0, "  spills  ");
  expect(table, 0, ("device:     " + remat::cli::format_bytes(setup.device_budget)).c_str());
  // --host-budget 0: the same device budget without spilling; the row does not fit.
  const Result unspilled = run_remat(size + " --host-budget 0 --json");
  expect(unspilled, 0, "\"rows\"");
  const Json none = JsonParser(unspilled.out).parse_document();
  assert_int_equal(as_u64(none["host_budget_bytes"]), 0);
  assert_int_equal(as_u64(none["rows"].items.at(0)["spills"]), 0);
  assert_true(none["rows"].items.at(0)["fits"].kind == Json::kBool &&
              !none["rows"].items.at(0)["fits"].boolean);
  // A host budget below what the row spills: an error row naming both figures.
  expect(run_remat(size + " --host-budget " + std::to_string(want.host_bytes - 1)), 1,
         ("spills " + std::to_string(want.host_bytes) + " bytes to host").c_str());
}

static void the_arena_printed_by_the_command_trains_and_one_byte_less_is_refused(void**) {
  const std::string model = kTransformer;
  const Result sized = run_remat("size " + model + " --batch 4 --strategy sqrt --json");
  expect(sized, 0, "\"rows\"");
  const Json doc = JsonParser(sized.out).parse_document();
  const uint64_t arena = as_u64(doc["rows"].items.at(0)["arena_bytes"]);
  const std::string train = "train " + model + " --batch 4 --strategy sqrt --steps 1 --arena ";
  expect(run_remat(train + std::to_string(arena)), 0, "step");
  const Result smaller = run_remat(train + std::to_string(arena - 1));
  assert_int_equal(smaller.code, 1);
  // The text table prints the same exact figure.
  expect(run_remat("size " + model + " --batch 4 --strategy sqrt"), 0,
         (" " + std::to_string(arena) + " ").c_str());
}

// A budget makes size compile the model once more for its persistent bytes: at the batch asked
// for, since a batch norm over a 1 x 1 map (this resnet's last stage) refuses batch 1.
static void a_budget_sizes_a_model_that_refuses_batch_1(void**) {
  expect(run_remat("size resnet:depth=8,width=4,in=3x4x4,classes=2 --batch 4 --device-budget 1GiB"),
         0, "auto");
}

static void the_cost_model_flags_reach_the_compiler(void**) {
  SizeSetup setup = setup_for(kMlp);
  setup.copy_bandwidth = 1.25e9;
  setup.compute_rate = 3.5e11;
  const remat::compiler::CompileOptions o = remat::cli::size_options(setup, "splits", 4, 0);
  assert_true(o.copy_bandwidth == 1.25e9);
  assert_true(o.compute_rate == 3.5e11);
  const remat::compiler::CompileResult plan = remat::compiler::compile(o);
  assert_true(plan.report.copy_bandwidth == 1.25e9);
  assert_true(plan.report.compute_rate == 3.5e11);
  // The command reads both flags into the setup it sizes with, and says so in JSON.
  const Result r = run_remat(
      std::string("size ") + kMlp +
      " --batch 4 --strategy splits --copy-bandwidth 1.25e9 --compute-rate 3.5e11 --json");
  expect(r, 0, "\"rows\"");
  const Json doc = JsonParser(r.out).parse_document();
  assert_true(doc["copy_bandwidth_bytes_per_s"].number == 1.25e9);
  assert_true(doc["compute_rate_flops_per_s"].number == 3.5e11);
  // --backend picks the defaults the flags override; an unknown backend is named.
  const auto& cuda = remat::compiler::target_profile("cuda");
  const Json on_cuda =
      JsonParser(run_remat(std::string("size ") + kMlp + " --batch 4 --backend cuda --json").out)
          .parse_document();
  assert_true(on_cuda["copy_bandwidth_bytes_per_s"].number == cuda.copy_bandwidth);
  assert_true(on_cuda["compute_rate_flops_per_s"].number == cuda.compute_rate);
  expect(run_remat(std::string("size ") + kMlp + " --batch 4 --backend tpu"), 1,
         "no device profile for backend 'tpu'");
}

static void live_bytes_peak_at_the_lower_bound_and_the_backward_pass_follows_the_forward(void**) {
  const SizeSetup setup = setup_for(kTransformer);
  for (const char* strategy : {"none", "sqrt", "selective"}) {
    const SizeRow row = remat::cli::size_row(setup, strategy, 3);
    uint64_t peak = 0;
    for (uint64_t v : row.live_bytes) peak = peak > v ? peak : v;
    // The step's ops; the eval program, smaller here, is not drawn.
    assert_true(row.eval_ops > 0);
    assert_int_equal(row.live_bytes.size(), row.op_count - row.eval_ops);
    assert_int_equal(peak, row.lower_bound);
    assert_true(row.lower_bound <= row.arena_bytes);
    assert_true(row.backward_start > 0 && row.backward_start < row.op_count);
  }
}

static void the_max_batch_fits_and_one_more_does_not(void**) {
  const SizeSetup probe = setup_for(kTransformer);
  const SizeRow at8 = remat::cli::size_row(probe, "none", 8);
  const uint64_t budget = at8.device_bytes() + 12345;
  const SizeSetup setup = setup_for(kTransformer, budget);
  int64_t none_batch = 0;
  for (const char* strategy : {"none", "sqrt", "selective"}) {
    const remat::cli::MaxBatch m = remat::cli::find_max_batch(setup, strategy, 1, 1 << 20, budget);
    if (!m.row.ok()) fail_msg("%s: %s", strategy, m.row.error.c_str());
    assert_false(m.capped);
    assert_true(m.row.batch >= 8);
    const SizeRow fits = remat::cli::size_row(setup, strategy, m.row.batch);
    const SizeRow over = remat::cli::size_row(setup, strategy, m.row.batch + 1);
    assert_true(fits.device_bytes() <= budget);
    assert_true(over.device_bytes() > budget);
    assert_int_equal(fits.arena_bytes, m.row.arena_bytes);
    if (std::string(strategy) == "none")
      none_batch = m.row.batch;
    else
      assert_true(m.row.batch >= none_batch);
  }
}

static void the_max_batch_search_agrees_with_trying_every_batch(void**) {
  const SizeSetup probe = setup_for(kMlp);
  const uint64_t budget = remat::cli::size_row(probe, "none", 37).device_bytes() + 1;
  const SizeSetup setup = setup_for(kMlp, budget);
  for (const char* strategy : {"none", "sqrt"}) {
    int64_t brute = 0;
    for (int64_t b = 1; b <= 80; ++b) {
      if (remat::cli::size_row(setup, strategy, b).device_bytes() <= budget) brute = b;
    }
    const remat::cli::MaxBatch m = remat::cli::find_max_batch(setup, strategy, 1, 80, budget);
    assert_int_equal(m.row.batch, brute);
  }
  // A budget below batch 1 answers 0; a range whose top fits says so.
  assert_int_equal(remat::cli::find_max_batch(setup, "none", 1, 80, 100).row.batch, 0);
  const remat::cli::MaxBatch capped = remat::cli::find_max_batch(setup, "none", 1, 5, budget);
  assert_true(capped.capped);
  assert_int_equal(capped.row.batch, 5);
}

// --precision fp32,bf16,fp16: rows for each precision, each the figures size gives for that
// precision alone; the JSON rows name theirs. A precision listed twice, an unknown one and a
// timeline of several are usage errors.
static void several_precisions_give_rows_for_each(void**) {
  const std::string model = std::string("size ") + kTransformer + " --batch 4 --strategy none,sqrt";
  const Result all = run_remat(model + " --precision fp32,bf16,fp16 --json");
  expect(all, 0, "\"rows\"");
  const Json doc = JsonParser(all.out).parse_document();
  assert_string_equal(doc["precision"].text.c_str(), "fp32,bf16,fp16");
  const std::vector<Json>& rows = doc["rows"].items;
  assert_int_equal(rows.size(), 3 * 2);
  for (const char* precision : {"fp32", "bf16", "fp16"}) {
    const Json alone =
        JsonParser(run_remat(model + " --precision " + precision + " --json").out).parse_document();
    for (const Json& want : alone["rows"].items) {
      bool found = false;
      for (const Json& row : rows) {
        found = found || (row["precision"].text == precision &&
                          row["strategy"].text == want["strategy"].text &&
                          as_u64(row["arena_bytes"]) == as_u64(want["arena_bytes"]) &&
                          as_u64(row["persistent_bytes"]) == as_u64(want["persistent_bytes"]));
      }
      if (!found)
        fail_msg("no %s %s row of %s's figures", precision, want["strategy"].text.c_str(),
                 precision);
    }
  }
  expect(run_remat(model + " --precision fp32,bf16"), 0, "strategy  precision  batch");
  expect(run_remat(model + " --precision bf16,bf16"), 2, "--precision lists 'bf16' twice");
  expect(run_remat(model + " --precision fp32,fp8"), 2, "--precision 'fp8'");
  expect(run_remat(model + " --precision fp32,bf16 --timeline " + scratch("two.svg")), 2,
         "--timeline draws one precision");
}

static void json_output_parses_with_the_documented_fields(void**) {
  const std::string timeline = scratch("json.svg");
  const Result r = run_remat(std::string("size ") + kMlp +
                             " --batch 2..3 --device-budget 1MiB --host-budget 0 --timeline " +
                             timeline + " --json");
  expect(r, 0, "\"rows\"");
  const Json doc = JsonParser(r.out).parse_document();
  assert_string_equal(doc["model"].text.c_str(), kMlp);
  assert_int_equal(as_u64(doc["device_budget_bytes"]), 1 << 20);
  assert_true(doc["arena_budget_bytes"].kind == Json::kNull);
  assert_int_equal(as_u64(doc["host_budget_bytes"]), 0);
  const remat::compiler::CompileOptions defaults;
  assert_true(doc["copy_bandwidth_bytes_per_s"].number == defaults.copy_bandwidth);
  assert_true(doc["compute_rate_flops_per_s"].number == defaults.compute_rate);
  assert_string_equal(doc["timeline"].text.c_str(), timeline.c_str());
  const std::vector<Json>& rows = doc["rows"].items;
  assert_int_equal(rows.size(), 2 * 4);  // two batches x none, sqrt, selective, auto
  const SizeSetup setup = setup_for(kMlp);
  for (const Json& row : rows) {
    if (row["error"].kind != Json::kNull) continue;  // budget rows while that strategy is absent
    const std::string strategy = row["strategy"].text;
    const SizeRow want = remat::cli::size_row(
        setup, strategy, static_cast<int64_t>(row["batch"].number),
        row["arena_budget_bytes"].kind == Json::kNull ? 0 : as_u64(row["arena_budget_bytes"]));
    assert_int_equal(as_u64(row["arena_bytes"]), want.arena_bytes);
    assert_int_equal(as_u64(row["persistent_bytes"]), want.persistent_bytes);
    assert_int_equal(as_u64(row["device_bytes"]), want.arena_bytes + want.persistent_bytes);
    assert_int_equal(
        as_u64(row["param_bytes"]) + as_u64(row["optimizer_state_bytes"]) <= want.persistent_bytes,
        1);
    assert_int_equal(as_u64(row["lower_bound_bytes"]), want.lower_bound);
    assert_int_equal(as_u64(row["host_bytes"]), 0);
    assert_int_equal(as_u64(row["spills"]), 0);
    assert_true(row["fits"].kind == Json::kBool);
    assert_true(row["recomputed_flops_share"].number >= 0 &&
                row["recomputed_flops_share"].number <= 1);
    assert_true(row["checkpoints"].kind == Json::kArray);
  }
  const Result m = run_remat(
      std::string("size ") + kMlp +
      " --max-batch --batch 1..4096 --device-budget 2MiB --host-budget 0 --strategy sqrt --json");
  expect(m, 0, "\"vs_none\"");
  const Json max = JsonParser(m.out).parse_document();
  assert_true(max["max_batch"].boolean);
  assert_string_equal(max["rows"].items.at(0)["strategy"].text.c_str(),
                      "none");  // added as the reference
  assert_true(max["rows"].items.at(1)["vs_none"].number >= 1.0);
}

// auto's max batch is the largest batch where any of its schedules fits: its search (smallest
// schedule per probe, started after the fixed strategies) agrees with trying every batch.
static void the_auto_max_batch_agrees_with_trying_every_batch(void**) {
  const SizeSetup probe = setup_for(kTransformer);
  const uint64_t budget = remat::cli::size_row(probe, "none", 6).device_bytes() + 1;
  const SizeSetup setup = setup_for(kTransformer, budget);
  const uint64_t arena_budget = budget - remat::cli::persistent_bytes(setup, 1);
  int64_t brute = 0, sqrt_batch = 0;
  for (int64_t b = 1; b <= 48; ++b) {
    const SizeRow row = remat::cli::size_row(setup, "auto", b, arena_budget);
    if (row.ok()) {
      assert_true(row.device_bytes() <= budget);
      brute = b;
    } else {
      assert_true(row.smallest_device_bytes > budget);  // why it does not fit
    }
    const SizeRow s = remat::cli::size_row(setup, "sqrt", b);
    if (s.ok() && s.device_bytes() <= budget) sqrt_batch = b;
  }
  assert_true(brute > sqrt_batch);  // nesting makes room sqrt does not
  for (int64_t start : {int64_t{1}, sqrt_batch}) {
    const remat::cli::MaxBatch m =
        remat::cli::find_max_batch(setup, "auto", start, 48, budget, arena_budget);
    assert_int_equal(m.row.batch, brute);
    assert_string_equal(m.row.strategy.c_str(), "auto");
    // The row is auto's fastest schedule at that batch, not the smallest the probes used.
    const SizeRow fastest = remat::cli::size_row(setup, "auto", brute, arena_budget);
    assert_int_equal(m.row.arena_bytes, fastest.arena_bytes);
    assert_true(m.row.predicted_seconds == fastest.predicted_seconds);
  }
  // The command: auto is listed with a budget, after the fixed strategies, with its figures.
  const Result r = run_remat(std::string("size ") + kTransformer +
                             " --max-batch --batch 1..48 --device-budget " +
                             std::to_string(budget) + " --host-budget 0 --json");
  expect(r, 0, "\"rows\"");
  const Json doc = JsonParser(r.out).parse_document();
  bool seen = false;
  for (const Json& row : doc["rows"].items) {
    assert_true(row["predicted_step_seconds"].number > 0);
    assert_true(row["predicted_seconds_per_sample"].number > 0);
    assert_true(row["nested"].kind == Json::kArray);
    if (row["strategy"].text != "auto") continue;
    seen = true;
    assert_int_equal(static_cast<int64_t>(row["batch"].number), brute);
  }
  assert_true(seen);
}

// size --budget, deprecated, is the device budget without spilling (except auto's, with
// --host-budget): the same output as --device-budget SIZE --host-budget 0, and one line on stderr.
static void the_deprecated_budget_is_the_device_budget_without_spilling(void**) {
  const std::string size = std::string("size ") + kMlp + " --batch 2 --json";
  const Result old = run_remat(size + " --budget 1MiB");
  const Result now = run_remat(size + " --device-budget 1MiB --host-budget 0");
  assert_int_equal(old.code, 0);
  assert_int_equal(now.code, 0);
  assert_string_equal(old.out.c_str(), now.out.c_str());
  if (old.all.find("remat: size --budget is deprecated; use --device-budget") ==
      std::string::npos) {
    fail_msg("no deprecation line:\n%s", old.all.c_str());
  }
  if (now.all.find("deprecated") != std::string::npos)
    fail_msg("a deprecation line without --budget:\n%s", now.all.c_str());
}

static void bad_input_is_refused_with_a_message_naming_the_value(void**) {
  const std::string size = std::string("size ") + kMlp;
  expect(run_remat(size + " --batch 5..2"), 2, "--batch '5..2'");
  expect(run_remat(size + " --batch x"), 2, "--batch 'x'");
  expect(run_remat(size + " --batch 0"), 2, "--batch '0'");
  expect(run_remat(size + " --batch 4 --strategy none,bogus"), 2, "unknown strategy 'bogus'");
  expect(run_remat(size), 2, "--batch");
  expect(run_remat(size + " --max-batch"), 2, "--max-batch needs --device-budget");
  expect(run_remat(size + " --batch 4 --strategy budget"), 2,
         "needs --arena-budget or --device-budget");
  expect(run_remat(size + " --batch 4 --strategy auto"), 2, "strategy 'auto' needs --arena-budget");
  expect(run_remat(size + " --batch 4 --arena-budget 1MiB --strategy sqrt"), 2,
         "--arena-budget applies to strategy budget or auto");
  expect(run_remat(size + " --batch 4 --host-budget 1GiB"), 2,
         "--host-budget needs --device-budget");
  expect(run_remat(size + " --batch 4 --device-budget 1KiB --strategy auto"), 1,
         "does not leave any arena in --device-budget 1.00 KiB");
  for (const char* flag : {"--arena-budget", "--device-budget", "--host-budget"}) {
    const std::string f = flag;
    const std::string device = f == "--device-budget" ? "" : " --device-budget 1MiB";
    expect(run_remat(size + " --batch 4 --strategy auto" + device + " " + f + " lots"), 2,
           (f + " 'lots'").c_str());
  }
  expect(run_remat(size + " --batch 4 --arena-budget 0"), 2,
         "--arena-budget 0: expected a size above 0");
  expect(run_remat(size + " --batch 4 --device-budget 0"), 2,
         "--device-budget 0: expected a size above 0");
  // The deprecated --budget (size's name of the device budget): its old checks, and no mixing.
  expect(run_remat(size + " --batch 4 --budget 1MiB --strategy sqrt --host-budget 1GiB"), 2,
         "applies to strategy auto");
  expect(run_remat(size + " --batch 4 --budget 1KiB --strategy auto"), 1,
         "does not leave any arena in --budget");
  expect(run_remat(size + " --batch 4 --budget lots"), 2, "--budget 'lots'");
  expect(run_remat(size + " --batch 4 --budget 1MiB --device-budget 1MiB"), 2,
         "--budget and --device-budget");
  expect(run_remat(size + " --batch 4 --budget 1MiB --arena-budget 1MiB --strategy auto"), 2,
         "--budget and --arena-budget");
  expect(run_remat(size + " --batch 4 --device-budget 1KiB"), 1,
         "device budget 1024 bytes is too small");
  expect(run_remat(size + " --batch 4 --copy-bandwidth 0"), 2,
         "--copy-bandwidth 0: expected a positive number");
  expect(run_remat(size + " --batch 4 --compute-rate fast"), 2,
         "--compute-rate fast: expected a positive number");
  expect(run_remat(size + " --batch 4 --strategy manual:nothing"), 1,
         "manual checkpoint 'nothing'");
  expect(run_remat("size mlp:layers=2 --batch 4"), 1, "missing");
  expect(run_remat("size bert-large:seq=0 --batch 1"), 1, "seq=0");
  // One failing row does not fail the others.
  expect(run_remat(size + " --batch 4 --strategy none,manual:nothing"), 0,
         "error: manual checkpoint 'nothing'");
}

static void bert_shorthands_expand_to_the_published_sizes(void**) {
  using remat::compiler::expand_model_alias;
  assert_string_equal(
      expand_model_alias("bert-large").c_str(),
      "transformer:layers=24,hidden=1024,heads=16,ffn=4096,seq=512,vocab=30522,classes=2");
  assert_string_equal(
      expand_model_alias("bert-base:seq=128").c_str(),
      "transformer:layers=12,hidden=768,heads=12,ffn=3072,seq=128,vocab=30522,classes=2");
  assert_string_equal(expand_model_alias(kMlp).c_str(), kMlp);
  bool threw = false;
  try {
    expand_model_alias("bert-base:layers=3");
  } catch (const remat::compiler::CompileError& e) {
    threw = strstr(e.what(), "layers") != nullptr;
  }
  assert_true(threw);
  // Hugging Face's BertForSequenceClassification (2 labels) has 109,483,778 parameters for
  // bert-base; the template has no token-type table (2 x 768) and otherwise the same tensors.
  remat::compiler::CompileOptions o;
  o.model = expand_model_alias("bert-base");
  o.batch = 1;
  assert_int_equal(remat::compiler::compile(o).report.param_count, 109483778 - 2 * 768);
}

// Converts the timeline to PNG with rsvg-convert (librsvg2-bin) and checks the picture's size.
static int render_timeline(void) {
  if (system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    printf("rsvg-convert not found (Debian: librsvg2-bin): skipped\n");
    return 77;
  }
  const std::string svg = scratch("timeline.svg");
  const std::string png = scratch("timeline.png");
  const Result r = run_remat(std::string("size ") + kTransformer + " --batch 8 --timeline " + svg);
  if (r.code != 0) {
    printf("remat size failed:\n%s", r.all.c_str());
    return 1;
  }
  remove(png.c_str());
  if (system(("rsvg-convert '" + svg + "' -o '" + png + "'").c_str()) != 0) {
    printf("rsvg-convert could not render %s\n", svg.c_str());
    return 1;
  }
  FILE* f = fopen(png.c_str(), "rb");
  unsigned char head[24] = {0};
  const size_t n = f ? fread(head, 1, sizeof(head), f) : 0;
  if (f) fclose(f);
  const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n != sizeof(head) || memcmp(head, signature, 8) != 0 || memcmp(head + 12, "IHDR", 4) != 0) {
    printf("%s is not a PNG\n", png.c_str());
    return 1;
  }
  const uint32_t width = (head[16] << 24) | (head[17] << 16) | (head[18] << 8) | head[19];
  const uint32_t height = (head[20] << 24) | (head[21] << 16) | (head[22] << 8) | head[23];
  int want_w = 0, want_h = 0;
  remat::cli::timeline_size(3, &want_w, &want_h);
  if (width != static_cast<uint32_t>(want_w) || height != static_cast<uint32_t>(want_h)) {
    printf("PNG is %ux%u, expected %dx%d\n", width, height, want_w, want_h);
    return 1;
  }
  printf("rendered %s: %ux%u\n", png.c_str(), width, height);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "render") == 0) return render_timeline();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_printed_arena_is_the_arena_the_runtime_binds_to_the_byte),
      cmocka_unit_test(the_arena_printed_by_the_command_trains_and_one_byte_less_is_refused),
      cmocka_unit_test(a_data_parallel_row_is_the_plan_a_rank_binds),
      cmocka_unit_test(a_spilled_row_prints_the_arena_and_host_region_the_runtime_binds),
      cmocka_unit_test(a_budget_sizes_a_model_that_refuses_batch_1),
      cmocka_unit_test(several_precisions_give_rows_for_each),
      cmocka_unit_test(the_cost_model_flags_reach_the_compiler),
      cmocka_unit_test(
          live_bytes_peak_at_the_lower_bound_and_the_backward_pass_follows_the_forward),
      cmocka_unit_test(the_max_batch_fits_and_one_more_does_not),
      cmocka_unit_test(the_max_batch_search_agrees_with_trying_every_batch),
      cmocka_unit_test(json_output_parses_with_the_documented_fields),
      cmocka_unit_test(the_auto_max_batch_agrees_with_trying_every_batch),
      cmocka_unit_test(the_deprecated_budget_is_the_device_budget_without_spilling),
      cmocka_unit_test(bad_input_is_refused_with_a_message_naming_the_value),
      cmocka_unit_test(bert_shorthands_expand_to_the_published_sizes),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
