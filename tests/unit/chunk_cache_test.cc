// The decompressed-chunk cache against a fake loader: content, partial decoding,
// single-flight loading, the byte budget and LRU order, pinning, errors, threads.
#include "chunk_cache.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace blosc2fs {
namespace {

uint8_t pattern(int64_t n, int64_t pos) { return uint8_t((n * 131 + pos * 7 + pos / 251) & 0xFF); }

constexpr int64_t kStoredSize = 100;

// How decodes went, across threads.
struct DecodeLog {
  std::atomic<int> running{0};
  std::atomic<int> most_running{0};
  std::atomic<int> failures_left{0};  // the next decode_block calls that throw
  std::chrono::microseconds delay{0};
};

class FakeDecoder : public ChunkDecoder {
 public:
  FakeDecoder(int64_t n, int64_t nbytes, int32_t blocksize, bool delta, std::atomic<int>& decodes,
              std::atomic<int>& bad_references, DecodeLog& log)
      : n_(n), nbytes_(nbytes), blocksize_(blocksize), delta_(delta), decodes_(decodes),
        bad_references_(bad_references), log_(log) {}
  int64_t nbytes() const override { return nbytes_; }
  int32_t nblocks() const override { return int32_t((nbytes_ + blocksize_ - 1) / blocksize_); }
  int64_t block_offset(int32_t j) const override { return int64_t(j) * blocksize_; }
  int32_t block_size(int32_t j) const override {
    return int32_t(std::min<int64_t>(blocksize_, nbytes_ - block_offset(j)));
  }
  bool needs_reference_block() const override { return delta_; }
  void decode_block(int32_t j, MutableByteSpan out, ByteSpan reference) const override {
    if (delta_ && j > 0) {
      bool ok = reference.size() == size_t(block_size(0));
      for (size_t i = 0; ok && i < reference.size(); ++i) ok = reference[i] == pattern(n_, int64_t(i));
      if (!ok) ++bad_references_;
    }
    const int running = ++log_.running;
    for (int most = log_.most_running; running > most && !log_.most_running.compare_exchange_weak(most, running);) {
    }
    if (log_.delay.count()) std::this_thread::sleep_for(log_.delay);
    --log_.running;
    if (log_.failures_left.fetch_sub(1) > 0) throw FormatError("block " + std::to_string(j) + ": corrupt");
    const int64_t base = block_offset(j);
    for (size_t i = 0; i < out.size(); ++i) out[i] = pattern(n_, base + int64_t(i));
    ++decodes_;
  }

 private:
  int64_t n_, nbytes_;
  int32_t blocksize_;
  bool delta_;
  std::atomic<int>& decodes_;
  std::atomic<int>& bad_references_;
  DecodeLog& log_;
};

class FakeLoader : public ChunkLoader {
 public:
  int64_t nbytes = 64 * 1024;
  int32_t blocksize = 4096;
  bool delta = false;
  std::chrono::milliseconds load_delay{0};
  std::atomic<int> decodes{0};
  std::atomic<int> bad_references{0};
  std::atomic<int> failures_left{0};  // the next loads that throw FormatError
  DecodeLog log;

  PooledBuffer load(int64_t n, BufferPool& pool) override {
    {
      std::lock_guard lock(mutex_);
      ++loads_[n];
    }
    if (load_delay.count()) std::this_thread::sleep_for(load_delay);
    if (failures_left.fetch_sub(1) > 0) throw FormatError("chunk " + std::to_string(n) + ": corrupt");
    PooledBuffer stored = pool.take(size_t(kStoredSize));
    std::memset(stored.data(), int(n), stored.size());
    return stored;
  }
  std::unique_ptr<ChunkDecoder> decoder(int64_t n, ByteSpan stored) override {
    EXPECT_EQ(stored.size(), size_t(kStoredSize));
    return std::make_unique<FakeDecoder>(n, nbytes, blocksize, delta, decodes, bad_references, log);
  }
  int loads(int64_t n) {
    std::lock_guard lock(mutex_);
    return loads_[n];
  }

