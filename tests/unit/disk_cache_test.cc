// The persistent disk cache of remote mounts: intact blocks only, the bound
// after every store, least recently used first, shared by processes.
#include "disk_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "body_pool.h"
#include "crc32c.h"
#include "error.h"
#include "fixtures.h"

namespace blosc2fs {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr size_t kBlock = size_t(DiskCache::kBlockSize);

Bytes block_bytes(uint8_t seed, size_t size = kBlock) {
  Bytes b(size);
  for (size_t i = 0; i < size; ++i) b[i] = uint8_t(seed * 31 + i * 7);
  return b;
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir / "blocks"))
    if (e.path().extension() == ".blk") out.push_back(e.path());
  return out;
}

TEST(DiskCache, BlocksComeBackOnlyForTheirKeyPositionAndSize) {
  TempDir tmp;
  DiskCache cache(tmp.path() / "c", 8 * kBlock);
  EXPECT_EQ(fs::status(tmp.path() / "c").permissions() & fs::perms::all, fs::perms::owner_all);
  const std::string key = "https://h/x.b2nd\n\"etag-1\"";
  cache.store(key, 0, block_bytes(1));
  cache.store(key, 3, block_bytes(2, 1000));  // an object's short last block
  EXPECT_EQ(cache.load(key, 0, kBlock), block_bytes(1));
  EXPECT_EQ(cache.load(key, 3, 1000), block_bytes(2, 1000));
  EXPECT_FALSE(cache.load(key, 1, kBlock));
  EXPECT_FALSE(cache.load(key + "x", 0, kBlock));                 // the object changed: another identity
  EXPECT_FALSE(cache.load("https://h/x.b2nd\n\"etag-2\"", 0, kBlock));
  const DiskCacheCounters c = cache.counters();
  EXPECT_EQ(c.hits, 2u);
  EXPECT_EQ(c.stores, 2u);
  EXPECT_EQ(c.corrupt, 0u);
  // A second cache over the same directory (a remount) finds them.
  DiskCache again(tmp.path() / "c", 8 * kBlock);
  EXPECT_EQ(again.load(key, 0, kBlock), block_bytes(1));
}

TEST(DiskCache, ADamagedEntryIsRemovedAndNeverServed) {
  TempDir tmp;
  DiskCache cache(tmp.path() / "c", 8 * kBlock);
  const std::string key = "s3://b/k\n\"e\"";
  for (int damage = 0; damage < 4; ++damage) {
    SCOPED_TRACE(damage);
    cache.store(key, 0, block_bytes(9));
    auto files = entries(tmp.path() / "c");
    ASSERT_EQ(files.size(), 1u);
    {
      std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
      if (damage == 0) {
        f.seekp(-5, std::ios::end);  // a data byte
        f.put('\x5a');
      } else if (damage == 1) {
        f.seekp(0);  // the magic
        f.put('X');
      } else if (damage == 2) {
        f.seekp(20);  // the stored length
        f.put('\x01');
      }
    }
    if (damage == 3) fs::resize_file(files[0], 100);  // cut short
    EXPECT_FALSE(cache.load(key, 0, kBlock));
    EXPECT_TRUE(entries(tmp.path() / "c").empty());
  }
  EXPECT_EQ(cache.counters().corrupt, 4u);
}

