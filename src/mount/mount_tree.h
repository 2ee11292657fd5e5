// The mount model: what the FUSE adapter (src/fs/) serves, whatever tree it is
// (one frame's Volume, a store's StoreTree, a collection): the tree's interface
// and the types its operations exchange. Inode numbers are the tree's own.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bytes.h"
#include "node.h"
#include "read_pieces.h"

namespace blosc2fs {

// What the kernel must forget after an operation (fuse_lowlevel_notify_inval_*).
struct KernelNotes {
  std::vector<uint64_t> inodes;
  std::vector<uint64_t> attributes;  // inodes whose attributes alone changed (owner, mode): pages stay
  std::vector<std::pair<uint64_t, std::string>> entries;  // (parent inode, name)
  // Objects whose last reference the notifier drops once the notes are sent,
  // off the request's path: a frame a rewrite replaced, whose unlinked file
  // its file system takes tens of milliseconds to free at the last close (77
  // ms for 220 MB on ext4, which `cp` into array.npy waited for).
  std::vector<std::shared_ptr<const void>> release_after_reply;
  // Nothing to tell the kernel (release_after_reply aside).
  bool empty() const { return inodes.empty() && attributes.empty() && entries.empty(); }
};

struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  bool directory = false;
  int64_t next = 0;  // the cookie to ask for after this entry
  bool symlink = false;
};

// The outcome of the edits that went into one commit, shared by the open
// files that contributed to them, so each learns of a failure at its close.
struct CommitOutcome {
  int error = 0;
};

struct OpenFile {
  uint64_t ino = 0;
  // The content of the frame the file was opened on (VolumeState::version): once
  // another program's change is loaded, the file reads EIO rather than go on
  // with bytes of the new version (our own commits keep the version).
  uint64_t version = 0;
  bool writable = false;
  // Written (or truncated) through this handle since its last flush. A flush
  // without it commits nothing: shells open, dup2 and close the original
  // descriptor before writing, and that close must not store an empty file.
  bool wrote = false;
  // Flushed (a descriptor of it closed, or fsync) and not written since. Its
  // release comes later, asynchronously; until then a truncate(2) by path must
  // not wait for it as for a writer still at work (Volume::setattr).
  std::atomic<bool> flushed{false};
  // The data of an N-d array opened with O_TRUNC (`cp x data`): it keeps its
  // size, so it is written anew whole instead; how far the writes from its start
  // reached (-1: not such a file). A close before they reach its end is EINVAL.
  int64_t rewrite_end = -1;
  // Opened with FOPEN_DIRECT_IO: its writes do not go through the kernel's pages.
  bool direct_io = false;
  std::shared_ptr<CommitOutcome> outcome;  // of this file's latest edits
};

// What the FUSE operations serve: one Volume (a mounted frame), or a tree of
// them (a python-blosc2 store, store_tree.h; a collection, collection_tree.h).
class MountTree {
 public:
  virtual ~MountTree() = default;
  virtual bool writable() const = 0;
  // Whether nothing at `ino` can change: a read-only mount, or a dataset that
  // cannot be changed in place (a store's embedded or zip leaf, a remote one).
  // Every change there answers EROFS, as on a read-only mount.
  virtual bool read_only_at(uint64_t ino) { return (void)ino, !writable(); }
  virtual int64_t nchunks() const = 0;  // for statfs' file count
  virtual bool underlying_statfs(struct statvfs& out) const = 0;
  virtual std::optional<Node> node(uint64_t ino) const = 0;
  virtual std::optional<uint64_t> lookup(uint64_t parent, std::string_view name) = 0;
  virtual std::optional<DirEntry> entry(uint64_t dir, int64_t cookie) = 0;
  virtual struct stat attributes(uint64_t ino) = 0;
  virtual std::string path_of(uint64_t ino) const = 0;
  // A symlink's target text (only collections show symlinks); EINVAL for anything else.
  virtual std::string readlink(uint64_t ino);
  virtual void remember(uint64_t ino) = 0;
  virtual void forget(uint64_t ino, uint64_t count) = 0;
  virtual std::unique_ptr<OpenFile> open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                         KernelNotes& notes) = 0;
  virtual bool cache_still_valid(uint64_t ino) = 0;
  // The bytes of inode `ino` at `offset`, read through the open `file` (the
  // version it opened on). `ino` is this tree's number: the handle's own
  // field is the mount's, and a write through it renumbers it for a moment.
  virtual void read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) = 0;
  virtual void write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) = 0;
  virtual void flush(OpenFile& file, KernelNotes& notes, bool fsync = false) = 0;
  virtual void release(std::unique_ptr<OpenFile> file, KernelNotes& notes) = 0;
  virtual struct stat setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) = 0;
  virtual std::pair<uint64_t, std::unique_ptr<OpenFile>> create(uint64_t parent, std::string_view name, int flags,
                                                                KernelNotes& notes) = 0;
  virtual void unlink(uint64_t parent, std::string_view name, KernelNotes& notes) = 0;
  virtual void rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
                      unsigned flags, KernelNotes& notes) = 0;
  virtual void maybe_refresh(KernelNotes& notes) = 0;
  // Unmount: commits whatever is still held (open datasets', open leaves'); logs failures.
  virtual void shutdown() = 0;
  // What the unmount's log line adds (a frame's cache statistics); empty for none.
  virtual std::string summary() const { return {}; }
};

}  // namespace blosc2fs