 private:
  std::mutex mutex_;
  std::map<int64_t, int> loads_;
};

uint64_t entry_charge(const FakeLoader& l) { return uint64_t(l.nbytes + kStoredSize); }

void expect_pattern(int64_t n, int64_t offset, const std::vector<uint8_t>& got) {
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], pattern(n, offset + int64_t(i))) << "chunk " << n << " byte " << offset + int64_t(i);
}

TEST(ChunkCache, ReadsReturnTheChunkBytes) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::mt19937 rng(1);
  for (int k = 0; k < 200; ++k) {
    int64_t n = rng() % 4;
    int64_t offset = rng() % loader.nbytes;
    std::vector<uint8_t> buf(rng() % 20000 + 1);
    size_t got = cache.read(n, offset, buf);
    ASSERT_EQ(got, std::min<size_t>(buf.size(), size_t(loader.nbytes - offset)));
    buf.resize(got);
    expect_pattern(n, offset, buf);
  }
}

TEST(ChunkCache, ReadsAreClippedToTheChunk) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(100);
  EXPECT_EQ(cache.read(0, loader.nbytes, buf), 0u);
  EXPECT_EQ(cache.read(0, loader.nbytes + 5, buf), 0u);
  EXPECT_EQ(cache.read(0, loader.nbytes - 10, buf), 10u);
  EXPECT_EQ(cache.decoded_size(0), loader.nbytes);
}

TEST(ChunkCache, SmallReadsDecodeOnlyTheBlocksTheyTouch) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(100);
  cache.read(0, 5000, buf);  // inside block 1
  EXPECT_EQ(loader.decodes, 1);
  cache.read(0, 5000, buf);  // again: nothing to decode
  EXPECT_EQ(loader.decodes, 1);
  cache.read(0, 4090, buf);  // blocks 0 and 1
  EXPECT_EQ(loader.decodes, 2);
  buf.resize(3 * 4096);
  cache.read(0, 4096 * 5 + 1, buf);  // blocks 5..8
  EXPECT_EQ(loader.decodes, 6);
  expect_pattern(0, 4096 * 5 + 1, buf);
}

TEST(ChunkCache, RangesDecodeOnlyTheirBlocks) {
  // array.npy's reads: a page of a memory map must not decode its whole chunk.
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  auto bytes_of = [&](const CachedChunk& c, int64_t at, int64_t len) {
    EXPECT_EQ(c.data().size(), size_t(loader.nbytes));
    return std::vector<uint8_t>(c.data().begin() + at, c.data().begin() + at + len);
  };
  expect_pattern(0, 5000, bytes_of(*cache.get_range(0, 5000, 100), 5000, 100));  // inside block 1
  EXPECT_EQ(loader.decodes, 1);
  expect_pattern(0, 4090, bytes_of(*cache.get_range(0, 4090, 10), 4090, 10));  // blocks 0 and 1
  EXPECT_EQ(loader.decodes, 2);
  cache.get_range(0, loader.nbytes, 10);  // past the end: nothing to decode
  cache.get_range(0, -5, 10);
  cache.get_range(0, 100, 0);
  EXPECT_EQ(loader.decodes, 2);
  cache.get_range(0, 4096 * 15, 4096 * 10);  // clipped to the chunk: block 15
  EXPECT_EQ(loader.decodes, 3);
  expect_pattern(0, 0, bytes_of(*cache.get_range(0, 0, loader.nbytes / 2), 0, loader.nbytes));  // half: every block
  EXPECT_EQ(loader.decodes, 16);
  EXPECT_EQ(loader.loads(0), 1);
}

TEST(ChunkCache, DeltaChunksDecodeTheReferenceBlockFirst) {
  FakeLoader loader;
  loader.delta = true;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(10);
  cache.read(0, 4096 * 3 + 7, buf);
  EXPECT_EQ(loader.decodes, 2);  // blocks 0 and 3
  EXPECT_EQ(loader.bad_references, 0);
  expect_pattern(0, 4096 * 3 + 7, buf);
}

