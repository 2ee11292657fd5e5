// NDLZ (codec 32): lossless LZ over the 4x4 or 8x8 byte cells of a 2-D block
// (plugin-codecs.md §2). Written from the format facts; no code of c-blosc2's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bytes.h"

namespace blosc2fs {

// Decodes one NDLZ stream. `cell` is the chunk's compcode_meta (4 or 8). The stream
// carries its own 2-D shape b0 x b1, whose b0*b1 must equal out.size(). Every
// reference and literal is range-checked; throws FormatError saying what is wrong.
void ndlz_decode(ByteSpan in, MutableByteSpan out, uint8_t cell);

// Encodes a b0 x b1 byte block (in.size() == b0*b1) as one NDLZ stream that
// c-blosc2 decodes. Returns the stream's size, or 0 when it would not fit in `out`
// or not come out smaller than the input (the caller then stores the block raw).
// Throws FormatError for a cell other than 4 or 8 or a shape that does not match.
size_t ndlz_encode(ByteSpan in, int32_t b0, int32_t b1, uint8_t cell, MutableByteSpan out);

}  // namespace blosc2fs
