// The op table's static facts, generated from the op catalogue.
#include "plan/ops.h"

#include <string.h>

#include "plan/numeric_message.h"
#include "plan/op_subset.h"

namespace remat {
namespace {

// The catalogue's name lists, kept as arrays so that OpInfo can point at them.
struct OpEntry {
  const char* name;
  OpSlots in, out;
  OpAttrNames iattrs, fattrs;
  OpDtypes dtypes;
};

constexpr uint8_t count_names(const char* const* names, int capacity) {
  uint8_t n = 0;
  while (n < capacity && names[n] != nullptr) ++n;
  return n;
}

struct Table {
  OpEntry entry[kOpCodeCount];
};

// Indexed by opcode: the catalogue's opcodes must be 1..kOpCodeCount-1, each once.
constexpr Table make_table() {
  Table t{};
  using D = OpDtypes;
  uint16_t code = 0;
#define REMAT_OP_ENTRY(Name, snake, value, in, out, ia, fa, dt, rule) \
  code = value;                                                       \
  t.entry[code] = OpEntry{#snake, in, out, ia, fa, D::dt};
  REMAT_OP_CATALOGUE(REMAT_OP_ENTRY)
#undef REMAT_OP_ENTRY
  (void)code;
  return t;
}

constexpr Table kEntries = make_table();

// Int attributes appended to an op after plans were written with it: the fewest such a plan
// gives (OpInfo::min_iattrs).
struct Appended {
  OpCode code;
  uint8_t min_iattrs;
};
constexpr Appended kAppendedIattrs[] = {{OpCode::kMaxPool, 7}, {OpCode::kMaxPoolGrad, 7}};

constexpr bool opcodes_are_dense() {
  for (uint16_t c = 1; c < kOpCodeCount; ++c) {
    if (kEntries.entry[c].name == nullptr) return false;
  }
  return true;
}
static_assert(opcodes_are_dense(), "op catalogue: opcodes must be 1..N with no gap or repeat");

constexpr bool arities_fit() {
  for (uint16_t c = 1; c < kOpCodeCount; ++c) {
    const OpEntry& e = kEntries.entry[c];
    if (count_names(e.out.names, kMaxOpInputs) > kMaxOpOutputs) return false;
    if (count_names(e.iattrs.names, kMaxOpAttrNames) > kMaxOpIattrs) return false;
    if (count_names(e.fattrs.names, kMaxOpAttrNames) > kMaxOpFattrs) return false;
    if (e.in.min > count_names(e.in.names, kMaxOpInputs)) return false;
    if (e.out.min > count_names(e.out.names, kMaxOpInputs)) return false;
  }
  return true;
}
static_assert(arities_fit(), "op catalogue: an op has more tensors or attributes than kMaxOp*");

// The tensor and attribute names of the ops this build carries (plan/op_subset.h), each op's
// lists one after another, so that a firmware build keeps no names of ops it leaves out.
constexpr int names_of(const OpEntry& e) {
  return count_names(e.in.names, kMaxOpInputs) + count_names(e.out.names, kMaxOpInputs) +
         count_names(e.iattrs.names, kMaxOpAttrNames) +
         count_names(e.fattrs.names, kMaxOpAttrNames);
}
constexpr int count_build_names() {
  if (!REMAT_MESSAGES) return 0;  // names are for messages (plan/numeric_message.h)
  int n = 0;
  for (uint16_t c = 1; c < kOpCodeCount; ++c) {
    if (op_in_build(c)) n += names_of(kEntries.entry[c]);
  }
  return n;
}
constexpr int kBuildNames = count_build_names();

// The names of an op left out of the build: its messages name the op alone (it is refused).
constexpr const char* kLeftOut[kMaxOpAttrNames > kMaxOpInputs ? kMaxOpAttrNames : kMaxOpInputs] =
    {};

// Each carried op's input, output, int and float attribute names, one list after another.
struct Names {
  const char* names[kBuildNames > 0 ? kBuildNames : 1];
};
constexpr int append(const char* const* from, int count, Names& t, int at) {
  for (int i = 0; i < count; ++i) t.names[at + i] = from[i];
  return at + count;
}
constexpr Names make_names() {
  Names t{};
  int at = 0;
  for (uint16_t c = 1; c < kOpCodeCount; ++c) {
    if (!op_in_build(c) || !REMAT_MESSAGES) continue;
    const OpEntry& e = kEntries.entry[c];
    at = append(e.in.names, count_names(e.in.names, kMaxOpInputs), t, at);
    at = append(e.out.names, count_names(e.out.names, kMaxOpInputs), t, at);
    at = append(e.iattrs.names, count_names(e.iattrs.names, kMaxOpAttrNames), t, at);
    at = append(e.fattrs.names, count_names(e.fattrs.names, kMaxOpAttrNames), t, at);
  }
  return t;
}
constexpr Names kNames = make_names();

// OpInfo points into kNames: a constant initialisation, no code at start-up.
struct Infos {
  OpInfo info[kOpCodeCount];
};
constexpr Infos make_infos() {
  Infos t{};
  int at = 0;
  for (uint16_t c = 1; c < kOpCodeCount; ++c) {
    const OpEntry& e = kEntries.entry[c];
    OpInfo& info = t.info[c];
    // A build without messages keeps no names: its messages are numbers.
    info.name = REMAT_MESSAGES ? e.name : "";
    info.min_inputs = e.in.min;
    info.max_inputs = count_names(e.in.names, kMaxOpInputs);
    info.min_outputs = e.out.min;
    info.max_outputs = count_names(e.out.names, kMaxOpInputs);
    info.num_iattrs =
        e.iattrs.variable ? kVariableAttrs : count_names(e.iattrs.names, kMaxOpAttrNames);
    info.min_iattrs = info.num_iattrs;
    for (const Appended& a : kAppendedIattrs) {
      if (static_cast<uint16_t>(a.code) == c) info.min_iattrs = a.min_iattrs;
    }
    info.num_fattrs = count_names(e.fattrs.names, kMaxOpAttrNames);
    info.dtypes = e.dtypes;
    if (!op_in_build(c) || !REMAT_MESSAGES) {
      info.input_names = info.output_names = info.iattr_names = info.fattr_names = kLeftOut;
      continue;
    }
    info.input_names = kNames.names + at;
    info.output_names = kNames.names + at + info.max_inputs;
    info.iattr_names = info.output_names + info.max_outputs;
    info.fattr_names = info.iattr_names + count_names(e.iattrs.names, kMaxOpAttrNames);
    at += names_of(e);
  }
  return t;
}
constexpr Infos kInfos = make_infos();

}  // namespace

const OpInfo* op_info(uint16_t code) {
  if (code == 0 || code >= kOpCodeCount) return nullptr;
  return &kInfos.info[code];
}

const char* op_name(uint16_t code) {
  const OpInfo* info = op_info(code);
  return info ? info->name : "unknown";
}

bool is_optimizer_update(uint16_t code) {
  return code == static_cast<uint16_t>(OpCode::kSgdUpdate) ||
         code == static_cast<uint16_t>(OpCode::kAdamUpdate);
}

bool computes_per_element(uint16_t code) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kAdd:
    case OpCode::kMul:
    case OpCode::kScale:
    case OpCode::kRelu:
    case OpCode::kReluGrad:
    case OpCode::kGelu:
    case OpCode::kGeluGrad:
    case OpCode::kTanh:
    case OpCode::kTanhGrad:
    case OpCode::kSigmoid:
    case OpCode::kSigmoidGrad:
    case OpCode::kPowScalar:
    case OpCode::kPowScalarGrad:
    case OpCode::kSquareRoot:
    case OpCode::kSquareRootGrad:
    case OpCode::kLeakyRelu:
    case OpCode::kLeakyReluGrad:
    case OpCode::kClip:
    case OpCode::kClipGrad:
    case OpCode::kHardSigmoid:
    case OpCode::kHardSigmoidGrad:
    case OpCode::kErrorFunction:
    case OpCode::kErrorFunctionGrad: return true;
    default: return false;
  }
}

