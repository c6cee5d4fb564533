// CRC32C, reflected, polynomial 0x82F63B78, one table lookup per byte.
#include "plan/crc32c.h"

namespace remat {
namespace {

struct Table {
  uint32_t entry[256];
};

constexpr Table make_table() {
  Table t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t.entry[i] = c;
  }
  return t;
}

constexpr Table kTable = make_table();

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < bytes; ++i) crc = kTable.entry[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace remat