TEST(DiskCache, TheBoundHoldsAfterEveryStoreAndTheLeastRecentlyUsedGoesFirst) {
  TempDir tmp;
  const uint64_t bound = 3 * kBlock + 3 * 200;  // three blocks with their headers
  DiskCache cache(tmp.path() / "c", bound);
  const std::string key = "k";
  for (int b = 0; b < 3; ++b) cache.store(key, b, block_bytes(uint8_t(b)));
  ASSERT_EQ(entries(tmp.path() / "c").size(), 3u);
  // Block 0 oldest by far, then 1, then 2; reading 0 makes it the newest.
  const auto now = fs::file_time_type::clock::now();
  for (int b = 0; b < 3; ++b)
    for (const fs::path& p : entries(tmp.path() / "c"))
      if (p.filename().string().ends_with("-" + std::to_string(b) + ".blk"))
        fs::last_write_time(p, now - std::chrono::hours(10 - b));
  ASSERT_TRUE(cache.load(key, 0, kBlock));
  for (int b = 3; b < 10; ++b) {
    cache.store(key, b, block_bytes(uint8_t(b)));
    EXPECT_LE(cache.bytes_used(), bound);
  }
  EXPECT_FALSE(cache.load(key, 1, kBlock));
  EXPECT_TRUE(cache.load(key, 9, kBlock));
  EXPECT_GE(cache.counters().evictions, 7u);
  EXPECT_THROW(DiskCache(tmp.path() / "small", 1000), IoError);
}

TEST(DiskCache, ProcessesSharingADirectoryKeepTheBoundAndServeOnlyWhatTheyStored) {
  TempDir tmp;
  const uint64_t bound = 5 * kBlock + 5 * 200;
  const fs::path dir = tmp.path() / "shared";
  DiskCache(dir, bound);  // made before the children race to make it
  std::vector<pid_t> children;
  for (int writer = 0; writer < 3; ++writer) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DiskCache cache(dir, bound);
      bool ok = true;
      for (int b = 0; b < 12; ++b) {
        cache.store("writer" + std::to_string(writer), b, block_bytes(uint8_t(writer * 16 + b)));
        ok = ok && cache.bytes_used() <= bound;
        auto got = cache.load("writer" + std::to_string(writer), b, kBlock);
        ok = ok && (!got || *got == block_bytes(uint8_t(writer * 16 + b)));
      }
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  DiskCache cache(dir, bound);
  EXPECT_LE(cache.bytes_used(), bound);
  EXPECT_EQ(cache.counters().corrupt, 0u);
}

TEST(DiskCache, BlocksAreReadStraightIntoTheCallersBuffer) {
  TempDir tmp;
  DiskCache cache(tmp.path() / "c", 8 * kBlock);
  const std::string key = "https://h/y.b2frame\n\"e\"";
  cache.store(key, 2, block_bytes(4));
  Bytes out(kBlock);
  EXPECT_TRUE(cache.has(key, 2));
  EXPECT_FALSE(cache.has(key, 3));
  ASSERT_TRUE(cache.read(key, 2, out));
  EXPECT_EQ(out, block_bytes(4));
  Bytes shorter(kBlock - 1);
  EXPECT_FALSE(cache.read(key, 2, shorter));  // never a part of a block
  EXPECT_FALSE(cache.read(key, 3, out));
}

TEST(DiskCache, ABlockSplitBetweenTwoBuffersIsCheckedWhole) {
  TempDir tmp;
  DiskCache cache(tmp.path() / "c", 8 * kBlock);
  const std::string key = "https://h/z.b2frame\n\"e\"";
  const Bytes block = block_bytes(6);
  cache.store(key, 1, block);
  Bytes head(1000), tail(kBlock - 1000);
  ASSERT_TRUE(cache.read(key, 1, head, tail));
  EXPECT_TRUE(std::equal(head.begin(), head.end(), block.begin()));
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), block.begin() + 1000));
  // A damaged byte in the tail fails the check of the whole (and removes it).
  auto files = entries(tmp.path() / "c");
  ASSERT_EQ(files.size(), 1u);
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-5, std::ios::end);
    f.put(char(0x5a ^ block[size_t(kBlock) - 5]));
  }
  EXPECT_FALSE(cache.read(key, 1, head, tail));
  EXPECT_EQ(cache.counters().corrupt, 1u);
  EXPECT_FALSE(cache.has(key, 1));
  cache.store(key, 1, block);
  Bytes short_tail(kBlock - 1001);
  EXPECT_FALSE(cache.read(key, 1, head, short_tail));  // the parts must make the whole block
}

