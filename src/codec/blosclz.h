// BloscLZ, Blosc's own LZ77 codec (FastLZ style), written from the format description.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blosc2fs {

// Decompresses exactly into dst[0, dst_size). Returns the number of bytes written,
// or -1 when the input is malformed or would overflow dst.
int blosclz_decompress(const uint8_t* src, size_t src_size, uint8_t* dst, size_t dst_size);

// Compresses src; returns the compressed size, or 0 when the result would not fit in
// dst_capacity (the caller then stores the data raw).
int blosclz_compress(int clevel, const uint8_t* src, size_t src_size, uint8_t* dst, size_t dst_capacity);

}  // namespace blosc2fs
