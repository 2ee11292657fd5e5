// Where a collection's tree (collection_tree.h) gets its listing and its
// datasets: a local folder, a remote place (an S3 prefix, a web directory
// index) or a Caterva2 root. A source lists one directory at a time, says
// what each entry is (dataset_kind.h decides it, the same way for all), and
// opens a dataset as the tree a mount of it alone shows.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "byte_source.h"
#include "dataset_kind.h"
#include "dataset_opener.h"
#include "frame_json.h"
#include "volume.h"

namespace blosc2fs {

struct CollectionEntry {
  enum class Type : uint8_t { directory, dataset, file, symlink };
  std::string name;  // one safe name part
  Type type = Type::file;
  DatasetKind kind = DatasetKind::other;  // a dataset's
  int64_t size = -1;                      // a file's, when the listing says it reliably
  std::string link_target;                // a symlink's, unchanged
};


class CollectionSource {
 public:
  virtual ~CollectionSource() = default;
  // How messages and collection.json name it: a path, or a URL without credentials.
  virtual std::string name() const = 0;
  virtual bool remote() const = 0;
  // "local directory", "S3 prefix", "web index", "Caterva2".
  virtual const char* type() const = 0;
  // The entries of directory `dir` ("" the top), classified, sorted by name.
  // Throws IoError (ENOENT: gone), UnsupportedError (cannot be listed), FormatError (over a bound).
  virtual std::vector<CollectionEntry> list(const std::string& dir) const = 0;
  // The listings are fetched anew from now on (the tree's refresh round).
  virtual void relist() const {}
  // What changes whenever directory `dir`'s entries change, when the place
  // can tell cheaply (a local directory's mtime and ctime); empty when it cannot.
  // A refresh lists again only a directory whose version changed.
  virtual std::string version(const std::string& dir) const {
    (void)dir;
    return {};
  }
  // The bytes of a file that is not a dataset. Throws IoError.
  virtual std::shared_ptr<const ByteSource> open_file(const std::string& path) const = 0;
  // The dataset at `path` as its own mount shows it, with `options` for its
  // Volumes (`max_open` leaves of a store open at once); writable only when
  // `writable` and the dataset itself may be changed by this user.
  // Throws IoError, FormatError, UnsupportedError.
  virtual OpenedDataset open_dataset(const std::string& path, DatasetKind kind, VolumeOptions options,
                                     size_t max_open, bool writable) const = 0;
  // lstat(2) of `path` ("" the top) in a local folder; nullopt for remote places.
  virtual std::optional<struct stat> local_stat(const std::string& path) const {
    (void)path;
    return std::nullopt;
  }
  // The name of the description file at the top, and what it says besides
  // the tree's own fields (a Caterva2 root: server.json, with the server's
  // answers); an object holding "entries" replaces the tree's listing.
  virtual std::string description_name() const { return "collection.json"; }
  virtual Json describe() const { return Json::object(); }
};

// A local folder. Directories are datasets by their markers (chunks.b2frame,
// embed.b2e), files by name or, when the name says nothing, by a frame header.
// Datasets open as a local mount opens them (Volume, StoreTree), writable when
// this user may write the file and its layout allows. Throws IoError when
// `root` is not a directory.
std::shared_ptr<CollectionSource> local_collection(const std::filesystem::path& root);

// A remote place listed one level at a time (SourceDirectory::list_entries:
// an S3 prefix, a web index). Everything goes by name: a listing costs no
// request per file. Read-only. `counters`: the transport's, for each
// dataset's frame.json "source" (with its URL and the object's identity).
std::shared_ptr<CollectionSource> remote_collection(std::shared_ptr<const SourceDirectory> place, const char* type,
                                                    std::function<Json()> counters);

// A remote dataset of a place as its mount shows it (open_remote_dataset of
// dataset_opener.h: a frame or a store over `object`, a sparse frame or .b2d
// over `directory`), frame.json's "source" saying `shown`, the object's
// identity and `counters`. Throws IoError, FormatError.
OpenedDataset open_listed_remote_dataset(std::shared_ptr<const ByteSource> object,
                                         std::shared_ptr<const SourceDirectory> directory, const std::string& shown,
                                         VolumeOptions options, size_t max_open, const std::function<Json()>& counters);

}  // namespace blosc2fs
