// The codec registry and the chunk decoder's dispatch through it: names, the
// decodable flags, streams that need no codec (zeros, runs, raw) in chunks of
// codecs nothing here decodes (Lizard, OpenZL), errors that name the codec and
// its writer, and whole chunks of the plugin codecs and filters encoded and
// decoded with a frame's block geometry.
#include "codec_registry.h"

#include <gtest/gtest.h>

#include "block_geometries.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bytes.h"
#include "chunk_codec.h"
#include "filters.h"
#include "ndcell.h"

namespace blosc2fs {
namespace {

struct Stream {
  int32_t csize;     // as stored: 0 zeros, < 0 a run, == block size raw, else compressed
  Bytes bytes;       // what follows the size field
};

// A hand-made chunk of format 5: one stream per block (dont-split), no filters.
Bytes make_chunk(uint8_t compformat, uint8_t udcompcode, int32_t typesize, int32_t blocksize,
                 const std::vector<Stream>& blocks) {
  const int32_t nbytes = blocksize * int32_t(blocks.size());
  Bytes out(32 + 4 * blocks.size(), 0);
  out[0] = 5;
  out[1] = 1;
  out[2] = uint8_t(0x05 | 0x10 | compformat << 5);  // extended header, dont-split
  out[3] = uint8_t(typesize);
  store_le32(out.data() + 4, uint32_t(nbytes));
  store_le32(out.data() + 8, uint32_t(blocksize));
  out[22] = udcompcode;
  for (size_t j = 0; j < blocks.size(); ++j) {
    store_le32(out.data() + 32 + 4 * j, uint32_t(out.size()));
    append_le32(out, uint32_t(blocks[j].csize));
    out.insert(out.end(), blocks[j].bytes.begin(), blocks[j].bytes.end());
  }
  store_le32(out.data() + 12, uint32_t(out.size()));
  return out;
}

std::vector<Stream> streams_without_codec(int32_t blocksize) {
  Bytes raw(static_cast<size_t>(blocksize));
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = uint8_t(i * 7);
  return {{0, {}}, {-0x5A, {0x01}}, {blocksize, raw}};
}

Bytes expected_without_codec(int32_t blocksize) {
  Bytes out(size_t(blocksize) * 3, 0);
  std::memset(out.data() + blocksize, 0x5A, size_t(blocksize));
  for (int32_t i = 0; i < blocksize; ++i) out[size_t(2 * blocksize + i)] = uint8_t(i * 7);
  return out;
}

TEST(CodecRegistry, NamesEveryCodecAndFilterTheFormatDefines) {
  const std::pair<uint8_t, const char*> codecs[] = {
      {0, "blosclz"}, {1, "lz4"}, {2, "lz4hc"}, {4, "zlib"}, {5, "zstd"}, {32, "ndlz"}, {33, "zfp_acc"},
      {34, "zfp_prec"}, {35, "zfp_rate"}, {36, "openhtj2k"}, {37, "grok"}, {38, "openzl"}, {39, "j2k"},
      {40, "htj2k"}};
  for (auto [id, name] : codecs) {
    const CodecInfo* c = find_codec(id);
    ASSERT_NE(c, nullptr) << int(id);
    EXPECT_STREQ(c->name, name);
    EXPECT_EQ(c->decodable(), id != 38) << name;  // OpenZL: no Debian library
  }
  EXPECT_EQ(find_codec(41), nullptr);
  EXPECT_EQ(find_codec(160), nullptr);
  for (uint8_t id : {32, 33, 34, 35}) EXPECT_TRUE(find_codec(id)->encodable()) << int(id);
  for (uint8_t id : {36, 37, 38, 39, 40}) EXPECT_FALSE(find_codec(id)->encodable()) << int(id);
  EXPECT_EQ(filter_name(32), "ndcell");
  EXPECT_EQ(filter_name(33), "ndmean");
  EXPECT_EQ(filter_name(36), "int_trunc");
  EXPECT_EQ(filter_name(200), "filter-200");
  for (uint8_t id : {1, 2, 3, 4, 32, 33, 34, 35, 36}) EXPECT_TRUE(find_filter(id)->decodable) << int(id);
}

TEST(CodecRegistry, ChunkNamesComeFromTheRegistry) {
  EXPECT_EQ(parse_chunk_header(make_chunk(6, 39, 1, 64, {{0, {}}})).codec_label(), "j2k");
  EXPECT_EQ(parse_chunk_header(make_chunk(6, 161, 1, 64, {{0, {}}})).codec_label(), "codec-161");
  EXPECT_EQ(parse_chunk_header(make_chunk(5, 0, 1, 64, {{0, {}}})).codec_label(), "lizard");
  EXPECT_EQ(parse_chunk_header(make_chunk(4, 5, 1, 64, {{0, {}}})).codec_label(), "zstd");
}

// c-blosc2 decodes zero, run and raw streams before it looks for the codec.
TEST(CodecRegistry, StreamsThatNeedNoCodecDecodeWhateverTheCodec) {
  const int32_t bs = 96;
  for (auto [format, id] : {std::pair<uint8_t, uint8_t>{5, 0}, {6, 38}, {6, 200}, {2, 0}}) {
    SCOPED_TRACE("compformat " + std::to_string(format) + " udcompcode " + std::to_string(id));
    Bytes chunk = make_chunk(format, id, 4, bs, streams_without_codec(bs));
    EXPECT_EQ(ChunkView(chunk).decode(), expected_without_codec(bs));
  }
}

TEST(CodecRegistry, ACompressedStreamOfAnUndecodableCodecNamesItAndItsWriter) {
  const struct {
    uint8_t format, id;
    const char* words[2];
  } cases[] = {{5, 0, {"lizard", "no maintained library"}},
               {6, 38, {"openzl", "blosc2-openzl"}},
               {6, 170, {"codec 170", "user-defined"}}};
  for (const auto& c : cases) {
    Bytes chunk = make_chunk(c.format, c.id, 1, 64, {{0, {}}, {5, {1, 2, 3, 4, 5}}});
    ChunkView view(chunk);  // the header is fine; block 0 (zeros) decodes
    Bytes block(64);
    view.decode_block(0, block);
    try {
      view.decode();
      FAIL() << "decoded a compressed stream of " << c.words[0];
    } catch (const UnsupportedError& e) {
      for (const char* w : c.words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("block 1"), std::string::npos) << e.what();
    }
  }
}

using testing::geometry;

Bytes smooth_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(n * 4);
  for (size_t i = 0; i < n; ++i) {
    const float v = float(std::sin(double(i) * 0.01) * 100.0 + double(rng() % 100) * 0.001);
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  return out;
}

ChunkHeader header_of(ByteSpan chunk) { return parse_chunk_header(chunk); }

TEST(CodecRegistry, NdlzChunksRoundTripWithTheFrameGeometry) {
  CompressParams p;
  p.codec = Codec::ndlz;
  p.compcode_meta = 4;
  p.typesize = 1;
  p.filters = {};
  p.geometry = geometry(1, {32, 48});
  Bytes image(32 * 48 * 4);
  for (size_t i = 0; i < image.size(); ++i) image[i] = uint8_t((i % 48) / 6 + (i / 48 % 32) / 8 * 16);
  Bytes chunk = encode_chunk(image, p);
  const ChunkHeader h = header_of(chunk);
  EXPECT_EQ(h.compformat(), 6);
  EXPECT_EQ(h.udcompcode, 32);
  EXPECT_EQ(h.compcode_meta, 4);
  EXPECT_EQ(h.blocksize, 32 * 48);
  EXPECT_TRUE(h.dont_split());
  EXPECT_LT(h.cbytes, int32_t(image.size()) / 2);  // NDLZ must have compressed, not stored raw
  DecodeRules rules;
  rules.geometry = p.geometry;
  EXPECT_EQ(ChunkView(chunk, rules).decode(), image);
}

TEST(CodecRegistry, ZfpChunksDecodeWithinTheirAccuracy) {
  CompressParams p;
  p.codec = Codec::zfp_accuracy;
  p.compcode_meta = uint8_t(-3);  // 10^-3
  p.typesize = 4;
  p.filters = {};
  p.geometry = geometry(4, {16, 16});
  Bytes data = smooth_floats(16 * 16 * 4, 7);
  Bytes chunk = encode_chunk(data, p);
  EXPECT_EQ(header_of(chunk).udcompcode, 33);
  EXPECT_LT(header_of(chunk).cbytes, int32_t(data.size()));
  DecodeRules rules;
  rules.geometry = p.geometry;
  Bytes back = ChunkView(chunk, rules).decode();
  ASSERT_EQ(back.size(), data.size());
  for (size_t i = 0; i < data.size() / 4; ++i) {
    float a, b;
    std::memcpy(&a, data.data() + 4 * i, 4);
    std::memcpy(&b, back.data() + 4 * i, 4);
    ASSERT_NEAR(a, b, 1e-3) << i;
  }
  // Without the frame's geometry the chunk cannot be decoded, and says why.
  EXPECT_THROW(ChunkView(chunk).decode(), FormatError);
}

TEST(CodecRegistry, NdcellFilterChunksRoundTrip) {
  CompressParams p;
  p.codec = Codec::zstd;
  p.typesize = 4;
  p.filters = {0, 0, 0, 0, kFilterNdcell, kFilterShuffle};
  p.filters_meta = {0, 0, 0, 0, 4, 0};
  p.geometry = geometry(4, {10, 12});
  Bytes data = smooth_floats(10 * 12 * 3, 3);
  Bytes chunk = encode_chunk(data, p);
  EXPECT_EQ(header_of(chunk).filters[4], kFilterNdcell);
  DecodeRules rules;
  rules.geometry = p.geometry;
  EXPECT_EQ(ChunkView(chunk, rules).decode(), data);
}

TEST(CodecRegistry, IntTruncKeepsOrZeroesBits) {
  const uint8_t in[4] = {0xFF, 0xFF, 0x34, 0x12};
  uint8_t out[4];
  ASSERT_TRUE(int_trunc(in, out, 4, 2, 4));  // keep 4 high bits of each u16
  EXPECT_EQ(out[0], 0x00);
  EXPECT_EQ(out[1], 0xF0);
  EXPECT_EQ(out[3], 0x10);
  ASSERT_TRUE(int_trunc(in, out, 4, 2, -3));  // zero 3 low bits
  EXPECT_EQ(out[0], 0xF8);
  EXPECT_EQ(out[2], 0x30);
  EXPECT_FALSE(int_trunc(in, out, 4, 2, -16));
  EXPECT_FALSE(int_trunc(in, out, 4, 3, 2));
}

}  // namespace
}  // namespace blosc2fs
