// Built-in model templates (docs/templates.md): "mlp:layers=4,width=256,..." -> Graph.
#ifndef REMAT_COMPILER_TEMPLATES_TEMPLATES_H_
#define REMAT_COMPILER_TEMPLATES_TEMPLATES_H_

#include <map>
#include <string>
#include <vector>

#include "compiler/attention_kernel.h"
#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Most blocks of an `mlp` or `resmlp` (about 10 ops each) and of a `transformer` (about 75):
/// a deeper model takes more than about ten seconds and a gigabyte of host memory to compile
/// (docs/sizing.md, "Compile time"). Widths and other dims are bounded by the element limit of
/// one tensor (plan/op_check.h, kMaxTensorElements).
constexpr int64_t kMaxMlpLayers = 100000;
constexpr int64_t kMaxTransformerLayers = 10000;

/// Parsed "name:key=value,..." with typed accessors that name the key in their errors.
class TemplateSpec {
 public:
  /// Parses |text|; throws CompileError on a malformed string.
  explicit TemplateSpec(const std::string& text);
  /// Template name, e.g. "mlp".
  const std::string& name() const { return name_; }
  /// Integer |key| (>= |min|); throws when missing and no |fallback| is given (fallback < 0).
  int64_t integer(const std::string& key, int64_t min, int64_t fallback = -1);
  /// Integer |key| in [|min|, |limit|] (required); a value over |limit| is refused with a
  /// message naming the key, the value and the limit (|what| says what the limit protects).
  int64_t integer_up_to(const std::string& key, int64_t min, int64_t limit,
                        const std::string& what);
  /// Required |key| of the form AxBx... (|form| names it in messages, e.g. "CxHxW"): from
  /// |min_count| to |max_count| integers in [1, 2^31].
  std::vector<int64_t> dims(const std::string& key, size_t min_count, size_t max_count,
                            const std::string& form);
  /// Float |key| in [lo, hi), or |fallback| when absent.
  float real(const std::string& key, float lo, float hi, float fallback);
  /// Throws if a key was given that no accessor asked for (a misspelling).
  void reject_unused() const;

 private:
  std::string text_;
  std::string name_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
};

/// Builds the forward graph of template |spec| at batch |batch|, its attention (transformer) as
/// |attention| says; throws CompileError naming the key or value that is wrong.
Graph build_template(const std::string& spec, int64_t batch,
                     AttentionKernel attention = AttentionKernel::kFused);

/// Builds `mlp:...` (docs/templates.md).
Graph build_mlp(TemplateSpec& spec, int64_t batch);
/// Builds `resmlp:...` (docs/templates.md).
Graph build_resmlp(TemplateSpec& spec, int64_t batch);
/// Builds `transformer:...` (docs/templates.md), its attention as |attention| says.
Graph build_transformer(TemplateSpec& spec, int64_t batch, AttentionKernel attention);
/// Builds `cnn:...`: conv-BN-ReLU-max-pool stages and a linear classifier (docs/templates.md).
Graph build_cnn(TemplateSpec& spec, int64_t batch);
/// Builds `resnet:...`: the CIFAR ResNet of He et al. 2016, depth 6n+2 (docs/templates.md).
Graph build_resnet(TemplateSpec& spec, int64_t batch);
/// Builds `dscnn:...`: the depthwise-separable keyword-spotting network of Zhang et al. 2017
/// ("Hello Edge") (docs/templates.md).
Graph build_dscnn(TemplateSpec& spec, int64_t batch);

/// Most stages of a `cnn`, blocks of a `resnet` stage ((depth - 2) / 6) and of a `dscnn`.
constexpr int64_t kMaxCnnStages = 16;
constexpr int64_t kMaxResnetBlocks = 1000;
constexpr int64_t kMaxDscnnBlocks = 1000;

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_TEMPLATES_TEMPLATES_H_
