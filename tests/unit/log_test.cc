// The foreground logger and the messages after the FUSE loop must not wait for
// stdio's `stderr` lock: a libfuse worker cancelled inside perror() keeps it.
#include "log.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

namespace blosc2fs {
namespace {

// Holds stderr's FILE lock on a thread of its own, as a cancelled perror() leaves it.
class StderrLockHolder {
 public:
  StderrLockHolder()
      : thread_([this] {
          flockfile(stderr);
          locked_.set_value();
          release_.get_future().wait();
          funlockfile(stderr);
        }) {
    locked_.get_future().wait();
  }
  ~StderrLockHolder() {
    release_.set_value();
    thread_.join();
  }
  StderrLockHolder(const StderrLockHolder&) = delete;
  StderrLockHolder& operator=(const StderrLockHolder&) = delete;

 private:
  std::promise<void> locked_;
  std::promise<void> release_;
  std::thread thread_;
};

TEST(Logging, ForegroundLinesDoNotWaitForStdioStderrLock) {
  init_logging("info", false);
  StderrLockHolder held;
  std::future<void> said = std::async(std::launch::async, [] {
    spdlog::info("a line while stderr's FILE lock is held elsewhere");
    write_to_stderr("blosc2fs: and a last message after the loop\n");
  });
  // A bound, not a timing: the lines take microseconds; a logger that waits for
  // the lock would wait until `held` lets go at the end of the test.
  EXPECT_EQ(said.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "logging waited for stdio's stderr lock";
}

}  // namespace
}  // namespace blosc2fs
