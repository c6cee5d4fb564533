// 16-bit float tensors (bfloat16, IEEE binary16) widened into float32 and float32 narrowed back:
// whole, for the ops the GPU backends run widened (backends/gpu/ops/widening.h), and an element
// at a time, for the kernels that load and store typed tensors (load_element). On the bits, with
// integer arithmetic only, as src/plan/half_float.cc computes them: every device gives that
// file's bits (ties to even, subnormals kept, quiet NaNs with their payloads, fp16 overflow to
// infinity) whatever its float conversions' rounding and flushing.

// The float32 bits of |h|: bfloat16 when |f16| is 0 (exact), else binary16 (exact; a NaN made
// quiet with its sign and payload).
DEVICE_FN uint half_to_f32_bits(uint h, int f16) {
  if (f16 == 0) return h << 16;
  const uint sign = (h & 0x8000u) << 16;
  int e = (int)((h >> 10) & 0x1Fu);
  uint m = h & 0x03FFu;
  if (e == 0x1F) return sign | 0x7F800000u | (m != 0 ? 0x00400000u | (m << 13) : 0u);
  if (e == 0) {
    if (m == 0) return sign;
    // A subnormal, m * 2^-24: its leading one shifted into the implicit bit's place.
    e = 1;
    while ((m & 0x0400u) == 0) {
      m <<= 1;
      --e;
    }
    m &= 0x03FFu;
  }
  return sign | ((uint)(e + 112) << 23) | (m << 13);
}

// Float32 bits |u| rounded to bfloat16 (|f16| 0) or binary16, to nearest, ties to even.
DEVICE_FN uint f32_bits_to_half(uint u, int f16) {
  if (f16 == 0) {
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x0040u;
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  }
  const uint sign = (u >> 16) & 0x8000u;
  const uint a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u | ((a >> 13) & 0x03FFu);
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and up: infinity
  if (a >= 0x38800000u) return sign | ((a - 0x38000000u + 0x0FFFu + ((a >> 13) & 1u)) >> 13);
  const uint e = a >> 23;
  if (e < 102) return sign;  // below 2^-25: zero
  // A subnormal in units of 2^-24: the significand shifted right by 126 - e (14..24), to even.
  const uint m = (a & 0x007FFFFFu) | 0x00800000u;
  const uint shift = 126 - e;
  uint r = m >> shift;
  const uint rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (r & 1u) != 0)) ++r;
  return sign | r;
}

// Element i of a typed tensor argument (base, offset, |type|: GpuElement in abi.h) as a float:
// a 16-bit one widened, with the bits widen_half gives it.
DEVICE_FN float load_element(buf_t base, ulong offset, int type, ulong i) {
  if (type == kGpuElementF32) return F32(base, offset)[i];
  const uint h = ((GLOBAL const ushort*)(base + offset))[i];
  return FLOAT_FROM_BITS(half_to_f32_bits(h, type == kGpuElementF16 ? 1 : 0));
}

// Stores |v| as element i of a typed tensor argument: a 16-bit one rounded, with the bits
// narrow_half gives it.
DEVICE_FN void store_element(buf_t base, ulong offset, int type, ulong i, float v) {
  if (type == kGpuElementF32) {
    F32(base, offset)[i] = v;
    return;
  }
  ((GLOBAL ushort*)(base + offset))[i] =
      (ushort)f32_bits_to_half(BITS_OF_FLOAT(v), type == kGpuElementF16 ? 1 : 0);
}

// y[i] = the float32 of 16-bit x[i]; one work item per element.
KERNEL widen_half(buf_t x, ulong xo, buf_t y, ulong yo, ulong n, int f16) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  ((GLOBAL uint*)(y + yo))[i] = half_to_f32_bits(((GLOBAL const ushort*)(x + xo))[i], f16);
}

// y[i] = float32 x[i] rounded to 16 bits; one work item per element.
KERNEL narrow_half(buf_t x, ulong xo, buf_t y, ulong yo, ulong n, int f16) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  ((GLOBAL ushort*)(y + yo))[i] = (ushort)f32_bits_to_half(((GLOBAL const uint*)(x + xo))[i], f16);
}

// y[i] = float32 x[i] rounded to 16 bits and widened back (a 16-bit product's float32 operand,
// backends/shared/widening_slices.h); |y| may be |x|. One work item per element.
KERNEL round_half(buf_t x, ulong xo, buf_t y, ulong yo, ulong n, int f16) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  const uint u = ((GLOBAL const uint*)(x + xo))[i];
  ((GLOBAL uint*)(y + yo))[i] = half_to_f32_bits(f32_bits_to_half(u, f16), f16);
}
