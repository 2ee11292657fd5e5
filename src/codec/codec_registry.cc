// The codec and filter table (plugin-codecs.md for the plugin ids and who writes them).
#include "codec_registry.h"

#include "dynamic_plugins.h"
#include "jpeg2000.h"
#include "ndcell.h"
#include "ndlz.h"
#include "zfp_codec.h"

namespace blosc2fs {

namespace {

constexpr uint8_t kCompformatUser = 6;
constexpr uint8_t kFirstPluginCodec = 32;
constexpr uint8_t kCodecNdlz = 32;
constexpr uint8_t kCodecOpenzl = 38;

void decode_ndlz(uint8_t, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry&) {
  ndlz_decode(in, out, meta);
}

// c-blosc2's NDLZ writer takes exactly one 2-D block of bytes; anything else is stored raw.
size_t encode_ndlz(uint8_t, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry& g) {
  if (g.ndim != 2 || g.block_items() != int64_t(in.size())) return 0;
  return ndlz_encode(in, g.blockshape[0], g.blockshape[1], meta, out);
}

void decode_jpeg2000(uint8_t id, uint8_t, ByteSpan in, MutableByteSpan out, const BlockGeometry&) {
  jpeg2000_decode(id, in, out);
}

constexpr const char* kCblosc2 = "c-blosc2 (python-blosc2)";

const CodecInfo kCodecTable[] = {
    {0, "blosclz", kCblosc2, "blosc2fs", nullptr, nullptr, true, true},
    {1, "lz4", kCblosc2, "liblz4", nullptr, nullptr, true, true},
    {2, "lz4hc", kCblosc2, "liblz4", nullptr, nullptr, true, true},
    {3, "snappy", "c-blosc2 before 2.0 (removed since)", "", nullptr, nullptr, false, false},
    {4, "zlib", kCblosc2, "zlib", nullptr, nullptr, true, true},
    {5, "zstd", kCblosc2, "libzstd", nullptr, nullptr, true, true},
    {kCodecNdlz, "ndlz", "c-blosc2's bundled plugin (python-blosc2 Codec.NDLZ)", "blosc2fs", decode_ndlz, encode_ndlz},
    {kCodecZfpAccuracy, "zfp_acc", "c-blosc2's bundled plugin (python-blosc2 Codec.ZFP_ACC)", "libzfp", zfp_decode,
     zfp_encode},
    {kCodecZfpPrecision, "zfp_prec", "c-blosc2's bundled plugin (python-blosc2 Codec.ZFP_PREC)", "libzfp", zfp_decode,
     zfp_encode},
    {kCodecZfpRate, "zfp_rate", "c-blosc2's bundled plugin (python-blosc2 Codec.ZFP_RATE)", "libzfp", zfp_decode,
     zfp_encode},
    {kCodecOpenHtj2k, "openhtj2k", "the PyPI plugin blosc2-openhtj2k", "OpenJPEG", decode_jpeg2000, nullptr, false,
     false,
     "lossy (irreversible) blocks decode within +-2 of what the plugin's OpenHTJ2K decoder gives; lossless blocks "
     "are exact"},
    {kCodecGrok, "grok", "the PyPI plugin blosc2-grok", "OpenJPEG", decode_jpeg2000},
    {kCodecOpenzl, "openzl", "the PyPI plugin blosc2-openzl", "", nullptr, nullptr, false, false, nullptr, true},
    {kCodecJ2k, "j2k", "the PyPI plugin blosc2-j2k", "OpenJPEG", decode_jpeg2000},
    {kCodecHtj2k, "htj2k", "the PyPI plugin blosc2-htj2k", "OpenJPEG", decode_jpeg2000, nullptr, false, false,
     "lossy (irreversible) blocks written by the OpenHTJ2K backend decode within +-2 of what the plugin reads; "
     "lossless blocks are exact"},
};

// Lizard, compformat 5 in chunks written before c-blosc2 2.0.0 (legacy-layouts.md);
// its API id (6) now means "plugin", so it lives outside the id table.
const CodecInfo kLizard{6, "lizard", "c-blosc2 before 2.0.0 (removed since)", ""};

const FilterInfo kFilterTable[] = {
    {kFilterShuffle, "shuffle", kCblosc2, true, true},
    {kFilterBitshuffle, "bitshuffle", kCblosc2, true, true},
    {kFilterDelta, "delta", kCblosc2, true, true},
    {kFilterTruncPrec, "trunc_prec", kCblosc2, true, true},  // lossy; nothing to undo
    {kFilterNdcell, "ndcell", "c-blosc2's bundled plugin (python-blosc2 Filter.NDCELL)", true, true, ndcell_decode,
     ndcell_encode},
    {kFilterNdmean, "ndmean", "c-blosc2's bundled plugin (python-blosc2 Filter.NDMEAN)", true, true, ndmean_decode,
     ndmean_encode},
    {kFilterBytedeltaBuggy, "bytedelta_buggy", kCblosc2, true, true},
    {kFilterBytedelta, "bytedelta", kCblosc2, true, true},
    {kFilterIntTrunc, "int_trunc", "c-blosc2's bundled plugin (python-blosc2 Filter.INT_TRUNC)", true, true},
};

}  // namespace

bool CodecInfo::decodable() const {
  return builtin_decodable || decode != nullptr || (runtime_plugin && dynamic_codec(id));
}

bool CodecInfo::encodable() const {
  return builtin_encodable || encode != nullptr || (runtime_plugin && dynamic_codec(id));
}

std::string CodecInfo::decoder_description() const {
  if (runtime_plugin) {
    const DynamicCodec* plugin = dynamic_codec(id);
    return plugin ? "the plugin library " + plugin->library().string() : "";
  }
  return decoded_by;
}

std::vector<const CodecInfo*> runtime_plugin_codecs() {
  std::vector<const CodecInfo*> out;
  for (const CodecInfo& c : kCodecTable)
    if (c.runtime_plugin) out.push_back(&c);
  return out;
}

const CodecInfo* find_codec(uint8_t id) {
  for (const CodecInfo& c : kCodecTable)
    if (c.id == id) return &c;
  return nullptr;
}

const CodecInfo* chunk_codec(const ChunkHeader& h) {
  switch (h.compformat()) {
    case 0: return find_codec(0);
    // lz4hc shares lz4's compformat; c-blosc2 records the API code (2) in byte 22.
    case 1: return find_codec(h.extended && h.udcompcode == 2 ? 2 : 1);
    case 2: return find_codec(3);
    case 3: return find_codec(4);
    case 4: return find_codec(5);
    case kCompformatLizard: return &kLizard;
    case kCompformatUser: {  // plugin ids only: c-blosc2 looks nothing else up here
      const CodecInfo* c = find_codec(h.udcompcode);
      return c && c->id >= kFirstPluginCodec ? c : nullptr;
    }
    default: return nullptr;
  }
}

std::string chunk_codec_name(const ChunkHeader& h) {
  if (const CodecInfo* c = chunk_codec(h)) return c->name;
  if (h.compformat() == kCompformatUser) return "codec-" + std::to_string(h.udcompcode);
  return "compformat-" + std::to_string(h.compformat());
}

std::string chunk_codec_unsupported_reason(const ChunkHeader& h) {
  const CodecInfo* c = chunk_codec(h);
  if (c && c->decodable()) return {};
  if (!c) {
    if (h.compformat() == kCompformatUser)
      return "codec " + std::to_string(h.udcompcode) + " is a user-defined or unknown codec that nothing here decodes";
    return "compressed format " + std::to_string(h.compformat()) + " names no known codec";
  }
  std::string why = std::string("codec ") + c->name + " (id " + std::to_string(c->id) + ", written by " + c->writer +
                    ") cannot be decoded here";
  if (c == &kLizard) why += ": no maintained library decodes it";
  else if (c->runtime_plugin) why += ": it is loaded at run time and no plugin is loaded (" + plugin_install_hint(*c) + ")";
  return why;
}

const FilterInfo* find_filter(uint8_t id) {
  for (const FilterInfo& f : kFilterTable)
    if (f.id == id) return &f;
  return nullptr;
}

}  // namespace blosc2fs
