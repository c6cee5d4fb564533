// Command-line parsing shared by the subcommands: flags, sizes with units, usage errors.
#ifndef REMAT_CLI_CLI_ARGS_H_
#define REMAT_CLI_CLI_ARGS_H_

#include <stdint.h>

#include <map>
#include <string>
#include <vector>

#include "io/errors.h"
#include "io/sizes.h"

namespace remat {
namespace cli {

// The CLI's errors and sizes are the io library's (io/errors.h, io/sizes.h).
using io::Failure;
using io::format_bytes;
using io::parse_size;
using io::UsageError;

/// Parsed arguments of one subcommand: positionals and --flags (with or without values).
class Args {
 public:
  /// Parses |argv| (after the subcommand). |valued| lists flags that take a value, |switches|
  /// those that do not; anything else is a UsageError.
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& valued,
       const std::vector<std::string>& switches);
  /// Positional arguments in order.
  const std::vector<std::string>& positional() const { return positional_; }
  /// Whether |flag| was given.
  bool has(const std::string& flag) const { return values_.count(flag) != 0; }
  /// The value of |flag|, or |fallback|.
  std::string text(const std::string& flag, const std::string& fallback) const;
  /// The value of |flag| as an integer in [|min|, |max|], or |fallback|.
  int64_t integer(const std::string& flag, int64_t min, int64_t max, int64_t fallback) const;
  /// The value of |flag| as a positive finite number ("8e9"), or |fallback|.
  double real(const std::string& flag, double fallback) const;
  /// The value of |flag| as a size in bytes ("512", "64KiB", "1.5MiB", "2GiB", "1TiB"), or
  /// |fallback|.
  uint64_t size(const std::string& flag, uint64_t fallback) const;

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::string> values_;
};

/// The most bytes a plan file may hold: FlatBuffers' largest buffer (2 GiB - 1).
constexpr uint64_t kMaxPlanFileBytes = (uint64_t{1} << 31) - 1;

/// The bytes of the plan file at |path|; throws Failure naming |path| and the reason when it
/// cannot be read, is a directory or empty, or holds more than kMaxPlanFileBytes (a pipe or a
/// device is read no further). Bytes whose first 8 lack the plan identifier are returned as
/// soon as that shows, for the runtime to refuse them with its message.
std::vector<uint8_t> read_plan_file(const std::string& path);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_CLI_ARGS_H_
