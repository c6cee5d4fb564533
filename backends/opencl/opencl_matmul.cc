// kMatMul through CLBlast SGEMM on (buffer, element offset) operands, in the three shape modes
// of plan/matmul_shape.h, and kHeadMatMul, one SGEMM per head's product.
//
// CLBlast picks, per call, a "direct" GEMM kernel or an "indirect" one that pads operands
// into temporary buffers it allocates itself. The backend never allocates after creation, so
// at creation it raises CLBlast's switch-over size (XGEMM_MIN_INDIRECT_SIZE) above any real
// product: every GEMM runs the direct kernel, without temporaries. The choice depends only on
// the shapes, so recomputed products are bit-identical to the first ones.
#include <string>
#include <unordered_map>

#include <clblast.h>

#include "backends/opencl/opencl_backend.h"
#include "backends/shared/op_args.h"
#include "plan/ops.h"

namespace remat {
namespace opencl {
namespace {

// m * n * k below XGEMM_MIN_INDIRECT_SIZE^3 runs direct; 2^16 cubed is 2^48 multiply-adds.
constexpr size_t kDirectGemmUpTo = size_t{1} << 16;

struct Operand {
  cl_mem mem;
  size_t offset;  // In floats.
};

}  // namespace

remat_status OpenclBackend::prepare_clblast(ErrorBuffer* err) {
  std::unordered_map<std::string, size_t> params;
  clblast::StatusCode s = clblast::RetrieveParameters(device_.device, "GemmRoutine",
                                                      clblast::Precision::kSingle, params);
  if (s != clblast::StatusCode::kSuccess) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE,
                     "opencl: CLBlast has no GEMM parameters for this device: %s (%d)",
                     cl_error_name(static_cast<cl_int>(s)), static_cast<int>(s));
  }
  // Overriding drops CLBlast's compiled GEMM programs for the device, so do it only once per
  // process (the value is then already ours).
  if (params["XGEMM_MIN_INDIRECT_SIZE"] != kDirectGemmUpTo) {
    params["XGEMM_MIN_INDIRECT_SIZE"] = kDirectGemmUpTo;
    s = clblast::OverrideParameters(device_.device, "GemmRoutine", clblast::Precision::kSingle,
                                    params);
    if (s != clblast::StatusCode::kSuccess) {
      return set_error(err, REMAT_ERROR_INTERNAL,
                       "opencl: CLBlast OverrideParameters(GemmRoutine) failed: %s (%d)",
                       cl_error_name(static_cast<cl_int>(s)), static_cast<int>(s));
    }
  }
  // One tiny product builds CLBlast's GEMM program for this context now, not in the first step.
  // It runs on the state buffer, whose report init() clears after it and whose step values
  // set_step writes before the first op.
  s = clblast::Gemm<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                           clblast::Transpose::kNo, 1, 1, 1, 1.0f, state_, 0, 1, state_, 1, 1, 0.0f,
                           state_, 2, 1, &queue_, nullptr);
  if (s == clblast::StatusCode::kSuccess) s = static_cast<clblast::StatusCode>(clFinish(queue_));
  if (s != clblast::StatusCode::kSuccess) {
    return set_error(err,
                     is_exhaustion(static_cast<cl_int>(s)) ? REMAT_ERROR_RESOURCE_EXHAUSTED
                                                           : REMAT_ERROR_INTERNAL,
                     "opencl: CLBlast GEMM warm-up failed: %s (%d)",
                     cl_error_name(static_cast<cl_int>(s)), static_cast<int>(s));
  }
  return REMAT_OK;
}

