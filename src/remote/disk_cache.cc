#include "disk_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "crc32c.h"
#include "error.h"
#include "unique_fd.h"

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'B', '2', 'F', 'S', 'D', 'C', '0', '2'};
// The first format: the same layout with zlib's CRC-32.
constexpr char kFirstMagic[8] = {'B', '2', 'F', 'S', 'D', 'C', '0', '1'};
// magic, key length (u32), block (u64), data length (u32), CRC-32C (u32)
constexpr size_t kHeaderSize = 8 + 4 + 8 + 4 + 4;
constexpr size_t kMaxKey = 8192;
constexpr const char* kEntrySuffix = ".blk";
constexpr const char* kTempPrefix = ".tmp.";
// A temporary file this old was left by a writer that died.
constexpr auto kStaleTemp = std::chrono::minutes(10);

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint32_t entry_crc(const std::string& key, int64_t block, ByteSpan data, ByteSpan more = {}) {
  uint32_t crc = crc32c(0, ByteSpan(reinterpret_cast<const uint8_t*>(key.data()), key.size()));
  uint8_t position[8];
  store_le64(position, uint64_t(block));
  crc = crc32c(crc, position);
  return crc32c(crc32c(crc, data), more);
}

bool write_all(int fd, ByteSpan bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += size_t(n);
  }
  return true;
}

}  // namespace

DiskCache::DiskCache(fs::path dir, uint64_t bound) : dir_(std::move(dir)), blocks_(dir_ / "blocks"), bound_(bound) {
  if (bound_ < uint64_t(kBlockSize) + kHeaderSize + kMaxKey)
    throw IoError("cache_dir_size " + std::to_string(bound_) + " holds no 1 MiB block", EINVAL);
  std::error_code ec;
  fs::create_directories(blocks_, ec);
  if (ec) throw IoError("cache_dir " + dir_.string() + ": " + ec.message(), ec.value());
  ::chmod(dir_.c_str(), 0700);
  ::chmod(blocks_.c_str(), 0700);
  UniqueFd lock(::open((dir_ / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock.ok()) throw_errno("cache_dir " + dir_.string() + ": cannot make its lock file");
  if (::access(blocks_.c_str(), W_OK | X_OK) != 0) throw_errno("cache_dir " + blocks_.string());
}

fs::path DiskCache::entry_path(const std::string& object_key, int64_t block) const {
  char name[64];
  std::snprintf(name, sizeof name, "%016llx-%llx%s", static_cast<unsigned long long>(fnv1a(object_key)),
                static_cast<unsigned long long>(block), kEntrySuffix);
  return blocks_ / name;
}

std::optional<Bytes> DiskCache::load(const std::string& object_key, int64_t block, size_t size) {
  Bytes data(size);
  if (!read(object_key, block, data)) return std::nullopt;
  return data;
}

bool DiskCache::has(const std::string& object_key, int64_t block) const {
  return ::access(entry_path(object_key, block).c_str(), F_OK) == 0;
}

bool DiskCache::read(const std::string& object_key, int64_t block, MutableByteSpan out, MutableByteSpan rest) {
  const fs::path path = entry_path(object_key, block);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) {
    ++misses_;
    return false;
  }
  auto miss = [&](const char* why) {
    ++misses_;
    if (why) {
      ++corrupt_;
      spdlog::warn("cache_dir: {} is damaged ({}): removed, fetched again", path.string(), why);
      ::unlink(path.c_str());
    }
    return false;
  };
  // Header, key and data in one call, the data straight where it is wanted;
  // one byte more shows an entry longer than it says.
  uint8_t header[kHeaderSize];
  thread_local std::string key;
  key.resize(object_key.size());
  uint8_t beyond = 0;
  iovec parts[5] = {{header, kHeaderSize}, {key.data(), key.size()}, {out.data(), out.size()},
                    {rest.data(), rest.size()}, {&beyond, 1}};
  ssize_t got;
  do {
    got = ::preadv(fd.get(), parts, 5, 0);
  } while (got < 0 && errno == EINTR);
  if (got < ssize_t(kHeaderSize)) return miss(got < 0 ? "cannot read it" : "no entry header");
  if (std::memcmp(header, kFirstMagic, 8) == 0) {
    // The first format: not damaged, only older; the block is fetched again and stored anew.
    ++misses_;
    ::unlink(path.c_str());
    return false;
  }
  if (std::memcmp(header, kMagic, 8) != 0) return miss("no entry header");
  const uint32_t key_len = load_le32(header + 8);
  const int64_t stored_block = int64_t(load_le64(header + 12));
  const uint32_t data_len = load_le32(header + 20);
  const uint32_t crc = load_le32(header + 24);
  // Another object's block under the same name (a hash collision): not ours, not damaged.
  if (key_len != object_key.size() || stored_block != block) return miss(nullptr);
  if (data_len != out.size() + rest.size()) return miss("wrong length");
  if (uint64_t(got) != kHeaderSize + key_len + data_len) return miss("wrong file size");
  if (key != object_key) return miss(nullptr);
  if (entry_crc(key, block, out, rest) != crc) return miss("checksum mismatch");
  // Recently used: the eviction order is the entries' modification times.
  ::futimens(fd.get(), nullptr);
  ++hits_;
  return true;
}

void DiskCache::make_room(uint64_t incoming) {
  struct Entry {
    fs::file_time_type time;
    uint64_t size;
    fs::path path;
  };
  std::vector<Entry> entries;
  uint64_t used = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(blocks_, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code entry_ec;
    const std::string name = it->path().filename().string();
    const uint64_t size = it->file_size(entry_ec);
    const fs::file_time_type time = it->last_write_time(entry_ec);
    if (entry_ec) continue;  // removed meanwhile
    if (name.starts_with(kTempPrefix)) {
      if (now - time > kStaleTemp) fs::remove(it->path(), entry_ec);
      else used += size;  // another writer's, about to become an entry
      continue;
    }
    if (!name.ends_with(kEntrySuffix)) continue;
    used += size;
    entries.push_back({time, size, it->path()});
  }
  if (used + incoming <= bound_) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.time < b.time; });
  for (const Entry& e : entries) {
    if (used + incoming <= bound_) break;
    std::error_code remove_ec;
    if (fs::remove(e.path, remove_ec)) ++evictions_;
    used -= std::min(used, e.size);
  }
}

