// What the Volume and its collaborators (CommitPipeline, FileEdits, ArrayNpy,
// ZarrView, ChangeWatch) share: the frame shown now and what is written on top
// of it, under the state lock, and the questions asked of them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chunk_cache.h"
#include "chunk_overlay.h"
#include "frame_files.h"
#include "kernel_tracker.h"
#include "mount_tree.h"
#include "name_table.h"
#include "node.h"
#include "thread_safety.h"
#include "volume_options.h"

namespace blosc2fs {

struct NpyReplacement;  // npy_replacement.h

// Files held whole in memory (layers being written, scratch files) stay below this.
inline constexpr int64_t kMaxHeldFile = int64_t(1) << 30;

// Lock order (the one place it is written): the commit lock (CommitPipeline's,
// held around the editor and every change of the overlay), then the state lock
// (`mutex` below), then the leaves that take no other lock: the kernel
// tracker's, the chunk cache's, ArrayNpy's lock of retired trees. ChangeWatch's
// lock is held alone. Readers take only the state lock, shared; a commit's disk
// work runs under the commit lock alone, and the state lock is held exclusively
// only while its result is installed.
//
// clang checks it (thread_safety.h): the members below are GUARDED_BY the
// state lock, CommitPipeline's mutex_ is ACQUIRED_BEFORE it, and functions say
// what they need with REQUIRES / REQUIRES_SHARED / EXCLUDES. The analysis
// knows a lock by the path that names it, and each collaborator reaches these
// two by its own reference (FileEdits' state_.mutex is not, to it, ZarrView's
// state_.mutex): so a collaborator's call that another one makes with the
// locks held says so in a comment and asserts them on entry
// (SharedMutex::assert_held), while calls within one class, and every call of
// VolumeState's and CommitPipeline's, are checked at the caller.
struct VolumeState {
  VolumeState(const std::filesystem::path& frame_path, VolumeOptions volume_options);
  ~VolumeState();
  VolumeState(const VolumeState&) = delete;
  VolumeState& operator=(const VolumeState&) = delete;

  // --- questions about the tree (state lock held, shared at least) ---
  bool exists(const Node& node) const REQUIRES_SHARED(mutex);
  std::optional<Node> lookup_node(NodeKind dir, std::string_view name) const REQUIRES_SHARED(mutex);
  std::vector<std::pair<std::string, Node>> listing(NodeKind dir) const REQUIRES_SHARED(mutex);
  int64_t size_of(const Node& node, uint64_t ino) const REQUIRES_SHARED(mutex);
  // "chunks/00000003", for log lines. The state lock is needed only for the
  // Zarr view's names (made from the array's grid), not for the others.
  std::string path_of_node(const Node& node) const NO_THREAD_SAFETY_ANALYSIS;
  // Whether a layer or raw chunk file is the committed frame's (not one created since).
  bool in_frame(const Node& node) const REQUIRES_SHARED(mutex);
  // The whole current content of a file (what a rename onto a scratch name keeps).
  Bytes current_content(uint64_t ino, const Node& node) const REQUIRES_SHARED(mutex);
  // Throws FsError, after a log line, when a vlmetalayer of that name cannot be made.
  void check_new_layer(NodeKind dir, const std::string& name) const REQUIRES_SHARED(mutex);
  int64_t array_npy_size() const REQUIRES_SHARED(mutex);
  // A frame that holds nothing yet (-o create's empty frame) becomes an array
  // when a .npy is copied to array.npy.
  bool array_creatable() const REQUIRES_SHARED(mutex);
  // Whether the overlay holds enough for a long write to commit a batch.
  bool overlay_batch_due() const REQUIRES_SHARED(mutex);
  // .blosc2fs-cache: the cache's statistics and more_stats, one line.
  std::string stats_text(const ChunkCacheStats& stats) const;

  // --- asked under the commit lock alone (`commit_lock`), which every change
  // of these holds too, with the state lock exclusively: the analysis has no
  // "either lock", so it checks the caller holds the commit lock, not the body ---
  bool replacing_npy([[maybe_unused]] Mutex& commit_lock) const REQUIRES(commit_lock)
      NO_THREAD_SAFETY_ANALYSIS {
    return npy_replacement != nullptr;
  }
  FrameStamp installed_disk_stamp([[maybe_unused]] Mutex& commit_lock) const REQUIRES(commit_lock)
      NO_THREAD_SAFETY_ANALYSIS {
    return disk_stamp;
  }

  // --- the frame on disk (no lock needed) ---
  ChunkOverlay::Limits overlay_limits(const FrameFiles& frame_files) const;
  std::pair<std::shared_ptr<const Frame>, FrameStamp> open_committed_frame() const;
  // What the disk holds now, to notice other writers on read-only mounts
  // (writable ones ask the editor).
  FrameStamp read_disk_stamp() const;
  // The frame's access now, from the disk: its own file's, or for a frame that is
  // not a file of its own (frame_source) the store's that holds it. Throws IoError.
  FrameAccess read_access() const;

  // --- what the kernel is told after a change ---
  void note_inode(KernelNotes& notes, uint64_t ino);
  static void note_entry(KernelNotes& notes, NodeKind dir, const std::string& name);

  // A new number for the content shown (one counter of the process, so that no
  // two Volumes share a number).
  static uint64_t new_version();

  const std::filesystem::path path;
  VolumeOptions options;
  FrameChunkLoader loader;
  mutable ChunkCache cache;

  mutable SharedMutex mutex;  // the state lock
  std::shared_ptr<FrameFiles> files GUARDED_BY(mutex);
  ChunkOverlay overlay GUARDED_BY(mutex);
  std::shared_ptr<CommitOutcome> overlay_outcome GUARDED_BY(mutex) = std::make_shared<CommitOutcome>();
  // array.npy being replaced whole (ArrayNpy)
  std::unique_ptr<NpyReplacement> npy_replacement GUARDED_BY(mutex);
  // A write to array.npy in place was refused: the kernel's pages of it may hold
  // bytes the frame does not (a memory map's page written back), so the next
  // commit drops them even if its chunks came through them.
  bool npy_pages_stale GUARDED_BY(mutex) = false;
  NameTable names GUARDED_BY(mutex);  // layer names' numbers, scratch files, drafts, hidden names, writers
  int64_t mtime_ns GUARDED_BY(mutex) = 0;
  FrameAccess frame_access GUARDED_BY(mutex);
  FrameStamp disk_stamp GUARDED_BY(mutex);

  KernelTracker kernel;  // the kernel's references, cached pages and open files (its own lock)
  // Which content the frame's files show: set anew when another program's
  // change is loaded, under the state lock held exclusively; our own commits
  // keep it. Files opened on an older one read EIO.
  std::atomic<uint64_t> version{new_version()};
};

}  // namespace blosc2fs
