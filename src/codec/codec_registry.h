// One table of every codec and filter id the Blosc format names: what it is called,
// who writes it, whether this library decodes and encodes it, and the functions
// that do. The chunk decoder and encoder dispatch through it; frame.json, index.tsv
// and error messages take their names and flags from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "block_geometry.h"
#include "bytes.h"
#include "chunk_format.h"

namespace blosc2fs {

// Decodes one stream into exactly out.size() bytes; throws FormatError/UnsupportedError.
using StreamDecodeFn = void (*)(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out,
                                const BlockGeometry& geometry);
// Encodes one stream; returns its size, or 0 to have it stored raw.
using StreamEncodeFn = size_t (*)(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out,
                                  const BlockGeometry& geometry);
// Undoes (decode) or applies (encode) a filter on one whole block; in and out distinct.
using BlockFilterFn = void (*)(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& geometry);

struct CodecInfo {
  uint8_t id;              // the library's codec id: 0-5 built in, 32-40 plugins (codecs-registry.h)
  const char* name;        // "zstd", "zfp_acc", "j2k", ...
  const char* writer;      // what writes chunks of it
  const char* decoded_by;  // what decodes it here ("" when nothing does)
  // Plugin codecs only: the stream functions (built-in codecs go through stream_codecs.h).
  StreamDecodeFn decode = nullptr;
  StreamEncodeFn encode = nullptr;
  bool builtin_decodable = false;  // a built-in stream codec stream_codecs.h decodes
  bool builtin_encodable = false;
  const char* caveat = nullptr;    // what readers should know (lossy mismatches), or null
  // c-blosc2 loads it at run time from a plugin library (its name is `name`), and
  // nothing here decodes it otherwise: decoded through that library once the mount
  // has loaded it (dynamic_plugins.h).
  bool runtime_plugin = false;

  bool decodable() const;
  bool encodable() const;
  // What decodes it here: decoded_by, or the plugin library loaded for it.
  std::string decoder_description() const;
};

struct FilterInfo {
  uint8_t id;
  const char* name;
  const char* writer;
  bool decodable;
  bool encodable;
  // Plugin filters that need the block shape; null for the built-in ones.
  BlockFilterFn decode = nullptr;
  BlockFilterFn encode = nullptr;
};

// By the library's codec id (a frame header's compcode, or its udcodec for plugins);
// null for ids nothing defines.
const CodecInfo* find_codec(uint8_t id);
// The codec a chunk's streams are in: its compformat (flags >> 5), or for
// compformat 6 its udcompcode. Null when neither names a known codec.
const CodecInfo* chunk_codec(const ChunkHeader& h);
// The name of a chunk's codec: the registry's, else "compformat-N" / "codec-N".
std::string chunk_codec_name(const ChunkHeader& h);
// Why a chunk's compressed streams cannot be decoded here, naming the codec and the
// package that writes it; empty when they can.
std::string chunk_codec_unsupported_reason(const ChunkHeader& h);

const FilterInfo* find_filter(uint8_t id);

// The codecs c-blosc2 loads at run time that only a plugin library decodes here.
std::vector<const CodecInfo*> runtime_plugin_codecs();

}  // namespace blosc2fs
