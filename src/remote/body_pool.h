// Receive buffers kept for reuse. A body of several MiB received into fresh
// memory costs a page fault per 4 KiB page, each zeroed by the kernel: measured
// on a loopback read, more CPU than receiving the bytes. Extents made here give
// their buffer back when the last holder lets go (the range cache evicts them,
// the reader is done), and the next transfer of about that size writes into
// pages already mapped. What the pool keeps is bounded (`limit`).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "bytes.h"

namespace blosc2fs {

class BodyPool : public std::enable_shared_from_this<BodyPool> {
 public:
  // Buffers smaller than this come from malloc's own free lists anyway.
  static constexpr size_t kMinPooled = size_t(1) << 20;

  static std::shared_ptr<BodyPool> create(uint64_t limit) { return std::shared_ptr<BodyPool>(new BodyPool(limit)); }

  // An empty buffer with room for `n` bytes (a kept one when one fits without
  // holding much more than asked for).
  Bytes take(size_t n);
  // `bytes` as an immutable extent whose buffer comes back here at its end.
  std::shared_ptr<const Bytes> adopt(Bytes&& bytes);
  uint64_t held() const;

 private:
  explicit BodyPool(uint64_t limit) : limit_(limit) {}
  void give(Bytes&& bytes);

  const uint64_t limit_;
  mutable std::mutex mutex_;
  std::multimap<size_t, Bytes> free_;  // by capacity
  uint64_t held_ = 0;
};

}  // namespace blosc2fs
