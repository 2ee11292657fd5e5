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
// commit mutex); readers are never blocked by a commit's disk work, only by
// the moment its result is installed (the state lock, held exclusively).
//
// Errors are thrown as FsError (the errno to answer) after one log line
// naming the file when a commit fails; FormatError / IoError escape only from
// reads of damaged frames.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chunk_cache.h"
#include "chunk_overlay.h"
#include "frame_editor.h"
#include "frame_files.h"
#include "inodes.h"
#include "json_prefix.h"
#include "kernel_tracker.h"
#include "mount_tree.h"
#include "name_table.h"
#include "node.h"
#include "prefetcher.h"
#include "tree_access.h"

namespace blosc2fs {

struct NpyReplacement;  // npy_replacement.h

struct VolumeOptions {
  bool writable = false;
  // The tree shows the frame's owner, group and permissions (tree_access.h), but for these.
  AccessOverrides access;
  uint64_t cache_budget = 64 << 20;
  // Where the chunk cache's buffers come back for reuse: shared by the leaves
  // of a store (each with a small share of the budget, none of which could
  // keep a chunk's buffer alone); null: the Volume's own.
  std::shared_ptr<BufferPool> buffer_pool;
  // Size of the chunks data appends make in a frame without a fixed chunksize
  // (a new empty frame: -o create's chunksize=).
  int64_t preferred_chunksize = 1 << 20;
  // A new array's chunk and block shapes (-o chunkshape=, blockshape=); absent:
  // python-blosc2's choice (b2nd_partition.h).
  std::optional<std::vector<int64_t>> new_array_chunkshape, new_array_blockshape;
  EditOptions edit;
  // A long write to data or chunks/ commits in batches so that memory stays
  // bounded: every `batch_chunks` chunks once they hold `batch_min_bytes`
  // (tiny chunks would otherwise rewrite the index every few kilobytes), and
  // always at `batch_bytes` or half the cache budget, whichever is less.
  size_t batch_chunks = 64;
  uint64_t batch_min_bytes = uint64_t(16) << 20;
  uint64_t batch_bytes = uint64_t(256) << 20;
  // How often, at most, to look for changes made by other programs.
  std::chrono::milliseconds refresh_interval{100};
  // Where the frame comes from when it is not a file of its own (a zip member,
  // a frame embedded in a store): the mount is then read-only and unchanging.
  std::function<std::shared_ptr<const Frame>()> frame_source;
  // A lock sidecar held exclusively around every commit and compaction besides
  // the frame's own: a python-blosc2 .b2d store's (its embed.b2e's), which
  // python-blosc2 holds around every change of the store.
  std::filesystem::path store_lock;
  // Fields frame.json shows instead of (or besides) the frame's own: an embedded
  // store leaf says where its bytes lie rather than naming its in-memory copy.
  Json frame_json_fields = Json::object();
  // The owner, group and modes shown when no local file has them (remote data:
  // the mounting user's, read-only).
  std::optional<FrameAccess> fixed_access;
  // Fields asked anew at each open of frame.json (a remote mount's source and counters).
  std::function<Json()> live_json_fields;
  // Fields .blosc2fs-cache shows after the cache's own, asked at each read
  // (the FUSE layer's: "io_uring=1" when the kernel's requests come over io_uring).
  std::function<std::string()> more_stats;
  // What an earlier Volume of this frame numbered and gave the kernel (a store
  // leaf opened again).
  std::optional<InodeMemory> inodes;
};

class Volume : public MountTree {
 public:
  // Opens the frame (and, when writable, its editor). Throws FormatError /
  // IoError when the frame cannot be opened.
  Volume(const std::filesystem::path& frame_path, VolumeOptions options);
  ~Volume();
  Volume(const Volume&) = delete;
  Volume& operator=(const Volume&) = delete;

  bool writable() const override { return options_.writable; }
  int64_t nchunks() const override;
  ChunkCacheStats cache_stats() const { return cache_.stats(); }
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
  void maybe_refresh(KernelNotes& notes) override;
  // Unmount: commits everything still held, then compacts when due. Logs failures.
  void shutdown() override;
  std::string summary() const override { return "cache " + cache_.stats().text(); }

