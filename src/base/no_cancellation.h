// Keeps the calling thread from being cancelled (pthread_cancel) for the
// object's life. libfuse cancels its threads at the end of a session (the
// workers of its /dev/fuse loop, the ring threads of FUSE over io_uring); a
// cancellation point met inside our code while it holds a lock, or inside a
// catch (...) that swallows the unwinding, would hang or abort the daemon.
#pragma once

#include <pthread.h>

namespace blosc2fs {

class NoCancellation {
 public:
  NoCancellation() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &before_); }
  ~NoCancellation() { pthread_setcancelstate(before_, nullptr); }
  NoCancellation(const NoCancellation&) = delete;
  NoCancellation& operator=(const NoCancellation&) = delete;

 private:
  int before_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace blosc2fs
