#include "offload.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "fs_ops.h"
#include "no_cancellation.h"

namespace blosc2fs {

namespace {

// The session's connection, once FUSE_INIT is answered: its want_ext then says
// whether requests come over io_uring (libfuse clears the flag when its rings
// did not start).
std::atomic<const fuse_conn_info*> negotiated{nullptr};

const fuse_lowlevel_ops& inner() { return lowlevel_operations(); }

Offload* offload_of(fuse_req_t req) { return static_cast<FsContext*>(fuse_req_userdata(req))->offload; }

// -o io_uring=on and requests over /dev/fuse: said once, and the session ends.
void check_transport(fuse_req_t req) {
  Offload* offload = offload_of(req);
  if (!offload || offload->transport_checked.load(std::memory_order_relaxed) ||
      offload->transport_checked.exchange(true))
    return;
  if (offload->io_uring != IoUringMode::on || io_uring_in_use()) return;
  spdlog::error("-o io_uring=on: libfuse could not start its io_uring queues (see the line before): unmounting");
  if (offload->session) fuse_session_exit(offload->session);
}

// The requests a receiving thread handed to the pool that are not answered yet.
struct Pending {
  std::mutex mutex;
  std::condition_variable none;
  size_t count = 0;
};

void answered(Pending& pending) {
  std::lock_guard lock(pending.mutex);
  if (--pending.count == 0) pending.none.notify_all();
}

// One per receiving thread. A request of FUSE over io_uring lives in its
// queue's memory, which libfuse frees right after joining the queue's ring
// thread at the end of the session (and the session's loop returns only after
// joining its /dev/fuse workers): a receiving thread's end waits here until
// the pool has answered every request it handed over.
class ThreadPending {
 public:
  ThreadPending() = default;
  ThreadPending(const ThreadPending&) = delete;
  ThreadPending& operator=(const ThreadPending&) = delete;
  ~ThreadPending() {
    NoCancellation no_cancellation;
    std::unique_lock lock(pending_->mutex);
    pending_->none.wait(lock, [this] { return pending_->count == 0; });
  }
  std::shared_ptr<Pending> add() {
    std::lock_guard lock(pending_->mutex);
    ++pending_->count;
    return pending_;
  }

 private:
  const std::shared_ptr<Pending> pending_ = std::make_shared<Pending>();
};

// Notes a request the calling thread hands over; answered() when it is answered.
std::shared_ptr<Pending> handing_over() {
  thread_local ThreadPending thread_pending;
  return thread_pending.add();
}

// Where a request is answered (see offload.h).
enum class Where { here, this_cpu, shared };

// A read this long goes to the shared pool: it decodes that much, or more.
constexpr size_t kLongRead = 64 << 10;

// Runs `job` (which answers req) where `where` says; `here` when the mount has no pools.
template <class Job>
void answer(fuse_req_t req, Where where, Job job) {
  const Offload* offload = offload_of(req);
  if (where == Where::here || !offload || !offload->pools) return job();
  RequestPool& pool = where == Where::shared ? offload->pools->shared() : offload->pools->of_this_cpu();
  std::shared_ptr<Pending> pending = handing_over();
  try {
    pool.run([job = std::move(job), pending]() mutable {
      job();
      answered(*pending);
    });
  } catch (...) {  // no memory to queue it: the request is answered all the same
    answered(*pending);
    fuse_reply_err(req, ENOMEM);
  }
}

// Names, attributes and listings: from memory in a frame's tree; a store's or
// a collection's may open a dataset (read and decode its header and index, or
// fetch them).
Where names_where(fuse_req_t req) {
  check_transport(req);
  const Offload* offload = offload_of(req);
  if (!offload || !offload->names_may_block) return Where::here;
  return offload->fetches ? Where::shared : Where::this_cpu;
}

// Work that may decode: short on this CPU, long or waiting on a server in the shared pool.
Where work_where(fuse_req_t req, bool long_work) {
  check_transport(req);
  const Offload* offload = offload_of(req);
  return long_work || (offload && offload->fetches) ? Where::shared : Where::this_cpu;
}

// What a request's arguments point into may not outlive the call (the libfuse
// worker's buffer, its stack): a job keeps copies.
std::optional<fuse_file_info> copy_of(const fuse_file_info* fi) {
  return fi ? std::optional<fuse_file_info>(*fi) : std::nullopt;
}
fuse_file_info* pointer_to(std::optional<fuse_file_info>& fi) { return fi ? &*fi : nullptr; }

// --- the operations; every one runs with cancellation off (libfuse's ring
// threads run requests with it on and are cancelled at the session's end).

void off_init(void* userdata, fuse_conn_info* conn) {
  inner().init(userdata, conn);
  negotiated.store(conn);
}

void off_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NoCancellation no_cancellation;
  const Where where = names_where(req);
  if (where == Where::here) return inner().lookup(req, parent, name);
  answer(req, where, [req, parent, name = std::string(name)] { inner().lookup(req, parent, name.c_str()); });
}

void off_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  const Where where = names_where(req);
  if (where == Where::here) return inner().getattr(req, ino, fi);
  answer(req, where, [req, ino, f = copy_of(fi)]() mutable { inner().getattr(req, ino, pointer_to(f)); });
}

