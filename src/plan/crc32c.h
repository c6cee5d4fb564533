// CRC32C (Castagnoli, the polynomial of iSCSI, ext4 and SSE4.2's crc32 instruction): the
// checksum of plans and of training states. Table-driven, 1 KiB of constants, no allocation.
#ifndef REMAT_PLAN_CRC32C_H_
#define REMAT_PLAN_CRC32C_H_

#include <stddef.h>
#include <stdint.h>

namespace remat {

/// The CRC32C of |bytes| bytes at |data|, continuing from |crc| (0 to start): so that
/// crc32c(crc32c(0, a), b) is the CRC32C of a followed by b. crc32c(0, "123456789", 9) is
/// 0xE3069283 (RFC 3720, B.4).
uint32_t crc32c(uint32_t crc, const void* data, size_t bytes);

}  // namespace remat

#endif  // REMAT_PLAN_CRC32C_H_
