// CUDA backend specifics. `creation` (runs everywhere): no device gives REMAT_ERROR_UNAVAILABLE
// with the CUDA error name; with a device, a 1 PiB arena gives REMAT_ERROR_RESOURCE_EXHAUSTED.
// The default mode needs a GPU (exit 77 without one): spill / prefetch / wait round trips through
// the copy stream, graph replay bitwise equal to uncaptured runs, data errors found on the
// device. Every op against the CPU kernels is in the backend conformance suite.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "plan/ops.h"
#include "runtime/backend_registry.h"
#include "tests/backends/op_cases.h"
#include "tests/cmocka_cpp.h"

namespace {

using remat::OpCode;
using remat::Region;
using remat::TensorRef;
using remat_test::download;
using remat_test::Errors;
using remat_test::Layout;
using remat_test::make_call;
using remat_test::uniform;
using remat_test::upload;

constexpr uint64_t kArenaBytes = 1 << 22;
constexpr uint64_t kPersistentBytes = 1 << 16;
constexpr uint64_t kHostBytes = 1 << 16;
constexpr uint64_t kSeed = 0x5eed1234abcdull;

// Host spill regions, one per backend a test creates.
alignas(256) uint8_t g_host[2][kHostBytes];

remat::Backend* make_backend(const char* spec, int host_index, Errors* e) {
  remat::RegionSetup r{};
  r.arena_bytes = kArenaBytes;
  r.persistent_bytes = kPersistentBytes;
  r.host = g_host[host_index];
  r.host_bytes = kHostBytes;
  r.alignment = 256;
  remat::Backend* b = nullptr;
  if (remat::create_backend(spec, r, &b, &e->buf) != REMAT_OK)
    fail_msg("create %s: %s", spec, e->text);
  return b;
}

void spill_prefetch_and_wait_round_trip(void**) {
  Errors e;
  remat::Backend* gpu = make_backend("cuda", 1, &e);
  Layout layout;
  const TensorRef x = layout.add({4096});
  const TensorRef y = layout.add({4096});
  const TensorRef z = layout.add({4096});
  const TensorRef slot = layout.add({4096}, REMAT_DTYPE_F32, Region::kHost);
  std::vector<float> data(4096);
  for (float& v : data) v = uniform();
  upload(gpu, x, data.data());
  const remat::StepContext ctx{kSeed, 0};
  const std::vector<int64_t> none_i;
  const std::vector<float> none_f, half = {0.5f};
  // x -> slot, then x overwritten at once (no wait: the hazard check must order it), then the
  // slot back into y, read by a scale into z after the wait.
  const remat::OpCall ops[] = {
      make_call(OpCode::kSpill, 0, {&x}, {&slot}, none_i, none_f),
      make_call(OpCode::kScale, 1, {&y}, {&x}, none_i, half),
      make_call(OpCode::kPrefetch, 2, {&slot}, {&y}, none_i, none_f),
      make_call(OpCode::kWait, 3, {&y}, {}, none_i, none_f),
      make_call(OpCode::kScale, 4, {&y}, {&z}, none_i, half),
  };
  for (int round = 0; round < 2; ++round) {  // Eager, then through the step hooks (captured).
    upload(gpu, x, data.data());
    if (round == 1) assert_int_equal(remat::cuda_begin_step(gpu, ctx, &e.buf), REMAT_OK);
    for (const remat::OpCall& op : ops) {
      if (gpu->run_op(op, ctx, &e.buf) != REMAT_OK) fail_msg("op %u: %s", op.index, e.text);
    }
    if (round == 1) assert_int_equal(remat::cuda_end_step(gpu, &e.buf), REMAT_OK);
    if (gpu->sync(&e.buf) != REMAT_OK) fail_msg("sync: %s", e.text);
    const std::vector<float> back = download(gpu, y);
    assert_memory_equal(back.data(), data.data(), data.size() * 4);
    std::vector<float> slot_bytes(4096);
    memcpy(slot_bytes.data(), g_host[1] + slot.offset, slot.bytes);  // The caller's host buffer.
    assert_memory_equal(slot_bytes.data(), data.data(), data.size() * 4);
    const std::vector<float> scaled = download(gpu, z);
    for (size_t i = 0; i < data.size(); ++i) assert_true(scaled[i] == 0.5f * data[i]);
  }
  // Far more copies in flight than the pending table holds, then one sync.
  for (uint32_t i = 0; i < 600; ++i) {
    const remat::OpCall op = make_call(OpCode::kSpill, i, {&y}, {&slot}, none_i, none_f);
    if (gpu->run_op(op, ctx, &e.buf) != REMAT_OK) fail_msg("spill %u: %s", i, e.text);
  }
  assert_int_equal(gpu->sync(&e.buf), REMAT_OK);
  remat::destroy_backend(gpu);
}

// A small training step: matmul, bias, gelu, spill/prefetch, dropout, cross-entropy, their
// gradients and Adam / SGD updates. Returns the loss of each step and the final parameters.
struct StepResult {
  std::vector<float> losses, params;
};

StepResult run_training(const char* graphs_env, bool hooks) {
  setenv("REMAT_CUDA_GRAPHS", graphs_env, 1);
  Errors e;
  remat::Backend* gpu = make_backend("cuda", 1, &e);
  unsetenv("REMAT_CUDA_GRAPHS");
  Layout L;
  const TensorRef x = L.add({8, 16}), labels = L.add({8}, REMAT_DTYPE_I32);
  const TensorRef w1 = L.add({16, 32}), b1 = L.add({32}), w2 = L.add({32, 10});
  const TensorRef m1 = L.add({16, 32}), v1 = L.add({16, 32}), m2 = L.add({32, 10}),
                  v2 = L.add({32, 10});
  const TensorRef h = L.add({8, 32}), h2 = L.add({8, 32}), g = L.add({8, 32}), g2 = L.add({8, 32});
  const TensorRef d = L.add({8, 32}), logits = L.add({8, 10}), loss = L.add({1}),
                  probs = L.add({8, 10});
  const TensorRef dlogits = L.add({8, 10}), dw2 = L.add({32, 10}), dd = L.add({8, 32}),
                  dg = L.add({8, 32});
  const TensorRef dh2 = L.add({8, 32}), db1 = L.add({32}), dw1 = L.add({16, 32});
  const TensorRef slot = L.add({8, 32}, REMAT_DTYPE_F32, Region::kHost);
  const std::vector<int64_t> none_i, nn = {0, 0}, tn = {1, 0}, nt = {0, 1}, key = {5}, adam = {0};
  const std::vector<float> none_f, one = {1.0f}, p = {0.2f}, sgd = {0.05f, 0.0f, 0.0f};
  const std::vector<float> adam_f = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f};
  const remat::OpCall ops[] = {
      make_call(OpCode::kMatMul, 0, {&x, &w1}, {&h}, nn, one),
      make_call(OpCode::kBiasAdd, 1, {&h, &b1}, {&h2}, none_i, none_f),
      make_call(OpCode::kGelu, 2, {&h2}, {&g}, none_i, none_f),
      make_call(OpCode::kSpill, 3, {&g}, {&slot}, none_i, none_f),
      make_call(OpCode::kWait, 4, {&g}, {}, none_i, none_f),
      make_call(OpCode::kPrefetch, 5, {&slot}, {&g2}, none_i, none_f),
      make_call(OpCode::kWait, 6, {&g2}, {}, none_i, none_f),
      make_call(OpCode::kDropout, 7, {&g2}, {&d}, key, p),
      make_call(OpCode::kMatMul, 8, {&d, &w2}, {&logits}, nn, one),
      make_call(OpCode::kSoftmaxCrossEntropy, 9, {&logits, &labels}, {&loss, &probs}, none_i,
                none_f),
      make_call(OpCode::kSoftmaxCrossEntropyGrad, 10, {&probs, &labels}, {&dlogits}, none_i,
                none_f),
      make_call(OpCode::kMatMul, 11, {&d, &dlogits}, {&dw2}, tn, one),
      make_call(OpCode::kMatMul, 12, {&dlogits, &w2}, {&dd}, nt, one),
      make_call(OpCode::kDropoutGrad, 13, {&dd}, {&dg}, key, p),
      make_call(OpCode::kGeluGrad, 14, {&dg, &h2}, {&dh2}, none_i, none_f),
      make_call(OpCode::kReduceLeading, 15, {&dh2}, {&db1}, none_i, none_f),
      make_call(OpCode::kMatMul, 16, {&x, &dh2}, {&dw1}, tn, one),
      make_call(OpCode::kAdamUpdate, 17, {&w1, &dw1, &m1, &v1}, {&w1, &m1, &v1}, adam, adam_f),
      make_call(OpCode::kAdamUpdate, 18, {&w2, &dw2, &m2, &v2}, {&w2, &m2, &v2}, adam, adam_f),
      make_call(OpCode::kSgdUpdate, 19, {&b1, &db1}, {&b1}, none_i, sgd),
  };
  remat_test::g_rng = 7;
  for (const TensorRef* t : {&x, &w1, &b1, &w2}) {
    std::vector<float> v(static_cast<size_t>(t->numel));
    for (float& f : v) f = uniform();
    upload(gpu, *t, v.data());
  }
  for (const TensorRef* t : {&m1, &v1, &m2, &v2}) {
    const std::vector<float> zeros(static_cast<size_t>(t->numel), 0.0f);
    upload(gpu, *t, zeros.data());
  }
  const std::vector<int32_t> label_data = {1, 0, 9, 4, 4, 7, 2, 3};
  upload(gpu, labels, label_data.data());
  // As a session does: the workspace every op needs (reduce_leading's row of ones).
  if (gpu->prepare(ops, sizeof(ops) / sizeof(ops[0]), &e.buf) != REMAT_OK)
    fail_msg("prepare: %s", e.text);
  StepResult result;
  for (uint64_t step = 0; step < 4; ++step) {
    const remat::StepContext ctx{kSeed, step};
    if (hooks && remat::cuda_begin_step(gpu, ctx, &e.buf) != REMAT_OK)
      fail_msg("begin: %s", e.text);
    for (const remat::OpCall& op : ops) {
      if (gpu->run_op(op, ctx, &e.buf) != REMAT_OK) fail_msg("op %u: %s", op.index, e.text);
    }
    if (hooks && remat::cuda_end_step(gpu, &e.buf) != REMAT_OK) fail_msg("end: %s", e.text);
    if (gpu->sync(&e.buf) != REMAT_OK) fail_msg("sync: %s", e.text);
    result.losses.push_back(download(gpu, loss)[0]);
  }
  for (const TensorRef* t : {&w1, &b1, &w2, &m1, &v2}) {
    const std::vector<float> v = download(gpu, *t);
    result.params.insert(result.params.end(), v.begin(), v.end());
  }
  const uint64_t replays = remat::cuda_graph_replays(gpu);
  assert_int_equal(replays, strcmp(graphs_env, "1") == 0 && hooks ? 3 : 0);
  remat::destroy_backend(gpu);
  return result;
}

