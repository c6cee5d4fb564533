// Plan verification of tensors: shapes, dtypes, regions, roles and inits each checked with their
// own status, and no two tensors live together sharing bytes.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "tests/runtime/plan_edits.h"

using namespace remat_test;  // the plan edits shared by the verification tests

namespace {

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
    expect_status(bytes, REMAT_ERROR_BAD_SHAPE,
                  {"'fc0.relu'", ("is " + std::to_string(dim)).c_str()});
  }
  // Ranks outside 1..6 (written from the graph: the vector's length is not mutable in place).
  expect_status(rewritten(r,
                          [t](rc::Graph& g, rc::MemoryPlan&) {
                            g.tensors[static_cast<size_t>(t)].shape = {1, 1, 1, 1, 1, 2, 8};
                          }),
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
  const remat_status status =
      remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message));
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
  expect_status(
      bytes, REMAT_ERROR_BAD_DTYPE,
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
  assert_true(mutable_tensor(bytes, find_tensor(r.graph, "labels"))
                  ->mutate_dtype(static_cast<fb::DType>(9)));
  expect_status(bytes, REMAT_ERROR_BAD_DTYPE, {"'labels'", "dtype 9"});
}

// Every float activation, checkpoint and gradient in 16 bits (what --precision bf16 stores and
// more: parameter gradients too) is a plan the verifier takes; the ops mix them with the f32
// parameters, labels and loss.
void activations_and_gradients_in_f16_or_bf16_are_accepted(void**) {
  const rc::CompileResult r = compile_model(kTransformer);
  for (remat_dtype half : {REMAT_DTYPE_F16, REMAT_DTYPE_BF16}) {
    const std::vector<uint8_t> bytes = rewritten(r, [half](rc::Graph& g, rc::MemoryPlan&) {
      for (rc::Tensor& t : g.tensors) {
        const bool working = t.role == rc::Role::kActivation || t.role == rc::Role::kGrad ||
                             t.role == rc::Role::kCheckpoint;
        if (working && t.dtype == REMAT_DTYPE_F32) t.dtype = half;
      }
      for (int t : g.outputs) g.tensors[static_cast<size_t>(t)].dtype = REMAT_DTYPE_F32;
    });
    expect_status(bytes, REMAT_OK);
  }
}

// Parameters and optimizer state are float32 masters; what the caller reads and writes by name
// is f32 too: each in 16 bits is refused, naming the tensor and its role.
void parameters_state_inputs_and_outputs_in_16_bits_are_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  int state = -1;
  for (size_t i = 0; i < r.graph.tensors.size() && state < 0; ++i) {
    if (r.graph.tensors[i].role == rc::Role::kState) state = static_cast<int>(i);
  }
  assert_true(state >= 0);  // SGD's velocity
  const std::string state_name = "'" + r.graph.tensors[static_cast<size_t>(state)].name + "'";
  const int weight = find_tensor(r.graph, "fc0.weight"), input = r.graph.inputs[0];
  const std::string input_name = "'" + r.graph.tensors[static_cast<size_t>(input)].name + "'";
  const struct {
    int tensor;
    std::string name;
    const char* role;
  } cases[] = {{weight, "'fc0.weight'", "Param"},
               {state, state_name, "State"},
               {input, input_name, "Input"}};
  for (const auto& c : cases) {
    for (remat_dtype half : {REMAT_DTYPE_F16, REMAT_DTYPE_BF16}) {
      const int t = c.tensor;
      const std::vector<uint8_t> bytes = rewritten(r, [t, half](rc::Graph& g, rc::MemoryPlan&) {
        g.tensors[static_cast<size_t>(t)].dtype = half;
      });
      expect_status(bytes, REMAT_ERROR_BAD_DTYPE,
                    {c.name.c_str(), c.role, half == REMAT_DTYPE_F16 ? "f16" : "bf16"});
    }
  }
  if (r.graph.outputs.empty()) return;
  const int output = r.graph.outputs[0];
  const std::vector<uint8_t> bytes = rewritten(r, [output](rc::Graph& g, rc::MemoryPlan&) {
    g.tensors[static_cast<size_t>(output)].dtype = REMAT_DTYPE_BF16;
  });
  expect_status(bytes, REMAT_ERROR_BAD_DTYPE, {"output binding 0", "bf16", "read as f32"});
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
  assert_true(mutable_tensor(bytes, find_tensor(r.graph, "fc0.weight"))
                  ->mutate_init(static_cast<fb::Init>(9)));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"'fc0.weight'", "unknown init 9"});
}

