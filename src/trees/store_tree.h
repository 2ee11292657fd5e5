// A python-blosc2 store mounted as a tree: each key's groups are directories,
// each leaf a directory holding the single-frame tree of its frame (a Volume,
// opened on first use; at most `max_open` stay open, the least recently used
// closed first), and store.json at the root.
//
// Its parts: what the store shows and how it is numbered (store_layout.h), the
// leaves' open Volumes and what closed ones numbered (open_trees.h), store.json
// (store_json_text.h) and each table's table.csv (table_csv_stream.h), each with
// its own lock. This file passes each request to the part it is for.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "open_trees.h"
#include "store.h"
#include "store_json_text.h"
#include "store_layout.h"
#include "thread_safety.h"
#include "volume.h"

namespace blosc2fs {

class StoreTree : public MountTree {
 public:
  // `leaf_options`: what each leaf's Volume gets (its cache budget, access overrides).
  // `writable`: the leaves that are frame files of a .b2d are edited like a
  // mounted frame, under the store's lock; every other leaf is read-only.
  StoreTree(std::unique_ptr<Store> store, VolumeOptions leaf_options, size_t max_open, bool writable = false);
  ~StoreTree() override;

  const Store& store() const { return *store_; }

  bool writable() const override { return writable_; }
  // Unmount: every open leaf commits what it still holds.
  void shutdown() override;
  int64_t nchunks() const override { return int64_t(layout_.leaf_count()); }
  bool underlying_statfs(struct statvfs& out) const override;
  std::optional<Node> node(uint64_t ino) const override;
  std::optional<uint64_t> lookup(uint64_t parent, std::string_view name) override;
  std::optional<DirEntry> entry(uint64_t dir, int64_t cookie) override;
  struct stat attributes(uint64_t ino) override;
  std::string path_of(uint64_t ino) const override;
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
  // Turns an open file's inode number into its leaf Volume's own for one call,
  // and back (and the call's kernel notes into the mount's numbers) when it ends.
  class LeafCall;

  // The leaf's Volume, opened when closed (one leaf at a time, as the store's
  // lock for writable leaves asks); closes the least recently used closable
  // ones beyond max_open. Throws FsError ENOENT for a remote leaf.
  std::shared_ptr<Volume> volume(uint64_t slot) EXCLUDES(opening_);
  std::shared_ptr<Volume> open_volume_if_open(uint64_t slot) const;
  // The Volume of an open file: EBADF when its leaf is not open.
  std::shared_ptr<Volume> pinned_volume(uint64_t slot) const;
  static void translate(uint64_t slot, KernelNotes& notes);
  struct stat directory_attributes(uint64_t ino) const;
  // EROFS, after one log line, for a write to a leaf that cannot be changed in place.
  [[noreturn]] void refuse_write(uint64_t slot) const;

  std::unique_ptr<Store> store_;
  VolumeOptions leaf_options_;
  bool writable_;
  struct timespec store_time_ {};
  // Who may read and write the store itself (the .b2d directory, the .b2z or .b2e
  // file): its groups, store.json and tables show these bits (tree_access.h).
  FrameAccess store_access_;
  StoreLayout layout_;
  mutable OpenTrees leaves_;  // slot - 1: the leaf's Volume
  StoreJsonText store_json_;
  Mutex opening_;  // held while a leaf's Volume is made
};

}  // namespace blosc2fs
