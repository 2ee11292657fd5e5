#include "embed_map.h"

#include <algorithm>

#include "error.h"
#include "frame.h"
#include "msgpack.h"
#include "store_key.h"

namespace blosc2fs {

namespace {

std::string shown_key(const std::string& key) {
  std::string shown = key.substr(0, 80);
  for (char& c : shown)
    if (uint8_t(c) < 0x20) c = '?';
  return shown;
}

}  // namespace

EmbedMap parse_embed_map(ByteSpan content, int64_t stream_nbytes) {
  std::optional<Json> doc = msgpack_to_json(content);
  if (!doc) throw FormatError("EmbedStore map (vlmeta estore_metadata) is not one msgpack value");
  if (!doc->is_object() || !doc->contains("embed_map") || !(*doc)["embed_map"].is_object())
    throw FormatError("EmbedStore map (vlmeta estore_metadata) has no embed_map");
  EmbedMap map;
  for (const auto& [key, value] : (*doc)["embed_map"].items()) {
    auto skip = [&, &key = key](const std::string& why) {
      map.skipped.push_back("embedded key '" + shown_key(key) + "': " + why);
    };
    if (auto why = bad_key(key)) {
      skip(*why);
      continue;
    }
    if (!value.is_object()) {
      skip("its entry is not a map");
      continue;
    }
    EmbedEntry entry;
    entry.key = key;
    if (value.contains("urlbase") && value.contains("path")) {
      if (!value["urlbase"].is_string() || !value["path"].is_string()) {
        skip("a remote reference whose urlbase or path is not text");
        continue;
      }
      entry.remote = true;
      entry.urlbase = value["urlbase"].get<std::string>();
      entry.path = value["path"].get<std::string>();
    } else if (value.contains("offset") && value.contains("length")) {
      const Json& o = value["offset"];
      const Json& l = value["length"];
      if (!o.is_number_integer() || !l.is_number_integer() || o.get<int64_t>() < 0 || l.get<int64_t>() < 0 ||
          (o.is_number_unsigned() && o.get<uint64_t>() > uint64_t(INT64_MAX)) ||
          (l.is_number_unsigned() && l.get<uint64_t>() > uint64_t(INT64_MAX))) {
        skip("an offset or length that is not a non-negative integer");
        continue;
      }
      entry.offset = o.get<int64_t>();
      entry.length = l.get<int64_t>();
      if (entry.length < kFrameHeaderMinLen + kFrameTrailerMinLen) {
        skip("a frame of " + std::to_string(entry.length) + " bytes, shorter than any frame");
        continue;
      }
      if (entry.offset > stream_nbytes || entry.length > stream_nbytes - entry.offset) {
        skip("bytes [" + std::to_string(entry.offset) + ", +" + std::to_string(entry.length) +
             ") run past the store's " + std::to_string(stream_nbytes) + " bytes");
        continue;
      }
    } else {
      skip("neither an embedded frame (offset, length) nor a remote reference (urlbase, path)");
      continue;
    }
    map.entries.push_back(std::move(entry));
  }
  // Overlapping frames: python-blosc2 never writes them (dead gaps, yes; overlaps, no).
  std::vector<size_t> order;
  for (size_t i = 0; i < map.entries.size(); ++i)
    if (!map.entries[i].remote) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return map.entries[a].offset < map.entries[b].offset; });
  std::vector<bool> overlaps(map.entries.size(), false);
  int64_t reach = -1;
  size_t owner = 0;
  for (size_t i : order) {
    const EmbedEntry& e = map.entries[i];
    if (e.offset < reach) overlaps[i] = overlaps[owner] = true;
    if (e.offset + e.length > reach) {
      reach = e.offset + e.length;
      owner = i;
    }
  }
  std::vector<EmbedEntry> kept;
  for (size_t i = 0; i < map.entries.size(); ++i) {
    if (overlaps[i]) {
      map.skipped.push_back("embedded key '" + shown_key(map.entries[i].key) + "': overlaps another entry");
      continue;
    }
    kept.push_back(std::move(map.entries[i]));
  }
  map.entries = std::move(kept);
  return map;
}

}  // namespace blosc2fs
