// The n-dimensional cell filters: NDCELL (filter 32, lossless reordering into
// cells) and NDMEAN (filter 33, lossy: every cell replaced by its mean), run on a
// whole block of the b2nd block shape (plugin-codecs.md §4, §5).
#pragma once

#include <cstdint>

#include "block_geometry.h"
#include "bytes.h"

namespace blosc2fs {

inline constexpr uint8_t kFilterNdcell = 32;
inline constexpr uint8_t kFilterNdmean = 33;

// Each takes a whole block: in.size() == out.size() == prod(blockshape) * typesize,
// `in` and `out` distinct. `meta` is the filter's filters_meta byte. Throws
// FormatError when the geometry or meta does not fit, as c-blosc2 refuses it
// (NDMEAN's decode also fails where c-blosc2's own does, see §5).
void ndcell_decode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& geometry);
void ndcell_encode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& geometry);
void ndmean_decode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& geometry);
void ndmean_encode(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& geometry);

}  // namespace blosc2fs
