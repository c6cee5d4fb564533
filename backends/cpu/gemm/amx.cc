// bf16_gemm() on Intel's AMX tiles (gemm.h): bfloat16 operands, float32 sums, for the matmul ops
// of 16-bit plans on processors with AMX-BF16 (Sapphire Rapids and later). Built only for x86-64
// with a compiler that takes -mamx-tile -mamx-bf16 -mavx512bf16 (meson defines
// REMAT_CPU_BF16_GEMM), and called only where bf16_gemm_amx_available() (gemm.cc, built without
// those flags: it runs on every CPU) says the CPU has the tiles and Linux lets the process use
// them. The packing and blocking are bf16_blocks.h's; each 32 x 32 block of C is four
// accumulator tiles, two A tiles by two B tiles, summed over the block's k in steps of 32.
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/gemm/bf16_blocks.h"

namespace remat {
namespace cpu {
namespace {

// The tile configuration LDTILECFG reads (palette 1): every tile 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// One block of C (a Bf16BlockKernel): four accumulator tiles, 0 and 1 the first A tile's rows.
void block(const uint16_t* a, const uint16_t* b, int64_t steps, float* c, int64_t ldc, bool load) {
  const int64_t stride = ldc * static_cast<int64_t>(sizeof(float));
  if (load) {
    _tile_loadd(0, c, stride);
    _tile_loadd(1, c + kBf16TileRows, stride);
    _tile_loadd(2, c + kBf16TileRows * ldc, stride);
    _tile_loadd(3, c + kBf16TileRows * ldc + kBf16TileRows, stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const uint16_t* a1 = a + steps * kBf16TileElems;
  const uint16_t* b1 = b + steps * kBf16TileElems;
  for (int64_t s = 0; s < steps; ++s) {
    _tile_loadd(4, a + s * kBf16TileElems, 64);
    _tile_loadd(5, a1 + s * kBf16TileElems, 64);
    _tile_loadd(6, b + s * kBf16TileElems, 64);
    _tile_loadd(7, b1 + s * kBf16TileElems, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, stride);
  _tile_stored(1, c + kBf16TileRows, stride);
  _tile_stored(2, c + kBf16TileRows * ldc, stride);
  _tile_stored(3, c + kBf16TileRows * ldc + kBf16TileRows, stride);
}

}  // namespace

void bf16_gemm_amx(const Bf16Gemm& g) {
  TileConfig config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kBf16TileRows;
    config.colsb[t] = 64;
  }
  _tile_loadconfig(&config);
  bf16_blocked_gemm(g, block);
  _tile_release();
}

}  // namespace cpu
}  // namespace remat
