#include "file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "error.h"

namespace blosc2fs {

namespace {

// `name` relative to the directory `dir_fd` (AT_FDCWD: as a path); `path`
// names it in the error.
int open_at_or_throw(int dir_fd, const char* name, const std::filesystem::path& path, int flags, mode_t mode = 0) {
  int fd;
  do {
    fd = ::openat(dir_fd, name, flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_errno("cannot open " + path.string());
  return fd;
}

int open_or_throw(const std::filesystem::path& path, int flags, mode_t mode = 0) {
  return open_at_or_throw(AT_FDCWD, path.c_str(), path, flags, mode);
}

}  // namespace

FileOwnership ownership_of(const std::filesystem::path& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw_errno(path.string() + ": stat");
  return FileOwnership{uint32_t(st.st_mode & 07777), int64_t(st.st_uid), int64_t(st.st_gid)};
}

void apply_ownership(int fd, const FileOwnership& owner, const std::filesystem::path& path) {
  const uid_t uid = owner.uid < 0 ? uid_t(-1) : uid_t(owner.uid);
  const gid_t gid = owner.gid < 0 ? gid_t(-1) : gid_t(owner.gid);
  // Best effort by design: a user who may write someone else's frame (a
  // group member) cannot give the file away, and the commit must not fail
  // for it; the file then shows who wrote it last, as any editor's would.
  if ((uid != uid_t(-1) || gid != gid_t(-1)) && ::fchown(fd, uid, gid) != 0 && gid != gid_t(-1))
    (void)::fchown(fd, uid_t(-1), gid);
  if (::fchmod(fd, mode_t(owner.mode)) != 0) throw_errno(path.string() + ": chmod");
}

File File::open_read(const std::filesystem::path& path) { return File(open_or_throw(path, O_RDONLY), path); }

File File::open_read_at(int dir_fd, const std::string& relative, const std::filesystem::path& path) {
  return File(open_at_or_throw(dir_fd, relative.c_str(), path, O_RDONLY), path);
}

UniqueFd open_directory_handle(const std::filesystem::path& path) {
  return UniqueFd(open_or_throw(path, O_PATH | O_DIRECTORY));
}

File File::open_read_beneath(const std::filesystem::path& root, const std::string& relative) {
  const std::filesystem::path path = root / relative;
  const int dir = open_or_throw(root, O_RDONLY | O_DIRECTORY);
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;  // a fifo swapped in must not block the open
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, dir, relative.c_str(), &how, sizeof how);
  } while (fd < 0 && errno == EINTR);
  const int saved = errno;
  ::close(dir);
  errno = saved;
  if (fd < 0) throw_errno("cannot open " + path.string());
  File file(int(fd), path);
  struct stat st = file.status();
  if (!S_ISREG(st.st_mode)) throw IoError("cannot open " + path.string() + ": not a regular file", EINVAL);
  return file;
}

File File::create_new(const std::filesystem::path& path, bool readable) {
  return File(open_or_throw(path, (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL, 0666), path);
}

File File::open_read_write(const std::filesystem::path& path) { return File(open_or_throw(path, O_RDWR), path); }

File::File(File&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

void File::close() {
  int fd = std::exchange(fd_, -1);
  // close(2) must not be retried on EINTR on Linux: the descriptor is gone either way.
  if (fd >= 0 && ::close(fd) != 0 && errno != EINTR) throw_errno("close " + path_.string());
}

struct stat File::status() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw_errno("stat " + path_.string());
  return st;
}

int64_t File::size() const { return int64_t(status().st_size); }

size_t File::read_at(int64_t offset, MutableByteSpan out) const {
  if (offset < 0) throw IoError("read " + path_.string() + ": negative offset", EINVAL);
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, off_t(offset + int64_t(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read " + path_.string());
    }
    if (n == 0) break;
    done += size_t(n);
  }
  return done;
}

void File::read_exact(int64_t offset, MutableByteSpan out, const char* what) const {
  size_t n = read_at(offset, out);
  if (n != out.size())
    throw FormatError(path_.string() + ": file ends inside the " + what + " (wanted " + std::to_string(out.size()) +
                      " bytes at offset " + std::to_string(offset) + ", got " + std::to_string(n) + ")");
}

Bytes File::read_bytes(int64_t offset, size_t n, const char* what) const {
  Bytes out(n);
  read_exact(offset, out, what);
  return out;
}

void File::write_at(int64_t offset, ByteSpan data) const {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, off_t(offset + int64_t(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write " + path_.string());
    }
    done += size_t(n);
  }
}

void File::truncate(int64_t size) const {
  int rc;
  do {
    rc = ::ftruncate(fd_, off_t(size));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) throw_errno("truncate " + path_.string());
}

void File::sync() const {
  if (::fsync(fd_) != 0) throw_errno("fsync " + path_.string());
}

void start_writeback(int fd, int64_t offset, int64_t length) noexcept {
  if (fd >= 0 && offset >= 0 && length > 0) (void)::sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

}  // namespace blosc2fs
