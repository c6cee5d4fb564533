// Winograd's minimal filtering F(2x2, 3x3) for the CPU's 3x3 unit-stride convolutions (Lavin and
// Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): each 2x2 block of outputs
// (a tile) is computed from its 4x4 block of input as A^T [(G g G^T) . (B^T d B)] A, so the
// products over the channels take 16 multiply-adds a tile where the direct convolution takes 36,
// and the transforms only add, subtract and halve. A tile's 16 transformed positions are one
// 16-float vector, so the product over the channels is a GEMM of such vectors, transformed
// filters by transformed tiles, lane by lane, run by a register-blocked kernel compiled once per
// instruction set (conv/winograd.cc; isa/isa.h). The weight gradient is the same algebra's
// adjoint: dw = G^T [sum over tiles of (A dy A^T) . (B^T d B)] G, a GEMM that sums over tiles.
//
// The sums are fixed: each output sums its tile's positions in one order and each position its
// channels in order, whatever the thread or the block of tiles, so the same call gives the same
// bits and recomputation reproduces the forward pass exactly. They are not the direct
// convolution's bits: Winograd's rounding differs, by a few units in the last place of the sum
// (tests/ops checks it against a float64 reference).
#ifndef REMAT_BACKENDS_CPU_CONV_WINOGRAD_H_
#define REMAT_BACKENDS_CPU_CONV_WINOGRAD_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// Tiles a block of the product covers: a multiple of every build's micro-tile.
constexpr int64_t kWinogradTiles = 24;
/// Transformed positions of a tile (4 x 4): one vector of floats.
constexpr int64_t kWinogradPositions = 16;
/// Floats of the shared scratch (1 MiB): the transformed filters [C, Kpad, 16], or the weight
/// gradient's parts of sums, each as large (kWinogradWeightParts of them for 64 by 64 channels).
/// A thread's scratch binds the channels first (winograd_layout: C + Kpad at most about 234, so
/// C * Kpad at most about 117 * 117). Microcontroller builds have none and never take this path.
#if defined(REMAT_CPU_SMALL_SCRATCH)
constexpr int64_t kWinogradFilterFloats = 0;
#else
constexpr int64_t kWinogradFilterFloats = kWinogradPositions * 128 * 128;
#endif

/// A 3x3 convolution at unit stride, one group: x [n, c, h, w] in, y [n, k, p, q] out, input
/// position (2 ty - pad_h + i, 2 tx - pad_w + j) for tile (ty, tx)'s element (i, j), zero
/// outside the image (a negative pad crops). Tiles are numbered (image, tile row, tile column),
/// ceil(p / 2) rows of ceil(q / 2). winograd_layout() sets the rest.
struct WinogradConv {
  int64_t n, c, h, w;
  int64_t k, p, q;
  int64_t pad_h, pad_w;
  int64_t kpad;  ///< output channels rounded up to a multiple of 4 (zero filters past k)
  int64_t m_at;  ///< where a thread's scratch holds the block's product [kWinogradTiles, kpad, 16]
  int64_t rows_at;  ///< and the padded input rows of one channel of an image's tiles in a block
  int64_t rows_floats;
};

/// Sets |wc|'s kpad and scratch layout (after the block's transformed input [kWinogradTiles, c,
/// 16] at 0) and returns the floats of a thread's scratch that winograd_tiles() needs.
int64_t winograd_layout(WinogradConv* wc);

/// Tiles of |wc|: n * ceil(p / 2) * ceil(q / 2).
int64_t winograd_tile_count(const WinogradConv& wc);

/// Writes G g G^T of output channels [k0, k1) into u, [c, kpad, 16]: position (a, b) of output
/// channel o and input channel i at u[(i * kpad + o) * 16 + a * 4 + b], from g = w[o, i] ([k, c,
/// 3, 3]), or, |flipped|, from w[i, o] turned 180 degrees (w [c, k, 3, 3]: the input gradient's
/// filters). The caller zeroes the channels past k.
void winograd_filters(const float* w, int64_t k, int64_t c, int64_t kpad, bool flipped, int64_t k0,
                      int64_t k1, float* u);

/// Computes the outputs of tiles [t0, t1) of |wc| (laid out) into y from the transformed filters
/// |u|, on the calling thread, with |scratch| (64-byte aligned, winograd_layout()'s floats).
void winograd_tiles(const WinogradConv& wc, const float* x, const float* u, int64_t t0, int64_t t1,
                    float* scratch, float* y);

/// Parts the weight gradient's sum over the tiles is cut into, each summed apart into its own
/// [kpad, c, 16] of the shared scratch and the parts then added in order: as many as fit, at
/// most kWinogradWeightParts, so the threads share the tiles and the bits depend on the shape
/// alone (more threads than parts wait while the parts are summed). Below 2 the weight gradient
/// stays direct.
constexpr int64_t kWinogradWeightParts = 4;
int64_t winograd_weight_parts(const WinogradConv& wc);

/// The weight gradient's transformed sum over tiles [t0, t1): du [kpad, c, 16] holds, for
/// output channel o and input channel i, the sum over the tiles of (A dy A^T) . (B^T d B), dy the
/// tile's 2x2 block of the gradient of y [n, k, p, q] (zero outside P x Q) and d its 4x4 block
/// of x, in tile order, blocks of kWinogradTiles summed apart and added in order (zero for no
/// tiles; the rows past k are never read). On the calling thread, with |scratch| as for
/// winograd_tiles().
void winograd_weight_sums(const WinogradConv& wc, const float* x, const float* dy, int64_t t0,
                          int64_t t1, float* scratch, float* du);

/// Writes dw[o, i] = G^T (sum of the |parts| sums du + p * part_floats, in order) G for output
/// channels [k0, k1) of w [k, c, 3, 3].
void winograd_filter_gradient(const float* du, int64_t parts, int64_t part_floats, int64_t c,
                              int64_t k0, int64_t k1, float* dw);

/// The builds for one instruction set (conv/winograd.cc); call only when the CPU has it.
void winograd_tiles_baseline(const WinogradConv& wc, const float* x, const float* u, int64_t t0,
                             int64_t t1, float* scratch, float* y);
void winograd_tiles_avx2(const WinogradConv& wc, const float* x, const float* u, int64_t t0,
                         int64_t t1, float* scratch, float* y);
void winograd_tiles_avx512(const WinogradConv& wc, const float* x, const float* u, int64_t t0,
                           int64_t t1, float* scratch, float* y);
void winograd_weight_sums_baseline(const WinogradConv& wc, const float* x, const float* dy,
                                   int64_t t0, int64_t t1, float* scratch, float* du);
void winograd_weight_sums_avx2(const WinogradConv& wc, const float* x, const float* dy, int64_t t0,
                               int64_t t1, float* scratch, float* du);
void winograd_weight_sums_avx512(const WinogradConv& wc, const float* x, const float* dy,
                                 int64_t t0, int64_t t1, float* scratch, float* du);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_CONV_WINOGRAD_H_
