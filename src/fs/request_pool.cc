#include "request_pool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <system_error>

#include "thread_name.h"

namespace blosc2fs {

namespace {

// Threads of a CPU's pool: short jobs, at most the requests a ring queue of
// libfuse holds at once (its default depth, 8) being handed over together.
constexpr unsigned kThreadsPerCpu = 8;

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // A CPU this process may not use (taskset): the thread then runs anywhere.
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace

RequestPool::RequestPool(std::string name, unsigned max_threads, int cpu)
    : name_(std::move(name)), max_threads_(std::max(max_threads, 1u)), cpu_(cpu) {}

RequestPool::~RequestPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RequestPool::run(std::function<void()> job) {
  std::unique_lock lock(mutex_);
  queue_.push_back(std::move(job));
  // A waiting thread for every queued job, or one more thread while the cap allows.
  if (idle_ >= queue_.size() || threads_.size() >= max_threads_) {
    lock.unlock();
    wake_.notify_one();
    return;
  }
  try {
    threads_.emplace_back([this] {
      name_this_thread(name_.c_str());
      if (cpu_ >= 0) pin_to_cpu(cpu_);
      work();
    });
  } catch (const std::system_error&) {  // no thread to be had now
    if (!threads_.empty()) {
      lock.unlock();
      wake_.notify_one();
      return;
    }
    job = std::move(queue_.back());  // and none to run it later: run it here
    queue_.pop_back();
    lock.unlock();
    job();
  }
}

void RequestPool::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // what it captured goes before the next wait
    lock.lock();
  }
}

RequestPools::RequestPools(unsigned max_threads) : shared_("b2fs-worker", max_threads) {
  const int cpus = std::max(get_nprocs_conf(), 1);
  for (int cpu = 0; cpu < cpus; ++cpu)
    per_cpu_.push_back(std::make_unique<RequestPool>("b2fs-cpu" + std::to_string(cpu), kThreadsPerCpu, cpu));
}

RequestPool& RequestPools::of_this_cpu() {
  const int cpu = sched_getcpu();
  return cpu >= 0 && size_t(cpu) < per_cpu_.size() ? *per_cpu_[size_t(cpu)] : shared_;
}

}  // namespace blosc2fs
