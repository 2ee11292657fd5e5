// CRC-32C (Castagnoli, the iSCSI/ext4 polynomial) of the disk cache's entries:
// the SSE4.2 instruction where the CPU has it (several GB/s), else a
// table-driven loop. crc32c(crc32c(0, a), b) == crc32c(0, a + b).
#pragma once

#include <cstdint>

#include "bytes.h"

namespace blosc2fs {

uint32_t crc32c(uint32_t crc, ByteSpan data);
// The table-driven loop alone (what CPUs without SSE4.2 run), for the tests.
uint32_t crc32c_portable(uint32_t crc, ByteSpan data);

}  // namespace blosc2fs
