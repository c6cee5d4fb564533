// The op catalogue: every op a plan may contain, declared once.
//
// REMAT_OP_CATALOGUE(X) calls X once per op, in opcode order:
//
//   X(Name, snake, code, inputs, outputs, iattrs, fattrs, dtypes, rule)
//
//   Name     CamelCase: the opcode is OpCode::k##Name.
//   snake    the op's stable name (plans' text dumps, messages) and the name of its kernel in
//            every backend (cpu::snake, the OpenCL and CUDA launchers), so a backend's dispatch
//            table is built from this list too.
//   code     the opcode value stored in plans: append only, never reused.
//   inputs   REMAT_IN(min, names...): the fewest inputs and every input's name (the count of
//            names is the most); outputs likewise with REMAT_OUT.
//   iattrs   REMAT_ATTRS((name, default), ...) of the int64 attributes, in their order, or
//            REMAT_ATTRS_VARIABLE (kPermute). plan/op_attrs.h makes attr::snake::name of each:
//            its index and its default (what a kernel takes when a caller leaves it out).
//   fattrs   REMAT_ATTRS((name, default), ...) of the float32 attributes, likewise.
//   dtypes   which tensors are not floats: kF32 (none), kI32Input0, kI32Input1, kAnyDtype
//            (copies move any element type, the output the input's), kI64 (all: counters). A
//            float tensor is f32, f16 or bf16, each tensor its own (plan/half_float.h): kernels
//            compute in f32 and round 16-bit outputs once.
//   rule     the verifier's per-op check of attribute values and shape relations: rule_##rule
//            in plan/op_check_rules.cc.
//
// Adding an op: one entry here (with its contract in the comment above it), its kernel in each
// backend that claims it, and its case in tests/backends/op_cases.cc and tests/plan. The tests
// that read this list fail when a backend lacks a kernel or an op lacks a case (the op_check
// suites' <op>_ok does not link).
//
// Conventions for every op:
// - Tensors are dense, row-major. "f32" tensors are floats (float32, or f16 or bf16 where the
//   plan stores them so), "i32" tensors are int32.
// - rows(x) = numel(x) / last_dim(x); "last axis" is the innermost dimension.
// - An op never reads and writes the same tensor unless it says "in place".
// - A step context (seed from the plan, step index from the session) is passed to every op.
// - Ops that read tensors as flat arrays (elementwise ops, copy, scale, dropout, mse, copies, an
//   optimizer's grad and moments) require equal element counts, not equal dims.
#ifndef REMAT_PLAN_OP_CATALOGUE_H_
#define REMAT_PLAN_OP_CATALOGUE_H_

