// A chunk decoded block by block from a buffer filled on demand (big chunks of
// remote data, sub-array reads of local ones): only the blocks asked for are
// fetched, the bytes equal a whole decode, and a block whose stream runs past
// its bytes is decoded from the whole chunk, as c-blosc2 reads it.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "buffer_pool.h"
#include "chunk_codec.h"
#include "fixtures.h"
#include "frame_writer.h"
#include "partial_chunk.h"

namespace blosc2fs {
namespace {

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
  FrameParams params;
  params.cparams.codec = Codec::lz4;
  params.cparams.typesize = 4;
  params.cparams.blocksize = 256 * 1024;
  params.chunksize = 4 << 20;
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

}  // namespace
}  // namespace blosc2fs
