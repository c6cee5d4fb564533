// Every op as a small case on the CPU kernels and another backend, and shared test helpers.
#include "tests/backends/op_cases.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <deque>

#include "backends/shared/widening_slices.h"
#include "plan/half_float.h"
#include "tests/cmocka_cpp.h"

namespace remat_test {

using remat::OpCode;
using remat::Region;
using remat::TensorRef;

namespace {

constexpr uint64_t kSeed = 0x5eed1234abcdull;

// The dtype of input |i| of |c|, as the catalogue gives its op's.
remat_dtype input_dtype(const OpCase& c, size_t i) {
  switch (remat::op_info(static_cast<uint16_t>(c.code))->dtypes) {
    case remat::OpDtypes::kI32Input0: return i == 0 ? REMAT_DTYPE_I32 : REMAT_DTYPE_F32;
    case remat::OpDtypes::kI32Input1: return i == 1 ? REMAT_DTYPE_I32 : REMAT_DTYPE_F32;
    case remat::OpDtypes::kI64: return REMAT_DTYPE_I64;
    default: return REMAT_DTYPE_F32;
  }
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
  const uint64_t item = dtype == REMAT_DTYPE_I64 ? 8 : remat::is_half_float(dtype) ? 2 : 4;
  t.bytes = static_cast<uint64_t>(t.numel) * item;
  uint64_t& n = next[static_cast<int>(region)];
  t.offset = n;
  n = (n + t.bytes + 255) / 256 * 256;
  return t;
}

remat::OpCallLists& call_lists() {
  static std::deque<remat::OpCallLists> kept;  // A deque keeps its elements where they are.
  return kept.emplace_back();
}

remat::OpCall make_call(OpCode code, uint32_t index, std::vector<const TensorRef*> in,
                        std::vector<const TensorRef*> out, const std::vector<int64_t>& iattrs,
                        const std::vector<float>& fattrs) {
  remat::OpCall c{};
  c.code = static_cast<uint16_t>(code);
  c.index = index;
  c.num_inputs = static_cast<uint8_t>(in.size());
  c.num_outputs = static_cast<uint8_t>(out.size());
  remat::OpCallLists& lists = call_lists();
  for (size_t i = 0; i < in.size(); ++i) lists.in[i] = in[i];
  for (size_t i = 0; i < out.size(); ++i) lists.out[i] = out[i];
  c.inputs = lists.in;
  c.outputs = lists.out;
  c.iattrs = iattrs.empty() ? nullptr : iattrs.data();
  c.num_iattrs = static_cast<uint32_t>(iattrs.size());
  c.fattrs = fattrs.empty() ? nullptr : fattrs.data();
  c.num_fattrs = static_cast<uint32_t>(fattrs.size());
  return c;
}

void upload(remat::Backend* b, const TensorRef& t, const void* data) {
  Errors e;
  if (b->upload(t.region, t.offset, data, t.bytes, &e.buf) != REMAT_OK)
    fail_msg("upload: %s", e.text);
}

std::vector<float> download(remat::Backend* b, const TensorRef& t) {
  Errors e;
  std::vector<float> v(static_cast<size_t>(t.bytes / 4));
  if (b->download(t.region, t.offset, v.data(), t.bytes, &e.buf) != REMAT_OK)
    fail_msg("download: %s", e.text);
  return v;
}

const std::vector<OpCase>& every_op_case() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> all = dense_cases();
    for (OpCase& c : convolutional_cases()) all.push_back(std::move(c));
    for (OpCase& c : imported_model_cases()) all.push_back(std::move(c));
    for (OpCase& c : tile_size_cases()) all.push_back(std::move(c));
    return all;
  }();
  return cases;
}

namespace {

// |c|'s tensors laid out in a fresh arena and its call over them; in-place optimizers write
// their inputs. Not copyable: the call points into the vectors.
struct CaseTensors {
  std::vector<TensorRef> ins, outs;
  std::vector<const TensorRef*> in_ptrs, out_ptrs;
  remat::OpCall call;

