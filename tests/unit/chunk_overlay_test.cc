// The overlay of written chunks over a committed frame, with a fake frame:
// data offsets with chunks held and pending, appends filling the last chunk,
// truncation, zero extension without memory, the batches a commit stages,
// and the held bytes pinned in the chunk cache's budget.
#include "chunk_overlay.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <numeric>

#include <gtest/gtest.h>

#include "fs_error.h"

namespace blosc2fs {
namespace {

class NoLoader : public ChunkLoader {
 public:
  PooledBuffer load(int64_t, BufferPool&) override { throw FormatError("not used"); }
  std::unique_ptr<ChunkDecoder> decoder(int64_t, ByteSpan) override { throw FormatError("not used"); }
};

// Committed chunks of chosen sizes; byte i of chunk n is (n * 16 + i) % 251.
class FakeFrame : public ChunkSource {
 public:
  explicit FakeFrame(std::vector<int64_t> sizes) : sizes_(std::move(sizes)) {}
  int64_t nchunks() const override { return int64_t(sizes_.size()); }
  int64_t chunk_size(int64_t n) const override { return sizes_.at(size_t(n)); }
  int64_t chunk_offset(int64_t n) const override {
    return std::accumulate(sizes_.begin(), sizes_.begin() + n, int64_t(0));
  }
  ByteSpan view(int64_t n, int64_t offset, size_t len, std::shared_ptr<const void>& keep) override {
    auto all = std::make_shared<Bytes>(load(n));
    keep = all;
    if (offset >= int64_t(all->size())) return {};
    return ByteSpan(*all).subspan(size_t(offset), std::min(len, all->size() - size_t(offset)));
  }
  Bytes load(int64_t n) override {
    Bytes b(size_t(sizes_.at(size_t(n))));
    for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t((n * 16 + int64_t(i)) % 251);
    return b;
  }
  Bytes data() {
    Bytes out;
    for (int64_t n = 0; n < nchunks(); ++n) {
      Bytes c = load(n);
      out.insert(out.end(), c.begin(), c.end());
    }
    return out;
  }

