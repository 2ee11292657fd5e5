#include "crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace blosc2fs {

namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // reflected 0x1EDC6F41

// tables[k][b]: the CRC of byte b followed by k zero bytes (slicing by 8).
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = c & 1 ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}
constexpr auto kTables = make_tables();

uint32_t crc32c_tables(uint32_t crc, const uint8_t* p, size_t n) {
  for (; n >= 8; n -= 8, p += 8) {
    const uint32_t lo = load_le32(p) ^ crc, hi = load_le32(p + 4);
    crc = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^ kTables[4][lo >> 24] ^
          kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^ kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
  }
  for (; n > 0; --n, ++p) crc = (crc >> 8) ^ kTables[0][(crc ^ *p) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
// One 8-byte word per instruction: 8 bytes every 3 cycles (its latency), some
// 8 GB/s, a 1 MiB block in about 0.13 ms; interleaving streams would go faster
// but the disk cache's reads cost more than that already.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  for (; n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0; --n, ++p) crc = _mm_crc32_u8(crc, *p);
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  crc = uint32_t(c);
  for (; n > 0; --n, ++p) crc = _mm_crc32_u8(crc, *p);
  return crc;
}

bool has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, ByteSpan data) {
  crc = ~crc;
#if defined(__x86_64__)
  if (has_sse42()) return ~crc32c_sse42(crc, data.data(), data.size());
#endif
  return ~crc32c_tables(crc, data.data(), data.size());
}

uint32_t crc32c_portable(uint32_t crc, ByteSpan data) { return ~crc32c_tables(~crc, data.data(), data.size()); }

}  // namespace blosc2fs
