// CUDA backend tests. `creation` (runs everywhere): no device gives REMAT_ERROR_UNAVAILABLE with
// the CUDA error name; with a device, a 1 PiB arena gives REMAT_ERROR_RESOURCE_EXHAUSTED. The
// default mode needs a GPU (exit 77 without one): every op against the CPU kernels, spill /
// prefetch / wait round trips, graph replay bitwise equal to uncaptured runs, data errors.
//
// Tolerances (inputs uniform in [-1, 1], small shapes): |gpu - cpu| <= atol + rtol * |cpu| with
// rtol = atol = 1e-5 for elementwise, normalisation, loss and optimizer ops (device expf/erff/
// tanhf are within 2 ulp of glibc, nvcc contracts a*b+c into FMAs, block sums use another
// order); 1e-4 for matmul (cuBLAS sums K in another order). Bitwise for data movement, dropout
// (the Philox port must give the same mask) and embedding_grad (same summation order).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "../cmocka_cpp.h"
#include "backends/cuda/cuda_backend.h"
#include "common/ops.h"
#include "runtime/backend_registry.h"

namespace {

using remat::OpCode;
using remat::Region;
using remat::TensorRef;

constexpr uint64_t kArenaBytes = 1 << 22;
constexpr uint64_t kPersistentBytes = 1 << 16;
constexpr uint64_t kHostBytes = 1 << 16;
constexpr uint64_t kSeed = 0x5eed1234abcdull;

struct Errors {
  char text[512] = "";
  remat::ErrorBuffer buf{text, sizeof(text)};
};

uint64_t g_rng = 42;
float uniform() {  // splitmix64 -> [-1, 1)
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

// Host arena and persistent buffers for the CPU backend (device backends ignore them).
alignas(256) uint8_t g_cpu_arena[kArenaBytes];
alignas(256) uint8_t g_cpu_persistent[kPersistentBytes];
alignas(256) uint8_t g_host[2][kHostBytes];

remat::Backend* make_backend(const char* spec, int host_index, Errors* e) {
  remat::RegionSetup r{};
  const bool cpu = strcmp(spec, "cpu") == 0;
  r.arena = cpu ? g_cpu_arena : nullptr;
  r.arena_bytes = kArenaBytes;
  r.persistent = cpu ? g_cpu_persistent : nullptr;
  r.persistent_bytes = kPersistentBytes;
  r.host = g_host[host_index];
  r.host_bytes = kHostBytes;
  r.alignment = 256;
  remat::Backend* b = nullptr;
  if (remat::create_backend(spec, r, &b, &e->buf) != REMAT_OK) fail_msg("create %s: %s", spec, e->text);
  return b;
}

// Places tensors one after another in a region, 256-byte aligned.
struct Layout {
  uint64_t next[3] = {0, 0, 0};
  TensorRef add(std::vector<int64_t> dims, remat_dtype dtype = REMAT_DTYPE_F32,
                Region region = Region::kArena) {
    TensorRef t{};
    t.region = region;
    t.dtype = static_cast<uint8_t>(dtype);
    t.rank = static_cast<uint8_t>(dims.size());
    t.numel = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      t.dims[i] = dims[i];
      t.numel *= dims[i];
    }
    t.bytes = static_cast<uint64_t>(t.numel) * 4;
    uint64_t& n = next[static_cast<int>(region)];
    t.offset = n;
    n = (n + t.bytes + 255) / 256 * 256;
    return t;
  }
};

remat::OpCall make_call(OpCode code, uint32_t index, std::vector<const TensorRef*> in,
                        std::vector<const TensorRef*> out, const std::vector<int64_t>& iattrs,
                        const std::vector<float>& fattrs) {
  remat::OpCall c{};
  c.code = static_cast<uint16_t>(code);
  c.index = index;
  c.num_inputs = static_cast<uint8_t>(in.size());
  c.num_outputs = static_cast<uint8_t>(out.size());
  for (size_t i = 0; i < in.size(); ++i) c.inputs[i] = in[i];
  for (size_t i = 0; i < out.size(); ++i) c.outputs[i] = out[i];
  c.iattrs = iattrs.empty() ? nullptr : iattrs.data();
  c.num_iattrs = static_cast<uint32_t>(iattrs.size());
  c.fattrs = fattrs.empty() ? nullptr : fattrs.data();
  c.num_fattrs = static_cast<uint32_t>(fattrs.size());
  return c;
}

void upload(remat::Backend* b, const TensorRef& t, const void* data) {
  Errors e;
  if (b->upload(t.region, t.offset, data, t.bytes, &e.buf) != REMAT_OK) fail_msg("upload: %s", e.text);
}

std::vector<float> download(remat::Backend* b, const TensorRef& t) {
  Errors e;
  std::vector<float> v(static_cast<size_t>(t.numel));
  if (b->download(t.region, t.offset, v.data(), t.bytes, &e.buf) != REMAT_OK) fail_msg("download: %s", e.text);
  return v;
}

// One op with its inputs (random f32, or given i32 data), run on the CPU and on the GPU.
struct OpCase {
  const char* name;
  OpCode code;
  std::vector<std::vector<int64_t>> in_dims;
  std::vector<std::vector<int64_t>> out_dims;  // Empty for in-place optimizers.
  std::vector<int64_t> iattrs;
  std::vector<float> fattrs;
  double tol;                                   // 0: bitwise.
  std::vector<std::vector<int32_t>> ints = {};  // Data of i32 inputs, by input index.
};

bool is_int_input(const OpCase& c, size_t i) {
  const bool ids_first = c.code == OpCode::kEmbedding;
  const bool labels_second = c.code == OpCode::kSoftmaxCrossEntropy ||
                             c.code == OpCode::kSoftmaxCrossEntropyGrad || c.code == OpCode::kEmbeddingGrad;
  return (ids_first && i == 0) || (labels_second && i == 1);
}

void run_case(const OpCase& c, remat::Backend* cpu, remat::Backend* gpu) {
  Layout layout;
  std::vector<TensorRef> ins, outs;
  for (size_t i = 0; i < c.in_dims.size(); ++i) {
    ins.push_back(layout.add(c.in_dims[i], is_int_input(c, i) ? REMAT_DTYPE_I32 : REMAT_DTYPE_F32));
  }
  for (const auto& d : c.out_dims) outs.push_back(layout.add(d));
  std::vector<const TensorRef*> in_ptrs, out_ptrs;
  for (const TensorRef& t : ins) in_ptrs.push_back(&t);
  for (const TensorRef& t : outs) out_ptrs.push_back(&t);
  if (c.code == OpCode::kSgdUpdate) {  // In place: param[, velocity].
    out_ptrs = {&ins[0]};
    if (ins.size() > 2) out_ptrs.push_back(&ins[2]);
  } else if (c.code == OpCode::kAdamUpdate) {  // In place: param, m, v.
    out_ptrs = {&ins[0], &ins[2], &ins[3]};
  }
  const remat::OpCall call = make_call(c.code, 7, in_ptrs, out_ptrs, c.iattrs, c.fattrs);
  size_t next_int = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (is_int_input(c, i)) {
      const std::vector<int32_t>& data = c.ints[next_int++];
      assert_int_equal(static_cast<int64_t>(data.size()), ins[i].numel);
      upload(cpu, ins[i], data.data());
      upload(gpu, ins[i], data.data());
      continue;
    }
    std::vector<float> data(static_cast<size_t>(ins[i].numel));
    for (float& v : data) v = uniform();
    // Second moments and normalisation statistics must be positive.
    if ((c.code == OpCode::kAdamUpdate && i == 3) || (c.code == OpCode::kLayerNormGrad && i == 3)) {
      for (float& v : data) v = fabsf(v) + 0.1f;
    }
    upload(cpu, ins[i], data.data());
    upload(gpu, ins[i], data.data());
  }
  const remat::StepContext ctx{kSeed, 3};
  Errors e;
  if (cpu->run_op(call, ctx, &e.buf) != REMAT_OK) fail_msg("%s on cpu: %s", c.name, e.text);
  if (gpu->run_op(call, ctx, &e.buf) != REMAT_OK) fail_msg("%s on cuda: %s", c.name, e.text);
  if (gpu->sync(&e.buf) != REMAT_OK) fail_msg("%s sync: %s", c.name, e.text);
  for (size_t o = 0; o < out_ptrs.size(); ++o) {
    const std::vector<float> want = download(cpu, *out_ptrs[o]);
    const std::vector<float> got = download(gpu, *out_ptrs[o]);
    if (c.tol == 0.0) {
      if (memcmp(want.data(), got.data(), want.size() * 4) != 0) fail_msg("%s output %zu: bits differ", c.name, o);
      continue;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const double bound = c.tol + c.tol * fabs(want[i]);
      if (!(fabs(static_cast<double>(got[i]) - want[i]) <= bound)) {
        fail_msg("%s output %zu [%zu]: cuda %.9g, cpu %.9g", c.name, o, i, got[i], want[i]);
      }
    }
  }
  printf("  %-28s ok\n", c.name);
}

