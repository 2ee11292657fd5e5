// ZFP in fixed-accuracy (codec 33), fixed-precision (34) and fixed-rate (35) mode,
// through libzfp: one headerless zfp bitstream per block, its parameters rebuilt
// from compcode_meta, the frame's typesize and the b2nd block shape
// (plugin-codecs.md §3).
#pragma once

#include <cstddef>
#include <cstdint>

#include "block_geometry.h"
#include "bytes.h"

namespace blosc2fs {

inline constexpr uint8_t kCodecZfpAccuracy = 33;
inline constexpr uint8_t kCodecZfpPrecision = 34;
inline constexpr uint8_t kCodecZfpRate = 35;

// Decodes one stream into out (out.size() == the block's bytes). Needs typesize 4
// or 8, 1..4 block dimensions and prod(blockshape) * typesize <= out.size(); the
// bytes of out past the field are zeroed (c-blosc2 leaves them as they were).
// Bytes past the end of the zfp data are ignored, as c-blosc2 ignores them.
// Throws FormatError (a stream ending before the field does, no block shape, a
// dimension < 1, a field larger than out) or UnsupportedError (typesize, more than
// 4 dimensions or a codec id zfp cannot take).
void zfp_decode(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry& geometry);

// Encodes one whole block (in.size() == prod(blockshape) * typesize) into out, as
// c-blosc2's writer does, to the same bytes (a multiple of 8). Returns the stream
// size, or 0 (stored raw then) where that writer stores raw or fails: the input
// is not exactly one block, a block dimension is below 4, the geometry is one
// zfp_decode refuses, the rate meta is above 100, or the result would not fit in
// `out` or not be smaller than the input.
size_t zfp_encode(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry& geometry);

}  // namespace blosc2fs