// Init Data: the session starts the tensor from the plan's bytes, which must be exactly its
// own; any other init carries none.
void initial_bytes_start_the_tensor_and_are_checked(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int w = find_tensor(r.graph, "fc0.bias");  // [8]
  std::vector<uint8_t> values(32);
  for (size_t i = 0; i < 8; ++i) {
    const float v = 0.25f * static_cast<float>(i) - 1.0f;
    memcpy(values.data() + 4 * i, &v, 4);
  }
  auto with_data = [&](std::vector<uint8_t> data) {
    return rewritten(r, [&](rc::Graph& g, rc::MemoryPlan&) {
      g.tensors[static_cast<size_t>(w)].init = rc::Init::kData;
      g.tensors[static_cast<size_t>(w)].init_data = data;
    });
  };
  std::vector<uint8_t> bytes = with_data(values);
  expect_status(bytes, REMAT_OK);
  // The session's fc0.bias before any step is the plan's bytes.
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, nullptr, 0), REMAT_OK);
  remat_session* session = nullptr;
  assert_int_equal(remat_session_create(plan, nullptr, &session, nullptr, 0), REMAT_OK);
  std::vector<uint8_t> got(32);
  assert_int_equal(remat_session_read_param(session, "fc0.bias", got.data(), got.size()), REMAT_OK);
  assert_memory_equal(got.data(), values.data(), values.size());
  remat_session_destroy(session);
  remat_plan_close(plan);
  // Too few or too many bytes; bytes under another init; an older format.
  expect_status(with_data(std::vector<uint8_t>(28)), REMAT_ERROR_PLAN_CORRUPT,
                {"'fc0.bias'", "32 bytes", "has 28"});
  expect_status(with_data(std::vector<uint8_t>(36)), REMAT_ERROR_PLAN_CORRUPT,
                {"'fc0.bias'", "has 36"});
  bytes = with_data(values);
  assert_true(mutable_tensor(bytes, w)->mutate_init(fb::Init::Zeros));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT,
                {"'fc0.bias'", "init_data on a tensor whose init is Zeros"});
  bytes = with_data(values);
  assert_true(mutable_plan(bytes)->mutate_format_version(2));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT, {"'fc0.bias'", "format 2"});
}

// The session draws initial values as f32 only: an init on labels (i32) would be counted as a
// write that never happens.
void init_on_a_tensor_that_is_not_f32_is_rejected(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int labels = find_tensor(r.graph, "labels");
  const std::vector<uint8_t> bytes = rewritten(r, [labels](rc::Graph& g, rc::MemoryPlan&) {
    g.tensors[static_cast<size_t>(labels)].init = rc::Init::kZeros;
  });
  expect_status(bytes, REMAT_ERROR_BAD_DTYPE, {"'labels'", "init Zeros", "only f32 is drawn"});
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
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT,
                {"reads tensor 'fc1.weight' before any op writes it"});
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
  // fc0.out (the first linear's, bias included) is written by op 0 and read by op 1 while the
  // input x is live (the whole step): put it on x's bytes. Nothing else is live there then.
  const int x = find_tensor(r.graph, "x");
  const int y = find_tensor(r.graph, "fc0.out");
  // An offset of 0 is left out of the buffer by FlatBuffers, so the plan is rewritten.
  std::vector<uint8_t> bytes = rewritten(r, [&](rc::Graph&, rc::MemoryPlan& m) {
    m.offset[static_cast<size_t>(y)] = m.offset[static_cast<size_t>(x)];
  });
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'x'", "'fc0.out'", "arena"});
  // The same by in-place mutation: fc0.relu (written by op 1, read in the backward) moved onto x.
  bytes = r.plan;
  assert_true(mutable_tensor(bytes, find_tensor(r.graph, "fc0.relu"))
                  ->mutate_offset(r.memory.offset[static_cast<size_t>(x)]));
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'x'", "'fc0.relu'"});
  // Two params are persistent: live together always.
  const int w0 = find_tensor(r.graph, "fc0.weight"), b0 = find_tensor(r.graph, "fc0.bias");
  bytes = r.plan;
  assert_true(
      mutable_tensor(bytes, b0)->mutate_offset(r.memory.offset[static_cast<size_t>(w0)] + 64));
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'fc0.weight'", "'fc0.bias'", "persistent"});
}

