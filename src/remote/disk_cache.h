// The persistent disk cache of remote mounts (-o cache_dir=DIR,cache_dir_size=SIZE):
// fixed-size blocks of remote objects kept across mounts, so that a remount
// reads what it read before without a request.
//
// - Keyed by the object's URL and identity (ETag, or Last-Modified and size):
//   an object that changed on the server never meets its old blocks.
// - Every entry carries its key and a CRC-32C of key, position and bytes; an
//   entry that does not check out is removed and reported as a miss, never served.
//   Entries of the first format (B2FSDC01, zlib's CRC-32, slower to check by
//   several times) are misses too, removed when met and fetched again.
// - The bound holds after every store: entries are written to a temporary file
//   and renamed into place, and room is made first, least recently used first,
//   under an exclusive lock of DIR/.lock. Readers take no lock: an entry removed
//   under a reader is a miss for it, and nothing keeps a removed entry's space.
// - Several mounts (processes) may share DIR.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "bytes.h"

namespace blosc2fs {

struct DiskCacheCounters {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t stores = 0;
  uint64_t evictions = 0;
  uint64_t corrupt = 0;  // entries that did not check out (removed)
};

class DiskCache {
 public:
  // Blocks are this size, except an object's last one.
  static constexpr int64_t kBlockSize = int64_t(1) << 20;

  // Uses DIR (created when missing, mode 0700: the bytes of objects that
  // needed credentials stay this user's). Throws IoError when DIR cannot be
  // made or locked, or `bound` holds no block.
  DiskCache(std::filesystem::path dir, uint64_t bound);

  // Block `block` of the object `object_key` when cached intact, exactly
  // `size` bytes; nullopt otherwise. Never throws.
  std::optional<Bytes> load(const std::string& object_key, int64_t block, size_t size);
  // The same, read straight into `out` (exactly the block's size): true when
  // it holds the block, checked; false otherwise (`out` then holds anything).
  // One open and one preadv. Never throws.
  bool read(const std::string& object_key, int64_t block, MutableByteSpan out) { return read(object_key, block, out, {}); }
  // The same, the block's first out.size() bytes into `out` and the rest into
  // `rest` (out.size() + rest.size() is the block's size): a reader that wants
  // the block's head gets it in place, and its neighbour the tail.
  bool read(const std::string& object_key, int64_t block, MutableByteSpan out, MutableByteSpan rest);
  // Whether an entry for the block is there (unchecked: reading it may still miss).
  bool has(const std::string& object_key, int64_t block) const;
  // Keeps `bytes` as block `block` of `object_key`, evicting what it must.
  // Never throws: a cache that cannot store (disk full) logs and goes on.
  void store(const std::string& object_key, int64_t block, ByteSpan bytes);

  DiskCacheCounters counters() const;
  // Bytes the entries take now (a directory scan).
  uint64_t bytes_used() const;
  const std::filesystem::path& dir() const { return dir_; }
  uint64_t bound() const { return bound_; }

 private:
  std::filesystem::path entry_path(const std::string& object_key, int64_t block) const;
  // Removes least recently used entries until `incoming` more bytes fit.
  void make_room(uint64_t incoming);

  const std::filesystem::path dir_;
  const std::filesystem::path blocks_;
  const uint64_t bound_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, stores_{0}, evictions_{0}, corrupt_{0};
};

}  // namespace blosc2fs
