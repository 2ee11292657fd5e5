#include "uring_support.h"

#include <liburing.h>

#include <cstring>
#include <fstream>

namespace blosc2fs {

namespace {

// The first line of a small file (a /sys or /proc value); empty when it cannot be read.
std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

UringSupport uring_support(const std::filesystem::path& parameter) {
  std::error_code ec;
  if (!std::filesystem::exists(parameter, ec))
    return {false, "this kernel has no FUSE over io_uring (" + parameter.string() +
                       " is missing: Linux 6.14 or later built with CONFIG_FUSE_IO_URING has it)"};
  const std::string value = first_line(parameter);
  if (value != "Y" && value != "1")
    return {false, "the kernel's FUSE over io_uring is switched off (" + parameter.string() + " is " +
                       (value.empty() ? "unreadable" : value) + "; as root: echo Y > " + parameter.string() +
                       ", then mount again)"};
  io_uring ring;
  io_uring_params params{};
  params.flags = IORING_SETUP_SQE128;
  if (const int rc = io_uring_queue_init_params(2, &ring, &params); rc < 0) {
    const std::string disabled = first_line("/proc/sys/kernel/io_uring_disabled");
    std::string why = "this process may not use io_uring (" + std::string(std::strerror(-rc));
    if (disabled == "2") why += "; /proc/sys/kernel/io_uring_disabled is 2: io_uring is off on this machine";
    else if (disabled == "1") why += "; /proc/sys/kernel/io_uring_disabled is 1: only root and the group in "
                                     "/proc/sys/kernel/io_uring_group may use it";
    return {false, why + ")"};
  }
  io_uring_queue_exit(&ring);
  return {true, ""};
}

}  // namespace blosc2fs
