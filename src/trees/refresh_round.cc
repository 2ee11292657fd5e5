#include "refresh_round.h"

namespace blosc2fs {

RefreshRound::RefreshRound(std::chrono::steady_clock::duration ttl)
    : ttl_(ttl), round_at_(std::chrono::steady_clock::now()) {}

bool RefreshRound::start_if_due() {
  const auto now = std::chrono::steady_clock::now();
  if (now - round_at_ < ttl_) return false;
  round_at_ = now;
  return true;
}

void RefreshRound::run_if_due(const std::function<void()>& round) {
  if (!mutex_.try_lock()) return;  // another thread is listing
  try {
    if (start_if_due()) round();
  } catch (...) {
    mutex_.unlock();
    throw;
  }
  mutex_.unlock();
}

}  // namespace blosc2fs
