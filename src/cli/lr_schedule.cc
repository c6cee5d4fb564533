// Learning-rate schedules of `remat train`, in double, rounded once to the float the kernels use.
#include "cli/lr_schedule.h"

#include <cmath>
#include <cstdlib>

#include "cli/cli_args.h"

namespace remat {
namespace cli {

float LrSchedule::at(double base, int64_t step, int64_t total) const {
  if (step < warmup)
    return static_cast<float>(base * static_cast<double>(step + 1) / static_cast<double>(warmup));
  const double span = static_cast<double>(total - warmup);
  // At or past the end (a run resumed with fewer --steps) the decay stays at its end.
  const double done = span > 0 ? std::fmin(static_cast<double>(step - warmup) / span, 1.0) : 1.0;
  switch (decay) {
    case Decay::kConstant: return static_cast<float>(base);
    case Decay::kCosine:
      return static_cast<float>(min + (base - min) * (1.0 + std::cos(M_PI * done)) / 2.0);
    case Decay::kLinear: return static_cast<float>(base + (min - base) * done);
  }
  return static_cast<float>(base);
}

LrSchedule parse_lr_schedule(const std::string& text) {
  const std::string what = "--lr-schedule '" + text + "': ";
  LrSchedule s;
  size_t at = text.find(',');
  const std::string kind = text.substr(0, at);
  if (kind == "constant") {
    s.decay = LrSchedule::Decay::kConstant;
  } else if (kind == "cosine") {
    s.decay = LrSchedule::Decay::kCosine;
  } else if (kind == "linear") {
    s.decay = LrSchedule::Decay::kLinear;
  } else {
    throw UsageError(what + "unknown schedule '" + kind + "' (constant, cosine, linear)");
  }
  while (at != std::string::npos) {
    const size_t next = text.find(',', at + 1);
    const std::string item =
        text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    at = next;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq),
                      value = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* end = nullptr;
    if (key == "warmup") {
      const long long w = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || w < 0 || w > INT32_MAX)
        throw UsageError(what + "warmup=" + value + " is not a step count");
      s.warmup = w;
    } else if (key == "min") {
      const double m = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(m >= 0) || !std::isfinite(m))
        throw UsageError(what + "min=" + value + " is not a rate >= 0");
      s.min = m;
    } else {
      throw UsageError(what + "unknown key '" + key + "' (warmup, min)");
    }
  }
  return s;
}

}  // namespace cli
}  // namespace remat
