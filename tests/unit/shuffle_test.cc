// Byte shuffle and bit shuffle: known answers, round trips, every SIMD path against
// the scalar reference, and the bit layout against a chunk written by c-blosc.
#include "shuffle.h"

#include <gtest/gtest.h>
#include <lz4.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "shuffle_impl.h"

namespace blosc2fs {
namespace {

using Buffer = std::vector<uint8_t>;
using shuffle_detail::ShuffleKernels;

Buffer random_bytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  Buffer data(size);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  return data;
}

// Random items with a compressible flavour: small increments, like real arrays.
Buffer ramp_bytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  Buffer data(size);
  uint32_t value = 0;
  for (size_t i = 0; i < size; ++i) {
    if (i % 4 == 0) value += rng() % 7;
    data[i] = static_cast<uint8_t>(value >> (8 * (i % 4)));
  }
  return data;
}

std::vector<const ShuffleKernels*> all_kernels() {
  std::vector<const ShuffleKernels*> kernels{&shuffle_detail::scalar_kernels()};
  if (auto* k = shuffle_detail::sse2_kernels()) kernels.push_back(k);
  if (auto* k = shuffle_detail::avx2_kernels()) kernels.push_back(k);
  return kernels;
}

const std::vector<size_t> kTypesizes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 32};

// Sizes around every boundary the kernels care about: empty, less than one item,
// tails, fewer than 8 / 16 / 32 items, vector steps, slices of the bit shuffle.
std::vector<size_t> sizes_for(size_t typesize) {
  std::vector<size_t> sizes = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 127, 129, 1000, 4099};
  for (size_t items : {7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4096,
                       8191, 8200, 40000}) {
    sizes.push_back(items * typesize);
    sizes.push_back(items * typesize + typesize / 2 + 1);
  }
  return sizes;
}

TEST(ShuffleTest, ByteShuffleLayout) {
  // Three 4-byte items and a 2-byte tail.
  const Buffer src = {0x10, 0x11, 0x12, 0x13, 0x20, 0x21, 0x22, 0x23, 0x30, 0x31, 0x32, 0x33, 0xEE, 0xFF};
  const Buffer expected = {0x10, 0x20, 0x30, 0x11, 0x21, 0x31, 0x12, 0x22, 0x32, 0x13, 0x23, 0x33, 0xEE, 0xFF};
  for (const auto* k : all_kernels()) {
    Buffer out(src.size());
    k->shuffle(src.data(), out.data(), src.size(), 4);
    EXPECT_EQ(out, expected) << k->name;
    Buffer back(src.size());
    k->unshuffle(out.data(), back.data(), out.size(), 4);
    EXPECT_EQ(back, src) << k->name;
  }
}

TEST(ShuffleTest, ByteShuffleLayoutLarge) {
  // dst[k*n + i] = src[i*typesize + k], checked for every vector path's block sizes.
  for (size_t typesize : {2, 4, 8, 16}) {
    const size_t n = 1000;
    const Buffer src = random_bytes(n * typesize + typesize - 1, 7);
    for (const auto* k : all_kernels()) {
      Buffer out(src.size());
      k->shuffle(src.data(), out.data(), src.size(), typesize);
      for (size_t i = 0; i < n; ++i) {
        for (size_t b = 0; b < typesize; ++b) {
          ASSERT_EQ(out[b * n + i], src[i * typesize + b]) << k->name << " ts " << typesize << " i " << i;
        }
      }
      for (size_t t = n * typesize; t < src.size(); ++t) ASSERT_EQ(out[t], src[t]);
    }
  }
}

TEST(ShuffleTest, BitShuffleLayoutTypesize2) {
  // Nine 2-byte items and a 1-byte tail: items 0..7 are transformed, the rest copied.
  // Byte 0 of item i is 1 << i, so plane (0, k) has only item k's bit: 1 << k.
  // Byte 1 is 0xFF in item 3 only, so every plane (1, k) is 0x08.
  Buffer src;
  for (int i = 0; i < 8; ++i) {
    src.push_back(static_cast<uint8_t>(1u << i));
    src.push_back(i == 3 ? 0xFF : 0x00);
  }
  src.insert(src.end(), {0xAB, 0xCD, 0xEF});
  const Buffer expected = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x08, 0x08,
                           0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0xAB, 0xCD, 0xEF};
  for (const auto* k : all_kernels()) {
    Buffer out(src.size());
    k->bitshuffle(src.data(), out.data(), src.size(), 2);
    EXPECT_EQ(out, expected) << k->name;
    Buffer back(src.size());
    k->bitunshuffle(out.data(), back.data(), out.size(), 2);
    EXPECT_EQ(back, src) << k->name;
  }
}

