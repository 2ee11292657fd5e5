// The idle refresh's rounds of listings: at most one per `ttl`, one at a time
// (a request that finds one under way goes on without waiting). Its own lock,
// held for the whole round.
#pragma once

#include <chrono>
#include <functional>

#include "thread_safety.h"

namespace blosc2fs {

class RefreshRound {
 public:
  // The first round is due `ttl` from now.
  explicit RefreshRound(std::chrono::steady_clock::duration ttl);

  // Runs `round` when one is due and none is under way.
  void run_if_due(const std::function<void()>& round) EXCLUDES(mutex_);

 private:
  bool start_if_due() REQUIRES(mutex_);

  const std::chrono::steady_clock::duration ttl_;
  Mutex mutex_;
  std::chrono::steady_clock::time_point round_at_ GUARDED_BY(mutex_);
};

}  // namespace blosc2fs
