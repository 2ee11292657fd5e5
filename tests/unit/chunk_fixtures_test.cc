// Conformance of the chunk decoder with chunks written by c-blosc2 and by Blosc 1.x:
// the raw chunks in fixtures/chunks and every chunk stored in the fixture frames.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "chunk_codec.h"
#include "fixtures.h"

namespace blosc2fs {
namespace {

using testing::fixtures_dir;

// Checks whole decode, every block and some ranges against `expected`.
void check_chunk(ByteSpan chunk, ByteSpan expected, const std::string& what) {
  SCOPED_TRACE(what);
  ChunkView view(chunk);
  ASSERT_EQ(size_t(view.nbytes()), expected.size());
  std::vector<uint8_t> all = view.decode();
  ASSERT_TRUE(all.size() == expected.size() && std::equal(all.begin(), all.end(), expected.begin()))
      << "decode() differs from the reference";
  for (int32_t j = 0; j < view.nblocks(); ++j) {
    std::vector<uint8_t> block(size_t(view.block_size(j)));
    view.decode_block(j, block);
    ASSERT_EQ(0, std::memcmp(block.data(), expected.data() + view.block_offset(j), block.size())) << "block " << j;
  }
  std::mt19937 rng(42);
  for (int k = 0; k < 20 && !expected.empty(); ++k) {
    const size_t a = rng() % expected.size();
    const size_t n = rng() % (expected.size() - a + 1);
    std::vector<uint8_t> part(n);
    view.decode_range(int64_t(a), part);
    ASSERT_TRUE(std::equal(part.begin(), part.end(), expected.begin() + ptrdiff_t(a))) << "range " << a << "+" << n;
  }
}

struct RawChunkCase {
  std::string chunk_file;
  std::string expect_file;
};

std::vector<RawChunkCase> raw_chunk_cases() {
  std::ifstream tsv(fixtures_dir() / "chunks" / "EXPECTED.tsv");
  std::vector<RawChunkCase> cases;
  std::string line;
  while (std::getline(tsv, line)) {
    std::istringstream fields(line);
    RawChunkCase c;
    if (fields >> c.chunk_file >> c.expect_file) cases.push_back(c);
  }
  return cases;
}

TEST(ChunkFixtures, RawChunksDecodeToExpectedContent) {
  const auto cases = raw_chunk_cases();
  ASSERT_GE(cases.size(), 27u);
  for (const auto& c : cases) {
    Bytes chunk = testing::read_file(fixtures_dir() / "chunks" / c.chunk_file);
    Bytes expected = testing::gunzip_file(fixtures_dir() / c.expect_file);
    check_chunk(chunk, expected, c.chunk_file);
  }
}

// Slices chunks out of a frame by the index entries the reference recorded.
TEST(ChunkFixtures, EveryChunkInEveryFixtureFrame) {
  int frames = 0, chunks = 0;
  for (const std::string& name : testing::fixture_frame_names()) {
    const auto expect = testing::load_expect(name);
    if (expect["chunks"].empty()) continue;
    SCOPED_TRACE(name);
    const bool sparse = expect["kind"] == "sframe";
    const auto path = testing::frame_path(name);
    Bytes frame = sparse ? testing::read_file(path / "chunks.b2frame") : testing::read_file(path);
    ASSERT_GE(frame.size(), 15u);
    const int64_t header_len = int32_t(load_be32(frame.data() + 11));
    Bytes data = testing::gunzip_file(fixtures_dir() / "expect" / (name + ".data.gz"));
    size_t expected_at = 0;
    for (size_t i = 0; i < expect["chunks"].size(); ++i) {
      const auto& entry = expect["chunks"][i];
      const int64_t nbytes = entry["nbytes"];
      const int64_t index_entry = entry["index_entry"];
      ASSERT_LE(expected_at + size_t(nbytes), data.size());
      ByteSpan expected(data.data() + expected_at, size_t(nbytes));
      expected_at += size_t(nbytes);
      if (index_entry < 0) continue;  // a special index entry: no chunk is stored
      Bytes chunk;
      if (sparse) {
        char file[16];
        std::snprintf(file, sizeof file, "%08X.chunk", unsigned(index_entry));
        chunk = testing::read_file(path / file);
      } else {
        const int64_t cbytes = entry["cbytes"];
        const size_t begin = size_t(header_len + index_entry);
        ASSERT_LE(begin + size_t(cbytes), frame.size());
        chunk.assign(frame.begin() + ptrdiff_t(begin), frame.begin() + ptrdiff_t(begin + size_t(cbytes)));
      }
      ChunkView view(chunk);
      EXPECT_EQ(int(view.header().special()), int(entry["special"]));
      EXPECT_EQ(view.header().cbytes, int32_t(entry["cbytes"]));
      check_chunk(chunk, expected, name + " chunk " + std::to_string(i));
      ++chunks;
    }
    EXPECT_EQ(expected_at, data.size());
    ++frames;
  }
  EXPECT_GE(frames, 35);
  EXPECT_GE(chunks, 150);
}

// Slices chunk `i` of a contiguous fixture frame.
Bytes frame_chunk(const std::string& name, size_t i) {
  const auto expect = testing::load_expect(name);
  Bytes frame = testing::read_file(testing::frame_path(name));
  const int64_t header_len = int32_t(load_be32(frame.data() + 11));
  const int64_t at = expect["chunks"][i]["index_entry"];
  const int64_t cbytes = expect["chunks"][i]["cbytes"];
  const auto begin = frame.begin() + ptrdiff_t(header_len + at);
  return Bytes(begin, begin + ptrdiff_t(cbytes));
}

// Hostile-input samples: one chunk per codec, filter family and layout.
std::vector<std::pair<std::string, Bytes>> hostile_samples() {
  std::vector<std::pair<std::string, Bytes>> samples;
  for (const char* file : {"blosc-1.3.0-blosclz.cdata", "blosc-1.11.1-zlib.cdata", "blosc-zstd-3.0.0.cdata",
                           "blosc-1.18.0-lz4-bitshuffle4-memcpy.cdata", "blosc-lz4-3.0.0.cdata"})
    samples.emplace_back(file, testing::read_file(fixtures_dir() / "chunks" / file));
  for (const char* frame : {"zstd-dict-i4.b2frame", "vlblocks-lz4-variable-3.0.0.b2frame",
                            "filter-delta-shuffle-zstd-i4.b2frame", "filter-bytedelta-zstd-f8.b2frame",
                            "special-chunks-f4.b2frame", "memcpyed-lz4-u1.b2frame", "frame_simple-blosclz.b2frame"})
    samples.emplace_back(frame, frame_chunk(frame, frame == std::string("special-chunks-f4.b2frame") ? 3 : 1));
  return samples;
}

// Decoding must either succeed or throw FormatError; anything else is a bug.
void decode_or_format_error(ByteSpan chunk) {
  try {
    ChunkView view(chunk);
    if (view.nbytes() > (256 << 20)) return;  // a flipped size field; construction is what counts
    Bytes out(size_t(view.nbytes()));
    view.decode(out);
    if (view.nblocks() > 1 && view.nbytes() > 10) {
      Bytes part(7);
      view.decode_range(view.block_offset(view.nblocks() - 1) - 3, part);
      Bytes last(size_t(view.block_size(view.nblocks() - 1)));
      view.decode_block(view.nblocks() - 1, last);
    }
  } catch (const FormatError&) {
  }
}

TEST(ChunkFixtures, EveryTruncationFailsCleanly) {
  for (const auto& [name, chunk] : hostile_samples()) {
    SCOPED_TRACE(name);
    // Every length for small chunks; for big ones every length through the header and
    // tables, then a stride (each decode of those is a whole megabyte-sized chunk).
    const size_t stride = chunk.size() > 4096 ? chunk.size() / 512 : 1;
    for (size_t len = 0; len < chunk.size(); len += len < 256 ? 1 : stride) {
      ByteSpan cut(chunk.data(), len);
      EXPECT_THROW(ChunkView{cut}, FormatError) << "length " << len;
      // The same bytes with cbytes claiming the shorter length reach the stream parser.
      if (len >= 16) {
        Bytes patched(cut.begin(), cut.end());
        store_le32(patched.data() + 12, uint32_t(len));
        decode_or_format_error(patched);
      }
    }
  }
}

TEST(ChunkFixtures, RandomByteFlipsFailCleanly) {
  std::mt19937 rng(2024);
  for (const auto& [name, chunk] : hostile_samples()) {
    SCOPED_TRACE(name);
    const int rounds = ChunkView(chunk).nbytes() > 100000 ? 300 : 1500;
    for (int round = 0; round < rounds; ++round) {
      Bytes mutated = chunk;
      const int flips = 1 + int(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        // Favour the header and tables, where a flip changes the structure.
        const size_t at = rng() % 2 ? rng() % std::min<size_t>(mutated.size(), 96) : rng() % mutated.size();
        mutated[at] = rng() % 2 ? uint8_t(mutated[at] ^ (1u << (rng() % 8))) : uint8_t(rng());
      }
      decode_or_format_error(mutated);
    }
  }
}

TEST(ChunkFixtures, HeaderFacts) {
  // A c-blosc2 zstd chunk: version 5, shuffle in slot 5, compcode 5 in byte 22.
  Bytes chunk = testing::read_file(fixtures_dir() / "chunks" / "blosc-zstd-3.0.0.cdata");
  ChunkHeader h = parse_chunk_header(chunk);
  EXPECT_TRUE(h.extended);
  EXPECT_EQ(h.version, 5);
  EXPECT_EQ(h.codec_label(), "zstd");
  EXPECT_EQ(h.filters_label(), "shuffle");
  // A Blosc1 chunk: filters come from the flags.
  Bytes old = testing::read_file(fixtures_dir() / "chunks" / "blosc-1.17.1-lz4-bitshuffle8-nomemcpy.cdata");
  h = parse_chunk_header(old);
  EXPECT_FALSE(h.extended);
  EXPECT_EQ(h.header_size(), 16);
  EXPECT_EQ(h.filters[5], kFilterBitshuffle);
  EXPECT_EQ(h.codec_label(), "lz4");
}

TEST(ChunkFixtures, Lz4hcLabelFromFrameChunk) {
  const std::string name = "codec-lz4hc-shuffle-f4.b2frame";
  const auto expect = testing::load_expect(name);
  Bytes frame = testing::read_file(testing::frame_path(name));
  const int64_t header_len = int32_t(load_be32(frame.data() + 11));
  const int64_t at = expect["chunks"][0]["index_entry"];
  ChunkHeader h = parse_chunk_header(ByteSpan(frame).subspan(size_t(header_len + at)));
  EXPECT_EQ(h.codec_label(), "lz4hc");
}

}  // namespace
}  // namespace blosc2fs
