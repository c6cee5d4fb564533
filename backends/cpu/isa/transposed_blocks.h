// Included by the files meson compiles once per instruction set (isa/build.h), after build.h:
// transposes runs of elements into columns of float32 a square block in registers at a time, 16 x
// 16 in the AVX-512 build and 8 x 8 in the AVX2 and AVX-512 builds (none in the baseline build,
// whose callers keep their scalar loops). The packed GEMM engine's panels of an operand stored
// along K are such columns: float32 ones (gemm/packed.cc) and 16-bit ones widened on the way
// (isa/half_span.cc: widen_columns). The blocks are GCC's vector extensions, whose shuffles the
// compiler lowers to the set's permutes (the intrinsics' unmasked forms start from an undefined
// vector, which GCC 12 warns of).
#ifndef REMAT_BACKENDS_CPU_ISA_TRANSPOSED_BLOCKS_H_
#define REMAT_BACKENDS_CPU_ISA_TRANSPOSED_BLOCKS_H_

#if !defined(REMAT_BACKENDS_CPU_ISA_BUILD_H_)
#error "include isa/build.h first: this header is for the per-instruction-set builds"
#endif

#if defined(__AVX2__)
#define REMAT_CPU_TRANSPOSED_BLOCKS 1

namespace remat {
namespace cpu {
namespace {

/// Eight rows of eight floats, transposed in registers.
struct Block8 {
  static constexpr int64_t kWidth = 8;
  typedef float Vector __attribute__((vector_size(32)));
  /// v[i], row i, becomes column i.
  static void transpose(Vector* v) {
    Vector t[8], u[8];
    for (int i = 0; i < 8; i += 2) {  // per 128-bit half: rows i and i + 1 interleaved
      t[i] = __builtin_shufflevector(v[i], v[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
      t[i + 1] = __builtin_shufflevector(v[i], v[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    // u[4 q + j]'s half h: column 4 h + j of rows 4 q to 4 q + 3.
    for (int i = 0; i < 8; i += 4) {
      u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
      u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int j = 0; j < 4; ++j) {
      v[j] = __builtin_shufflevector(u[j], u[4 + j], 0, 1, 2, 3, 8, 9, 10, 11);
      v[j + 4] = __builtin_shufflevector(u[j], u[4 + j], 4, 5, 6, 7, 12, 13, 14, 15);
    }
  }
};

#if defined(__AVX512F__)
/// Sixteen rows of sixteen floats, transposed in registers.
struct Block16 {
  static constexpr int64_t kWidth = 16;
  typedef float Vector __attribute__((vector_size(64)));
  /// v[i], row i, becomes column i.
  static void transpose(Vector* v) {
    Vector t[16], u[16];
    for (int i = 0; i < 16; i += 2) {  // per 128-bit lane: rows i and i + 1 interleaved
      t[i] = __builtin_shufflevector(v[i], v[i + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12,
                                     28, 13, 29);
      t[i + 1] = __builtin_shufflevector(v[i], v[i + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27,
                                         14, 30, 15, 31);
    }
    // u[4 q + j]'s lane L: column 4 L + j of rows 4 q to 4 q + 3.
    for (int i = 0; i < 16; i += 4) {
      u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12,
                                     13, 28, 29);
      u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27,
                                         14, 15, 30, 31);
      u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24,
                                         25, 12, 13, 28, 29);
      u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26,
                                         27, 14, 15, 30, 31);
    }
    // Column 4 L + j: lane L of u[j], u[4 + j], u[8 + j], u[12 + j].
    for (int j = 0; j < 4; ++j) {
      const Vector low_ab = __builtin_shufflevector(u[j], u[4 + j], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17,
                                                    18, 19, 20, 21, 22, 23);
      const Vector high_ab = __builtin_shufflevector(u[j], u[4 + j], 8, 9, 10, 11, 12, 13, 14, 15,
                                                     24, 25, 26, 27, 28, 29, 30, 31);
      const Vector low_cd = __builtin_shufflevector(u[8 + j], u[12 + j], 0, 1, 2, 3, 4, 5, 6, 7, 16,
                                                    17, 18, 19, 20, 21, 22, 23);
      const Vector high_cd = __builtin_shufflevector(u[8 + j], u[12 + j], 8, 9, 10, 11, 12, 13, 14,
                                                     15, 24, 25, 26, 27, 28, 29, 30, 31);
      v[j] = __builtin_shufflevector(low_ab, low_cd, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24,
                                     25, 26, 27);
      v[4 + j] = __builtin_shufflevector(low_ab, low_cd, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23,
                                         28, 29, 30, 31);
      v[8 + j] = __builtin_shufflevector(high_ab, high_cd, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19,
                                         24, 25, 26, 27);
      v[12 + j] = __builtin_shufflevector(high_ab, high_cd, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22,
                                          23, 28, 29, 30, 31);
    }
  }
};
#endif

/// y[p * ldy + r] = load(x + r * ld + p)'s lanes for r < |rows|, p < |cols|, both at most
/// Block::kWidth: a whole block loaded from memory, a partial one through a zero-padded copy
/// (the same instructions either way). |load| reads a run of Block::kWidth elements of type T
/// as a Block::Vector: load(run, Block()).
template <typename Block, typename T, typename Load>
void transpose_block(const T* x, int64_t ld, int64_t rows, int64_t cols, float* y, int64_t ldy,
                     const Load& load) {
  constexpr int64_t kWidth = Block::kWidth;
  typename Block::Vector v[kWidth];
  if (rows == kWidth && cols == kWidth) {
    for (int64_t i = 0; i < kWidth; ++i) v[i] = load(x + i * ld, Block());
  } else {
    T tile[kWidth][kWidth] = {};
    for (int64_t i = 0; i < rows; ++i)
      memcpy(tile[i], x + i * ld, static_cast<size_t>(cols) * sizeof(T));
    for (int64_t i = 0; i < kWidth; ++i) v[i] = load(tile[i], Block());
  }
  Block::transpose(v);
  if (rows == kWidth) {
    for (int64_t j = 0; j < cols; ++j) memcpy(y + j * ldy, &v[j], sizeof(v[j]));
    return;
  }
  for (int64_t j = 0; j < cols; ++j)
    memcpy(y + j * ldy, &v[j], static_cast<size_t>(rows) * sizeof(float));
}

/// transpose_block() over rows [*row, rows) a Block::kWidth at a time while whole blocks of rows
/// remain (every row left where |whole| is false), each over all |n| elements; advances *row.
template <typename Block, typename T, typename Load>
void transpose_rows_by(const T* x, int64_t ld, int64_t rows, int64_t n, float* y, int64_t ldy,
                       bool whole, const Load& load, int64_t* row) {
  constexpr int64_t kWidth = Block::kWidth;
  for (; whole ? *row + kWidth <= rows : *row < rows; *row += kWidth) {
    const int64_t count = rows - *row < kWidth ? rows - *row : kWidth;
    for (int64_t p = 0; p < n; p += kWidth) {
      transpose_block<Block>(x + *row * ld + p, ld, count, n - p < kWidth ? n - p : kWidth,
                             y + p * ldy + *row, ldy, load);
    }
  }
}

/// y[p * ldy + r] = element p of |rows| runs of |n| elements |ld| apart, r < rows, p < n, as
/// |load| widens them to float32 (load(run, Block8()) and, in the AVX-512 build, load(run,
/// Block16())): 16-row blocks while they last in the AVX-512 build, then 8-row ones. Nothing
/// else of y is written.
template <typename T, typename Load>
void transpose_into_columns(const T* x, int64_t ld, int64_t rows, int64_t n, float* y, int64_t ldy,
                            const Load& load) {
  int64_t row = 0;
#if defined(__AVX512F__)
  transpose_rows_by<Block16>(x, ld, rows, n, y, ldy, true, load, &row);
#endif
  transpose_rows_by<Block8>(x, ld, rows, n, y, ldy, false, load, &row);
}

/// A Load of float32 runs for transpose_into_columns().
struct FloatRuns {
  template <typename Block>
  typename Block::Vector operator()(const float* run, Block) const {
    typename Block::Vector v;
    memcpy(&v, run, sizeof(v));
    return v;
  }
};

}  // namespace
}  // namespace cpu
}  // namespace remat

#endif  // defined(__AVX2__)
#endif  // REMAT_BACKENDS_CPU_ISA_TRANSPOSED_BLOCKS_H_
