// What a frame is: python-blosc2 saves many kinds of objects as ordinary frames
// and tells them apart by metalayer names and msgpack documents in vlmeta
// (docs/python-blosc2.md §1). c-blosc2 knows none of this; this file decides
// the kind, decodes the kind's own metadata for frame.json, and gives the
// tree what it needs for the kind's natural view: items.jsonl (msgpack items),
// array.npy of a pack_tensor SChunk, no array.npy for lazy carriers, and which
// chunks of a proxy cache hold fetched data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frame.h"
#include "msgpack.h"

namespace blosc2fs {

// How the items of an ObjectArray / BatchArray / ListArray sit in the chunks.
enum class ItemsLayout : uint8_t {
  none,
  one_per_chunk,  // ObjectArray (tag vlarray): each chunk is one msgpack value
  block_arrays,   // BatchArray (tag batcharray): each block of each chunk is a msgpack array of items
};

// A pack_tensor / save_array SChunk as an N-d array: C-order bytes of the data.
struct TensorView {
  std::string framework;       // "numpy", "torch", "tensorflow"
  std::vector<int64_t> shape;
  std::string npy_descr;       // "<f8", or a structured descr list as Python literal text
  int64_t itemsize = 0;
};

// Which chunks of a proxy cache hold data fetched from the remote source.
struct ProxyState {
  std::string source;                  // the remote source in one line, secrets redacted
  std::vector<bool> chunk_fetched;     // one per chunk: every block of it fetched
  std::vector<bool> chunk_partly;      // some blocks fetched, not all
  std::string bitmap;                  // what told: "proxy-fetched", "proxy-fetched-blocks", ...
  int64_t blocks_per_chunk = 1;
  bool fetched(int64_t n) const { return n >= 0 && size_t(n) < chunk_fetched.size() && chunk_fetched[size_t(n)]; }
};

struct FrameKind {
  std::string name = "schunk";  // frame.json "kind"
  Json details;                 // frame.json "kind_details" (null: none)
  ItemsLayout items = ItemsLayout::none;
  bool no_array = false;        // a lazy carrier: its chunks hold no data, so no array.npy
  std::optional<TensorView> tensor;
  std::optional<ProxyState> proxy;
};

// Decides the kind from the frame's metalayers and vlmetalayers. Never throws
// for malformed kind metadata: what cannot be decoded is named in
// details["errors"], and the views that need it are left out.
FrameKind detect_frame_kind(const Frame& frame);

// Replaces secrets in a decoded document: values of keys that name secrets
// (token, auth, password, secret, credential, api key, cookie), the auth token
// of a ["__tuple__", path, urlbase, token] urlpath, URL user info and secret
// query parameters. Each becomes "<redacted>".
Json redact_secrets(const Json& value);

// The items chunk n holds (msgpack values as JSON, see msgpack.h), in item
// order; empty for ItemsLayout::none or a chunk number out of range. Throws
// FormatError when the chunk does not hold what the layout says.
std::vector<Json> chunk_items(const Frame& frame, ItemsLayout layout, int64_t n);

// The lines of items.jsonl that chunks [first, first + count) hold: one JSON
// value per item, in item order, each followed by "\n". Throws FormatError when
// a chunk does not hold what the layout says (naming the chunk).
std::string items_jsonl_rows(const Frame& frame, ItemsLayout layout, int64_t first, int64_t count);

// "[('a', '<i4'), ('b', '<f8', (2,))]" from the msgpack-decoded descr list of
// pack_tensor (tuples as ["__tuple__", ...]); a dtype string is returned as is.
// nullopt when it is neither, or names would need escaping.
std::optional<std::string> numpy_descr_text(const Json& dtype);

}  // namespace blosc2fs
