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
// Inode numbers: 1 the top, 2 the description file, kDirBase + d directory d,
// kGroupJsonBase + d directory d's zarr.json (every directory is a Zarr group, docs/zarr.md),
// kItemBase + s entry s (a dataset's directory, a file, a symlink), and from
// kMappedBase on, the numbers of the datasets' own trees, handed out as the
// kernel first sees them and mapped to (dataset, its tree's own number).
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collection_source.h"
#include "frame_json.h"
#include "volume.h"

namespace blosc2fs {

class CollectionTree : public MountTree {
 public:
  static constexpr uint64_t kDescriptionIno = 2;
  static constexpr uint64_t kDirBase = 16;
  static constexpr uint64_t kGroupJsonBase = uint64_t(1) << 31;
  static constexpr uint64_t kItemBase = uint64_t(1) << 32;
  static constexpr uint64_t kMappedBase = uint64_t(1) << 40;
  static constexpr size_t kMaxItems = size_t(1) << 31;
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
  struct Child {
    std::string name;
    bool directory = false;
    size_t index = 0;  // a directory's or an item's
  };
  struct Dir {
    std::string path;             // "" the top, "a/b"
    std::vector<Child> children;  // by name
    bool present = true;          // in its parent's latest listing
    bool fetched = false;         // listed at least once
    std::chrono::steady_clock::time_point listed_at{};
    std::string failure;          // why its latest listing failed
    std::string version;          // the source's version of it when it was listed
  };
  struct Item {
    std::string path;
    CollectionEntry entry;
    bool present = true;
    // A dataset:
    std::mutex opening;                    // one open at a time
    std::shared_ptr<MountTree> tree;       // a Volume or a StoreTree; null while closed
    Volume* volume = nullptr;              // tree as a Volume, when it is one
    bool writable = false;                 // what the open said
    std::list<size_t>::iterator lru;       // valid while a Volume is open
    uint64_t open_files = 0;
    std::unique_ptr<InodeMemory> inodes;   // a closed Volume's numbers
    std::string failure;                   // why it cannot be opened (logged once)
    // A file: its bytes while open (or once its size was asked).
    std::shared_ptr<const ByteSource> bytes;
    bool is_dataset() const { return entry.type == CollectionEntry::Type::dataset; }
    bool is_store() const { return entry.kind == DatasetKind::store || entry.kind == DatasetKind::store_directory; }
  };
  struct Mapped {
    size_t slot;
    uint64_t local;
  };
  class ChildCall;

  // Lists directory d when it never was. Not under mutex_. Throws FsError.
  void ensure_listed(size_t d);
  // Lists directory d now and applies it; notes for the kernel when given.
  // `if_changed`: not when the source says the directory is as it was listed.
  void list_now(size_t d, KernelNotes* notes, bool if_changed = false);
  // Under mutex_: a listing made into children; vanished entries marked.
  void apply_listing(size_t d, std::vector<CollectionEntry> entries, KernelNotes* notes);
  size_t dir_for(const std::string& path);  // under mutex_
  const Dir* dir_of(uint64_t ino) const;     // under mutex_
  std::optional<size_t> dir_index(uint64_t ino) const;  // under mutex_
  uint64_t dir_ino(size_t d) const { return d == 0 ? kRootIno : kDirBase + d; }
  // The directory whose zarr.json `ino` is (present or not: callers check).
  static std::optional<size_t> group_json_of(uint64_t ino) {
    if (ino >= kGroupJsonBase && ino < kItemBase) return size_t(ino - kGroupJsonBase);
    return std::nullopt;
  }
  std::optional<size_t> present_group_json(uint64_t ino) const;  // takes mutex_
  static uint64_t item_ino(size_t slot) { return kItemBase + slot; }
  // The item of a number of ours that is one (nullopt for directories and the description).
  std::optional<size_t> item_of(uint64_t ino) const;
  // The dataset and its own number of a number inside one's tree; nullopt otherwise.
  std::optional<Mapped> mapped(uint64_t ino) const;
  std::optional<Mapped> mapped_below_dataset(uint64_t ino) const;
  // A directory a dataset's tree holds (its root: local kRootIno) as the dataset
  // and its own number; nullopt for the collection's own directories.
  std::optional<Mapped> inside_dataset(uint64_t ino) const;
  uint64_t to_mount(size_t slot, uint64_t local);
  void translate(size_t slot, KernelNotes& notes);
  Item& item(size_t slot) const;
  // The dataset's tree, opened when closed. Throws FsError (EIO when it cannot be read).
  std::shared_ptr<MountTree> child(size_t slot);
  std::shared_ptr<MountTree> child_if_open(size_t slot) const;
  std::shared_ptr<const ByteSource> file_bytes(size_t slot);
  struct stat own_attributes(uint64_t ino, const std::string& path, bool directory) const;
  int refusal() const { return settings_.writable ? EPERM : EROFS; }

  const std::shared_ptr<CollectionSource> source_;
  Settings settings_;
  struct timespec mount_time_ {};

  mutable std::mutex mutex_;  // everything below
  std::vector<Dir> dirs_;
  std::map<std::string, size_t> dir_index_;
  std::vector<std::unique_ptr<Item>> items_;
  std::map<std::string, size_t> item_index_;
  std::string listed_at_text_;
  std::chrono::steady_clock::time_point round_at_;
  uint64_t listings_ = 0;
  std::list<size_t> lru_;  // open Volumes, most recently used first
  std::vector<size_t> open_stores_;  // open StoreTrees (they close their own leaves)
  std::unordered_map<uint64_t, Mapped> mapped_;
  std::map<std::pair<size_t, uint64_t>, uint64_t> mount_numbers_;
  uint64_t next_mapped_ = kMappedBase;
  std::mutex refresh_mutex_;  // one refresh round at a time
  std::chrono::steady_clock::time_point children_refreshed_at_{};

  std::mutex json_mutex_;
  std::shared_ptr<const std::string> description_;
};

}  // namespace blosc2fs
