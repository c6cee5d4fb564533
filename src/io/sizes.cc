// Byte sizes in and out (sizes.h).
#include "io/sizes.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "io/errors.h"

namespace remat {
namespace io {

uint64_t parse_size(const std::string& text, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(text.c_str(), &end);
  const std::string unit(end ? end : "");
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024.0;
  else if (unit == "GiB")
    scale = 1024.0 * 1024.0 * 1024.0;
  else if (unit == "TiB")
    scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else if (unit == "KB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "TB")
    scale = 1e12;
  const double bytes = number * scale;
  if (text.empty() || end == text.c_str() || errno != 0 || scale == 0 || !std::isfinite(bytes) ||
      bytes < 0 || bytes > 1.8e19) {
    throw UsageError(what + " '" + text +
                     "': expected a size such as 4096, 64KiB, 1.5MiB, 2GiB or 1TiB");
  }
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  char buffer[64];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0)
    std::snprintf(buffer, sizeof(buffer), "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buffer, sizeof(buffer), "%.2f %s", v, units[u]);
  return buffer;
}

}  // namespace io
}  // namespace remat
