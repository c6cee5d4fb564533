// Computing, locating and writing a plan's checksum.
#include "plan/checksum.h"

#include <string.h>

#include "plan/crc32c.h"
#include "plan/plan_generated.h"

namespace remat {

bool plan_checksum_offset(const uint8_t* bytes, size_t* out_offset) {
  // The plan's root as a plain table, whose vtable says where (and whether) the field is.
  const flatbuffers::Table* root = flatbuffers::GetRoot<flatbuffers::Table>(bytes);
  const flatbuffers::voffset_t field = root->GetOptionalFieldOffset(fb::Plan::VT_CHECKSUM);
  if (field == 0) return false;
  *out_offset = static_cast<size_t>(reinterpret_cast<const uint8_t*>(root) + field - bytes);
  return true;
}

uint32_t plan_checksum(const uint8_t* bytes, size_t size, size_t offset) {
  static const uint8_t kZeros[4] = {0, 0, 0, 0};
  uint32_t crc = crc32c(0, bytes, offset);
  crc = crc32c(crc, kZeros, sizeof(kZeros));
  return crc32c(crc, bytes + offset + 4, size - offset - 4);
}

void seal_plan(uint8_t* bytes, size_t size) {
  size_t offset = 0;
  if (!plan_checksum_offset(bytes, &offset)) return;
  const uint32_t crc = plan_checksum(bytes, size, offset);
  // Little-endian, as FlatBuffers stores every scalar.
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<uint8_t>(crc >> (8 * i));
}

}  // namespace remat