  // |floats|: the dtype of each float tensor, inputs then outputs (missing ones: f32).
  explicit CaseTensors(const OpCase& c, const std::vector<remat_dtype>& floats = {}) {
    Layout layout;
    size_t k = 0;
    const auto float_dtype = [&]() { return k < floats.size() ? floats[k++] : REMAT_DTYPE_F32; };
    for (size_t i = 0; i < c.in_dims.size(); ++i) {
      const remat_dtype dtype = input_dtype(c, i);
      ins.push_back(layout.add(c.in_dims[i], dtype == REMAT_DTYPE_F32 ? float_dtype() : dtype));
    }
    for (const auto& d : c.out_dims) outs.push_back(layout.add(d, float_dtype()));
    for (const TensorRef& t : ins) in_ptrs.push_back(&t);
    for (const TensorRef& t : outs) out_ptrs.push_back(&t);
    const uint16_t code = static_cast<uint16_t>(c.code);
    if (remat::is_in_place_update(code)) {  // Outputs are inputs: parameters, states, counters.
      out_ptrs.clear();
      for (uint32_t o = 0;; ++o) {
        const int i = remat::in_place_input(code, o);
        if (i < 0 || static_cast<size_t>(i) >= ins.size()) break;
        out_ptrs.push_back(&ins[static_cast<size_t>(i)]);
      }
    }
    call = make_call(c.code, 7, in_ptrs, out_ptrs, c.iattrs, c.fattrs);
  }
  CaseTensors(const CaseTensors&) = delete;
  CaseTensors& operator=(const CaseTensors&) = delete;
};

}  // namespace

bool call_of_case_is(const OpCase& c, bool (*predicate)(const remat::OpCall&),
                     const std::vector<remat_dtype>& floats) {
  const CaseTensors t(c, floats);
  return predicate(t.call);
}

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

namespace {

// The bytes of |c|'s input |i| (|t|): its given i32 data, i64 counters from 41, or random
// floats in the range the op needs.
std::vector<uint8_t> input_bytes(const OpCase& c, size_t i, const TensorRef& t) {
  const remat_dtype dtype = input_dtype(c, i);
  const auto bytes_of = [](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    return std::vector<uint8_t>(b, b + n);
  };
  if (dtype == REMAT_DTYPE_I32) {
    size_t nth = 0;  // the ints are given by input index among the i32 inputs
    for (size_t k = 0; k < i; ++k) nth += input_dtype(c, k) == REMAT_DTYPE_I32;
    const std::vector<int32_t>& data = c.ints[nth];
    assert_int_equal(static_cast<int64_t>(data.size()), t.numel);
    return bytes_of(data.data(), data.size() * 4);
  }
  if (dtype == REMAT_DTYPE_I64) {  // Counters: 41, 42, ...
    std::vector<int64_t> data(static_cast<size_t>(t.numel));
    for (size_t k = 0; k < data.size(); ++k) data[k] = 41 + static_cast<int64_t>(k);
    return bytes_of(data.data(), data.size() * 8);
  }
  std::vector<float> data(static_cast<size_t>(t.numel));
  for (float& v : data) v = uniform();
  // Second moments, normalisation statistics, variances and the bases of square roots and
  // fractional powers must be positive.
  if ((c.code == OpCode::kAdamUpdate && i == 3) || (c.code == OpCode::kLayerNormGrad && i == 3) ||
      (c.code == OpCode::kBatchNormGrad && i == 3) ||
      (c.code == OpCode::kBatchNormInference && i == 4) ||
      ((c.code == OpCode::kSquareRoot || c.code == OpCode::kPowScalar) && i == 0) ||
      ((c.code == OpCode::kSquareRootGrad || c.code == OpCode::kPowScalarGrad) && i == 1)) {
    for (float& v : data) v = fabsf(v) + 0.1f;
  }
  // Attention's masks hold -inf (keys masked out), never a whole row of them.
  if ((c.code == OpCode::kAttention && i == 3) || (c.code == OpCode::kAttentionGrad && i == 6)) {
    const size_t sk = static_cast<size_t>(c.in_dims[i].back());
    for (size_t x = 0; x < data.size(); ++x) {
      if (x % 7 == 3 && x % sk != 0) data[x] = -INFINITY;
    }
  }
  return bytes_of(data.data(), data.size() * 4);
}

}  // namespace