void off_readlink(fuse_req_t req, fuse_ino_t ino) {
  NoCancellation no_cancellation;
  const Where where = names_where(req);
  if (where == Where::here) return inner().readlink(req, ino);
  answer(req, where, [req, ino] { inner().readlink(req, ino); });
}

void off_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  const Where where = names_where(req);
  if (where == Where::here) return inner().opendir(req, ino, fi);
  answer(req, where, [req, ino, f = *fi]() mutable { inner().opendir(req, ino, &f); });
}

void off_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  const Where where = names_where(req);
  if (where == Where::here) return inner().readdir(req, ino, size, offset, fi);
  answer(req, where, [req, ino, size, offset, f = *fi]() mutable { inner().readdir(req, ino, size, offset, &f); });
}

void off_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  const Where where = names_where(req);
  if (where == Where::here) return inner().readdirplus(req, ino, size, offset, fi);
  answer(req, where, [req, ino, size, offset, f = *fi]() mutable { inner().readdirplus(req, ino, size, offset, &f); });
}

void off_statfs(fuse_req_t req, fuse_ino_t ino) {
  NoCancellation no_cancellation;
  inner().statfs(req, ino);
}

void off_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  NoCancellation no_cancellation;
  inner().forget(req, ino, nlookup);
}

void off_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  NoCancellation no_cancellation;
  inner().forget_multi(req, count, forgets);
}

void off_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  // Opened to write or truncate, a file may commit; opened to read, preview.png is drawn.
  const bool writes = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
  answer(req, work_where(req, writes), [req, ino, f = *fi]() mutable { inner().open(req, ino, &f); });
}

void off_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, size >= kLongRead),
         [req, ino, size, offset, f = *fi]() mutable { inner().read(req, ino, size, offset, &f); });
}

void off_write(fuse_req_t req, fuse_ino_t ino, const char* data, size_t size, off_t offset, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  check_transport(req);
  // Over /dev/fuse the bytes are in the receiving worker's buffer, which its
  // next request overwrites: answered here, where they are. The classic loop
  // starts another worker while this one is busy (up to max_threads), so no
  // request waits behind it; a copy and a hand-off cost a 64 MiB pwrite 30 ms
  // of 110, measured.
  if (!fuse_req_is_uring(req)) return inner().write(req, ino, data, size, offset, fi);
  // Over io_uring they stay in the request's ring entry until it is answered,
  // and the ring thread serves every request of its CPU: the pool writes.
  answer(req, work_where(req, true), [req, ino, data, size, offset, f = *fi]() mutable {
    inner().write(req, ino, data, size, offset, &f);
  });
}

