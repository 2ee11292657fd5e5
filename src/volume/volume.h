// The mounted frame as a filesystem, without FUSE: the names, the files'
// bytes, and the write side. Every method is thread-safe.
//
// What the mount shows is the committed frame (a FrameFiles snapshot, replaced
// after each commit) plus what is written and not yet committed:
//   - layer files (meta/, vlmeta/, attrs/) and raw/N.chunk being written are
//     held whole, as drafts, until close;
//   - chunks/N and data share one ChunkOverlay of written chunks;
//   - editor scratch files live in memory only.
// Commits go through the one FrameEditor of the mount, one at a time (the
// commit lock, CommitPipeline's); readers are never blocked by a commit's disk
// work, only by the moment its result is installed (the state lock,
// VolumeState's, held exclusively).
//
// Volume answers the MountTree calls and hands the work to its collaborators:
// VolumeState (what is shown, the state lock), CommitPipeline (commits),
// FileEdits (drafts, scratch files, staged chunks, names), ArrayNpy (array.npy
// written as an array), ZarrView (the Zarr view's bytes and writes) and
// ChangeWatch (other programs' changes).
//
// Errors are thrown as FsError (the errno to answer) after one log line
// naming the file when a commit fails; FormatError / IoError escape only from
// reads of damaged frames.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "array_npy.h"
#include "change_watch.h"
#include "file_edits.h"
#include "mount_tree.h"
#include "prefetcher.h"
#include "volume_commit.h"
#include "volume_options.h"
#include "volume_state.h"
#include "zarr_view.h"

namespace blosc2fs {

class Volume : public MountTree {
 public:
  // Opens the frame (and, when writable, its editor). Throws FormatError /
  // IoError when the frame cannot be opened.
  Volume(const std::filesystem::path& frame_path, VolumeOptions options);
  ~Volume();
  Volume(const Volume&) = delete;
  Volume& operator=(const Volume&) = delete;

  bool writable() const override { return state_.options.writable; }
  int64_t nchunks() const override;
  ChunkCacheStats cache_stats() const { return state_.cache.stats(); }
  // statvfs of the file system holding the frame (the space commits use).
  bool underlying_statfs(struct statvfs& out) const override;

  // --- names ---
  std::optional<Node> node(uint64_t ino) const override;
  std::optional<uint64_t> lookup(uint64_t parent, std::string_view name) override;
  // The first entry at cookie `cookie` or later ("." and ".." excluded).
  std::optional<DirEntry> entry(uint64_t dir, int64_t cookie) override;
  struct stat attributes(uint64_t ino) override;
  std::string path_of(uint64_t ino) const override;  // "chunks/00000003", for log lines
  // The kernel's references to inodes (entry replies and forget), so that
  // invalidations go only to inodes it knows.
  void remember(uint64_t ino) override;
  void forget(uint64_t ino, uint64_t count) override;

  // --- files ---
  // `keep_cache`: the kernel may keep its cached pages (unchanged since the
  // last open); `direct_io`: generated on every read (.blosc2fs-cache), or a
  // file still open on the content before another program's change (the new
  // content must not enter the page cache that file reads through).
  std::unique_ptr<OpenFile> open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io, KernelNotes& notes) override;
  // Whether the kernel's cached pages (or readdir listing) of `ino` are still
  // right since it was last opened; records this open.
  bool cache_still_valid(uint64_t ino) override;
  // The bytes shown now (a file opened for this read alone).
  size_t read(uint64_t ino, int64_t offset, MutableByteSpan out);
  // The bytes of an open file of `ino`, appended to `out`: chunk bytes as views of the
  // chunk cache (no copy), everything else copied. EIO when another program's
  // change was loaded since the file was opened (see OpenFile::version).
  void read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) override;
  void write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) override;
  // close()/fsync(): commits what the file holds; throws FsError when it cannot.
  void flush(OpenFile& file, KernelNotes& notes, bool fsync = false) override;
  void release(std::unique_ptr<OpenFile> file, KernelNotes& notes) override;
  // chmod/chown/utimens are accepted and ignored; a size change is an edit,
  // committed at once when no open file will commit it later.
  struct stat setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) override;
  std::pair<uint64_t, std::unique_ptr<OpenFile>> create(uint64_t parent, std::string_view name, int flags,
                                                        KernelNotes& notes) override;
  void unlink(uint64_t parent, std::string_view name, KernelNotes& notes) override;
  void rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
              unsigned flags, KernelNotes& notes) override;

  // Reloads when another program changed the frame (at most once per
  // refresh_interval, and only when nothing written is waiting); follows a
  // change of the frame's owner, group or permissions at once.
  void maybe_refresh(KernelNotes& notes) override { watch_.maybe_refresh(notes); }
  // Unmount: commits everything still held, then compacts when due. Logs failures.
  void shutdown() override { commits_.shutdown(); }
  std::string summary() const override { return "cache " + state_.cache.stats().text(); }

  // Whether the Volume holds nothing but the committed frame and its inode
  // numbers (no written and uncommitted bytes, no scratch files, no renamed
  // names), so that closing it and opening the frame again with its
  // inode_memory() shows the same tree: a store leaf may then be closed.
  bool closable() const;
  InodeMemory inode_memory() const;

 private:
  size_t read_locked(uint64_t ino, const Node& node, int64_t offset, MutableByteSpan out)
      REQUIRES_SHARED(state_.mutex);
  // Throws EIO (after one log line per change) when `file` was opened on an
  // earlier version of the frame's bytes than those shown now.
  void check_version(uint64_t ino, const OpenFile& file, const std::optional<Node>& node) const
      REQUIRES_SHARED(state_.mutex);
  void prefetch_chunk(int64_t n);  // on the prefetcher's thread
  // Records an open file and the version it opens on; whether a file of an
  // older version of that inode is still open.
  bool note_open(OpenFile& file);

  // The collaborators, each with its own part of the work (their headers say
  // which); the lock order is written once, in volume_state.h.
  VolumeState state_;
  CommitPipeline commits_;
  ArrayNpy npy_;
  FileEdits edits_;
  ZarrView zarr_;
  ChangeWatch watch_;
  // Where the last read of data ended (a read starting there is sequential),
  // and the farthest any read reached (chunks before it were read already).
  std::atomic<int64_t> data_read_end_{-1};
  std::atomic<int64_t> data_read_farthest_{0};
  mutable std::atomic<uint64_t> stale_reported_{0};  // the version whose stale reads were logged

  // Last: its thread uses the members above, so it stops first.
  Prefetcher prefetcher_{[this](int64_t n) { prefetch_chunk(n); }};
};

}  // namespace blosc2fs
