// One background thread that loads what a sequential reader will ask for
// next. A cold read of a big chunk waits for its stored bytes to come off the
// disk before any of it can be decoded; loading chunk n+1 while chunk n is
// being decoded and copied overlaps the two.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace blosc2fs {

class Prefetcher {
 public:
  // `load(n)` runs on the thread; what it throws is ignored (the reader that
  // needs the chunk meets the error itself).
  explicit Prefetcher(std::function<void(int64_t)> load) : load_(std::move(load)) {}
  ~Prefetcher() { stop(); }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Queues n unless queued already; never blocks. The thread starts on the
  // first request (after the daemon has forked).
  void request(int64_t n);
  // Waits for the load in progress and drops the rest.
  void stop();

 private:
  void run(std::stop_token stop);

  const std::function<void(int64_t)> load_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<int64_t> queue_;
  bool stopped_ = false;
  std::jthread thread_;
};

}  // namespace blosc2fs
