// The inode numbers of a collection's tree: 1 the top, 2 the description file,
// kDirBase + d directory d, kGroupJsonBase + d directory d's zarr.json (every
// directory is a Zarr group, docs/zarr.md), kItemBase + s entry s (a dataset's
// directory, a file, a symlink), and from kMappedBase on, the numbers of the
// datasets' own trees, handed out as the kernel first sees them and mapped to
// (dataset, its tree's own number) by DatasetNumbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "inodes.h"
#include "mount_tree.h"
#include "thread_safety.h"

namespace blosc2fs {

namespace collection_numbers {

inline constexpr uint64_t kDescriptionIno = 2;
inline constexpr uint64_t kDirBase = 16;
inline constexpr uint64_t kGroupJsonBase = uint64_t(1) << 31;
inline constexpr uint64_t kItemBase = uint64_t(1) << 32;
inline constexpr uint64_t kMappedBase = uint64_t(1) << 40;

inline uint64_t dir_ino(size_t d) { return d == 0 ? kRootIno : kDirBase + d; }
inline uint64_t item_ino(size_t slot) { return kItemBase + slot; }
// The directory whose zarr.json `ino` is (present or not: callers check).
inline std::optional<size_t> group_json_of(uint64_t ino) {
  if (ino >= kGroupJsonBase && ino < kItemBase) return size_t(ino - kGroupJsonBase);
  return std::nullopt;
}

}  // namespace collection_numbers

// The numbers of the datasets' own trees: a dataset (its slot) and its tree's
// own number, and the number the mount shows for it. Its own lock.
class DatasetNumbers {
 public:
  struct Mapped {
    size_t slot;
    uint64_t local;
  };

  // The dataset and its own number of a number inside one's tree; nullopt for
  // a number below kMappedBase. Throws FsError ENOENT for one never handed out.
  std::optional<Mapped> find(uint64_t ino) const EXCLUDES(mutex_);
  // As find, nullopt for one never handed out too.
  std::optional<Mapped> find_below_dataset(uint64_t ino) const EXCLUDES(mutex_);
  // The mount's number of (slot, local): the dataset's own directory for its root.
  uint64_t to_mount(size_t slot, uint64_t local) EXCLUDES(mutex_);
  // A dataset's call's notes for the kernel, in the mount's numbers.
  void translate(size_t slot, KernelNotes& notes) EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;
  std::unordered_map<uint64_t, Mapped> mapped_ GUARDED_BY(mutex_);
  std::map<std::pair<size_t, uint64_t>, uint64_t> mount_numbers_ GUARDED_BY(mutex_);
  uint64_t next_mapped_ GUARDED_BY(mutex_) = collection_numbers::kMappedBase;
};

}  // namespace blosc2fs
