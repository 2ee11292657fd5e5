// A chunk decoded block by block from a buffer filled on demand (big chunks of
// remote data, sub-array reads of local ones): only the blocks asked for are
// fetched, the bytes equal a whole decode, and a block whose stream runs past
// its bytes is decoded from the whole chunk, as c-blosc2 reads it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "buffer_pool.h"
#include "byte_source.h"
#include "chunk_codec.h"
#include "fixtures.h"
#include "frame_writer.h"
#include "partial_chunk.h"

namespace blosc2fs {
namespace {

using testing::read_file;
using testing::TempDir;

// Copies from the complete chunk into a buffer of garbage, recording each fill.
class RecordingFiller : public StoredChunkFiller {
 public:
  RecordingFiller(const Bytes& whole, Bytes& buffer) : whole_(whole), buffer_(buffer) {}
  void fill(int64_t from, int64_t to) override {
    std::lock_guard lock(mutex_);
    from = std::max<int64_t>(from, 0);
    to = std::min<int64_t>(to, int64_t(whole_.size()));
    if (from >= to) return;
    std::memcpy(buffer_.data() + from, whole_.data() + from, size_t(to - from));
    fills.emplace_back(from, to);
  }
  std::vector<std::pair<int64_t, int64_t>> fills;

 private:
  const Bytes& whole_;
  Bytes& buffer_;
  std::mutex mutex_;
};

Bytes random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = uint8_t(rng() >> 24);
  return out;
}

// The buffer a partial load leaves: the header and tables present, the rest garbage.
Bytes partial_buffer(const Bytes& chunk) {
  const ChunkHeader h = parse_chunk_header(chunk);
  Bytes buffer(chunk.size(), 0xAA);
  const size_t prefix = size_t(h.header_size() + 4 * h.nblocks());
  std::memcpy(buffer.data(), chunk.data(), prefix);
  return buffer;
}

// Chunks of 4 MiB in 16 blocks of 256 KiB, lz4: big enough to load in part.
FrameParams big_chunk_params() {
  FrameParams params;
  params.cparams.codec = Codec::lz4;
  params.cparams.typesize = 4;
  params.cparams.blocksize = 256 * 1024;
  params.chunksize = 4 << 20;
  return params;
}

TEST(PartialChunk, DecodesOnlyTheBlocksAskedForAndEqualsAWholeDecode) {
  CompressParams p;
  p.codec = Codec::lz4;
  p.typesize = 4;
  p.blocksize = 16384;
  // Half random (incompressible), half a ramp: blocks of different sizes.
  Bytes data = random_bytes(8 * 16384, 5);
  for (size_t i = data.size() / 2; i < data.size(); ++i) data[i] = uint8_t(i / 64);
  const Bytes chunk = encode_chunk(data, p);
  const ChunkView whole(chunk);
  ASSERT_EQ(whole.nblocks(), 8);

  Bytes buffer = partial_buffer(chunk);
  auto filler = std::make_shared<RecordingFiller>(chunk, buffer);
  auto decoder = partial_chunk_decoder(buffer, DecodeRules{}, filler, "chunk 0: ");
  ASSERT_EQ(decoder->nblocks(), 8);
  Bytes out(16384);
  decoder->decode_block(5, out, {});
  EXPECT_EQ(0, std::memcmp(out.data(), data.data() + 5 * 16384, out.size()));
  ASSERT_EQ(filler->fills.size(), 1u);
  EXPECT_EQ(filler->fills[0], whole.block_stored_extent(5));

  filler->fills.clear();
  decoder->prepare_blocks(1, 2);
  ASSERT_EQ(filler->fills.size(), 1u) << "blocks 1-2 in one request";
  EXPECT_EQ(filler->fills[0].first, whole.block_stored_extent(1).first);
  EXPECT_EQ(filler->fills[0].second, whole.block_stored_extent(2).second);
  for (int32_t j = 0; j < 8; ++j) {
    decoder->decode_block(j, out, {});
    EXPECT_EQ(0, std::memcmp(out.data(), data.data() + size_t(j) * 16384, out.size())) << "block " << j;
  }
}

// A local frame: a read of a block or more (a Zarr inner chunk) loads only the
// header and tables, then its blocks; a read inside one block (random 4 KB
// reads), of half the chunk, or of its stored bytes loads it whole.
TEST(PartialChunk, LocalChunksLoadInPartForReadsOfABlockOrMore) {
  TempDir tmp;
  const auto path = tmp.path() / "big.b2frame";
  const FrameParams params = big_chunk_params();
  Bytes data = random_bytes(size_t(params.chunksize), 3);
  for (size_t i = 0; i < data.size(); i += 4) data[i + 2] = data[i + 3] = 0;  // stored about half: 2 MB
  {
    FrameWriter writer(path, params);
    writer.append(data);
    writer.close();
  }
  std::shared_ptr<const Frame> frame = Frame::open(path);
  ASSERT_FALSE(frame->source().remote());
  ASSERT_GT(frame->stored_chunk_place(0)->header.cbytes, kPartialChunkMinBytes);
  auto pool = BufferPool::create(16 << 20);
  const int64_t block = params.cparams.blocksize;
  EXPECT_FALSE(load_partial_chunk(frame, 0, *pool, ChunkWish{4096, 4096, false})) << "inside one block";
  EXPECT_FALSE(load_partial_chunk(frame, 0, *pool, ChunkWish{block - 10, 20, false})) << "across two, shorter than one";
  EXPECT_FALSE(load_partial_chunk(frame, 0, *pool, ChunkWish{0, 2 << 20, false})) << "half the chunk";
  EXPECT_FALSE(load_partial_chunk(frame, 0, *pool, ChunkWish{0, 4096, true})) << "its stored bytes";
  std::optional<LoadedChunk> part = load_partial_chunk(frame, 0, *pool, ChunkWish{3 * block, 2 * block, false});
  ASSERT_TRUE(part) << "two blocks of sixteen";
  ASSERT_TRUE(part->filler);
  auto decoder = partial_chunk_decoder(part->stored.bytes(), frame->decode_rules(), part->filler, "chunk 0: ");
  Bytes out(static_cast<size_t>(block));
  for (int32_t j : {3, 4, 15}) {
    decoder->decode_block(j, out, {});
    EXPECT_EQ(0, std::memcmp(out.data(), data.data() + size_t(j) * size_t(block), out.size())) << "block " << j;
  }
}

TEST(PartialChunk, AStreamRunningPastItsBlockIsDecodedFromTheWholeChunk) {
  // Two blocks of one stream each, block 0 random (its stream stored raw)
  // and starting with four zero bytes, block 1 zeros. Pointing block 1 at them makes
  // it a zero-size stream (zeros) that lies inside block 0's stream: block 0
  // then runs past the next block start, which a bounded decode refuses.
  CompressParams p;
  p.codec = Codec::lz4;
  p.typesize = 1;
  p.blocksize = 4096;
  p.filters = {0, 0, 0, 0, 0, 0};
  Bytes data = random_bytes(2 * 4096, 9);
  std::memset(data.data(), 0, 4);
  std::memset(data.data() + 4096, 0, 4096);  // block 1 compresses: the chunk is not stored memcpyed
  Bytes chunk = encode_chunk(data, p);
  ChunkHeader h = parse_chunk_header(chunk);
  ASSERT_EQ(h.nblocks(), 2);
  const size_t table = size_t(h.header_size());
  const uint32_t start0 = load_le32(chunk.data() + table);
  ASSERT_EQ(load_le32(chunk.data() + start0), 4096u) << "block 0 stored raw";
  store_le32(chunk.data() + table + 4, start0 + 4);
  const Bytes expected = ChunkView(chunk).decode();
  ASSERT_EQ(0, std::memcmp(expected.data(), data.data(), 4096));
  ASSERT_EQ(expected[4096], 0);

  Bytes buffer = partial_buffer(chunk);
  auto filler = std::make_shared<RecordingFiller>(chunk, buffer);
  auto decoder = partial_chunk_decoder(buffer, DecodeRules{}, filler, "chunk 0: ");
  Bytes out(4096);
  decoder->decode_block(0, out, {});
  EXPECT_EQ(0, std::memcmp(out.data(), expected.data(), 4096));
  EXPECT_EQ(filler->fills.back(), std::make_pair(int64_t(0), int64_t(chunk.size()))) << "the whole chunk fetched";
  decoder->decode_block(1, out, {});
  EXPECT_EQ(0, std::memcmp(out.data(), expected.data() + 4096, 4096));
}

// A file, remote or local as it says: records the exact fetches it is asked
// for (will_read_only), its reads and the extents fetched ahead.
class RecordingFile final : public ByteSource {
 public:
  RecordingFile(Bytes bytes, bool remote) : bytes_(memory_source(std::move(bytes), "recorded")), remote_(remote) {}
  int64_t size() const override { return bytes_->size(); }
  size_t read_at(int64_t offset, MutableByteSpan out) const override {
    std::lock_guard lock(mutex_);
    reads.emplace_back(offset, int64_t(out.size()));
    return bytes_->read_at(offset, out);
  }
  std::string name() const override { return "recorded"; }
  void will_read_only(int64_t offset, int64_t length) const override {
    std::lock_guard lock(mutex_);
    exact.emplace_back(offset, length);
  }
  bool prefetch(int64_t offset, int64_t length) const override {
    std::lock_guard lock(mutex_);
    prefetched.emplace_back(offset, length);
    return true;
  }
  bool remote() const override { return remote_; }
  bool held(int64_t, int64_t) const override { return false; }
  void clear() {
    std::lock_guard lock(mutex_);
    reads.clear();
    exact.clear();
    prefetched.clear();
  }

