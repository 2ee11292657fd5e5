// The bytes of one read, gathered without copying where possible: spans into
// chunk-cache entries, kept alive here until the reply has gone out, or
// buffers owned here for bytes that may change once the Volume's lock is
// released (chunks being written, generated texts).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "buffer_pool.h"
#include "bytes.h"

namespace blosc2fs {

// Bytes [offset, offset + out.size()) of an in-memory file `src`, clipped to
// it; returns how many were copied.
inline size_t copy_from(ByteSpan src, int64_t offset, MutableByteSpan out) {
  if (offset < 0 || offset >= int64_t(src.size())) return 0;
  const size_t len = std::min(out.size(), src.size() - size_t(offset));
  std::memcpy(out.data(), src.data() + offset, len);
  return len;
}

inline ByteSpan as_bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

class ReadPieces {
 public:
  // A reply in at most this many pieces goes out as they are (writev takes at
  // most IOV_MAX); in more, one copy is cheaper.
  static constexpr size_t kReplyPieces = 64;

  void add_view(ByteSpan bytes, std::shared_ptr<const void> keep) {
    if (bytes.empty()) return;
    pieces_.push_back(bytes);
    keep_.push_back(std::move(keep));
    size_ += bytes.size();
  }
  // `size` bytes owned here, for the caller to fill.
  MutableByteSpan add_copy(size_t size) {
    // Empty, but never null: callers memcpy into it, and memcpy's pointers must be
    // valid even for no bytes (UBSan stopped the daemon at a read past table.csv's end).
    static uint8_t nothing;
    if (size == 0) return {&nothing, 0};
    owned_.push_back(copy_pool().take(size));
    pieces_.emplace_back(owned_.back().data(), size);
    size_ += size;
    return {owned_.back().data(), size};
  }
  // The last piece added by add_copy() holds only its first `used` bytes.
  void trim_copy(size_t used) {
    ByteSpan& last = pieces_.back();
    used = std::min(used, last.size());
    size_ -= last.size() - used;
    last = last.first(used);
  }
  const std::vector<ByteSpan>& pieces() const { return pieces_; }
  size_t size() const { return size_; }
  // All the bytes as one span: the piece itself when there is one, else a
  // copy kept here.
  ByteSpan joined() {
    if (pieces_.size() == 1) return pieces_[0];
    if (size_ == 0) return {};
    PooledBuffer whole = copy_pool().take(size_);
    copy_to({whole.data(), size_});
    owned_.push_back(std::move(whole));
    return owned_.back().bytes();
  }
  size_t copy_to(MutableByteSpan out) const {
    size_t done = 0;
    for (ByteSpan p : pieces_) {
      const size_t len = std::min(p.size(), out.size() - done);
      if (len) std::memcpy(out.data() + done, p.data(), len);
      done += len;
    }
    return done;
  }

 private:
  std::vector<ByteSpan> pieces_;
  std::vector<std::shared_ptr<const void>> keep_;
  // Where add_copy's buffers come from and go back to: a read of a MiB (the
  // kernel's largest) would otherwise get fresh pages from mmap each time, and
  // fault in all 256 of them.
  static BufferPool& copy_pool();

  std::vector<PooledBuffer> owned_;
  size_t size_ = 0;
};

}  // namespace blosc2fs
