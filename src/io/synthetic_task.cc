// Synthetic batches: learnable by construction, identical on every machine.
#include "io/synthetic_task.h"

#include <algorithm>

#include <cstring>

#include "io/errors.h"
#include "plan/philox.h"
#include "plan/philox_words.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace io {
namespace {

// Stream keys, distinct from dropout keys (op indices) and initialisation (step 2^32-1).
constexpr uint64_t kTeacherKey = 0x7e4c4e52u;
constexpr uint64_t kDataKey = 0x64617461u;

float uniform(uint64_t seed, uint64_t step, uint64_t key, uint64_t i) {
  return 2.0f * uniform01(philox_word(seed, step, key, i)) - 1.0f;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace

std::vector<float> SyntheticTask::features(const float* sample) const {
  if (image_.empty()) return std::vector<float>(sample, sample + in_);
  const int64_t channels = image_[0], h = image_[1], w = image_[2];
  std::vector<float> f(static_cast<size_t>(4 * channels), 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        const int64_t quadrant = (2 * i >= h ? 2 : 0) + (2 * j >= w ? 1 : 0);
        f[c * 4 + quadrant] += sample[(c * h + i) * w + j];
      }
    }
  }
  return f;
}

SyntheticTask::SyntheticTask(const std::string& model, int64_t batch, uint64_t seed)
    : batch_(batch), seed_(seed) {
  compiler::TemplateSpec spec(model);
  if (spec.name() == "mlp" || spec.name() == "resmlp") {
    in_ = spec.integer("in", 1);
    classes_ = spec.integer("classes", 1);
    teacher_.resize(static_cast<size_t>(classes_ * in_));
    for (size_t i = 0; i < teacher_.size(); ++i) teacher_[i] = uniform(seed, 0, kTeacherKey, i);
  } else if (spec.name() == "cnn" || spec.name() == "resnet" || spec.name() == "dscnn") {
    image_ = spec.dims("in", 3, 3, "CxHxW");
    in_ = image_[0] * image_[1] * image_[2];
    classes_ = spec.integer("classes", 1);
    teacher_.resize(static_cast<size_t>(classes_ * 4 * image_[0]));
    for (size_t i = 0; i < teacher_.size(); ++i) teacher_[i] = uniform(seed, 0, kTeacherKey, i);
  } else if (spec.name() == "transformer") {
    transformer_ = true;
    seq_ = spec.integer("seq", 1);
    vocab_ = std::min(spec.integer("vocab", 1), kSyntheticVocab);
    classes_ = spec.integer("classes", 1);
  } else {
    throw Failure("model '" + model + "' is not a template with a synthetic task: give --data");
  }
}

std::vector<std::string> SyntheticTask::names() const {
  return {transformer_ ? "tokens" : "x", "labels"};
}

std::vector<std::vector<uint8_t>> SyntheticTask::batch(uint64_t step) const {
  return rows(step, 0, batch_);
}

std::vector<std::vector<uint8_t>> SyntheticTask::rows(uint64_t step, int64_t first,
                                                      int64_t count) const {
  std::vector<int32_t> labels(static_cast<size_t>(count));
  if (transformer_) {
    std::vector<int32_t> tokens(static_cast<size_t>(count * seq_));
    const uint64_t at = static_cast<uint64_t>(first * seq_);
    PhiloxWords word(seed_, step, kDataKey);
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = static_cast<int32_t>(word(at + i) % static_cast<uint32_t>(vocab_));
    }
    for (int64_t b = 0; b < count; ++b)
      labels[b] = tokens[b * seq_] % static_cast<int32_t>(classes_);
    return {bytes_of(tokens), bytes_of(labels)};
  }
  std::vector<float> x(static_cast<size_t>(count * in_));
  const uint64_t at = static_cast<uint64_t>(first * in_);
  PhiloxWords word(seed_, step, kDataKey);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * uniform01(word(at + i)) - 1.0f;
  for (int64_t b = 0; b < count; ++b) {
    const std::vector<float> f = features(x.data() + b * in_);
    const size_t n = f.size();
    float best = 0;
    for (int64_t c = 0; c < classes_; ++c) {
      float score = 0;
      for (size_t k = 0; k < n; ++k) score += teacher_[c * n + k] * f[k];
      if (c == 0 || score > best) {
        best = score;
        labels[b] = static_cast<int32_t>(c);
      }
    }
  }
  return {bytes_of(x), bytes_of(labels)};
}

}  // namespace io
}  // namespace remat