TEST(ChunkCache, LargeReadsCompleteTheChunk) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(size_t(loader.nbytes / 2));
  cache.read(0, 0, buf);
  EXPECT_EQ(loader.decodes, 16);
  auto whole = cache.get(0);
  EXPECT_EQ(loader.decodes, 16);
  std::vector<uint8_t> all(whole->data().begin(), whole->data().end());
  expect_pattern(0, 0, all);
}

TEST(ChunkCache, ExactViewsDecodeOnlyTheirBlocksHoweverLarge) {
  // What a commit needs of a chunk written in part: half of it, and no more.
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::shared_ptr<const void> keep;
  const ByteSpan half = cache.view(0, loader.nbytes / 2, size_t(loader.nbytes / 2), keep, ChunkCache::Decode::exactly);
  EXPECT_EQ(loader.decodes, 8);
  expect_pattern(0, loader.nbytes / 2, std::vector<uint8_t>(half.begin(), half.end()));
  cache.view(0, 0, size_t(loader.nbytes / 2), keep);  // a reader's half: the rest too
  EXPECT_EQ(loader.decodes, 16);
}

TEST(ChunkCache, DecodedBytesAreTakenOnlyWholeAndUnread) {
  // A chunk about to be written over keeps the memory of its decoded bytes.
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  EXPECT_TRUE(cache.take_decoded(0).empty()) << "not cached";
  std::shared_ptr<const CachedChunk> part = cache.get_range(0, 0, 100);
  part.reset();
  EXPECT_TRUE(cache.take_decoded(0).empty()) << "a block decoded of 16";
  EXPECT_TRUE(cache.holds(0));
  std::shared_ptr<const CachedChunk> whole = cache.get(0);
  EXPECT_TRUE(cache.take_decoded(0).empty()) << "a reader holds it";
  const uint8_t* memory = whole->data().data();
  whole.reset();
  const PooledBuffer taken = cache.take_decoded(0);
  ASSERT_EQ(taken.size(), size_t(loader.nbytes));
  EXPECT_EQ(taken.data(), memory);
  expect_pattern(0, 0, std::vector<uint8_t>(taken.data(), taken.data() + taken.size()));
  EXPECT_FALSE(cache.holds(0));
  EXPECT_EQ(cache.stats().bytes, 0u);
  const int decodes = loader.decodes;
  std::vector<uint8_t> buf(10);
  cache.read(0, 0, buf);  // decoded again for the next reader
  EXPECT_GT(loader.decodes, decodes);
}

TEST(ChunkCache, ConcurrentMissesLoadOnce) {
  FakeLoader loader;
  loader.load_delay = std::chrono::milliseconds(100);
  ChunkCache cache(loader, 1 << 30);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<uint8_t> buf(1000);
      size_t got = cache.read(5, t * 1000, buf);
      for (size_t i = 0; i < got; ++i)
        if (buf[i] != pattern(5, t * 1000 + int64_t(i))) ++wrong;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(loader.loads(5), 1);
  ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 7u);
  EXPECT_EQ(s.entries, 1u);
}

TEST(ChunkCache, StaysWithinTheBudget) {
  FakeLoader loader;
  const uint64_t budget = 3 * entry_charge(loader);
  ChunkCache cache(loader, budget);
  // All but the last byte: complete chunks that are not retired.
  std::vector<uint8_t> buf(size_t(loader.nbytes - 1));
  for (int64_t n = 0; n < 10; ++n) {
    cache.read(n, 0, buf);
    ASSERT_LE(cache.stats().bytes, budget);
  }
  ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.evictions, 7u);
  EXPECT_EQ(s.bytes, 3 * uint64_t(loader.nbytes));  // complete chunks keep no stored bytes
  EXPECT_EQ(s.budget, budget);
  EXPECT_EQ(s.misses, 10u);
}

