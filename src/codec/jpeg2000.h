// The JPEG 2000 codecs of python-blosc2's plugins, decoded with OpenJPEG:
// OpenHTJ2K (36), Grok (37), J2K (39) and HTJ2K (40), JP2 files or raw
// codestreams, and the float frame of J2K/HTJ2K (plugin-codecs.md §7). Decode only.
#pragma once

#include <cstdint>

#include "bytes.h"

namespace blosc2fs {

inline constexpr uint8_t kCodecOpenHtj2k = 36;
inline constexpr uint8_t kCodecGrok = 37;
inline constexpr uint8_t kCodecJ2k = 39;
inline constexpr uint8_t kCodecHtj2k = 40;

// Decodes one block into out (out.size() == the block's bytes), laid out as the
// plugin `codec_id` lays out its samples:
//   36 OpenHTJ2K: planar, each component's w*h samples as int32 LE; must fill out;
//   37 Grok, 39 J2K: pixel-interleaved, prec/8 low bytes per sample of each component;
//   40 HTJ2K: pixel-interleaved, 1 byte per sample if every component has at most
//      8 bits, else 2.
// A smaller image (37, 39, 40) leaves zeros after it, as the plugins do. J2K and
// HTJ2K blocks may be a float frame ("B2JPF32\0" header, then a JP2 file or
// codestream of quantised samples), decoded to float32 as the plugin scales them.
// The image size, components, precision and tiles are checked against out.size()
// before any buffer is sized from the codestream. Throws FormatError (bad or
// mismatched codestream, or OpenJPEG failing on it) or UnsupportedError (well
// formed but not decoded: samples above 31 bits, subsampled components, JP2
// palettes, more tiles or components than are taken).
void jpeg2000_decode(uint8_t codec_id, ByteSpan in, MutableByteSpan out);

}  // namespace blosc2fs