void DiskCache::store(const std::string& object_key, int64_t block, ByteSpan bytes) {
  if (object_key.size() > kMaxKey || bytes.size() > size_t(kBlockSize)) return;
  const uint64_t entry_size = kHeaderSize + object_key.size() + bytes.size();
  UniqueFd lock(::open((dir_ / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock.ok()) return;
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return;
  }
  // The lock is released when `lock` closes: after the rename, so that the
  // next writer counts this entry.
  make_room(entry_size);

  static std::atomic<uint64_t> sequence{0};
  const fs::path temp = blocks_ / (std::string(kTempPrefix) + std::to_string(::getpid()) + "." +
                                   std::to_string(sequence.fetch_add(1)));
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.ok()) {
    spdlog::warn("cache_dir: cannot write {}: {}", temp.string(), std::strerror(errno));
    return;
  }
  uint8_t header[kHeaderSize];
  std::memcpy(header, kMagic, 8);
  store_le32(header + 8, uint32_t(object_key.size()));
  store_le64(header + 12, uint64_t(block));
  store_le32(header + 20, uint32_t(bytes.size()));
  store_le32(header + 24, entry_crc(object_key, block, bytes));
  const bool written = write_all(fd.get(), header) &&
                       write_all(fd.get(), ByteSpan(reinterpret_cast<const uint8_t*>(object_key.data()),
                                                    object_key.size())) &&
                       write_all(fd.get(), bytes);
  if (!written || ::rename(temp.c_str(), entry_path(object_key, block).c_str()) != 0) {
    spdlog::warn("cache_dir: cannot store a block in {}: {}", blocks_.string(), std::strerror(errno));
    ::unlink(temp.c_str());
    return;
  }
  ++stores_;
}

DiskCacheCounters DiskCache::counters() const {
  return DiskCacheCounters{hits_.load(), misses_.load(), stores_.load(), evictions_.load(), corrupt_.load()};
}

uint64_t DiskCache::bytes_used() const {
  uint64_t used = 0;
  std::error_code ec;
  for (fs::directory_iterator it(blocks_, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code entry_ec;
    const uint64_t size = it->file_size(entry_ec);
    if (!entry_ec) used += size;
  }
  return used;
}

}  // namespace blosc2fs
