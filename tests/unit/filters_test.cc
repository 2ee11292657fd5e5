// Delta, bytedelta and trunc_prec: known answers, round trips, word-size rules, and
// the decoders against frames written by c-blosc2.
#include "filters.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "shuffle.h"

namespace blosc2fs {
namespace {

using Buffer = std::vector<uint8_t>;

Buffer random_bytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  Buffer data(size);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  return data;
}

Buffer words32(std::initializer_list<uint32_t> words) {
  Buffer out(words.size() * 4);
  size_t at = 0;
  for (uint32_t w : words) {
    std::memcpy(out.data() + at, &w, 4);
    at += 4;
  }
  return out;
}

Buffer concat(Buffer a, const Buffer& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(DeltaTest, ReferenceBlockTypesize4) {
  // Words 1, 3, 7, 7 and a 2-byte tail that fills no word.
  const Buffer src = concat(words32({1, 3, 7, 7}), {0xAB, 0xCD});
  const Buffer expected = concat(words32({1, 1 ^ 3, 3 ^ 7, 0}), {0xAB, 0xCD});
  Buffer out(src.size());
  delta_encode(nullptr, src.data(), out.data(), src.size(), 4, true);
  EXPECT_EQ(out, expected);
  delta_decode(nullptr, out.data(), out.size(), 4, true);
  EXPECT_EQ(out, src);
}

TEST(DeltaTest, ReferenceBlockBytes) {
  const Buffer src = {5, 6, 6, 0xFF};
  const Buffer expected = {5, 5 ^ 6, 0, 6 ^ 0xFF};
  for (size_t typesize : {1, 3, 12}) {  // 3 and 12 are not word sizes: bytes
    Buffer out(src.size());
    delta_encode(nullptr, src.data(), out.data(), src.size(), typesize, true);
    EXPECT_EQ(out, expected) << typesize;
    delta_decode(nullptr, out.data(), out.size(), typesize, true);
    EXPECT_EQ(out, src) << typesize;
  }
}

TEST(DeltaTest, MultipleOfEightUsesEightByteWords) {
  // typesize 16 and 24 XOR in 8-byte words: byte p with byte p - 8.
  const Buffer src = random_bytes(16 + 8 + 5, 9);
  for (size_t typesize : {16, 24}) {
    Buffer out(src.size());
    delta_encode(nullptr, src.data(), out.data(), src.size(), typesize, true);
    for (size_t p = 0; p < 8; ++p) EXPECT_EQ(out[p], src[p]);
    for (size_t p = 8; p < 24; ++p) EXPECT_EQ(out[p], src[p] ^ src[p - 8]) << p;
    for (size_t p = 24; p < src.size(); ++p) EXPECT_EQ(out[p], src[p]) << "tail " << p;
    delta_decode(nullptr, out.data(), out.size(), typesize, true);
    EXPECT_EQ(out, src);
  }
}

TEST(DeltaTest, NonReferenceBlockXorsWithReference) {
  const Buffer reference = random_bytes(100, 1);
  const Buffer src = random_bytes(99, 2);  // 24 words of 4 and a 3-byte tail
  Buffer out(src.size());
  delta_encode(reference.data(), src.data(), out.data(), src.size(), 4, false);
  for (size_t p = 0; p < 96; ++p) EXPECT_EQ(out[p], src[p] ^ reference[p]) << p;
  for (size_t p = 96; p < 99; ++p) EXPECT_EQ(out[p], src[p]) << "tail " << p;
  delta_decode(reference.data(), out.data(), out.size(), 4, false);
  EXPECT_EQ(out, src);
}

TEST(DeltaTest, RoundTrips) {
  for (size_t typesize : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 24, 32}) {
    for (size_t size : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 65536 + 3}) {
      const Buffer reference = random_bytes(size, 100);
      const Buffer src = random_bytes(size, static_cast<uint32_t>(size + typesize));
      for (bool is_reference : {true, false}) {
        Buffer out(size);
        delta_encode(reference.data(), src.data(), out.data(), size, typesize, is_reference);
        delta_decode(reference.data(), out.data(), size, typesize, is_reference);
        ASSERT_EQ(out, src) << "typesize " << typesize << " size " << size << " ref " << is_reference;
      }
    }
  }
}

