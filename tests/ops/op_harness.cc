// Shared helpers of the op tests (see op_harness.h).
#include "op_harness.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/cmocka_cpp.h"

#include <map>

#include "backends/cpu/kernels.h"
#include "runtime/port.h"

namespace ops_test {

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Tensor f32(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  Tensor t;
  t.dims = dims;
  t.f = values.empty() ? std::vector<float>(static_cast<size_t>(t.numel()), 0.0f) : values;
  assert_int_equal(static_cast<int64_t>(t.f.size()), t.numel());
  return t;
}

Tensor i32(const std::vector<int64_t>& dims, const std::vector<int32_t>& values) {
  Tensor t;
  t.dims = dims;
  t.dtype = REMAT_DTYPE_I32;
  t.i = values;
  assert_int_equal(static_cast<int64_t>(t.i.size()), t.numel());
  return t;
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
}

double Rng::uniform_away_from_zero(double lo, double hi, double gap) {
  for (;;) {
    const double v = uniform(lo, hi);
    if (fabs(v) >= gap) return v;
  }
}

Tensor random_f32(const std::vector<int64_t>& dims, Rng& rng, double lo, double hi) {
  Tensor t = f32(dims);
  for (float& v : t.f) v = static_cast<float>(rng.uniform(lo, hi));
  return t;
}

namespace {

remat::TensorRef make_ref(const Tensor& t) {
  remat::TensorRef r{};
  r.region = remat::Region::kArena;
  r.dtype = static_cast<uint8_t>(t.dtype);
  r.rank = static_cast<uint8_t>(t.dims.size());
  r.numel = t.numel();
  r.bytes = static_cast<uint64_t>(r.numel) * 4;
  for (size_t k = 0; k < t.dims.size(); ++k) r.dims[k] = t.dims[k];
  return r;
}

// One run of |kernel| on |threads| threads of |team| (nullptr: the caller's only).
RunResult run_once(remat::cpu::Kernel kernel, remat::OpCode code, const std::vector<Tensor*>& ins,
                   const std::vector<Tensor*>& outs, const Attrs& attrs, remat::PortTeam* team,
                   uint32_t threads) {
  remat::TensorRef in_refs[remat::kMaxOpInputs], out_refs[remat::kMaxOpOutputs];
  remat::OpCallLists lists;
  remat::OpCall call{};
  call.inputs = lists.in;
  call.outputs = lists.out;
  call.code = static_cast<uint16_t>(code);
  call.index = 7;  // Any position: messages must quote it.
  call.num_inputs = static_cast<uint8_t>(ins.size());
  call.num_outputs = static_cast<uint8_t>(outs.size());
  call.iattrs = attrs.i.empty() ? nullptr : attrs.i.data();
  call.num_iattrs = static_cast<uint32_t>(attrs.i.size());
  call.fattrs = attrs.f.empty() ? nullptr : attrs.f.data();
  call.num_fattrs = static_cast<uint32_t>(attrs.f.size());
  remat::cpu::KernelArgs args{};
  for (size_t k = 0; k < ins.size(); ++k) {
    in_refs[k] = make_ref(*ins[k]);
    lists.in[k] = &in_refs[k];
    args.in[k] = ins[k]->data();
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    out_refs[k] = make_ref(*outs[k]);
    lists.out[k] = &out_refs[k];
    args.out[k] = outs[k]->data();
  }
  char text[256] = {0};
  remat::ErrorBuffer err{text, sizeof(text)};
  args.call = &call;
  args.ctx = &attrs.ctx;
  args.err = &err;
  args.team = team;
  args.threads = threads;
  // As the backend does: scratch and strips for the kernels, 64-byte aligned.
  std::vector<float> scratch(remat::cpu::scratch_bytes(threads) / sizeof(float) + 16);
  args.scratch = scratch.data() +
                 (16 - (reinterpret_cast<uintptr_t>(scratch.data()) / sizeof(float)) % 16) % 16;
  std::vector<float> strips(remat::cpu::strip_bytes(threads) / sizeof(float) + 16);
  args.strips =
      strips.data() + (16 - (reinterpret_cast<uintptr_t>(strips.data()) / sizeof(float)) % 16) % 16;
  const remat_status status = kernel(args);
  return RunResult{status, std::string(text)};
}

// Whether |a| and |b| hold the same bytes (NaN payloads included, which == would not compare).
template <typename T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The team every threaded run shares: three threads, so that parts are uneven.
constexpr uint32_t kTeamThreads = 3;
remat::PortTeam* shared_team() {
  static remat::PortTeam* team = remat::port_team_create(kTeamThreads);
  return team;
}

}  // namespace

RunResult run_op(remat::OpCode code, const std::vector<Tensor*>& ins,
                 const std::vector<Tensor*>& outs, const Attrs& attrs) {
  const remat::cpu::Kernel kernel = remat::cpu::kernel_for(static_cast<uint16_t>(code));
  assert_non_null(kernel);
  assert_true(ins.size() <= static_cast<size_t>(remat::kMaxOpInputs));
  assert_true(outs.size() <= static_cast<size_t>(remat::kMaxOpOutputs));
  // Every tensor the op touches (in-place ops list one twice), as the caller made them.
  std::map<Tensor*, Tensor> before;
  for (Tensor* t : ins) before.emplace(t, *t);
  for (Tensor* t : outs) before.emplace(t, *t);
  // First on a team of threads, then, from the same start, on one: the kernels promise the
  // same bits and the same status for any thread count (backends/cpu/parallel.h).
  remat::PortTeam* team = shared_team();
  assert_non_null(team);
  const RunResult threaded = run_once(kernel, code, ins, outs, attrs, team, kTeamThreads);
  std::map<Tensor*, Tensor> after_threaded;
  for (auto& entry : before) {
    after_threaded.emplace(entry.first, *entry.first);
    *entry.first = entry.second;
  }
  const RunResult result = run_once(kernel, code, ins, outs, attrs, nullptr, 1);
  assert_int_equal(threaded.status, result.status);
  assert_string_equal(threaded.message.c_str(), result.message.c_str());
  for (auto& entry : after_threaded) {
    const Tensor& one = *entry.first;
    const Tensor& many = entry.second;
    if (!same_bytes(one.f, many.f) || !same_bytes(one.i, many.i)) {
      fail_msg("op %d: %u threads wrote other bits than 1", static_cast<int>(code), kTeamThreads);
    }
  }
  return result;
}

RunResult run_op_on_threads(remat::OpCode code, const std::vector<Tensor*>& ins,
                            const std::vector<Tensor*>& outs, const Attrs& attrs,
                            uint32_t threads) {
  const remat::cpu::Kernel kernel = remat::cpu::kernel_for(static_cast<uint16_t>(code));
  assert_non_null(kernel);
  assert_true(threads >= 1 && threads <= kTeamThreads);
  remat::PortTeam* team = threads > 1 ? shared_team() : nullptr;
  if (threads > 1) assert_non_null(team);
  return run_once(kernel, code, ins, outs, attrs, team, threads);
}

std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

std::vector<float> to_float(const std::vector<double>& v) {
  std::vector<float> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) out[k] = static_cast<float>(v[k]);
  return out;
}

