#include "range_cache.h"

namespace blosc2fs {

namespace {
// Extents overlapping a lookup are few: a frame's head and tail, chunk extents.
constexpr int kLookBack = 4;

// What an extent costs the budget: all the memory its buffer holds, which a
// pooled buffer's tail or a vector's spare room make more than its bytes.
uint64_t charge(const Bytes& bytes) { return bytes.capacity(); }
}  // namespace

uint64_t RangeCache::new_object() {
  std::lock_guard lock(mutex_);
  return next_object_++;
}

std::shared_ptr<const Bytes> RangeCache::lookup(uint64_t object, int64_t offset, int64_t* start, bool use) {
  std::lock_guard lock(mutex_);
  auto o = objects_.find(object);
  if (o == objects_.end()) return nullptr;
  auto it = o->second.upper_bound(offset);
  for (int step = 0; step < kLookBack && it != o->second.begin(); ++step) {
    --it;
    if (it->first + int64_t(it->second.bytes->size()) > offset) {
      if (use) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        if (it->second.unread) unread_ -= charge(*it->second.bytes);
        it->second.unread = false;
      }
      *start = it->first;
      return it->second.bytes;
    }
  }
  return nullptr;
}

std::shared_ptr<const Bytes> RangeCache::find(uint64_t object, int64_t offset, int64_t* start) {
  return lookup(object, offset, start, true);
}

std::shared_ptr<const Bytes> RangeCache::peek(uint64_t object, int64_t offset, int64_t* start) {
  return lookup(object, offset, start, false);
}

bool RangeCache::evict_to(uint64_t limit, bool spare_unread) {
  for (auto it = lru_.end(); used_ + reserved_ > limit && it != lru_.begin();) {
    --it;
    const auto [object, start] = *it;
    auto& extents = objects_[object];
    auto e = extents.find(start);
    if (spare_unread && e->second.unread) continue;
    discount(e->second);
    extents.erase(e);
    if (extents.empty()) objects_.erase(object);
    it = lru_.erase(it);
  }
  return used_ + reserved_ <= limit;
}

void RangeCache::discount(const Extent& extent) {
  used_ -= charge(*extent.bytes);
  if (extent.unread) unread_ -= charge(*extent.bytes);
}

void RangeCache::insert(uint64_t object, int64_t start, std::shared_ptr<const Bytes> bytes, uint64_t reserved) {
  keep(object, start, std::move(bytes), reserved, false);
}

void RangeCache::insert_until_read(uint64_t object, int64_t start, std::shared_ptr<const Bytes> bytes) {
  keep(object, start, std::move(bytes), 0, true);
}

void RangeCache::read_to_end(uint64_t object, int64_t start, const Bytes* bytes) {
  std::lock_guard lock(mutex_);
  auto o = objects_.find(object);
  if (o == objects_.end()) return;
  auto e = o->second.find(start);
  if (e == o->second.end() || !e->second.until_read || e->second.bytes.get() != bytes) return;
  discount(e->second);
  lru_.erase(e->second.lru);
  o->second.erase(e);
  if (o->second.empty()) objects_.erase(o);
}

void RangeCache::keep(uint64_t object, int64_t start, std::shared_ptr<const Bytes> bytes, uint64_t reserved,
                      bool until_read) {
  std::lock_guard lock(mutex_);
  reserved_ -= std::min(reserved_, reserved);
  const uint64_t size = charge(*bytes);
  if (bytes->empty() || size > budget_) return;
  auto& extents = objects_[object];
  const int64_t end = start + int64_t(bytes->size());
  // Extents inside the new one are no longer needed.
  for (auto it = extents.lower_bound(start); it != extents.end() && it->first < end;) {
    if (it->first + int64_t(it->second.bytes->size()) <= end) {
      discount(it->second);
      lru_.erase(it->second.lru);
      it = extents.erase(it);
    } else {
      ++it;
    }
  }
  if (auto it = extents.find(start); it != extents.end()) return;  // a longer one starts here
  // Room comes from extents already read first; what was fetched ahead and is
  // not read yet goes only when nothing else is left.
  if (!evict_to(budget_ - size, true)) evict_to(budget_ - size, false);
  auto& target = objects_[object];
  lru_.emplace_front(object, start);
  target[start] = Extent{std::move(bytes), lru_.begin(), reserved > 0, until_read};
  used_ += size;
  if (reserved > 0) unread_ += size;
}

bool RangeCache::reserve(uint64_t n) {
  std::lock_guard lock(mutex_);
  if (unread_ + reserved_ + n > budget_ / 2) return false;
  if (!evict_to(budget_ - n, true)) return false;
  reserved_ += n;
  return true;
}

void RangeCache::release(uint64_t n) {
  std::lock_guard lock(mutex_);
  reserved_ -= std::min(reserved_, n);
}

void RangeCache::forget_object(uint64_t object) {
  std::lock_guard lock(mutex_);
  auto o = objects_.find(object);
  if (o == objects_.end()) return;
  for (auto& [start, extent] : o->second) {
    discount(extent);
    lru_.erase(extent.lru);
  }
  objects_.erase(o);
}

uint64_t RangeCache::held() const {
  std::lock_guard lock(mutex_);
  return used_ + reserved_;
}

}  // namespace blosc2fs
