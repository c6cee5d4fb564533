// Dataflow rules of plan verification: no stale or uninitialised reads, bindings complete and
// unique, asynchronous copies waited for. Each bad plan is a compiled one with its graph edited,
// re-planned and written again, so only the rule under test is broken.
#include "tests/cmocka_cpp.h"

#include <cstring>
#include <string>

#include "compiler/compiler.h"
#include "plan/ops.h"
#include "remat/remat.h"
#include "tests/runtime/compiled_plan.h"

using remat::compiler::Graph;

namespace {

remat::compiler::CompileResult compile(const std::string& model) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 4;
  return remat::compiler::compile(o);
}

// |model| under `splits` with a device budget that forces spills.
remat::compiler::CompileResult compile_spilled(const std::string& model) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 8;
  o.strategy = "splits";
  const auto plain = remat::compiler::compile(o).report;
  o.device_budget = plain.persistent_bytes + plain.arena_bytes * 8 / 10;
  auto r = remat::compiler::compile(o);
  if (r.report.spilled.empty()) fail_msg("no spills");
  return r;
}

const char* const kSpilling =
    "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3";

// Plans |graph| again, writes it and opens it; expects |status| and |needle| in the message.
void expect(const Graph& graph, const remat::compiler::CompileReport& report, remat_status status,
            const char* needle) {
  const auto memory = remat::compiler::plan_memory(graph, 64);
  remat_test::expect_open(remat::compiler::write_plan(graph, memory, report, 0), status, needle);
}

const char* const kMlp = "mlp:layers=2,width=8,in=4,classes=3";

remat::compiler::CompileResult compile_with(const std::string& model,
                                            const std::string& optimizer) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 4;
  o.optimizer = optimizer;
  return remat::compiler::compile(o);
}

// "op I (NAME) reads persistent ROLE tensor 'TENSOR'" for the first op of |g| that reads |t|.
std::string first_read(const Graph& g, int t, const char* role) {
  for (size_t i = 0; i < g.ops.size(); ++i) {
    for (int in : g.ops[i].inputs) {
      if (in == t) {
        return "op " + std::to_string(i) + " (" +
               remat::op_name(static_cast<uint16_t>(g.ops[i].code)) + ") reads persistent " + role +
               " tensor '" + g.tensors[static_cast<size_t>(t)].name + "'";
      }
    }
  }
  fail_msg("no op reads '%s'", g.tensors[static_cast<size_t>(t)].name.c_str());
  return "";
}

// |g| with tensor |name|'s init set to None; returns the tensor's index.
int without_init(Graph& g, const char* name) {
  const int t = g.find(name);
  if (t < 0) fail_msg("the graph has no tensor '%s'", name);
  assert_true(g.tensors[static_cast<size_t>(t)].init != remat::compiler::Init::kNone);
  g.tensors[static_cast<size_t>(t)].init = remat::compiler::Init::kNone;
  return t;
}

}  // namespace

static void an_edited_but_valid_plan_still_opens(void**) {
  const auto r = compile(kMlp);
  expect(r.graph, r.report, REMAT_OK, "");
  const auto s = compile_spilled(kSpilling);
  expect(s.graph, s.report, REMAT_OK, "");
}

// A param binding says the caller may write the param, not that it will: the plan must still
// say how the param starts (init_params = 0 lets the caller's values replace it).
static void a_param_without_init_is_rejected_naming_the_op_that_reads_it(void**) {
  for (const char* name : {"fc0.weight", "fc1.bias"}) {
    auto r = compile(kMlp);
    const int t = without_init(r.graph, name);
    expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT,
           (first_read(r.graph, t, "Param") + " before any op writes it, and its init is None")
               .c_str());
  }
}

// Optimizer state cannot be written from outside at all: without an init it is never set.
static void optimizer_state_without_init_is_rejected_naming_the_update_that_reads_it(void**) {
  const struct {
    const char* optimizer;
    const char* state;
  } cases[] = {
      {"sgd:lr=0.1,momentum=0.9", "optimizer.velocity.fc0.weight"},
      {"adam:lr=0.01", "optimizer.m.fc0.weight"},
      {"adamw:lr=0.01", "optimizer.v.fc1.bias"},
  };
  for (const auto& c : cases) {
    auto r = compile_with(kMlp, c.optimizer);
    const int t = without_init(r.graph, c.state);
    const std::string needle = first_read(r.graph, t, "State");
    assert_non_null(
        std::strstr(needle.c_str(), c.optimizer[0] == 's' ? "(sgd_update)" : "(adam_update)"));
    expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT, needle.c_str());
  }
}