void run_case(const OpCase& c, remat::Backend* cpu, remat::Backend* other, const char* other_name) {
  const CaseTensors t(c);
  const std::vector<TensorRef>& ins = t.ins;
  const std::vector<TensorRef>& outs = t.outs;
  const std::vector<const TensorRef*>& out_ptrs = t.out_ptrs;
  const remat::OpCall& call = t.call;
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::vector<uint8_t> data = input_bytes(c, i, ins[i]);
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
  // As a session does: the backend obtains the workspace the op needs (attention's scores).
  if (other->prepare(&call, 1, &e.buf) != REMAT_OK)
    fail_msg("%s prepare on %s: %s", c.name, other_name, e.text);
  if (cpu->run_op(call, ctx, &e.buf) != REMAT_OK) fail_msg("%s on cpu: %s", c.name, e.text);
  if (other->run_op(call, ctx, &e.buf) != REMAT_OK)
    fail_msg("%s on %s: %s", c.name, other_name, e.text);
  if (other->sync(&e.buf) != REMAT_OK) fail_msg("%s sync: %s", c.name, e.text);
  const char* const* output_names = remat::op_info(call.code)->output_names;
  for (size_t o = 0; o < out_ptrs.size(); ++o) {
    // A workspace is the CPU kernels' scratch (the GPU kernels need none): its bytes mean nothing.
    if (strcmp(output_names[o], "workspace") == 0) continue;
    const std::vector<float> want = download(cpu, *out_ptrs[o]);
    const std::vector<float> got = download(other, *out_ptrs[o]);
    for (size_t i = 0; out_ptrs[o]->dtype == REMAT_DTYPE_F32 && i < want.size(); ++i) {
      // None of these inputs makes a NaN in a float output.
      if (isnan(want[i]))
        fail_msg("%s output %zu [%zu]: the cpu kernel left it unwritten", c.name, o, i);
    }
    if (c.tol == 0.0) {
      if (memcmp(want.data(), got.data(), want.size() * 4) != 0)
        fail_msg("%s output %zu: bits differ", c.name, o);
      continue;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const double bound = c.tol + c.tol * fabs(want[i]);
      if (!(fabs(static_cast<double>(got[i]) - want[i]) <= bound)) {
        fail_msg("%s output %zu [%zu]: %s %.9g, cpu %.9g", c.name, o, i, other_name, got[i],
                 want[i]);
      }
    }
  }
  printf("  %-28s ok\n", c.name);
}

namespace {

std::vector<uint8_t> download_bytes(remat::Backend* b, const TensorRef& t) {
  Errors e;
  std::vector<uint8_t> v(static_cast<size_t>(t.bytes));
  if (b->download(t.region, t.offset, v.data(), t.bytes, &e.buf) != REMAT_OK)
    fail_msg("download: %s", e.text);
  return v;
}

uint16_t narrow(remat_dtype dtype, float x) {
  return dtype == REMAT_DTYPE_F16 ? remat::f32_to_f16(x) : remat::f32_to_bf16(x);
}

float widen(remat_dtype dtype, uint16_t h) {
  return dtype == REMAT_DTYPE_F16 ? remat::f16_to_f32(h) : remat::bf16_to_f32(h);
}

}  // namespace

