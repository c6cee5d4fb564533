// `remat train --lr-schedule`: linear warmup, then a constant, cosine or linear learning rate.
#ifndef REMAT_CLI_LR_SCHEDULE_H_
#define REMAT_CLI_LR_SCHEDULE_H_

#include <stdint.h>

#include <string>

namespace remat {
namespace cli {

/// A learning-rate schedule over a run of |total| steps, as torch.optim.lr_scheduler computes
/// it (docs/cli.md): for step s (counted from 0) and the plan's rate `base`,
///   s < warmup:  base * (s + 1) / warmup         LinearLR(1/warmup, 1.0, total_iters=warmup-1)
///   otherwise, t = s - warmup, T = total - warmup:
///     constant:  base
///     cosine:    min + (base - min) * (1 + cos(pi * t / T)) / 2   CosineAnnealingLR(T, min)
///     linear:    base + (min - base) * t / T                      LinearLR(1, min/base, T)
struct LrSchedule {
  enum class Decay { kConstant, kCosine, kLinear };
  Decay decay = Decay::kConstant;
  int64_t warmup = 0;  ///< Steps of linear warmup.
  double min = 0.0;    ///< The rate cosine and linear decay end at.

  /// The rate of step |step| of a run of |total| steps that starts from rate |base|.
  float at(double base, int64_t step, int64_t total) const;
};

/// Parses "constant|cosine|linear[,warmup=W][,min=M]"; throws UsageError naming
/// --lr-schedule and the bad part.
LrSchedule parse_lr_schedule(const std::string& text);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_LR_SCHEDULE_H_