// The verifier takes lifetimes from the op list: a plan that records false lifetimes does not
// get an overlap past it.
void overlap_check_does_not_trust_the_recorded_lifetimes(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  const int x = find_tensor(r.graph, "x");
  const int y = find_tensor(r.graph, "fc0.out");
  const std::vector<uint8_t> bytes = rewritten(r, [&](rc::Graph&, rc::MemoryPlan& m) {
    m.offset[static_cast<size_t>(y)] = m.offset[static_cast<size_t>(x)];
    m.first_use[static_cast<size_t>(y)] = 100;  // "after the step": claims y is never live with x
    m.last_use[static_cast<size_t>(y)] = 100;
    m.first_use[static_cast<size_t>(x)] = 0;
    m.last_use[static_cast<size_t>(x)] = 0;
  });
  expect_status(bytes, REMAT_ERROR_OVERLAP, {"'x'", "'fc0.out'"});
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
      return x->region() == fb::Region::Arena && x->role() != fb::Role::Input &&
             x->role() != fb::Role::Label && x->first_use() >= 0 && x->last_use() >= x->first_use();
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
        const std::vector<uint8_t> bytes =
            rewritten(r, [&](rc::Graph&, rc::MemoryPlan& m) { m.offset[b] = at; });
        print_message("  %s: '%s' (ops %d..%d) moved onto '%s' (ops %d..%d) at %llu\n", model,
                      tensors->Get(b)->name()->c_str(), tensors->Get(b)->first_use(),
                      tensors->Get(b)->last_use(), tensors->Get(a)->name()->c_str(),
                      tensors->Get(a)->first_use(), tensors->Get(a)->last_use(),
                      static_cast<unsigned long long>(at));
        expect_status(bytes, REMAT_OK);
        ++pairs;
      }
    }
    assert_true(pairs > 0);
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(tensor_whose_shape_disagrees_with_its_size_is_rejected),
      cmocka_unit_test(tensor_whose_element_count_overflows_is_rejected),
      cmocka_unit_test(tensor_reshaped_to_the_same_size_is_rejected_by_the_op_that_uses_it),
      cmocka_unit_test(labels_of_the_wrong_dtype_are_rejected),
      cmocka_unit_test(float_activation_stored_as_int_is_rejected),
      cmocka_unit_test(tensor_of_an_unknown_dtype_is_rejected),
      cmocka_unit_test(activations_and_gradients_in_f16_or_bf16_are_accepted),
      cmocka_unit_test(parameters_state_inputs_and_outputs_in_16_bits_are_rejected),
      cmocka_unit_test(tensor_in_an_unknown_region_or_role_is_rejected),
      cmocka_unit_test(tensor_with_an_unknown_init_is_rejected),
      cmocka_unit_test(init_on_a_tensor_that_is_not_f32_is_rejected),
      cmocka_unit_test(initial_bytes_start_the_tensor_and_are_checked),
      cmocka_unit_test(param_placed_in_the_arena_is_rejected_as_read_before_it_is_written),
      cmocka_unit_test(tensor_placed_outside_its_region_is_rejected),
      cmocka_unit_test(host_tensor_used_by_an_ordinary_op_is_rejected),
      cmocka_unit_test(plan_with_overlapping_live_tensors_is_rejected),
      cmocka_unit_test(overlap_check_does_not_trust_the_recorded_lifetimes),
      cmocka_unit_test(tensors_live_at_different_times_may_share_bytes),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
