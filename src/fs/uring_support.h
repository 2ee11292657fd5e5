// Whether a mount made now would get the kernel's FUSE requests over io_uring
// (Linux 6.14 and later), and when not, why and how to change that, in words
// for the one line a mount says (-o io_uring, docs/performance.md).
#pragma once

#include <filesystem>
#include <string>

namespace blosc2fs {

// The kernel's switch: FUSE offers io_uring to mounts made while it reads Y.
inline const std::filesystem::path kEnableUringParameter = "/sys/module/fuse/parameters/enable_uring";

struct UringSupport {
  bool available = false;
  std::string why_not;  // when not available: the reason and what would enable it
};

// Reads `parameter` and sets up (then drops) an io_uring of the kind libfuse
// makes (128-byte submission entries): the kernel may lack FUSE over io_uring,
// have it switched off, or refuse io_uring to this process.
UringSupport uring_support(const std::filesystem::path& parameter = kEnableUringParameter);

}  // namespace blosc2fs
