// python-blosc2 stores: DictStore/TreeStore as a `.b2d` directory or a `.b2z` zip,
// and the EmbedStore `.b2e`. A store is a set of keys ("/group/leaf"), each a
// frame stored as its own file, as a zip member read in place at its offset, or
// embedded in the EmbedStore's decompressed stream; or a remote C2Array reference.
// Opening reads the directory, the zip's central directory and the embed map only;
// leaf frames are opened on demand.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "byte_source.h"
#include "frame.h"
#include "msgpack.h"

namespace blosc2fs {

enum class StoreFormat { b2d, b2z, b2e };
const char* store_format_name(StoreFormat format);

// What `path` is, by content: a directory holding embed.b2e (b2d), a file that is
// a zip archive (b2z), a frame carrying the b2embed, b2dict or b2tree metalayer
// (b2e); nullopt for anything else (a frame, a sparse frame, garbage).
std::optional<StoreFormat> detect_store(const std::filesystem::path& path);

// Where a store lives: a file (.b2z, .b2e) or a directory (.b2d), local or
// remote. Exactly one of the two is set.
struct StoreSource {
  std::shared_ptr<const ByteSource> file;
  std::shared_ptr<const SourceDirectory> directory;
};
// The same by content from a source. Throws IoError when the source fails.
std::optional<StoreFormat> detect_store(const StoreSource& source);

struct LeafLocation {
  enum class Type { file, zip_member, embedded, remote };
  Type type = Type::file;
  std::string relative_path;  // file and zip_member: the path inside the store
  int64_t offset = 0;         // zip_member: data offset in the zip; embedded: in the stream
  int64_t length = 0;
  bool deflated = false;       // zip_member: deflated, `length` bytes inflating to inflated_length
  int64_t inflated_length = 0;
  std::string urlbase, remote_path;  // remote
};

// A TreeStore keeps the attributes of its root and of each group (`tstore.vlmeta`,
// `tstore["/grp"].vlmeta`) as the vlmetalayers of an empty SChunk at key
// "<group>/__vlmeta__"; its keys() hides those carriers.
inline constexpr const char* kAttrsCarrierName = "__vlmeta__";
// The embed store's vlmetalayer naming a TreeStore's object roots (CTables).
inline constexpr const char* kObjectRegistryLayer = "_object_registry";
bool is_attrs_carrier_key(std::string_view key);
// "/a/b" of "/a/b/__vlmeta__", "" (the root) of "/__vlmeta__".
std::string attrs_carrier_group(std::string_view key);

struct StoreLeaf {
  std::string key;  // "/a/b", a valid key (store_key.h)
  LeafLocation where;
};

class Store {
 public:
  // Throws FormatError (what the path is not, or what is wrong) or IoError.
  static std::unique_ptr<Store> open(const std::filesystem::path& path);
  static std::unique_ptr<Store> open(const StoreSource& source);
  ~Store();

  StoreFormat format() const { return format_; }
  // The path opened, or the source's name (a URL).
  const std::filesystem::path& path() const { return path_; }
  const StoreSource& source() const { return source_; }
  bool remote() const {
    return source_.directory ? source_.directory->remote() : source_.file && source_.file->remote();
  }
  // The EmbedStore's identifying metalayer: b2dict, b2tree or b2embed.
  const std::string& tag() const { return tag_; }
  // Every key, sorted, each once (an external file wins over an embedded entry,
  // as in python-blosc2).
  const std::vector<StoreLeaf>& leaves() const { return leaves_; }
  // One line per entry left out (hostile names, duplicates, overlaps, ...).
  const std::vector<std::string>& skipped() const { return skipped_; }
  const StoreLeaf* find(std::string_view key) const;
  // A TreeStore (b2tree): python-blosc2 lists groups and object roots as keys and
  // keeps attributes in __vlmeta__ carriers. A b2dict store, an EmbedStore and a
  // store written before python-blosc2 4.1 (b2embed) list every stored key.
  bool tree() const { return tag_ == "b2tree"; }
  // A TreeStore's object roots (full key -> kind, e.g. "ctable"): the registry,
  // or, when it is empty, every "/x/_meta" leaf whose vlmeta kind is "ctable".
  std::map<std::string, std::string> object_roots() const;

  // The leaf's frame, read-only. Throws FormatError when it is not a frame, or
  // UnsupportedError for a remote reference.
  std::shared_ptr<const Frame> open_leaf(const StoreLeaf& leaf) const;
  // The full path of a leaf stored as its own file (b2d), else empty.
  std::filesystem::path leaf_file(const StoreLeaf& leaf) const;
  // The embed store's frame (embed.b2e, or the .b2e itself).
  const Frame& embed_frame() const { return *embed_; }
  // The file holding the embed store: STORE/embed.b2e (b2d), the zip (b2z), the .b2e.
  std::filesystem::path embed_file() const;

  // store.json: the store, every key as python-blosc2's keys() lists it (kind, shape, dtype, sizes, storage,
  // attributes), the tables and what was skipped.
  Json to_json() const;

 private:
  Store() = default;
  // Stream bytes [offset, offset + length) of the embed store.
  Bytes embedded_bytes(int64_t offset, int64_t length) const;
  // One stored leaf as store.json lists it; a CTable's _meta adds to `tables`.
  Json leaf_json(const StoreLeaf& leaf, Json& tables) const;

  StoreFormat format_ = StoreFormat::b2d;
  std::filesystem::path path_;
  StoreSource source_;
  std::string tag_;
  std::shared_ptr<const Frame> embed_;
  LeafLocation embed_where_;
  std::vector<StoreLeaf> leaves_;
  std::vector<std::string> skipped_;
};

// One leaf frame described as store.json lists it (kind as frame.json names it
// (kind.h), shape, dtype, nbytes, cbytes, ratio, attrs).
Json leaf_summary_json(const Frame& frame);
// store.json pretty-printed with a trailing newline.
std::string store_json_text(const Store& store);

}  // namespace blosc2fs
