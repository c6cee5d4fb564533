// Plan verification on bad input: truncated, corrupted and semantically wrong plans each get
// their own status and a message naming the culprit, and never crash the runtime.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "plan/ops.h"
#include "plan/plan_generated.h"
#include "compiler/compiler.h"
#include "remat/remat.h"
#include "tests/runtime/compiled_plan.h"

namespace {

namespace rc = remat::compiler;
namespace fb = remat::fb;

const char kMlp[] = "mlp:layers=2,width=8,in=4,classes=3";
const char kMlpDropout[] = "mlp:layers=2,width=8,in=4,classes=3,dropout=0.1";
const char kTransformer[] = "transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=11,classes=3,dropout=0.1";

using remat_test::compile_model;
using remat_test::set_inputs_to_zeros;

// The same plan written again from the compiler's graph and memory plan after |edit| changed
// them: the way to set a field to a value FlatBuffers would otherwise leave out (a default).
template <typename Edit>
std::vector<uint8_t> rewritten(const rc::CompileResult& r, Edit edit) {
  rc::Graph graph = r.graph;
  rc::MemoryPlan memory = r.memory;
  edit(graph, memory);
  return rc::write_plan(graph, memory, r.report, fb::GetPlan(r.plan.data())->seed());
}

fb::Plan* mutable_plan(std::vector<uint8_t>& bytes) { return fb::GetMutablePlan(bytes.data()); }

fb::Tensor* mutable_tensor(std::vector<uint8_t>& bytes, int index) {
  return mutable_plan(bytes)->mutable_tensors()->GetMutableObject(static_cast<uint32_t>(index));
}

fb::Op* mutable_op(std::vector<uint8_t>& bytes, int index) {
  return mutable_plan(bytes)->mutable_ops()->GetMutableObject(static_cast<uint32_t>(index));
}

// Index of the |nth| op with |code| in |graph|, failing the test when there is none.
int find_op(const rc::Graph& graph, remat::OpCode code, int nth = 0) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].code == code && nth-- == 0) return static_cast<int>(i);
  }
  fail_msg("the graph has no op %s", remat::op_name(static_cast<uint16_t>(code)));
  return -1;
}

int find_tensor(const rc::Graph& graph, const char* name) {
  const int t = graph.find(name);
  if (t < 0) fail_msg("the graph has no tensor '%s'", name);
  return t;
}

struct Opened {
  remat_status status;
  std::string message;
};

// Opens |size| bytes at |data| and closes the plan again; checks the out_plan contract.
Opened open_bytes(const void* data, size_t size) {
  char message[512];
  memset(message, 'z', sizeof(message));
  static char sentinel;
  remat_plan* plan = reinterpret_cast<remat_plan*>(&sentinel);  // must be overwritten
  const remat_status status = remat_plan_open(data, size, &plan, message, sizeof(message));
  assert_non_null(memchr(message, '\0', sizeof(message)));
  if (status == REMAT_OK) {
    assert_non_null(plan);
    assert_string_equal(message, "");
  } else {
    assert_null(plan);
  }
  remat_plan_close(plan);
  return Opened{status, message};
}

// Expects |bytes| to be rejected with |want| and a message containing every one of |needles|.
void expect_status(const std::vector<uint8_t>& bytes, remat_status want,
                   std::initializer_list<const char*> needles = {}) {
  const Opened o = open_bytes(bytes.data(), bytes.size());
  if (o.status != want) {
    fail_msg("expected %s, got %s: '%s'", remat_status_string(want), remat_status_string(o.status),
             o.message.c_str());
  }
  for (const char* needle : needles) {
    if (strstr(o.message.c_str(), needle) == nullptr) {
      fail_msg("%s message '%s' does not mention '%s'", remat_status_string(want), o.message.c_str(), needle);
    }
  }
}

// Runs two steps of an opened plan with zeros for every input; returns the first failure.
remat_status run_two_steps(const remat_plan* plan) {
  remat_session* session = nullptr;
  remat_status status = remat_session_create(plan, nullptr, &session, nullptr, 0);
  if (status == REMAT_OK) status = set_inputs_to_zeros(session, plan);
  for (int step = 0; step < 2 && status == REMAT_OK; ++step) status = remat_session_step(session, nullptr);
  remat_session_destroy(session);
  return status;
}

// ---- Well-formed plans ----------------------------------------------------------------------

void compiled_plans_verify(void**) {
  for (const char* model : {kMlp, kMlpDropout, kTransformer}) {
    const rc::CompileResult r = compile_model(model, "adamw:lr=0.001");
    expect_status(r.plan, REMAT_OK);
    // The rewriting helper the tests below use does not by itself make a plan invalid.
    expect_status(rewritten(r, [](rc::Graph&, rc::MemoryPlan&) {}), REMAT_OK);
  }
}

