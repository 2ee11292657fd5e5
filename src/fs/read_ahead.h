// The kernel's readahead window for the mount.
//
// A FUSE mount starts with the kernel's default of 128 KiB, and FUSE_INIT can
// only lower it, so a sequential reader of data would send 128 KiB requests,
// each waiting for a chunk decode: the fixed cost per request dominates. The
// window lives in the mount's backing device info,
// /sys/class/bdi/MAJOR:MINOR/read_ahead_kb, writable by root only. It must be
// written after the kernel has processed our FUSE_INIT reply (which clamps it),
// so it is set when the first file is opened: no request but INIT reaches the
// daemon before that reply is in.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace blosc2fs {

// The bdi directory's read_ahead_kb of the FUSE mount at `mountpoint`, from a
// /proc/self/mountinfo text (the last mount there wins); nullopt when none.
std::optional<std::string> read_ahead_file(const std::string& mountinfo, const std::filesystem::path& mountpoint);

class ReadAheadSetter {
 public:
  // kib == 0: leave the kernel's window alone.
  ReadAheadSetter(std::filesystem::path mountpoint, uint64_t kib) : mountpoint_(std::move(mountpoint)), kib_(kib) {}
  // The first call writes the window; later calls return at once.
  void apply_once() noexcept;

 private:
  void apply() noexcept;
  const std::filesystem::path mountpoint_;
  const uint64_t kib_;
  std::atomic<bool> done_{false};
};

}  // namespace blosc2fs
