#include "body_pool.h"

namespace blosc2fs {

Bytes BodyPool::take(size_t n) {
  if (n >= kMinPooled) {
    std::lock_guard lock(mutex_);
    // The smallest that fits, if it is not much bigger: extents are charged
    // by their size, and a small one must not pin a big buffer.
    auto it = free_.lower_bound(n);
    if (it != free_.end() && it->first <= n + n / 4) {
      Bytes bytes = std::move(it->second);
      held_ -= it->first;
      free_.erase(it);
      return bytes;
    }
  }
  // Rounded up to whole MiB, so that a buffer fits the next body of about its size.
  Bytes bytes;
  bytes.reserve(n >= kMinPooled ? (n + kMinPooled - 1) / kMinPooled * kMinPooled : n);
  return bytes;
}

void BodyPool::give(Bytes&& bytes) {
  const size_t capacity = bytes.capacity();
  if (capacity < kMinPooled) return;
  std::lock_guard lock(mutex_);
  // Full: the smallest kept ones make room for a bigger one, or it goes.
  while (held_ + capacity > limit_ && !free_.empty() && free_.begin()->first < capacity) {
    held_ -= free_.begin()->first;
    free_.erase(free_.begin());
  }
  if (held_ + capacity > limit_) return;
  bytes.clear();
  held_ += capacity;
  free_.emplace(capacity, std::move(bytes));
}

std::shared_ptr<const Bytes> BodyPool::adopt(Bytes&& bytes) {
  if (bytes.capacity() < kMinPooled || limit_ == 0) return std::make_shared<const Bytes>(std::move(bytes));
  std::weak_ptr<BodyPool> pool = weak_from_this();
  return std::shared_ptr<const Bytes>(new Bytes(std::move(bytes)), [pool](const Bytes* p) {
    std::unique_ptr<Bytes> owned(const_cast<Bytes*>(p));
    if (auto alive = pool.lock()) alive->give(std::move(*owned));
  });
}

uint64_t BodyPool::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

}  // namespace blosc2fs