// Byte-at-a-time versions of the rules, to hold the word and vector code to.
Buffer naive_delta_encode(const Buffer& reference, const Buffer& src, size_t typesize, bool is_reference) {
  const size_t word = typesize == 1 || typesize == 2 || typesize == 4 || typesize == 8 ? typesize
                      : typesize % 8 == 0                                          ? 8
                                                                                   : 1;
  const size_t body = src.size() / word * word;
  Buffer out = src;
  for (size_t p = 0; p < body; ++p) {
    if (is_reference) {
      if (p >= word) out[p] = src[p] ^ src[p - word];
    } else {
      out[p] = src[p] ^ reference[p];
    }
  }
  return out;
}

Buffer naive_bytedelta_encode(const Buffer& src, size_t typesize) {
  const size_t channel = src.size() / typesize;
  Buffer out = src;
  for (size_t c = 0; c < typesize; ++c) {
    for (size_t j = 1; j < channel; ++j) {
      out[c * channel + j] = static_cast<uint8_t>(src[c * channel + j] - src[c * channel + j - 1]);
    }
  }
  return out;
}

TEST(DeltaTest, MatchesNaiveRules) {
  for (size_t typesize : {1, 2, 3, 4, 6, 8, 12, 16, 24}) {
    for (size_t size = 0; size < 200; size += 1 + size / 16) {
      const Buffer reference = random_bytes(size, 77);
      const Buffer src = random_bytes(size, static_cast<uint32_t>(size * 7 + typesize));
      for (bool is_reference : {true, false}) {
        const Buffer want = naive_delta_encode(reference, src, typesize, is_reference);
        Buffer out(size);
        delta_encode(reference.data(), src.data(), out.data(), size, typesize, is_reference);
        ASSERT_EQ(out, want) << "typesize " << typesize << " size " << size << " ref " << is_reference;
        delta_decode(reference.data(), out.data(), size, typesize, is_reference);
        ASSERT_EQ(out, src) << "typesize " << typesize << " size " << size << " ref " << is_reference;
      }
    }
  }
}

TEST(BytedeltaTest, MatchesNaiveRules) {
  for (size_t typesize : {1, 2, 3, 4, 8, 16}) {
    for (size_t size = 0; size < 400; size += 1 + size / 20) {
      const Buffer src = random_bytes(size, static_cast<uint32_t>(size * 5 + typesize));
      const Buffer want = naive_bytedelta_encode(src, typesize);
      Buffer out(size), back(size);
      bytedelta_encode(src.data(), out.data(), size, typesize);
      ASSERT_EQ(out, want) << "typesize " << typesize << " size " << size;
      bytedelta_decode(out.data(), back.data(), size, typesize);
      ASSERT_EQ(back, src) << "typesize " << typesize << " size " << size;
    }
  }
}

TEST(BytedeltaTest, KnownAnswer) {
  // typesize 2, 7 bytes: channels {10, 12, 15} and {200, 100, 0}, tail {9}.
  const Buffer src = {10, 12, 15, 200, 100, 0, 9};
  const Buffer expected = {10, 2, 3, 200, 156, 156, 9};
  Buffer out(src.size());
  bytedelta_encode(src.data(), out.data(), src.size(), 2);
  EXPECT_EQ(out, expected);
  Buffer back(src.size());
  bytedelta_decode(out.data(), back.data(), out.size(), 2);
  EXPECT_EQ(back, src);
}

