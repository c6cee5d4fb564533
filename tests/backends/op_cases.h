// Every op of the op table as a small case run on the CPU kernels and on another backend, and
// the helpers that backend tests share: tensor layout, op calls, uploads and downloads.
//
// Tolerances (inputs uniform in [-1, 1], small shapes): |other - cpu| <= tol + tol * |cpu| with
// tol = 1e-5 for elementwise, normalisation, pooling, loss and optimizer ops (device
// expf/erff/tanhf are within 2 ulp of glibc, device compilers contract a*b+c into FMAs, block
// sums use another order); 1e-4 for matmul and convolutions (cuBLAS, CLBlast and direct
// convolution kernels sum K in another order than the CPU's GEMM). Bitwise for data movement
// (with pad, concat, slice), max pooling and its gradient (same window order), dropout (each
// port of the Philox generator must give the same mask) and embedding_grad (same summation
// order).
#ifndef REMAT_TESTS_BACKENDS_OP_CASES_H_
#define REMAT_TESTS_BACKENDS_OP_CASES_H_

#include <stdint.h>

#include <vector>

#include "plan/ops.h"
#include "runtime/backend.h"

namespace remat_test {

/// An error buffer on the stack for backend calls.
struct Errors {
  char text[512] = "";
  remat::ErrorBuffer buf{text, sizeof(text)};
};

/// Uniform in [-1, 1) from a splitmix64 sequence seeded by |g_rng| (tests reseed it).
extern uint64_t g_rng;
float uniform();

/// Places tensors one after another in each region, 256-byte aligned.
struct Layout {
  uint64_t next[3] = {0, 0, 0};
  /// A tensor of |dims| and |dtype| at the next free offset of |region|.
  remat::TensorRef add(std::vector<int64_t> dims, remat_dtype dtype = REMAT_DTYPE_F32,
                       remat::Region region = remat::Region::kArena);
};

/// Tensor lists that live as long as the test program, for an OpCall returned by value.
remat::OpCallLists& call_lists();

/// The OpCall of |code| at plan position |index| over |in| and |out| with attributes
/// |iattrs| and |fattrs|; the attribute vectors must outlive the call (its tensor lists are
/// call_lists()).
remat::OpCall make_call(remat::OpCode code, uint32_t index, std::vector<const remat::TensorRef*> in,
                        std::vector<const remat::TensorRef*> out,
                        const std::vector<int64_t>& iattrs, const std::vector<float>& fattrs);

/// Copies |t|'s bytes from host |data| into backend |b|; fails the test on error.
void upload(remat::Backend* b, const remat::TensorRef& t, const void* data);
/// |t|'s bytes read back from backend |b| as 4-byte words (its elements when they are f32 or
/// i32); fails the test on error.
std::vector<float> download(remat::Backend* b, const remat::TensorRef& t);

/// One op with its inputs (random f32, given i32 data, i64 counters from 41) and the tolerance
/// of its outputs.
struct OpCase {
  const char* name;
  remat::OpCode code;
  std::vector<std::vector<int64_t>> in_dims;
  std::vector<std::vector<int64_t>> out_dims;  ///< Empty for in-place optimizers.
  std::vector<int64_t> iattrs;
  std::vector<float> fattrs;
  double tol;                                   ///< 0: bitwise.
  std::vector<std::vector<int32_t>> ints = {};  ///< Data of i32 inputs, by input index.
  uint64_t rank = 0;  ///< StepContext::rank of run_widened_case()'s runs (dropout's rows).
};

/// A case for every compute opcode (copies between regions are tested on their own).
const std::vector<OpCase>& every_op_case();

/// Cases at the edges of the GPU kernels' work splits (tile_cases.cc); every_op_case()
/// includes them.
std::vector<OpCase> tile_size_cases();

/// The cases of every_op_case() by family (op_case_lists.cc): the dense models' ops (matmul to
/// finite_check), the convolutional ops (codes 37 on) and the ops only imported models use.
std::vector<OpCase> dense_cases();
std::vector<OpCase> convolutional_cases();
std::vector<OpCase> imported_model_cases();

/// Batch norm's [N, C, H, W] cases of every_op_case() (training, its gradient, inference) with
/// rows of 1023, 1024, 1025 and 3000 elements: around the part of a row the CPU reads a 16-bit
/// one in (backends/cpu/ops/batchnorm_channels.h: kChannelChunk).
std::vector<OpCase> batch_norm_row_cases();

/// Runs |c| on |cpu| and on |other| (named |other_name| in messages) over the same random
/// inputs and fails the test where an output differs beyond the case's tolerance. An output
/// the catalogue names "workspace" (a convolution's im2col buffer, scratch of the CPU kernels
/// that other backends may leave alone) is not compared. Both backends need an arena of at
/// least 64 KiB.
void run_case(const OpCase& c, remat::Backend* cpu, remat::Backend* other, const char* other_name);

/// Number of float tensors of |c|, inputs then outputs (the entries run_widened_case() takes).
size_t float_tensor_count(const OpCase& c);

/// Dtype patterns of widening_pattern().
constexpr int kWideningPatterns = 4;

/// The dtypes of |c|'s float tensors (inputs, then outputs) in |pattern|: 0, all bf16; 1, all
/// f16; 2, bf16, f32, bf16, ...; 3, f32, f16, f32, ... Empty when it has none.
std::vector<remat_dtype> widening_pattern(const OpCase& c, int pattern);

/// What run_widened_case() prepares the tested backend for (Backend::prepare).
enum class Prepared {
  kTheCall,         ///< The call in its dtypes: a widening workspace where it needs one.
  kTheFloat32Call,  ///< The call over float32 tensors: the op's scratch alone, so that a call
                    ///< that would widen is refused and fails the test.
};

/// Runs |c| on |backend| (named |name| in messages) with its k-th float tensor (inputs, then
/// outputs) of dtype |floats|[k] (f32, f16 or bf16; f32 past the vector's end), and on
/// |reference| (the CPU backend, or one of |backend|'s kind) in f32 over the same inputs, rounded
/// to 16 bits where |backend|'s are 16-bit. With |tol| 0, fails the test unless every output's
/// bytes are the reference's, rounded once to 16 bits where the output is 16-bit (the CPU backend's
/// widening is that exact). With |tol| > 0 (another backend, whose float32 kernels differ from the
/// CPU's within the case's tolerance), an f32 output may differ by tol + tol * |want|, and a 16-bit
/// output must lie between the roundings of want minus and plus that bound. A workspace output is
/// not compared. Calls |reference|'s prepare() for the float32 call and |backend|'s as |prepared|
/// says. Both backends need an arena of at least 64 KiB. Where |inexact| is given and says true of
/// the 16-bit call, the case's own tolerance applies instead of |tol| (the CPU's bfloat16 products
/// on AMX or AVX512-BF16 sum in another order); returns whether it did.
bool run_widened_case(const OpCase& c, const std::vector<remat_dtype>& floats,
                      remat::Backend* reference, remat::Backend* backend, const char* name,
                      double tol, bool (*inexact)(const remat::OpCall&) = nullptr,
                      Prepared prepared = Prepared::kTheCall);

/// Whether |predicate| holds of |c|'s call over float32 tensors, or with its float tensors'
/// dtypes |floats| as run_widened_case() takes them.
bool call_of_case_is(const OpCase& c, bool (*predicate)(const remat::OpCall&),
                     const std::vector<remat_dtype>& floats = {});

/// Runs |c| on |other|, which does not claim its op: returns whether run_op() answered
/// REMAT_ERROR_UNIMPLEMENTED with a message naming the op (printing what was wrong if not).
/// No test-failing call inside: callers may hold containers (cmocka's fail longjmps).
bool run_unclaimed_case(const OpCase& c, remat::Backend* other, const char* other_name);

}  // namespace remat_test

#endif  // REMAT_TESTS_BACKENDS_OP_CASES_H_
