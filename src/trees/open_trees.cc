#include "open_trees.h"

#include <algorithm>

#include "volume.h"

namespace blosc2fs {

OpenTrees::OpenTrees(size_t max_open, bool commit_on_close)
    : max_open_(std::max<size_t>(max_open, 1)), commit_on_close_(commit_on_close) {}

OpenTrees::Slot& OpenTrees::slot_at(size_t slot) {
  while (slots_.size() <= slot) slots_.emplace_back();
  return slots_[slot];
}

std::shared_ptr<MountTree> OpenTrees::get(size_t index, const Opener& open) {
  Slot* slot;
  std::optional<InodeMemory> inodes;
  {
    MutexLock lock(mutex_);
    slot = &slot_at(index);
    opened_.wait(mutex_, [slot] { return !slot->opening; });
    if (slot->tree) {
      if (slot->volume) lru_.splice(lru_.begin(), lru_, slot->lru);
      return slot->tree;
    }
    if (slot->inodes) inodes = std::move(*slot->inodes);
    slot->inodes.reset();
    slot->opening = true;
  }
  std::shared_ptr<MountTree> tree;
  try {
    tree = open(inodes);
  } catch (...) {
    MutexLock lock(mutex_);
    if (inodes) slot->inodes = std::make_unique<InodeMemory>(std::move(*inodes));
    slot->opening = false;
    opened_.notify_all();
    throw;
  }
  MutexLock lock(mutex_);
  slot->opening = false;
  opened_.notify_all();
  slot->tree = tree;
  slot->volume = dynamic_cast<Volume*>(tree.get());
  if (!slot->volume) {
    staying_.push_back(index);
    return tree;
  }
  lru_.push_front(index);
  slot->lru = lru_.begin();
  close_beyond_bound(index);
  return tree;
}

// Skips the Volumes in use: with open files, held by a request, or holding
// uncommitted state; and `kept`, just opened.
void OpenTrees::close_beyond_bound(size_t kept) {
  for (auto it = lru_.end(); lru_.size() > max_open_ && it != lru_.begin();) {
    --it;
    Slot& old = slots_[*it];
    if (old.open_files > 0 || *it == kept || old.tree.use_count() > 1 || !old.volume->closable()) continue;
    if (commit_on_close_ && old.volume->writable()) old.volume->shutdown();  // a compaction when due
    // Layers' numbers are kept even when the kernel holds none of them now:
    // a request may have just looked one up and not yet told remember().
    InodeMemory memory = old.volume->inode_memory();
    if (!memory.lookups.empty() || !memory.layers.empty()) old.inodes = std::make_unique<InodeMemory>(std::move(memory));
    old.tree.reset();
    old.volume = nullptr;
    it = lru_.erase(it);
  }
}

std::shared_ptr<MountTree> OpenTrees::if_open(size_t slot) const {
  MutexLock lock(mutex_);
  return slot < slots_.size() ? slots_[slot].tree : nullptr;
}

bool OpenTrees::is_open(size_t slot) const {
  MutexLock lock(mutex_);
  return slot < slots_.size() && slots_[slot].tree;
}

size_t OpenTrees::open_count() const {
  MutexLock lock(mutex_);
  return lru_.size() + staying_.size();
}

std::vector<std::pair<size_t, std::shared_ptr<MountTree>>> OpenTrees::open_trees() const {
  MutexLock lock(mutex_);
  std::vector<std::pair<size_t, std::shared_ptr<MountTree>>> open;
  for (size_t s : lru_) open.emplace_back(s, slots_[s].tree);
  for (size_t s : staying_) open.emplace_back(s, slots_[s].tree);
  return open;
}

std::vector<std::pair<size_t, std::shared_ptr<MountTree>>> OpenTrees::due_for_refresh(
    std::chrono::steady_clock::duration interval) {
  {
    MutexLock lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - refreshed_at_ < interval) return {};
    refreshed_at_ = now;
  }
  return open_trees();
}

void OpenTrees::file_opened(size_t slot) {
  MutexLock lock(mutex_);
  ++slot_at(slot).open_files;
}

void OpenTrees::file_released(size_t slot) {
  MutexLock lock(mutex_);
  Slot& s = slot_at(slot);
  if (s.open_files) --s.open_files;
}

void OpenTrees::remember(size_t slot, uint64_t local) {
  MutexLock lock(mutex_);
  Slot& s = slot_at(slot);
  opened_.wait(mutex_, [&s] { return !s.opening; });  // the memory is the opening's now
  if (s.tree) return s.tree->remember(local);
  if (!s.inodes) s.inodes = std::make_unique<InodeMemory>();
  ++s.inodes->lookups[local];
}

void OpenTrees::forget(size_t slot, uint64_t local, uint64_t count) {
  MutexLock lock(mutex_);
  if (slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  opened_.wait(mutex_, [&s] { return !s.opening; });
  if (s.tree) return s.tree->forget(local, count);
  if (!s.inodes) return;
  auto it = s.inodes->lookups.find(local);
  if (it == s.inodes->lookups.end()) return;
  if (it->second > count) it->second -= count;
  else s.inodes->lookups.erase(it);
}

}  // namespace blosc2fs
