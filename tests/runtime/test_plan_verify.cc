// Plan verification on bad input: truncated, corrupted and semantically wrong plans each get
// their own status and a message naming the culprit, and never crash the runtime. (Tensors and
// overlap: test_plan_verify_tensors.cc; the eval program: test_plan_eval.cc.)
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "tests/runtime/plan_edits.h"

using namespace remat_test;  // the plan edits shared by the verification tests

namespace {

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
  const char* const models[] = {kMlp, kMlpDropout, "resmlp:layers=2,width=8,in=4,classes=3",
                                kTransformer};
  const char* const optimizers[] = {"sgd:lr=0.1", "sgd:lr=0.1,momentum=0.9", "adam:lr=0.01",
                                    "adamw:lr=0.01"};
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
        fail_msg("%s, %s: tensor '%s' has init %s in region %s", r.report.model.c_str(),
                 r.report.optimizer.c_str(), x->name()->c_str(), fb::EnumNameInit(x->init()),
                 fb::EnumNameRegion(x->region()));
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
  assert_int_equal(remat_plan_open(nullptr, 100, &plan, message, sizeof(message)),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_null(plan);
  assert_non_null(strstr(message, "NULL"));
  assert_int_equal(remat_plan_open(nullptr, 0, &plan, message, sizeof(message)),
                   REMAT_ERROR_INVALID_ARGUMENT);
  const uint8_t one = 0;
  assert_int_equal(remat_plan_open(&one, 0, &plan, message, sizeof(message)),
                   REMAT_ERROR_PLAN_CORRUPT);
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
      fail_msg("prefix of %zu of %zu bytes: %s '%s'", length, plan.size(),
               remat_status_string(o.status), o.message.c_str());
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
  expect_status(bytes, REMAT_ERROR_PLAN_VERSION, {"version 5", "versions 1 to 4"});
  assert_true(mutable_plan(bytes)->mutate_format_version(0));
  expect_status(bytes, REMAT_ERROR_PLAN_VERSION, {"version 0", "versions 1 to 4"});
}

void plan_with_a_bad_alignment_is_rejected_as_corrupt(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  for (uint32_t alignment : {0u, 48u, 8192u}) {
    std::vector<uint8_t> bytes = r.plan;
    assert_true(mutable_plan(bytes)->mutate_alignment(alignment));
    expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT,
                  {("alignment " + std::to_string(alignment)).c_str()});
  }
}

void plan_with_an_unknown_matmul_precision_is_rejected_as_corrupt(void**) {
  rc::CompileOptions o;
  o.model = kMlp;
  o.batch = 2;
  o.matmul_precision = rc::MatmulPrecision::kTf32;  // written, so it can be patched in place
  std::vector<uint8_t> bytes = rc::compile(o).plan;
  expect_status(bytes, REMAT_OK);
  assert_true(mutable_plan(bytes)->mutate_matmul_precision(static_cast<fb::MatmulPrecision>(2)));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"matmul_precision", "is 2"});
  assert_true(mutable_plan(bytes)->mutate_matmul_precision(static_cast<fb::MatmulPrecision>(255)));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"matmul_precision", "is 255"});
}

// ---- Ops ------------------------------------------------------------------------------------

void plan_with_an_unknown_opcode_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int op = find_op(r.graph, remat::OpCode::kRelu);
  for (uint16_t code : {uint16_t{999}, uint16_t{0}, remat::kOpCodeCount, uint16_t{65535}}) {
    std::vector<uint8_t> bytes = r.plan;
    assert_true(mutable_op(bytes, op)->mutate_code(code));
    const std::string where = "op " + std::to_string(op) + ":";
    expect_status(bytes, REMAT_ERROR_UNKNOWN_OP,
                  {where.c_str(), ("opcode " + std::to_string(code)).c_str()});
  }
}

void op_changed_to_one_of_another_arity_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int relu = find_op(r.graph, remat::OpCode::kRelu);
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_op(bytes, relu)->mutate_code(static_cast<uint16_t>(remat::OpCode::kAdd)));
  expect_status(bytes, REMAT_ERROR_BAD_ARITY,
                {("op " + std::to_string(relu)).c_str(), "add", "inputs"});
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
      mutable_op(bytes, static_cast<int>(i))
          ->mutable_outputs()
          ->Mutate(0, static_cast<uint32_t>(p));
      expect_status(bytes, REMAT_ERROR_BAD_ARITY,
                    {("op " + std::to_string(i)).c_str(), "sgd_update", "output 0"});
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
  expect_status(bytes, REMAT_ERROR_OVERLAP,
                {("op " + std::to_string(relu)).c_str(), "output 0 is also input 0"});
}

