// A plan's checksum (plan.fbs, Plan.checksum): the CRC32C of its bytes with the 4 bytes of the
// field itself taken as zero, so that a plan carries the checksum of everything it holds,
// trailing bytes included. The compiler seals a plan once it is written; the runtime checks it
// at remat_plan_open, after the FlatBuffers verifier (which makes the field safe to locate).
#ifndef REMAT_PLAN_CHECKSUM_H_
#define REMAT_PLAN_CHECKSUM_H_

#include <stddef.h>
#include <stdint.h>

namespace remat {

/// Byte offset of the checksum field in the plan |bytes| (a buffer the FlatBuffers verifier
/// accepted), or false when the plan has no such field.
bool plan_checksum_offset(const uint8_t* bytes, size_t* out_offset);

/// The CRC32C of the |size| plan bytes at |bytes| with the 4 bytes at |offset| taken as zero.
uint32_t plan_checksum(const uint8_t* bytes, size_t size, size_t offset);

/// Writes plan_checksum() into the checksum field of the plan |bytes| (which must have one):
/// what the compiler does last, and a test after it edited a plan's bytes.
void seal_plan(uint8_t* bytes, size_t size);

}  // namespace remat

#endif  // REMAT_PLAN_CHECKSUM_H_