TEST(ShuffleTest, BitShuffleLayoutTypesize1) {
  // Items 0..15: plane k holds bit k of item i at bit i % 8 of byte i / 8.
  Buffer src(16);
  for (int i = 0; i < 16; ++i) src[i] = static_cast<uint8_t>(i);
  const Buffer expected = {0xAA, 0xAA, 0xCC, 0xCC, 0xF0, 0xF0, 0x00, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0};
  for (const auto* k : all_kernels()) {
    Buffer out(src.size());
    k->bitshuffle(src.data(), out.data(), src.size(), 1);
    EXPECT_EQ(out, expected) << k->name;
  }
}

TEST(ShuffleTest, BitShuffleLayoutLarge) {
  // The layout rule bit by bit, on enough items to cross every vector step.
  for (size_t typesize : {1, 2, 3, 4, 8, 16}) {
    const size_t n = 8 * 300 + 5;
    const Buffer src = random_bytes(n * typesize + 1, 11);
    const size_t m = n / 8 * 8;
    const size_t plane = m / 8;
    for (const auto* k : all_kernels()) {
      Buffer out(src.size());
      k->bitshuffle(src.data(), out.data(), src.size(), typesize);
      for (size_t i = 0; i < m; ++i) {
        for (size_t b = 0; b < typesize; ++b) {
          for (size_t bit = 0; bit < 8; ++bit) {
            const int want = (src[i * typesize + b] >> bit) & 1;
            const int got = (out[(b * 8 + bit) * plane + i / 8] >> (i % 8)) & 1;
            ASSERT_EQ(got, want) << k->name << " ts " << typesize << " item " << i << " byte " << b;
          }
        }
      }
      for (size_t t = m * typesize; t < src.size(); ++t) ASSERT_EQ(out[t], src[t]);
    }
  }
}

TEST(ShuffleTest, RoundTripsAndSimdMatchesScalar) {
  const ShuffleKernels& scalar = shuffle_detail::scalar_kernels();
  for (size_t typesize : kTypesizes) {
    for (size_t size : sizes_for(typesize)) {
      const Buffer src = random_bytes(size, static_cast<uint32_t>(size * 31 + typesize));
      Buffer want_shuffled(size), want_bits(size);
      scalar.shuffle(src.data(), want_shuffled.data(), size, typesize);
      scalar.bitshuffle(src.data(), want_bits.data(), size, typesize);
      for (const auto* k : all_kernels()) {
        SCOPED_TRACE(std::string(k->name) + " typesize " + std::to_string(typesize) + " size " +
                     std::to_string(size));
        Buffer out(size), back(size);
        k->shuffle(src.data(), out.data(), size, typesize);
        ASSERT_EQ(out, want_shuffled);
        k->unshuffle(out.data(), back.data(), size, typesize);
        ASSERT_EQ(back, src);
        k->bitshuffle(src.data(), out.data(), size, typesize);
        ASSERT_EQ(out, want_bits);
        k->bitunshuffle(out.data(), back.data(), size, typesize);
        ASSERT_EQ(back, src);
      }
    }
  }
}

TEST(ShuffleTest, OneMegabyteRoundTrips) {
  const size_t size = (1u << 20) + 3;
  const Buffer src = ramp_bytes(size, 5);
  const ShuffleKernels& scalar = shuffle_detail::scalar_kernels();
  for (size_t typesize : {1, 2, 4, 8, 12, 16}) {
    Buffer want(size), want_bits(size);
    scalar.shuffle(src.data(), want.data(), size, typesize);
    scalar.bitshuffle(src.data(), want_bits.data(), size, typesize);
    for (const auto* k : all_kernels()) {
      Buffer out(size), back(size);
      k->shuffle(src.data(), out.data(), size, typesize);
      EXPECT_EQ(out, want) << k->name << " " << typesize;
      k->unshuffle(want.data(), back.data(), size, typesize);
      EXPECT_EQ(back, src) << k->name << " " << typesize;
      k->bitshuffle(src.data(), out.data(), size, typesize);
      EXPECT_EQ(out, want_bits) << k->name << " " << typesize;
      k->bitunshuffle(want_bits.data(), back.data(), size, typesize);
      EXPECT_EQ(back, src) << k->name << " " << typesize;
    }
  }
}

