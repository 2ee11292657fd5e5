// Chunk header parsing and the names of codecs, filters and special values.
#include "chunk_format.h"

#include "codec_registry.h"
#include "error.h"

#include <string>

namespace blosc2fs {

namespace {

// Chunk format versions: 1-2 Blosc1, 3 c-blosc2 alpha, 4 beta, 5 stable, 6 VL blocks.
constexpr uint8_t kVersionAlpha = 3;
constexpr uint8_t kVersionNewest = 6;

[[noreturn]] void bad_header(const std::string& why) { throw FormatError("chunk header: " + why); }

}  // namespace

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::blosclz: return "blosclz";
    case Codec::lz4: return "lz4";
    case Codec::lz4hc: return "lz4hc";
    case Codec::zlib: return "zlib";
    case Codec::zstd: return "zstd";
    case Codec::ndlz: return "ndlz";
    case Codec::zfp_accuracy: return "zfp_acc";
    case Codec::zfp_precision: return "zfp_prec";
    case Codec::zfp_rate: return "zfp_rate";
  }
  return "unknown";
}

std::optional<Codec> codec_named(std::string_view name) {
  for (Codec c : kCodecs)
    if (name == codec_name(c)) return c;
  return std::nullopt;
}

const char* compformat_name(uint8_t compformat) {
  switch (compformat) {
    case 0: return "blosclz";
    case 1: return "lz4";
    case 2: return "snappy";
    case 3: return "zlib";
    case 4: return "zstd";
    case kCompformatLizard: return "lizard";
    case 6: return "user";
    default: return "unknown";
  }
}

const char* special_name(Special s) {
  switch (s) {
    case Special::none: return "none";
    case Special::zeros: return "zeros";
    case Special::nan: return "nan";
    case Special::value: return "value";
    case Special::uninit: return "uninit";
  }
  return "unknown";
}

std::string filter_name(uint8_t id) {
  if (id == kFilterNone) return "none";
  if (const FilterInfo* f = find_filter(id)) return f->name;
  return "filter-" + std::to_string(id);
}

int32_t ChunkHeader::nblocks() const {
  if (vlblocks()) return blocksize;
  if (nbytes <= 0 || blocksize <= 0) return 0;
  return int32_t((int64_t(nbytes) + blocksize - 1) / blocksize);
}

std::string ChunkHeader::codec_label() const { return chunk_codec_name(*this); }

std::string ChunkHeader::filters_label() const {
  std::string label;
  for (uint8_t id : filters) {
    if (id == kFilterNone) continue;
    if (!label.empty()) label += ',';
    label += filter_name(id);
  }
  return label.empty() ? "none" : label;
}

ChunkHeader parse_chunk_header(ByteSpan chunk) {
  if (chunk.size() < size_t(kBlosc1HeaderSize))
    bad_header("truncated: " + str(chunk.size()) + " bytes, need " + str(kBlosc1HeaderSize));
  const uint8_t* p = chunk.data();
  ChunkHeader h;
  h.version = p[0];
  h.versionlz = p[1];
  h.flags = p[2];
  h.typesize = p[3];
  h.nbytes = int32_t(load_le32(p + 4));
  h.blocksize = int32_t(load_le32(p + 8));
  h.cbytes = int32_t(load_le32(p + 12));
  h.extended = (h.flags & (kFlagShuffle | kFlagBitshuffle)) == (kFlagShuffle | kFlagBitshuffle);

  if (h.version == 0) bad_header("format version 0 does not exist");
  if (h.nbytes < 0) bad_header("negative nbytes " + str(h.nbytes));
  if (h.blocksize <= 0 || h.blocksize > kMaxBlocksize)
    bad_header("blocksize " + str(h.blocksize) + " is outside 1.." + str(kMaxBlocksize));
  if (h.typesize == 0) bad_header("typesize is 0");
  if (h.cbytes < h.header_size())
    bad_header("cbytes " + str(h.cbytes) + " is smaller than the " + str(h.header_size()) + "-byte header");

  if (!h.extended) {
    if (h.flags & kFlagShuffle) h.filters[5] = kFilterShuffle;
    if (h.flags & kFlagBitshuffle) h.filters[5] = kFilterBitshuffle;
    if (h.flags & kFlagDelta) h.filters[4] = kFilterDelta;
  } else {
    if (chunk.size() < size_t(kExtendedHeaderSize))
      bad_header("truncated: " + str(chunk.size()) + " bytes, need " + str(kExtendedHeaderSize));
    for (int i = 0; i < kMaxFilters; ++i) {
      h.filters[i] = p[16 + i];
      h.filters_meta[i] = p[24 + i];
    }
    h.udcompcode = p[22];
    h.compcode_meta = p[23];
    h.flags2 = p[30];
    h.blosc2_flags = p[31];
    // The alpha series left the sixth filter slot uninitialised.
    if (h.version == kVersionAlpha) h.filters[5] = h.filters_meta[5] = 0;
  }

  if (h.version > kVersionNewest && (h.flags2 & ~kFlags2VlBlocks))
    throw UnsupportedError("chunk header: format version " + str(h.version) + " uses unknown features (flags2 " +
                           str(h.flags2) + ")");

  const int special = (h.blosc2_flags >> 4) & 7;
  if (h.extended && special > int(Special::uninit)) bad_header("unknown special value id " + str(special));
  if (h.vlblocks()) {
    if (special) bad_header("a VL-block chunk cannot be special");
    if (h.memcpyed()) bad_header("a VL-block chunk cannot be memcpyed");
  }
  if (h.special() == Special::value) {
    const int64_t value_size = int64_t(h.cbytes) - kExtendedHeaderSize;
    if (value_size <= 0) bad_header("repeated-value chunk has no value after the header");
    if (value_size > kMaxBlocksize) bad_header("repeated value of " + str(value_size) + " bytes is too large");
    if (value_size > h.nbytes || h.nbytes % value_size != 0)
      bad_header("nbytes " + str(h.nbytes) + " is not a multiple of the repeated value's " + str(value_size) + " bytes");
  } else if (h.special() != Special::none && h.special() != Special::zeros && h.nbytes % h.typesize != 0) {
    bad_header("nbytes " + str(h.nbytes) + " is not a multiple of typesize " + str(h.typesize));
  }
  // Lazy chunks are an in-memory construct of c-blosc2; special chunks never are lazy.
  if (h.lazy() && h.special() == Special::none)
    throw UnsupportedError("chunk header: lazy chunk (blosc2_flags bit 3) found in stored data");
  if (h.memcpyed() && h.special() == Special::none &&
      int64_t(h.cbytes) != int64_t(h.nbytes) + h.header_size())
    bad_header("memcpyed chunk has cbytes " + str(h.cbytes) + ", expected nbytes + " + str(h.header_size()) + " = " +
               str(int64_t(h.nbytes) + h.header_size()));
  if (!h.vlblocks() && h.nbytes > 0 && h.blocksize > h.nbytes) h.blocksize = h.nbytes;
  return h;
}

}  // namespace blosc2fs
