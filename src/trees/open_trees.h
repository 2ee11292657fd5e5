// The trees of a store's leaves or of a collection's datasets, opened on first
// use and closed again: at most `max_open` Volumes stay open, the least recently
// used closed first, and only when nothing holds it (no open file of it, no
// request using it, nothing uncommitted: Volume::closable). What a closed Volume
// numbered and the kernel holds (its InodeMemory: layers' numbers are handed out
// in order of first sight) is kept with its slot and given to the Volume that
// opens it again, so the kernel may keep every inode it looked up while the
// Volumes come and go. A tree that is not a Volume (a collection's StoreTree,
// which closes its own leaves) stays open.
//
// Lock rules: mutex_ guards every slot's state and the LRU; every copy of a
// tree's pointer is made under it, so a use count of 1 means no request holds
// the tree. One thread at a time opens a slot, without mutex_ held (a remote
// dataset takes a while); others wanting it wait for `opened_`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "mount_tree.h"
#include "name_table.h"
#include "thread_safety.h"

namespace blosc2fs {

class Volume;

class OpenTrees {
 public:
  // Opens a closed slot's tree; `inodes`: what its last Volume numbered, if anything.
  using Opener = std::function<std::shared_ptr<MountTree>(const std::optional<InodeMemory>& inodes)>;

  // `commit_on_close`: a writable Volume shuts down (a compaction when due) before it is closed.
  OpenTrees(size_t max_open, bool commit_on_close);

  // The slot's tree, opened by `open` when closed; closes the least recently
  // used closable Volumes beyond max_open. What `open` throws goes through.
  std::shared_ptr<MountTree> get(size_t slot, const Opener& open) EXCLUDES(mutex_);
  std::shared_ptr<MountTree> if_open(size_t slot) const EXCLUDES(mutex_);
  // Whether it is open, without a copy of its pointer (which would keep it open a moment).
  bool is_open(size_t slot) const EXCLUDES(mutex_);
  size_t open_count() const EXCLUDES(mutex_);
  // Every open tree: the Volumes, most recently used first, then those that stay open.
  std::vector<std::pair<size_t, std::shared_ptr<MountTree>>> open_trees() const EXCLUDES(mutex_);
  // The open trees when `interval` has passed since the last time they were asked for
  // (every request asks: the open trees are looked at once per interval); else none.
  std::vector<std::pair<size_t, std::shared_ptr<MountTree>>> due_for_refresh(std::chrono::steady_clock::duration interval)
      EXCLUDES(mutex_);

  // A file of the slot's tree was opened or released: while one is open, the tree stays open.
  void file_opened(size_t slot) EXCLUDES(mutex_);
  void file_released(size_t slot) EXCLUDES(mutex_);

  // The kernel's references go to the slot's tree, or while it is closed to
  // what it left (given to the next one); without a copy of the tree's pointer,
  // so that they never keep it from being closed. While the slot is being
  // opened they wait, and go to the tree it opens.
  void remember(size_t slot, uint64_t local) EXCLUDES(mutex_);
  void forget(size_t slot, uint64_t local, uint64_t count) EXCLUDES(mutex_);

 private:
  struct Slot {
    bool opening = false;               // a thread is opening it
    std::shared_ptr<MountTree> tree;    // null while closed
    Volume* volume = nullptr;           // tree as a Volume, when it is one
    std::list<size_t>::iterator lru;    // valid while a Volume is open
    uint64_t open_files = 0;
    std::unique_ptr<InodeMemory> inodes;  // while closed: what its last Volume numbered
  };

  Slot& slot_at(size_t slot) REQUIRES(mutex_);
  void close_beyond_bound(size_t kept) REQUIRES(mutex_);

  const size_t max_open_;
  const bool commit_on_close_;
  mutable Mutex mutex_;
  std::condition_variable_any opened_;  // a slot's opening ended (under mutex_)
  std::deque<Slot> slots_ GUARDED_BY(mutex_);  // grown on demand; a slot never moves
  std::list<size_t> lru_ GUARDED_BY(mutex_);   // open Volumes, most recently used first
  std::vector<size_t> staying_ GUARDED_BY(mutex_);  // open trees that are not Volumes
  std::chrono::steady_clock::time_point refreshed_at_ GUARDED_BY(mutex_){};
};

}  // namespace blosc2fs