void every_op_matches_the_cpu_kernels(void**) {
  Errors e;
  remat::Backend* cpu = make_backend("cpu", 0, &e);
  remat::Backend* gpu = make_backend("cuda", 1, &e);
  const double kEw = 1e-5, kMm = 1e-4;
  const std::vector<int32_t> ids = {0, 3, 12, 3, 7, 3, 0, 11, 5, 3};
  const std::vector<int32_t> labels = {1, 0, 9, 4, 4, 7};
  const std::vector<OpCase> cases = {
      {"matmul batched", OpCode::kMatMul, {{2, 3, 4, 5}, {2, 3, 5, 6}}, {{2, 3, 4, 6}}, {0, 0}, {1.0f}, kMm},
      {"matmul batched trans", OpCode::kMatMul, {{3, 5, 4}, {3, 6, 5}}, {{3, 4, 6}}, {1, 1}, {0.5f}, kMm},
      {"matmul broadcast", OpCode::kMatMul, {{3, 4, 5}, {5, 6}}, {{3, 4, 6}}, {0, 0}, {1.0f}, kMm},
      {"matmul broadcast trans_a", OpCode::kMatMul, {{3, 5, 4}, {5, 6}}, {{3, 4, 6}}, {1, 0}, {1.0f}, kMm},
      {"matmul broadcast trans_b", OpCode::kMatMul, {{3, 4, 5}, {6, 5}}, {{3, 4, 6}}, {0, 1}, {2.0f}, kMm},
      {"matmul reduce folded", OpCode::kMatMul, {{3, 4, 5}, {3, 4, 6}}, {{5, 6}}, {1, 0}, {1.0f}, kMm},
      {"matmul reduce looped", OpCode::kMatMul, {{3, 5, 4}, {3, 6, 4}}, {{5, 6}}, {0, 1}, {1.0f}, kMm},
      {"matmul 2d", OpCode::kMatMul, {{33, 65}, {65, 17}}, {{33, 17}}, {0, 0}, {1.0f}, kMm},
      {"bias_add", OpCode::kBiasAdd, {{4, 3, 6}, {6}}, {{4, 3, 6}}, {}, {}, kEw},
      {"reduce_leading", OpCode::kReduceLeading, {{300, 40}}, {{40}}, {}, {}, kEw},
      {"add", OpCode::kAdd, {{1000}, {1000}}, {{1000}}, {}, {}, kEw},
      {"mul", OpCode::kMul, {{1000}, {1000}}, {{1000}}, {}, {}, kEw},
      {"scale", OpCode::kScale, {{1000}}, {{1000}}, {}, {-0.25f}, kEw},
      {"relu", OpCode::kRelu, {{1000}}, {{1000}}, {}, {}, kEw},
      {"relu_grad", OpCode::kReluGrad, {{1000}, {1000}}, {{1000}}, {}, {}, kEw},
      {"gelu", OpCode::kGelu, {{1000}}, {{1000}}, {}, {}, kEw},
      {"gelu_grad", OpCode::kGeluGrad, {{1000}, {1000}}, {{1000}}, {}, {}, kEw},
      {"tanh", OpCode::kTanh, {{1000}}, {{1000}}, {}, {}, kEw},
      {"tanh_grad", OpCode::kTanhGrad, {{1000}, {1000}}, {{1000}}, {}, {}, kEw},
      {"sigmoid", OpCode::kSigmoid, {{1000}}, {{1000}}, {}, {}, kEw},
      {"sigmoid_grad", OpCode::kSigmoidGrad, {{1000}, {1000}}, {{1000}}, {}, {}, kEw},
      {"softmax", OpCode::kSoftmax, {{7, 300}}, {{7, 300}}, {}, {}, kEw},
      {"softmax_grad", OpCode::kSoftmaxGrad, {{7, 300}, {7, 300}}, {{7, 300}}, {}, {}, kEw},
      {"layernorm", OpCode::kLayerNorm, {{5, 300}, {300}, {300}}, {{5, 300}, {5}, {5}}, {}, {1e-5f}, kEw},
      {"layernorm_grad", OpCode::kLayerNormGrad, {{5, 300}, {5, 300}, {5}, {5}, {300}},
       {{5, 300}, {300}, {300}}, {}, {}, kEw},
      {"dropout", OpCode::kDropout, {{1001}}, {{1001}}, {7}, {0.3f}, 0.0},
      {"dropout_grad", OpCode::kDropoutGrad, {{1001}}, {{1001}}, {7}, {0.3f}, 0.0},
      {"embedding", OpCode::kEmbedding, {{2, 5}, {13, 8}}, {{2, 5, 8}}, {}, {}, 0.0, {ids}},
      {"embedding_grad", OpCode::kEmbeddingGrad, {{2, 5, 8}, {2, 5}}, {{13, 8}}, {}, {}, 0.0, {ids}},
      {"permute", OpCode::kPermute, {{2, 3, 4}}, {{4, 2, 3}}, {3, 2, 3, 4, 2, 0, 1}, {}, 0.0},
      {"copy", OpCode::kCopy, {{3, 4, 5}}, {{60}}, {}, {}, 0.0},
      {"select", OpCode::kSelect, {{3, 4, 5}}, {{3, 5}}, {1, 2}, {}, 0.0},
      {"select_grad", OpCode::kSelectGrad, {{3, 5}}, {{3, 4, 5}}, {1, 2}, {}, 0.0},
      {"softmax_cross_entropy", OpCode::kSoftmaxCrossEntropy, {{6, 10}, {6}}, {{1}, {6, 10}}, {}, {}, kEw, {labels}},
      {"softmax_cross_entropy_grad", OpCode::kSoftmaxCrossEntropyGrad, {{6, 10}, {6}}, {{6, 10}}, {}, {}, kEw, {labels}},
      {"mse", OpCode::kMse, {{1000}, {1000}}, {{1}}, {}, {}, kEw},
      {"mse_grad", OpCode::kMseGrad, {{1000}, {1000}}, {{1000}}, {}, {}, kEw},
      {"sgd", OpCode::kSgdUpdate, {{500}, {500}}, {}, {}, {0.1f, 0.0f, 0.01f}, kEw},
      {"sgd momentum", OpCode::kSgdUpdate, {{500}, {500}, {500}}, {}, {}, {0.1f, 0.9f, 0.01f}, kEw},
      {"adam", OpCode::kAdamUpdate, {{500}, {500}, {500}, {500}}, {}, {0}, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f}, kEw},
      {"adamw", OpCode::kAdamUpdate, {{500}, {500}, {500}, {500}}, {}, {1}, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f}, kEw},
  };
  for (const OpCase& c : cases) run_case(c, cpu, gpu);
  remat::destroy_backend(gpu);
  remat::destroy_backend(cpu);
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
  const TensorRef m1 = L.add({16, 32}), v1 = L.add({16, 32}), m2 = L.add({32, 10}), v2 = L.add({32, 10});
  const TensorRef h = L.add({8, 32}), h2 = L.add({8, 32}), g = L.add({8, 32}), g2 = L.add({8, 32});
  const TensorRef d = L.add({8, 32}), logits = L.add({8, 10}), loss = L.add({1}), probs = L.add({8, 10});
  const TensorRef dlogits = L.add({8, 10}), dw2 = L.add({32, 10}), dd = L.add({8, 32}), dg = L.add({8, 32});
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
      make_call(OpCode::kSoftmaxCrossEntropy, 9, {&logits, &labels}, {&loss, &probs}, none_i, none_f),
      make_call(OpCode::kSoftmaxCrossEntropyGrad, 10, {&probs, &labels}, {&dlogits}, none_i, none_f),
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
  g_rng = 7;
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
  StepResult result;
  for (uint64_t step = 0; step < 4; ++step) {
    const remat::StepContext ctx{kSeed, step};
    if (hooks && remat::cuda_begin_step(gpu, ctx, &e.buf) != REMAT_OK) fail_msg("begin: %s", e.text);
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
  for (size_t i = 0; i < graph.losses.size(); ++i) printf("  step %zu loss %.9g\n", i, graph.losses[i]);
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
  for (int round = 0; round < 4; ++round) {  // Eager good/bad, then hooks: capture good, replay bad.
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
      cmocka_unit_test(every_op_matches_the_cpu_kernels),
      cmocka_unit_test(spill_prefetch_and_wait_round_trip),
      cmocka_unit_test(graph_replay_is_bitwise_equal_to_uncaptured_runs),
      cmocka_unit_test(an_id_out_of_range_is_reported_at_sync),
      cmocka_unit_test(a_huge_arena_is_resource_exhausted),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
