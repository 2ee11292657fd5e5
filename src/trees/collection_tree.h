// A place of many datasets mounted as one tree: a local folder, an S3 prefix,
// a web directory index or a Caterva2 root (collection_source.h). The place's
// directories are directories; each dataset (a frame, a sparse frame, a .b2d,
// .b2z or .b2e store) is a directory named as its file, holding exactly the
// tree a mount of it alone shows (a Volume, a StoreTree); other files are
// themselves, read-only; symlinks are symlinks (never followed by the
// daemon). collection.json (a Caterva2 root: server.json) at the top says
// what the place is, its listing with each entry's kind, the datasets that
// failed to open and why, and the mount's counters.
//
// Lazy and bounded: the top is listed when the tree is made, every other
// directory when first looked into; a dataset opens at the first lookup
// inside it; at most `max_open` Volumes stay open, the least recently used
// closed when nothing holds it (no open file, nothing uncommitted), its inode
// numbers kept. Listings are trusted for list_ttl, then listed again by the
// idle refresh: new entries appear, vanished ones go.
//
// Its parts, each owning its state: the place as listed (listed_place.h, under
// this tree's lock), the datasets' open trees (open_trees.h), the numbers of
// their trees' inodes (collection_numbers.h), the idle refresh's rounds
// (refresh_round.h) and collection.json's latest text (latest_text.h). Lock
// order: a dataset's opening, then mutex_, then the parts' own locks; no part
// calls back into the tree.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "collection_numbers.h"
#include "collection_source.h"
#include "frame_json.h"
#include "latest_text.h"
#include "listed_place.h"
#include "open_trees.h"
#include "refresh_round.h"
#include "thread_safety.h"
#include "volume.h"

namespace blosc2fs {

class CollectionTree : public MountTree {
 public:
  // collection.json lists every directory; it stops at this many entries.
  static constexpr size_t kMaxDescribedEntries = 1'000'000;

  struct Settings {
    std::chrono::seconds list_ttl{60};
    size_t max_open = 64;
    bool writable = false;              // a local folder mounted read-write
    VolumeOptions leaf_options;         // each dataset's Volume (cache budget, access)
    std::function<Json()> counters;     // the mount's transport counters (remote places)
  };

  // Lists the top now. Throws what the source's list() throws.
  CollectionTree(std::shared_ptr<CollectionSource> source, Settings settings);
  ~CollectionTree() override;

  // Unmount: every open dataset commits what it still holds.
  void shutdown() override;
  // The description file as it would read now (lists every directory not listed yet).
  std::string description();
  const CollectionSource& source() const { return *source_; }

  bool writable() const override { return settings_.writable; }
  int64_t nchunks() const override;
  bool underlying_statfs(struct statvfs& out) const override;
  std::optional<Node> node(uint64_t ino) const override;
  std::optional<uint64_t> lookup(uint64_t parent, std::string_view name) override;
  std::optional<DirEntry> entry(uint64_t dir, int64_t cookie) override;
  struct stat attributes(uint64_t ino) override;
  std::string path_of(uint64_t ino) const override;
  std::string readlink(uint64_t ino) override;
  void remember(uint64_t ino) override;
  void forget(uint64_t ino, uint64_t count) override;
  std::unique_ptr<OpenFile> open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                 KernelNotes& notes) override;
  bool cache_still_valid(uint64_t ino) override;
  void read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) override;
  void write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) override;
  void flush(OpenFile& file, KernelNotes& notes, bool fsync = false) override;
  void release(std::unique_ptr<OpenFile> file, KernelNotes& notes) override;
  struct stat setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) override;
  std::pair<uint64_t, std::unique_ptr<OpenFile>> create(uint64_t parent, std::string_view name, int flags,
                                                        KernelNotes& notes) override;
  void unlink(uint64_t parent, std::string_view name, KernelNotes& notes) override;
  void rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name, unsigned flags,
              KernelNotes& notes) override;
  void maybe_refresh(KernelNotes& notes) override;
  bool read_only_at(uint64_t ino) override;

 private:
  using Mapped = DatasetNumbers::Mapped;
  class ChildCall;

  // Lists directory d when it never was. Not under mutex_. Throws FsError.
  void ensure_listed(size_t d) EXCLUDES(mutex_);
  // Lists directory d now and applies it; notes for the kernel when given.
  // `if_changed`: not when the source says the directory is as it was listed.
  void list_now(size_t d, KernelNotes* notes, bool if_changed = false) EXCLUDES(mutex_);
  // The directory whose zarr.json `ino` is, when it is one; ENOENT for one not present.
  std::optional<size_t> present_group_json(uint64_t ino) const EXCLUDES(mutex_);
  // The item of a number of ours that is one (nullopt for directories and the description).
  std::optional<size_t> item_of(uint64_t ino) const EXCLUDES(mutex_);
  // A directory a dataset's tree holds (its root: local kRootIno) as the dataset
  // and its own number; nullopt for the collection's own directories.
  std::optional<Mapped> inside_dataset(uint64_t ino) const EXCLUDES(mutex_);
  ListedPlace::Item& item(size_t slot) const EXCLUDES(mutex_);
  // The dataset's tree, opened when closed. Throws FsError (EIO when it cannot be read).
  std::shared_ptr<MountTree> child(size_t slot) EXCLUDES(mutex_);
  std::shared_ptr<const ByteSource> file_bytes(size_t slot) EXCLUDES(mutex_);
  struct stat own_attributes(uint64_t ino, const std::string& path, bool directory) const;

  const std::shared_ptr<CollectionSource> source_;
  Settings settings_;
  struct timespec mount_time_ {};

  mutable Mutex mutex_;
  ListedPlace listed_ GUARDED_BY(mutex_);
  mutable OpenTrees datasets_;  // by item slot
  DatasetNumbers numbers_;
  RefreshRound refresh_round_;
  LatestText description_;
};

}  // namespace blosc2fs
