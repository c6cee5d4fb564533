// Names of the non-finite guard's settings, as the CLI takes them.
#include "compiler/finite_checks.h"

namespace remat {
namespace compiler {

const char* finite_checks_name(FiniteChecks checks) {
  switch (checks) {
    case FiniteChecks::kOff: return "off";
    case FiniteChecks::kOn: return "on";
    case FiniteChecks::kAtomic: return "atomic";
  }
  return "?";
}

bool parse_finite_checks(const std::string& text, FiniteChecks* out) {
  for (FiniteChecks c : {FiniteChecks::kOff, FiniteChecks::kOn, FiniteChecks::kAtomic}) {
    if (text == finite_checks_name(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

}  // namespace compiler
}  // namespace remat