remat_status OpenclBackend::matmul(const OpCall& call, bool accumulate, ErrorBuffer* err) {
  const TensorRef& ta = *call.inputs[0];
  const TensorRef& tb = *call.inputs[1];
  const TensorRef& tc = *call.outputs[0];
  if ((ta.offset | tb.offset | tc.offset) % sizeof(float) != 0) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (matmul): operand offsets are not multiples of 4", call.index);
  }
  const MatmulShape shape = matmul_shape(call);
  if (shape.mode == MatmulMode::kInvalid) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (matmul): the batches of A, B and C fit no shape mode", call.index);
  }
  const bool trans_a = shape.trans_a, trans_b = shape.trans_b;
  const float alpha = fattr(call, attr::matmul::alpha);
  const int64_t ar = shape.a_rows, ac = shape.a_cols, br = shape.b_rows, bc = shape.b_cols;
  const int64_t m = shape.m, k = shape.k, n = shape.n;
  const int64_t batch_a = shape.batch_a;
  const size_t a_stride = static_cast<size_t>(ar * ac), b_stride = static_cast<size_t>(br * bc);
  const Operand a{buffer(ta.region), ta.offset / sizeof(float)};
  const Operand b{buffer(tb.region), tb.offset / sizeof(float)};
  const Operand c{buffer(tc.region), tc.offset / sizeof(float)};
  if (m == 0 || n == 0) return REMAT_OK;
  const float beta = accumulate ? 1.0f : 0.0f;  // for C's first (or only) sum

  // One row-major GEMM: C[c_off] = alpha op(A[a_off]) op(B[b_off]) + beta C.
  auto gemm = [&](int64_t mm, int64_t kk, size_t a_off, size_t b_off, size_t c_off,
                  float beta) -> remat_status {
    if (kk == 0) {  // An empty sum: C = beta * C; beta is 0 or 1 here.
      if (beta != 0.0f) return REMAT_OK;
      TensorRef part = tc;
      part.offset = c_off * sizeof(float);
      part.bytes = static_cast<uint64_t>(mm * n) * sizeof(float);
      return zero(part, call, err);
    }
    const clblast::StatusCode s = clblast::Gemm<float>(
        clblast::Layout::kRowMajor, trans_a ? clblast::Transpose::kYes : clblast::Transpose::kNo,
        trans_b ? clblast::Transpose::kYes : clblast::Transpose::kNo, static_cast<size_t>(mm),
        static_cast<size_t>(n), static_cast<size_t>(kk), alpha, a.mem, a_off,
        static_cast<size_t>(ac), b.mem, b_off, static_cast<size_t>(bc), beta, c.mem, c_off,
        static_cast<size_t>(n), &queue_, nullptr);
    if (s == clblast::StatusCode::kSuccess) return REMAT_OK;
    return set_error(err,
                     is_exhaustion(static_cast<cl_int>(s)) ? REMAT_ERROR_RESOURCE_EXHAUSTED
                                                           : REMAT_ERROR_INTERNAL,
                     "op %u (matmul): CLBlast Gemm %lldx%lldx%lld failed: %s (%d)", call.index,
                     static_cast<long long>(mm), static_cast<long long>(n),
                     static_cast<long long>(kk), cl_error_name(static_cast<cl_int>(s)),
                     static_cast<int>(s));
  };

  if (shape.mode == MatmulMode::kReduce) {
    // Reduce mode (weight gradients): C = sum over the batch.
    if (trans_a && !trans_b) {
      // Stacked A^T and B are contiguous along K: one GEMM with K = batch * K.
      return gemm(m, k * batch_a, a.offset, b.offset, c.offset, beta);
    }
    for (int64_t i = 0; i < batch_a; ++i) {
      const remat_status st =
          gemm(m, k, a.offset + static_cast<size_t>(i) * a_stride,
               b.offset + static_cast<size_t>(i) * b_stride, c.offset, i == 0 ? beta : 1.0f);
      if (st != REMAT_OK) return st;
    }
    return REMAT_OK;
  }
  const size_t c_stride = static_cast<size_t>(m * n);
  if (shape.mode == MatmulMode::kBroadcast) {
    // Broadcast mode: every batch entry shares B. Without transposition the stacked A rows are
    // one [batch * M, K] matrix: one GEMM.
    if (!trans_a) return gemm(m * batch_a, k, a.offset, b.offset, c.offset, beta);
    for (int64_t i = 0; i < batch_a; ++i) {
      const remat_status st = gemm(m, k, a.offset + static_cast<size_t>(i) * a_stride, b.offset,
                                   c.offset + static_cast<size_t>(i) * c_stride, beta);
      if (st != REMAT_OK) return st;
    }
    return REMAT_OK;
  }
  for (int64_t i = 0; i < batch_a; ++i) {
    const remat_status st = gemm(m, k, a.offset + static_cast<size_t>(i) * a_stride,
                                 b.offset + static_cast<size_t>(i) * b_stride,
                                 c.offset + static_cast<size_t>(i) * c_stride, beta);
    if (st != REMAT_OK) return st;
  }
  return REMAT_OK;
}