std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f,
                                 std::vector<double> x, double h) {
  std::vector<double> g(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    const double saved = x[k];
    x[k] = saved + h;
    const double up = f(x);
    x[k] = saved - h;
    const double down = f(x);
    x[k] = saved;
    g[k] = (up - down) / (2.0 * h);
  }
  return g;
}

double weighted_sum(const std::vector<double>& w, const std::vector<double>& y) {
  assert_int_equal(w.size(), y.size());
  double s = 0.0;
  for (size_t k = 0; k < w.size(); ++k) s += w[k] * y[k];
  return s;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double abs_tol,
                  double rel_tol, const char* what) {
  assert_int_equal(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const double err = fabs(static_cast<double>(got[k]) - want[k]);
    if (!(err <= abs_tol + rel_tol * fabs(want[k]))) {
      fail_msg("%s: element %zu is %.9g, want %.9g (|diff| %.3g > %.3g + %.3g * |want|)", what, k,
               static_cast<double>(got[k]), want[k], err, abs_tol, rel_tol);
    }
  }
}

std::vector<float> transpose_last2(const std::vector<float>& v, int64_t batch, int64_t rows,
                                   int64_t cols) {
  std::vector<float> out(v.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        out[(b * cols + c) * rows + r] = v[(b * rows + r) * cols + c];
      }
    }
  }
  return out;
}

std::vector<double> fd_of(const std::function<std::vector<double>(const std::vector<double>&)>& y,
                          const std::vector<double>& x, const std::vector<double>& w) {
  return numeric_grad([&](const std::vector<double>& xv) { return weighted_sum(w, y(xv)); }, x);
}

void expect_grad(const std::vector<float>& got, const std::vector<double>& fd, const char* what) {
  expect_close(got, fd, 1e-3, 1e-3, what);
}

}  // namespace ops_test
