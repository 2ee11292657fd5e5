// Other programs' changes: the frame reloaded when another writer changed it
// (at most once per refresh_interval, and only when nothing written is
// waiting), its owner, group or permissions followed at once.
#pragma once

#include <chrono>

#include "thread_safety.h"
#include "volume_commit.h"
#include "volume_state.h"

namespace blosc2fs {

class ChangeWatch {
 public:
  ChangeWatch(VolumeState& state, CommitPipeline& commits);

  void maybe_refresh(KernelNotes& notes) EXCLUDES(mutex_);

 private:
  // Whether refresh_interval has passed since the last check; starts a new one.
  bool due() EXCLUDES(mutex_);
  // Shows the frame's owner and permissions anew when they changed (chmod,
  // chown, a file replaced by another program): the kernel re-reads the
  // attributes of every inode it holds, and checks access against them.
  void refresh_access(KernelNotes& notes);

  VolumeState& state_;
  CommitPipeline& commits_;
  Mutex mutex_;
  std::chrono::steady_clock::time_point last_check_ GUARDED_BY(mutex_){};
};

}  // namespace blosc2fs
