// The conv kernels' Winograd paths (conv/winograd_paths.h): the threads transform a share of
// the filters into the scratch they share, then each computes a contiguous run of tiles; the
// weight gradient's tiles are cut into a fixed number of parts, summed apart into the shared
// scratch, then added in order per output channel.
#include "backends/cpu/conv/winograd_paths.h"

#include <string.h>

#include "backends/cpu/conv/winograd.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/parallel.h"

namespace remat {
namespace cpu {
namespace {

// Channels in and out below which a 3x3 convolution stays direct: with fewer, the transforms
// cost more than the products they save.
constexpr int64_t kWinogradMinChannels = 32;

// |c| as Winograd's convolution, laid out (winograd_layout); *thread_floats: a thread's scratch.
WinogradConv winograd_shape(const ConvShape& c, int64_t* thread_floats) {
  WinogradConv wc{c.x.n, c.x.c, c.x.h, c.x.w, c.k, c.p, c.q, c.a.pad_h, c.a.pad_w, 0, 0, 0, 0};
  *thread_floats = winograd_layout(&wc);
  return wc;
}

// Whether |c| runs as Winograd's F(2x2, 3x3): winograd_conv's rule.
bool uses_winograd(const ConvShape& c) {
  if (kWinogradFilterFloats == 0 || c.r != 3 || c.s != 3 || c.a.stride_h != 1 ||
      c.a.stride_w != 1 || c.a.dilation_h != 1 || c.a.dilation_w != 1 || c.a.groups != 1 ||
      c.cg < kWinogradMinChannels || c.kg < kWinogradMinChannels) {
    return false;
  }
  int64_t thread_floats = 0;
  const WinogradConv wc = winograd_shape(c, &thread_floats);
  return wc.c * wc.kpad * kWinogradPositions <= kWinogradFilterFloats &&
         thread_floats <= kGemmPackFloats;
}

}  // namespace

bool winograd_conv(const KernelArgs& args, const ConvShape& c, const float* x, const float* w,
                   bool flipped, float* y) {
  if (!uses_winograd(c)) return false;
  int64_t thread_floats = 0;
  const WinogradConv wc = winograd_shape(c, &thread_floats);
  float* u = shared_scratch(args);
  // The filters past K are multiplied but not used: zeros keep their products finite.
  for (int64_t i = 0; i < wc.c; ++i) {
    memset(u + (i * wc.kpad + wc.k) * kWinogradPositions, 0,
           static_cast<size_t>((wc.kpad - wc.k) * kWinogradPositions) * sizeof(float));
  }
  parallel_for(args, c.k, 1, [&](int64_t k0, int64_t k1, uint32_t) {
    winograd_filters(w, c.k, c.x.c, wc.kpad, flipped, k0, k1, u);
  });
  parallel_for(args, winograd_tile_count(wc), kWinogradTiles,
               [&](int64_t t0, int64_t t1, uint32_t worker) {
                 winograd_tiles(wc, x, u, t0, t1, gemm_pack(args, worker), y);
               });
  return true;
}

bool winograd_conv_grad_weight(const KernelArgs& args, const ConvShape& c, const float* dy,
                               const float* x, float* dw) {
  if (!uses_winograd(c)) return false;
  int64_t thread_floats = 0;
  const WinogradConv wc = winograd_shape(c, &thread_floats);
  const int64_t parts = winograd_weight_parts(wc), tiles = winograd_tile_count(wc);
  if (parts < 2) return false;
  const int64_t part_floats = wc.kpad * wc.c * kWinogradPositions;
  float* du = shared_scratch(args);
  parallel_for(args, parts, 1, [&](int64_t p0, int64_t p1, uint32_t worker) {
    for (int64_t p = p0; p < p1; ++p) {
      winograd_weight_sums(wc, x, dy, p * tiles / parts, (p + 1) * tiles / parts,
                           gemm_pack(args, worker), du + p * part_floats);
    }
  });
  parallel_for(args, c.k, 1, [&](int64_t k0, int64_t k1, uint32_t) {
    winograd_filter_gradient(du, parts, part_floats, wc.c, k0, k1, dw);
  });
  return true;
}

}  // namespace cpu
}  // namespace remat
