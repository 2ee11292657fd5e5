// The Blosc chunk header (Blosc1 16-byte and Blosc2 32-byte forms) and the
// numbering of codecs, filters and special values as the format stores them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bytes.h"

namespace blosc2fs {

// Codec ids as the frame header (low nibble of codec_flags, or its udcodec byte for
// plugins) and the library API number them: the codecs this library encodes.
// lz4hc has its own id here but shares compformat 1 inside chunks. The plugin
// codecs need a frame's b2nd block shape (CompressParams::geometry).
enum class Codec : uint8_t {
  blosclz = 0, lz4 = 1, lz4hc = 2, zlib = 4, zstd = 5,
  ndlz = 32, zfp_accuracy = 33, zfp_precision = 34, zfp_rate = 35,
};
// The stream codecs, in id order: those a new frame can be created with.
inline constexpr Codec kCodecs[] = {Codec::blosclz, Codec::lz4, Codec::lz4hc, Codec::zlib, Codec::zstd};
// True for the plugin codecs (ids 32 and up), which chunks record as compformat 6.
inline constexpr bool is_plugin_codec(Codec c) { return uint8_t(c) >= 32; }

// Codec ids as a chunk header stores them (flags bits 5-7).
enum class ChunkCompformat : uint8_t { blosclz = 0, lz4 = 1, snappy = 2, zlib = 3, zstd = 4, user = 6 };
// Lizard, compformat 5 in chunks written before c-blosc2 2.0.0 (legacy-layouts.md):
// removed since, no maintained library decodes it.
inline constexpr uint8_t kCompformatLizard = 5;

enum FilterId : uint8_t {
  kFilterNone = 0,
  kFilterShuffle = 1,
  kFilterBitshuffle = 2,
  kFilterDelta = 3,
  kFilterTruncPrec = 4,
  kFilterBytedeltaBuggy = 34,
  kFilterBytedelta = 35,
  kFilterIntTrunc = 36,
};

// Split modes as the library API numbers them (frame header stores mode-1).
enum class SplitMode : uint8_t { always = 1, never = 2, automatic = 3, forward_compat = 4 };

// Special-value kinds (blosc2_flags bits 4-6; also the index-entry encodings).
enum class Special : uint8_t { none = 0, zeros = 1, nan = 2, value = 3, uninit = 4 };

const char* codec_name(Codec c);                 // "blosclz", "lz4", ...; "unknown"
std::optional<Codec> codec_named(std::string_view name);  // the inverse of codec_name
const char* compformat_name(uint8_t compformat);  // "blosclz", "lz4", "zlib", "zstd", "user", ...
const char* special_name(Special s);              // "none", "zeros", "nan", "value", "uninit"
std::string filter_name(uint8_t id);              // "shuffle", "bytedelta", "filter-160", ... (codec_registry)

inline constexpr int kMaxFilters = 6;
inline constexpr int kExtendedHeaderSize = 32;
inline constexpr int kBlosc1HeaderSize = 16;
inline constexpr int32_t kMaxBlocksize = 536866816;

// Header flag bits (byte 2).
inline constexpr uint8_t kFlagShuffle = 0x01;
inline constexpr uint8_t kFlagMemcpyed = 0x02;
inline constexpr uint8_t kFlagBitshuffle = 0x04;
inline constexpr uint8_t kFlagDelta = 0x08;
inline constexpr uint8_t kFlagDontSplit = 0x10;
// blosc2_flags bits (byte 31).
inline constexpr uint8_t kBlosc2UseDict = 0x01;
inline constexpr uint8_t kBlosc2BigEndian = 0x02;
inline constexpr uint8_t kBlosc2Lazy = 0x08;
// blosc2_flags2 bits (byte 30).
inline constexpr uint8_t kFlags2VlBlocks = 0x01;

struct ChunkHeader {
  uint8_t version = 0;    // chunk format version: 1,2 Blosc1; 3 alpha; 4 beta; 5 stable; 6 VL-blocks
  uint8_t versionlz = 0;
  uint8_t flags = 0;
  uint8_t typesize = 0;
  int32_t nbytes = 0;
  int32_t blocksize = 0;  // for VL-block chunks: the number of blocks
  int32_t cbytes = 0;
  std::array<uint8_t, kMaxFilters> filters{};       // resolved pipeline (Blosc1 flags mapped)
  std::array<uint8_t, kMaxFilters> filters_meta{};
  uint8_t udcompcode = 0;
  uint8_t compcode_meta = 0;
  uint8_t flags2 = 0;        // byte 30
  uint8_t blosc2_flags = 0;  // byte 31
  bool extended = false;     // 32-byte Blosc2 header

  int header_size() const { return extended ? kExtendedHeaderSize : kBlosc1HeaderSize; }
  bool memcpyed() const { return flags & kFlagMemcpyed; }
  bool dont_split() const { return flags & kFlagDontSplit; }
  uint8_t compformat() const { return flags >> 5; }
  bool vlblocks() const { return extended && (flags2 & kFlags2VlBlocks); }
  bool use_dict() const { return extended && (blosc2_flags & kBlosc2UseDict); }
  bool lazy() const { return extended && (blosc2_flags & kBlosc2Lazy); }
  Special special() const { return extended ? Special((blosc2_flags >> 4) & 7) : Special::none; }
  // Number of blocks (for VL-block chunks the header stores it directly).
  int32_t nblocks() const;
  // Codec name of the chunk's compformat/udcompcode ("lz4", "zstd", "codec-32", ...).
  std::string codec_label() const;
  // Filter pipeline as text, e.g. "shuffle" or "delta,shuffle" or "none".
  std::string filters_label() const;
};

// Parses and validates a chunk header. `chunk` may be longer than the header
// (the whole chunk or more); only header consistency is checked here:
// version, sizes in range, cbytes >= header size, blocksize rules, specials.
// Throws FormatError with a message on anything inconsistent.
ChunkHeader parse_chunk_header(ByteSpan chunk);

}  // namespace blosc2fs