// Stored bytes viewed in a bigger buffer another owner keeps (a remote
// extent): charged for all that buffer while held, let go when the chunk is complete.
class LendingLoader : public FakeLoader {
 public:
  static constexpr size_t kLenderSize = 10 * size_t(kStoredSize);
  std::weak_ptr<const Bytes> last_lender;

  PooledBuffer load(int64_t n, BufferPool&) override {
    auto lender = std::make_shared<Bytes>(kLenderSize, uint8_t(n));
    last_lender = lender;
    return PooledBuffer::borrow({lender, ByteSpan(lender->data() + 100, size_t(kStoredSize)), lender->size()});
  }
};

TEST(ChunkCache, BorrowedStoredBytesAreChargedForAllTheyKeep) {
  LendingLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(size_t(loader.nbytes / 4));
  ASSERT_EQ(cache.read(0, 0, buf), buf.size());
  expect_pattern(0, 0, buf);
  EXPECT_FALSE(loader.last_lender.expired());
  EXPECT_EQ(cache.stats().bytes, LendingLoader::kLenderSize + uint64_t(loader.nbytes));
  buf.resize(size_t(loader.nbytes) - buf.size());
  cache.read(0, loader.nbytes / 4, buf);  // the rest: complete, retired
  EXPECT_TRUE(loader.last_lender.expired());
  EXPECT_EQ(cache.stats().bytes, 0u);
}

TEST(ChunkCache, ChunksReadToTheEndAreRetired) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(size_t(loader.nbytes / 4));
  for (int64_t n = 0; n < 8; ++n)
    for (int64_t part = 0; part < 4; ++part) {
      ASSERT_EQ(cache.read(n, part * int64_t(buf.size()), buf), buf.size());
      expect_pattern(n, part * int64_t(buf.size()), buf);
      ASSERT_EQ(cache.stats().entries, part < 3 ? 1u : 0u) << "chunk " << n << " part " << part;
    }
  ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.evictions, 8u);
  EXPECT_EQ(s.bytes, 0u);
  cache.read(0, 0, buf);
  EXPECT_EQ(loader.loads(0), 2);
}

TEST(ChunkCache, PartlyReadChunksStay) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(size_t(loader.nbytes / 4));
  cache.read(0, 0, buf);
  cache.read(0, 0, buf);  // the same quarter again
  EXPECT_EQ(cache.stats().entries, 1u);
  buf.resize(size_t(loader.nbytes) - buf.size());
  cache.read(0, loader.nbytes / 4, buf);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(loader.loads(0), 1);
}

class GappedLoader : public FakeLoader {
 public:
  std::unique_ptr<ChunkDecoder> decoder(int64_t, ByteSpan) override { return std::make_unique<Gapped>(); }

 private:
  class Gapped : public ChunkDecoder {  // block 1 starts 10 bytes after block 0 ends
    int64_t nbytes() const override { return 200; }
    int32_t nblocks() const override { return 2; }
    int64_t block_offset(int32_t j) const override { return j * 110; }
    int32_t block_size(int32_t) const override { return 90; }
    bool needs_reference_block() const override { return false; }
    void decode_block(int32_t, MutableByteSpan out, ByteSpan) const override {
      std::memset(out.data(), 7, out.size());
    }
  };
};

TEST(ChunkCache, BlocksMustCoverTheChunkExactly) {
  GappedLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(200);
  EXPECT_THROW(cache.read(0, 0, buf), FormatError);
}

TEST(ChunkCache, EvictsTheLeastRecentlyUsed) {
  FakeLoader loader;
  ChunkCache cache(loader, 3 * entry_charge(loader));
  std::vector<uint8_t> buf(10);
  for (int64_t n : {0, 1, 2, 0, 3}) cache.read(n, 0, buf);  // 1 is the oldest when 3 comes
  cache.read(0, 0, buf);
  cache.read(2, 0, buf);
  EXPECT_EQ(loader.loads(0), 1);
  EXPECT_EQ(loader.loads(2), 1);
  cache.read(1, 0, buf);
  EXPECT_EQ(loader.loads(1), 2);
}

