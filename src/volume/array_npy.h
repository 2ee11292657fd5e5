// array.npy written as an array (docs/writing.md, "array.npy"): writes in
// place staged in the chunk overlay; a whole new file (truncated to 0, then
// written) made into the new array as it arrives, or held until close; the old
// trees of sparse frames replaced whole, removed once no reader holds them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "read_pieces.h"
#include "thread_safety.h"
#include "volume_commit.h"
#include "volume_state.h"

namespace blosc2fs {

class ArrayNpy {
 public:
  ArrayNpy(VolumeState& state, CommitPipeline& commits);

  void write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes)
      EXCLUDES(commits_.mutex(), state_.mutex);
  size_t read_locked(int64_t offset, MutableByteSpan out);  // state lock shared
  // Bytes [offset, offset + size) as views of the decoded committed chunks,
  // when they lie in few runs of them (chunks of whole rows: one run each)
  // and no write waits in those chunks; false, with nothing added, otherwise
  // (read_locked copies them). State lock shared.
  bool gather_views(int64_t offset, size_t size, ReadPieces& out);
  // A read of array.npy while a replacement streams: hands the stream's bytes
  // back if the read wants them; the commit lock it returns (held only while a
  // stream runs) keeps writes from feeding the stream until the read is done.
  UniqueMutexLock settle_read(int64_t offset, size_t size) EXCLUDES(commits_.mutex(), state_.mutex);
  void truncate(int64_t size);  // state lock exclusive + commit lock
  // A whole new array.npy written since truncate(0): checked and committed now,
  // or refused (EINVAL, one log line, the frame unchanged). `when_whole`
  // (fsync): only when the file is as long as its own header says, else it
  // goes on being written. Commit lock held.
  void finish_replacement(KernelNotes& notes, bool when_whole = false) EXCLUDES(state_.mutex);
  // Removes the retired trees no reader holds any more (at every open and release).
  void remove_released_trees() EXCLUDES(retired_mutex_);

 private:
  // Returns the old tree of a sparse frame replaced whole (see RetiredTree).
  RetiredTree replace_from(NpyReplacement& replacement, const Frame& frame, KernelNotes& notes)
      REQUIRES(commits_.mutex());
  // `tree` is removed once nothing holds `frame` (the frame that reads from it)
  // any more: readers that opened it before the replacement finish their reads.
  // Held by nobody else, both go after the reply (KernelNotes::release_after_reply).
  void remove_when_released(std::shared_ptr<const Frame>&& frame, RetiredTree tree, KernelNotes& notes)
      EXCLUDES(retired_mutex_);
  void start_stream(NpyReplacement& r) REQUIRES(commits_.mutex(), state_.mutex);
  void take_spooled(NpyReplacement& r) REQUIRES(commits_.mutex());
  void unstream(NpyReplacement& r) REQUIRES(commits_.mutex(), state_.mutex);

  VolumeState& state_;
  CommitPipeline& commits_;
  std::atomic<bool> streaming_{false};  // a replacement's bytes go into a new frame as they arrive
  Mutex retired_mutex_ ACQUIRED_AFTER(state_.mutex);  // a leaf (volume_state.h)
  std::vector<std::pair<std::weak_ptr<const Frame>, RetiredTree>> retired_trees_ GUARDED_BY(retired_mutex_);
};

}  // namespace blosc2fs
