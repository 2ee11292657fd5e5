#include "notifier.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "thread_name.h"

namespace blosc2fs {

KernelNotifier::~KernelNotifier() { stop(); }

void KernelNotifier::start(fuse_session* session, std::function<KernelNotes()> idle) {
  session_ = session;
  idle_ = std::move(idle);
  thread_ = std::thread([this] {
    name_this_thread("b2fs-notify");
    run();
  });
}

void KernelNotifier::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void KernelNotifier::send(KernelNotes notes, Wait wait) {
  if ((notes.empty() && notes.release_after_reply.empty()) || !session_) return;
  std::unique_lock lock(mutex_);
  if (stopping_) return;
  const uint64_t seq = ++posted_;
  queue_.push_back(Job{seq, std::move(notes)});
  wake_.notify_one();
  if (wait == Wait::none) return;
  done_.wait_for(lock, std::chrono::seconds(1), [&] {
    return (wait == Wait::inodes ? inodes_done_ : all_done_) >= seq || stopping_;
  });
}

void KernelNotifier::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const bool woken = wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_ || !queue_.empty(); });
    if (stopping_ && queue_.empty()) return;
    Job job;
    if (!woken) {
      if (!idle_) continue;
      lock.unlock();
      try {
        job.notes = idle_();
      } catch (const std::exception& e) {
        spdlog::debug("idle check: {}", e.what());
      }
      lock.lock();
    } else {
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    lock.unlock();
    for (uint64_t ino : job.notes.inodes) {
      int err = fuse_lowlevel_notify_inval_inode(session_, ino, 0, 0);
      if (err && err != -ENOENT) spdlog::debug("invalidating inode {}: {}", ino, strerror(-err));
    }
    for (uint64_t ino : job.notes.attributes) {  // a negative offset: the attributes only
      int err = fuse_lowlevel_notify_inval_inode(session_, ino, -1, 0);
      if (err && err != -ENOENT) spdlog::debug("invalidating the attributes of inode {}: {}", ino, strerror(-err));
    }
    lock.lock();
    if (job.seq) inodes_done_ = job.seq;
    done_.notify_all();
    lock.unlock();
    for (const auto& [parent, name] : job.notes.entries) {
      int err = fuse_lowlevel_notify_inval_entry(session_, parent, name.c_str(), name.size());
      if (err && err != -ENOENT) spdlog::debug("invalidating {} in inode {}: {}", name, parent, strerror(-err));
    }
    lock.lock();
    if (job.seq) all_done_ = job.seq;
    done_.notify_all();
    lock.unlock();
    job.notes.release_after_reply.clear();  // outside the lock: send() never waits for it
    lock.lock();
  }
}

}  // namespace blosc2fs