TEST(ChunkCache, PinnedChunksSurviveEviction) {
  FakeLoader loader;
  ChunkCache cache(loader, entry_charge(loader));
  std::shared_ptr<const CachedChunk> pinned = cache.get(0);
  std::vector<uint8_t> buf(size_t(loader.nbytes));
  for (int64_t n = 1; n < 6; ++n) cache.read(n, 0, buf);
  EXPECT_GE(cache.stats().evictions, 1u);
  std::vector<uint8_t> all(pinned->data().begin(), pinned->data().end());
  ASSERT_EQ(all.size(), size_t(loader.nbytes));
  expect_pattern(0, 0, all);
}

TEST(ChunkCache, ABudgetOfZeroStillServesReads) {
  FakeLoader loader;
  ChunkCache cache(loader, 0);
  std::vector<uint8_t> buf(300);
  for (int64_t n = 0; n < 5; ++n) {
    ASSERT_EQ(cache.read(n, 1000, buf), buf.size());
    expect_pattern(n, 1000, buf);
  }
  EXPECT_LE(cache.stats().entries, 1u);
}

TEST(ChunkCache, LoadFailuresAreReportedAndNotKept) {
  FakeLoader loader;
  loader.failures_left = 1;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(10);
  EXPECT_THROW(cache.read(2, 0, buf), FormatError);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes, 0u);
  EXPECT_EQ(cache.read(2, 0, buf), 10u);
  EXPECT_EQ(loader.loads(2), 2);
}

TEST(ChunkCache, WaitersOnAFailedLoadGetTheError) {
  FakeLoader loader;
  loader.failures_left = 1;
  loader.load_delay = std::chrono::milliseconds(100);
  ChunkCache cache(loader, 1 << 30);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      std::vector<uint8_t> buf(10);
      try {
        cache.read(7, 0, buf);
      } catch (const FormatError&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  // Threads that arrived during the failed load share its error; none loads again
  // while it is in flight. (A thread scheduled after the failure may retry.)
  EXPECT_GE(errors, 1);
  EXPECT_LE(loader.loads(7), 1 + (4 - errors));
}

TEST(ChunkCache, StoredReadsDoNotDecode) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(200);
  EXPECT_EQ(cache.read_stored(3, 0, buf), size_t(kStoredSize));
  EXPECT_EQ(buf[0], 3);
  EXPECT_EQ(cache.read_stored(3, kStoredSize - 1, buf), 1u);
  EXPECT_EQ(cache.read_stored(3, kStoredSize, buf), 0u);
  EXPECT_EQ(loader.decodes, 0);
  EXPECT_EQ(cache.stats().bytes, uint64_t(kStoredSize));
}

TEST(ChunkCache, CompleteChunksDropTheirStoredBytes) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(100);
  cache.read(0, 0, buf);
  EXPECT_EQ(cache.stats().bytes, uint64_t(loader.nbytes + kStoredSize));  // partly decoded: both
  cache.get(0);
  EXPECT_EQ(cache.stats().bytes, uint64_t(loader.nbytes));
  EXPECT_EQ(cache.read_stored(0, 0, buf), 100u);  // the stored bytes come back
  EXPECT_EQ(buf[0], 0);
  EXPECT_EQ(loader.loads(0), 2);
  EXPECT_EQ(cache.stats().bytes, uint64_t(loader.nbytes + kStoredSize));
  buf.assign(size_t(loader.nbytes), 0);
  EXPECT_EQ(cache.read(0, 0, buf), buf.size());  // still served from the decoded buffer
  expect_pattern(0, 0, buf);
  EXPECT_EQ(loader.decodes, 16);
}

