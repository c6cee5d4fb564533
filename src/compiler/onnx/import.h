// ONNX models in (docs/onnx.md): a forward graph as torch.onnx.export writes it, read with
// Debian's ONNX library (the checker, then remat's own shape arithmetic), becomes a Graph whose
// parameters start from the model's initializers.
#ifndef REMAT_COMPILER_ONNX_IMPORT_H_
#define REMAT_COMPILER_ONNX_IMPORT_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "compiler/attention_kernel.h"
#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Whether |model| names an ONNX file (ends in ".onnx") rather than a template.
bool is_onnx_model(const std::string& model);

/// The loss the importer attaches to a graph's single output.
enum class OnnxLoss {
  kNone,          ///< none given: an error unless the model needs none
  kCrossEntropy,  ///< softmax cross-entropy against i32 labels [batch]
  kMse,           ///< mean squared error against f32 labels of the output's shape
};

/// Parses a --loss value: "cross_entropy" or "mse" ("" is kNone); throws CompileError naming it.
OnnxLoss parse_onnx_loss(const std::string& text);

/// An imported model: its forward graph with the loss attached, and what the import wants the
/// user to know (parameters that export renamed, so that their state_dict names are lost).
struct OnnxImport {
  Graph graph;
  std::vector<std::string> warnings;
};

/// Imports the ONNX model at |path| for batch |batch| (bound to a dynamic first axis; a fixed one
/// must equal it) with |loss| attached to its output. |attention| kFused imports each multi-head
/// attention torch exports (docs/onnx.md) as one attention op; kUnfused, and any attention that
/// does not match the pattern, keeps the exported MatMul, Softmax, ... as their own ops. Throws
/// CompileError naming the file, and for an unsupported node its name, op type, the opset and
/// its input shapes.
OnnxImport import_onnx(const std::string& path, int64_t batch, OnnxLoss loss,
                       AttentionKernel attention);

/// The same for a model's bytes; |name| stands for the file in messages.
OnnxImport import_onnx_bytes(const std::string& bytes, const std::string& name, int64_t batch,
                             OnnxLoss loss, AttentionKernel attention);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_ONNX_IMPORT_H_
