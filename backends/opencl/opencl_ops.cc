// Every op but matmul and the copies: argument marshalling for the kernels of kernels/*.cl.
#include <math.h>
#include <string.h>

#include "backends/opencl/opencl_backend.h"
#include "plan/ops.h"

namespace remat {
namespace opencl {
namespace {

int64_t iattr(const OpCall& c, uint32_t i, int64_t fallback) {
  return (c.iattrs != nullptr && i < c.num_iattrs) ? c.iattrs[i] : fallback;
}
float fattr(const OpCall& c, uint32_t i, float fallback) {
  return (c.fattrs != nullptr && i < c.num_fattrs) ? c.fattrs[i] : fallback;
}
int64_t last_dim(const TensorRef& t) { return t.rank == 0 ? 1 : t.dims[t.rank - 1]; }
cl_ulong u64(int64_t v) { return static_cast<cl_ulong>(v); }
size_t items(int64_t v) { return static_cast<size_t>(v); }

}  // namespace

remat_status OpenclBackend::run_kernel_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) {
  const TensorRef& in0 = *call.inputs[0];
  const TensorRef& out0 = *call.outputs[0];
  // Unary / binary elementwise ops: one kernel each, the op chosen by a uniform argument.
  auto unary = [&](UnaryOp op, float alpha) {
    KernelArgs args(kernel(kUnaryOp));
    args.add(static_cast<cl_int>(op)).add(static_cast<cl_float>(alpha));
    add_tensor(args, in0);
    add_tensor(args, out0);
    args.add(u64(out0.numel));
    return launch(kUnaryOp, args, items(out0.numel), call, err);
  };
  auto binary = [&](BinaryOp op, float alpha) {
    KernelArgs args(kernel(kBinaryOp));
    args.add(static_cast<cl_int>(op)).add(static_cast<cl_float>(alpha));
    add_tensor(args, in0);
    add_tensor(args, *call.inputs[1]);
    add_tensor(args, out0);
    args.add(u64(out0.numel));
    return launch(kBinaryOp, args, items(out0.numel), call, err);
  };

  switch (static_cast<OpCode>(call.code)) {
    case OpCode::kAdd: return binary(kAddOp, 0.0f);
    case OpCode::kMul: return binary(kMulOp, 0.0f);
    case OpCode::kReluGrad: return binary(kReluGradOp, 0.0f);
    case OpCode::kGeluGrad: return binary(kGeluGradOp, 0.0f);
    case OpCode::kTanhGrad: return binary(kTanhGradOp, 0.0f);
    case OpCode::kSigmoidGrad: return binary(kSigmoidGradOp, 0.0f);
    case OpCode::kMseGrad: {
      const int64_t n = in0.numel;
      return binary(kMseGradOp, n > 0 ? static_cast<float>(2.0 / static_cast<double>(n)) : 0.0f);
    }
    case OpCode::kRelu: return unary(kRelu, 0.0f);
    case OpCode::kGelu: return unary(kGelu, 0.0f);
    case OpCode::kTanh: return unary(kTanh, 0.0f);
    case OpCode::kSigmoid: return unary(kSigmoid, 0.0f);
    case OpCode::kScale: return unary(kScaleOp, fattr(call, 0, 1.0f));

    case OpCode::kBiasAdd: {
      const TensorRef& b = *call.inputs[1];
      if (b.numel == 0) return REMAT_OK;
      KernelArgs args(kernel(kBiasAdd));
      add_tensor(args, in0);
      add_tensor(args, b);
      add_tensor(args, out0);
      args.add(u64(out0.numel)).add(u64(b.numel));
      return launch(kBiasAdd, args, items(out0.numel), call, err);
    }
    case OpCode::kReduceLeading: {
      const int64_t nb = out0.numel;
      KernelArgs args(kernel(kReduceLeading));
      add_tensor(args, in0);
      add_tensor(args, out0);
      args.add(u64(nb > 0 ? in0.numel / nb : 0)).add(u64(nb));
      return launch(kReduceLeading, args, items(nb), call, err);
    }
    case OpCode::kDropout:
    case OpCode::kDropoutGrad: {
      KernelArgs args(kernel(kDropout));
      add_tensor(args, in0);
      add_tensor(args, out0);
      args.add(u64(out0.numel))
          .add(static_cast<cl_ulong>(ctx.seed))
          .add(static_cast<cl_ulong>(ctx.step))
          .add(static_cast<cl_ulong>(iattr(call, 0, 0)))
          .add(static_cast<cl_float>(fattr(call, 0, 0.0f)));
      return launch(kDropout, args, items((out0.numel + 3) / 4), call, err);
    }

    case OpCode::kSoftmax:
    case OpCode::kSoftmaxGrad: {
      const bool grad = call.code == static_cast<uint16_t>(OpCode::kSoftmaxGrad);
      const KernelId id = grad ? kSoftmaxGrad : kSoftmax;
      const int64_t n = last_dim(in0);
      const int64_t rows = n > 0 ? in0.numel / n : 0;
      KernelArgs args(kernel(id));
      add_tensor(args, in0);
      if (grad) add_tensor(args, *call.inputs[1]);
      add_tensor(args, out0);
      args.add(u64(rows)).add(u64(n));
      return launch(id, args, items(rows), call, err);
    }
    case OpCode::kLayerNorm: {
      const int64_t n = last_dim(in0);
      const int64_t rows = n > 0 ? in0.numel / n : 0;
      KernelArgs args(kernel(kLayerNorm));
      for (int i = 0; i < 3; ++i) add_tensor(args, *call.inputs[i]);
      for (int i = 0; i < 3; ++i) add_tensor(args, *call.outputs[i]);
      args.add(u64(rows)).add(u64(n)).add(static_cast<cl_float>(fattr(call, 0, 1e-5f)));
      return launch(kLayerNorm, args, items(rows), call, err);
    }
    case OpCode::kLayerNormGrad: {
      const TensorRef& x = *call.inputs[1];
      const int64_t n = last_dim(x);
      const int64_t rows = n > 0 ? x.numel / n : 0;
      KernelArgs dx(kernel(kLayerNormGradDx));
      for (int i = 0; i < 5; ++i) add_tensor(dx, *call.inputs[i]);
      add_tensor(dx, out0);
      dx.add(u64(rows)).add(u64(n));
      remat_status status = launch(kLayerNormGradDx, dx, items(rows), call, err);
      if (status != REMAT_OK) return status;
      KernelArgs params(kernel(kLayerNormGradParams));
      for (int i = 0; i < 4; ++i) add_tensor(params, *call.inputs[i]);
      add_tensor(params, *call.outputs[1]);
      add_tensor(params, *call.outputs[2]);
      params.add(u64(rows)).add(u64(n));
      return launch(kLayerNormGradParams, params, items(n), call, err);
    }

    case OpCode::kSoftmaxCrossEntropy:
    case OpCode::kSoftmaxCrossEntropyGrad: {
      const bool grad = call.code == static_cast<uint16_t>(OpCode::kSoftmaxCrossEntropyGrad);
      const TensorRef& labels = *call.inputs[1];
      const int64_t c = last_dim(in0);
      const int64_t rows = c > 0 ? in0.numel / c : 0;
      remat_status status = reset_flags(call, err);
      if (status != REMAT_OK) return status;
      const cl_mem flag_buffer = flags();
      if (grad) {
        KernelArgs args(kernel(kCrossEntropyGrad));
        add_tensor(args, in0);
        add_tensor(args, labels);
        add_tensor(args, out0);
        args.add(u64(rows)).add(u64(c));
        args.add(static_cast<cl_float>(rows > 0 ? static_cast<float>(1.0 / static_cast<double>(rows)) : 0.0f));
        args.add(flag_buffer);
        status = launch(kCrossEntropyGrad, args, items(rows), call, err);
      } else {
        KernelArgs args(kernel(kCrossEntropy));
        add_tensor(args, in0);
        add_tensor(args, labels);
        add_tensor(args, out0);
        add_tensor(args, *call.outputs[1]);
        args.add(u64(rows)).add(u64(c)).add(flag_buffer).local(group_size(kCrossEntropy) * sizeof(cl_double));
        status = launch_one_group(kCrossEntropy, args, call, err);
      }
      if (status != REMAT_OK) return status;
      int bad = -1;
      status = read_flags(call, err, &bad);
      if (status != REMAT_OK || bad < 0) return status;
      cl_int label = 0;
      download(labels.region, labels.offset + static_cast<uint64_t>(bad) * sizeof(cl_int), &label, sizeof(label), err);
      return set_error(err, REMAT_ERROR_OUT_OF_RANGE, "op %u (%s): label %d at position %d outside [0, %lld)",
                       call.index, op_name(call.code), label, bad, static_cast<long long>(c));
    }
    case OpCode::kMse: {
      KernelArgs args(kernel(kMse));
      add_tensor(args, in0);
      add_tensor(args, *call.inputs[1]);
      add_tensor(args, out0);
      args.add(u64(in0.numel)).local(group_size(kMse) * sizeof(cl_double));
      return launch_one_group(kMse, args, call, err);
    }

    case OpCode::kEmbedding:
    case OpCode::kEmbeddingGrad: {
      const bool grad = call.code == static_cast<uint16_t>(OpCode::kEmbeddingGrad);
      const TensorRef& ids = grad ? *call.inputs[1] : in0;
      const TensorRef& table = grad ? out0 : *call.inputs[1];
      const int64_t h = last_dim(table);
      const int64_t vocab = h > 0 ? table.numel / h : 0;
      const int64_t count = ids.numel;
      remat_status status = reset_flags(call, err);
      if (status == REMAT_OK && grad) status = zero(out0, call, err);
      if (status != REMAT_OK) return status;
      const KernelId id = grad ? kEmbeddingGrad : kEmbedding;
      KernelArgs args(kernel(id));
      add_tensor(args, in0);
      add_tensor(args, *call.inputs[1]);
      add_tensor(args, out0);
      args.add(u64(count)).add(u64(h)).add(u64(vocab)).add(flags());
      status = launch(id, args, grad ? items(h) : items(count * h), call, err);
      if (status != REMAT_OK) return status;
      int bad = -1;
      status = read_flags(call, err, &bad);
      if (status != REMAT_OK || bad < 0) return status;
      cl_int value = 0;
      download(ids.region, ids.offset + static_cast<uint64_t>(bad) * sizeof(cl_int), &value, sizeof(value), err);
      return set_error(err, REMAT_ERROR_OUT_OF_RANGE, "op %u (%s): id %d at position %d outside [0, %lld)",
                       call.index, op_name(call.code), value, bad, static_cast<long long>(vocab));
    }

    case OpCode::kPermute: {
      const int64_t r = iattr(call, 0, 0);
      if (r < 1 || r > REMAT_MAX_RANK || call.num_iattrs < static_cast<uint32_t>(1 + 2 * r)) {
        return set_error(err, REMAT_ERROR_INVALID_ARGUMENT, "op %u (permute): rank %lld needs %lld attributes, has %u",
                         call.index, static_cast<long long>(r), static_cast<long long>(1 + 2 * r), call.num_iattrs);
      }
      const int64_t* d = call.iattrs + 1;
      const int64_t* p = call.iattrs + 1 + r;
      int64_t in_stride[REMAT_MAX_RANK];
      int64_t total = 1;
      for (int64_t k = r - 1; k >= 0; --k) {
        in_stride[k] = total;
        total *= d[k];
      }
      static_assert(REMAT_MAX_RANK == 6, "kernels/data.cl permute takes six dims and six strides");
      cl_ulong out_dims[REMAT_MAX_RANK] = {1, 1, 1, 1, 1, 1}, src_strides[REMAT_MAX_RANK] = {};
      for (int64_t k = 0; k < r; ++k) {
        if (p[k] < 0 || p[k] >= r) {
          return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                           "op %u (permute): axis %lld of the permutation is %lld, outside [0, %lld)", call.index,
                           static_cast<long long>(k), static_cast<long long>(p[k]), static_cast<long long>(r));
        }
        out_dims[k] = static_cast<cl_ulong>(d[p[k]]);
        src_strides[k] = static_cast<cl_ulong>(in_stride[p[k]]);
      }
      if (total != in0.numel || total != out0.numel) {
        return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                         "op %u (permute): attribute dims hold %lld elements, tensors %lld -> %lld", call.index,
                         static_cast<long long>(total), static_cast<long long>(in0.numel),
                         static_cast<long long>(out0.numel));
      }
      const int64_t es = in0.numel > 0 ? static_cast<int64_t>(in0.bytes) / in0.numel : 4;
      KernelArgs args(kernel(kPermute));
      add_tensor(args, in0);
      add_tensor(args, out0);
      args.add(u64(total)).add(u64(es)).add(static_cast<cl_int>(r));
      for (cl_ulong v : out_dims) args.add(v);
      for (cl_ulong v : src_strides) args.add(v);
      return launch(kPermute, args, items(total), call, err);
    }
    case OpCode::kCopy: {
      if (out0.bytes == 0) return REMAT_OK;
      const cl_int status = clEnqueueCopyBuffer(queue_, buffer(in0.region), buffer(out0.region), in0.offset,
                                                out0.offset, out0.bytes, 0, nullptr, nullptr);
      return status == CL_SUCCESS ? REMAT_OK : op_fail(call, status, "clEnqueueCopyBuffer", err);
    }
    case OpCode::kSelect:
    case OpCode::kSelectGrad: {
      const bool grad = call.code == static_cast<uint16_t>(OpCode::kSelectGrad);
      const int64_t axis = iattr(call, 0, 0), index = iattr(call, 1, 0);
      const TensorRef& full = grad ? out0 : in0;  // The [outer, n, inner] side.
      if (axis < 0 || axis >= full.rank || index < 0 || index >= full.dims[axis]) {
        return set_error(err, REMAT_ERROR_OUT_OF_RANGE, "op %u (%s): axis %lld / index %lld outside the input's shape",
                         call.index, op_name(call.code), static_cast<long long>(axis), static_cast<long long>(index));
      }
      int64_t outer = 1, inner = 1;
      for (int64_t k = 0; k < axis; ++k) outer *= full.dims[k];
      for (int64_t k = axis + 1; k < full.rank; ++k) inner *= full.dims[k];
      const int64_t n = full.dims[axis];
      const int64_t es = full.numel > 0 ? static_cast<int64_t>(full.bytes) / full.numel : 4;
      const size_t run = static_cast<size_t>(inner * es);
      if (grad) {
        const remat_status status = zero(out0, call, err);
        if (status != REMAT_OK) return status;
      }
      if (run == 0 || outer == 0) return REMAT_OK;
      // Rows of |run| bytes: the full side has pitch n * run and starts at row |index|.
      const cl_ulong full_offset = full.offset + static_cast<cl_ulong>(index) * run;
      const cl_ulong full_pitch = static_cast<cl_ulong>(n) * run;
      const bool words = (full_offset | full_pitch | in0.offset | out0.offset | run) % 4 == 0;
      KernelArgs args(kernel(kCopyRows));
      if (grad) {
        args.add(buffer(in0.region)).add(static_cast<cl_ulong>(in0.offset)).add(static_cast<cl_ulong>(run));
        args.add(buffer(out0.region)).add(full_offset).add(full_pitch);
      } else {
        args.add(buffer(in0.region)).add(full_offset).add(full_pitch);
        args.add(buffer(out0.region)).add(static_cast<cl_ulong>(out0.offset)).add(static_cast<cl_ulong>(run));
      }
      args.add(static_cast<cl_ulong>(run)).add(u64(outer)).add(static_cast<cl_ulong>(words ? 4 : 1));
      return launch(kCopyRows, args, (run / (words ? 4 : 1)) * items(outer), call, err);
    }

