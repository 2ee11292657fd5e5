#include "buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

#include "huge_pages.h"
#include "sanitizers.h"

namespace blosc2fs {

namespace {

// Stored chunks of one frame differ in size by a few bytes: capacities are
// rounded up so that they can take each other's place.
constexpr size_t kGranule = 64 << 10;

size_t capacity_for(size_t size) {
  if (size <= kGranule) return size ? size : 1;
  return (size + kGranule - 1) / kGranule * kGranule;
}

// Chunk-sized buffers on huge pages of their own (huge_pages.h), the rest from
// malloc; all from malloc under AddressSanitizer, whose redzones guard them.
#ifdef BLOSC2FS_ADDRESS_SANITIZER
constexpr bool kOwnMappings = false;
#else
constexpr bool kOwnMappings = true;
#endif

uint8_t* allocate(size_t capacity) {
  void* data = kOwnMappings && capacity >= kHugePageBufferMin ? map_huge_buffer(capacity) : std::malloc(capacity);
  if (!data) throw std::bad_alloc();
  return static_cast<uint8_t*>(data);
}

void deallocate(uint8_t* data, size_t capacity) noexcept {
  if (kOwnMappings && capacity >= kHugePageBufferMin) unmap_huge_buffer(data, capacity);
  else std::free(data);
}

}  // namespace

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::move(other.pool_);
    borrowed_ = std::move(other.borrowed_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

PooledBuffer PooledBuffer::borrow(HeldBytes held) {
  PooledBuffer b;
  b.borrowed_ = std::move(held.holder);
  b.data_ = const_cast<uint8_t*>(held.bytes.data());  // read only: its owner's bytes are immutable
  b.size_ = held.bytes.size();
  b.capacity_ = std::max(held.held, held.bytes.size());
  return b;
}

void PooledBuffer::release() {
  if (borrowed_) {
    borrowed_.reset();
  } else if (data_) {
    if (pool_) pool_->give_back(data_, capacity_);
    else deallocate(data_, capacity_);
  }
  pool_.reset();
  data_ = nullptr;
  size_ = capacity_ = 0;
}

std::shared_ptr<BufferPool> BufferPool::create(size_t keep_bytes) {
  return std::shared_ptr<BufferPool>(new BufferPool(keep_bytes));
}

BufferPool::~BufferPool() {
  for (auto& [capacity, data] : free_) deallocate(data, capacity);
}

PooledBuffer BufferPool::take(size_t size) {
  PooledBuffer b;
  b.size_ = size;
  {
    std::lock_guard lock(mutex_);
    // The smallest kept buffer that fits, if it wastes at most half of itself.
    auto it = free_.lower_bound(size ? size : 1);
    if (it != free_.end() && it->first / 2 <= size) {
      b.capacity_ = it->first;
      b.data_ = it->second;
      kept_ -= it->first;
      free_.erase(it);
    }
  }
  if (!b.data_) {
    b.capacity_ = capacity_for(size);
    b.data_ = allocate(b.capacity_);
  }
  b.pool_ = shared_from_this();
  return b;
}

void BufferPool::give_back(uint8_t* data, size_t capacity) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (kept_ + capacity <= keep_bytes_) {
      free_.emplace(capacity, data);
      kept_ += capacity;
      return;
    }
  }
  deallocate(data, capacity);
}

}  // namespace blosc2fs