// Every plan the compiler makes verifies, and gives every param and optimizer state an init in
// the persistent region (the compiler's side of the dataflow rule that a persistent tensor read
// before it is written needs one): templates x optimizers x strategies, and one that spills.
void compiled_plans_initialise_every_param_and_state(void**) {
  const char* const models[] = {kMlp, kMlpDropout, "resmlp:layers=2,width=8,in=4,classes=3", kTransformer};
  const char* const optimizers[] = {"sgd:lr=0.1", "sgd:lr=0.1,momentum=0.9", "adam:lr=0.01", "adamw:lr=0.01"};
  std::vector<rc::CompileResult> plans;
  for (const char* model : models) {
    for (const char* optimizer : optimizers) {
      for (const char* strategy : {"none", "sqrt"}) {
        rc::CompileOptions o;
        o.model = model;
        o.batch = 2;
        o.optimizer = optimizer;
        o.strategy = strategy;
        plans.push_back(rc::compile(o));
      }
    }
  }
  rc::CompileOptions o;
  o.model = "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3";
  o.batch = 8;
  o.strategy = "splits";
  o.optimizer = "adam:lr=0.01";
  const rc::CompileReport plain = rc::compile(o).report;
  o.device_budget = plain.persistent_bytes + plain.arena_bytes * 8 / 10;
  plans.push_back(rc::compile(o));
  assert_false(plans.back().report.spilled.empty());
  for (const rc::CompileResult& r : plans) {
    expect_status(r.plan, REMAT_OK);
    const fb::Plan* plan = fb::GetPlan(r.plan.data());
    int states = 0;
    for (uint32_t t = 0; t < plan->tensors()->size(); ++t) {
      const fb::Tensor* x = plan->tensors()->Get(t);
      if (x->role() != fb::Role::Param && x->role() != fb::Role::State) continue;
      states += x->role() == fb::Role::State;
      if (x->init() == fb::Init::None || x->region() != fb::Region::Persistent) {
        fail_msg("%s, %s: tensor '%s' has init %s in region %s", r.report.model.c_str(), r.report.optimizer.c_str(),
                 x->name()->c_str(), fb::EnumNameInit(x->init()), fb::EnumNameRegion(x->region()));
      }
    }
    // Plain SGD keeps no state; every other optimizer does.
    assert_true((states == 0) == (r.report.optimizer.rfind("sgd:lr=0.1,momentum=0,", 0) == 0));
  }
}

// ---- Bytes that are not a plan --------------------------------------------------------------

void null_or_empty_plan_bytes_are_rejected(void**) {
  remat_plan* plan = nullptr;
  char message[256];
  assert_int_equal(remat_plan_open(nullptr, 100, &plan, message, sizeof(message)), REMAT_ERROR_INVALID_ARGUMENT);
  assert_null(plan);
  assert_non_null(strstr(message, "NULL"));
  assert_int_equal(remat_plan_open(nullptr, 0, &plan, message, sizeof(message)), REMAT_ERROR_INVALID_ARGUMENT);
  const uint8_t one = 0;
  assert_int_equal(remat_plan_open(&one, 0, &plan, message, sizeof(message)), REMAT_ERROR_PLAN_CORRUPT);
  assert_null(plan);
  assert_non_null(strstr(message, "0 bytes"));
  // No out_plan: nothing can be returned, so nothing is verified.
  const rc::CompileResult r = compile_model(kMlp);
  assert_int_equal(remat_plan_open(r.plan.data(), r.plan.size(), nullptr, message, sizeof(message)),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(message, "out_plan"));
  // A message is optional, and a short buffer gets a truncated, terminated message.
  assert_int_equal(remat_plan_open(&one, 1, &plan, nullptr, 0), REMAT_ERROR_PLAN_CORRUPT);
  char tiny[6];
  memset(tiny, 'z', sizeof(tiny));
  assert_int_equal(remat_plan_open(&one, 1, &plan, tiny, sizeof(tiny)), REMAT_ERROR_PLAN_CORRUPT);
  assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
  memset(tiny, 'z', sizeof(tiny));
  assert_int_equal(remat_plan_open(&one, 1, &plan, tiny, 0), REMAT_ERROR_PLAN_CORRUPT);
  assert_int_equal(tiny[0], 'z');
}

// Every prefix of a plan is copied into a buffer of exactly its length, so a read past the end
// is a sanitizer error, not a silent read of the rest of the plan.
void check_every_prefix_is_corrupt(const std::vector<uint8_t>& plan, size_t stride) {
  for (size_t length = 1; length < plan.size(); length += (length < 64 ? 1 : stride)) {
    std::vector<uint8_t> prefix(plan.begin(), plan.begin() + static_cast<std::ptrdiff_t>(length));
    const Opened o = open_bytes(prefix.data(), prefix.size());
    if (o.status != REMAT_ERROR_PLAN_CORRUPT) {
      fail_msg("prefix of %zu of %zu bytes: %s '%s'", length, plan.size(), remat_status_string(o.status),
               o.message.c_str());
    }
  }
  std::vector<uint8_t> last(plan.begin(), plan.end() - 1);
  expect_status(last, REMAT_ERROR_PLAN_CORRUPT, {"verifier"});
}