TEST(DiskCache, EntriesOfTheFirstFormatAreMissesRemovedNotDamage) {
  TempDir tmp;
  DiskCache cache(tmp.path() / "c", 8 * kBlock);
  const std::string key = "k";
  cache.store(key, 0, block_bytes(3));
  auto files = entries(tmp.path() / "c");
  ASSERT_EQ(files.size(), 1u);
  {
    // B2FSDC01: the same layout, checked with zlib's CRC-32 (before CRC-32C).
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(7);
    f.put('1');
  }
  EXPECT_FALSE(cache.load(key, 0, kBlock));
  EXPECT_TRUE(entries(tmp.path() / "c").empty());
  EXPECT_EQ(cache.counters().corrupt, 0u);
  cache.store(key, 0, block_bytes(3));  // fetched again: the new format
  EXPECT_EQ(cache.load(key, 0, kBlock), block_bytes(3));
}

TEST(Crc32c, KnownValuesAndPiecesAgree) {
  const std::string check = "123456789";
  const ByteSpan digits(reinterpret_cast<const uint8_t*>(check.data()), check.size());
  EXPECT_EQ(crc32c(0, digits), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c(0, {}), 0u);
  const Bytes zeros(32, 0);
  EXPECT_EQ(crc32c(0, zeros), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
  // Any split, any alignment: the same as in one piece.
  const Bytes data = block_bytes(7, 4099);
  const uint32_t whole = crc32c(0, data);
  for (size_t cut : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(13), size_t(4098)}) {
    const ByteSpan all(data);
    EXPECT_EQ(crc32c(crc32c(0, all.first(cut)), all.subspan(cut)), whole) << cut;
    EXPECT_EQ(crc32c_portable(crc32c_portable(0, all.first(cut)), all.subspan(cut)), whole) << cut;
  }
  EXPECT_EQ(crc32c_portable(0, digits), 0xE3069283u);
  // Long enough for the three-lane stripes (3 x 4 KiB), with a tail, at every alignment.
  const Bytes big = block_bytes(11, 100003);
  const uint32_t expected = crc32c_portable(0, big);
  for (size_t skew = 0; skew < 8; ++skew) {
    const ByteSpan part = ByteSpan(big).subspan(skew);
    EXPECT_EQ(crc32c(0, part), crc32c_portable(0, part)) << skew;
  }
  EXPECT_EQ(crc32c(0, big), expected);
  EXPECT_EQ(crc32c(crc32c(0, ByteSpan(big).first(50000)), ByteSpan(big).subspan(50000)), expected);
}

TEST(BodyPool, BuffersComeBackWhenTheirExtentEndsAndFitBodiesOfAboutTheirSize) {
  auto pool = BodyPool::create(16 << 20);
  Bytes first = pool->take(3 << 20);
  first.resize(3 << 20, 1);
  const uint8_t* memory = first.data();
  auto extent = pool->adopt(std::move(first));
  EXPECT_EQ(pool->held(), 0u);
  extent.reset();
  EXPECT_EQ(pool->held(), uint64_t(3) << 20);
  Bytes again = pool->take((3 << 20) - 100);
  EXPECT_EQ(again.data(), memory);  // the same pages, already mapped
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(pool->held(), 0u);
  // A small body never takes a big buffer; the pool never holds more than its limit.
  pool->adopt(std::move(again)).reset();
  EXPECT_NE(pool->take(1 << 20).capacity(), size_t(3) << 20);
  for (int i = 0; i < 8; ++i) {
    Bytes b = pool->take(4 << 20);
    b.resize(4 << 20);
    pool->adopt(std::move(b)).reset();
  }
  EXPECT_LE(pool->held(), uint64_t(16) << 20);
}

}  // namespace
}  // namespace blosc2fs
