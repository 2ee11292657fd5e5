// python-blosc2 stores: DictStore/TreeStore as a `.b2d` directory or a `.b2z` zip,
// and the EmbedStore `.b2e`. A store is a set of keys ("/group/leaf"), each a
// frame stored as its own file, as a zip member read in place at its offset, or
// embedded in the EmbedStore's decompressed stream; or a remote C2Array reference.
// Opening reads the directory, the zip's central directory and the embed map only;
// leaf frames are opened on demand.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "file.h"
#include "frame.h"
#include "msgpack.h"

namespace blosc2fs {

enum class StoreFormat { b2d, b2z, b2e };
const char* store_format_name(StoreFormat format);

// What `path` is, by content: a directory holding embed.b2e (b2d), a file that is
// a zip archive (b2z), a frame carrying the b2embed, b2dict or b2tree metalayer
// (b2e); nullopt for anything else (a frame, a sparse frame, garbage).
std::optional<StoreFormat> detect_store(const std::filesystem::path& path);

struct LeafLocation {
  enum class Type { file, zip_member, embedded, remote };
  Type type = Type::file;
  std::string relative_path;  // file and zip_member: the path inside the store
  int64_t offset = 0;         // zip_member: data offset in the zip; embedded: in the stream
  int64_t length = 0;
  std::string urlbase, remote_path;  // remote
};

struct StoreLeaf {
  std::string key;  // "/a/b", a valid key (store_key.h)
  LeafLocation where;
};

class Store {
 public:
  // Throws FormatError (what the path is not, or what is wrong) or IoError.
  static std::unique_ptr<Store> open(const std::filesystem::path& path);
  ~Store();

  StoreFormat format() const { return format_; }
  const std::filesystem::path& path() const { return path_; }
  // The EmbedStore's identifying metalayer: b2dict, b2tree or b2embed.
  const std::string& tag() const { return tag_; }
  // Every key, sorted, each once (an external file wins over an embedded entry,
  // as in python-blosc2).
  const std::vector<StoreLeaf>& leaves() const { return leaves_; }
  // One line per entry left out (hostile names, duplicates, overlaps, ...).
  const std::vector<std::string>& skipped() const { return skipped_; }
  const StoreLeaf* find(std::string_view key) const;

  // The leaf's frame, read-only. Throws FormatError when it is not a frame, or
  // UnsupportedError for a remote reference.
  std::shared_ptr<const Frame> open_leaf(const StoreLeaf& leaf) const;
  // The full path of a leaf stored as its own file (b2d), else empty.
  std::filesystem::path leaf_file(const StoreLeaf& leaf) const;
  // The embed store's frame (embed.b2e, or the .b2e itself).
  const Frame& embed_frame() const { return *embed_; }

  // store.json: the store, every key (kind, shape, dtype, sizes, storage,
  // attributes), the tables and what was skipped.
  Json to_json() const;

 private:
  Store() = default;
  // Writes stream bytes [offset, offset + length) of the embed store to `fd`.
  void copy_embedded(int64_t offset, int64_t length, int fd) const;

  StoreFormat format_ = StoreFormat::b2d;
  std::filesystem::path path_;
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
