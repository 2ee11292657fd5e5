// A text made at one moment and read until the next is made: collection.json,
// made at each open (it holds the mount's counters) and read by the reads that
// follow. Its own lock, held only to swap the pointer.
#pragma once

#include <memory>
#include <string>

#include "thread_safety.h"

namespace blosc2fs {

class LatestText {
 public:
  void set(std::string text) EXCLUDES(mutex_) {
    auto made = std::make_shared<const std::string>(std::move(text));
    MutexLock lock(mutex_);
    text_ = std::move(made);
  }
  // Null until a text was set.
  std::shared_ptr<const std::string> get() const EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return text_;
  }

 private:
  mutable Mutex mutex_;
  std::shared_ptr<const std::string> text_ GUARDED_BY(mutex_);
};

}  // namespace blosc2fs