  // Whether the Volume holds nothing but the committed frame and its inode
  // numbers (no written and uncommitted bytes, no scratch files, no renamed
  // names), so that closing it and opening the frame again with its
  // inode_memory() shows the same tree: a store leaf may then be closed.
  bool closable() const;
  InodeMemory inode_memory() const;

 private:
  // .blosc2fs-cache: the cache's statistics and more_stats, one line.
  std::string stats_text(const ChunkCacheStats& stats) const;
  // What a commit changed in the chunks, for cache and kernel invalidation.
  struct ChunkChanges {
    bool all = false;
    std::vector<int64_t> chunks;
    int64_t from = INT64_MAX;  // every chunk from here on
  };

  // volume.cc: names and reads (state lock held by the caller as noted)
  bool exists(const Node& node) const;                                       // shared
  std::optional<Node> lookup_node(NodeKind dir, std::string_view name) const;  // shared
  int64_t size_of(const Node& node, uint64_t ino) const;                     // shared
  size_t read_locked(uint64_t ino, const Node& node, int64_t offset, MutableByteSpan out);  // shared
  // Throws EIO (after one log line per change) when `file` was opened on an
  // earlier version of the frame's bytes than those shown now.
  void check_version(uint64_t ino, const OpenFile& file, const std::optional<Node>& node) const;  // shared
  void prefetch_chunk(int64_t n);  // on the prefetcher's thread
  std::vector<std::pair<std::string, Node>> listing(NodeKind dir) const;     // shared
  std::string path_of_node(const Node& node) const;

  // zarr_files.cc: the Zarr view's names, listings, sizes and bytes (state lock shared)
  static bool is_zarr_kind(NodeKind kind);
  bool zarr_exists(const Node& node) const;
  std::optional<Node> zarr_lookup(const Node& dir, std::string_view name) const;
  std::optional<DirEntry> zarr_entry(const Node& dir, int64_t cookie) const;
  int64_t zarr_size(const Node& node) const;
  std::string zarr_path(const Node& node) const;  // state lock held (shared or exclusive)
  void zarr_gather(const Node& node, int64_t offset, size_t size, ReadPieces& out);
  // A shard is read without the page cache: the kernel's readahead would turn a
  // reader's request for one inner chunk into a read of the rest of the shard,
  // decoding every block of it.
  bool zarr_read_exactly(const Node& node) const;
  // A shard's st_blksize divides its inner chunk's size (a power of two, at
  // most 1 MiB): buffered readers (Python's) size their reads by it, and a
  // read of one inner chunk must not become a read of the blocks after it.
  blksize_t zarr_io_size(const Node& node) const;  // state lock shared

  // zarr_writes.cc: writes through the Zarr view (docs/zarr.md). A Zarr writer's
  // temporary files (`<key>.<hex>.partial`) are scratch files, in c/...
  // directories named by their path; renamed onto a chunk file they replace
  // that chunk, onto zarr.json they change the attributes.
  static bool is_zarr_scratch_name(std::string_view name);
  std::string zarr_scratch_key(const Node& dir, std::string_view name) const;  // state lock
  std::optional<uint64_t> zarr_scratch(const Node& dir, std::string_view name) const;  // state lock
  uint64_t zarr_create(const Node& dir, const std::string& name, int flags);  // exclusive + commit
  // Whether a rename or unlink in `dir` is the Zarr view's to make.
  bool zarr_owns(const Node& dir, std::string_view name) const;  // state lock
  void zarr_rename(const Node& dir, const std::string& from, const std::string& to, unsigned flags,
                   KernelNotes& notes);  // commit
  void zarr_unlink(const Node& dir, const std::string& name, KernelNotes& notes);  // commit
  void zarr_commit_chunk(uint64_t scratch_ino, const Node& dir, int64_t n, const std::string& to,
                         KernelNotes& notes);  // commit
  void zarr_commit_attributes(uint64_t scratch_ino, KernelNotes& notes);  // commit

