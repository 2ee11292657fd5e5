// A growable, uninitialised byte buffer for per-thread scratch space.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace blosc2fs {

class ScratchBuffer {
 public:
  // At least n bytes; contents are unspecified after growth.
  uint8_t* get(size_t n) {
    if (n > capacity_) {
      data_.reset();  // release first, so the peak is one buffer, not two
      data_.reset(new uint8_t[n]);
      capacity_ = n;
    }
    return data_.get();
  }
  // Gives memory back when an unusually large chunk made the buffer grow, so that
  // idle threads do not keep hundreds of megabytes.
  void trim(size_t keep) {
    if (capacity_ > keep) {
      data_.reset();
      capacity_ = 0;
    }
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

}  // namespace blosc2fs