remat_status OpenclBackend::gemm(const gpu::GemmBatch& g, const OpCall& call, ErrorBuffer* err) {
  if ((g.a.offset | g.b.offset | g.c.offset) % sizeof(float) != 0) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (%s): operand offsets are not multiples of 4", call.index,
                     op_name(call.code));
  }
  const Operand a{buffer(g.a.region), g.a.offset / sizeof(float)};
  const Operand b{buffer(g.b.region), g.b.offset / sizeof(float)};
  const Operand c{buffer(g.c.region), g.c.offset / sizeof(float)};
  for (int64_t i = 0; i < g.batch; ++i) {
    const clblast::StatusCode s = clblast::Gemm<float>(
        clblast::Layout::kRowMajor, g.trans_a ? clblast::Transpose::kYes : clblast::Transpose::kNo,
        g.trans_b ? clblast::Transpose::kYes : clblast::Transpose::kNo, static_cast<size_t>(g.m),
        static_cast<size_t>(g.n), static_cast<size_t>(g.k), g.alpha, a.mem,
        a.offset + static_cast<size_t>(i * g.a.stride), static_cast<size_t>(g.a.ld), b.mem,
        b.offset + static_cast<size_t>(i * g.b.stride), static_cast<size_t>(g.b.ld),
        g.accumulate ? 1.0f : 0.0f, c.mem, c.offset + static_cast<size_t>(i * g.c.stride),
        static_cast<size_t>(g.c.ld), &queue_, nullptr);
    if (s != clblast::StatusCode::kSuccess) {
      const remat_status status = is_exhaustion(static_cast<cl_int>(s))
                                      ? REMAT_ERROR_RESOURCE_EXHAUSTED
                                      : REMAT_ERROR_INTERNAL;
      return set_error(err, status, "op %u (%s): CLBlast Gemm %lldx%lldx%lld failed: %s (%d)",
                       call.index, op_name(call.code), static_cast<long long>(g.m),
                       static_cast<long long>(g.n), static_cast<long long>(g.k),
                       cl_error_name(static_cast<cl_int>(s)), static_cast<int>(s));
    }
  }
  return REMAT_OK;
}

remat_status OpenclBackend::head_matmul(const OpCall& call, ErrorBuffer* err) {
  const TensorRef& ta = *call.inputs[0];
  const TensorRef& tb = *call.inputs[1];
  const TensorRef& tc = *call.outputs[0];
  if ((ta.offset | tb.offset | tc.offset) % sizeof(float) != 0) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (head_matmul): operand offsets are not multiples of 4", call.index);
  }
  const HeadMatmulShape shape = head_matmul_shape(call);
  if (!shape.valid) {
    return set_error(
        err, REMAT_ERROR_INVALID_ARGUMENT,
        "op %u (head_matmul): A, B and C do not hold one count of whole heads' matrices",
        call.index);
  }
  const int64_t m = shape.m, n = shape.n, k = shape.k, heads = shape.heads;
  if (m == 0 || n == 0) return REMAT_OK;
  if (k == 0) return zero(tc, call, err);  // Every product an empty sum.
  const Operand a{buffer(ta.region), ta.offset / sizeof(float)};
  const Operand b{buffer(tb.region), tb.offset / sizeof(float)};
  const Operand c{buffer(tc.region), tc.offset / sizeof(float)};
  const float alpha = fattr(call, attr::head_matmul::alpha);
  for (int64_t i = 0; i < shape.c.products; ++i) {
    const clblast::StatusCode s = clblast::Gemm<float>(
        clblast::Layout::kRowMajor,
        shape.trans_a ? clblast::Transpose::kYes : clblast::Transpose::kNo,
        shape.trans_b ? clblast::Transpose::kYes : clblast::Transpose::kNo, static_cast<size_t>(m),
        static_cast<size_t>(n), static_cast<size_t>(k), alpha, a.mem,
        a.offset + static_cast<size_t>(shape.a.offset(i, heads)), static_cast<size_t>(shape.a.ld),
        b.mem, b.offset + static_cast<size_t>(shape.b.offset(i, heads)),
        static_cast<size_t>(shape.b.ld), 0.0f, c.mem,
        c.offset + static_cast<size_t>(shape.c.offset(i, heads)), static_cast<size_t>(shape.c.ld),
        &queue_, nullptr);
    if (s != clblast::StatusCode::kSuccess) {
      const remat_status status = is_exhaustion(static_cast<cl_int>(s))
                                      ? REMAT_ERROR_RESOURCE_EXHAUSTED
                                      : REMAT_ERROR_INTERNAL;
      return set_error(
          err, status,
          "op %u (head_matmul): CLBlast Gemm %lldx%lldx%lld of product %lld failed: %s (%d)",
          call.index, static_cast<long long>(m), static_cast<long long>(n),
          static_cast<long long>(k), static_cast<long long>(i),
          cl_error_name(static_cast<cl_int>(s)), static_cast<int>(s));
    }
  }
  return REMAT_OK;
}

}  // namespace opencl
}  // namespace remat