std::vector<OpCase> batch_norm_row_cases() {
  std::vector<OpCase> cases;
  for (const OpCase& c : every_op_case()) {
    if (c.code != OpCode::kBatchNorm && c.code != OpCode::kBatchNormGrad &&
        c.code != OpCode::kBatchNormInference)
      continue;
    if (c.in_dims[0].size() != 4 || c.in_dims[0][1] != 3) continue;  // the [4, 3, 5, 6] ones
    for (const int64_t inner : {int64_t{1023}, int64_t{1024}, int64_t{1025}, int64_t{3000}}) {
      OpCase sized = c;
      for (auto* list : {&sized.in_dims, &sized.out_dims}) {
        for (std::vector<int64_t>& dims : *list) {
          if (dims.size() == 4) dims = {3, 3, 1, inner};
        }
      }
      cases.push_back(sized);
    }
  }
  return cases;
}

std::vector<remat_dtype> widening_pattern(const OpCase& c, int pattern) {
  std::vector<remat_dtype> floats(float_tensor_count(c));
  for (size_t k = 0; k < floats.size(); ++k) {
    const bool half = pattern < 2 || (k + static_cast<size_t>(pattern)) % 2 == 0;
    floats[k] = !half                          ? REMAT_DTYPE_F32
                : pattern == 0 || pattern == 2 ? REMAT_DTYPE_BF16
                                               : REMAT_DTYPE_F16;
  }
  return floats;
}

size_t float_tensor_count(const OpCase& c) {
  size_t n = c.out_dims.size();
  for (size_t i = 0; i < c.in_dims.size(); ++i) n += input_dtype(c, i) == REMAT_DTYPE_F32;
  return n;
}

