// CRC32C, reflected, polynomial 0x82F63B78: one table lookup per byte, or, in a build for small
// flash (REMAT_SMALL_FLASH, firmware), eight shifts per byte without the 1 KB table (about 8
// times the instructions, for the plan at open and the state files a firmware saves or loads).
#include "plan/crc32c.h"

namespace remat {
namespace {

#if !defined(REMAT_SMALL_FLASH)
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
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(REMAT_SMALL_FLASH)
  for (size_t i = 0; i < bytes; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
#else
  for (size_t i = 0; i < bytes; ++i) crc = kTable.entry[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
#endif
  return ~crc;
}

}  // namespace remat
