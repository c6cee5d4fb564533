// What every build knows of ONNX models, with or without the importer: their file names and
// the --loss values (onnx/import.h).
#include "compiler/onnx/import.h"

namespace remat {
namespace compiler {

bool is_onnx_model(const std::string& model) {
  return model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0;
}

OnnxLoss parse_onnx_loss(const std::string& text) {
  if (text.empty()) return OnnxLoss::kNone;
  if (text == "cross_entropy") return OnnxLoss::kCrossEntropy;
  if (text == "mse") return OnnxLoss::kMse;
  throw CompileError("--loss '" + text + "': expected cross_entropy or mse");
}

}  // namespace compiler
}  // namespace remat
