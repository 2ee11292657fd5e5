#include "kernel_tracker.h"

#include <algorithm>

namespace blosc2fs {

void KernelTracker::seed(Lookups lookups) {
  MutexLock lock(mutex_);
  lookups_ = std::move(lookups);
}

KernelTracker::Lookups KernelTracker::lookups() const {
  MutexLock lock(mutex_);
  return lookups_;
}

void KernelTracker::remember(uint64_t ino) {
  MutexLock lock(mutex_);
  ++lookups_[ino];
}

bool KernelTracker::forget(uint64_t ino, uint64_t count) {
  MutexLock lock(mutex_);
  auto it = lookups_.find(ino);
  if (it == lookups_.end()) return false;
  if (it->second > count) {
    it->second -= count;
    return false;
  }
  lookups_.erase(it);
  changed_at_.erase(ino);
  opened_at_.erase(ino);
  return true;
}

std::vector<uint64_t> KernelTracker::held(const std::function<bool(uint64_t)>& pick) const {
  std::vector<uint64_t> out;
  MutexLock lock(mutex_);
  for (const auto& [ino, count] : lookups_)
    if (pick(ino)) out.push_back(ino);
  return out;
}

bool KernelTracker::changed(uint64_t ino) {
  MutexLock lock(mutex_);
  changed_at_[ino] = ++clock_;
  return lookups_.count(ino) > 0;
}

void KernelTracker::all_changed() {
  MutexLock lock(mutex_);
  all_changed_at_ = ++clock_;
}

bool KernelTracker::cache_still_valid(uint64_t ino) {
  MutexLock lock(mutex_);
  auto opened = opened_at_.find(ino);
  auto changed = changed_at_.find(ino);
  const uint64_t changed_at = std::max(changed == changed_at_.end() ? 0 : changed->second, all_changed_at_);
  const bool valid = opened != opened_at_.end() && opened->second > changed_at;
  opened_at_[ino] = ++clock_;
  return valid;
}

void KernelTracker::opened(uint64_t ino) {
  MutexLock lock(mutex_);
  opened_at_[ino] = ++clock_;
}

bool KernelTracker::file_opened(uint64_t ino, uint64_t version) {
  MutexLock lock(mutex_);
  std::map<uint64_t, int>& versions = open_versions_[ino];
  ++versions[version];
  return versions.begin()->first != version;  // versions only grow: the first is the oldest
}

void KernelTracker::file_released(uint64_t ino, uint64_t version) {
  MutexLock lock(mutex_);
  auto it = open_versions_.find(ino);
  if (it == open_versions_.end()) return;
  auto v = it->second.find(version);
  if (v != it->second.end() && --v->second <= 0) it->second.erase(v);
  if (it->second.empty()) open_versions_.erase(it);
}

}  // namespace blosc2fs
