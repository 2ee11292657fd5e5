// The prefetch thread: requests run in the background, repeats are dropped,
// failures are ignored, and stop() leaves nothing running.
#include "prefetcher.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace blosc2fs {
namespace {

// Polls until done() or a minute has passed: on a busy machine the
// background thread may not run for a while.
bool eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

TEST(Prefetcher, RunsRequestsInTheBackground) {
  std::mutex mutex;
  std::vector<int64_t> loaded;
  Prefetcher p([&](int64_t n) {
    std::lock_guard lock(mutex);
    loaded.push_back(n);
  });
  p.request(3);
  p.request(4);
  EXPECT_TRUE(eventually([&] {
    std::lock_guard lock(mutex);
    return loaded.size() == 2;
  }));
  std::lock_guard lock(mutex);
  EXPECT_EQ(loaded, (std::vector<int64_t>{3, 4}));
}

TEST(Prefetcher, FailuresAreIgnored) {
  std::atomic<int> calls{0};
  Prefetcher p([&](int64_t n) {
    ++calls;
    if (n == 1) throw std::runtime_error("unreadable");
  });
  p.request(1);
  p.request(2);
  EXPECT_TRUE(eventually([&] { return calls == 2; }));
}

TEST(Prefetcher, QueuedRepeatsAreDroppedAndStopWaits) {
  std::atomic<bool> release{false};
  std::atomic<int> calls{0};
  Prefetcher p([&](int64_t) {
    ++calls;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  p.request(1);
  EXPECT_TRUE(eventually([&] { return calls == 1; }));  // busy with 1
  p.request(2);
  p.request(2);
  p.request(2);
  release = true;
  EXPECT_TRUE(eventually([&] { return calls == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls, 2);
  p.stop();
  p.request(5);  // after stop: ignored
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace blosc2fs
