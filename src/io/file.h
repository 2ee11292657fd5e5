// An owned file descriptor with positioned I/O that loops over short transfers.
// Positioned reads never touch a shared file offset, so one File can serve
// several threads at once.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "bytes.h"
#include "unique_fd.h"

namespace blosc2fs {

// A file's owner, group and permission bits. A file a commit creates in a
// frame's place (a temporary file renamed over it, a sparse frame's chunk
// file, the .b2lock sidecar) takes the frame's, so that a mount run by root
// does not hand a user's frame over to root, and the frame's permissions
// keep saying who may read and write it.
struct FileOwnership {
  uint32_t mode = 0644;  // permission bits (07777)
  int64_t uid = -1;      // -1: the creating process's
  int64_t gid = -1;
  bool operator==(const FileOwnership&) const = default;
};
// stat(2) of `path`. Throws IoError.
FileOwnership ownership_of(const std::filesystem::path& path);
// Gives the file open as `fd`, which this process just created, `owner`'s
// owner and group as far as chown(2) lets this process (root always; another
// user only a group it belongs to, else the file stays its own), then the
// mode (after chown, which clears set-id bits; and whatever the umask took).
// Throws IoError when the mode cannot be set.
void apply_ownership(int fd, const FileOwnership& owner, const std::filesystem::path& path);

// The directory `path` as a handle for *at() calls (O_PATH): it stays that
// directory whatever its path names later. Throws IoError (ENOTDIR when it is
// not one).
UniqueFd open_directory_handle(const std::filesystem::path& path);

// Starts writing [offset, offset + length) of `fd` to the disk without waiting
// for it (sync_file_range, File::start_writeback). Best effort.
void start_writeback(int fd, int64_t offset, int64_t length) noexcept;

class File {
 public:
  File() = default;
  // Read-only. Throws IoError naming the path.
  static File open_read(const std::filesystem::path& path);
  // Read-only, `relative` below the directory `root`, no symlink followed on
  // the way (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a link swapped in
  // after a listing cannot make it open a file elsewhere. Throws IoError
  // (ELOOP for a link on the way).
  static File open_read_beneath(const std::filesystem::path& root, const std::string& relative);
  // Read-only, `relative` to the open directory `dir_fd` (the directory it was
  // when opened, whatever its path names since); `path` names it in messages.
  static File open_read_at(int dir_fd, const std::string& relative, const std::filesystem::path& path);
  // A new file, write-only (read-write when `readable`); fails with EEXIST if it exists.
  static File create_new(const std::filesystem::path& path, bool readable = false);
  // Read-write, existing file.
  static File open_read_write(const std::filesystem::path& path);

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }

  struct stat status() const;
  int64_t size() const;

  // Reads up to out.size() bytes at `offset`, stopping early only at end of file.
  // Returns the number of bytes read.
  size_t read_at(int64_t offset, MutableByteSpan out) const;
  // Reads exactly out.size() bytes; a short file raises FormatError naming `what`.
  void read_exact(int64_t offset, MutableByteSpan out, const char* what = "data") const;
  Bytes read_bytes(int64_t offset, size_t n, const char* what = "data") const;
  // Writes all of `data` at `offset`.
  void write_at(int64_t offset, ByteSpan data) const;
  void truncate(int64_t size) const;
  void sync() const;
  // Starts writing [offset, offset + length) to the disk without waiting for
  // it (sync_file_range), so that a later sync() finds less to write. Best
  // effort: where the file system cannot, sync() writes it all as before.
  void start_writeback(int64_t offset, int64_t length) const noexcept { blosc2fs::start_writeback(fd_, offset, length); }
  void close();  // throws IoError if close(2) reports an error

 private:
  File(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace blosc2fs
