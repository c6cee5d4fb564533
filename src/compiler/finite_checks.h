// The non-finite guard a plan carries: which finite_check ops the compiler puts where.
#ifndef REMAT_COMPILER_FINITE_CHECKS_H_
#define REMAT_COMPILER_FINITE_CHECKS_H_

#include <string>

namespace remat {
namespace compiler {

/// Where a plan checks that the loss and the gradients are finite (docs/nonfinite.md).
enum class FiniteChecks {
  /// No checks: a NaN or an infinity reaches the parameters.
  kOff,
  /// The loss after the forward pass, each gradient just before its own update. A non-finite
  /// loss skips every update; a non-finite gradient skips its update and every later one of
  /// the step, while the updates before it (parameters nearer the output, whose gradients are
  /// finished first) stay applied. Costs no memory.
  kOn,
  /// The same checks, and every update waits for the last of them: any non-finite value leaves
  /// every parameter and optimizer state as it was. Gradients then live until the end of the
  /// backward pass, which costs up to the parameters' size in arena.
  kAtomic,
};

/// "off", "on" or "atomic".
const char* finite_checks_name(FiniteChecks checks);

/// Parses "off", "on" or "atomic"; returns false on anything else.
bool parse_finite_checks(const std::string& text, FiniteChecks* out);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_FINITE_CHECKS_H_