void truncated_plans_are_rejected_as_corrupt(void**) {
  check_every_prefix_is_corrupt(compile_model(kMlp).plan, 1);
  check_every_prefix_is_corrupt(compile_model(kTransformer, "adam:lr=0.001").plan, 7);
}

void plan_without_its_identifier_is_rejected_as_corrupt(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  for (int at = 4; at < 8; ++at) {
    std::vector<uint8_t> bytes = r.plan;
    bytes[static_cast<size_t>(at)] ^= 0x20;  // "RMPL" -> "rMPL", "RmPL", ...
    expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"RMPL"});
  }
}

void plan_of_another_format_version_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_format_version(REMAT_PLAN_FORMAT_VERSION + 1));
  expect_status(bytes, REMAT_ERROR_PLAN_VERSION, {"version 3", "versions 1 to 2"});
  assert_true(mutable_plan(bytes)->mutate_format_version(0));
  expect_status(bytes, REMAT_ERROR_PLAN_VERSION, {"version 0", "versions 1 to 2"});
}

void plan_with_a_bad_alignment_is_rejected_as_corrupt(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  for (uint32_t alignment : {0u, 48u, 8192u}) {
    std::vector<uint8_t> bytes = r.plan;
    assert_true(mutable_plan(bytes)->mutate_alignment(alignment));
    expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {("alignment " + std::to_string(alignment)).c_str()});
  }
}

// ---- Ops ------------------------------------------------------------------------------------

void plan_with_an_unknown_opcode_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int op = find_op(r.graph, remat::OpCode::kRelu);
  for (uint16_t code : {uint16_t{999}, uint16_t{0}, remat::kOpCodeCount, uint16_t{65535}}) {
    std::vector<uint8_t> bytes = r.plan;
    assert_true(mutable_op(bytes, op)->mutate_code(code));
    const std::string where = "op " + std::to_string(op) + ":";
    expect_status(bytes, REMAT_ERROR_UNKNOWN_OP, {where.c_str(), ("opcode " + std::to_string(code)).c_str()});
  }
}

void op_changed_to_one_of_another_arity_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int relu = find_op(r.graph, remat::OpCode::kRelu);
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_op(bytes, relu)->mutate_code(static_cast<uint16_t>(remat::OpCode::kAdd)));
  expect_status(bytes, REMAT_ERROR_BAD_ARITY, {("op " + std::to_string(relu)).c_str(), "add", "inputs"});
  // A matmul that became a relu has one input too many.
  const int matmul = find_op(r.graph, remat::OpCode::kMatMul);
  bytes = r.plan;
  assert_true(mutable_op(bytes, matmul)->mutate_code(static_cast<uint16_t>(remat::OpCode::kRelu)));
  expect_status(bytes, REMAT_ERROR_BAD_ARITY, {("op " + std::to_string(matmul)).c_str(), "relu"});
  // Attributes count too: a relu turned into a scale lacks its alpha.
  bytes = r.plan;
  assert_true(mutable_op(bytes, relu)->mutate_code(static_cast<uint16_t>(remat::OpCode::kScale)));
  expect_status(bytes, REMAT_ERROR_BAD_ARITY, {"scale", "fattrs"});
}

void update_that_does_not_write_its_own_param_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  // An update whose output 0 is another param of the same shape passes every shape check; the
  // in-place rule catches it.
  for (size_t i = 0; i < r.graph.ops.size(); ++i) {
    const rc::Op& op = r.graph.ops[i];
    if (op.code != remat::OpCode::kSgdUpdate) continue;
    const auto& shape = r.graph.tensors[static_cast<size_t>(op.inputs[0])].shape;
    for (int p : r.graph.params) {
      if (p == op.inputs[0] || r.graph.tensors[static_cast<size_t>(p)].shape != shape) continue;
      std::vector<uint8_t> bytes = r.plan;
      mutable_op(bytes, static_cast<int>(i))->mutable_outputs()->Mutate(0, static_cast<uint32_t>(p));
      expect_status(bytes, REMAT_ERROR_BAD_ARITY, {("op " + std::to_string(i)).c_str(), "sgd_update", "output 0"});
      return;
    }
  }
  fail_msg("no two params of one shape");
}

void op_whose_output_is_also_its_input_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int relu = find_op(r.graph, remat::OpCode::kRelu);
  std::vector<uint8_t> bytes = r.plan;
  const uint32_t input = static_cast<uint32_t>(r.graph.ops[static_cast<size_t>(relu)].inputs[0]);
  mutable_op(bytes, relu)->mutable_outputs()->Mutate(0, input);
  expect_status(bytes, REMAT_ERROR_OVERLAP, {("op " + std::to_string(relu)).c_str(), "output 0 is also input 0"});
}

