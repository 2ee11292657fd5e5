// The reversible filters of the Blosc pipeline other than the shuffles.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blosc2fs {

// Delta: XOR each word with the matching word of the reference block (or, in the
// reference block itself, with the previous word). Word size follows typesize:
// 1, 2, 4, 8 as is; multiples of 8 use 8; anything else uses bytes. Trailing
// bytes that do not fill a word are left untouched.
// `is_reference` is true for block 0 (offset 0) and for VL blocks.
// encode: src and dst distinct; reference unused (may be null) when is_reference.
void delta_encode(const uint8_t* reference, const uint8_t* src, uint8_t* dst, size_t size, size_t typesize,
                  bool is_reference);
void delta_decode(const uint8_t* reference, uint8_t* data, size_t size, size_t typesize, bool is_reference);

// Bytedelta (filter 35; 34 is the same on a scalar build): per byte channel of
// size/typesize bytes, differences mod 256; trailing size % typesize bytes verbatim.
// typesize is the channel count (the header's filters_meta, or the chunk typesize
// when that is 0); 0 here is treated as 1. Decode may run in place (src == dst);
// encode needs distinct buffers.
void bytedelta_encode(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bytedelta_decode(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

// Truncate precision of float32/float64 items to `prec_bits` mantissa bits (lossy;
// decode is a copy). Negative prec_bits removes that many bits instead.
// Returns false when typesize is not 4 or 8 or the precision is out of range.
bool trunc_prec(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize, int prec_bits);

// INT_TRUNC (filter 36) forward: zero the low bits of each item read as an unsigned
// integer of typesize 1, 2, 4 or 8 bytes: `bits` >= 0 keeps that many high bits,
// < 0 zeroes -bits low bits (the filters_meta byte read as int8). Lossy; decode is a
// copy. Returns false for other typesizes or a count that leaves no bit.
bool int_trunc(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize, int bits);

}  // namespace blosc2fs
