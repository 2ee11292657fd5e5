// Byte buffers whose memory is reused.
//
// A sequential read of data decodes one chunk after another into buffers of
// the same few sizes. Fresh large allocations come from mmap as untouched
// pages, and the first write to each 4 KiB page is a page fault: a quarter of
// the daemon's time in a cold read, measured. A released buffer therefore goes
// back to its pool, which keeps a bounded number of bytes for the next chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "bytes.h"

namespace blosc2fs {

class BufferPool;

// Uninitialised bytes of a fixed size; returns its memory to the pool it came
// from when destroyed. Move-only. Or, borrowed, bytes that another owner keeps
// in memory (a remote extent), viewed without a copy: never written, kept
// alive until released.
class PooledBuffer {
 public:
  PooledBuffer() = default;
  static PooledBuffer borrow(HeldBytes held);
  ~PooledBuffer() { release(); }
  PooledBuffer(PooledBuffer&& other) noexcept { *this = std::move(other); }
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  ByteSpan bytes() const { return {data_, size_}; }
  bool borrowed() const { return borrowed_ != nullptr; }
  // The memory this buffer keeps: its size, or all its lender's memory.
  size_t footprint() const { return borrowed_ ? capacity_ : size_; }
  // Gives the memory back now.
  void release();

 private:
  friend class BufferPool;
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<const void> borrowed_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // Keeps at most `keep_bytes` of released buffers.
  static std::shared_ptr<BufferPool> create(size_t keep_bytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // `size` bytes, not initialised. Throws std::bad_alloc.
  PooledBuffer take(size_t size);

 private:
  explicit BufferPool(size_t keep_bytes) : keep_bytes_(keep_bytes) {}
  friend class PooledBuffer;
  void give_back(uint8_t* data, size_t capacity) noexcept;

  const size_t keep_bytes_;
  mutable std::mutex mutex_;
  std::multimap<size_t, uint8_t*> free_;  // by capacity
  size_t kept_ = 0;
};

}  // namespace blosc2fs
