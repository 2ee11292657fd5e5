// BloscLZ: the token grammar by hand, round trips, and hostile streams.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "blosclz.h"

namespace blosc2fs {
namespace {

using Buffer = std::vector<uint8_t>;

Buffer decode(const Buffer& stream, size_t size, int* result = nullptr) {
  Buffer out(size);
  const int n = blosclz_decompress(stream.data(), stream.size(), out.data(), out.size());
  if (result) *result = n;
  if (n >= 0) out.resize(size_t(n));
  return out;
}

void round_trip(const Buffer& data, int clevel) {
  Buffer packed(data.size() + data.size() / 32 + 64);
  const int n = blosclz_compress(clevel, data.data(), data.size(), packed.data(), packed.size());
  ASSERT_GT(n, 0) << "size " << data.size();
  packed.resize(size_t(n));
  EXPECT_EQ(packed[0] >> 5, 0) << "the first token must be a literal run";
  int result = 0;
  Buffer back = decode(packed, data.size(), &result);
  ASSERT_EQ(result, int(data.size())) << "clevel " << clevel;
  EXPECT_TRUE(back == data) << "clevel " << clevel << " size " << data.size();
}

TEST(Blosclz, LiteralRun) {
  Buffer stream = {2, 'a', 'b', 'c'};
  EXPECT_EQ(decode(stream, 3), (Buffer{'a', 'b', 'c'}));
  // The first byte is read as byte & 31.
  stream[0] = 0xE2;
  EXPECT_EQ(decode(stream, 3), (Buffer{'a', 'b', 'c'}));
}

TEST(Blosclz, NearMatchWithOverlap) {
  // "ab", then a match of length 6 at distance 2, then literal "z".
  Buffer stream = {1, 'a', 'b', uint8_t((6 - 2) << 5 | 0), 1, 0, 'z'};
  EXPECT_EQ(decode(stream, 9), (Buffer{'a', 'b', 'a', 'b', 'a', 'b', 'a', 'b', 'z'}));
}

TEST(Blosclz, ExtendedLengthMatch) {
  // length = 9 + 255 + 10 = 274 copies of 'x' at distance 1.
  Buffer stream = {0, 'x', uint8_t(7 << 5), 255, 10, 0, 0, 'y'};
  Buffer expected(1 + 274, 'x');
  expected.push_back('y');
  EXPECT_EQ(decode(stream, expected.size()), expected);
}

TEST(Blosclz, FarDistanceMatch) {
  // 9000 literal bytes, then a 4-byte match at distance 9000 (far form: d = 9000 - 8192).
  std::mt19937 rng(1);
  Buffer literals(9000);
  for (auto& b : literals) b = uint8_t(rng());
  Buffer stream;
  for (size_t i = 0; i < literals.size(); i += 32) {
    const size_t run = std::min<size_t>(32, literals.size() - i);
    stream.push_back(uint8_t(run - 1));
    stream.insert(stream.end(), literals.begin() + ptrdiff_t(i), literals.begin() + ptrdiff_t(i + run));
  }
  const unsigned d = 9000 - 8192;
  stream.insert(stream.end(), {uint8_t((4 - 2) << 5 | 31), 255, uint8_t(d >> 8), uint8_t(d), 0, 'e'});
  Buffer expected = literals;
  expected.insert(expected.end(), literals.begin(), literals.begin() + 4);
  expected.push_back('e');
  EXPECT_EQ(decode(stream, expected.size()), expected);
}

TEST(Blosclz, TrailingMatchIsNotCopied) {
  // The reference decoder stops at a match token that ends the input.
  Buffer stream = {0, 'a', uint8_t(1 << 5), 0, 0, 0};
  Buffer stream_far = {0, 'a', uint8_t(1 << 5 | 31), 255, 0, 0};
  int n = 0;
  decode(stream_far, 100, &n);
  EXPECT_EQ(n, -1);  // distance 8192 reaches before the output
  Buffer ends_with_match = {0, 'a', uint8_t(1 << 5), 0, 0, 'b'};
  EXPECT_EQ(decode(ends_with_match, 100), (Buffer{'a', 'a', 'a', 'a', 'b'}));
  Buffer match_last = {0, 'a', uint8_t(1 << 5), 0};
  decode(match_last, 100, &n);
  EXPECT_EQ(n, -1);  // the code byte may not be the last byte
  (void)stream;
}

TEST(Blosclz, MalformedStreamsFail) {
  int n = 0;
  decode(Buffer{5, 'a'}, 100, &n);  // literal run past the input
  EXPECT_EQ(n, -1);
  decode(Buffer{3, 'a', 'b', 'c', 'd'}, 2, &n);  // past the output
  EXPECT_EQ(n, -1);
  decode(Buffer{0, 'a', uint8_t(1 << 5), 5, 0}, 100, &n);  // distance before the start
  EXPECT_EQ(n, -1);
  decode(Buffer{0, 'a', uint8_t(6 << 5), 0, 0}, 4, &n);  // match past the output
  EXPECT_EQ(n, -1);
}

TEST(Blosclz, RoundTripsAllKindsOfData) {
  std::mt19937 rng(7);
  std::vector<Buffer> inputs;
  for (size_t size : {1, 2, 15, 16, 17, 31, 100, 1000, 4096, 65536, 100003, 300000}) {
    Buffer random(size), text(size), runs(size), smooth(size), sparse(size, 0);
    for (size_t i = 0; i < size; ++i) {
      random[i] = uint8_t(rng());
      text[i] = "the quick brown fox jumps over the lazy dog "[(i * 7 + i / 13) % 44];
      runs[i] = uint8_t((i / 300) % 3);
      smooth[i] = uint8_t(128 + 100 * std::sin(double(i) / 50));
      if (rng() % 97 == 0) sparse[i] = uint8_t(rng());
    }
    for (auto* b : {&random, &text, &runs, &smooth, &sparse}) inputs.push_back(*b);
  }
  // Repeats far apart exercise the far-distance form and its limit.
  Buffer far(200000);
  for (size_t i = 0; i < far.size(); ++i) far[i] = uint8_t(rng());
  std::memcpy(far.data() + 70000, far.data() + 100, 5000);
  std::memcpy(far.data() + 150000, far.data() + 70000, 3000);
  std::memcpy(far.data() + 190000, far.data() + 110000, 3000);
  inputs.push_back(far);
  for (const Buffer& data : inputs)
    for (int clevel : {1, 3, 5, 9}) round_trip(data, clevel);
}

TEST(Blosclz, CompressReportsWhenOutputDoesNotFit) {
  std::mt19937 rng(3);
  Buffer random(4096);
  for (auto& b : random) b = uint8_t(rng());
  Buffer out(4000);
  EXPECT_EQ(blosclz_compress(5, random.data(), random.size(), out.data(), out.size()), 0);
  Buffer zeros(4096, 0);
  const int n = blosclz_compress(5, zeros.data(), zeros.size(), out.data(), out.size());
  EXPECT_GT(n, 0);
  EXPECT_LT(n, 100);
}

TEST(Blosclz, RandomStreamsNeverOverrun) {
  std::mt19937 rng(11);
  Buffer out(512);
  for (int round = 0; round < 20000; ++round) {
    Buffer stream(1 + rng() % 64);
    for (auto& b : stream) b = uint8_t(rng());
    const int n = blosclz_decompress(stream.data(), stream.size(), out.data(), 1 + rng() % out.size());
    EXPECT_GE(n, -1);
  }
}

}  // namespace
}  // namespace blosc2fs
