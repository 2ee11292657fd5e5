#include "frame_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "error.h"
#include "file.h"

namespace blosc2fs {

std::filesystem::path LockSidecar::path_for(const std::filesystem::path& frame_path, bool sparse) {
  if (sparse) return frame_path / ".b2lock";
  std::filesystem::path p = frame_path;
  p += ".b2lock";
  return p;
}

LockSidecar::~LockSidecar() {
  if (fd_ >= 0) {
    if (locked_) ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

bool LockSidecar::open(bool create) {
  if (fd_ >= 0) return true;
  int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0666);
    if (fd >= 0 && !owner_model_.empty()) {
      try {
        FileOwnership owner = ownership_of(owner_model_);
        owner.mode &= 0666;
        apply_ownership(fd, owner, path_);
      } catch (...) {
        ::close(fd);
        throw;
      }
    } else if (fd < 0 && errno == EEXIST) {  // another process created it meanwhile
      fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    }
  }
  if (fd < 0 && (errno == EACCES || errno == EROFS) && !create) {
    // A sidecar we may not write still serves for shared locking (refresh).
    fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      fd_ = fd;
      writable_ = false;
      return true;
    }
  }
  if (fd < 0) {
    if (errno == ENOENT && !create) return false;
    throw_errno("lock sidecar " + path_.string() + ": open");
  }
  fd_ = fd;
  writable_ = true;
  return true;
}

void LockSidecar::flock_retrying(int operation) {
  while (::flock(fd_, operation) != 0) {
    if (errno != EINTR) throw_errno("lock sidecar " + path_.string() + ": flock");
  }
}

uint64_t LockSidecar::read_counter() const {
  uint8_t buf[8] = {};
  ssize_t got;
  do {
    got = ::pread(fd_, buf, sizeof buf, 8);
  } while (got < 0 && errno == EINTR);
  if (got < 0) throw_errno("lock sidecar " + path_.string() + ": read counter");
  if (got < ssize_t(sizeof buf)) return 0;  // c-blosc2 counts a short read as 0
  uint64_t value;
  std::memcpy(&value, buf, sizeof value);  // host byte order, as c-blosc2 stores it
  return value;
}

uint64_t LockSidecar::lock_exclusive() {
  if (!writable_) throw IoError("lock sidecar " + path_.string() + ": not writable", EROFS);
  flock_retrying(LOCK_EX);
  locked_ = true;
  try {
    uint64_t seq = read_counter();
    uint64_t next = seq + 1;
    ssize_t put;
    do {
      put = ::pwrite(fd_, &next, sizeof next, 8);
    } while (put < 0 && errno == EINTR);
    if (put != ssize_t(sizeof next)) {
      if (put >= 0) errno = EIO;
      throw_errno("lock sidecar " + path_.string() + ": write counter");
    }
    return seq;
  } catch (...) {
    unlock();
    throw;
  }
}

uint64_t LockSidecar::lock_shared() {
  flock_retrying(LOCK_SH);
  locked_ = true;
  try {
    return read_counter();
  } catch (...) {
    unlock();
    throw;
  }
}

void LockSidecar::unlock() {
  if (fd_ >= 0 && locked_) {
    ::flock(fd_, LOCK_UN);
    locked_ = false;
  }
}

void LockSidecar::sync() {
  if (fd_ >= 0 && writable_ && ::fsync(fd_) != 0) throw_errno("lock sidecar " + path_.string() + ": fsync");
}

SidecarLockGuard::SidecarLockGuard(LockSidecar& sidecar, Mode mode) {
  if (!sidecar.is_open()) return;
  counter_ = mode == Mode::exclusive ? sidecar.lock_exclusive() : sidecar.lock_shared();
  sidecar_ = &sidecar;
}

SidecarLockGuard::~SidecarLockGuard() {
  if (sidecar_) sidecar_->unlock();
}

}  // namespace blosc2fs