// clang-format off
#define REMAT_OP_CATALOGUE(X)                                                                    \
  /* C = alpha * op(A) * op(B) [+ bias]. The matrix of a tensor is its last two dims, its batch  \
     the product of the others. Shape modes (plan/matmul_shape.h): batched (all batches equal),  \
     broadcast (B rank 2, batch(A) == batch(C)), reduce (C rank 2, batch(A) == batch(B) > 1,     \
     C = sum over the batch: weight gradients). The optional bias [N] (not in reduce mode) is    \
     added to every row of C after the product, each element rounded once: the bits of the       \
     product followed by bias_add (a linear layer's epilogue, added while C is in cache). */     \
  X(MatMul, matmul, 1, REMAT_IN(2, "A", "B", "bias"), REMAT_OUT(1, "C"),                         \
    REMAT_ATTRS((trans_a, 0), (trans_b, 0)), REMAT_ATTRS((alpha, 1.0f)), kF32, matmul)           \
  /* y = x + broadcast(b); b's dims equal x's trailing dims. */                                  \
  X(BiasAdd, bias_add, 2, REMAT_IN(2, "x", "b"), REMAT_OUT(1, "y"), REMAT_ATTRS(),               \
    REMAT_ATTRS(), kF32, bias_add)                                                               \
  /* db = dy summed over its leading dims; db's dims equal dy's trailing dims. */                \
  X(ReduceLeading, reduce_leading, 3, REMAT_IN(1, "dy"), REMAT_OUT(1, "db"), REMAT_ATTRS(),      \
    REMAT_ATTRS(), kF32, reduce_leading)                                                         \
  /* c = a + b. */                                                                               \
  X(Add, add, 4, REMAT_IN(2, "a", "b"), REMAT_OUT(1, "c"), REMAT_ATTRS(), REMAT_ATTRS(), kF32,   \
    same_numel)                                                                                  \
  /* c = a * b (elementwise). */                                                                 \
  X(Mul, mul, 5, REMAT_IN(2, "a", "b"), REMAT_OUT(1, "c"), REMAT_ATTRS(), REMAT_ATTRS(), kF32,   \
    same_numel)                                                                                  \
  /* y = max(x, 0). */                                                                           \
  X(Relu, relu, 6, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(), REMAT_ATTRS(), kF32,      \
    same_numel)                                                                                  \
  /* dx = dy * (y > 0). */                                                                       \
  X(ReluGrad, relu_grad, 7, REMAT_IN(2, "dy", "y"), REMAT_OUT(1, "dx"), REMAT_ATTRS(),           \
    REMAT_ATTRS(), kF32, same_numel)                                                             \
  /* y = 0.5 * x * (1 + erf(x / sqrt(2))) (exact GELU). */                                       \
  X(Gelu, gelu, 8, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(), REMAT_ATTRS(), kF32,      \
    same_numel)                                                                                  \
  /* dx = dy * gelu'(x). */                                                                      \
  X(GeluGrad, gelu_grad, 9, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dx"), REMAT_ATTRS(),           \
    REMAT_ATTRS(), kF32, same_numel)                                                             \
  /* y = tanh(x). */                                                                             \
  X(Tanh, tanh, 10, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(), REMAT_ATTRS(), kF32,     \
    same_numel)                                                                                  \
  /* dx = dy * (1 - y*y). */                                                                     \
  X(TanhGrad, tanh_grad, 11, REMAT_IN(2, "dy", "y"), REMAT_OUT(1, "dx"), REMAT_ATTRS(),          \
    REMAT_ATTRS(), kF32, same_numel)                                                             \
  /* y = 1 / (1 + exp(-x)). */                                                                   \
  X(Sigmoid, sigmoid, 12, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(), REMAT_ATTRS(),     \
    kF32, same_numel)                                                                            \
  /* dx = dy * y * (1 - y). */                                                                   \
  X(SigmoidGrad, sigmoid_grad, 13, REMAT_IN(2, "dy", "y"), REMAT_OUT(1, "dx"), REMAT_ATTRS(),    \
    REMAT_ATTRS(), kF32, same_numel)                                                             \
  /* Softmax over the last axis. */                                                              \
  X(Softmax, softmax, 14, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(), REMAT_ATTRS(),     \
    kF32, same_rows)                                                                             \
  /* dx = y * (dy - sum_last_axis(dy * y)). */                                                   \
  X(SoftmaxGrad, softmax_grad, 15, REMAT_IN(2, "dy", "y"), REMAT_OUT(1, "dx"), REMAT_ATTRS(),    \
    REMAT_ATTRS(), kF32, same_rows)                                                              \
  /* Layer normalisation over the last axis (N = last dim), biased variance:                     \
     mean = sum(x)/N, rstd = 1/sqrt(sum((x-mean)^2)/N + eps), y = (x-mean)*rstd*gamma + beta.    \
     gamma, beta: [N]; mean, rstd: [rows]. */                                                    \
  X(LayerNorm, layernorm, 16, REMAT_IN(3, "x", "gamma", "beta"),                                 \
    REMAT_OUT(3, "y", "mean", "rstd"), REMAT_ATTRS(), REMAT_ATTRS((eps, 1e-5f)), kF32,           \
    layernorm)                                                                                   \
  /* Gradient of layernorm; dgamma and dbeta are overwritten, not accumulated. */                \
  X(LayerNormGrad, layernorm_grad, 17, REMAT_IN(5, "dy", "x", "mean", "rstd", "gamma"),          \
    REMAT_OUT(3, "dx", "dgamma", "dbeta"), REMAT_ATTRS(), REMAT_ATTRS(), kF32, layernorm_grad)   \
  /* Inverted dropout: y[i] = keep(i) ? x[i] / (1 - p) : 0, keep(i) = uniform(seed, step, key,   \
     i) >= p with the Philox generator of plan/philox.h. The same key, seed and step give the    \
     same mask: recompute is exact. */                                                           \
  X(Dropout, dropout, 18, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS((key, 0)),            \
    REMAT_ATTRS((p, 0.0f)), kF32, dropout)                                                       \
  /* dx[i] = keep(i) ? dy[i] / (1 - p) : 0 with the forward op's key. */                         \
  X(DropoutGrad, dropout_grad, 19, REMAT_IN(1, "dy"), REMAT_OUT(1, "dx"), REMAT_ATTRS((key, 0)), \
    REMAT_ATTRS((p, 0.0f)), kF32, dropout)                                                       \
  /* out[..., :] = table[ids[...], :]; ids i32, table [V, H], out [ids.shape..., H]. An id       \
     outside [0, V) is a step error (REMAT_ERROR_OUT_OF_RANGE), not a crash. */                  \
  X(Embedding, embedding, 20, REMAT_IN(2, "ids", "table"), REMAT_OUT(1, "out"), REMAT_ATTRS(),   \
    REMAT_ATTRS(), kI32Input0, embedding)                                                        \
  /* dtable = zeros; dtable[ids[j], :] += dy[j, :] in index order. */                            \
  X(EmbeddingGrad, embedding_grad, 21, REMAT_IN(2, "dy", "ids"), REMAT_OUT(1, "dtable"),         \
    REMAT_ATTRS(), REMAT_ATTRS(), kI32Input1, embedding_grad)                                    \
  /* General transpose. iattrs: [r, d_0..d_{r-1}, p_0..p_{r-1}]: x is viewed as dims d           \
     (row-major), y as (d_{p_0}, ..., d_{p_{r-1}}), y[i_0, ..., i_{r-1}] = x[j] with             \
     j_{p_k} = i_k. r <= 6. */                                                                   \
  X(Permute, permute, 22, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS_VARIABLE,             \
    REMAT_ATTRS(), kF32, permute)                                                                \
  /* y = x, bytes copied (a reshape: same numel, any shape). */                                  \
  X(Copy, copy, 23, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(), REMAT_ATTRS(), kF32,     \
    same_numel)                                                                                  \
  /* Select one index of an axis: x viewed as [outer, n, inner], n = x.shape[axis];              \
     y[o, :] = x[o, index, :]. */                                                                \
  X(Select, select, 24, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS((axis, 0), (index, 0)), \
    REMAT_ATTRS(), kF32, select)                                                                 \
  /* dx = zeros shaped like select's input; dx[o, index, :] = dy[o, :]. */                       \
  X(SelectGrad, select_grad, 25, REMAT_IN(1, "dy"), REMAT_OUT(1, "dx"),                          \
    REMAT_ATTRS((axis, 0), (index, 0)), REMAT_ATTRS(), kF32, select_grad)                        \
  /* Mean softmax cross-entropy: logits [N, C], labels i32 [N] -> loss [1], probs [N, C];        \
     loss = -(1/N) sum_n log softmax(logits_n)[label_n]. A label outside [0, C) is a step        \
     error. */                                                                                   \
  X(SoftmaxCrossEntropy, softmax_cross_entropy, 26, REMAT_IN(2, "logits", "labels"),             \
    REMAT_OUT(2, "loss", "probs"), REMAT_ATTRS(), REMAT_ATTRS(), kI32Input1,                     \
    softmax_cross_entropy)                                                                       \
  /* dlogits = (probs - onehot(labels)) / N. */                                                  \
  X(SoftmaxCrossEntropyGrad, softmax_cross_entropy_grad, 27, REMAT_IN(2, "probs", "labels"),     \
    REMAT_OUT(1, "dlogits"), REMAT_ATTRS(), REMAT_ATTRS(), kI32Input1,                           \
    softmax_cross_entropy_grad)                                                                  \
  /* loss = mean((pred - target)^2) over all elements; loss [1]. */                              \
  X(Mse, mse, 28, REMAT_IN(2, "pred", "target"), REMAT_OUT(1, "loss"), REMAT_ATTRS(),            \
    REMAT_ATTRS(), kF32, mse)                                                                    \
  /* dpred = 2 * (pred - target) / numel. */                                                     \
  X(MseGrad, mse_grad, 29, REMAT_IN(2, "pred", "target"), REMAT_OUT(1, "dpred"), REMAT_ATTRS(),  \
    REMAT_ATTRS(), kF32, same_numel)                                                             \
  /* SGD as torch.optim.SGD (dampening 0, not Nesterov), in place on param and velocity:         \
     g = grad + weight_decay * param; v = momentum * v + g (if momentum != 0, else no velocity   \
     tensor); param -= lr * (momentum != 0 ? v : g). Outputs are the inputs' tensors. */         \
  X(SgdUpdate, sgd_update, 30, REMAT_IN(2, "param", "grad", "velocity"),                         \
    REMAT_OUT(1, "param", "velocity"), REMAT_ATTRS(),                                            \
    REMAT_ATTRS((lr, 0.0f), (momentum, 0.0f), (weight_decay, 0.0f)), kF32, sgd_update)           \
  /* Adam / AdamW as torch.optim.Adam / AdamW, in place, t = step + 1:                           \
     Adam: g = grad + wd * param.  AdamW: param *= (1 - lr * wd), g = grad.                      \
     m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;                                                 \
     param -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). decoupled 1 = AdamW. */  \
  X(AdamUpdate, adam_update, 31, REMAT_IN(4, "param", "grad", "m", "v"),                         \
    REMAT_OUT(3, "param", "m", "v"), REMAT_ATTRS((decoupled, 0)),                                \
    REMAT_ATTRS((lr, 1e-3f), (b1, 0.9f), (b2, 0.999f), (eps, 1e-8f), (weight_decay, 0.0f)),      \
    kF32, adam_update)                                                                           \
  /* Copy an arena tensor to its host spill slot (same size); may complete asynchronously. */    \
  X(Spill, spill, 32, REMAT_IN(1, "x"), REMAT_OUT(1, "slot"), REMAT_ATTRS(), REMAT_ATTRS(),      \
    kAnyDtype, copy_between_regions)                                                             \
  /* Copy a host spill slot back into the arena; may complete asynchronously. */                 \
  X(Prefetch, prefetch, 33, REMAT_IN(1, "slot"), REMAT_OUT(1, "x"), REMAT_ATTRS(),               \
    REMAT_ATTRS(), kAnyDtype, copy_between_regions)                                              \
  /* Wait until the asynchronous copy that writes or reads x has completed. No output. */        \
  X(Wait, wait, 34, REMAT_IN(1, "x"), REMAT_OUT(0), REMAT_ATTRS(), REMAT_ATTRS(), kAnyDtype,     \
    none)                                                                                        \
  /* y = alpha * x. */                                                                           \
  X(Scale, scale, 35, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),                        \
    REMAT_ATTRS((alpha, 1.0f)), kF32, same_numel)                                                \
  /* The non-finite guard: a step error (REMAT_ERROR_NONFINITE) when any element of x is NaN     \
     or infinite, reporting the first such position. No output. The optimizer updates after a    \
     failed check do not run (the CPU stops at the error; GPU updates skip themselves on the     \
     step's report), so no non-finite value reaches a parameter or an optimizer state. */        \
  X(FiniteCheck, finite_check, 36, REMAT_IN(1, "x"), REMAT_OUT(0), REMAT_ATTRS(), REMAT_ATTRS(), \
    kF32, none)                                                                                  \
  /* ---- Convolutional networks (docs/convolutions.md). Spatial ops take NCHW tensors           \
     [N, C, H, W], and [N, C, L] as [N, C, 1, L] (then every H attribute must be neutral:        \
     kernel 1, stride 1, padding 0, dilation 1). Sizes: plan/spatial_shape.h. ---- */            \
  /* Convolution as torch.nn.functional.conv2d (conv1d on rank 3): x [N, C, H, W], w             \
     [K, C/groups, R, S] (rank of x), optional bias [K]; y [N, K, P, Q],                         \
     P = (H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h + 1, Q likewise; groups divides C     \
     and K. */                                                                                   \
  X(Conv, conv, 37, REMAT_IN(2, "x", "w", "bias"), REMAT_OUT(1, "y"),                            \
    REMAT_ATTRS((stride_h, 1), (stride_w, 1), (pad_h, 0), (pad_w, 0), (dilation_h, 1),           \
                (dilation_w, 1), (groups, 1)), REMAT_ATTRS(), kF32, conv)                        \
  /* dx of conv (w and the attributes of the forward op). workspace: f32                         \
     [conv_grad_input_workspace_elems], present iff that is > 0 (a strided convolution's         \
     column-matrix gradient, w^T dy, of one image and group, before col2im). */                  \
  X(ConvGradInput, conv_grad_input, 38, REMAT_IN(2, "dy", "w"), REMAT_OUT(1, "dx", "workspace"), \
    REMAT_ATTRS((stride_h, 1), (stride_w, 1), (pad_h, 0), (pad_w, 0), (dilation_h, 1),           \
                (dilation_w, 1), (groups, 1)), REMAT_ATTRS(), kF32, conv_grad_input)             \
  /* dw of conv, overwritten: dw = sum over images of dy im2col(x)^T. */                         \
  X(ConvGradWeight, conv_grad_weight, 39, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dw"),            \
    REMAT_ATTRS((stride_h, 1), (stride_w, 1), (pad_h, 0), (pad_w, 0), (dilation_h, 1),           \
                (dilation_w, 1), (groups, 1)), REMAT_ATTRS(), kF32, conv_grad_weight)            \
  /* db[c] = sum of dy[n, c, ...] over n and the spatial positions (a conv bias's gradient). */  \
  X(ChannelSum, channel_sum, 40, REMAT_IN(1, "dy"), REMAT_OUT(1, "db"), REMAT_ATTRS(),           \
    REMAT_ATTRS(), kF32, channel_sum)                                                            \
  /* Max pooling as torch's max_pool2d: windows of kernel_h x kernel_w elements dilation apart,  \
     padding never wins, output size floor or (ceil_mode 1) ceil of (H + 2 pad - dilation *      \
     (kernel - 1) - 1) / stride + 1, minus one when ceil mode starts the last window in the      \
     padding; pad <= kernel / 2. The first maximum of a window in row-major order is its argmax, \
     a NaN wins over any number. The dilations were appended after format 4's first plans: a     \
     plan may end the list at ceil_mode (plan/ops.h, OpInfo::min_iattrs). */                     \
  X(MaxPool, max_pool, 41, REMAT_IN(1, "x"), REMAT_OUT(1, "y"),                                  \
    REMAT_ATTRS((kernel_h, 1), (kernel_w, 1), (stride_h, 1), (stride_w, 1), (pad_h, 0),          \
                (pad_w, 0), (ceil_mode, 0), (dilation_h, 1), (dilation_w, 1)),                   \
    REMAT_ATTRS(), kF32, max_pool)                                                               \
  /* dx = zeros; dx[argmax of each window of x] += dy (argmax found again, as max_pool did). */  \
  X(MaxPoolGrad, max_pool_grad, 42, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dx"),                  \
    REMAT_ATTRS((kernel_h, 1), (kernel_w, 1), (stride_h, 1), (stride_w, 1), (pad_h, 0),          \
                (pad_w, 0), (ceil_mode, 0), (dilation_h, 1), (dilation_w, 1)),                   \
    REMAT_ATTRS(), kF32, max_pool_grad)                                                          \
  /* Average pooling as torch's avg_pool2d (no divisor override): the window's sum over its      \
     elements inside x, divided by the window clipped to the padded input (count_include_pad 1)  \
     or to x itself (0). Sizes as max_pool. */                                                   \
  X(AvgPool, avg_pool, 43, REMAT_IN(1, "x"), REMAT_OUT(1, "y"),                                  \
    REMAT_ATTRS((kernel_h, 1), (kernel_w, 1), (stride_h, 1), (stride_w, 1), (pad_h, 0),          \
                (pad_w, 0), (ceil_mode, 0), (count_include_pad, 1)), REMAT_ATTRS(), kF32,        \
    avg_pool)                                                                                    \
  /* dx = zeros; dx[window] += dy / divisor, windows in output order. */                         \
  X(AvgPoolGrad, avg_pool_grad, 44, REMAT_IN(1, "dy"), REMAT_OUT(1, "dx"),                       \
    REMAT_ATTRS((kernel_h, 1), (kernel_w, 1), (stride_h, 1), (stride_w, 1), (pad_h, 0),          \
                (pad_w, 0), (ceil_mode, 0), (count_include_pad, 1)), REMAT_ATTRS(), kF32,        \
    avg_pool_grad)                                                                               \
  /* y[n, c] = mean of x[n, c, ...] (adaptive_avg_pool2d to 1x1, then flatten). */               \
  X(GlobalAvgPool, global_avg_pool, 45, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),      \
    REMAT_ATTRS(), kF32, global_avg_pool)                                                        \
  /* dx[n, c, ...] = dy[n, c] / (spatial size). */                                               \
  X(GlobalAvgPoolGrad, global_avg_pool_grad, 46, REMAT_IN(1, "dy"), REMAT_OUT(1, "dx"),          \
    REMAT_ATTRS(), REMAT_ATTRS(), kF32, global_avg_pool_grad)                                    \
  /* Batch normalisation in training, as torch's batch_norm(training=True): per channel c of x   \
     [N, C, ...] (rank 2 to 4), over M = numel / C values, mean = sum / M, var = sum((x -        \
     mean)^2) / M (biased), rstd = 1 / sqrt(var + eps) (var as stored), y = (x - mean) * rstd *  \
     gamma + beta. mean, var: [C]; the running statistics are running_stat_update's. */          \
  X(BatchNorm, batch_norm, 47, REMAT_IN(3, "x", "gamma", "beta"),                                \
    REMAT_OUT(3, "y", "mean", "var"), REMAT_ATTRS(), REMAT_ATTRS((eps, 1e-5f)), kF32,            \
    batch_norm)                                                                                  \
  /* Gradient of batch_norm (same eps); dgamma and dbeta are overwritten: dbeta = sum(dy),       \
     dgamma = sum(dy * xhat), dx = rstd * gamma * (dy - mean(dy) - xhat * mean(dy * xhat)),      \
     xhat = (x - mean) * rstd, sums and means per channel. */                                    \
  X(BatchNormGrad, batch_norm_grad, 48, REMAT_IN(5, "dy", "x", "mean", "var", "gamma"),          \
    REMAT_OUT(3, "dx", "dgamma", "dbeta"), REMAT_ATTRS(), REMAT_ATTRS((eps, 1e-5f)), kF32,       \
    batch_norm_grad)                                                                             \
  /* Batch normalisation in evaluation, per channel: y = x * a + b with a = gamma /              \
     sqrt(running_var + eps) and b = beta - running_mean * a, each worked out in double and      \
     rounded once (torch's CPU form). */                                                         \
  X(BatchNormInference, batch_norm_inference, 49,                                                \
    REMAT_IN(5, "x", "gamma", "beta", "running_mean", "running_var"), REMAT_OUT(1, "y"),         \
    REMAT_ATTRS(), REMAT_ATTRS((eps, 1e-5f)), kF32, batch_norm_inference)                        \
  /* A running statistic, in place, as torch updates a batch norm's:                             \
     running = (1 - momentum) * running + momentum * (correction * batch); correction is         \
     M / (M - 1) for the variance (torch keeps the unbiased one), 1 for the mean. Skipped, like  \
     the optimizer updates, after a failed finite check. Output 0 is input 0. */                 \
  X(RunningStatUpdate, running_stat_update, 50, REMAT_IN(2, "running", "batch"),                 \
    REMAT_OUT(1, "running"), REMAT_ATTRS(), REMAT_ATTRS((momentum, 0.1f), (correction, 1.0f)),   \
    kF32, running_stat_update)                                                                   \
  /* Constant padding of the spatial dims (F.pad(x, (left, right, top, bottom), value)). */      \
  X(Pad, pad, 51, REMAT_IN(1, "x"), REMAT_OUT(1, "y"),                                           \
    REMAT_ATTRS((top, 0), (bottom, 0), (left, 0), (right, 0)), REMAT_ATTRS((value, 0.0f)), kF32, \
    pad)                                                                                         \
  /* The gradient of pad: dx = dy without the padding (same attributes). */                      \
  X(PadGrad, pad_grad, 52, REMAT_IN(1, "dy"), REMAT_OUT(1, "dx"),                                \
    REMAT_ATTRS((top, 0), (bottom, 0), (left, 0), (right, 0)), REMAT_ATTRS(), kF32, pad_grad)    \
  /* torch.cat of 2 to 5 tensors along |axis|: the other dims agree. */                          \
  X(Concat, concat, 53, REMAT_IN(2, "a", "b", "c", "d", "e"), REMAT_OUT(1, "y"),                 \
    REMAT_ATTRS((axis, 0)), REMAT_ATTRS(), kF32, concat)                                         \
  /* y = x.narrow(axis, offset, y.shape[axis]): the other dims agree (concat's gradient). */     \
  X(Slice, slice, 54, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS((axis, 0), (offset, 0)),  \
    REMAT_ATTRS(), kF32, slice)                                                                  \
  /* counter += 1, in place (a batch norm's num_batches_tracked, i64 [1]). Skipped, like the     \
     optimizer updates, after a failed finite check. Output 0 is input 0. */                     \
  X(Increment, increment, 55, REMAT_IN(1, "counter"), REMAT_OUT(1, "counter"), REMAT_ATTRS(),    \
    REMAT_ATTRS(), kI64, increment)                                                              \
  /* ---- Imported models' elementwise and reduction ops (docs/onnx.md). ---- */                 \
  /* y = x^exponent as torch.pow(x, exponent): exponents 1, 2, 3, 0.5, -0.5 and -1 as x, x*x,    \
     x*x*x, sqrtf(x), 1/sqrtf(x) and 1/x; 0 gives 1; others powf. */                             \
  X(PowScalar, pow_scalar, 56, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),               \
    REMAT_ATTRS((exponent, 1.0f)), kF32, same_numel)                                             \
  /* dx = dy * (exponent * pow_scalar(x, exponent - 1)); exponent 0 gives dy * 0. */             \
  X(PowScalarGrad, pow_scalar_grad, 57, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dx"),              \
    REMAT_ATTRS(), REMAT_ATTRS((exponent, 1.0f)), kF32, same_numel)                              \
  /* y = sqrtf(x). */                                                                            \
  X(SquareRoot, square_root, 58, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),             \
    REMAT_ATTRS(), kF32, same_numel)                                                             \
  /* dx = dy / (2 * y). */                                                                       \
  X(SquareRootGrad, square_root_grad, 59, REMAT_IN(2, "dy", "y"), REMAT_OUT(1, "dx"),            \
    REMAT_ATTRS(), REMAT_ATTRS(), kF32, same_numel)                                              \
  /* y = x > 0 ? x : x * alpha. */                                                               \
  X(LeakyRelu, leaky_relu, 60, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),               \
    REMAT_ATTRS((alpha, 0.01f)), kF32, same_numel)                                               \
  /* dx = x > 0 ? dy : dy * alpha. */                                                            \
  X(LeakyReluGrad, leaky_relu_grad, 61, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dx"),              \
    REMAT_ATTRS(), REMAT_ATTRS((alpha, 0.01f)), kF32, same_numel)                                \
  /* y = erff(x). */                                                                             \
  X(ErrorFunction, error_function, 62, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),       \
    REMAT_ATTRS(), kF32, same_numel)                                                             \
  /* dx = 2/sqrt(pi) * expf(-x * x) * dy. */                                                     \
  X(ErrorFunctionGrad, error_function_grad, 63, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dx"),      \
    REMAT_ATTRS(), REMAT_ATTRS(), kF32, same_numel)                                              \
  /* Log-softmax over the last axis: y = (x - max) - log(sum(exp(x - max))), the sum and its     \
     log in double, rounded once. */                                                             \
  X(LogSoftmax, log_softmax, 64, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),             \
    REMAT_ATTRS(), kF32, same_rows)                                                              \
  /* dx = dy - exp(y) * sum_last_axis(dy). */                                                    \
  X(LogSoftmaxGrad, log_softmax_grad, 65, REMAT_IN(2, "dy", "y"), REMAT_OUT(1, "dx"),            \
    REMAT_ATTRS(), REMAT_ATTRS(), kF32, same_rows)                                               \
  /* Sum (mean 1: mean) over the |count| consecutive axes of x from |axis|: x viewed as          \
     [outer, n, inner], n the product of those dims, y[o, i] = sum_j x[o, j, i] (over n when     \
     mean), summed in order in double and rounded once; y has outer * inner elements. */         \
  X(ReduceSum, reduce_sum, 66, REMAT_IN(1, "x"), REMAT_OUT(1, "y"),                              \
    REMAT_ATTRS((axis, 0), (count, 1), (mean, 0)), REMAT_ATTRS(), kF32, reduce_sum)              \
  /* reduce_sum's gradient, the axes counted in y: y[o, j, i] = x[o, i] (mean 1: x[o, i] / n,    \
     n as a float). */                                                                           \
  X(Broadcast, broadcast, 67, REMAT_IN(1, "x"), REMAT_OUT(1, "y"),                               \
    REMAT_ATTRS((axis, 0), (count, 1), (mean, 0)), REMAT_ATTRS(), kF32, broadcast)               \
  /* y = value, every element. Reads nothing: the gradient a scalar loss starts from. */         \
  X(Fill, fill, 68, REMAT_IN(0), REMAT_OUT(1, "y"), REMAT_ATTRS(), REMAT_ATTRS((value, 0.0f)),   \
    kF32, none)                                                                                  \
  /* Attention's per-head products: C[i] = alpha * op(A[i]) * op(B[i]) for every product i of    \
     outer entry i / heads and head i % heads (plan/head_matmul_shape.h). A tensor whose bit is  \
     set in |interleaved| (1: A, 2: B, 4: C) holds its heads interleaved, [..., rows,            \
     heads * cols], head h's matrix in columns h * cols .. (h + 1) * cols - 1 (a linear layer's  \
     output, read or written per head without a permute); any other tensor holds its heads'      \
     matrices one after another, [..., rows, cols]. heads in [1, 2^24]. Each product's bits are  \
     matmul's for the same matrices. */                                                          \
  X(HeadMatMul, head_matmul, 69, REMAT_IN(2, "A", "B"), REMAT_OUT(1, "C"),                       \
    REMAT_ATTRS((trans_a, 0), (trans_b, 0), (heads, 1), (interleaved, 0)),                       \
    REMAT_ATTRS((alpha, 1.0f)), kF32, head_matmul)                                               \
  /* Fused scaled dot-product attention of |heads| heads that never stores its scores. q, k: [B, \
     Sq, heads * D] and [B, Sk, heads * D]; v: [B, Sk, heads * Dv]; heads interleaved as         \
     head_matmul's (head h: columns h * D .. (h + 1) * D - 1). For batch b, head h and query i:  \
     s_ij = scale * q_i . k_j (+ mask[i, j], or mask[b, i, j]: an additive f32 mask [Sq, Sk] or  \
     [B, Sq, Sk] shared by the heads, -inf allowed), P_ij = softmax_j(s_ij), lse[b, h, i] =      \
     max_j s_ij + log(sum_j exp(s_ij - max_j s_ij)), context_i = sum_j D_ij P_ij v_j with        \
     dropout D_ij = keep ? 1 / (1 - p) : 0, keep = uniform(seed, step, key, e) >= p and e =      \
     ((b * heads + h) * Sq + i) * Sk + j: the index of P_ij in the [B, heads, Sq, Sk] tensor the \
     unfused path (head_matmul, softmax, dropout, head_matmul) drops out, so its masks are this  \
     op's. context: [B, Sq, heads * Dv]; lse: [B, heads, Sq]. Sq, Sk, D, Dv >= 1; p in [0, 1). */ \
  X(Attention, attention, 70, REMAT_IN(3, "q", "k", "v", "mask"), REMAT_OUT(2, "context", "lse"), \
    REMAT_ATTRS((heads, 1), (key, 0)), REMAT_ATTRS((scale, 1.0f), (p, 0.0f)), kF32, attention)   \
  /* attention's gradient, the forward op's attributes and mask: from dcontext and the forward's \
     q, k, v, context and lse it recomputes P tile by tile and writes dq, dk, dv (overwritten):   \
     dPd = dcontext v^T, dP = D * dPd, dS = P * (dP - rowsum(dcontext * context)),               \
     dq = scale * dS k, dk = scale * dS^T q, dv = (D * P)^T dcontext. */                         \
  X(AttentionGrad, attention_grad, 71,                                                           \
    REMAT_IN(6, "dcontext", "q", "k", "v", "context", "lse", "mask"),                            \
    REMAT_OUT(3, "dq", "dk", "dv"), REMAT_ATTRS((heads, 1), (key, 0)),                           \
    REMAT_ATTRS((scale, 1.0f), (p, 0.0f)), kF32, attention_grad)                                 \
  /* y = x < low ? low : x > high ? high : x (torch.clamp, hardtanh, relu6: ONNX's Clip); a NaN   \
     stays NaN. */                                                                               \
  X(Clip, clip, 72, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),                          \
    REMAT_ATTRS((low, -3.402823466e38f), (high, 3.402823466e38f)), kF32, same_numel)             \
  /* dx = low < x < high ? dy : 0 (torch's hardtanh_backward: 0 at the bounds). */               \
  X(ClipGrad, clip_grad, 73, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dx"), REMAT_ATTRS(),          \
    REMAT_ATTRS((low, -3.402823466e38f), (high, 3.402823466e38f)), kF32, same_numel)             \
  /* t = alpha * x + beta; y = t < 0 ? 0 : t > 1 ? 1 : t (ONNX's HardSigmoid; torch's            \
     hardsigmoid is alpha 1/6, beta 0.5, and hardswish x times it); a NaN stays NaN. */          \
  X(HardSigmoid, hard_sigmoid, 74, REMAT_IN(1, "x"), REMAT_OUT(1, "y"), REMAT_ATTRS(),           \
    REMAT_ATTRS((alpha, 0.2f), (beta, 0.5f)), kF32, same_numel)                                  \
  /* dx = 0 < alpha * x + beta < 1 ? alpha * dy : 0. */                                          \
  X(HardSigmoidGrad, hard_sigmoid_grad, 75, REMAT_IN(2, "dy", "x"), REMAT_OUT(1, "dx"),          \
    REMAT_ATTRS(), REMAT_ATTRS((alpha, 0.2f), (beta, 0.5f)), kF32, same_numel)                   \
  /* ---- Data-parallel training (docs/data-parallel.md): the session's communicator           \
     (remat_communicator) sums a bucket of gradients over the ranks. ---- */                     \
  /* Starts summing each input over the ranks, in place (float32 tensors, each once): it may     \
     go on while later ops run, so until the allreduce_wait of the same bucket, which names the  \
     same inputs in the same order, no op reads or writes them (the verifier checks). bucket:    \
     the bucket's number, started once per step. */                                              \
  X(AllreduceStart, allreduce_start, 76,                                                          \
    REMAT_IN(1, "g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"), REMAT_OUT(0),                    \
    REMAT_ATTRS((bucket, 0)), REMAT_ATTRS(), kF32, allreduce)                                     \
  /* Waits until the bucket's sums are done, then divides each input by the number of ranks, in  \
     place: each rank then holds the mean of the ranks' tensors (the gradient of the mean loss    \
     over every rank's batch, as one process with all the rows would compute). */                \
  X(AllreduceWait, allreduce_wait, 77,                                                            \
    REMAT_IN(1, "g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"), REMAT_OUT(0),                    \
    REMAT_ATTRS((bucket, 0)), REMAT_ATTRS(), kF32, allreduce)
// clang-format on

#endif  // REMAT_PLAN_OP_CATALOGUE_H_