void matmul_with_a_flipped_transpose_flag_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  // The first layer's x [2, 4] times fc0.weight [8, 4] transposed; untransposed, K is 4 vs 8.
  const int matmul = find_op(r.graph, remat::OpCode::kMatMul);
  const rc::Op& op = r.graph.ops[static_cast<size_t>(matmul)];
  assert_int_equal(op.iattrs.size(), 2);
  std::vector<uint8_t> bytes = r.plan;
  mutable_op(bytes, matmul)->mutable_iattrs()->Mutate(1, 1 - op.iattrs[1]);
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {("op " + std::to_string(matmul)).c_str(), "matmul", "K ="});
  bytes = r.plan;
  mutable_op(bytes, matmul)->mutable_iattrs()->Mutate(0, 1 - op.iattrs[0]);
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {"matmul"});
  // A flag that is neither 0 nor 1 is an attribute value out of range.
  bytes = r.plan;
  mutable_op(bytes, matmul)->mutable_iattrs()->Mutate(0, 2);
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {"matmul", "is 2"});
}

void op_with_a_non_finite_float_attribute_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int update = find_op(r.graph, remat::OpCode::kSgdUpdate);
  std::vector<uint8_t> bytes = r.plan;
  mutable_op(bytes, update)->mutable_fattrs()->Mutate(0, __builtin_inff());
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {"sgd_update", "finite"});
}

void op_naming_a_tensor_that_does_not_exist_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const uint32_t count = static_cast<uint32_t>(r.graph.tensors.size());
  const int relu = find_op(r.graph, remat::OpCode::kRelu);
  for (uint32_t bad : {count, count + 1000, 0xFFFFFFFFu}) {
    std::vector<uint8_t> bytes = r.plan;
    mutable_op(bytes, relu)->mutable_inputs()->Mutate(0, bad);
    expect_status(bytes, REMAT_ERROR_OUT_OF_REGION,
                  {("op " + std::to_string(relu)).c_str(), ("tensor " + std::to_string(bad)).c_str()});
    bytes = r.plan;
    mutable_op(bytes, relu)->mutable_outputs()->Mutate(0, bad);
    expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"output 0", ("tensor " + std::to_string(bad)).c_str()});
  }
}

// ---- Tensors: shapes, dtypes, places --------------------------------------------------------

void tensor_whose_shape_disagrees_with_its_size_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int t = find_tensor(r.graph, "fc0.relu");  // [2, 8], 64 bytes
  std::vector<uint8_t> bytes = r.plan;
  mutable_tensor(bytes, t)->mutable_shape()->Mutate(1, 9);
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {"'fc0.relu'", "size 64", "72 bytes"});
  for (int64_t dim : {int64_t{0}, int64_t{-8}, int64_t{1} << 41}) {
    bytes = r.plan;
    mutable_tensor(bytes, t)->mutable_shape()->Mutate(1, dim);
    expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {"'fc0.relu'", ("is " + std::to_string(dim)).c_str()});
  }
  // Ranks outside 1..6 (written from the graph: the vector's length is not mutable in place).
  expect_status(rewritten(r, [t](rc::Graph& g, rc::MemoryPlan&) { g.tensors[static_cast<size_t>(t)].shape = {1, 1, 1, 1, 1, 2, 8}; }),
                REMAT_ERROR_BAD_SHAPE, {"'fc0.relu'", "rank 7"});
}

// A tensor of 2^40 * 2^24 = 2^64 elements: its element count and byte size wrap to 0 in 64 bits.
// No op uses it, so only the tensor check stands between it and a caller that trusts its dims.
void tensor_whose_element_count_overflows_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int extra = static_cast<int>(r.graph.tensors.size());
  std::vector<uint8_t> bytes = rewritten(r, [](rc::Graph& g, rc::MemoryPlan& m) {
    g.add_tensor("unused", REMAT_DTYPE_F32, {2, 4}, rc::Role::kActivation);
    m.region.push_back(0);
    m.offset.push_back(0);
    m.size.push_back(64);
    m.first_use.push_back(-1);
    m.last_use.push_back(-1);
  });
  expect_status(bytes, REMAT_OK);  // an unused, well-formed tensor is fine
  fb::Tensor* t = mutable_tensor(bytes, extra);
  t->mutable_shape()->Mutate(0, int64_t{1} << 40);
  t->mutable_shape()->Mutate(1, int64_t{1} << 24);
  assert_true(t->mutate_size(0));
  char message[256];
  remat_plan* plan = nullptr;
  const remat_status status = remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message));
  if (status == REMAT_OK) {
    // Accepted by mistake: a session over it must at least not misbehave (the sanitizer build
    // checks the element counts it computes), then the test fails.
    print_message("  accepted; two steps give %s\n", remat_status_string(run_two_steps(plan)));
    remat_plan_close(plan);
  }
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {"'unused'"});
}

void tensor_reshaped_to_the_same_size_is_rejected_by_the_op_that_uses_it(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int t = find_tensor(r.graph, "fc0.relu");  // [2, 8] -> [4, 4]: same bytes, wrong matrix
  std::vector<uint8_t> bytes = r.plan;
  mutable_tensor(bytes, t)->mutable_shape()->Mutate(0, 4);
  mutable_tensor(bytes, t)->mutable_shape()->Mutate(1, 4);
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE, {"[4, 4]"});
}

