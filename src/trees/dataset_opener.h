// One dataset (a frame, a sparse frame, a python-blosc2 store) opened as the
// tree a mount of it alone shows, and whether it takes writes: the one place
// that decides it, for a mount (src/fs/mount.cc) and for a collection's datasets
// (collection_source.cc); and opened as what it is, without a tree, for what the
// command line reads of it without mounting (--info, --thumbnail). Throws what
// Frame::open and Store::open throw (FormatError, IoError), which the callers
// turn into their own answers.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "chunk_codec.h"
#include "frame.h"
#include "frame_json.h"
#include "mount_tree.h"
#include "store.h"
#include "volume.h"

namespace blosc2fs {

struct OpenedDataset {
  std::shared_ptr<MountTree> tree;  // a Volume, or a StoreTree
  bool writable = false;
  bool store = false;       // a store's tree (its names open leaves: they may block)
  bool unchanging = false;  // never changes while mounted: a .b2z or .b2e store, remote data
  // Why it opened read-only although writing was asked for (one line a mount logs).
  std::string read_only_because;
};

// A local dataset at `path`. `want_write`: writable where it can be: a .b2d
// store whose directory this user may write (its leaves of their own files),
// a frame of the current layout this user may write. `options`: the Volume's
// (for a store, each leaf's, with an equal share of the cache budget for each of
// the at most `max_open_leaves` open at once).
OpenedDataset open_local_dataset(const std::filesystem::path& path, bool want_write, VolumeOptions options,
                                 size_t max_open_leaves);

// Remote bytes (one object, or a sparse frame's or a .b2d's directory): read-only
// and unchanging. `shown`: what frame.json and messages call it.
OpenedDataset open_remote_dataset(const StoreSource& source, const std::string& shown, VolumeOptions options,
                                  size_t max_open_leaves);

// Whether the local `path` is a python-blosc2 store (.b2z, .b2d, .b2e) rather than a frame.
bool is_local_store(const std::filesystem::path& path);

// A dataset opened as what it is, a frame or a store, and no tree.
class DatasetContent {
 public:
  static DatasetContent open_local_store(const std::filesystem::path& path);
  // A frame file, or a sparse frame's directory.
  static DatasetContent open_local_frame(const std::filesystem::path& path);
  // Remote bytes: a store when what they hold says so, else a frame (a
  // directory: a sparse frame).
  static DatasetContent open_remote(const StoreSource& source);

  // What --info prints: frame.json (the frame's own fields) or store.json, with
  // `fields` added (where remote bytes come from).
  std::string description(const Json& fields = Json::object()) const;

  // One of the two is set.
  const std::shared_ptr<const Frame>& frame() const { return frame_; }
  const Store* store() const { return store_.get(); }
  std::unique_ptr<Store> take_store() { return std::move(store_); }

 private:
  std::shared_ptr<const Frame> frame_;
  std::unique_ptr<Store> store_;
};

// Creates an empty frame at `path` (-o create): no chunks yet, chunks of
// `chunksize` bytes compressed with `cparams`. Throws IoError (EEXIST when
// `path` exists) or FormatError (parameters a frame cannot have).
void create_empty_frame(const std::filesystem::path& path, const CompressParams& cparams, int32_t chunksize,
                        bool sparse);

}  // namespace blosc2fs