void matmul_with_a_flipped_transpose_flag_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  // The first layer's x [2, 4] times fc0.weight [8, 4] transposed; untransposed, K is 4 vs 8.
  const int matmul = find_op(r.graph, remat::OpCode::kMatMul);
  const rc::Op& op = r.graph.ops[static_cast<size_t>(matmul)];
  assert_int_equal(op.iattrs.size(), 2);
  std::vector<uint8_t> bytes = r.plan;
  mutable_op(bytes, matmul)->mutable_iattrs()->Mutate(1, 1 - op.iattrs[1]);
  expect_status(bytes, REMAT_ERROR_BAD_SHAPE,
                {("op " + std::to_string(matmul)).c_str(), "matmul", "K ="});
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
    expect_status(
        bytes, REMAT_ERROR_OUT_OF_REGION,
        {("op " + std::to_string(relu)).c_str(), ("tensor " + std::to_string(bad)).c_str()});
    bytes = r.plan;
    mutable_op(bytes, relu)->mutable_outputs()->Mutate(0, bad);
    expect_status(bytes, REMAT_ERROR_OUT_OF_REGION,
                  {"output 0", ("tensor " + std::to_string(bad)).c_str()});
  }
}

// ---- Bindings and loss ----------------------------------------------------------------------

void loss_naming_a_tensor_that_does_not_exist_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const uint32_t count = static_cast<uint32_t>(r.graph.tensors.size());
  std::vector<uint8_t> bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_loss(count));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION,
                {"loss", ("tensor " + std::to_string(count)).c_str()});
  bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_loss(0xFFFFFFFFu));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"loss", "4294967295"});
  // A tensor that exists but is not a persistent f32 scalar.
  const int w = find_tensor(r.graph, "fc0.weight");
  bytes = r.plan;
  assert_true(mutable_plan(bytes)->mutate_loss(static_cast<uint32_t>(w)));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION,
                {"loss", ("tensor " + std::to_string(w)).c_str(), "scalar"});
}

void binding_naming_a_wrong_tensor_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const uint32_t count = static_cast<uint32_t>(r.graph.tensors.size());
  std::vector<uint8_t> bytes = r.plan;
  mutable_plan(bytes)->mutable_inputs()->Mutate(0, count);
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION,
                {"input binding 0", ("tensor " + std::to_string(count)).c_str()});
  // A label binding that names the input tensor (a tensor of another role).
  bytes = r.plan;
  mutable_plan(bytes)->mutable_labels()->Mutate(0,
                                                static_cast<uint32_t>(find_tensor(r.graph, "x")));
  expect_status(bytes, REMAT_ERROR_OUT_OF_REGION, {"label binding 0"});
  // A bound tensor whose name holds a NUL byte: no C string could name it (found by fuzz_plan).
  bytes = r.plan;
  const auto* x =
      mutable_plan(bytes)->tensors()->Get(static_cast<uint32_t>(find_tensor(r.graph, "x")));
  const_cast<char*>(x->name()->c_str())[0] = '\0';
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"input binding 0", "NUL byte"});
  bytes = r.plan;
  mutable_plan(bytes)->mutable_params()->Mutate(
      1, static_cast<uint32_t>(find_tensor(r.graph, "fc0.relu")));
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
  assert_int_equal(remat_plan_open(shifted, r.plan.size(), &plan, message, sizeof(message)),
                   REMAT_ERROR_MISALIGNED);
  assert_null(plan);
  char address[32];
  snprintf(address, sizeof(address), "%p", static_cast<void*>(shifted));
  assert_non_null(strstr(message, address));
  assert_non_null(strstr(message, "aligned to 8 bytes"));
  // The same bytes at an 8-byte boundary open.
  memcpy(storage.data(), r.plan.data(), r.plan.size());
  assert_int_equal(remat_plan_open(storage.data(), r.plan.size(), &plan, message, sizeof(message)),
                   REMAT_OK);
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
  flatbuffers::WriteScalar<flatbuffers::uoffset_t>(
      table + at, static_cast<flatbuffers::uoffset_t>(static_cast<int64_t>(old) + shift));
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
      assert_int_equal(reinterpret_cast<uintptr_t>(fb::GetPlan(bytes.data())
                                                       ->tensors()
                                                       ->Get(static_cast<uint32_t>(t))
                                                       ->shape()
                                                       ->data()) %
                           8,
                       4);
      print_message("  shape of tensor %d moved by %d\n", t, shift);
      expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT,
                    {("'" + r.graph.tensors[static_cast<size_t>(t)].name + "'").c_str()});
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
      if (fb::GetPlan(bytes.data())->ops()->Get(static_cast<uint32_t>(i))->iattrs()->size() == 0)
        continue;
      assert_int_equal(
          reinterpret_cast<uintptr_t>(
              fb::GetPlan(bytes.data())->ops()->Get(static_cast<uint32_t>(i))->iattrs()->data()) %
              8,
          4);
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
      cmocka_unit_test(loss_naming_a_tensor_that_does_not_exist_is_rejected),
      cmocka_unit_test(binding_naming_a_wrong_tensor_is_rejected),
      cmocka_unit_test(plan_bytes_at_a_4_byte_boundary_are_refused_as_misaligned),
      cmocka_unit_test(int64_vectors_at_a_4_byte_boundary_are_rejected_as_corrupt),
      cmocka_unit_test(plan_with_an_unknown_matmul_precision_is_rejected_as_corrupt),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
