// Our own decoder of zfp's lossy (non-reversible) streams, bit-exact with libzfp
// 1.0.0's zfp_decompress: libzfp as Debian builds it reads its stream a byte at a
// time, which made it the slowest part of reading a ZFP frame. libzfp still
// encodes (zfp_codec.cc), and the unit tests hold this decoder to it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "bytes.h"

namespace blosc2fs {

// zfp's limits (zfp.h), which the stream's parameters default to.
inline constexpr uint32_t kZfpMinBits = 1;
inline constexpr uint32_t kZfpMaxBits = 16658;
inline constexpr uint32_t kZfpMaxPrec = 64;
inline constexpr int32_t kZfpMinExp = -1074;

// The four numbers of a zfp_stream that decide how a block was coded.
struct ZfpMode {
  uint32_t minbits = kZfpMinBits;  // a block takes at least these bits
  uint32_t maxbits = kZfpMaxBits;  // and at most these
  uint32_t maxprec = kZfpMaxPrec;  // bit planes coded at most
  int32_t minexp = kZfpMinExp;     // bit planes below 2^minexp are not coded
};

// The modes zfp_stream_set_accuracy / _precision / _rate (unaligned) set.
ZfpMode zfp_accuracy_mode(double tolerance);
ZfpMode zfp_precision_mode(uint32_t precision);
ZfpMode zfp_rate_mode(double bits_per_value, bool doubles, int ndim);

struct ZfpFieldShape {
  bool doubles = false;                  // items are doubles, else floats
  int ndim = 1;                          // 1..4
  std::array<size_t, 4> size{1, 1, 1, 1};  // x (fastest, contiguous), y, z, w; each >= 1
};

// Decodes a whole field, stored contiguously in `out` (any alignment; its size is
// the field's items times 4 or 8), from a stream without zfp header, block after
// block in zfp_decompress's order. Bits past the end of `stream` read as zeros;
// returns false, with `out` partly written, as soon as a block ends past it.
// Throws nothing and allocates nothing.
bool zfp_decode_field(const ZfpMode& mode, const ZfpFieldShape& field, ByteSpan stream, uint8_t* out);

}  // namespace blosc2fs