void labels_of_the_wrong_dtype_are_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int labels = find_tensor(r.graph, "labels");
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_tensor(bytes, labels)->mutate_dtype(fb::DType::F32));  // same 4 bytes each
  const int loss_op = find_op(r.graph, remat::OpCode::kSoftmaxCrossEntropy);
  expect_status(bytes, REMAT_ERROR_BAD_DTYPE,
                {("op " + std::to_string(loss_op)).c_str(), "softmax_cross_entropy", "f32", "expected i32"});
}

void float_activation_stored_as_int_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int t = find_tensor(r.graph, "fc0.relu");
  // F32 is the schema default, so the dtype field is absent in the buffer: rewrite the plan.
  const std::vector<uint8_t> bytes = rewritten(r, [t](rc::Graph& g, rc::MemoryPlan&) {
    g.tensors[static_cast<size_t>(t)].dtype = REMAT_DTYPE_I32;
  });
  expect_status(bytes, REMAT_ERROR_BAD_DTYPE, {"relu", "i32", "expected f32"});
}

void tensor_of_an_unknown_dtype_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_tensor(bytes, find_tensor(r.graph, "labels"))->mutate_dtype(static_cast<fb::DType>(9)));
  expect_status(bytes, REMAT_ERROR_BAD_DTYPE, {"'labels'", "dtype 9"});
}

void tensor_in_an_unknown_region_or_role_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int w = find_tensor(r.graph, "fc0.weight");  // persistent param: both fields present
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_tensor(bytes, w)->mutate_region(static_cast<fb::Region>(3)));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"'fc0.weight'", "region 3"});
  bytes = r.plan;
  assert_true(mutable_tensor(bytes, w)->mutate_role(static_cast<fb::Role>(200)));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"'fc0.weight'", "role 200"});
}

void tensor_with_an_unknown_init_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  std::vector<uint8_t> bytes = r.plan;
  // fc0.weight's init is Uniform, so the field is in the buffer and can be changed in place.
  assert_true(mutable_tensor(bytes, find_tensor(r.graph, "fc0.weight"))->mutate_init(static_cast<fb::Init>(9)));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"'fc0.weight'", "unknown init 9"});
}

// The session draws initial values as f32 only: an init on labels (i32) would be counted as a
// write that never happens.
void init_on_a_tensor_that_is_not_f32_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int labels = find_tensor(r.graph, "labels");
  const std::vector<uint8_t> bytes = rewritten(r, [labels](rc::Graph& g, rc::MemoryPlan&) {
    g.tensors[static_cast<size_t>(labels)].init = rc::Init::kZeros;
  });
  expect_status(bytes, REMAT_ERROR_BAD_DTYPE, {"'labels'", "init Zeros", "only f32"});
}

// A param in the arena would share bytes with activations between steps. One the optimizer
// updates is refused by the update's in-place rule; a frozen one (no update) is refused here: its
// binding is no write, and the session initialises only persistent tensors.
void param_placed_in_the_arena_is_rejected_as_read_before_it_is_written(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int w = find_tensor(r.graph, "fc1.weight");
  std::vector<uint8_t> bytes = rewritten(r, [w](rc::Graph&, rc::MemoryPlan& m) {
    m.region[static_cast<size_t>(w)] = 0;
    m.offset[static_cast<size_t>(w)] = 0;
  });
  expect_status(bytes, REMAT_ERROR_BAD_ARITY, {"sgd_update", "a persistent tensor"});
  bytes = rewritten(r, [w](rc::Graph& g, rc::MemoryPlan& m) {
    m.region[static_cast<size_t>(w)] = 0;
    m.offset[static_cast<size_t>(w)] = 0;
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (g.ops[i].code == remat::OpCode::kSgdUpdate && g.ops[i].inputs[0] == w) {
        g.ops.erase(g.ops.begin() + static_cast<long>(i));
        return;
      }
    }
    fail_msg("no update of fc1.weight");
  });
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"reads tensor 'fc1.weight' before any op writes it"});
}

void tensor_placed_outside_its_region_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const uint64_t align = r.memory.alignment;
  const int w = find_tensor(r.graph, "fc1.weight");  // persistent, 256 bytes, offset > 0
  const uint64_t size = r.graph.tensors[static_cast<size_t>(w)].bytes();
  assert_true(r.memory.offset[static_cast<size_t>(w)] > 0);
  const uint64_t limit = r.memory.persistent_size;
  struct Case {
    uint64_t offset;
    const char* why;
  };
  const Case cases[] = {
      {limit + align, "offset past the region"},
      {(limit - 1) / align * align, "offset + size past the region"},
      {r.memory.offset[static_cast<size_t>(w)] + 4, "offset not aligned"},
      {~uint64_t{0} - 63, "offset + size wraps around"},
  };
  assert_true(cases[1].offset + size > limit);
  for (const Case& c : cases) {
    std::vector<uint8_t> bytes = r.plan;
    assert_true(mutable_tensor(bytes, w)->mutate_offset(c.offset));
    print_message("  %s: offset %llu\n", c.why, static_cast<unsigned long long>(c.offset));
    expect_status(bytes, REMAT_ERROR_OUT_OF_REGION,
                  {"'fc1.weight'", ("[" + std::to_string(c.offset)).c_str(), "persistent region"});
  }
  // An arena tensor past the arena, and the arena shrunk under its tensors.
  const int x = find_tensor(r.graph, "x");
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_tensor(bytes, x)->mutate_offset(r.memory.arena_size));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"'x'", "arena region"});
  bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_arena_size(r.memory.arena_size - align));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"arena region"});
}

