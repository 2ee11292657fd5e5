// The overlay of written chunks over a committed frame, with a fake frame:
// data offsets with chunks held and pending, appends filling the last chunk,
// truncation, zero extension without memory, the batches a commit stages,
// the held bytes pinned in the chunk cache's budget, and chunks held by region:
// never decoded when written whole, otherwise decoded only where no write reached.
#include "chunk_overlay.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <tuple>
#include <vector>

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
    ++views[n];
    view_ranges.emplace_back(n, offset, len);
    auto all = std::make_shared<Bytes>(committed(n));
    keep = all;
    if (offset >= int64_t(all->size())) return {};
    return ByteSpan(*all).subspan(size_t(offset), std::min(len, all->size() - size_t(offset)));
  }
  PooledBuffer load(int64_t n, BufferPool& pool) override {
    ++loads[n];
    const Bytes bytes = committed(n);
    PooledBuffer b = pool.take(bytes.size());
    std::copy(bytes.begin(), bytes.end(), b.data());
    return b;
  }
  void drop_decoded(int64_t n) override { drops.push_back(n); }
  // Chunk n's decoded bytes, as if the cache had them all and unread.
  PooledBuffer take_decoded(int64_t n) override {
    if (!decoded.count(n)) return {};
    decoded.erase(n);
    const Bytes bytes = committed(n);
    PooledBuffer b = pool->take(bytes.size());
    std::copy(bytes.begin(), bytes.end(), b.data());
    return b;
  }
  std::vector<int64_t> drops;
  std::set<int64_t> decoded;
  std::shared_ptr<BufferPool> pool = BufferPool::create(0);
  Bytes committed(int64_t n) const {
    Bytes b(size_t(sizes_.at(size_t(n))));
    for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t((n * 16 + int64_t(i)) % 251);
    return b;
  }
  // How often each chunk was decoded whole (load) or in part (view).
  std::map<int64_t, int> loads, views;
  std::vector<std::tuple<int64_t, int64_t, size_t>> view_ranges;
  Bytes data() {
    Bytes out;
    for (int64_t n = 0; n < nchunks(); ++n) {
      Bytes c = committed(n);
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

TEST_F(Fixture, ExtendingByMoreThanAMillionChunksAtOnceIsRefused) {
  const int64_t most = ChunkOverlay::kMaxChunksAddedAtOnce;
  // The last chunk's room (40 bytes), then a million chunks of 100 and one byte more.
  for (int64_t size : {260 + 40 + most * 100 + 1, int64_t(1) << 40}) {
    try {
      overlay.resize_data(frame, size);
      FAIL() << "grew by more than a million chunks";
    } catch (const FsError& e) {
      EXPECT_EQ(e.error, EFBIG);
    }
    EXPECT_EQ(overlay.count(), 3);
    EXPECT_EQ(overlay.data_size(frame), 260);
  }
  try {
    overlay.write_data(frame, int64_t(1) << 40, Bytes(1, 1));
    FAIL() << "a write a terabyte past the end was taken";
  } catch (const FsError& e) {
    EXPECT_EQ(e.error, EFBIG);
  }
  EXPECT_EQ(overlay.data_size(frame), 260);
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

// --- chunks held by region ---

Bytes batch_bytes(const ChunkOverlay& o, int64_t n) {
  for (const auto& [m, held] : o.batch().replace)
    if (m == n) return Bytes(held->bytes.data(), held->bytes.data() + held->bytes.size());
  return {};
}

TEST_F(Fixture, AChunkWrittenWholeIsNeverDecoded) {
  // Chunk 1 in three writes, out of order; reads between them.
  overlay.write_data(frame, 160, Bytes(40, 7));
  overlay.write_data(frame, 100, Bytes(30, 8));
  Bytes want = frame.data();
  std::fill(want.begin() + 160, want.begin() + 200, 7);
  std::fill(want.begin() + 100, want.begin() + 130, 8);
  EXPECT_EQ(read_data(overlay, frame), want);  // the gap comes from the committed chunk
  overlay.write_data(frame, 130, Bytes(30, 9));
  std::fill(want.begin() + 130, want.begin() + 160, 9);
  frame.views.clear();
  EXPECT_EQ(read_data(overlay, frame), want);
  EXPECT_EQ(frame.views.count(1), 0u);  // whole: read from what was written
  EXPECT_EQ(cache.stats().dirty, 100u);
  EXPECT_EQ(overlay.complete(frame), 0);
  EXPECT_EQ(frame.loads.count(1), 0u);
  EXPECT_EQ(batch_bytes(overlay, 1), Bytes(want.begin() + 100, want.begin() + 200));
  EXPECT_EQ(read_data(overlay, frame), want);
}

TEST_F(Fixture, APartialWriteReadsBackBeforeAndAfterItsGapsAreFilled) {
  overlay.write_chunk(frame, 0, 10, Bytes(5, 0xEE));
  overlay.write_chunk(frame, 0, 90, Bytes(10, 0xDD));
  Bytes want = frame.data();
  std::fill(want.begin() + 10, want.begin() + 15, 0xEE);
  std::fill(want.begin() + 90, want.begin() + 100, 0xDD);
  EXPECT_EQ(read_data(overlay, frame), want);
  Bytes piece(20);  // a read across a written range and a gap
  EXPECT_EQ(overlay.read_chunk(frame, 0, 5, piece), 20u);
  EXPECT_EQ(piece, Bytes(want.begin() + 5, want.begin() + 25));
  EXPECT_TRUE(frame.loads.empty());
  frame.views.clear();
  frame.view_ranges.clear();
  EXPECT_EQ(overlay.complete(frame), 1);
  // Only the bytes no write supplied are decoded: the two gaps.
  using Range = std::tuple<int64_t, int64_t, size_t>;
  EXPECT_EQ(frame.view_ranges, (std::vector<Range>{{0, 0, 10}, {0, 15, 75}}));
  EXPECT_EQ(batch_bytes(overlay, 0), Bytes(want.begin(), want.begin() + 100));
  EXPECT_EQ(read_data(overlay, frame), want);
  EXPECT_EQ(overlay.complete(frame), 0);  // nothing left to fill
}

TEST_F(Fixture, TheChunkBeingFilledIsNotCompleted) {
  overlay.write_chunk(frame, 0, 0, Bytes(50, 1));
  overlay.write_chunk(frame, 1, 0, Bytes(50, 2));
  EXPECT_EQ(overlay.complete(frame, 1), 1);
  EXPECT_EQ(frame.views.count(1), 0u);
  overlay.write_chunk(frame, 1, 50, Bytes(50, 3));  // finished later: never decoded
  EXPECT_EQ(overlay.complete(frame), 0);
  Bytes want(50, 2);
  want.insert(want.end(), 50, 3);
  EXPECT_EQ(batch_bytes(overlay, 1), want);
}

TEST_F(Fixture, ItemsWrittenWholeReadOnlyThePadding) {
  // An N-d array's edge chunk: 60 bytes of items, 40 of padding never written,
  // which keeps its committed bytes.
  ChunkOverlay::Held& h = overlay.hold_region(frame, 0, 60, true);
  h.put(30, Bytes(30, 4));
  h.put(0, Bytes(30, 5));
  EXPECT_FALSE(h.whole());
  EXPECT_EQ(overlay.complete(frame), 1);
  EXPECT_TRUE(frame.loads.empty());
  ASSERT_EQ(frame.view_ranges.size(), 1u);
  EXPECT_EQ(frame.view_ranges[0], (std::tuple<int64_t, int64_t, size_t>{0, 60, 40}));
  Bytes want(30, 5);
  want.insert(want.end(), 30, 4);
  const Bytes committed = frame.committed(0);
  want.insert(want.end(), committed.begin() + 60, committed.end());
  EXPECT_EQ(batch_bytes(overlay, 0), want);
}

TEST_F(Fixture, UnchangedBytesWrittenBackAreDropped) {
  // A memory map's page written back over items nobody changed.
  const Bytes all = frame.data();
  ChunkOverlay::Held& h = overlay.hold_region(frame, 1, 100, true);
  h.put(20, Bytes(all.begin() + 120, all.begin() + 140));
  EXPECT_FALSE(overlay.clean());
  EXPECT_EQ(overlay.complete(frame), 1);
  EXPECT_TRUE(overlay.clean());
  EXPECT_TRUE(overlay.batch().empty());
  EXPECT_EQ(cache.stats().dirty, 0u);
  // One byte that differs keeps it.
  ChunkOverlay::Held& changed = overlay.hold_region(frame, 1, 100, true);
  changed.put(20, Bytes(all.begin() + 120, all.begin() + 140));
  changed.put(99, Bytes{uint8_t(all[199] + 1)});
  EXPECT_EQ(overlay.complete(frame), 1);
  ASSERT_EQ(overlay.batch().replace.size(), 1u);
}

// A chunk kept only if changed, written over its first 3 MiB of 4: the commit
// decodes the gap and, for the comparison, only the first megabyte written,
// which differs; never the rest of what was written.
TEST(ChunkOverlayRegions, ACommitDecodesTheGapsAndComparesAMegabyteAtATime) {
  NoLoader loader;
  ChunkCache cache{loader, 64 << 20};
  const int64_t mib = 1 << 20;
  FakeFrame frame{{4 * mib}};
  ChunkOverlay overlay{cache};
  overlay.reset(frame, {4 * mib, 4 * mib});
  Bytes written = frame.committed(0);
  written.resize(size_t(3 * mib));
  written[10] ^= 1;
  ChunkOverlay::Held& h = overlay.hold_region(frame, 0, 4 * mib, true);
  h.put(0, written);
  EXPECT_EQ(overlay.complete(frame), 1);
  using Range = std::tuple<int64_t, int64_t, size_t>;
  EXPECT_EQ(frame.view_ranges, (std::vector<Range>{{0, 0, size_t(mib)}, {0, 3 * mib, size_t(mib)}}));
  EXPECT_EQ(frame.drops, std::vector<int64_t>{0}) << "the committed chunk's decoded bytes go before compressing";
  ASSERT_EQ(overlay.batch().replace.size(), 1u);
  Bytes want = frame.committed(0);
  want[10] ^= 1;
  EXPECT_EQ(batch_bytes(overlay, 0), want);
  // The same bytes written back unchanged: compared a megabyte at a time, all of
  // them, and dropped.
  overlay.discard();
  frame.view_ranges.clear();
  ChunkOverlay::Held& same = overlay.hold_region(frame, 0, 4 * mib, true);
  const Bytes committed = frame.committed(0);
  same.put(0, Bytes(committed.begin(), committed.begin() + 3 * mib));
  EXPECT_EQ(overlay.complete(frame), 1);
  EXPECT_EQ(frame.view_ranges.size(), 4u);
  EXPECT_TRUE(overlay.batch().empty());
  EXPECT_EQ(frame.drops, std::vector<int64_t>{0}) << "unchanged: the committed chunk shows again, decoded";
}

// A chunk the cache has decoded whole (a memory map read it in) takes those
// bytes when written by region: held whole, nothing decoded at the commit, and
// dropped there if no write changed a byte.
TEST_F(Fixture, AChunkDecodedWholeIsTakenAndComparedAsItIsWritten) {
  frame.decoded = {1};
  const Bytes committed = frame.committed(1);
  ChunkOverlay::Held& same = overlay.hold_region(frame, 1, 100, true);
  EXPECT_TRUE(same.whole());
  same.put(10, Bytes(committed.begin() + 10, committed.begin() + 60));
  EXPECT_EQ(overlay.complete(frame), 0);
  EXPECT_TRUE(overlay.batch().empty()) << "unchanged: the committed chunk shows again";
  EXPECT_TRUE(frame.view_ranges.empty());
  EXPECT_TRUE(frame.loads.empty());

  frame.decoded = {1};
  ChunkOverlay::Held& changed = overlay.hold_region(frame, 1, 100, true);
  ASSERT_TRUE(changed.whole());
  Bytes write(committed.begin() + 10, committed.begin() + 60);
  write[20] ^= 0xff;
  changed.put(10, write);
  changed.put(70, Bytes(committed.begin() + 70, committed.begin() + 80));  // unchanged, after a change
  Bytes want = committed;
  want[30] ^= 0xff;
  Bytes data = frame.data();
  data[100 + 30] ^= 0xff;
  EXPECT_EQ(read_data(overlay, frame), data) << "read back before the commit";
  frame.view_ranges.clear();  // chunks 0 and 2, read
  EXPECT_EQ(overlay.complete(frame), 0);
  EXPECT_EQ(batch_bytes(overlay, 1), want);
  EXPECT_TRUE(frame.view_ranges.empty()) << "nothing decoded for the commit";
  // A second completion (a commit that failed, tried again) keeps it.
  EXPECT_EQ(overlay.complete(frame), 0);
  EXPECT_EQ(batch_bytes(overlay, 1), want);
}

// Chunks held by region stay changed once their gaps are filled: completed again
// (a commit tried again), they are not compared or dropped.
TEST_F(Fixture, ACompletedRegionStaysChangedWhenCompletedAgain) {
  ChunkOverlay::Held& h = overlay.hold_region(frame, 1, 100, true);
  Bytes write(40, 9);
  h.put(0, write);
  EXPECT_EQ(overlay.complete(frame), 1);
  const Bytes first = batch_bytes(overlay, 1);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(overlay.complete(frame), 0);
  EXPECT_EQ(batch_bytes(overlay, 1), first);
}

TEST_F(Fixture, ZeroChunksWrittenInPlaceNeedNoFrame) {
  overlay.resize_data(frame, 260 + 40 + 200);  // chunk 2 filled up, chunks 3 and 4 zeros
  overlay.write_data(frame, 330, Bytes(20, 6));
  Bytes want = frame.data();
  want.resize(500, 0);
  std::fill(want.begin() + 330, want.begin() + 350, 6);
  EXPECT_EQ(read_data(overlay, frame), want);
  EXPECT_EQ(overlay.complete(frame), 0);
  EXPECT_TRUE(frame.loads.count(3) == 0 && frame.views.count(3) == 0);
}

TEST_F(Fixture, ResizingAndTruncatingChunksHeldByRegion) {
  overlay.write_chunk(frame, 1, 10, Bytes(10, 0xAB));
  overlay.resize_chunk(frame, 1, 50);  // needs the committed bytes: filled first
  EXPECT_EQ(overlay.chunk_size(frame, 1), 50);
  Bytes want = frame.data();
  std::fill(want.begin() + 110, want.begin() + 120, 0xAB);
  want.erase(want.begin() + 150, want.begin() + 200);
  EXPECT_EQ(read_data(overlay, frame), want);
  // A write past a chunk's committed end grows it from the filled bytes.
  overlay.write_chunk(frame, 2, 50, Bytes(20, 0xCD));
  EXPECT_EQ(overlay.chunk_size(frame, 2), 70);
  want.resize(want.size() + 10);
  std::fill(want.end() - 20, want.end(), 0xCD);
  EXPECT_EQ(read_data(overlay, frame), want);
  // Truncation drops a chunk held by region, and its pinned bytes.
  overlay.write_chunk(frame, 0, 0, Bytes(10, 1));
  overlay.truncate_count(0);
  EXPECT_EQ(cache.stats().dirty, 0u);
  EXPECT_EQ(overlay.data_size(frame), 0);
}

TEST_F(Fixture, DiscardDropsChunksHeldByRegion) {
  overlay.write_chunk(frame, 0, 0, Bytes(10, 1));
  EXPECT_EQ(cache.stats().dirty, 100u);
  overlay.discard();
  EXPECT_TRUE(overlay.clean());
  EXPECT_EQ(cache.stats().dirty, 0u);
  EXPECT_EQ(read_data(overlay, frame), frame.data());
}

TEST(ByteRanges, MergesAndSplits) {
  ByteRanges r;
  r.add(10, 20);
  r.add(30, 40);
  r.add(20, 25);  // touches: merged
  r.add(5, 12);
  EXPECT_EQ(r.covered(), 20 + 10);
  std::vector<std::tuple<int64_t, int64_t, bool>> pieces;
  r.split(0, 50, [&](int64_t at, int64_t n, bool w) { pieces.emplace_back(at, n, w); });
  const std::vector<std::tuple<int64_t, int64_t, bool>> want{
      {0, 5, false}, {5, 20, true}, {25, 5, false}, {30, 10, true}, {40, 10, false}};
  EXPECT_EQ(pieces, want);
  pieces.clear();
  r.split(12, 33, [&](int64_t at, int64_t n, bool w) { pieces.emplace_back(at, n, w); });
  const std::vector<std::tuple<int64_t, int64_t, bool>> inner{{12, 13, true}, {25, 5, false}, {30, 3, true}};
  EXPECT_EQ(pieces, inner);
  r.add(0, 100);
  EXPECT_EQ(r.covered(), 100);
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