TEST(ChunkCache, ManyThreadsReadConsistentBytes) {
  FakeLoader loader;
  loader.nbytes = 50000;  // a short last block
  loader.blocksize = 3000;
  loader.delta = true;
  ChunkCache cache(loader, 5 * entry_charge(loader));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<uint8_t> buf;
      for (int k = 0; k < 1500; ++k) {
        int64_t n = rng() % 30;
        int64_t offset = rng() % loader.nbytes;
        buf.resize(rng() % 8000 + 1);
        size_t got = k % 7 == 0 ? 0 : cache.read(n, offset, buf);
        if (k % 7 == 0) {
          auto chunk = cache.get(n);
          if (chunk->data().size() != size_t(loader.nbytes) || chunk->data()[offset] != pattern(n, offset)) ++wrong;
          continue;
        }
        if (got != std::min<size_t>(buf.size(), size_t(loader.nbytes - offset))) ++wrong;
        for (size_t i = 0; i < got; ++i)
          if (buf[i] != pattern(n, offset + int64_t(i))) {
            ++wrong;
            break;
          }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(loader.bad_references, 0);
  ChunkCacheStats s = cache.stats();
  EXPECT_LE(s.bytes, s.budget);
  EXPECT_LE(s.entries, 5u);
  EXPECT_EQ(s.hits + s.misses, 8u * 1500u);
}

TEST(ChunkCache, ReadersOfOneChunkDecodeItsBlocksInParallel) {
  FakeLoader loader;
  loader.nbytes = 64 * 4096;
  loader.log.delay = std::chrono::milliseconds(5);
  ChunkCache cache(loader, 1 << 30);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)  // each a quarter of the chunk, in 4 KiB reads
    threads.emplace_back([&, t] {
      std::vector<uint8_t> buf(4096);
      for (int64_t offset = t * 16 * 4096; offset < (t + 1) * 16 * 4096; offset += 4096) {
        if (cache.read(0, offset, buf) != buf.size()) ++wrong;
        for (size_t i = 0; i < buf.size(); ++i)
          if (buf[i] != pattern(0, offset + int64_t(i))) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(loader.decodes, 64);  // each block once
  EXPECT_GE(loader.log.most_running, 2);
  EXPECT_EQ(loader.loads(0), 1);
  EXPECT_EQ(cache.stats().entries, 0u);  // every byte read: retired
}

TEST(ChunkCache, AFailedBlockIsDecodedAgainByTheNextReader) {
  FakeLoader loader;
  loader.delta = true;
  loader.log.failures_left = 1;  // block 0, the reference, fails once
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(size_t(loader.nbytes));
  EXPECT_THROW(cache.read(0, 0, buf), FormatError);
  ASSERT_EQ(cache.read(0, 0, buf), buf.size());
  expect_pattern(0, 0, buf);
  EXPECT_EQ(loader.bad_references, 0);
}

TEST(ChunkCache, WaitersOnAFailedBlockTryItThemselves) {
  FakeLoader loader;
  loader.log.delay = std::chrono::milliseconds(20);
  loader.log.failures_left = 1;
  ChunkCache cache(loader, 1 << 30);
  std::atomic<int> errors{0}, good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      std::vector<uint8_t> buf(100);
      try {
        if (cache.read(0, 5000, buf) == buf.size() && buf[0] == pattern(0, 5000)) ++good;
      } catch (const FormatError&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(good, 3);
}

TEST(ChunkCache, StatisticsText) {
  ChunkCacheStats s;
  s.hits = 1, s.misses = 2, s.evictions = 3, s.bytes = 4, s.budget = 5, s.entries = 6, s.dirty = 7;
  s.decoded_blocks = 8, s.decoded_bytes = 9;
  EXPECT_EQ(s.text(), "hits=1 misses=2 evictions=3 bytes=4 budget=5 entries=6 dirty=7 decoded_blocks=8 decoded_bytes=9");
}

TEST(ChunkCache, ClearDropsEverything) {
  FakeLoader loader;
  ChunkCache cache(loader, 1 << 30);
  std::vector<uint8_t> buf(10);
  cache.read(0, 0, buf);
  cache.read(1, 0, buf);
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes, 0u);
  cache.read(0, 0, buf);
  EXPECT_EQ(loader.loads(0), 2);
}

}  // namespace
}  // namespace blosc2fs
