// Tells the kernel to forget cached attributes, pages and names
// (fuse_lowlevel_notify_inval_inode / _entry) from a thread of its own.
//
// A notification sent from inside a request can deadlock: the kernel may hold
// the very lock (a directory's, a page's) the invalidation needs until that
// request is answered. So the requests never send them; they hand them here
// and, where the caller must see the new state right after the reply (close,
// fsync), wait a bounded moment for them. An open() waits for the inode
// invalidations only: an open with O_CREAT may hold its directory's lock,
// which a name invalidation needs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <fuse_lowlevel.h>

#include "mount_tree.h"

namespace blosc2fs {

class KernelNotifier {
 public:
  KernelNotifier() = default;
  ~KernelNotifier();  // stops the thread (before the session goes)
  KernelNotifier(const KernelNotifier&) = delete;
  KernelNotifier& operator=(const KernelNotifier&) = delete;

  // `idle` runs once a second while nothing else is queued (the mount looks
  // for other writers with it, so warm kernel caches get refreshed too).
  void start(fuse_session* session, std::function<KernelNotes()> idle = {});
  void stop();
  enum class Wait { none, inodes, all };
  // Hands over `notes`; returns once the invalidations `wait` names are done,
  // or after a second, whichever comes first.
  void send(KernelNotes notes, Wait wait);

 private:
  struct Job {
    uint64_t seq = 0;  // 0: the idle task's, nobody waits for it
    KernelNotes notes;
  };
  void run();

  fuse_session* session_ = nullptr;
  std::function<KernelNotes()> idle_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Job> queue_;
  uint64_t posted_ = 0, inodes_done_ = 0, all_done_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace blosc2fs
