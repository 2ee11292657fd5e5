// An owned file descriptor with positioned I/O that loops over short transfers.
// Positioned reads never touch a shared file offset, so one File can serve
// several threads at once.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "bytes.h"

namespace blosc2fs {

class File {
 public:
  File() = default;
  // Read-only. Throws IoError naming the path.
  static File open_read(const std::filesystem::path& path);
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
  void close();  // throws IoError if close(2) reports an error

 private:
  File(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace blosc2fs
