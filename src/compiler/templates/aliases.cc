// bert-base and bert-large: BERT's published sizes (Devlin et al. 2019) as transformer strings.
#include "compiler/templates/aliases.h"

#include "compiler/compiler.h"
#include "compiler/graph.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {
namespace {

struct Alias {
  const char* name;
  int layers, hidden, heads, ffn, vocab;
};

const Alias kAliases[] = {
    {"bert-base", 12, 768, 12, 3072, 30522},
    {"bert-large", 24, 1024, 16, 4096, 30522},
};

}  // namespace

std::string default_optimizer(const std::string& model) {
  const std::string name = model.substr(0, model.find(':'));
  for (const Alias& a : kAliases) {
    if (name == a.name) return "sgd:lr=0.01";
  }
  return CompileOptions().optimizer;
}

std::string expand_model_alias(const std::string& model) {
  const std::string name = model.substr(0, model.find(':'));
  for (const Alias& a : kAliases) {
    if (name != a.name) continue;
    // TemplateSpec gives the same key=value syntax and messages as the templates themselves.
    TemplateSpec spec(model);
    const int64_t seq = spec.integer("seq", 1, 512);
    const int64_t classes = spec.integer("classes", 1, 2);
    const float dropout = spec.real("dropout", 0.0f, 1.0f, 0.0f);
    spec.reject_unused();
    std::string out = "transformer:layers=" + std::to_string(a.layers) +
                      ",hidden=" + std::to_string(a.hidden) + ",heads=" + std::to_string(a.heads) +
                      ",ffn=" + std::to_string(a.ffn) + ",seq=" + std::to_string(seq) +
                      ",vocab=" + std::to_string(a.vocab) + ",classes=" + std::to_string(classes);
    // Keep the spelling the user gave for dropout, so the expanded string round-trips exactly.
    if (dropout > 0.0f) {
      const size_t at = model.find("dropout=");
      out += ",dropout=" + model.substr(at + 8, model.find(',', at) - (at + 8));
    }
    return out;
  }
  return model;
}

}  // namespace compiler
}  // namespace remat