bool gpu_reads_16_bit(uint16_t code) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kBiasAdd:
    case OpCode::kReduceLeading:
    case OpCode::kDropout:
    case OpCode::kDropoutGrad:
    case OpCode::kLayerNorm:
    case OpCode::kLayerNormGrad:
    case OpCode::kEmbedding: return true;
    default: return computes_per_element(code);
  }
}

bool reads_16_bit_as_it_is(uint16_t code, int k, bool output) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kBiasAdd:
    case OpCode::kDropout:
    case OpCode::kDropoutGrad:
    case OpCode::kBatchNorm:
    case OpCode::kBatchNormInference: return k == 0;
    case OpCode::kReduceLeading:
    case OpCode::kEmbeddingGrad: return !output && k == 0;
    case OpCode::kEmbedding: return output && k == 0;
    case OpCode::kBatchNormGrad: return output ? k == 0 : k <= 1;
    default: return false;
  }
}

bool moves_elements(uint16_t code) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kPermute:
    case OpCode::kCopy:
    case OpCode::kSelect:
    case OpCode::kSelectGrad:
    case OpCode::kConcat:
    case OpCode::kSlice: return true;
    default: return false;
  }
}

bool computes_per_batch_item(uint16_t code) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kAttention:
    case OpCode::kAttentionGrad:
    case OpCode::kConv:
    case OpCode::kConvGradInput:
    case OpCode::kMaxPool:
    case OpCode::kMaxPoolGrad:
    case OpCode::kAvgPool:
    case OpCode::kAvgPoolGrad:
    case OpCode::kGlobalAvgPool:
    case OpCode::kGlobalAvgPoolGrad:
    case OpCode::kSoftmax:
    case OpCode::kSoftmaxGrad:
    case OpCode::kLogSoftmax:
    case OpCode::kLogSoftmaxGrad: return true;
    default: return false;
  }
}

