// Where `remat train` gets batches: a safetensors file or the template's synthetic task.
#ifndef REMAT_CLI_BATCHES_H_
#define REMAT_CLI_BATCHES_H_

#include <stdint.h>

#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/synthetic_task.h"
#include "remat/remat.h"

namespace remat {
namespace cli {

/// Batch after batch for a plan's input and label bindings.
class Batches {
 public:
  /// The batches of safetensors file |path| (--data, --eval-data): one tensor per input and
  /// label binding of |plan|, named as the binding, with the binding's dtype and shape behind
  /// a leading batch axis, every tensor with as many batches. Throws Failure naming the file,
  /// the tensor and what was expected.
  /// In data-parallel training (|ranks| > 1), each tensor's batch axis holds |ranks| times the
  /// binding's rows, and this rank's share is rows [|rank| x b, (|rank| + 1) x b) of each batch:
  /// the file one process of |ranks| x b rows would train on.
  static Batches from_file(const std::string& path, const remat_plan* plan, int rank = 0,
                           int ranks = 1);
  /// The synthetic task of template |model| (io/synthetic_task.h) from batch index |first| on:
  /// training starts at 0, evaluation at kHeldOut, so that it never sees a training batch. With
  /// |ranks| > 1, this rank's share of the task's batches of |ranks| x |batch| rows.
  static Batches synthetic(const std::string& model, int64_t batch, uint64_t seed, uint64_t first,
                           int rank = 0, int ranks = 1);

  /// First batch index of the synthetic evaluation batches (2^62: no run trains that long).
  static constexpr uint64_t kHeldOut = uint64_t{1} << 62;

  /// Batches in the file; 0 for the synthetic task, which has no end.
  int64_t count() const { return count_; }
  /// Names of the bindings, in the order batch() gives their bytes.
  const std::vector<std::string>& names() const { return names_; }
  /// The bytes of every binding in batch |index| (modulo count() for a file).
  std::vector<std::vector<uint8_t>> batch(int64_t index) const;
  /// Sets |session|'s bindings to |values| (from batch()); |what| begins the message of a
  /// failed call ("step 12").
  void set(remat_session* session, const std::vector<std::vector<uint8_t>>& values,
           const std::string& what) const;

 private:
  Batches() = default;
  std::vector<std::string> names_;
  std::vector<uint64_t> item_bytes_;
  std::vector<const SafeTensor*> tensors_;
  std::shared_ptr<SafeTensorsFile> file_;
  std::shared_ptr<io::SyntheticTask> task_;
  uint64_t first_ = 0;
  int64_t count_ = 0;
  int64_t batch_ = 0;         // rows of this rank's share of a synthetic batch
  int rank_ = 0, ranks_ = 1;  // this process's share of each batch
};

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_BATCHES_H_
