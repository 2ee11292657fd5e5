// The commit pipeline of a Volume: the one FrameEditor of the mount and the
// commit lock around it, the commits of drafts and staged chunks, showing
// their result (install), compaction and what unmount commits.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frame_editor.h"
#include "thread_safety.h"
#include "volume_state.h"

namespace blosc2fs {

// What a commit changed in the chunks, for cache and kernel invalidation.
struct ChunkChanges {
  bool all = false;
  std::vector<int64_t> chunks;
  int64_t from = INT64_MAX;  // every chunk from here on
  // Every chunk changed was written through array.npy's pages, which show the
  // committed bytes already: the kernel keeps them (a memory map stays mapped).
  bool npy_pages_current = false;
  // array.npy was replaced whole by bytes that are its new content, unless its
  // header differs (no byte-order conversion): the header written. When the
  // new array.npy starts with it, the kernel keeps the pages the writer left
  // (cp's 537 MB: 67 ms of invalidation before its close returned).
  std::optional<std::string> npy_written_header;
};

class CommitPipeline {
 public:
  // Opens the editor of a writable mount.
  explicit CommitPipeline(VolumeState& state);
  ~CommitPipeline();
  CommitPipeline(const CommitPipeline&) = delete;
  CommitPipeline& operator=(const CommitPipeline&) = delete;

  // Loads the committed frame and shows it (at the Volume's construction).
  // Throws FormatError / IoError.
  void load() NO_THREAD_SAFETY_ANALYSIS;  // before any other thread sees the Volume: no lock
  // The commit lock (volume_state.h gives the lock order): the editor, and every
  // change of the overlay.
  Mutex& mutex() RETURN_CAPABILITY(mutex_) { return mutex_; }
  FrameEditor* editor() { return editor_.get(); }  // null on read-only mounts

  // Stages with `stage` and commits; on failure discards the staged edits,
  // logs one line about `what` and throws FsError. Commit lock held.
  void run_commit(const std::string& what, const std::function<void(FrameEditor&)>& stage) REQUIRES(mutex_);
  // One log line: `what` is not stored in the frame, and why; throws FsError{error}.
  [[noreturn]] static void fail(const std::string& what, int error, const std::string& why);
  // Loads the committed frame and shows it: chunk changes invalidate the
  // cache; `after` runs under the exclusive state lock before the notes are made.
  void install(const ChunkChanges& changes, KernelNotes& notes, const std::function<void()>& after = {})
      REQUIRES(mutex_) EXCLUDES(state_.mutex);
  void commit_draft(uint64_t ino, KernelNotes& notes) EXCLUDES(mutex_);  // takes the commit lock
  // The staged chunks but the one `skip` (still being written). Commit lock held.
  void commit_chunks(std::optional<int64_t> skip, const std::string& what, KernelNotes& notes) REQUIRES(mutex_);
  void maybe_compact(KernelNotes& notes, bool at_unmount) REQUIRES(mutex_);
  // JSON text -> the msgpack bytes attrs/ stores; FsError(EINVAL) after a log line.
  Bytes attrs_to_msgpack(const std::string& what, ByteSpan text) const;
  // Unmount: commits everything still held, then compacts when due. Logs failures.
  void shutdown() EXCLUDES(mutex_);

 private:
  // What the kernel is told of a change from `before` to `after` (state lock held exclusively).
  void notes_for_changes(const FrameFiles& before, const FrameFiles& after, const ChunkChanges& changes,
                         KernelNotes& notes) REQUIRES(state_.mutex);

  VolumeState& state_;
  std::unique_ptr<FrameEditor> editor_;  // writable mounts only
  // The commit lock, taken before the state lock (volume_state.h).
  Mutex mutex_ ACQUIRED_BEFORE(state_.mutex);
  // Compaction bookkeeping.
  int64_t commits_since_compaction_check_ GUARDED_BY(mutex_) = 0;
  bool committed_any_ GUARDED_BY(mutex_) = false;
  int64_t size_at_compaction_check_ GUARDED_BY(mutex_) = 0;
};

}  // namespace blosc2fs