    case OpCode::kSgdUpdate: {
      const float momentum = fattr(call, 1, 0.0f);
      const bool has_velocity = momentum != 0.0f;
      if (has_velocity && (call.num_inputs < 3 || call.num_outputs < 2)) {
        return set_error(err, REMAT_ERROR_INVALID_ARGUMENT, "op %u (sgd_update): momentum %g needs a velocity tensor",
                         call.index, static_cast<double>(momentum));
      }
      // Without momentum the velocity arguments are never read: the param stands in for them.
      const TensorRef& vel_in = has_velocity ? *call.inputs[2] : in0;
      const TensorRef& vel_out = has_velocity ? *call.outputs[1] : out0;
      KernelArgs args(kernel(kSgdUpdate));
      add_tensor(args, in0);
      add_tensor(args, *call.inputs[1]);
      add_tensor(args, vel_in);
      add_tensor(args, out0);
      add_tensor(args, vel_out);
      args.add(u64(out0.numel))
          .add(static_cast<cl_float>(fattr(call, 0, 0.0f)))
          .add(static_cast<cl_float>(momentum))
          .add(static_cast<cl_float>(fattr(call, 2, 0.0f)))
          .add(static_cast<cl_int>(has_velocity ? 1 : 0));
      return launch(kSgdUpdate, args, items(out0.numel), call, err);
    }
    case OpCode::kAdamUpdate: {
      const float lr = fattr(call, 0, 1e-3f);
      const float b1 = fattr(call, 1, 0.9f);
      const float b2 = fattr(call, 2, 0.999f);
      const float eps = fattr(call, 3, 1e-8f);
      const float wd = fattr(call, 4, 0.0f);
      const bool decoupled = iattr(call, 0, 0) != 0;
      // The same double-precision scalars as the CPU kernel, rounded once.
      const double t = static_cast<double>(ctx.step) + 1.0;
      const double bias1 = 1.0 - pow(static_cast<double>(b1), t);
      const double bias2 = 1.0 - pow(static_cast<double>(b2), t);
      KernelArgs args(kernel(kAdamUpdate));
      for (int i = 0; i < 4; ++i) add_tensor(args, *call.inputs[i]);
      for (int i = 0; i < 3; ++i) add_tensor(args, *call.outputs[i]);
      args.add(u64(out0.numel))
          .add(static_cast<cl_float>(b1))
          .add(static_cast<cl_float>(b2))
          .add(static_cast<cl_float>(eps))
          .add(static_cast<cl_float>(wd))
          .add(static_cast<cl_int>(decoupled ? 1 : 0))
          .add(static_cast<cl_float>(static_cast<double>(lr) / bias1))
          .add(static_cast<cl_float>(sqrt(bias2)))
          .add(static_cast<cl_float>(1.0 - static_cast<double>(b1)))
          .add(static_cast<cl_float>(1.0 - static_cast<double>(b2)))
          .add(static_cast<cl_float>(1.0 - static_cast<double>(lr) * wd));
      return launch(kAdamUpdate, args, items(out0.numel), call, err);
    }
    default:
      return set_error(err, REMAT_ERROR_UNIMPLEMENTED, "op %u (%s): not implemented by the opencl backend", call.index,
                       op_name(call.code));
  }
}

}  // namespace opencl
}  // namespace remat
