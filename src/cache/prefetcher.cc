#include "prefetcher.h"

#include <algorithm>
#include <system_error>

#include "thread_name.h"

namespace blosc2fs {

namespace {
// More than a few chunks ahead would only hold memory the reader cannot use yet.
constexpr size_t kMaxQueued = 4;
}  // namespace

void Prefetcher::request(int64_t n) {
  std::lock_guard lock(mutex_);
  if (stopped_ || std::find(queue_.begin(), queue_.end(), n) != queue_.end()) return;
  if (queue_.size() >= kMaxQueued) queue_.pop_front();
  queue_.push_back(n);
  if (!thread_.joinable()) {
    try {
      thread_ = std::jthread([this](std::stop_token stop) {
        name_this_thread("b2fs-prefetch");
        run(stop);
      });
    } catch (const std::system_error&) {
      queue_.clear();  // no thread: readers load for themselves
      return;
    }
  }
  wake_.notify_one();
}

void Prefetcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    queue_.clear();
  }
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void Prefetcher::run(std::stop_token stop) {
  for (;;) {
    int64_t n;
    {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, [this] { return !queue_.empty(); })) return;
      n = queue_.front();
      queue_.pop_front();
    }
    try {
      load_(n);
    } catch (...) {
    }
  }
}

}  // namespace blosc2fs
