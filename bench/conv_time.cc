// Times the CPU backend's convolution kernels (conv, conv_grad_input, conv_grad_weight) one op
// at a time on ResNet-20's convolution shapes (or one given shape), on the backend's thread
// team, for bench/conv_bench.py, which sets PyTorch's times beside them. It measures; it asserts
// nothing.
//
//   conv_time [--threads N] [--repeats N] [--batch N]
//
// One line per shape: `name|fwd min|fwd median|dx min|dx median|dw min|dw median` in ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels.h"
#include "plan/op_catalogue.h"
#include "plan/spatial_shape.h"
#include "runtime/port.h"

namespace {

/// One convolution: x [batch, c, hw, hw], w [k, c, r, r], stride and padding on both axes.
struct ConvCase {
  const char* name;
  int64_t c, hw, k, r, stride, pad;
};

// ResNet-20's convolutions at 32x32 (docs/templates.md): the stem, each stage's 3x3, the
// strided 3x3 that opens stages 2 and 3, and their 1x1 strided shortcuts.
const ConvCase kResNet20[] = {
    {"stem 3->16 3x3 32x32", 3, 32, 16, 3, 1, 1},
    {"stage 1 16->16 3x3 32x32", 16, 32, 16, 3, 1, 1},
    {"stage 2 16->32 3x3 /2", 16, 32, 32, 3, 2, 1},
    {"stage 2 shortcut 16->32 1x1 /2", 16, 32, 32, 1, 2, 0},
    {"stage 2 32->32 3x3 16x16", 32, 16, 32, 3, 1, 1},
    {"stage 3 32->64 3x3 /2", 32, 16, 64, 3, 2, 1},
    {"stage 3 shortcut 32->64 1x1 /2", 32, 16, 64, 1, 2, 0},
    {"stage 3 64->64 3x3 8x8", 64, 8, 64, 3, 1, 1},
};

/// A host tensor and the TensorRef the kernels see.
struct Tensor {
  std::vector<float> data;
  remat::TensorRef ref;
  explicit Tensor(const std::vector<int64_t>& dims) : ref() {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    data.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>((i * 7919 % 1000) / 1000.0 - 0.5);
    ref.dtype = REMAT_DTYPE_F32;
    ref.rank = static_cast<uint8_t>(dims.size());
    ref.numel = n;
    ref.bytes = static_cast<uint64_t>(n) * sizeof(float);
    for (size_t i = 0; i < dims.size(); ++i) ref.dims[i] = dims[i];
  }
};

struct Timing {
  double min_ms, median_ms;
};

// Runs op |code| on |ins| -> |outs| |repeats| times after one warm-up.
Timing time_op(remat::OpCode code, const std::vector<Tensor*>& ins,
               const std::vector<Tensor*>& outs, const int64_t* iattrs, remat::PortTeam* team,
               uint32_t threads, float* scratch, int repeats) {
  remat::OpCallLists lists;
  remat::OpCall call{};
  call.inputs = lists.in;
  call.outputs = lists.out;
  call.code = static_cast<uint16_t>(code);
  call.num_inputs = static_cast<uint8_t>(ins.size());
  call.num_outputs = static_cast<uint8_t>(outs.size());
  call.iattrs = iattrs;
  call.num_iattrs = 7;
  remat::cpu::KernelArgs args{};
  for (size_t i = 0; i < ins.size(); ++i) {
    lists.in[i] = &ins[i]->ref;
    args.in[i] = ins[i]->data.data();
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    lists.out[i] = &outs[i]->ref;
    args.out[i] = outs[i]->data.data();
  }
  char text[256] = {0};
  remat::ErrorBuffer err{text, sizeof(text)};
  const remat::StepContext ctx{1, 0};
  args.call = &call;
  args.ctx = &ctx;
  args.err = &err;
  args.scratch = scratch;
  args.team = team;
  args.threads = threads;
  const remat::cpu::Kernel kernel = remat::cpu::kernel_for(call.code);
  std::vector<double> ms;
  for (int r = 0; r <= repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (kernel(args) != REMAT_OK) {
      std::fprintf(stderr, "conv_time: op %d failed: %s\n", static_cast<int>(code), text);
      std::exit(1);
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

int parse_count(const char* flag, const char* value) {
  char* end = nullptr;
  const long v = value != nullptr ? std::strtol(value, &end, 10) : 0;
  if (value == nullptr || *end != '\0' || v < 1 || v > 100000) {
    std::fprintf(stderr, "conv_time: %s takes a count from 1 to 100000, got '%s'\n", flag,
                 value ? value : "");
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(remat::port_hardware_threads()), repeats = 20, batch = 64;
  for (int i = 1; i < argc; i += 2) {
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (std::strcmp(argv[i], "--threads") == 0) {
      threads = parse_count(argv[i], value);
    } else if (std::strcmp(argv[i], "--repeats") == 0) {
      repeats = parse_count(argv[i], value);
    } else if (std::strcmp(argv[i], "--batch") == 0) {
      batch = parse_count(argv[i], value);
    } else {
      std::fprintf(stderr, "usage: conv_time [--threads N] [--repeats N] [--batch N]\n");
      return 2;
    }
  }
  remat::PortTeam* team =
      threads > 1 ? remat::port_team_create(static_cast<uint32_t>(threads)) : nullptr;
  if (threads > 1 && team == nullptr) {
    std::fprintf(stderr, "conv_time: could not start %d threads\n", threads);
    return 1;
  }
  // 64-byte aligned, as the backend's.
  std::vector<float> scratch_store(
      remat::cpu::scratch_bytes(static_cast<uint32_t>(threads)) / sizeof(float) + 16);
  float* scratch =
      scratch_store.data() +
      (16 - reinterpret_cast<uintptr_t>(scratch_store.data()) / sizeof(float) % 16) % 16;
  for (const ConvCase& cc : kResNet20) {
    const int64_t out = (cc.hw + 2 * cc.pad - cc.r) / cc.stride + 1;
    namespace ca = remat::attr::conv;
    int64_t iattrs[7] = {};
    iattrs[ca::stride_h.index] = iattrs[ca::stride_w.index] = cc.stride;
    iattrs[ca::pad_h.index] = iattrs[ca::pad_w.index] = cc.pad;
    iattrs[ca::dilation_h.index] = iattrs[ca::dilation_w.index] = iattrs[ca::groups.index] = 1;
    Tensor x({batch, cc.c, cc.hw, cc.hw}), w({cc.k, cc.c, cc.r, cc.r}), y({batch, cc.k, out, out});
    Tensor dx({batch, cc.c, cc.hw, cc.hw}), dw({cc.k, cc.c, cc.r, cc.r});
    const remat::ConvShape shape =
        remat::conv_shape(x.ref.dims, w.ref.dims, 4, remat::conv_attrs(iattrs));
    const int64_t workspace = remat::conv_grad_input_workspace_elems(shape);
    Tensor ws({workspace > 0 ? workspace : 1});
    std::vector<Tensor*> dx_outs{&dx};
    if (workspace > 0) dx_outs.push_back(&ws);
    const uint32_t t = static_cast<uint32_t>(threads);
    const Timing fwd =
        time_op(remat::OpCode::kConv, {&x, &w}, {&y}, iattrs, team, t, scratch, repeats);
    const Timing gi = time_op(remat::OpCode::kConvGradInput, {&y, &w}, dx_outs, iattrs, team, t,
                              scratch, repeats);
    const Timing gw =
        time_op(remat::OpCode::kConvGradWeight, {&y, &x}, {&dw}, iattrs, team, t, scratch, repeats);
    std::printf("%s|%.3f|%.3f|%.3f|%.3f|%.3f|%.3f\n", cc.name, fwd.min_ms, fwd.median_ms, gi.min_ms,
                gi.median_ms, gw.min_ms, gw.median_ms);
  }
  if (team != nullptr) remat::port_team_destroy(team);
  return 0;
}
