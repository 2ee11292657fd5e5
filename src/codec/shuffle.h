// Byte shuffle and bit shuffle, with SSE2/AVX2 paths picked at run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blosc2fs {

// Byte shuffle of `size` bytes as items of `typesize` bytes: byte k of every item
// goes to stream k: dst[k*n + i] = src[i*typesize + k], n = size / typesize.
// The trailing size % typesize bytes are copied verbatim. src and dst must not overlap.
void shuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void unshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

// unshuffle() of n whole items whose byte stream k (n bytes) is at streams[k] rather
// than at src + k * n: lets a block decoder read the streams where they already are
// (stored raw inside the chunk, or decoded into scratch) without gathering them first.
// Writes n * typesize bytes to dst; no stream may overlap dst.
void unshuffle_streams(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize);

// Bit shuffle (the bitshuffle library's transform) over floor(n/8)*8 items,
// n = size / typesize; leftover bytes are copied verbatim.
// Layout: typesize*8 bit planes of m/8 bytes each (m = items transformed), plane
// (byte b, bit k) at index b*8 + k; bit k of byte b of item i sits at bit i%8 of
// byte i/8 of its plane. Verified against chunks written by c-blosc 1.17 to 2.x.
//
// For the chunk decoder, chunk format version 2 (Blosc1) follows older rules that
// this function does not apply itself:
// - a block whose item count n = bsize/typesize is not a multiple of 8 was stored
//   raw, not bit-shuffled: copy it;
// - otherwise c-blosc2 3.3.2 bit-unshuffles the n items but does NOT copy the
//   trailing bsize % typesize bytes (shuffle.c, bitunshuffle, version-2 branch): its
//   output keeps whatever the destination held. The reference fixtures show zeros
//   there (chunks/blosc-1.18.0-lz4-bitshuffle{4,8}-*.cdata, last 3 bytes), so zero
//   them to match (c-blosc 1.18+ itself copies the stream's tail bytes instead).
// typesize 0 is treated as 1. src and dst must not overlap.
void bitshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitunshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

// Which implementation the run-time dispatch chose ("avx2", "sse2", "scalar"),
// once per process. BLOSC2FS_NO_SIMD set to anything but "" or "0" forces "scalar".
const char* shuffle_implementation();

}  // namespace blosc2fs