  // Records an open file and the version it opens on; whether a file of an
  // older version of that inode is still open.
  bool note_open(OpenFile& file);

  // volume_write.cc (locks: "exclusive" = state lock held exclusively;
  // "commit" = commit mutex held, which every change of the overlay needs)
  Draft& draft_for(uint64_t ino, const Node& node);                         // exclusive
  void write_draft(uint64_t ino, const Node& node, int64_t offset, ByteSpan data);  // exclusive
  void write_chunks(OpenFile& file, const Node& node, int64_t offset, ByteSpan data, KernelNotes& notes);
  void truncate_node(uint64_t ino, const Node& node, int64_t size);          // exclusive (+ commit for chunks)
  uint64_t create_real(NodeKind dir, const std::string& name);              // exclusive + commit
  bool in_frame(const Node& node) const;                                     // shared
  Bytes current_content(uint64_t ino, const Node& node) const;               // shared
  void check_new_layer(NodeKind dir, const std::string& name) const;         // shared
  void unlink_scratch(uint64_t ino, KernelNotes& notes);                     // commit
  void unlink_real(NodeKind dir, const std::string& name, KernelNotes& notes);  // commit
  // The data of an N-d array opened with O_TRUNC, closed before it was written
  // whole (OpenFile::rewrite_end): its staged chunks are dropped and the close
  // is EINVAL, after one log line. Commit mutex held.
  void refuse_partial_rewrite(const OpenFile& file, KernelNotes& notes);

  // volume_rename.cc (commit)
  void rename_scratch_onto_real(uint64_t ino, NodeKind dir, const std::string& to, KernelNotes& notes);
  void rename_real_onto_scratch(NodeKind dir, const std::string& from, const std::string& to, KernelNotes& notes);
  void rename_layer(NodeKind dir, const std::string& from, const std::string& to, KernelNotes& notes);

  // volume_npy.cc: array.npy as an array (its chunks staged in the overlay)
  void write_array(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes);  // takes commit
  size_t read_array_locked(int64_t offset, MutableByteSpan out);              // shared
  // A read of array.npy while a replacement streams: hands the stream's bytes
  // back if the read wants them; the commit mutex it returns (held only while a
  // stream runs) keeps writes from feeding the stream until the read is done.
  std::unique_lock<std::mutex> settle_array_read(int64_t offset, size_t size);
  void truncate_array(int64_t size);                                         // exclusive + commit
  int64_t array_npy_size() const;                                            // shared
  bool replacing_array() const;                                              // shared
  bool array_creatable() const;                                              // shared
  // A whole new array.npy written since truncate(0): checked and committed now,
  // or refused (EINVAL, one log line, the frame unchanged). `when_whole`
  // (fsync): only when the file is as long as its own header says, else it
  // goes on being written. Commit mutex held.
  void finish_array_replacement(KernelNotes& notes, bool when_whole = false);
  // Returns the old tree of a sparse frame replaced whole (see RetiredTree).
  RetiredTree replace_array_from(NpyReplacement& replacement, const Frame& frame, KernelNotes& notes);
  // `tree` is removed once nothing holds `frame` (the frame that reads from it)
  // any more: readers that opened it before the replacement finish their reads.
  void remove_when_released(std::shared_ptr<const Frame>&& frame, RetiredTree tree);
  void remove_released_trees();
  void start_array_stream(NpyReplacement& r);  // commit and state (unique) held
  void take_spooled(NpyReplacement& r);        // commit held
  void unstream_array(NpyReplacement& r);      // commit and state (unique) held
  // Whether the overlay holds enough for a long write to commit a batch.
  bool overlay_batch_due() const;                                            // shared