  mutable std::vector<std::pair<int64_t, int64_t>> reads, exact, prefetched;

 private:
  std::shared_ptr<const ByteSource> bytes_;
  const bool remote_;
  mutable std::mutex mutex_;
};

// Chunks of big_chunk_params(), about 3 MB stored each, written as a frame
// that a RecordingFile then serves from memory.
struct RecordedFrame {
  std::vector<Bytes> chunks;
  Bytes image;
  std::shared_ptr<RecordingFile> file;
  std::shared_ptr<const Frame> frame;
};
RecordedFrame recorded_frame(unsigned nchunks, unsigned seed, bool remote) {
  TempDir tmp;
  const auto path = tmp.path() / "big.b2frame";
  const FrameParams params = big_chunk_params();
  RecordedFrame r;
  {
    FrameWriter writer(path, params);
    for (unsigned c = 0; c < nchunks; ++c) {
      r.chunks.push_back(random_bytes(size_t(params.chunksize), seed + c));
      for (size_t i = 0; i < r.chunks.back().size(); i += 4) r.chunks.back()[i + 3] = 0;
      writer.append(r.chunks.back());
    }
    writer.close();
  }
  r.image = read_file(path);
  r.file = std::make_shared<RecordingFile>(r.image, remote);
  r.frame = Frame::open(r.file);
  return r;
}

// From a local file a reader of a few blocks reads those and a little more,
// never a large chunk whole (the first 4 KB of array.npy and the kernel's
// read-ahead behind them read 28 MB of a 64 MiB chunk); a reader going on
// through the chunk reads each time as much again as before: a few reads in
// all, each byte once.
TEST(PartialChunk, LocalChunksReadAheadByWhatWasRead) {
  const RecordedFrame recorded = recorded_frame(1, 4, false);
  const Bytes& data = recorded.chunks[0];
  const Bytes& image = recorded.image;
  RecordingFile* file = recorded.file.get();
  std::shared_ptr<const Frame> frame = recorded.frame;
  auto pool = BufferPool::create(16 << 20);
  const int64_t block = big_chunk_params().cparams.blocksize;
  const Frame::StoredChunkPlace place = *frame->stored_chunk_place(0);
  const ChunkView stored(ByteSpan(image.data() + place.pos, size_t(place.header.cbytes)));
  ASSERT_EQ(stored.header().nblocks(), 16);

  file->clear();
  std::optional<LoadedChunk> part = load_partial_chunk(frame, 0, *pool, ChunkWish{0, 2 * block, false});
  ASSERT_TRUE(part && part->filler);
  auto decoder = partial_chunk_decoder(part->stored.bytes(), frame->decode_rules(), part->filler, "chunk 0: ");
  Bytes out(static_cast<size_t>(block));
  auto bytes_read = [&] {
    int64_t sum = 0;
    for (const auto& [at, n] : file->reads) sum += n;
    return sum;
  };
  for (int32_t j : {0, 1}) {
    decoder->decode_block(j, out, {});
    EXPECT_EQ(0, std::memcmp(out.data(), data.data() + size_t(j) * size_t(block), out.size())) << "block " << j;
  }
  EXPECT_LE(bytes_read(), 2 * stored.block_stored_extent(1).second) << "two blocks, and as much again at most";
  EXPECT_LT(bytes_read(), place.header.cbytes / 2);

  decoder->prepare_blocks(0, 15);
  for (int32_t j = 0; j < 16; ++j) {
    decoder->decode_block(j, out, {});
    EXPECT_EQ(0, std::memcmp(out.data(), data.data() + size_t(j) * size_t(block), out.size())) << "block " << j;
  }
  // Each byte once, but the chunk's 32-byte header, which the frame reads to find the chunk.
  EXPECT_GE(bytes_read(), place.header.cbytes);
  EXPECT_LE(bytes_read(), place.header.cbytes + 32) << "each byte once";
  EXPECT_LE(file->reads.size(), 6u) << "a few reads, not one per block";
}

// Over a network a small read of a big chunk fetches the header and block
// table in one small exact request, then exactly the blocks it needs; readers
// of different blocks at once fetch each block once; a read of a quarter of
// the chunk loads it whole; and only a reader that went through a chunk gets
// the next chunks fetched ahead (a reader of a few blocks per chunk, a row band
// of a Zarr view, would otherwise move whole chunks it never reads).
TEST(PartialChunk, RemoteChunksFetchTheirHeaderThenExactlyTheBlocksRead) {
  const RecordedFrame recorded = recorded_frame(4, 20, true);
  const std::vector<Bytes>& chunks = recorded.chunks;
  const Bytes& image = recorded.image;
  RecordingFile* file = recorded.file.get();
  std::shared_ptr<const Frame> frame = recorded.frame;
  auto pool = BufferPool::create(64 << 20);
  const int64_t block = big_chunk_params().cparams.blocksize;

  // A quarter of the chunk: whole, in one request (the frame's own).
  EXPECT_FALSE(load_partial_chunk(frame, 3, *pool, ChunkWish{0, 1 << 20, false}));

  for (int64_t n = 0; n < 3; ++n) {
    file->clear();
    std::optional<LoadedChunk> part = load_partial_chunk(frame, n, *pool, ChunkWish{0, block, false});
    ASSERT_TRUE(part && part->filler) << "chunk " << n;
    const Frame::StoredChunkPlace place = *frame->stored_chunk_place(n);
    ASSERT_FALSE(file->exact.empty());
    EXPECT_EQ(file->exact.front().first, place.pos) << "the header first";
    EXPECT_LE(file->exact.front().second, 4096) << "and little else";
    auto decoder = partial_chunk_decoder(part->stored.bytes(), frame->decode_rules(), part->filler, "chunk: ");
    // Four readers of four blocks at once.
    file->clear();
    std::vector<std::thread> readers;
    std::vector<Bytes> outs(4, Bytes(static_cast<size_t>(block)));
    for (int32_t j = 0; j < 4; ++j)
      readers.emplace_back([&, j] { decoder->decode_block(2 * j, outs[size_t(j)], {}); });
    for (std::thread& t : readers) t.join();
    for (int32_t j = 0; j < 4; ++j)
      EXPECT_EQ(0, std::memcmp(outs[size_t(j)].data(), chunks[size_t(n)].data() + size_t(2 * j * block), size_t(block)))
          << "chunk " << n << " block " << 2 * j;
    std::vector<std::pair<int64_t, int64_t>> fetched = file->exact;
    std::sort(fetched.begin(), fetched.end());
    ASSERT_EQ(fetched.size(), 4u) << "one exact fetch per block";
    const ChunkView stored(ByteSpan(image.data() + place.pos, size_t(place.header.cbytes)));
    for (size_t k = 0; k < fetched.size(); ++k) {
      // Block 0's first bytes came with the header.
      const auto [from, to] = stored.block_stored_extent(int32_t(2 * k));
      EXPECT_GE(fetched[k].first, place.pos + from) << "block " << 2 * k;
      EXPECT_LE(fetched[k].first, place.pos + from + (k == 0 ? 64 : 0)) << "block " << 2 * k;
      EXPECT_EQ(fetched[k].first + fetched[k].second, place.pos + to) << "block " << 2 * k;
    }
    EXPECT_TRUE(file->prefetched.empty()) << "a few blocks of chunk " << n << " fetch nothing ahead";
  }
  // Chunk 0 read on through its end (a reader from the start of the frame):
  // the rest in one go, and the chunks after it fetched ahead.
  file->clear();
  std::optional<LoadedChunk> part = load_partial_chunk(frame, 0, *pool, ChunkWish{0, block, false});
  ASSERT_TRUE(part);
  auto whole0 = partial_chunk_decoder(part->stored.bytes(), frame->decode_rules(), part->filler, "chunk 0: ");
  whole0->prepare_blocks(0, whole0->nblocks() - 1);
  ASSERT_FALSE(file->prefetched.empty()) << "a reader going through chunk 0 streams";
  EXPECT_EQ(file->prefetched.front().first, frame->stored_chunk_place(1)->pos);
}

}  // namespace
}  // namespace blosc2fs