bool run_widened_case(const OpCase& c, const std::vector<remat_dtype>& floats,
                      remat::Backend* reference, remat::Backend* backend, const char* name,
                      double tol, bool (*inexact)(const remat::OpCall&), Prepared prepared) {
  const CaseTensors f32(c), mixed(c, floats);
  const bool loosened = inexact != nullptr && inexact(mixed.call);
  if (loosened) tol = c.tol;
  Errors e;
  // Each input once: f32 values, rounded to 16 bits where the mixed call has a 16-bit tensor;
  // the reference gets the rounded values as f32. A 16-bit product's float32 operand goes to
  // the backend as it is and to the reference rounded to the product's type, as the backend
  // rounds it (backends/shared/widening_slices.h: rounds_operand).
  const remat_dtype product = static_cast<remat_dtype>(remat::product_operand_dtype(mixed.call));
  for (size_t i = 0; i < f32.ins.size(); ++i) {
    std::vector<uint8_t> data = input_bytes(c, i, f32.ins[i]);
    const remat_dtype dtype = static_cast<remat_dtype>(mixed.ins[i].dtype);
    if (remat::rounds_operand(mixed.call, static_cast<int>(i))) {
      // Float32 as it is, or a 16-bit operand of the other type as its halves, to the backend;
      // to the reference, its values (widened) rounded to the product's type.
      std::vector<uint16_t> half(static_cast<size_t>(f32.ins[i].numel));
      for (size_t k = 0; k < half.size(); ++k) {
        float x;
        memcpy(&x, data.data() + 4 * k, 4);
        if (remat::is_half_float(dtype)) {
          half[k] = narrow(dtype, x);
          x = widen(dtype, half[k]);
        }
        memcpy(data.data() + 4 * k, &x, 4);
      }
      upload(backend, mixed.ins[i],
             remat::is_half_float(dtype) ? static_cast<const void*>(half.data()) : data.data());
      for (size_t k = 0; k < half.size(); ++k) {
        float x;
        memcpy(&x, data.data() + 4 * k, 4);
        x = widen(product, narrow(product, x));
        memcpy(data.data() + 4 * k, &x, 4);
      }
    } else if (remat::is_half_float(dtype)) {
      std::vector<uint16_t> half(static_cast<size_t>(f32.ins[i].numel));
      for (size_t k = 0; k < half.size(); ++k) {
        float x;
        memcpy(&x, data.data() + 4 * k, 4);
        half[k] = narrow(dtype, x);
        x = widen(dtype, half[k]);
        memcpy(data.data() + 4 * k, &x, 4);
      }
      upload(backend, mixed.ins[i], half.data());
    } else {
      upload(backend, mixed.ins[i], data.data());
    }
    upload(reference, f32.ins[i], data.data());
  }
  const remat::OpCall& sized_by = prepared == Prepared::kTheCall ? mixed.call : f32.call;
  if (backend->prepare(&sized_by, 1, &e.buf) != REMAT_OK)
    fail_msg("%s prepare on %s: %s", c.name, name, e.text);
  if (reference->prepare(&f32.call, 1, &e.buf) != REMAT_OK)
    fail_msg("%s prepare of the reference: %s", c.name, e.text);
  remat::StepContext ctx{kSeed, 3};
  ctx.rank = c.rank;
  if (reference->run_op(f32.call, ctx, &e.buf) != REMAT_OK)
    fail_msg("%s in f32: %s", c.name, e.text);
  if (backend->run_op(mixed.call, ctx, &e.buf) != REMAT_OK)
    fail_msg("%s widened on %s: %s", c.name, name, e.text);
  if (backend->sync(&e.buf) != REMAT_OK) fail_msg("%s sync on %s: %s", c.name, name, e.text);
  const char* const* output_names = remat::op_info(f32.call.code)->output_names;
  for (size_t o = 0; o < f32.out_ptrs.size(); ++o) {
    if (strcmp(output_names[o], "workspace") == 0) continue;
    const TensorRef& want_ref = *f32.out_ptrs[o];
    const TensorRef& got_ref = *mixed.out_ptrs[o];
    const std::vector<uint8_t> want = download_bytes(reference, want_ref);
    const std::vector<uint8_t> got = download_bytes(backend, got_ref);
    const remat_dtype dtype = static_cast<remat_dtype>(got_ref.dtype);
    const bool half = remat::is_half_float(dtype);
    for (int64_t k = 0; k < want_ref.numel; ++k) {
      float w, g;
      memcpy(&w, want.data() + 4 * k, 4);
      if (half) {
        uint16_t h;
        memcpy(&h, got.data() + 2 * k, 2);
        if (h == narrow(dtype, w)) continue;
        g = widen(dtype, h);
        // The roundings of the interval the f32 kernels may give (narrowing is monotonic).
        const double bound = tol + tol * fabs(static_cast<double>(w));
        const float lo = widen(dtype, narrow(dtype, static_cast<float>(w - bound)));
        const float hi = widen(dtype, narrow(dtype, static_cast<float>(w + bound)));
        if (tol > 0.0 && lo <= g && g <= hi) continue;
        fail_msg("%s output %zu (%s) [%lld] in %s on %s: %.9g, outside [%.9g, %.9g] (f32 %.9g)",
                 c.name, o, output_names[o], static_cast<long long>(k),
                 dtype == REMAT_DTYPE_F16 ? "f16" : "bf16", name, static_cast<double>(g),
                 static_cast<double>(lo), static_cast<double>(hi), static_cast<double>(w));
      }
      memcpy(&g, got.data() + 4 * k, 4);
      if (memcmp(&w, &g, 4) == 0) continue;
      const double bound = tol + tol * fabs(static_cast<double>(w));
      if (tol > 0.0 && fabs(static_cast<double>(g) - w) <= bound) continue;
      fail_msg("%s output %zu (%s) [%lld] on %s: %.9g, f32 kernel %.9g", c.name, o, output_names[o],
               static_cast<long long>(k), name, static_cast<double>(g), static_cast<double>(w));
    }
  }
  return loosened;
}

}  // namespace remat_test
