// A deterministic task a template model can learn, for `remat train` without --data.
#ifndef REMAT_IO_SYNTHETIC_TASK_H_
#define REMAT_IO_SYNTHETIC_TASK_H_

#include <stdint.h>

#include <string>
#include <vector>

namespace remat {
namespace io {

/// Generates batch after batch for the model template a plan was compiled from:
/// - mlp: x uniform in [-1, 1); the label is the argmax of a fixed random linear "teacher" of x.
/// - cnn, resnet, dscnn: images x [C, H, W] uniform in [-1, 1); the label is the argmax of a
///   teacher of the image's coarse features: each channel's mean over each quadrant.
/// - transformer: tokens uniform in [0, min(vocab, kSyntheticVocab)); the label is the first
///   token modulo classes. The cap keeps tokens recurring, so the embedding rows that decide the
///   label are seen often enough to learn (among BERT's 30522 ids each would be seen about once
///   in a short run, and nothing could be learned).
/// Everything is drawn from Philox, so a given (seed, step) always gives the same batch.
/// The most token ids a transformer's synthetic task draws from (the first ones).
constexpr int64_t kSyntheticVocab = 64;

class SyntheticTask {
 public:
  /// Prepares the task for template string |model| at |batch|; throws io::Failure when the
  /// model is not a template (then --data is needed).
  SyntheticTask(const std::string& model, int64_t batch, uint64_t seed);
  /// Names of the bindings the task fills, in the order batch() returns them.
  std::vector<std::string> names() const;
  /// The bytes of every binding for step |step|.
  std::vector<std::vector<uint8_t>> batch(uint64_t step) const;
  /// The bytes of rows [|first|, |first| + |count|) of batch(|step|) (a data-parallel rank's
  /// share), drawn alone: the same bytes as those rows of the whole batch.
  std::vector<std::vector<uint8_t>> rows(uint64_t step, int64_t first, int64_t count) const;

 private:
  // What the teacher reads of |sample| (in_ floats): the sample itself, or its quadrant means.
  std::vector<float> features(const float* sample) const;

  bool transformer_ = false;
  int64_t batch_ = 0, in_ = 0, classes_ = 0, seq_ = 0, vocab_ = 0;
  std::vector<int64_t> image_;  // C, H, W of an image template; empty otherwise
  uint64_t seed_ = 0;
  std::vector<float> teacher_;  // [classes, features]
};

}  // namespace io
}  // namespace remat

#endif  // REMAT_IO_SYNTHETIC_TASK_H_
