// c-blosc2's `.b2lock` sidecar (format-notes §6): a flock(2)-locked file whose
// u64 at offset 8 counts the mutations made under the exclusive lock, so that
// cooperating processes see each other's changes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace blosc2fs {

class LockSidecar {
 public:
  // `<file>.b2lock` for a contiguous frame, `<dir>/.b2lock` for a sparse one.
  static std::filesystem::path path_for(const std::filesystem::path& frame_path, bool sparse);

  // `owner_model`: the file whose owner, group and read/write bits a sidecar
  // this creates takes (the frame's header file), so that whoever may write
  // the frame may also lock it; empty: the creating process's, 0666 & ~umask.
  explicit LockSidecar(std::filesystem::path path, std::filesystem::path owner_model = {})
      : path_(std::move(path)), owner_model_(std::move(owner_model)) {}
  ~LockSidecar();
  LockSidecar(const LockSidecar&) = delete;
  LockSidecar& operator=(const LockSidecar&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Opens the sidecar when it exists, or creates it when `create`. False when
  // there is none (and `create` is false). Throws IoError.
  bool open(bool create);
  bool is_open() const { return fd_ >= 0; }

  // flock(LOCK_EX), then bumps the counter as c-blosc2's exclusive holders do.
  // Returns the counter value found before the bump.
  uint64_t lock_exclusive();
  // flock(LOCK_SH) and read the counter; the lock stays held until unlock().
  uint64_t lock_shared();
  void unlock();
  void sync();  // fsync the sidecar (the counter bump)

 private:
  uint64_t read_counter() const;
  void flock_retrying(int operation);

  std::filesystem::path path_;
  std::filesystem::path owner_model_;
  int fd_ = -1;
  bool writable_ = false;
  bool locked_ = false;
};

// Holds the sidecar's lock for a scope (no-op when the sidecar is not open).
class SidecarLockGuard {
 public:
  enum class Mode { shared, exclusive };
  SidecarLockGuard(LockSidecar& sidecar, Mode mode);
  ~SidecarLockGuard();
  SidecarLockGuard(const SidecarLockGuard&) = delete;
  SidecarLockGuard& operator=(const SidecarLockGuard&) = delete;
  // The counter read when the lock was taken (before any bump); nullopt without a sidecar.
  std::optional<uint64_t> counter() const { return counter_; }

 private:
  LockSidecar* sidecar_ = nullptr;
  std::optional<uint64_t> counter_;
};

}  // namespace blosc2fs