  // volume_commit.cc
  void commit_draft(uint64_t ino, KernelNotes& notes);                       // takes commit
  void commit_chunks(std::optional<int64_t> skip, const std::string& what, KernelNotes& notes);  // commit
  // Stages with `stage` and commits; on failure discards the staged edits,
  // logs one line about `what` and throws FsError. Commit mutex held.
  void run_commit(const std::string& what, const std::function<void(FrameEditor&)>& stage);
  [[noreturn]] void fail(const std::string& what, int error, const std::string& why) const;
  // Loads the committed frame and shows it: chunk changes invalidate the
  // cache; `after` runs under the exclusive lock before the notes are made.
  void install(const ChunkChanges& changes, KernelNotes& notes, const std::function<void()>& after = {});
  void notes_for_changes(const FrameFiles& before, const FrameFiles& after, const ChunkChanges& changes,
                         KernelNotes& notes);                                // exclusive
  void note_inode(KernelNotes& notes, uint64_t ino);
  void note_entry(KernelNotes& notes, NodeKind dir, const std::string& name);
  void maybe_compact(KernelNotes& notes, bool at_unmount);                   // commit
  ChunkOverlay::Limits overlay_limits(const FrameFiles& files) const;
  std::pair<std::shared_ptr<const Frame>, FrameStamp> open_committed_frame() const;
  // What the disk holds now, to notice other writers on read-only mounts
  // (writable ones ask the editor).
  FrameStamp read_disk_stamp() const;
  // Shows the frame's owner and permissions anew when they changed (chmod,
  // chown, a file replaced by another program): the kernel re-reads the
  // attributes of every inode it holds, and checks access against them.
  void refresh_access(KernelNotes& notes);
  // JSON text -> the msgpack bytes attrs/ stores; FsError(EINVAL) after a log line.
  Bytes attrs_to_msgpack(const std::string& what, ByteSpan text) const;

  const std::filesystem::path path_;
  VolumeOptions options_;
  FrameChunkLoader loader_;
  mutable ChunkCache cache_;
  std::unique_ptr<FrameEditor> editor_;  // writable mounts only

  std::mutex commit_mutex_;  // the editor, and every change of the overlay (lock order: commit, then state)
  mutable std::shared_mutex state_mutex_;
  std::shared_ptr<FrameFiles> files_;
  ChunkOverlay overlay_;
  // Where the last read of data ended (a read starting there is sequential),
  // and the farthest any read reached (chunks before it were read already).
  std::atomic<int64_t> data_read_end_{-1};
  std::atomic<int64_t> data_read_farthest_{0};
  std::shared_ptr<CommitOutcome> overlay_outcome_ = std::make_shared<CommitOutcome>();
  std::unique_ptr<NpyReplacement> npy_replacement_;  // array.npy being replaced whole
  std::atomic<bool> array_streaming_{false};        // its bytes go into a new frame as they arrive
  NameTable names_;  // layer names' numbers, scratch files, drafts, hidden names, writers
  int64_t mtime_ns_ = 0;
  FrameAccess frame_access_;
  // The frame's access now, from the disk: its own file's, or for a frame that is
  // not a file of its own (frame_source) the store's that holds it. Throws IoError.
  FrameAccess read_access() const;
  FrameStamp disk_stamp_;
  int64_t commits_since_compaction_check_ = 0;
  bool committed_any_ = false;
  int64_t size_at_compaction_check_ = 0;

  // Old trees of sparse frames replaced whole, each with the frame that reads
  // from it; swept at every open and release (their own mutex).
  std::mutex retired_mutex_;
  std::vector<std::pair<std::weak_ptr<const Frame>, RetiredTree>> retired_trees_;

  KernelTracker kernel_;  // the kernel's references, cached pages and open files (its own lock)
  std::mutex refresh_mutex_;
  std::chrono::steady_clock::time_point last_refresh_check_{};
  // Which content the frame's files show: set anew (from one counter of the
  // process, so that no two Volumes share a number) when another program's
  // change is loaded, under the state lock held exclusively; our own commits
  // keep it. Files opened on an older one read EIO.
  std::atomic<uint64_t> version_{new_version()};
  static uint64_t new_version();
  mutable std::atomic<uint64_t> stale_reported_{0};  // the version whose stale reads were logged

  // Last: its thread uses the members above, so it stops first.
  Prefetcher prefetcher_{[this](int64_t n) { prefetch_chunk(n); }};
};

}  // namespace blosc2fs
