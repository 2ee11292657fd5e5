// Byte shuffle and bit shuffle, with SSE2/AVX2 paths picked at run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blosc2fs {

// Byte shuffle of `size` bytes as items of `typesize` bytes: byte k of every item
// goes to stream k. The trailing size % typesize bytes are copied verbatim.
void shuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void unshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

// Bit shuffle (the bitshuffle library's transform) over floor(n/8)*8 items,
// n = size / typesize; leftover bytes are copied verbatim.
void bitshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitunshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

// Which implementation the run-time dispatch chose ("avx2", "sse2", "scalar").
const char* shuffle_implementation();

}  // namespace blosc2fs
