// Every op as a small case on the CPU kernels and another backend, and shared test helpers.
#include "tests/backends/op_cases.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/cmocka_cpp.h"

namespace remat_test {

using remat::OpCode;
using remat::Region;
using remat::TensorRef;

namespace {

constexpr uint64_t kSeed = 0x5eed1234abcdull;

bool is_int_input(const OpCase& c, size_t i) {
  const bool ids_first = c.code == OpCode::kEmbedding;
  const bool labels_second = c.code == OpCode::kSoftmaxCrossEntropy ||
                             c.code == OpCode::kSoftmaxCrossEntropyGrad || c.code == OpCode::kEmbeddingGrad;
  return (ids_first && i == 0) || (labels_second && i == 1);
}

}  // namespace

uint64_t g_rng = 42;
float uniform() {  // splitmix64 -> [-1, 1)
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

TensorRef Layout::add(std::vector<int64_t> dims, remat_dtype dtype, Region region) {
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

const std::vector<OpCase>& every_op_case() {
  const double kEw = 1e-5, kMm = 1e-4;
  const std::vector<int32_t> ids = {0, 3, 12, 3, 7, 3, 0, 11, 5, 3};
  const std::vector<int32_t> labels = {1, 0, 9, 4, 4, 7};
  static const std::vector<OpCase> cases = {
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
      // Finite data: both backends pass it (test_conformance.cc feeds it NaN and infinity).
      {"finite_check", OpCode::kFiniteCheck, {{1000}}, {}, {}, {}, 0.0},
  };
  return cases;
}

namespace {

// |c|'s tensors laid out in a fresh arena and its call over them; in-place optimizers write
// their inputs. Not copyable: the call points into the vectors.
struct CaseTensors {
  std::vector<TensorRef> ins, outs;
  std::vector<const TensorRef*> in_ptrs, out_ptrs;
  remat::OpCall call;

  explicit CaseTensors(const OpCase& c) {
    Layout layout;
    for (size_t i = 0; i < c.in_dims.size(); ++i) {
      ins.push_back(layout.add(c.in_dims[i], is_int_input(c, i) ? REMAT_DTYPE_I32 : REMAT_DTYPE_F32));
    }
    for (const auto& d : c.out_dims) outs.push_back(layout.add(d));
    for (const TensorRef& t : ins) in_ptrs.push_back(&t);
    for (const TensorRef& t : outs) out_ptrs.push_back(&t);
    if (c.code == OpCode::kSgdUpdate) {  // In place: param[, velocity].
      out_ptrs = {&ins[0]};
      if (ins.size() > 2) out_ptrs.push_back(&ins[2]);
    } else if (c.code == OpCode::kAdamUpdate) {  // In place: param, m, v.
      out_ptrs = {&ins[0], &ins[2], &ins[3]};
    }
    call = make_call(c.code, 7, in_ptrs, out_ptrs, c.iattrs, c.fattrs);
  }
  CaseTensors(const CaseTensors&) = delete;
  CaseTensors& operator=(const CaseTensors&) = delete;
};

}  // namespace

bool run_unclaimed_case(const OpCase& c, remat::Backend* other, const char* other_name) {
  const CaseTensors t(c);
  const remat::StepContext ctx{kSeed, 3};
  Errors e;
  const remat_status status = other->run_op(t.call, ctx, &e.buf);
  if (status != REMAT_ERROR_UNIMPLEMENTED) {
    print_error("%s on %s: status %d, expected UNIMPLEMENTED (%d) for an op it does not claim\n",
                c.name, other_name, status, REMAT_ERROR_UNIMPLEMENTED);
    return false;
  }
  if (strstr(e.text, remat::op_name(static_cast<uint16_t>(c.code))) == nullptr) {
    print_error("%s on %s: message '%s' does not name the op\n", c.name, other_name, e.text);
    return false;
  }
  printf("  %-28s unimplemented: %s\n", c.name, e.text);
  return true;
}

void run_case(const OpCase& c, remat::Backend* cpu, remat::Backend* other, const char* other_name) {
  const CaseTensors t(c);
  const std::vector<TensorRef>& ins = t.ins;
  const std::vector<TensorRef>& outs = t.outs;
  const std::vector<const TensorRef*>& out_ptrs = t.out_ptrs;
  const remat::OpCall& call = t.call;
  size_t next_int = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (is_int_input(c, i)) {
      const std::vector<int32_t>& data = c.ints[next_int++];
      assert_int_equal(static_cast<int64_t>(data.size()), ins[i].numel);
      upload(cpu, ins[i], data.data());
      upload(other, ins[i], data.data());
      continue;
    }
    std::vector<float> data(static_cast<size_t>(ins[i].numel));
    for (float& v : data) v = uniform();
    // Second moments and normalisation statistics must be positive.
    if ((c.code == OpCode::kAdamUpdate && i == 3) || (c.code == OpCode::kLayerNormGrad && i == 3)) {
      for (float& v : data) v = fabsf(v) + 0.1f;
    }
    upload(cpu, ins[i], data.data());
    upload(other, ins[i], data.data());
  }
  // Outputs start as NaN on both sides: a kernel that skips elements or adds into its output
  // instead of writing it shows up as a difference.
  for (const TensorRef& t : outs) {
    const std::vector<float> poison(static_cast<size_t>(t.numel), NAN);
    upload(cpu, t, poison.data());
    upload(other, t, poison.data());
  }
  const remat::StepContext ctx{kSeed, 3};
  Errors e;
  if (cpu->run_op(call, ctx, &e.buf) != REMAT_OK) fail_msg("%s on cpu: %s", c.name, e.text);
  if (other->run_op(call, ctx, &e.buf) != REMAT_OK) fail_msg("%s on %s: %s", c.name, other_name, e.text);
  if (other->sync(&e.buf) != REMAT_OK) fail_msg("%s sync: %s", c.name, e.text);
  for (size_t o = 0; o < out_ptrs.size(); ++o) {
    const std::vector<float> want = download(cpu, *out_ptrs[o]);
    const std::vector<float> got = download(other, *out_ptrs[o]);
    for (size_t i = 0; i < want.size(); ++i) {
      // Outputs are float except the (float) loss: none of these inputs makes a NaN.
      if (isnan(want[i])) fail_msg("%s output %zu [%zu]: the cpu kernel left it unwritten", c.name, o, i);
    }
    if (c.tol == 0.0) {
      if (memcmp(want.data(), got.data(), want.size() * 4) != 0) fail_msg("%s output %zu: bits differ", c.name, o);
      continue;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const double bound = c.tol + c.tol * fabs(want[i]);
      if (!(fabs(static_cast<double>(got[i]) - want[i]) <= bound)) {
        fail_msg("%s output %zu [%zu]: %s %.9g, cpu %.9g", c.name, o, i, other_name, got[i], want[i]);
      }
    }
  }
  printf("  %-28s ok\n", c.name);
}

}  // namespace remat_test