void graph_replay_is_bitwise_equal_to_uncaptured_runs(void**) {
  const StepResult graph = run_training("1", true);
  const StepResult hooks_eager = run_training("0", true);
  const StepResult eager = run_training("1", false);
  for (size_t i = 0; i < graph.losses.size(); ++i)
    printf("  step %zu loss %.9g\n", i, graph.losses[i]);
  assert_true(graph.losses[0] != graph.losses[3]);  // It trained.
  assert_memory_equal(graph.losses.data(), eager.losses.data(), eager.losses.size() * 4);
  assert_memory_equal(graph.params.data(), eager.params.data(), eager.params.size() * 4);
  assert_memory_equal(hooks_eager.params.data(), eager.params.data(), eager.params.size() * 4);
}

// A bad id is found on the device and reported at sync, and the optimizer of that step does not
// touch its parameter; eagerly and through a replayed graph.
void an_id_out_of_range_is_reported_at_sync(void**) {
  Errors e;
  remat::Backend* gpu = make_backend("cuda", 1, &e);
  Layout L;
  const TensorRef ids = L.add({4}, REMAT_DTYPE_I32), table = L.add({5, 3}), out = L.add({4, 3});
  const TensorRef param = L.add({12}), grad = L.add({12});
  const std::vector<int64_t> none_i;
  const std::vector<float> none_f, sgd = {0.5f, 0.0f, 0.0f};
  const remat::OpCall ops[] = {
      make_call(OpCode::kEmbedding, 0, {&ids, &table}, {&out}, none_i, none_f),
      make_call(OpCode::kSgdUpdate, 1, {&param, &grad}, {&param}, none_i, sgd),
  };
  std::vector<float> values(15, 1.0f);
  upload(gpu, table, values.data());
  upload(gpu, param, values.data());
  upload(gpu, grad, values.data());
  const std::vector<int32_t> good = {0, 1, 2, 4}, bad = {0, 99, 2, 4};
  for (int round = 0; round < 4;
       ++round) {  // Eager good/bad, then hooks: capture good, replay bad.
    const bool hooks = round >= 2, is_bad = round % 2 == 1;
    upload(gpu, ids, is_bad ? bad.data() : good.data());
    const std::vector<float> before = download(gpu, param);
    const remat::StepContext ctx{kSeed, static_cast<uint64_t>(round)};
    if (hooks) assert_int_equal(remat::cuda_begin_step(gpu, ctx, &e.buf), REMAT_OK);
    for (const remat::OpCall& op : ops) assert_int_equal(gpu->run_op(op, ctx, &e.buf), REMAT_OK);
    if (hooks) assert_int_equal(remat::cuda_end_step(gpu, &e.buf), REMAT_OK);
    const remat_status s = gpu->sync(&e.buf);
    const std::vector<float> after = download(gpu, param);
    if (is_bad) {
      printf("  %s\n", e.text);
      assert_int_equal(s, REMAT_ERROR_OUT_OF_RANGE);
      assert_non_null(strstr(e.text, "id 99 at position 1 outside [0, 5)"));
      assert_memory_equal(before.data(), after.data(), before.size() * 4);
    } else {
      assert_int_equal(s, REMAT_OK);
      assert_true(after[0] == before[0] - 0.5f);
    }
  }
  remat::destroy_backend(gpu);
}