// The loss has no init: the step writes it before anything reads it, every step.
static void a_persistent_tensor_written_before_it_is_read_needs_no_init(void**) {
  const auto r = compile(kMlp);
  const auto& loss = r.graph.tensors[static_cast<size_t>(r.graph.loss)];
  assert_true(loss.init == remat::compiler::Init::kNone);
  expect(r.graph, r.report, REMAT_OK, "");
}

// What no op reads needs no init: the rule is about bytes a step reads.
static void a_persistent_tensor_no_op_reads_needs_no_init(void**) {
  auto r = compile(kMlp);
  r.graph.add_tensor("unused.state", REMAT_DTYPE_F32, {4}, remat::compiler::Role::kState);
  expect(r.graph, r.report, REMAT_OK, "");
}

static void a_tensor_read_before_any_op_writes_it_is_rejected(void**) {
  auto r = compile(kMlp);
  Graph& g = r.graph;
  const auto& x = g.tensors[g.ops[1].inputs[0]];
  const int never =
      g.add_tensor("never.written", x.dtype, x.shape, remat::compiler::Role::kActivation);
  g.ops[1].inputs[0] = never;
  expect(g, r.report, REMAT_ERROR_PLAN_CORRUPT,
         "reads tensor 'never.written' before any op writes it");
}

static void an_input_no_binding_names_is_rejected(void**) {
  auto r = compile(kMlp);
  r.graph.labels.clear();
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT, "'labels' is an input no binding names");
}

static void a_tensor_bound_twice_is_rejected(void**) {
  auto r = compile(kMlp);
  r.graph.params.push_back(r.graph.params[0]);
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT, "'fc0.weight' is bound twice");
}

static void an_op_writing_one_tensor_twice_is_rejected(void**) {
  auto r = compile("transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=11,classes=3");
  for (auto& op : r.graph.ops) {
    if (op.code == remat::OpCode::kLayerNormGrad) {
      op.outputs[2] = op.outputs[1];  // dbeta written over dgamma: both [H]
      break;
    }
  }
  expect(r.graph, r.report, REMAT_ERROR_OVERLAP, "are the same tensor");
}

static void a_spill_that_is_never_waited_for_is_rejected(void**) {
  auto r = compile_spilled(kSpilling);
  Graph& g = r.graph;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].code != remat::OpCode::kSpill) continue;
    const int device = g.ops[i].inputs[0];
    for (size_t j = i + 1; j < g.ops.size(); ++j) {
      if (g.ops[j].code == remat::OpCode::kWait && g.ops[j].inputs[0] == device) {
        g.ops.erase(g.ops.begin() + static_cast<long>(j));
        break;
      }
    }
    break;
  }
  expect(g, r.report, REMAT_ERROR_PLAN_CORRUPT, "is never waited for");
}

static void a_prefetched_tensor_read_before_its_wait_is_rejected(void**) {
  auto r = compile_spilled(kSpilling);
  Graph& g = r.graph;
  bool moved = false;
  for (size_t i = 0; i < g.ops.size() && !moved; ++i) {
    if (g.ops[i].code != remat::OpCode::kPrefetch) continue;
    const int device = g.ops[i].outputs[0];
    for (size_t j = i + 1; j < g.ops.size(); ++j) {
      if (g.ops[j].code == remat::OpCode::kWait && g.ops[j].inputs[0] == device) {
        // Move the wait after the first reader that follows it.
        for (size_t k = j + 1; k < g.ops.size(); ++k) {
          bool reads = false;
          for (int t : g.ops[k].inputs) reads = reads || t == device;
          if (!reads) continue;
          auto wait = g.ops[j];
          g.ops.insert(g.ops.begin() + static_cast<long>(k) + 1, wait);
          g.ops.erase(g.ops.begin() + static_cast<long>(j));
          moved = true;
          break;
        }
        break;
      }
    }
  }
  assert_true(moved);
  expect(g, r.report, REMAT_ERROR_PLAN_CORRUPT, "before the wait for op");
}

// ---- Data-parallel plans (docs/data-parallel.md) ----

// The mlp for data-parallel training, one bucket per gradient, no eval program.
remat::compiler::CompileResult compile_data_parallel() {
  remat::compiler::CompileOptions o;
  o.model = kMlp;
  o.batch = 4;
  o.eval_program = false;
  o.data_parallel.enabled = true;
  o.data_parallel.bucket_bytes = 1;  // a bucket per gradient (the first holds the loss too)
  auto r = remat::compiler::compile(o);
  assert_true(r.report.allreduce_buckets >= 3);
  return r;
}