void host_tensor_used_by_an_ordinary_op_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int t = find_tensor(r.graph, "fc0.relu");
  const std::vector<uint8_t> bytes = rewritten(r, [t](rc::Graph&, rc::MemoryPlan& m) {
    m.region[static_cast<size_t>(t)] = 2;
    m.offset[static_cast<size_t>(t)] = 0;
    m.host_size = 64;
  });
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"'fc0.relu'", "host region"});
}

// ---- Overlap --------------------------------------------------------------------------------

void plan_with_overlapping_live_tensors_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  // fc0.matmul is written by op 0 and read by op 1 while the input x is live (the whole step):
  // put it on x's bytes. Nothing else is live there then.
  const int x = find_tensor(r.graph, "x");
  const int y = find_tensor(r.graph, "fc0.matmul");
  // fc0.matmul sits at offset 0, which FlatBuffers leaves out of the buffer: rewrite the plan.
  std::vector<uint8_t> bytes = rewritten(r, [&](rc::Graph&, rc::MemoryPlan& m) {
    m.offset[static_cast<size_t>(y)] = m.offset[static_cast<size_t>(x)];
  });
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'x'", "'fc0.matmul'", "arena"});
  // The same by in-place mutation: fc0.relu (ops 2..21) moved onto x.
  bytes = r.plan;
  assert_true(mutable_tensor(bytes, find_tensor(r.graph, "fc0.relu"))->mutate_offset(r.memory.offset[static_cast<size_t>(x)]));
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'x'", "'fc0.relu'"});
  // Two params are persistent: live together always.
  const int w0 = find_tensor(r.graph, "fc0.weight"), b0 = find_tensor(r.graph, "fc0.bias");
  bytes = r.plan;
  assert_true(mutable_tensor(bytes, b0)->mutate_offset(r.memory.offset[static_cast<size_t>(w0)] + 64));
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'fc0.weight'", "'fc0.bias'", "persistent"});
}

// The verifier takes lifetimes from the op list: a plan that records false lifetimes does not
// get an overlap past it.
void overlap_check_does_not_trust_the_recorded_lifetimes(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int x = find_tensor(r.graph, "x");
  const int y = find_tensor(r.graph, "fc0.matmul");
  const std::vector<uint8_t> bytes = rewritten(r, [&](rc::Graph&, rc::MemoryPlan& m) {
    m.offset[static_cast<size_t>(y)] = m.offset[static_cast<size_t>(x)];
    m.first_use[static_cast<size_t>(y)] = 100;  // "after the step": claims y is never live with x
    m.last_use[static_cast<size_t>(y)] = 100;
    m.first_use[static_cast<size_t>(x)] = 0;
    m.last_use[static_cast<size_t>(x)] = 0;
  });
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'x'", "'fc0.matmul'"});
}

// Tensors live at different times may share bytes: the check is not stricter than the rule.
void tensors_live_at_different_times_may_share_bytes(void**) {
  for (const char* model : {kMlp, kTransformer}) {
    const rc::CompileResult r = compile_model(model);
    const fb::Plan* plan = fb::GetPlan(r.plan.data());
    const auto* tensors = plan->tensors();
    const uint32_t n = tensors->size();
    // Arena tensors other than inputs and labels (which are live the whole step).
    auto movable = [&](uint32_t t) {
      const fb::Tensor* x = tensors->Get(t);
      return x->region() == fb::Region::Arena && x->role() != fb::Role::Input && x->role() != fb::Role::Label &&
             x->first_use() >= 0 && x->last_use() >= x->first_use();
    };
    auto live_together = [&](uint32_t a, uint32_t b) {
      return tensors->Get(a)->first_use() <= tensors->Get(b)->last_use() &&
             tensors->Get(b)->first_use() <= tensors->Get(a)->last_use();
    };
    int pairs = 0;
    for (uint32_t a = 0; a < n && pairs < 5; ++a) {
      for (uint32_t b = 0; b < n && pairs < 5; ++b) {
        if (a == b || !movable(a) || !movable(b) || live_together(a, b)) continue;
        const uint64_t at = tensors->Get(a)->offset();
        const uint64_t size = tensors->Get(b)->size();
        if (at == tensors->Get(b)->offset() || size > tensors->Get(a)->size()) continue;
        // Moving b onto a's bytes must not land it on a third tensor live with b.
        bool clash = false;
        for (uint32_t c = 0; c < n && !clash; ++c) {
          const fb::Tensor* z = tensors->Get(c);
          if (c == b || z->region() != fb::Region::Arena) continue;
          const bool whole_step = z->role() == fb::Role::Input || z->role() == fb::Role::Label;
          const bool in_time = whole_step || live_together(b, c);
          clash = in_time && z->offset() < at + size && at < z->offset() + z->size();
        }
        if (clash) continue;
        const std::vector<uint8_t> bytes = rewritten(r, [&](rc::Graph&, rc::MemoryPlan& m) { m.offset[b] = at; });
        print_message("  %s: '%s' (ops %d..%d) moved onto '%s' (ops %d..%d) at %llu\n", model,
                      tensors->Get(b)->name()->c_str(), tensors->Get(b)->first_use(), tensors->Get(b)->last_use(),
                      tensors->Get(a)->name()->c_str(), tensors->Get(a)->first_use(), tensors->Get(a)->last_use(),
                      static_cast<unsigned long long>(at));
        expect_status(bytes, REMAT_OK);
        ++pairs;
      }
    }
    assert_true(pairs > 0);
  }
}