void off_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, true), [req, ino, f = *fi]() mutable { inner().flush(req, ino, &f); });
}

void off_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, true), [req, ino, datasync, f = *fi]() mutable { inner().fsync(req, ino, datasync, &f); });
}

void off_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  // A file opened for reading only has nothing to commit: a close, as cheap as a name.
  const Where where = (fi->flags & O_ACCMODE) == O_RDONLY ? names_where(req) : work_where(req, true);
  if (where == Where::here) return inner().release(req, ino, fi);
  answer(req, where, [req, ino, f = *fi]() mutable { inner().release(req, ino, &f); });
}

void off_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, true), [req, ino, a = *attr, to_set, f = copy_of(fi)]() mutable {
    inner().setattr(req, ino, &a, to_set, pointer_to(f));
  });
}

void off_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, true), [req, parent, name = std::string(name), mode, f = *fi]() mutable {
    inner().create(req, parent, name.c_str(), mode, &f);
  });
}

void off_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, true),
         [req, parent, name = std::string(name), mode, rdev] { inner().mknod(req, parent, name.c_str(), mode, rdev); });
}

void off_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, true), [req, parent, name = std::string(name)] { inner().unlink(req, parent, name.c_str()); });
}

void off_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent, const char* new_name,
                unsigned flags) {
  NoCancellation no_cancellation;
  answer(req, work_where(req, true), [req, parent, name = std::string(name), new_parent, new_name = std::string(new_name), flags] {
    inner().rename(req, parent, name.c_str(), new_parent, new_name.c_str(), flags);
  });
}

// Refusals: a store's or a collection's tree first asks whether the dataset there
// can change at all (EROFS), which may open it, as a name may.
void off_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  answer(req, names_where(req), [req, parent, name = std::string(name), mode] {
    inner().mkdir(req, parent, name.c_str(), mode);
  });
}

void off_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  answer(req, names_where(req), [req, parent, name = std::string(name)] { inner().rmdir(req, parent, name.c_str()); });
}

void off_symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  answer(req, names_where(req), [req, link = std::string(link), parent, name = std::string(name)] {
    inner().symlink(req, link.c_str(), parent, name.c_str());
  });
}

void off_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* new_name) {
  answer(req, names_where(req), [req, ino, new_parent, new_name = std::string(new_name)] {
    inner().link(req, ino, new_parent, new_name.c_str());
  });
}

fuse_lowlevel_ops make_offloading_operations() {
  fuse_lowlevel_ops ops = inner();  // the rest (extended attributes, release of a directory) answer at once
  ops.init = off_init;
  ops.lookup = off_lookup;
  ops.getattr = off_getattr;
  ops.readlink = off_readlink;
  ops.opendir = off_opendir;
  ops.readdir = off_readdir;
  ops.readdirplus = off_readdirplus;
  ops.statfs = off_statfs;
  ops.forget = off_forget;
  ops.forget_multi = off_forget_multi;
  ops.open = off_open;
  ops.read = off_read;
  ops.write = off_write;
  ops.flush = off_flush;
  ops.fsync = off_fsync;
  ops.release = off_release;
  ops.setattr = off_setattr;
  ops.create = off_create;
  ops.mknod = off_mknod;
  ops.unlink = off_unlink;
  ops.rename = off_rename;
  ops.mkdir = off_mkdir;
  ops.rmdir = off_rmdir;
  ops.symlink = off_symlink;
  ops.link = off_link;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& offloading_operations() {
  static const fuse_lowlevel_ops ops = make_offloading_operations();
  return ops;
}

bool io_uring_in_use() {
  const fuse_conn_info* conn = negotiated.load();
  return conn && (conn->want_ext & FUSE_CAP_OVER_IO_URING);
}

std::string io_uring_stats() { return io_uring_in_use() ? "io_uring=1" : "io_uring=0"; }

}  // namespace blosc2fs
