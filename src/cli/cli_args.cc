// Flag parsing, size units and bounded plan-file reading for the CLI.
#include "cli/cli_args.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace remat {
namespace cli {

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& valued,
           const std::vector<std::string>& switches) {
  auto is = [](const std::vector<std::string>& list, const std::string& f) {
    return std::find(list.begin(), list.end(), f) != list.end();
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a.compare(0, 2, "--") != 0 || a == "--") {
      if (a.size() > 1 && a[0] == '-' && a != "-o") {
        throw UsageError("unknown option '" + a + "'");
      }
      if (a == "-o") {
        if (i + 1 >= argv.size()) throw UsageError("-o needs a file name");
        values_["-o"] = argv[++i];
        continue;
      }
      positional_.push_back(a);
      continue;
    }
    std::string flag = a, value;
    const size_t eq = a.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (values_.count(flag)) throw UsageError("option '" + flag + "' given twice");
    if (is(valued, flag)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw UsageError("option '" + flag + "' needs a value");
        value = argv[++i];
      }
      values_[flag] = value;
    } else if (is(switches, flag) && !inline_value) {
      values_[flag] = "";
    } else {
      throw UsageError("unknown option '" + flag + "'");
    }
  }
}

std::string Args::text(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::integer(const std::string& flag, int64_t min, int64_t max, int64_t fallback) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || errno != 0 || *end != '\0' || v < min || v > max) {
    throw UsageError(flag + " " + it->second + ": expected an integer in [" + std::to_string(min) +
                     ", " + std::to_string(max) + "]");
  }
  return v;
}

double Args::real(const std::string& flag, double fallback) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(v) || !(v > 0)) {
    throw UsageError(flag + " " + it->second + ": expected a positive number such as 8e9");
  }
  return v;
}

uint64_t Args::size(const std::string& flag, uint64_t fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : parse_size(it->second, flag);
}

std::vector<uint8_t> read_plan_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    throw Failure("cannot open '" + path + "' for reading: " + std::strerror(errno));
  struct stat info;
  if (fstat(fileno(f), &info) != 0) {
    const int e = errno;
    std::fclose(f);
    throw Failure("cannot stat '" + path + "': " + std::strerror(e));
  }
  if (S_ISDIR(info.st_mode)) {
    std::fclose(f);
    throw Failure("'" + path + "' is a directory, not a remat plan");
  }
  if (S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > kMaxPlanFileBytes) {
    std::fclose(f);
    throw Failure("'" + path + "' is " + std::to_string(info.st_size) + " bytes, over the " +
                  std::to_string(kMaxPlanFileBytes) + " a plan can be (FlatBuffers' limit)");
  }
  // Read in chunks, never past kMaxPlanFileBytes (a pipe or a device has no size to trust), and
  // stop at once when the first 8 bytes lack the plan identifier.
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, bytes.size() < 8 ? 8 - bytes.size() : sizeof(buffer), f)) > 0) {
    bytes.insert(bytes.end(), buffer, buffer + n);
    if (bytes.size() == 8 && std::memcmp(bytes.data() + 4, "RMPL", 4) != 0) break;
    if (bytes.size() > kMaxPlanFileBytes) {
      std::fclose(f);
      throw Failure("'" + path + "' holds more than the " + std::to_string(kMaxPlanFileBytes) +
                    " bytes a plan can be (FlatBuffers' limit)");
    }
  }
  const int e = std::ferror(f) != 0 ? errno : 0;
  std::fclose(f);
  if (e != 0) throw Failure("error while reading '" + path + "': " + std::strerror(e));
  if (bytes.empty()) throw Failure("'" + path + "' is empty (0 bytes): not a remat plan");
  return bytes;
}

}  // namespace cli
}  // namespace remat
