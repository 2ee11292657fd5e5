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
// plugin `codec_id` lays out its samples. The image size, components and precision
// are checked against out.size() before any buffer is sized from the codestream.
// Throws FormatError (bad or mismatched codestream) or UnsupportedError (a
// codestream OpenJPEG cannot decode, such as precision above 31 bits).
void jpeg2000_decode(uint8_t codec_id, ByteSpan in, MutableByteSpan out);

}  // namespace blosc2fs
