// The threads that answer the FUSE requests which may decode, fetch or commit,
// so that the thread that received a request never waits for another
// request's work. That thread is a ring thread of FUSE over io_uring (one per
// CPU, serving the requests made on its CPU: a request waiting behind it would
// wait for the whole queue of its CPU) or a libfuse worker of the classic
// /dev/fuse loop (offload.h says which request goes where).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace blosc2fs {

// Threads named `name` that start as work arrives, up to `max_threads`, and
// stay until the pool ends; pinned to CPU `cpu` when it is not negative. A job
// runs exactly once; the destructor runs every job still queued, then joins.
class RequestPool {
 public:
  RequestPool(std::string name, unsigned max_threads, int cpu = -1);
  ~RequestPool();
  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;

  // Queues `job`; returns at once (when no thread can be started at all, after
  // running it here). A job must not throw.
  void run(std::function<void()> job);

 private:
  void work();

  const std::string name_;
  const unsigned max_threads_;
  const int cpu_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  unsigned idle_ = 0;  // threads waiting for a job
  bool stopping_ = false;
};

// A mount's pools. Short work goes to a pool of the CPU the request came from
// ("b2fs-cpuN", its threads on that CPU): handing it over there costs two
// context switches on a CPU whose reader waits anyway, where a thread woken on
// another CPU, idle or busy, costs tens of microseconds (a FUSE over io_uring
// request is served on the CPU that made it for that reason). Long work
// (large decodes, fetches, commits) goes to the shared pool ("b2fs-worker"),
// whose threads run on any CPU: a sequential reader's requests are decoded on
// all of them at once.
class RequestPools {
 public:
  explicit RequestPools(unsigned max_threads);
  RequestPool& shared() { return shared_; }
  RequestPool& of_this_cpu();

 private:
  RequestPool shared_;
  std::vector<std::unique_ptr<RequestPool>> per_cpu_;
};

}  // namespace blosc2fs