bool sums_over_batch_items(uint16_t code) {
  return code == static_cast<uint16_t>(OpCode::kConvGradWeight) ||
         code == static_cast<uint16_t>(OpCode::kChannelSum);
}

bool splits_by_batch(uint16_t code, int k, bool output, int rank) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kConv: return k == 0;           // x, y; not w or the bias
    case OpCode::kConvGradInput: return k == 0;  // dy, dx; not w or the workspace
    case OpCode::kConvGradWeight:
    case OpCode::kChannelSum: return !output;  // dy and x; not the sum
    case OpCode::kMaxPool:
    case OpCode::kMaxPoolGrad:
    case OpCode::kAvgPool:
    case OpCode::kAvgPoolGrad:
    case OpCode::kGlobalAvgPool:
    case OpCode::kGlobalAvgPoolGrad: return true;
    case OpCode::kSoftmax:
    case OpCode::kSoftmaxGrad:
    case OpCode::kLogSoftmax:
    case OpCode::kLogSoftmaxGrad: return rank >= 2;  // rows; a rank-1 tensor is one row
    default: return rank >= 3;
  }
}

bool is_in_place_update(uint16_t code) {
  return is_optimizer_update(code) || code == static_cast<uint16_t>(OpCode::kRunningStatUpdate) ||
         code == static_cast<uint16_t>(OpCode::kIncrement);
}

int in_place_input(uint16_t code, uint32_t output) {
  if (is_optimizer_update(code)) return output == 0 ? 0 : static_cast<int>(output) + 1;
  if (code == static_cast<uint16_t>(OpCode::kRunningStatUpdate) ||
      code == static_cast<uint16_t>(OpCode::kIncrement)) {
    return output == 0 ? 0 : -1;
  }
  return -1;
}

OpCode op_by_name(const char* name) {
  if (!REMAT_MESSAGES || name[0] == '\0') return OpCode::kInvalid;  // a build without names
  for (uint16_t c = 1; c < kOpCodeCount; ++c) {
    if (strcmp(kInfos.info[c].name, name) == 0) return static_cast<OpCode>(c);
  }
  return OpCode::kInvalid;
}

}  // namespace remat