TEST(BytedeltaTest, RoundTripsAndInPlaceDecode) {
  for (size_t typesize : {1, 2, 3, 4, 8, 12, 16, 24}) {
    for (size_t size : {0, 1, 5, 17, 100, 1023, 65536 + 5}) {
      const Buffer src = random_bytes(size, static_cast<uint32_t>(size * 3 + typesize));
      Buffer out(size), back(size);
      bytedelta_encode(src.data(), out.data(), size, typesize);
      bytedelta_decode(out.data(), back.data(), size, typesize);
      ASSERT_EQ(back, src) << typesize << " " << size;
      bytedelta_decode(out.data(), out.data(), size, typesize);
      ASSERT_EQ(out, src) << "in place " << typesize << " " << size;
    }
  }
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(TruncPrecTest, Float32) {
  const Buffer src = concat(words32({float_bits(1.0f / 3.0f), float_bits(-2.5e-7f)}), {0x77});
  ASSERT_EQ(float_bits(1.0f / 3.0f), 0x3EAAAAABu);
  Buffer out(src.size());
  ASSERT_TRUE(trunc_prec(src.data(), out.data(), src.size(), 4, 10));  // keep 10: zero 13 bits
  uint32_t first;
  std::memcpy(&first, out.data(), 4);
  EXPECT_EQ(first, 0x3EAAA000u);
  EXPECT_EQ(out.back(), 0x77);
  Buffer same(src.size());
  ASSERT_TRUE(trunc_prec(src.data(), same.data(), src.size(), 4, -13));  // remove 13
  EXPECT_EQ(same, out);
  ASSERT_TRUE(trunc_prec(src.data(), same.data(), src.size(), 4, 23));
  EXPECT_EQ(same, src);
  EXPECT_TRUE(trunc_prec(src.data(), same.data(), src.size(), 4, 1));
  EXPECT_TRUE(trunc_prec(src.data(), same.data(), src.size(), 4, -22));
}

TEST(TruncPrecTest, Float64) {
  const double value = 1.0 / 3.0;
  Buffer src(8);
  std::memcpy(src.data(), &value, 8);
  Buffer out(8);
  ASSERT_TRUE(trunc_prec(src.data(), out.data(), 8, 8, 20));  // zero 32 bits
  uint64_t bits;
  std::memcpy(&bits, out.data(), 8);
  EXPECT_EQ(bits, 0x3FD5555500000000ull);
  ASSERT_TRUE(trunc_prec(src.data(), out.data(), 8, 8, 52));
  EXPECT_EQ(out, src);
  EXPECT_TRUE(trunc_prec(src.data(), out.data(), 8, 8, -51));
}

TEST(TruncPrecTest, RejectsBadArguments) {
  Buffer src(16), out(16);
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 2, 5));
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 16, 5));
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 4, 0));  // would keep no bit
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 4, 24));
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 4, -23));
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 8, 53));
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 8, -52));
  EXPECT_FALSE(trunc_prec(src.data(), out.data(), 16, 8, 0));
}

// The trunc_prec fixture keeps 12 of 23 bits: its decoded floats have the low 11 bits
// clear, so truncating them again changes nothing while keeping 11 would.
TEST(TruncPrecTest, MatchesCBlosc2Frame) {
  const Buffer data = testing::gunzip_file(testing::fixtures_dir() / "expect/filter-truncprec-zstd-f4.b2frame.data.gz");
  ASSERT_GT(data.size(), 1000u);
  Buffer out(data.size());
  ASSERT_TRUE(trunc_prec(data.data(), out.data(), data.size(), 4, 12));
  EXPECT_EQ(out, data);
  ASSERT_TRUE(trunc_prec(data.data(), out.data(), data.size(), 4, 11));
  EXPECT_NE(out, data);
}

