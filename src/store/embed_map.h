// The map of an EmbedStore (`.b2e`, and `embed.b2e` inside DictStore/TreeStore):
// the msgpack vlmetalayer `estore_metadata` = {"embed_map": {key: {"offset", "length"}
// | {"urlbase", "path"}}, "current_offset"}. Each embedded value is a whole frame
// lying in the store SChunk's decompressed byte stream at [offset, offset + length).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bytes.h"

namespace blosc2fs {

inline constexpr const char* kEmbedMapLayer = "estore_metadata";

struct EmbedEntry {
  std::string key;
  bool remote = false;       // a C2Array reference: urlbase + path, no bytes
  int64_t offset = 0;        // in the decompressed stream
  int64_t length = 0;
  std::string urlbase, path;
};

struct EmbedMap {
  std::vector<EmbedEntry> entries;   // in the map's order
  std::vector<std::string> skipped;  // one line per entry left out: its key and why
};

// Parses the vlmetalayer's decompressed content for a stream of `stream_nbytes`.
// Skipped: keys that are not valid store keys (store_key.h), entries that are
// neither form, frames shorter than a frame header, that run past the stream's
// end, or that overlap another entry. Throws FormatError when the content is not
// msgpack or not a map holding an `embed_map` map.
EmbedMap parse_embed_map(ByteSpan content, int64_t stream_nbytes);

}  // namespace blosc2fs