 private:
  std::vector<int64_t> sizes_;
};

Bytes read_data(const ChunkOverlay& o, ChunkSource& src) {
  Bytes out(size_t(o.data_size(src)) + 7);
  out.resize(o.read_data(src, 0, out));
  return out;
}

struct Fixture : ::testing::Test {
  NoLoader loader;
  ChunkCache cache{loader, 1 << 20};
  FakeFrame frame{{100, 100, 60}};
  ChunkOverlay overlay{cache};
  void SetUp() override { overlay.reset(frame, {100, 100}); }
};

TEST_F(Fixture, ReadsTheFrameUntilWritten) {
  EXPECT_TRUE(overlay.clean());
  EXPECT_EQ(overlay.data_size(frame), 260);
  EXPECT_EQ(read_data(overlay, frame), frame.data());
}

TEST_F(Fixture, OverwritesKeepOffsetsAndPinBytes) {
  overlay.write_data(frame, 150, Bytes(80, 0xAA));  // chunks 1 and 2
  Bytes want = frame.data();
  std::fill(want.begin() + 150, want.begin() + 230, 0xAA);
  EXPECT_EQ(read_data(overlay, frame), want);
  EXPECT_EQ(overlay.materialized_chunks(), 2u);
  EXPECT_EQ(cache.stats().dirty, 160u);
  EXPECT_FALSE(overlay.clean());
  overlay.discard();
  EXPECT_EQ(cache.stats().dirty, 0u);
  EXPECT_EQ(read_data(overlay, frame), frame.data());
}

TEST_F(Fixture, AppendsFillTheLastChunkThenAddChunks) {
  overlay.write_data(frame, 260, Bytes(150, 0xBB));
  EXPECT_EQ(overlay.count(), 5);
  EXPECT_EQ(overlay.chunk_size(frame, 2), 100);
  EXPECT_EQ(overlay.chunk_size(frame, 3), 100);
  EXPECT_EQ(overlay.chunk_size(frame, 4), 10);
  Bytes want = frame.data();
  want.insert(want.end(), 150, 0xBB);
  EXPECT_EQ(read_data(overlay, frame), want);
  // A write past the end fills the gap with zeros.
  overlay.write_data(frame, 500, Bytes{1});
  EXPECT_EQ(overlay.data_size(frame), 501);
  Bytes all = read_data(overlay, frame);
  EXPECT_EQ(all[409], 0xBB);
  EXPECT_EQ(all[410], 0);
  EXPECT_EQ(all[500], 1);
}

TEST_F(Fixture, ExtendingWithZerosHoldsNoMemory) {
  overlay.resize_data(frame, 260 + 40 + 100000);
  EXPECT_EQ(overlay.count(), 3 + 1000);
  EXPECT_EQ(cache.stats().dirty, 100u);  // only the last chunk, filled up
  Bytes tail(10);
  EXPECT_EQ(overlay.read_data(frame, 260 + 40 + 99990, tail), 10u);
  EXPECT_EQ(tail, Bytes(10, 0));
}

TEST_F(Fixture, TruncationDropsAndShortensChunks) {
  overlay.resize_data(frame, 150);
  EXPECT_EQ(overlay.count(), 2);
  EXPECT_EQ(overlay.chunk_size(frame, 1), 50);
  Bytes want = frame.data();
  want.resize(150);
  EXPECT_EQ(read_data(overlay, frame), want);
  ChunkOverlay::Batch b = overlay.batch();
  EXPECT_EQ(b.truncate_to, 2);
  ASSERT_EQ(b.replace.size(), 1u);
  EXPECT_EQ(b.replace[0].first, 1);
  EXPECT_TRUE(b.append.empty());
  EXPECT_EQ(b.nchunks_after, 2);
  overlay.resize_data(frame, 0);
  EXPECT_EQ(overlay.count(), 0);
  EXPECT_EQ(overlay.data_size(frame), 0);
}

TEST_F(Fixture, ChunkWritesRespectTheLimit) {
  overlay.write_chunk(frame, 2, 60, Bytes(40, 1));  // the last chunk grows to the chunksize
  EXPECT_EQ(overlay.chunk_size(frame, 2), 100);
  try {
    overlay.write_chunk(frame, 0, 99, Bytes(2, 1));
    FAIL() << "a chunk grew past the chunksize";
  } catch (const FsError& e) {
    EXPECT_EQ(e.error, EFBIG);
  }
  overlay.resize_chunk(frame, 1, 0);  // O_TRUNC of a middle chunk: allowed until the commit
  EXPECT_EQ(overlay.data_size(frame), 200);
}

TEST_F(Fixture, BatchesLeaveTheChunkBeingFilled) {
  overlay.resize_data(frame, 0);
  overlay.write_data(frame, 0, Bytes(250, 3));  // chunks 0, 1 full; 2 half
  ChunkOverlay::Batch b = overlay.batch(2);
  EXPECT_EQ(b.truncate_to, 0);
  ASSERT_EQ(b.append.size(), 2u);
  EXPECT_EQ(b.nchunks_after, 2);
  overlay.committed(b, 2);
  FakeFrame after{{100, 100}};
  overlay.rebase(after, {100, 100});
  EXPECT_FALSE(overlay.clean());
  EXPECT_EQ(overlay.count(), 3);
  EXPECT_TRUE(overlay.holds(2));
  EXPECT_FALSE(overlay.holds(0));
  EXPECT_EQ(overlay.data_size(after), 250);
  ChunkOverlay::Batch rest = overlay.batch();
  EXPECT_EQ(rest.truncate_to, -1);
  ASSERT_EQ(rest.append.size(), 1u);
  EXPECT_EQ(rest.append[0].first, 2);
  EXPECT_EQ(rest.nchunks_after, 3);
}

TEST(ChunkOverlay, InvalidationAndPinnedBytes) {
  NoLoader loader;
  ChunkCache cache(loader, 1000);
  cache.pin_bytes(1500);
  ChunkCacheStats s = cache.stats();
  EXPECT_EQ(s.dirty, 1500u);
  EXPECT_EQ(s.bytes, 1500u);
  cache.unpin_bytes(1500);
  EXPECT_EQ(cache.stats().bytes, 0u);
  cache.invalidate(3);
  cache.invalidate_from(0);
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
}

}  // namespace
}  // namespace blosc2fs