// Index of the |nth| op of |g| with |code|.
size_t nth_op(const Graph& g, remat::OpCode code, int nth) {
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].code == code && nth-- == 0) return i;
  }
  fail_msg("no op %s number %d", remat::op_name(static_cast<uint16_t>(code)), nth);
  return 0;
}

static void a_data_parallel_plan_opens(void**) {
  const auto r = compile_data_parallel();
  expect(r.graph, r.report, REMAT_OK, "");
}

// The step cut before the last bucket's wait (and the checks and updates after it).
static void a_bucket_that_is_never_waited_for_is_rejected(void**) {
  auto r = compile_data_parallel();
  const int last = static_cast<int>(r.report.allreduce_buckets) - 1;
  r.graph.ops.resize(nth_op(r.graph, remat::OpCode::kAllreduceWait, last));
  const size_t start = nth_op(r.graph, remat::OpCode::kAllreduceStart, last);
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT,
         ("op " + std::to_string(start) + " (allreduce_start) of bucket " + std::to_string(last) +
          " is never waited for")
             .c_str());
}

// The first wait moved to the end of the step: the first check of the loss then reads a tensor
// still being summed.
static void a_tensor_used_while_its_bucket_is_summed_is_rejected(void**) {
  auto r = compile_data_parallel();
  const size_t wait = nth_op(r.graph, remat::OpCode::kAllreduceWait, 0);
  const remat::compiler::Op moved = r.graph.ops[wait];
  r.graph.ops.erase(r.graph.ops.begin() + static_cast<long>(wait));
  r.graph.ops.push_back(moved);
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT,
         ("op " + std::to_string(wait) +
          " (finite_check) uses tensor 'loss' before the wait of bucket 0")
             .c_str());
}

// The last bucket's start and wait removed: its parameters' updates read unsummed gradients.
static void an_update_before_its_gradient_is_summed_is_rejected(void**) {
  auto r = compile_data_parallel();
  const int last = static_cast<int>(r.report.allreduce_buckets) - 1;
  const size_t wait = nth_op(r.graph, remat::OpCode::kAllreduceWait, last);
  const int grad = r.graph.ops[wait].inputs.front();  // the first update of the bucket
  r.graph.ops.erase(r.graph.ops.begin() + static_cast<long>(wait));
  r.graph.ops.erase(r.graph.ops.begin() +
                    static_cast<long>(nth_op(r.graph, remat::OpCode::kAllreduceStart, last)));
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT,
         ("(sgd_update) reads gradient '" + r.graph.tensors[static_cast<size_t>(grad)].name +
          "' before its all-reduce")
             .c_str());
}

static void buckets_out_of_order_or_twice_are_rejected(void**) {
  auto r = compile_data_parallel();
  for (int nth : {0, 1}) {
    r.graph.ops[nth_op(r.graph, remat::OpCode::kAllreduceStart, nth)].iattrs[0] = 1 - nth;
    r.graph.ops[nth_op(r.graph, remat::OpCode::kAllreduceWait, nth)].iattrs[0] = 1 - nth;
  }
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT, "starts bucket 1, expected 0");
  auto twice = compile_data_parallel();
  twice.graph.ops[nth_op(twice.graph, remat::OpCode::kAllreduceStart, 1)].iattrs[0] = 0;
  twice.graph.ops[nth_op(twice.graph, remat::OpCode::kAllreduceWait, 1)].iattrs[0] = 0;
  expect(twice.graph, twice.report, REMAT_ERROR_PLAN_CORRUPT, "starts bucket 0, expected 1");
}

static void a_bucket_naming_a_tensor_twice_or_waiting_for_others_is_rejected(void**) {
  auto r = compile_data_parallel();
  for (remat::OpCode code : {remat::OpCode::kAllreduceStart, remat::OpCode::kAllreduceWait}) {
    std::vector<int>& in = r.graph.ops[nth_op(r.graph, code, 0)].inputs;
    in[1] = in[0];
  }
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT,
         "(allreduce_start) names tensor 'loss' twice");
  auto other = compile_data_parallel();
  std::vector<int>& in =
      other.graph.ops[nth_op(other.graph, remat::OpCode::kAllreduceWait, 0)].inputs;
  std::swap(in[0], in[1]);
  expect(other.graph, other.report, REMAT_ERROR_PLAN_CORRUPT,
         "of bucket 0 waits for other tensors than op");
}

