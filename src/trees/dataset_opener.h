// One dataset (a frame, a sparse frame, a python-blosc2 store) opened as the
// tree a mount of it alone shows, and whether it takes writes: the one place
// that decides it, for a mount (src/fs/mount.cc) and for a collection's datasets
// (collection_source.cc). Throws what Frame::open and Store::open throw
// (FormatError, IoError), which the callers turn into their own answers.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

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

}  // namespace blosc2fs
