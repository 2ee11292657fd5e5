// What the kernel holds of a Volume's inodes: its references (entry replies,
// forgets), which of its cached pages and listings are still right, and the
// files open on each version of the frame's content. Invalidations go only to
// inodes it holds; an open learns whether the kernel may keep its pages.
// Thread-safe (its own lock, taken last: no call of it takes another).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "thread_safety.h"

namespace blosc2fs {

class KernelTracker {
 public:
  using Lookups = std::unordered_map<uint64_t, uint64_t>;  // inode -> the kernel's references

  // The references an earlier Volume of the same frame left (a store leaf opened again).
  void seed(Lookups lookups) EXCLUDES(mutex_);
  Lookups lookups() const EXCLUDES(mutex_);
  void remember(uint64_t ino) EXCLUDES(mutex_);
  // The kernel dropped `count` references; true when it holds none any more.
  bool forget(uint64_t ino, uint64_t count) EXCLUDES(mutex_);
  // The inodes the kernel holds that `pick` accepts.
  std::vector<uint64_t> held(const std::function<bool(uint64_t)>& pick) const EXCLUDES(mutex_);
  // Inode `ino`'s content changed; whether the kernel holds it (and must be told).
  bool changed(uint64_t ino) EXCLUDES(mutex_);
  // Every inode's content changed (another program's change was loaded).
  void all_changed() EXCLUDES(mutex_);
  // Whether the kernel's pages (or listing) of `ino` are still right since it was
  // last opened; records this open.
  bool cache_still_valid(uint64_t ino) EXCLUDES(mutex_);
  void opened(uint64_t ino) EXCLUDES(mutex_);  // an open that asks nothing (a new file)
  // A file of `ino` opened on `version` of the content; whether one of an older
  // version is still open (then the kernel's shared pages are the older file's).
  bool file_opened(uint64_t ino, uint64_t version) EXCLUDES(mutex_);
  void file_released(uint64_t ino, uint64_t version) EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;
  Lookups lookups_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, uint64_t> changed_at_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, uint64_t> opened_at_ GUARDED_BY(mutex_);
  uint64_t clock_ GUARDED_BY(mutex_) = 1;
  uint64_t all_changed_at_ GUARDED_BY(mutex_) = 0;
  std::unordered_map<uint64_t, std::map<uint64_t, int>> open_versions_ GUARDED_BY(mutex_);
};

}  // namespace blosc2fs
