// Parsing of template strings and dispatch to the template builders.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "compiler/templates/aliases.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {

TemplateSpec::TemplateSpec(const std::string& text) : text_(text) {
  const size_t colon = text.find(':');
  name_ = text.substr(0, colon);
  if (name_.empty()) throw CompileError("model '" + text + "': missing template name");
  if (colon == std::string::npos) return;
  size_t at = colon + 1;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw CompileError("model '" + text + "': expected key=value, got '" + item + "'");
    }
    const std::string key = item.substr(0, eq);
    if (values_.count(key))
      throw CompileError("model '" + text + "': key '" + key + "' given twice");
    values_[key] = item.substr(eq + 1);
    at = comma + 1;
  }
}

int64_t TemplateSpec::integer(const std::string& key, int64_t min, int64_t fallback) {
  auto it = values_.find(key);
  if (it == values_.end()) {
    if (fallback >= 0) return fallback;
    throw CompileError("model '" + text_ + "': missing " + key + "=N");
  }
  used_[key] = true;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > (1LL << 31)) {
    throw CompileError("model '" + text_ + "': " + key + "=" + it->second +
                       " is not an integer in [" + std::to_string(min) + ", 2^31]");
  }
  return v;
}

int64_t TemplateSpec::integer_up_to(const std::string& key, int64_t min, int64_t limit,
                                    const std::string& what) {
  const int64_t v = integer(key, min);
  if (v > limit) {
    throw CompileError("model '" + text_ + "': " + key + "=" + std::to_string(v) +
                       " is over the limit of " + std::to_string(limit) + " (" + what +
                       "; docs/templates.md, \"Limits\")");
  }
  return v;
}

std::vector<int64_t> TemplateSpec::dims(const std::string& key, size_t min_count, size_t max_count,
                                        const std::string& form) {
  auto it = values_.find(key);
  if (it == values_.end()) throw CompileError("model '" + text_ + "': missing " + key + "=" + form);
  used_[key] = true;
  std::vector<int64_t> out;
  const std::string& text = it->second;
  size_t at = 0;
  while (true) {
    size_t x = text.find('x', at);
    if (x == std::string::npos) x = text.size();
    const std::string part = text.substr(at, x - at);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || errno != 0 || *end != '\0' || v < 1 || v > (1LL << 31)) {
      throw CompileError("model '" + text_ + "': " + key + "=" + text + " is not of the form " +
                         form + " with integers in [1, 2^31]");
    }
    out.push_back(v);
    if (x == text.size()) break;
    at = x + 1;
  }
  if (out.size() < min_count || out.size() > max_count) {
    throw CompileError("model '" + text_ + "': " + key + "=" + text + " has " +
                       std::to_string(out.size()) + " values, expected " +
                       (min_count == max_count
                            ? std::to_string(min_count)
                            : std::to_string(min_count) + " to " + std::to_string(max_count)) +
                       " (" + form + ")");
  }
  return out;
}

float TemplateSpec::real(const std::string& key, float lo, float hi, float fallback) {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  used_[key] = true;
  char* end = nullptr;
  const float v = std::strtof(it->second.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || v < lo || v >= hi) {
    throw CompileError("model '" + text_ + "': " + key + "=" + it->second +
                       " is not a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       ")");
  }
  return v;
}

void TemplateSpec::reject_unused() const {
  for (const auto& kv : values_) {
    if (!used_.count(kv.first)) {
      throw CompileError("model '" + text_ + "': unknown key '" + kv.first + "' for template '" +
                         name_ + "'");
    }
  }
}

Graph build_template(const std::string& text, int64_t batch, AttentionKernel attention) {
  if (batch < 1 || batch > (1 << 24)) {
    throw CompileError("batch " + std::to_string(batch) + " is not in [1, 2^24]");
  }
  TemplateSpec spec(expand_model_alias(text));
  Graph graph;
  if (spec.name() == "mlp") {
    graph = build_mlp(spec, batch);
  } else if (spec.name() == "resmlp") {
    graph = build_resmlp(spec, batch);
  } else if (spec.name() == "transformer") {
    graph = build_transformer(spec, batch, attention);
  } else if (spec.name() == "cnn") {
    graph = build_cnn(spec, batch);
  } else if (spec.name() == "resnet") {
    graph = build_resnet(spec, batch);
  } else if (spec.name() == "dscnn") {
    graph = build_dscnn(spec, batch);
  } else {
    throw CompileError("model '" + text + "': unknown template '" + spec.name() +
                       "' (templates: mlp, resmlp, transformer, cnn, resnet, dscnn)");
  }
  spec.reject_unused();
  return graph;
}

}  // namespace compiler
}  // namespace remat