// ---- Bindings and loss ----------------------------------------------------------------------

void loss_naming_a_tensor_that_does_not_exist_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const uint32_t count = static_cast<uint32_t>(r.graph.tensors.size());
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_loss(count));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"loss", ("tensor " + std::to_string(count)).c_str()});
  bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_loss(0xFFFFFFFFu));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"loss", "4294967295"});
  // A tensor that exists but is not a persistent f32 scalar.
  const int w = find_tensor(r.graph, "fc0.weight");
  bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_loss(static_cast<uint32_t>(w)));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"loss", ("tensor " + std::to_string(w)).c_str(), "scalar"});
}

void binding_naming_a_wrong_tensor_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const uint32_t count = static_cast<uint32_t>(r.graph.tensors.size());
  std::vector<uint8_t> bytes = r.plan;
  mutable_plan(bytes)->mutable_inputs()->Mutate(0, count);
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"input binding 0", ("tensor " + std::to_string(count)).c_str()});
  // A label binding that names the input tensor (a tensor of another role).
  bytes = r.plan;
  mutable_plan(bytes)->mutable_labels()->Mutate(0, static_cast<uint32_t>(find_tensor(r.graph, "x")));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"label binding 0"});
  bytes = r.plan;
  mutable_plan(bytes)->mutable_params()->Mutate(1, static_cast<uint32_t>(find_tensor(r.graph, "fc0.relu")));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"param binding 1"});
}

// ---- Alignment of the caller's bytes --------------------------------------------------------

// Plan bytes embedded as a C array may sit at any 4-byte boundary. The 64-bit fields and
// vectors inside would then be misaligned: the bytes are refused with their own status and a
// message naming the address and the alignment, never loaded as aligned.
void plan_bytes_at_a_4_byte_boundary_are_refused_as_misaligned(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  std::vector<uint64_t> storage(r.plan.size() / 8 + 2);
  uint8_t* shifted = reinterpret_cast<uint8_t*>(storage.data()) + 4;
  memcpy(shifted, r.plan.data(), r.plan.size());
  char message[256];
  static char sentinel;
  remat_plan* plan = reinterpret_cast<remat_plan*>(&sentinel);
  assert_int_equal(remat_plan_open(shifted, r.plan.size(), &plan, message, sizeof(message)), REMAT_ERROR_MISALIGNED);
  assert_null(plan);
  char address[32];
  snprintf(address, sizeof(address), "%p", static_cast<void*>(shifted));
  assert_non_null(strstr(message, address));
  assert_non_null(strstr(message, "aligned to 8 bytes"));
  // The same bytes at an 8-byte boundary open.
  memcpy(storage.data(), r.plan.data(), r.plan.size());
  assert_int_equal(remat_plan_open(storage.data(), r.plan.size(), &plan, message, sizeof(message)), REMAT_OK);
  assert_int_equal(run_two_steps(plan), REMAT_OK);
  remat_plan_close(plan);
}

// Moves the vector that |field| of |table| points at 4 bytes on: its length becomes the low
// half of its first element and its 8-byte elements start at a 4-byte boundary. The
// FlatBuffers verifier checks only the 4-byte alignment of a vector's length, so this passes it.
void shift_vector(void* table_object, flatbuffers::voffset_t field, int shift) {
  uint8_t* table = static_cast<uint8_t*>(table_object);
  const uint8_t* vtable = table - flatbuffers::ReadScalar<flatbuffers::soffset_t>(table);
  const flatbuffers::voffset_t at = flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable + field);
  assert_true(at != 0);  // the field is present
  const flatbuffers::uoffset_t old = flatbuffers::ReadScalar<flatbuffers::uoffset_t>(table + at);
  flatbuffers::WriteScalar<flatbuffers::uoffset_t>(table + at, static_cast<flatbuffers::uoffset_t>(static_cast<int64_t>(old) + shift));
}

bool passes_flatbuffers_verifier(const std::vector<uint8_t>& bytes) {
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  return fb::VerifyPlanBuffer(verifier);
}