// A test-only decoder for the zstd frames below: extended 32-byte chunk headers,
// filters shuffle (1), delta (3) and bytedelta (35). Good enough for fixtures, not
// hardened against hostile input (the real decoder is elsewhere).
Buffer decode_chunk_for_test(const Buffer& frame, size_t at) {
  auto i32 = [&](size_t pos) {
    if (pos + 4 > frame.size()) throw std::runtime_error("fixture truncated");
    int32_t v;
    std::memcpy(&v, frame.data() + pos, 4);
    return static_cast<size_t>(v);
  };
  const uint8_t flags = frame.at(at + 2);
  const size_t typesize = frame.at(at + 3), nbytes = i32(at + 4), blocksize = i32(at + 8);
  EXPECT_EQ(flags & 0x05, 0x05);
  EXPECT_EQ(flags >> 5, 4);  // zstd
  const size_t nblocks = (nbytes + blocksize - 1) / blocksize;
  Buffer out(nbytes);
  for (size_t j = 0; j < nblocks; ++j) {
    const bool leftover = j + 1 == nblocks && nbytes % blocksize != 0;
    const size_t bsize = leftover ? nbytes % blocksize : blocksize;
    const size_t streams = (flags & 0x10) == 0 && !leftover ? typesize : 1;
    const size_t stream_size = bsize / streams;
    Buffer block(bsize), scratch(bsize);
    size_t pos = at + i32(at + 32 + 4 * j);
    for (size_t s = 0; s < streams; ++s) {
      const auto csize = static_cast<int32_t>(i32(pos));
      pos += 4;
      uint8_t* dst = block.data() + s * stream_size;
      if (csize == 0) {
        std::memset(dst, 0, stream_size);
      } else if (csize < 0) {
        std::memset(dst, static_cast<uint8_t>(-csize), stream_size);
        pos += 1;
      } else if (static_cast<size_t>(csize) == stream_size) {
        std::memcpy(dst, frame.data() + pos, stream_size);
        pos += stream_size;
      } else {
        EXPECT_EQ(ZSTD_decompress(dst, stream_size, frame.data() + pos, static_cast<size_t>(csize)), stream_size);
        pos += static_cast<size_t>(csize);
      }
    }
    for (int slot = 5; slot >= 0; --slot) {
      const uint8_t filter = frame.at(at + 16 + slot);
      const size_t meta = frame.at(at + 24 + slot);
      const size_t ts = meta != 0 ? meta : typesize;
      if (filter == 1) {
        unshuffle(block.data(), scratch.data(), bsize, ts);
        block.swap(scratch);
      } else if (filter == 35) {
        bytedelta_decode(block.data(), scratch.data(), bsize, ts);
        block.swap(scratch);
      } else if (filter == 3) {
        delta_decode(out.data(), block.data(), bsize, typesize, j == 0);
      } else {
        EXPECT_EQ(filter, 0) << "filter the test decoder lacks";
      }
    }
    std::memcpy(out.data() + j * blocksize, block.data(), bsize);
  }
  return out;
}

void expect_frame_decodes(const std::string& name) {
  const Buffer frame = testing::read_file(testing::frame_path(name));
  const Buffer expected = testing::gunzip_file(testing::fixtures_dir() / ("expect/" + name + ".data.gz"));
  const auto meta = testing::load_expect(name);
  ASSERT_GE(frame.size(), 16u);
  const size_t header_len = (size_t{frame[11]} << 24) | (size_t{frame[12]} << 16) | (size_t{frame[13]} << 8) | frame[14];
  size_t offset = 0;
  for (const auto& chunk : meta["chunks"]) {
    const Buffer decoded = decode_chunk_for_test(frame, header_len + chunk["index_entry"].get<size_t>());
    ASSERT_LE(offset + decoded.size(), expected.size());
    EXPECT_TRUE(std::equal(decoded.begin(), decoded.end(), expected.begin() + static_cast<std::ptrdiff_t>(offset)))
        << name << " chunk at " << offset;
    offset += decoded.size();
  }
  EXPECT_EQ(offset, expected.size());
}

TEST(BytedeltaTest, MatchesCBlosc2Frame) { expect_frame_decodes("filter-bytedelta-zstd-f8.b2frame"); }

TEST(DeltaTest, MatchesCBlosc2Frame) { expect_frame_decodes("filter-delta-shuffle-zstd-i4.b2frame"); }

}  // namespace
}  // namespace blosc2fs
