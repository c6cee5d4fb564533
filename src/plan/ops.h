// The op table: opcodes, names, arities and attribute layouts, all generated from the op
// catalogue (plan/op_catalogue.h), which documents what each op computes.
//
// This file is the contract between the compiler (which emits ops), the runtime (which verifies
// them) and every backend (which executes them). Opcodes are append-only: a number once given
// is never reused, so old plans keep their meaning.
#ifndef REMAT_PLAN_OPS_H_
#define REMAT_PLAN_OPS_H_

#include <stdint.h>

#include "plan/op_attr_list.h"
#include "plan/op_catalogue.h"

namespace remat {

/// Every op a plan may contain (see plan/op_catalogue.h). Values are stored in plans.
enum class OpCode : uint16_t {
  kInvalid = 0,
#define REMAT_OPCODE_ENUM(Name, snake, code, ...) k##Name = code,
  REMAT_OP_CATALOGUE(REMAT_OPCODE_ENUM)
#undef REMAT_OPCODE_ENUM
};

/// One past the largest opcode; opcodes are 1..kOpCodeCount-1 with no gaps (checked in ops.cc).
constexpr uint16_t kOpCodeCount = 0
#define REMAT_OPCODE_COUNT(Name, snake, code, ...) +1
                                  REMAT_OP_CATALOGUE(REMAT_OPCODE_COUNT) +
                                  1;
#undef REMAT_OPCODE_COUNT

/// Most inputs and outputs any op has (layernorm_grad: 5 inputs, 3 outputs).
constexpr int kMaxOpInputs = 8;
constexpr int kMaxOpOutputs = 3;
/// Most named int and float attributes an op has (kPermute's variable list is not named;
/// max_pool has 9 int attributes, adam_update 5 float ones).
constexpr int kMaxOpIattrs = 9;
constexpr int kMaxOpFattrs = 5;
/// Capacity of a catalogue entry's attribute name list: the larger of the two above.
constexpr int kMaxOpAttrNames = kMaxOpIattrs > kMaxOpFattrs ? kMaxOpIattrs : kMaxOpFattrs;

/// Which of an op's tensors are not f32.
enum class OpDtypes : uint8_t {
  kF32,        ///< Every tensor is f32.
  kI32Input0,  ///< Input 0 is i32 (token ids), the rest f32.
  kI32Input1,  ///< Input 1 is i32 (ids or labels), the rest f32.
  kAnyDtype,   ///< Copies between regions: any dtype, the same on both sides.
  kI64,        ///< Every tensor is i64 (counters).
};

/// An op's tensors of one direction, as the catalogue's REMAT_IN / REMAT_OUT give them.
struct OpSlots {
  uint8_t min;                      ///< Fewest tensors the op takes.
  const char* names[kMaxOpInputs];  ///< Name of each tensor the op may take; null after.
};

/// An op's named attributes of one kind, as the catalogue's REMAT_ATTRS gives them.
struct OpAttrNames {
  const char* names[kMaxOpAttrNames];  ///< Names in order; null after the last.
  bool variable;                       ///< Count decided by the values (kPermute's iattrs).
};

#define REMAT_IN(min, ...) \
  ::remat::OpSlots {       \
    min, { __VA_ARGS__ }   \
  }
#define REMAT_OUT(min, ...) \
  ::remat::OpSlots {        \
    min, { __VA_ARGS__ }    \
  }
// An attribute list's names, as strings; plan/op_attrs.h makes their indices and defaults.
#define REMAT_ATTR_NAME_STRING_(index, pair) REMAT_ATTR_LIST_NAME_STRING(pair),
#define REMAT_ATTRS(...) \
  ::remat::OpAttrNames { {REMAT_ATTR_LIST_FOR_EACH(REMAT_ATTR_NAME_STRING_, __VA_ARGS__)}, false }
#define REMAT_ATTRS_VARIABLE \
  ::remat::OpAttrNames { {}, true }

/// Static facts about one opcode, used by the verifier, the compiler and the backends.
struct OpInfo {
  const char* name;     ///< Stable lower-case name, used in plans' text dumps and messages.
  uint8_t min_inputs;   ///< Fewest inputs the op takes.
  uint8_t max_inputs;   ///< Most inputs the op takes.
  uint8_t min_outputs;  ///< Fewest outputs.
  uint8_t max_outputs;  ///< Most outputs.
  uint8_t num_iattrs;   ///< Number of int attributes (kVariableAttrs: see kPermute).
  /// Fewest int attributes a plan may give: num_iattrs, but where attributes were appended to
  /// an op after plans were written with it (max_pool's dilations): those plans end the list
  /// before them, and the missing ones take their catalogue fallbacks.
  uint8_t min_iattrs;
  uint8_t num_fattrs;  ///< Exact number of float attributes.
  OpDtypes dtypes;     ///< Which tensors are not f32.
  // The names, for messages: exactly as many as the counts above say (the lists are packed one
  // after another, not null-terminated); an op a firmware build leaves out (plan/op_subset.h)
  // has null names, so that its names cost that build nothing.
  const char* const* input_names;   ///< max_inputs names.
  const char* const* output_names;  ///< max_outputs names.
  const char* const* iattr_names;   ///< num_iattrs names (none when variable).
  const char* const* fattr_names;   ///< num_fattrs names.
};

/// OpInfo::num_iattrs of an op whose int attribute count depends on their values.
constexpr uint8_t kVariableAttrs = 0xff;

/// Returns the table entry of |code|, or nullptr when |code| is not a valid opcode.
const OpInfo* op_info(uint16_t code);

/// Returns the name of |code|, or "unknown" when it is not a valid opcode.
const char* op_name(uint16_t code);

/// Looks an op up by its name; returns OpCode::kInvalid when no op has |name| (always, in a
/// build without messages: its op table keeps no names).
OpCode op_by_name(const char* name);

/// Whether |code| is an optimizer update (sgd_update, adam_update): it updates its parameter
/// and state in place, and has a float attribute lr (optimizer_lr in plan/op_attrs.h).
bool is_optimizer_update(uint16_t code);

/// Whether |code| computes element i of its one output from element i of each input alone, every
/// tensor of the same count (add, mul, scale, the activations and their gradients; not dropout,
/// whose mask depends on the index): the CPU backend widens such an op's 16-bit tensors a chunk
/// at a time (backends/cpu/widening.h: runs_per_element).
bool computes_per_element(uint16_t code);

/// Whether |code| computes each index of the batch (the leading dimension of the tensors that
/// splits_by_batch() names) from that index of its inputs alone, its other inputs serving every
/// index: fused attention and its gradient (their mask may be [Sq, Sk]), the spatial ops that
/// compute each image alone (conv, conv_grad_input, max_pool, avg_pool, global_avg_pool and their
/// gradients; the filters serve every image), and softmax, log_softmax and their gradients (each
/// row alone; a rank-1 tensor is one row and is not split). The backends widen such an op's 16-bit
/// tensors a few batch items at a time (backends/shared/batch_chunks.h).
bool computes_per_batch_item(uint16_t code);

/// Whether |code|'s one output is the sum over the batch of what each index of it gives, from
/// that index of the tensors splits_by_batch() names (conv_grad_weight's dw, channel_sum's db):
/// run a chunk of its batch at a time, each chunk's sum is added to those of the chunks before.
bool sums_over_batch_items(uint16_t code);

/// Whether tensor |k| (output |k| where |output|, else input |k|) of rank |rank| of an op |code|
/// run a chunk of its batch at a time is split by the chunks along its leading dim: every tensor
/// of the spatial ops but the filters (and bias) of conv and conv_grad_input, conv_grad_input's
/// workspace and the sums of sums_over_batch_items(); the softmax family's of rank 2 and more; of
/// any other op (fused attention, a GPU's product over a batch), those of rank 3 and more.
bool splits_by_batch(uint16_t code, int k, bool output, int rank);

/// Whether the GPU backends' kernels for |code| read and write its 16-bit float tensors as they
/// are, each element converted as it is loaded or stored, with the bits of the widened copy
/// (backends/gpu/kernels/half.cl): the ops that computes_per_element(), bias_add, reduce_leading,
/// dropout and its gradient, layer norm and its gradient, embedding. Such an op takes no
/// widening workspace there.
bool gpu_reads_16_bit(uint16_t code);

/// Whether every backend's kernel of |code| reads input |k| (|output| false) or writes output
/// |k| in 16 bits as it is, converting each element as it loads or stores it, with the bits of
/// the widened copy: bias_add's x and y, reduce_leading's dy, dropout's and its gradient's input
/// and output, embedding's out, embedding_grad's dy, and batch norm's [N, C, ...] tensors
/// (batch_norm's x and y, batch_norm_grad's dy, x and dx, batch_norm_inference's x and y; the
/// per-channel ones are widened where they are 16-bit). The CPU reads a few more where they fit
/// its strips (backends/cpu/widening.h), the GPUs every tensor of gpu_reads_16_bit()'s ops.
bool reads_16_bit_as_it_is(uint16_t code, int k, bool output);

/// Whether every element |code| writes is an element of an input, its bytes unchanged, or zero
/// (permute, copy, select, select_grad, concat, slice): where all of a call's tensors share one
/// dtype, every backend moves its bytes, 16-bit ones too, without widening them
/// (backends/shared/widening_slices.h: moves_bytes). Widening a 16-bit float and rounding it back
/// gives its bits unchanged but for a signaling NaN, which widening quietens and a move keeps.
bool moves_elements(uint16_t code);

/// Float32 bytes of the split tensors (rank 3) a batch chunk of such an op widens at most,
/// unless one batch item's alone take more (a rank-2 mask, widened whole, and each slice's
/// rounding to 64 bytes come on top): enough work per chunk for the threads, little memory
/// beside the arena.
constexpr uint64_t kWideningChunkBytes = uint64_t{4} << 20;

/// The same bound for the GPU backends, which widen fused attention and products over a batch a
/// chunk of their batch at a time (backends/gpu/ops/widening.h): chunks large enough that a
/// chunk's products still fill a GPU.
constexpr uint64_t kGpuWideningChunkBytes = uint64_t{32} << 20;

/// Batch items such an op widens at a time, when one item's 16-bit tensors take |item_bytes| in
/// float32 and the batch holds |batch|: as many as fit |chunk_bytes|, at least 1, at most
/// |batch|.
inline int64_t widening_chunk_items(uint64_t item_bytes, int64_t batch,
                                    uint64_t chunk_bytes = kWideningChunkBytes) {
  const uint64_t fit = item_bytes > 0 ? chunk_bytes / item_bytes : UINT64_MAX;
  if (fit < 1) return 1;
  return fit < static_cast<uint64_t>(batch) ? static_cast<int64_t>(fit) : batch;
}

/// Floats of the CPU backend's per-thread strip (backends/cpu/parallel.h: product_strip) through
/// which a product rounds a 16-bit C and layer norm reads and writes its 16-bit rows: as many
/// rows as a product's tile (ops/work_splits.h: kMatmulRowBlock), so that a tile's op(B) is
/// packed once for all of its rows, as a float32 C's is.
constexpr int64_t kWideningStripFloats = 256 * 256;

/// Rows of its last dim layer norm (x, y) and its gradient (dy, x, dx) keep in that strip: the
/// CPU reads and writes their 16-bit rows as they are where that many fit, else widens them.
constexpr int64_t kNormRowSlots = 3;

/// Whether |code| updates persistent tensors in place (the optimizer updates,
/// running_stat_update and increment): then output k must be input in_place_input(code, k).
bool is_in_place_update(uint16_t code);

/// The input an in-place update's output |output| is: the parameter (input 0) and then the
/// optimizer state (inputs 2, 3, ...) for optimizer updates; input 0 for running_stat_update
/// and increment. -1 for any other op.
int in_place_input(uint16_t code, uint32_t output);

}  // namespace remat

#endif  // REMAT_PLAN_OPS_H_
