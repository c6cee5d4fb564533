// Evaluation over batches: loss from the runtime, accuracy from the logits it leaves.
#include "cli/evaluation.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cli/session_calls.h"

namespace remat {
namespace cli {
namespace {

// Where accuracy comes from: the output [B, C] and the i32 [B] label it is scored against.
struct Scoring {
  const char* output = nullptr;
  size_t label = 0;  // index in Batches::names()
  int64_t rows = 0, classes = 0;
};

bool find_scoring(const remat_plan* plan, const Batches& batches, Scoring* out) {
  const std::vector<remat_tensor_info> outputs = bindings(plan, REMAT_BINDING_OUTPUT);
  const std::vector<remat_tensor_info> labels = bindings(plan, REMAT_BINDING_LABEL);
  if (outputs.size() != 1 || labels.size() != 1) return false;
  const remat_tensor_info& o = outputs[0];
  const remat_tensor_info& l = labels[0];
  if (o.rank != 2 || o.dtype != REMAT_DTYPE_F32 || l.rank != 1 || l.dtype != REMAT_DTYPE_I32 ||
      l.dims[0] != o.dims[0]) {
    return false;
  }
  for (size_t i = 0; i < batches.names().size(); ++i) {
    if (batches.names()[i] == l.name) {
      *out = Scoring{o.name, i, o.dims[0], o.dims[1]};
      return true;
    }
  }
  return false;
}

}  // namespace

EvalResult evaluate(remat_session* session, const remat_plan* plan, const Batches& batches,
                    int64_t count, int64_t batch) {
  EvalResult result;
  Scoring scoring;
  result.has_accuracy = find_scoring(plan, batches, &scoring);
  std::vector<float> logits(static_cast<size_t>(scoring.rows * scoring.classes));
  std::vector<int32_t> labels(static_cast<size_t>(scoring.rows));
  double loss_sum = 0;
  for (int64_t b = 0; b < count; ++b) {
    const std::string what = "eval batch " + std::to_string(b);
    const std::vector<std::vector<uint8_t>> values = batches.batch(b);
    batches.set(session, values, what);
    float loss = 0;
    check(session, remat_session_eval(session, &loss), what);
    loss_sum += loss;
    if (!result.has_accuracy) continue;
    check(session,
          remat_session_read_output(session, scoring.output, logits.data(),
                                    logits.size() * sizeof(float)),
          what + ": reading '" + scoring.output + "'");
    std::memcpy(labels.data(), values[scoring.label].data(), labels.size() * sizeof(int32_t));
    for (int64_t r = 0; r < scoring.rows; ++r) {
      const float* row = logits.data() + r * scoring.classes;
      int64_t best = 0;
      for (int64_t c = 1; c < scoring.classes; ++c) {
        // As torch.argmax: a NaN is the largest value, and the first of equals wins.
        if (!std::isnan(row[best]) && (row[c] > row[best] || std::isnan(row[c]))) best = c;
      }
      result.correct += best == labels[static_cast<size_t>(r)];
    }
  }
  result.samples = count * batch;
  result.loss = count > 0 ? loss_sum / static_cast<double>(count) : 0.0;
  return result;
}

}  // namespace cli
}  // namespace remat
