// Byte sizes as people write them ("64KiB", "1.5MiB", "2GB") and as remat prints them.
#ifndef REMAT_IO_SIZES_H_
#define REMAT_IO_SIZES_H_

#include <stdint.h>

#include <string>

namespace remat {
namespace io {

/// Parses "N", "NKiB", "NMiB", "NGiB", "NTiB" (also KB/MB/GB/TB as powers of 1000, and a bare
/// "B"): N is a number as strtod reads it ("1.5", "2e9"), and a fractional byte count is cut
/// to whole bytes ("1.5" is 1). Throws UsageError naming |what| on anything else, a negative
/// number or one past 1.8e19 bytes.
uint64_t parse_size(const std::string& text, const std::string& what);

/// "1.50 MiB"-style rendering of |bytes|.
std::string format_bytes(uint64_t bytes);

}  // namespace io
}  // namespace remat

#endif  // REMAT_IO_SIZES_H_
