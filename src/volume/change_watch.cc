// ChangeWatch: other programs' changes of the frame, its owner and permissions.
#include "change_watch.h"

#include <spdlog/spdlog.h>

#include "fs_error.h"

#include "npy_replacement.h"

namespace blosc2fs {

ChangeWatch::ChangeWatch(VolumeState& state, CommitPipeline& commits) : state_(state), commits_(commits) {}

bool ChangeWatch::due() {
  MutexLock lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < state_.options.refresh_interval) return false;
  last_check_ = now;
  return true;
}

void ChangeWatch::maybe_refresh(KernelNotes& notes) {
  if (!due()) return;
  refresh_access(notes);
  UniqueMutexLock commit(commits_.mutex(), std::defer_lock);
  if (!commit.try_lock()) return;  // a commit is running: it reloads anyway
  {
    ReaderLock lock(state_.mutex);
    if (!state_.overlay.clean() || state_.npy_replacement) return;  // written chunks sit on the loaded frame
  }
  bool changed;
  try {
    changed = commits_.editor() ? commits_.editor()->refresh()
                                : state_.read_disk_stamp() != state_.installed_disk_stamp(commits_.mutex());
  } catch (const std::exception& e) {
    spdlog::debug("{}: cannot check for changes: {}", state_.path.string(), e.what());
    return;
  }
  if (!changed) return;
  spdlog::info("{} was changed by another program: showing the new content", state_.path.string());
  ChunkChanges all;
  all.all = true;
  try {
    // Files open now were opened on the old content: they read EIO from now on.
    commits_.install(all, notes, [this] { state_.version = VolumeState::new_version(); });
  } catch (const FsError&) {
    return;
  }
  state_.kernel.all_changed();
}

void ChangeWatch::refresh_access(KernelNotes& notes) {
  FrameAccess now;
  try {
    now = state_.read_access();
  } catch (const std::exception& e) {
    spdlog::debug("{}: cannot check its owner and permissions: {}", state_.path.string(), e.what());
    return;
  }
  {
    ReaderLock lock(state_.mutex);
    if (now == state_.frame_access) return;
  }
  {
    WriterLock lock(state_.mutex);
    state_.frame_access = now;
  }
  spdlog::info("{}: owner, group or permissions changed (uid {}, gid {}, mode {:o}): the tree follows",
               state_.path.string(), now.uid, now.gid, unsigned(now.read | now.write));
  for (uint64_t ino = kRootIno; ino <= kRootIno + std::size(kRootChildren); ++ino) notes.attributes.push_back(ino);
  for (uint64_t ino : state_.kernel.held([](uint64_t ino) { return ino > kRootIno + std::size(kRootChildren); }))
    notes.attributes.push_back(ino);
}

}  // namespace blosc2fs
