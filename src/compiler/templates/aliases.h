// Shorthand model names (bert-base, bert-large) that expand to a built-in template string.
#ifndef REMAT_COMPILER_TEMPLATES_ALIASES_H_
#define REMAT_COMPILER_TEMPLATES_ALIASES_H_

#include <string>

namespace remat {
namespace compiler {

/// Expands a shorthand such as "bert-large" or "bert-base:seq=128" into the `transformer:...`
/// string with BERT's published sizes (docs/templates.md); returns |model| unchanged when it is
/// not a shorthand. Keys a shorthand takes: seq (default 512), classes (default 2), dropout
/// (default 0). Throws CompileError naming the key or value when one is wrong.
std::string expand_model_alias(const std::string& model);

/// The optimizer |model| trains with when none is given: `sgd:lr=0.01` for bert-base and
/// bert-large (plain SGD at lr 0.1 diverges on their 12 and 24 post-LN layers; 0.01 learns
/// their synthetic task, and like every default it keeps no optimizer state), `sgd:lr=0.1`
/// (CompileOptions' default) for any other model.
std::string default_optimizer(const std::string& model);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_TEMPLATES_ALIASES_H_