// A damaged plan can point an int64 vector (a shape, int attributes) at a 4-byte boundary
// inside an 8-byte-aligned buffer: the FlatBuffers verifier checks only the 4-byte alignment of
// a vector's length. Loading its elements as int64 is undefined (the sanitizer build traps it,
// some cores fault); such a plan is corrupt. The vectors moved here are the first whose
// shifted copy still passes the FlatBuffers verifier.
void int64_vectors_at_a_4_byte_boundary_are_rejected_as_corrupt(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  bool shape_case = false, iattr_case = false;
  for (int t = 0; t < static_cast<int>(r.graph.tensors.size()) && !shape_case; ++t) {
    for (int shift : {4, -4}) {
      std::vector<uint8_t> bytes = r.plan;
      shift_vector(mutable_tensor(bytes, t), fb::Tensor::VT_SHAPE, shift);
      if (!passes_flatbuffers_verifier(bytes)) continue;
      assert_int_equal(reinterpret_cast<uintptr_t>(fb::GetPlan(bytes.data())->tensors()->Get(static_cast<uint32_t>(t))->shape()->data()) % 8, 4);
      print_message("  shape of tensor %d moved by %d\n", t, shift);
      expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {("'" + r.graph.tensors[static_cast<size_t>(t)].name + "'").c_str()});
      shape_case = true;
      break;
    }
  }
  for (int i = 0; i < static_cast<int>(r.graph.ops.size()) && !iattr_case; ++i) {
    if (r.graph.ops[static_cast<size_t>(i)].iattrs.empty()) continue;
    for (int shift : {4, -4}) {
      std::vector<uint8_t> bytes = r.plan;
      shift_vector(mutable_op(bytes, i), fb::Op::VT_IATTRS, shift);
      if (!passes_flatbuffers_verifier(bytes)) continue;
      // A moved vector whose length now reads 0 loads no int64: only non-empty ones test the check.
      if (fb::GetPlan(bytes.data())->ops()->Get(static_cast<uint32_t>(i))->iattrs()->size() == 0) continue;
      assert_int_equal(reinterpret_cast<uintptr_t>(fb::GetPlan(bytes.data())->ops()->Get(static_cast<uint32_t>(i))->iattrs()->data()) % 8, 4);
      print_message("  iattrs of op %d moved by %d\n", i, shift);
      expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {("op " + std::to_string(i)).c_str()});
      iattr_case = true;
      break;
    }
  }
  assert_true(shape_case);
  assert_true(iattr_case);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(compiled_plans_verify),
      cmocka_unit_test(compiled_plans_initialise_every_param_and_state),
      cmocka_unit_test(null_or_empty_plan_bytes_are_rejected),
      cmocka_unit_test(truncated_plans_are_rejected_as_corrupt),
      cmocka_unit_test(plan_without_its_identifier_is_rejected_as_corrupt),
      cmocka_unit_test(plan_of_another_format_version_is_rejected),
      cmocka_unit_test(plan_with_a_bad_alignment_is_rejected_as_corrupt),
      cmocka_unit_test(plan_with_an_unknown_opcode_is_rejected),
      cmocka_unit_test(op_changed_to_one_of_another_arity_is_rejected),
      cmocka_unit_test(update_that_does_not_write_its_own_param_is_rejected),
      cmocka_unit_test(op_whose_output_is_also_its_input_is_rejected),
      cmocka_unit_test(matmul_with_a_flipped_transpose_flag_is_rejected),
      cmocka_unit_test(op_with_a_non_finite_float_attribute_is_rejected),
      cmocka_unit_test(op_naming_a_tensor_that_does_not_exist_is_rejected),
      cmocka_unit_test(tensor_whose_shape_disagrees_with_its_size_is_rejected),
      cmocka_unit_test(tensor_whose_element_count_overflows_is_rejected),
      cmocka_unit_test(tensor_reshaped_to_the_same_size_is_rejected_by_the_op_that_uses_it),
      cmocka_unit_test(labels_of_the_wrong_dtype_are_rejected),
      cmocka_unit_test(float_activation_stored_as_int_is_rejected),
      cmocka_unit_test(tensor_of_an_unknown_dtype_is_rejected),
      cmocka_unit_test(tensor_in_an_unknown_region_or_role_is_rejected),
      cmocka_unit_test(tensor_with_an_unknown_init_is_rejected),
      cmocka_unit_test(init_on_a_tensor_that_is_not_f32_is_rejected),
      cmocka_unit_test(param_placed_in_the_arena_is_rejected_as_read_before_it_is_written),
      cmocka_unit_test(tensor_placed_outside_its_region_is_rejected),
      cmocka_unit_test(host_tensor_used_by_an_ordinary_op_is_rejected),
      cmocka_unit_test(plan_with_overlapping_live_tensors_is_rejected),
      cmocka_unit_test(overlap_check_does_not_trust_the_recorded_lifetimes),
      cmocka_unit_test(tensors_live_at_different_times_may_share_bytes),
      cmocka_unit_test(loss_naming_a_tensor_that_does_not_exist_is_rejected),
      cmocka_unit_test(binding_naming_a_wrong_tensor_is_rejected),
      cmocka_unit_test(plan_bytes_at_a_4_byte_boundary_are_refused_as_misaligned),
      cmocka_unit_test(int64_vectors_at_a_4_byte_boundary_are_rejected_as_corrupt),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
