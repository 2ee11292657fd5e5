// Chunk encoder and decoder: round trips over codecs, filters, type sizes, sizes and
// split modes; block and range access; special chunks; header validation.
#include <gtest/gtest.h>
#include <lz4.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "blosclz.h"
#include "chunk_codec.h"
#include "filters.h"

namespace blosc2fs {
namespace {

enum class Data { random, zeros, constant, smooth };

Bytes make_data(Data kind, size_t size, size_t typesize, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(size);
  for (size_t i = 0; i < size; ++i) {
    switch (kind) {
      case Data::random: out[i] = uint8_t(rng()); break;
      case Data::zeros: out[i] = 0; break;
      case Data::constant: out[i] = uint8_t(0x40 + i % typesize); break;
      case Data::smooth: {
        // Items are little-endian integers of a slow sine plus a little noise.
        const size_t item = i / typesize, byte = i % typesize;
        const uint64_t v = uint64_t(1e6 + 1e5 * std::sin(double(item) / 200)) + (item * 2654435761u >> 28);
        out[i] = byte < 8 ? uint8_t(v >> (8 * byte)) : uint8_t(item >> 3);
        break;
      }
    }
  }
  return out;
}

// Whole decode, every block (with and without a caller-provided reference) and ranges.
void check_decodes(ByteSpan chunk, ByteSpan expected, const std::string& what) {
  SCOPED_TRACE(what);
  ChunkView view(chunk);
  ASSERT_EQ(size_t(view.nbytes()), expected.size());
  Bytes all = view.decode();
  ASSERT_TRUE(std::equal(all.begin(), all.end(), expected.begin(), expected.end())) << "decode() differs";
  for (int32_t j = 0; j < view.nblocks(); ++j) {
    Bytes block(size_t(view.block_size(j)));
    view.decode_block(j, block);
    ASSERT_EQ(0, std::memcmp(block.data(), expected.data() + view.block_offset(j), block.size())) << "block " << j;
    if (view.needs_reference_block() && j > 0) {
      std::fill(block.begin(), block.end(), 0xAA);
      view.decode_block(j, block, ByteSpan(all).first(size_t(view.block_size(0))));
      ASSERT_EQ(0, std::memcmp(block.data(), expected.data() + view.block_offset(j), block.size())) << "block " << j;
    }
  }
  std::mt19937 rng(unsigned(expected.size()));
  for (int k = 0; k < 12 && !expected.empty(); ++k) {
    const size_t a = rng() % expected.size();
    const size_t n = k == 0 ? expected.size() - a : rng() % (expected.size() - a + 1);
    Bytes part(n);
    view.decode_range(int64_t(a), part);
    ASSERT_TRUE(std::equal(part.begin(), part.end(), expected.begin() + ptrdiff_t(a))) << "range " << a << "+" << n;
  }
}

void check_header(ByteSpan chunk, const CompressParams& p, size_t nbytes) {
  ChunkHeader h = parse_chunk_header(chunk);
  EXPECT_EQ(h.version, 5);
  EXPECT_TRUE(h.extended);
  EXPECT_EQ(size_t(h.cbytes), chunk.size());
  EXPECT_EQ(size_t(h.nbytes), nbytes);
  EXPECT_EQ(h.typesize, p.typesize > 255 ? 1 : p.typesize);
  if (h.special() == Special::none && !h.memcpyed() && nbytes > 0) {
    EXPECT_LE(h.blocksize, int32_t(nbytes));
    if (h.blocksize > h.typesize && int32_t(nbytes) >= h.typesize) {
      EXPECT_EQ(h.blocksize % h.typesize, 0);
    }
  }
}

Bytes truncated_expectation(ByteSpan data, const CompressParams& p) {
  Bytes out(data.begin(), data.end());
  for (int slot = 0; slot < kMaxFilters; ++slot)
    if (p.filters[slot] == kFilterTruncPrec) {
      EXPECT_TRUE(trunc_prec(data.data(), out.data(), data.size(), size_t(p.typesize), int8_t(p.filters_meta[slot])));
    }
  return out;
}

void round_trip(ByteSpan data, const CompressParams& p, const std::string& what) {
  std::vector<uint8_t> chunk = encode_chunk(data, p);
  check_header(chunk, p, data.size());
  // A memcpyed chunk holds the input unfiltered, so even trunc_prec leaves it exact.
  const bool raw = parse_chunk_header(chunk).memcpyed();
  check_decodes(chunk, raw ? Bytes(data.begin(), data.end()) : truncated_expectation(data, p), what);
}

struct Pipeline {
  const char* name;
  std::array<uint8_t, kMaxFilters> filters;
  std::array<uint8_t, kMaxFilters> meta;
};

const Pipeline kPipelines[] = {
    {"none", {0, 0, 0, 0, 0, 0}, {}},
    {"shuffle", {0, 0, 0, 0, 0, kFilterShuffle}, {}},
    {"bitshuffle", {0, 0, 0, 0, 0, kFilterBitshuffle}, {}},
    {"delta+shuffle", {0, 0, 0, 0, kFilterDelta, kFilterShuffle}, {}},
    {"shuffle+bytedelta", {0, 0, 0, 0, kFilterShuffle, kFilterBytedelta}, {}},
    {"shuffle+delta", {0, 0, 0, 0, kFilterShuffle, kFilterDelta}, {}},
    {"trunc_prec+shuffle", {0, 0, 0, 0, kFilterTruncPrec, kFilterShuffle}, {0, 0, 0, 0, 10, 0}},
};

std::string label(const CompressParams& p, const char* pipeline, size_t size) {
  return std::string(codec_name(p.codec)) + " " + pipeline + " ts" + std::to_string(p.typesize) + " clevel" +
         std::to_string(p.clevel) + " split" + std::to_string(int(p.splitmode)) + " n" + std::to_string(size);
}

TEST(ChunkCodec, RoundTripCodecFilterTypesizeSplitMatrix) {
  unsigned seed = 0;
  for (Codec codec : kCodecs)
    for (const Pipeline& pipe : kPipelines)
      for (int32_t typesize = 1; typesize <= 16; ++typesize) {
        const bool trunc = pipe.filters[4] == kFilterTruncPrec;
        if (trunc && typesize != 4 && typesize != 8) continue;
        for (SplitMode split : {SplitMode::always, SplitMode::never, SplitMode::forward_compat}) {
          CompressParams p;
          p.codec = codec;
          p.typesize = typesize;
          p.filters = pipe.filters;
          p.filters_meta = pipe.meta;
          p.splitmode = split;
          p.clevel = 1 + int(seed % 9);
          p.blocksize = 4096 + 64 * int(seed % 3);  // several blocks and a leftover one
          const size_t size = 20000 + size_t(typesize) * 7 + 3;
          Bytes data = make_data(seed % 4 == 0 ? Data::random : Data::smooth, size, size_t(typesize), seed);
          ++seed;
          round_trip(data, p, label(p, pipe.name, size));
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
}

// The blocks of a large chunk compressed on several threads: the same bytes as on
// one for data that compresses, whatever the filters; for random data (near the
// memcpyed size, where one thread squeezes the last streams into the room left)
// and for blosclz (whose per-thread hash table remembers earlier streams, so its
// matches depend on which blocks a thread compressed before) a chunk that decodes
// to the same values. A leftover block included.
TEST(ChunkCodec, BlocksOnSeveralThreadsGiveTheSameChunk) {
  unsigned seed = 7;
  for (Codec codec : kCodecs)
    for (const Pipeline& pipe : kPipelines) {
      CompressParams p;
      p.codec = codec;
      p.typesize = 4;
      p.filters = pipe.filters;
      p.filters_meta = pipe.meta;
      p.clevel = 1 + int(seed % 5);
      p.blocksize = 32 << 10;
      for (Data kind : {Data::smooth, Data::random}) {
        const size_t size = (size_t(1) << 20) + 12;  // 33 blocks, the last one short
        Bytes data = make_data(kind, size, 4, seed++);
        const Bytes one = encode_chunk(data, p);
        for (unsigned threads : {2u, 5u}) {
          const Bytes several = encode_chunk(data, p, threads);
          if (kind == Data::smooth && codec != Codec::blosclz)
            ASSERT_EQ(several, one) << label(p, pipe.name, size) << " threads " << threads;
          else ASSERT_EQ(decode_chunk(several), decode_chunk(one)) << label(p, pipe.name, size) << " threads " << threads;
        }
        if (pipe.filters[4] != kFilterTruncPrec) {  // lossy: checked by the round-trip tests
          ASSERT_EQ(decode_chunk(one), data) << label(p, pipe.name, size);
        }
      }
    }
}

// python-blosc2 stores <U arrays with SHUFFLE and filters_meta 4: the shuffle element
// is one UCS-4 character, not the item. The encoder must shuffle by 4 (the blocks come
// out exactly as for typesize 4) and the decoder unshuffle by 4.
TEST(ChunkCodec, ShuffleElementSizeFromFiltersMeta) {
  Bytes data;
  for (int i = 0; i < 3000; ++i) {  // <U6 items: 24 bytes, 6 little-endian UCS-4 characters
    for (int c = 0; c < 6; ++c) {
      const uint32_t ch = c < 1 + i % 6 ? uint32_t('a' + (i * 7 + c) % 26) : 0;
      for (int b = 0; b < 4; ++b) data.push_back(uint8_t(ch >> (8 * b)));
    }
  }
  CompressParams by_meta;
  by_meta.codec = Codec::blosclz;
  by_meta.clevel = 5;
  by_meta.typesize = 24;
  by_meta.blocksize = 24 * 192;
  by_meta.splitmode = SplitMode::never;
  by_meta.filters = {0, 0, 0, 0, 0, kFilterShuffle};
  by_meta.filters_meta = {0, 0, 0, 0, 0, 4};
  CompressParams by_typesize4 = by_meta;
  by_typesize4.typesize = 4;
  by_typesize4.filters_meta = {};
  CompressParams by_item = by_meta;
  by_item.filters_meta = {};
  Bytes chunk = encode_chunk(data, by_meta);
  EXPECT_EQ(parse_chunk_header(chunk).filters_meta[5], 4);
  EXPECT_EQ(decode_chunk(chunk), data);
  Bytes four = encode_chunk(data, by_typesize4);
  ASSERT_EQ(chunk.size(), four.size());
  EXPECT_TRUE(std::equal(chunk.begin() + 32, chunk.end(), four.begin() + 32)) << "blocks differ from a 4-byte shuffle";
  Bytes whole = encode_chunk(data, by_item);
  EXPECT_NE(Bytes(whole.begin() + 32, whole.end()), Bytes(chunk.begin() + 32, chunk.end()));
  EXPECT_EQ(decode_chunk(whole), data);
}

TEST(ChunkCodec, RoundTripSizesAndLevels) {
  const size_t sizes[] = {0, 1, 2, 31, 32, 33, 127, 1000, 4099, 65536 + 5, 300001};
  unsigned seed = 100;
  for (Codec codec : kCodecs)
    for (size_t size : sizes)
      for (int clevel = 0; clevel <= 9; ++clevel) {
        if (size == 300001 && clevel % 3 != 0) continue;
        CompressParams p;
        p.codec = codec;
        p.clevel = clevel;
        p.typesize = 4;
        Bytes data = make_data(Data::smooth, size, 4, seed++);
        round_trip(data, p, label(p, "shuffle", size));
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(ChunkCodec, OddTypesizesIncludingWideItems) {
  for (int32_t typesize : {3, 5, 7, 12, 13, 24, 255, 256, 300, 1000})
    for (const Pipeline& pipe : kPipelines) {
      if (pipe.filters[4] == kFilterTruncPrec) continue;
      CompressParams p;
      p.codec = Codec::lz4;
      p.typesize = typesize;
      p.filters = pipe.filters;
      p.splitmode = SplitMode::always;
      const size_t size = size_t(typesize) * 517 + 11;
      round_trip(make_data(Data::smooth, size, size_t(typesize), unsigned(typesize)), p, label(p, pipe.name, size));
      // Many equal items of a wide type become a repeated-value special chunk.
      Bytes constant = make_data(Data::constant, size_t(typesize) * 50, size_t(typesize), 0);
      std::vector<uint8_t> special = encode_chunk(constant, p);
      EXPECT_EQ(parse_chunk_header(special).special(), Special::value);
      check_decodes(special, constant, "constant ts" + std::to_string(typesize));
    }
}

TEST(ChunkCodec, DataKindsWithAndWithoutSpecialDetection) {
  for (Codec codec : kCodecs)
    for (Data kind : {Data::random, Data::zeros, Data::constant, Data::smooth})
      for (bool detect : {true, false}) {
        CompressParams p;
        p.codec = codec;
        p.typesize = 8;
        p.blocksize = 16384;
        p.detect_specials = detect;
        Bytes data = make_data(kind, 100000, 8, 5);
        std::vector<uint8_t> chunk = encode_chunk(data, p);
        ChunkHeader h = parse_chunk_header(chunk);
        if (detect && kind == Data::zeros) {
          EXPECT_EQ(h.special(), Special::zeros);
          EXPECT_EQ(h.cbytes, 32);
          EXPECT_EQ(h.flags, 0x05);
        } else if (detect && kind == Data::constant) {
          EXPECT_EQ(h.special(), Special::value);
          EXPECT_EQ(h.cbytes, 40);
        } else {
          EXPECT_EQ(h.special(), Special::none);
        }
        if (kind == Data::random) {
          EXPECT_TRUE(h.memcpyed()) << "random data does not compress";
        }
        if (!detect && (kind == Data::zeros || kind == Data::constant)) {
          EXPECT_LT(h.cbytes, 2000);
        }
        check_decodes(chunk, data, std::string(codec_name(codec)) + " kind " + std::to_string(int(kind)));
      }
}

TEST(ChunkCodec, EncoderLayoutFacts) {
  CompressParams p;
  p.codec = Codec::lz4;
  p.typesize = 4;
  Bytes data = make_data(Data::smooth, 1 << 20, 4, 1);
  std::vector<uint8_t> chunk = encode_chunk(data, p);
  ChunkHeader h = parse_chunk_header(chunk);
  EXPECT_FALSE(h.dont_split()) << "lz4 + shuffle on 4-byte items splits";
  EXPECT_EQ(h.compformat(), 1);
  EXPECT_EQ(h.blocksize, automatic_blocksize(p, 1 << 20));
  p.codec = Codec::zstd;
  p.clevel = 9;
  EXPECT_TRUE(parse_chunk_header(encode_chunk(data, p)).dont_split()) << "zstd at clevel 9 does not split";
  p.codec = Codec::lz4hc;
  h = parse_chunk_header(encode_chunk(data, p));
  EXPECT_EQ(h.codec_label(), "lz4hc");
  EXPECT_EQ(h.compformat(), 1);
  // Memcpyed chunks: clevel 0 and tiny inputs hold the raw, unfiltered bytes.
  p.clevel = 0;
  chunk = encode_chunk(data, p);
  EXPECT_TRUE(parse_chunk_header(chunk).memcpyed());
  EXPECT_EQ(0, std::memcmp(chunk.data() + 32, data.data(), data.size()));
  p.clevel = 5;
  chunk = encode_chunk(ByteSpan(data).first(31), p);
  EXPECT_TRUE(parse_chunk_header(chunk).memcpyed());
  // A block of zeros inside other data is stored as zero-run streams (csize 0).
  Bytes mixed = make_data(Data::smooth, 65536, 4, 2);
  std::fill(mixed.begin() + 16384, mixed.begin() + 32768, 0);
  p.blocksize = 16384;
  chunk = encode_chunk(mixed, p);
  h = parse_chunk_header(chunk);
  const uint32_t block1 = load_le32(chunk.data() + 32 + 4);
  EXPECT_EQ(load_le32(chunk.data() + block1), 0u);
  check_decodes(chunk, mixed, "zero block");
  // Automatic block sizes: whole items, at most nbytes.
  for (Codec codec : kCodecs)
    for (int clevel = 0; clevel <= 9; ++clevel)
      for (int32_t typesize : {1, 3, 4, 12, 300}) {
        CompressParams q;
        q.codec = codec;
        q.clevel = clevel;
        q.typesize = typesize;
        for (int32_t n : {1, 100, 100000, 10 << 20}) {
          const int32_t bs = automatic_blocksize(q, n);
          EXPECT_GE(bs, 1);
          EXPECT_LE(bs, n);
          const int32_t ts = typesize > 255 ? 1 : typesize;
          if (bs > ts) {
            EXPECT_EQ(bs % ts, 0);
          }
        }
      }
}

TEST(ChunkCodec, BadParamsThrow) {
  Bytes data(1000, 1);
  CompressParams p;
  p.clevel = 10;
  EXPECT_THROW(encode_chunk(data, p), FormatError);
  p = {};
  p.typesize = 0;
  EXPECT_THROW(encode_chunk(data, p), FormatError);
  p = {};
  p.blocksize = -5;
  EXPECT_THROW(encode_chunk(data, p), FormatError);
  p = {};
  p.filters[5] = 160;
  EXPECT_THROW(encode_chunk(data, p), UnsupportedError);
  p = {};
  p.typesize = 2;
  p.detect_specials = false;
  p.filters[4] = kFilterTruncPrec;
  EXPECT_THROW(encode_chunk(make_data(Data::smooth, 1000, 2, 1), p), FormatError);
}

TEST(ChunkCodec, SpecialChunks) {
  Bytes out(4096, 0x55);
  std::vector<uint8_t> z = make_special_chunk(Special::zeros, 4096, 4);
  ChunkView(z).decode(out);
  EXPECT_EQ(out, Bytes(4096, 0));

  std::vector<uint8_t> nan4 = make_special_chunk(Special::nan, 4096, 4);
  ChunkView(nan4).decode(out);
  for (size_t i = 0; i < out.size(); i += 4) ASSERT_EQ(load_le32(out.data() + i), 0x7FC00000u);
  std::vector<uint8_t> nan8 = make_special_chunk(Special::nan, 4096, 8);
  ChunkView(nan8).decode(out);
  for (size_t i = 0; i < out.size(); i += 8) ASSERT_EQ(load_le64(out.data() + i), 0x7FF8000000000000ull);
  EXPECT_THROW(make_special_chunk(Special::nan, 4096, 2), FormatError);

  std::fill(out.begin(), out.end(), 0x77);
  std::vector<uint8_t> uninit = make_special_chunk(Special::uninit, 4096, 4);
  ChunkView(uninit).decode(out);
  EXPECT_EQ(out, Bytes(4096, 0x77)) << "uninit leaves the output untouched";

  const uint8_t value[3] = {1, 2, 3};
  std::vector<uint8_t> repeat = make_special_chunk(Special::value, 3000, 3, value);
  EXPECT_EQ(repeat.size(), 35u);
  Bytes expected(3000);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = value[i % 3];
  check_decodes(repeat, expected, "repeated value");
  EXPECT_THROW(make_special_chunk(Special::value, 3001, 3, value), FormatError);
  EXPECT_THROW(make_special_chunk(Special::value, 3000, 4, value), FormatError);
  EXPECT_THROW(make_special_chunk(Special::none, 3000, 4), FormatError);
  // A special chunk's declared size needs no backing bytes.
  std::vector<uint8_t> big = make_special_chunk(Special::zeros, 1 << 30, 8);
  ChunkView big_view(big);
  Bytes tail(100, 1);
  big_view.decode_range((1 << 30) - 100, tail);
  EXPECT_EQ(tail, Bytes(100, 0));
}

TEST(ChunkCodec, EmptyAndOutOfRangeCalls) {
  CompressParams p;
  std::vector<uint8_t> empty = encode_chunk({}, p);
  ChunkView view(empty);
  EXPECT_EQ(view.nbytes(), 0);
  EXPECT_TRUE(view.decode().empty());
  Bytes data = make_data(Data::smooth, 10000, 8, 1);
  std::vector<uint8_t> chunk = encode_chunk(data, p);
  ChunkView v(chunk);
  Bytes wrong(9999);
  EXPECT_THROW(v.decode(wrong), std::invalid_argument);
  Bytes part(10);
  EXPECT_THROW(v.decode_range(9995, part), std::out_of_range);
  EXPECT_THROW(v.decode_range(-1, part), std::out_of_range);
  EXPECT_THROW(v.block_size(v.nblocks()), std::out_of_range);
  EXPECT_THROW(ChunkView(ByteSpan(chunk).first(chunk.size() - 1)), FormatError);
}

// Writes a 32-byte header into a chunk buffer.
void put_header(Bytes& c, uint8_t version, uint8_t flags, uint8_t typesize, int32_t nbytes, int32_t blocksize,
                int32_t cbytes) {
  if (c.size() < 32) c.resize(32);
  c[0] = version;
  c[1] = 1;
  c[2] = flags;
  c[3] = typesize;
  store_le32(c.data() + 4, uint32_t(nbytes));
  store_le32(c.data() + 8, uint32_t(blocksize));
  store_le32(c.data() + 12, uint32_t(cbytes));
}

TEST(ChunkCodec, HeaderValidation) {
  Bytes c;
  put_header(c, 5, 0x05, 4, 100, 100, 32);
  c[31] = 1 << 4;  // zeros
  EXPECT_NO_THROW(parse_chunk_header(c));
  EXPECT_THROW(parse_chunk_header(ByteSpan(c).first(15)), FormatError);
  EXPECT_THROW(parse_chunk_header(ByteSpan(c).first(31)), FormatError);
  auto fails = [&](auto change) {
    Bytes bad = c;
    change(bad);
    EXPECT_THROW(parse_chunk_header(bad), FormatError);
  };
  fails([](Bytes& b) { b[0] = 0; });
  fails([](Bytes& b) { store_le32(b.data() + 8, 0); });
  fails([](Bytes& b) { store_le32(b.data() + 8, uint32_t(kMaxBlocksize) + 1); });
  fails([](Bytes& b) { b[3] = 0; });
  fails([](Bytes& b) { store_le32(b.data() + 12, 31); });
  fails([](Bytes& b) { store_le32(b.data() + 4, uint32_t(-1)); });
  fails([](Bytes& b) { b[31] = 5 << 4; });                     // unknown special id
  fails([](Bytes& b) { b[30] = 1; });                          // VL and special
  fails([](Bytes& b) { b[31] = 2 << 4; store_le32(b.data() + 4, 102); });  // NaN, nbytes not whole items
  fails([](Bytes& b) { b[31] = 3 << 4; store_le32(b.data() + 12, 32 + 3); });  // value of 3 bytes, nbytes 100
  {
    Bytes lazy = c;
    lazy[31] = kBlosc2Lazy;
    EXPECT_THROW(parse_chunk_header(lazy), UnsupportedError);
    Bytes future = c;
    future[0] = 7;
    EXPECT_NO_THROW(parse_chunk_header(future));
    future[30] = 0x02;
    EXPECT_THROW(parse_chunk_header(future), UnsupportedError);
  }
  // Version 3 never initialised the last filter slot.
  Bytes alpha = c;
  alpha[0] = 3;
  alpha[21] = kFilterShuffle;
  alpha[29] = 7;
  ChunkHeader h = parse_chunk_header(alpha);
  EXPECT_EQ(h.filters[5], 0);
  EXPECT_EQ(h.filters_meta[5], 0);
  // Blosc1: 16-byte header, filters from flags; blocksize clamped to nbytes.
  Bytes old(16);
  put_header(old, 2, 0x01 | 0x08 | 0x02, 4, 8, 64, 24);
  old.resize(24);
  h = parse_chunk_header(old);
  EXPECT_FALSE(h.extended);
  EXPECT_EQ(h.filters[5], kFilterShuffle);
  EXPECT_EQ(h.filters[4], kFilterDelta);
  EXPECT_EQ(h.blocksize, 8);
  EXPECT_EQ(h.filters_label(), "delta,shuffle");
  old[15] = 0;
  store_le32(old.data() + 12, 25);
  EXPECT_THROW(parse_chunk_header(old), FormatError) << "memcpyed cbytes must be nbytes + 16";
}

TEST(ChunkCodec, UnsupportedCodecsAndFilters) {
  CompressParams p;
  p.typesize = 4;
  p.detect_specials = false;
  Bytes data = make_data(Data::smooth, 4000, 4, 3);
  const std::vector<uint8_t> good = encode_chunk(data, p);
  auto message = [&](auto change) -> std::string {
    Bytes bad(good.begin(), good.end());
    change(bad);
    try {
      ChunkView view(bad);
      view.decode();
    } catch (const UnsupportedError& e) {
      return e.what();
    }
    return "no UnsupportedError";
  };
  EXPECT_NE(message([](Bytes& b) { b[21] = 160; }).find("160"), std::string::npos);
  EXPECT_NE(message([](Bytes& b) { b[20] = 7; }).find("7"), std::string::npos);
  // The plugin codecs and filters (ndlz, ndcell, ...) decode: codec_registry_test.
  EXPECT_NE(message([](Bytes& b) { b[2] = uint8_t((b[2] & 0x1f) | 6 << 5); b[22] = 38; }).find("openzl"),
            std::string::npos);
  EXPECT_NE(message([](Bytes& b) { b[2] = uint8_t((b[2] & 0x1f) | 2 << 5); }).find("snappy"), std::string::npos);
  EXPECT_NE(message([](Bytes& b) { b[2] = uint8_t((b[2] & 0x1f) | 7 << 5); }).find("7"), std::string::npos);
  // int_trunc (36) and trunc_prec (4) need nothing on decode.
  Bytes lossy(good.begin(), good.end());
  lossy[19] = 36;
  EXPECT_EQ(ChunkView(lossy).decode(), data);
}

// A VL-block chunk as c-blosc2 3.x writes them: [i32 size][data] per block.
Bytes make_vl_chunk(const std::vector<Bytes>& blocks, const std::array<uint8_t, kMaxFilters>& filters,
                    bool compress) {
  int32_t nbytes = 0;
  for (const Bytes& b : blocks) nbytes += int32_t(b.size());
  Bytes c(32 + 4 * blocks.size());
  for (size_t j = 0; j < blocks.size(); ++j) {
    store_le32(c.data() + 32 + 4 * j, uint32_t(c.size()));
    Bytes body(blocks[j].size() + 64);
    // Filter the block as its own delta reference.
    Bytes filtered = blocks[j];
    if (filters[5] == kFilterDelta) delta_encode(nullptr, blocks[j].data(), filtered.data(), filtered.size(), 1, true);
    int n = compress ? blosclz_compress(5, filtered.data(), filtered.size(), body.data(), filtered.size() - 1) : 0;
    if (n <= 0) {
      n = int(filtered.size());
      std::memcpy(body.data(), filtered.data(), filtered.size());
    }
    append_le32(c, uint32_t(blocks[j].size()));
    c.insert(c.end(), body.begin(), body.begin() + n);
  }
  put_header(c, 6, 0x05 | 0x10, 1, nbytes, int32_t(blocks.size()), int32_t(c.size()));
  for (int i = 0; i < kMaxFilters; ++i) c[16 + size_t(i)] = filters[size_t(i)];
  c[30] = kFlags2VlBlocks;
  return c;
}

TEST(ChunkCodec, VariableLengthBlocks) {
  std::vector<Bytes> blocks;
  Bytes all;
  for (size_t j = 0; j < 5; ++j) {
    Bytes b = make_data(j == 2 ? Data::random : Data::smooth, 300 + 1000 * j, 1, unsigned(j));
    all.insert(all.end(), b.begin(), b.end());
    blocks.push_back(b);
  }
  for (bool compress : {false, true})
    for (uint8_t filter : {kFilterNone, kFilterDelta}) {
      Bytes chunk = make_vl_chunk(blocks, {0, 0, 0, 0, 0, filter}, compress);
      ChunkView view(chunk);
      EXPECT_EQ(view.nblocks(), 5);
      EXPECT_EQ(view.block_size(3), 3300);
      EXPECT_EQ(view.block_offset(3), 300 + 1300 + 2300);
      EXPECT_FALSE(view.needs_reference_block());
      check_decodes(chunk, all, "VL compress=" + std::to_string(compress) + " filter=" + std::to_string(filter));
    }
  Bytes chunk = make_vl_chunk(blocks, {}, true);
  Bytes bad = chunk;
  store_le32(bad.data() + 32 + 8, load_le32(bad.data() + 32 + 4));  // not strictly increasing
  EXPECT_THROW(ChunkView{bad}, FormatError);
  bad = chunk;
  store_le32(bad.data() + 4, uint32_t(all.size() + 1));  // sizes do not add up
  EXPECT_THROW(ChunkView{bad}, FormatError);
}

// An lz4 chunk with a dictionary (blosc2_flags bit 0): raw dictionary bytes after the
// block-start table, every block compressed against them.
TEST(ChunkCodec, Lz4DictionaryChunk) {
  // Data made of pieces of the dictionary compresses only with it.
  const Bytes dict = make_data(Data::random, 2000, 1, 8);
  Bytes data;
  std::mt19937 rng(9);
  while (data.size() < 10000) {
    const size_t at = rng() % 1800, n = 50 + rng() % 150;
    data.insert(data.end(), dict.begin() + ptrdiff_t(at), dict.begin() + ptrdiff_t(at + n));
  }
  data.resize(10000);
  const int32_t blocksize = 4096, nblocks = 3;
  Bytes c(32 + 4 * nblocks);
  append_le32(c, uint32_t(dict.size()));
  c.insert(c.end(), dict.begin(), dict.end());
  for (int32_t j = 0; j < nblocks; ++j) {
    store_le32(c.data() + 32 + 4 * j, uint32_t(c.size()));
    const size_t n = std::min<size_t>(blocksize, data.size() - size_t(j) * blocksize);
    LZ4_stream_t* stream = LZ4_createStream();
    LZ4_loadDict(stream, reinterpret_cast<const char*>(dict.data()), int(dict.size()));
    Bytes packed(static_cast<size_t>(LZ4_compressBound(int(n))));
    const int csize = LZ4_compress_fast_continue(stream, reinterpret_cast<const char*>(data.data()) + j * blocksize,
                                                 reinterpret_cast<char*>(packed.data()), int(n), int(packed.size()), 1);
    LZ4_freeStream(stream);
    ASSERT_GT(csize, 0);
    ASSERT_LT(size_t(csize), n);
    append_le32(c, uint32_t(csize));
    c.insert(c.end(), packed.begin(), packed.begin() + csize);
  }
  put_header(c, 5, 0x05 | kFlagDontSplit | 1 << 5, 1, int32_t(data.size()), blocksize, int32_t(c.size()));
  c[31] = kBlosc2UseDict;
  check_decodes(c, data, "lz4 dictionary");
  // The streams really refer to the dictionary: another one gives other bytes.
  Bytes wrong = c;
  for (size_t i = 0; i < dict.size(); ++i) wrong[32 + 4 * nblocks + 4 + i] ^= 0x5A;
  EXPECT_NE(ChunkView(wrong).decode(), data);
  Bytes oversized = c;
  store_le32(oversized.data() + 32 + 4 * nblocks, 40000);
  EXPECT_THROW(ChunkView{oversized}, FormatError);
}

TEST(ChunkCodec, DeltaRangesStartingAnywhere) {
  CompressParams p;
  p.codec = Codec::zstd;
  p.typesize = 4;
  p.blocksize = 1024;
  p.filters = {0, 0, 0, 0, kFilterDelta, kFilterShuffle};
  Bytes data = make_data(Data::smooth, 10000, 4, 9);
  std::vector<uint8_t> chunk = encode_chunk(data, p);
  ChunkView view(chunk);
  ASSERT_TRUE(view.needs_reference_block());
  for (size_t a : {0, 1, 1000, 1023, 1024, 1025, 5000, 9999})
    for (size_t n : {1, 23, 1024, 3000}) {
      if (a + n > data.size()) continue;
      Bytes part(n);
      view.decode_range(int64_t(a), part);
      ASSERT_EQ(0, std::memcmp(part.data(), data.data() + a, n)) << a << "+" << n;
    }
}

TEST(ChunkCodec, ConcurrentDecodesOfOneView) {
  CompressParams p;
  p.codec = Codec::zstd;
  p.typesize = 4;
  p.blocksize = 8192;
  p.filters = {0, 0, 0, 0, kFilterDelta, kFilterShuffle};
  Bytes data = make_data(Data::smooth, 1 << 18, 4, 4);
  std::vector<uint8_t> chunk = encode_chunk(data, p);
  ChunkView view(chunk);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int k = 0; k < 50; ++k) {
        const size_t a = rng() % data.size(), n = rng() % (data.size() - a + 1);
        Bytes part(n);
        view.decode_range(int64_t(a), part);
        if (!std::equal(part.begin(), part.end(), data.begin() + ptrdiff_t(a))) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ChunkCodec, NamesAndLabels) {
  EXPECT_STREQ(codec_name(Codec::lz4hc), "lz4hc");
  EXPECT_STREQ(codec_name(Codec(9)), "unknown");
  EXPECT_STREQ(compformat_name(3), "zlib");
  EXPECT_STREQ(compformat_name(6), "user");
  EXPECT_STREQ(special_name(Special::value), "value");
  EXPECT_EQ(filter_name(35), "bytedelta");
  EXPECT_EQ(filter_name(160), "filter-160");
}

}  // namespace
}  // namespace blosc2fs