// A second wait of the last bucket, after the first: no start is waited for by it.
static void a_wait_without_its_start_is_rejected(void**) {
  auto r = compile_data_parallel();
  const int last = static_cast<int>(r.report.allreduce_buckets) - 1;
  const remat::compiler::Op again =
      r.graph.ops[nth_op(r.graph, remat::OpCode::kAllreduceWait, last)];
  r.graph.ops.push_back(again);
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT,
         ("op " + std::to_string(r.graph.ops.size() - 1) + " (allreduce_wait) of bucket " +
          std::to_string(last) + " has no allreduce_start before it")
             .c_str());
}

// A spill of bucket 0's last gradient before the bucket's start, waited for after its wait: the
// all-reduce ops write their inputs in place while the copy may still read them.
static void a_bucket_summed_while_it_is_spilled_is_rejected(void**) {
  auto r = compile_data_parallel();
  using remat::compiler::Op;
  const size_t start = nth_op(r.graph, remat::OpCode::kAllreduceStart, 0);
  const int g = r.graph.ops[start].inputs.back();
  const remat::compiler::Tensor x = r.graph.tensors[static_cast<size_t>(g)];
  const int slot =
      r.graph.add_tensor(x.name + "@host", x.dtype, x.shape, remat::compiler::Role::kCheckpoint);
  r.graph.tensors[static_cast<size_t>(slot)].host = true;
  const Op spill{remat::OpCode::kSpill, {g}, {slot}, {}, {}, remat::compiler::Phase::kCopy, 0, 0.0};
  const Op wait{remat::OpCode::kWait, {g}, {}, {}, {}, remat::compiler::Phase::kCopy, 0, 0.0};
  r.graph.ops.insert(r.graph.ops.begin() + static_cast<long>(start), spill);
  const size_t after = nth_op(r.graph, remat::OpCode::kAllreduceWait, 0) + 1;
  r.graph.ops.insert(r.graph.ops.begin() + static_cast<long>(after), wait);
  expect(r.graph, r.report, REMAT_ERROR_PLAN_CORRUPT,
         ("op " + std::to_string(start + 1) + " (allreduce_start) uses tensor '" + x.name +
          "' before the wait for op " + std::to_string(start) + " (spill)")
             .c_str());
}

static void an_alignment_below_the_element_size_is_rejected(void**) {
  const auto r = compile(kMlp);
  auto memory = remat::compiler::plan_memory(r.graph, 64);
  memory.alignment = 2;  // offsets stay multiples of 64; the plan still claims 2
  std::vector<uint8_t> bytes = remat::compiler::write_plan(r.graph, memory, r.report, 0);
  remat_plan* plan = nullptr;
  char message[256] = "";
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)),
                   REMAT_ERROR_PLAN_CORRUPT);
  assert_non_null(std::strstr(message, "alignment 2"));
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(an_edited_but_valid_plan_still_opens),
      cmocka_unit_test(a_tensor_read_before_any_op_writes_it_is_rejected),
      cmocka_unit_test(a_param_without_init_is_rejected_naming_the_op_that_reads_it),
      cmocka_unit_test(optimizer_state_without_init_is_rejected_naming_the_update_that_reads_it),
      cmocka_unit_test(a_persistent_tensor_written_before_it_is_read_needs_no_init),
      cmocka_unit_test(a_persistent_tensor_no_op_reads_needs_no_init),
      cmocka_unit_test(an_input_no_binding_names_is_rejected),
      cmocka_unit_test(a_tensor_bound_twice_is_rejected),
      cmocka_unit_test(an_op_writing_one_tensor_twice_is_rejected),
      cmocka_unit_test(a_spill_that_is_never_waited_for_is_rejected),
      cmocka_unit_test(a_prefetched_tensor_read_before_its_wait_is_rejected),
      cmocka_unit_test(an_alignment_below_the_element_size_is_rejected),
      cmocka_unit_test(a_data_parallel_plan_opens),
      cmocka_unit_test(a_bucket_that_is_never_waited_for_is_rejected),
      cmocka_unit_test(a_tensor_used_while_its_bucket_is_summed_is_rejected),
      cmocka_unit_test(an_update_before_its_gradient_is_summed_is_rejected),
      cmocka_unit_test(buckets_out_of_order_or_twice_are_rejected),
      cmocka_unit_test(a_bucket_naming_a_tensor_twice_or_waiting_for_others_is_rejected),
      cmocka_unit_test(a_wait_without_its_start_is_rejected),
      cmocka_unit_test(a_bucket_summed_while_it_is_spilled_is_rejected),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
