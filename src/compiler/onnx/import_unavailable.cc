// import_onnx for a build without Debian's ONNX library (libonnx-dev and libprotobuf-dev): it
// refuses every model, saying what to install.
#include "compiler/onnx/import.h"

namespace remat {
namespace compiler {

OnnxImport import_onnx(const std::string& path, int64_t, OnnxLoss, AttentionKernel) {
  throw CompileError(
      path +
      ": this remat was built without ONNX import; install libonnx-dev and libprotobuf-dev "
      "(Debian) and configure the build again");
}

OnnxImport import_onnx_bytes(const std::string&, const std::string& name, int64_t batch,
                             OnnxLoss loss, AttentionKernel attention) {
  return import_onnx(name, batch, loss, attention);
}

}  // namespace compiler
}  // namespace remat