void a_huge_arena_is_resource_exhausted(void**) {
  remat::RegionSetup r{};
  r.arena_bytes = 1ull << 50;  // 1 PiB.
  r.persistent_bytes = 256;
  r.alignment = 256;
  Errors e;
  remat::Backend* b = nullptr;
  assert_int_equal(remat::create_backend("cuda", r, &b, &e.buf), REMAT_ERROR_RESOURCE_EXHAUSTED);
  printf("  %s\n", e.text);
  assert_null(b);
  assert_non_null(strstr(e.text, "cudaErrorMemoryAllocation"));
}

// Runs here too: without a device or driver, creation names the CUDA error; with one, the
// out-of-memory path is checked instead.
void creation_reports_why_cuda_is_unavailable(void**) {
  remat::RegionSetup r{};
  r.arena_bytes = 4096;
  r.persistent_bytes = 256;
  r.alignment = 256;
  Errors e;
  remat::Backend* b = nullptr;
  const remat_status s = remat::create_backend("cuda", r, &b, &e.buf);
  printf("  cuda: status %d: %s\n", s, e.text);
  Errors e2;
  assert_int_equal(remat::create_backend("cuda:9:9", r, &b, &e2.buf), REMAT_ERROR_UNAVAILABLE);
  if (s == REMAT_OK) {
    remat::destroy_backend(b);
    a_huge_arena_is_resource_exhausted(nullptr);
    return;
  }
  assert_int_equal(s, REMAT_ERROR_UNAVAILABLE);
  assert_null(b);
  assert_non_null(strstr(e.text, "cudaError"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "creation") == 0) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(creation_reports_why_cuda_is_unavailable)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
  }
  Errors e;
  remat::RegionSetup r{};
  r.arena_bytes = 4096;
  r.persistent_bytes = 256;
  r.alignment = 256;
  remat::Backend* b = nullptr;
  if (remat::create_backend("cuda", r, &b, &e.buf) == REMAT_ERROR_UNAVAILABLE) {
    printf("cuda is not available here: %s\n", e.text);
    return 77;
  }
  remat::destroy_backend(b);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spill_prefetch_and_wait_round_trip),
      cmocka_unit_test(graph_replay_is_bitwise_equal_to_uncaptured_runs),
      cmocka_unit_test(an_id_out_of_range_is_reported_at_sync),
      cmocka_unit_test(a_huge_arena_is_resource_exhausted),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
