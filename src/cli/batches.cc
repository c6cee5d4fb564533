// Batches from a file or the synthetic task.
#include "cli/batches.h"

#include <cstdint>
#include <cstring>

#include "cli/cli_args.h"
#include "cli/session_calls.h"
#include "io/widen_to_f32.h"

namespace remat {
namespace cli {

namespace {

// An I64 tensor of |path| narrowed to I32 in place (token ids as PyTorch writes them, for an i32
// binding); a value outside int32 is refused naming the tensor and the element. A BOOL or U8
// tensor (a padding mask: an ONNX BOOL input binds as i32 0 or 1) is widened.
void narrow_to_i32(const std::string& path, SafeTensorsFile* file, const std::string& name) {
  for (SafeTensor& t : file->tensors) {
    if (t.name == name && (t.dtype == "BOOL" || t.dtype == "U8")) {
      std::vector<uint8_t> wide(t.data.size() * 4);
      for (size_t k = 0; k < t.data.size(); ++k) {
        const int32_t w = t.data[k];
        if (t.dtype == "BOOL" && w > 1) {
          throw Failure(path + ": '" + name + "' element " + std::to_string(k) + " is " +
                        std::to_string(w) + ", not a BOOL (0 or 1)");
        }
        std::memcpy(wide.data() + 4 * k, &w, 4);
      }
      t.data = std::move(wide);
      t.dtype = "I32";
    }
    if (t.name != name || t.dtype != "I64") continue;
    std::vector<uint8_t> narrow(t.data.size() / 2);
    for (size_t k = 0; k < t.data.size() / 8; ++k) {
      int64_t v;
      std::memcpy(&v, t.data.data() + 8 * k, 8);
      if (v < INT32_MIN || v > INT32_MAX) {
        throw Failure(path + ": '" + name + "' element " + std::to_string(k) + " is " +
                      std::to_string(v) + ", outside the i32 binding's range");
      }
      const int32_t w = static_cast<int32_t>(v);
      std::memcpy(narrow.data() + 4 * k, &w, 4);
    }
    t.data = std::move(narrow);
    t.dtype = "I32";
  }
}

}  // namespace

Batches Batches::from_file(const std::string& path, const remat_plan* plan, int rank, int ranks) {
  Batches out;
  out.rank_ = rank;
  out.ranks_ = ranks;
  out.file_ = std::make_shared<SafeTensorsFile>();
  std::string error;
  if (!read_safetensors(path, out.file_.get(), &error)) throw Failure(error);
  for (remat_binding_kind kind : {REMAT_BINDING_INPUT, REMAT_BINDING_LABEL}) {
    for (const remat_tensor_info& b : bindings(plan, kind)) {
      if (b.dtype == REMAT_DTYPE_I32) narrow_to_i32(path, out.file_.get(), b.name);
      if (b.dtype == REMAT_DTYPE_F32) {  // BF16 or F16 inputs, widened exactly
        for (SafeTensor& t : out.file_->tensors)
          if (t.name == b.name) widen_to_f32(&t);
      }
      const SafeTensor* t = out.file_->find(b.name);
      std::vector<int64_t> want(b.dims, b.dims + b.rank);
      want[0] *= ranks;  // every rank's rows (a binding's first axis is its batch)
      if (t == nullptr) throw Failure(path + ": no tensor '" + b.name + "' (an input of the plan)");
      const bool shape_ok = t->shape.size() == want.size() + 1 &&
                            std::vector<int64_t>(t->shape.begin() + 1, t->shape.end()) == want;
      if (t->dtype != safetensors_dtype(b.dtype) || !shape_ok || t->shape[0] < 1) {
        want.insert(want.begin(), -1);
        throw Failure(path + ": '" + b.name + "' is " + t->dtype + " " + dims_text(t->shape) +
                      ", expected " + safetensors_dtype(b.dtype) + " [STEPS" +
                      dims_text(want).substr(3));
      }
      if (out.count_ != 0 && t->shape[0] != out.count_) {
        throw Failure(path + ": '" + b.name + "' has " + std::to_string(t->shape[0]) +
                      " steps, others " + std::to_string(out.count_));
      }
      out.count_ = t->shape[0];
      out.names_.push_back(b.name);
      out.tensors_.push_back(t);
      out.item_bytes_.push_back(b.bytes * static_cast<uint64_t>(ranks));
    }
  }
  return out;
}

Batches Batches::synthetic(const std::string& model, int64_t batch, uint64_t seed, uint64_t first,
                           int rank, int ranks) {
  Batches out;
  out.task_ = std::make_shared<io::SyntheticTask>(model, batch * ranks, seed);
  out.names_ = out.task_->names();
  out.batch_ = batch;
  out.first_ = first;
  out.rank_ = rank;
  out.ranks_ = ranks;
  return out;
}

std::vector<std::vector<uint8_t>> Batches::batch(int64_t index) const {
  // This rank's rows only: the batch axis comes first, so its share is contiguous.
  if (task_) {
    return task_->rows(first_ + static_cast<uint64_t>(index), rank_ * batch_, batch_);
  }
  const int64_t row = index % count_;
  std::vector<std::vector<uint8_t>> values(names_.size());
  for (size_t i = 0; i < names_.size(); ++i) {
    const uint64_t share = item_bytes_[i] / static_cast<uint64_t>(ranks_);
    const uint8_t* at = tensors_[i]->data.data() + static_cast<uint64_t>(row) * item_bytes_[i] +
                        share * static_cast<uint64_t>(rank_);
    values[i].assign(at, at + share);
  }
  return values;
}

void Batches::set(remat_session* session, const std::vector<std::vector<uint8_t>>& values,
                  const std::string& what) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    check(session,
          remat_session_set_input(session, names_[i].c_str(), values[i].data(), values[i].size()),
          what + ": setting '" + names_[i] + "'");
  }
}

}  // namespace cli
}  // namespace remat