TEST(ShuffleTest, UnalignedBuffers) {
  const Buffer storage = random_bytes(70000, 3);
  for (size_t typesize : {2, 4, 8, 16}) {
    for (size_t offset = 1; offset < 4; ++offset) {
      const size_t size = 65536 + offset;
      Buffer want(size), out(size + 8), back(size + 8);
      shuffle_detail::shuffle_scalar(storage.data() + offset, want.data(), size, typesize);
      for (const auto* k : all_kernels()) {
        k->shuffle(storage.data() + offset, out.data() + offset, size, typesize);
        ASSERT_EQ(0, std::memcmp(out.data() + offset, want.data(), size)) << k->name;
        k->unshuffle(out.data() + offset, back.data() + 3, size, typesize);
        ASSERT_EQ(0, std::memcmp(back.data() + 3, storage.data() + offset, size)) << k->name;
        k->bitshuffle(storage.data() + offset, out.data() + offset, size, typesize);
        k->bitunshuffle(out.data() + offset, back.data() + 5, size, typesize);
        ASSERT_EQ(0, std::memcmp(back.data() + 5, storage.data() + offset, size)) << k->name;
      }
    }
  }
}

TEST(ShuffleTest, DispatchPicksBestAvailable) {
  const std::string name = shuffle_implementation();
  const char* no_simd = std::getenv("BLOSC2FS_NO_SIMD");
  if (no_simd != nullptr && *no_simd != '\0' && std::string(no_simd) != "0") {
    EXPECT_EQ(name, "scalar");
  } else if (shuffle_detail::avx2_kernels() != nullptr) {
    EXPECT_EQ(name, "avx2");
  } else if (shuffle_detail::sse2_kernels() != nullptr) {
    EXPECT_EQ(name, "sse2");
  } else {
    EXPECT_EQ(name, "scalar");
  }
}

TEST(ShuffleDeathTest, NoSimdEnvironmentForcesScalar) {
  // A fresh process (threadsafe style: the binary executed again) that has the
  // variable from its start, so the dispatch sees it before its first use, even
  // one made while the test binary's other files initialize.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("BLOSC2FS_NO_SIMD", "1", 1);
  struct Unset {
    ~Unset() { unsetenv("BLOSC2FS_NO_SIMD"); }
  } unset;
  EXPECT_EXIT(
      {
        const Buffer src = random_bytes(4096, 1);
        Buffer out(src.size());
        unshuffle(src.data(), out.data(), src.size(), 4);
        std::exit(std::string(shuffle_implementation()) == "scalar" ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// c-blosc 2.0.0 wrote this chunk: Blosc1 16-byte header, flags 0x24 (bitshuffle,
// lz4), typesize 8, three blocks, the last a leftover block.
TEST(ShuffleTest, BitUnshuffleMatchesCBloscChunk) {
  const auto dir = testing::fixtures_dir();
  const Buffer chunk = testing::read_file(dir / "chunks/blosc-2.0.0-lz4-bitshuffle8-nomemcpy.cdata");
  const Buffer expected = testing::gunzip_file(dir / "chunks-expect/395a955b701fde14.data.gz");
  ASSERT_GE(chunk.size(), 16u);
  auto i32 = [&](size_t at) {
    int32_t v;
    EXPECT_LE(at + 4, chunk.size());
    std::memcpy(&v, chunk.data() + at, 4);
    return v;
  };
  ASSERT_EQ(chunk[2], 0x24);
  const size_t typesize = chunk[3];
  const size_t nbytes = static_cast<size_t>(i32(4));
  const size_t blocksize = static_cast<size_t>(i32(8));
  ASSERT_EQ(nbytes, expected.size());
  ASSERT_GT(blocksize, 0u);
  const size_t nblocks = (nbytes + blocksize - 1) / blocksize;
  ASSERT_GE(nblocks, 2u);
  for (const auto* k : all_kernels()) {
    Buffer decoded(nbytes);
    for (size_t j = 0; j < nblocks; ++j) {
      const size_t bsize = j + 1 == nblocks ? nbytes - j * blocksize : blocksize;
      // Not the leftover block and not flagged dont_split: one stream per byte of the type.
      const size_t streams = j + 1 == nblocks ? 1 : typesize;
      const size_t stream_size = bsize / streams;
      size_t at = static_cast<size_t>(i32(16 + 4 * j));
      Buffer staged(bsize);
      for (size_t s = 0; s < streams; ++s) {
        const int32_t csize = i32(at);
        ASSERT_GT(csize, 0);
        at += 4;
        ASSERT_LE(at + static_cast<size_t>(csize), chunk.size());
        uint8_t* out = staged.data() + s * stream_size;
        if (static_cast<size_t>(csize) == stream_size) {
          std::memcpy(out, chunk.data() + at, stream_size);
        } else {
          const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(chunk.data() + at),
                                              reinterpret_cast<char*>(out), csize, static_cast<int>(stream_size));
          ASSERT_EQ(got, static_cast<int>(stream_size));
        }
        at += static_cast<size_t>(csize);
      }
      k->bitunshuffle(staged.data(), decoded.data() + j * blocksize, bsize, typesize);
    }
    EXPECT_EQ(decoded, expected) << k->name;
  }
}

}  // namespace
}  // namespace blosc2fs
