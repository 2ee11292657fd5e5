// The decoder's fast paths: byte streams stored raw are read in place from the chunk
// (also gathered stream by stream into the unshuffle), wide BloscLZ copies, and the
// unshuffle_streams kernels against the scalar reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "blosclz.h"
#include "bytes.h"
#include "chunk_codec.h"
#include "shuffle.h"
#include "shuffle_impl.h"

namespace blosc2fs {
namespace {

// Items whose low bytes are noise (streams stored raw) and whose high bytes are
// nearly constant (streams that compress), so one block mixes both kinds.
Bytes mixed_items(size_t size, size_t typesize, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(size);
  for (size_t i = 0; i < size; ++i) {
    const size_t byte = i % typesize;
    out[i] = byte < (typesize + 1) / 2 ? uint8_t(rng()) : uint8_t(0x40 + byte + (i / typesize / 4096));
  }
  return out;
}

void expect_all_decodes(ByteSpan chunk, ByteSpan expected, const std::string& what) {
  SCOPED_TRACE(what);
  const ChunkView view(chunk);
  ASSERT_EQ(size_t(view.nbytes()), expected.size());
  Bytes all(expected.size(), 0xCD);
  view.decode(all);
  ASSERT_EQ(0, std::memcmp(all.data(), expected.data(), all.size())) << "decode()";
  for (int32_t j = 0; j < view.nblocks(); ++j) {
    Bytes block(size_t(view.block_size(j)), 0xCD);
    view.decode_block(j, block);
    ASSERT_EQ(0, std::memcmp(block.data(), expected.data() + view.block_offset(j), block.size())) << "block " << j;
  }
  std::mt19937 rng(unsigned(expected.size()));
  for (int k = 0; k < 8; ++k) {
    const size_t a = rng() % expected.size();
    Bytes part(rng() % (expected.size() - a + 1));
    view.decode_range(int64_t(a), part);
    ASSERT_TRUE(std::equal(part.begin(), part.end(), expected.begin() + ptrdiff_t(a))) << "range " << a;
  }
}

struct DecodePipeline {
  const char* name;
  std::array<uint8_t, kMaxFilters> filters;
};

// Decode order runs from slot 5 down, so shuffle in slot 5 is the step that reads the
// streams; the steps after it exercise the buffer ping-pong behind the gathered input.
const DecodePipeline kDecodePipelines[] = {
    {"shuffle", {0, 0, 0, 0, 0, kFilterShuffle}},
    {"bitshuffle", {0, 0, 0, 0, 0, kFilterBitshuffle}},
    {"bytedelta,shuffle", {0, 0, 0, 0, kFilterBytedelta, kFilterShuffle}},
    {"delta,shuffle", {0, 0, 0, 0, kFilterDelta, kFilterShuffle}},
    {"delta,bitshuffle,shuffle", {0, 0, 0, kFilterDelta, kFilterBitshuffle, kFilterShuffle}},
    {"bitshuffle,bytedelta,shuffle", {0, 0, 0, kFilterBitshuffle, kFilterBytedelta, kFilterShuffle}},
    {"shuffle,delta", {0, 0, 0, 0, kFilterShuffle, kFilterDelta}},
    {"none", {0, 0, 0, 0, 0, 0}},
};

TEST(ChunkDecodePaths, RawAndCompressedStreamsInOneBlock) {
  unsigned seed = 7;
  for (Codec codec : {Codec::blosclz, Codec::lz4, Codec::zstd, Codec::zlib})
    for (const DecodePipeline& pipe : kDecodePipelines)
      for (int32_t typesize : {1, 2, 3, 4, 8, 12, 16, 32})
        for (SplitMode split : {SplitMode::always, SplitMode::never}) {
          CompressParams p;
          p.codec = codec;
          p.clevel = 5;
          p.typesize = typesize;
          p.filters = pipe.filters;
          p.splitmode = split;
          p.blocksize = 8192 + 32 * typesize;
          const size_t size = 70000 + size_t(typesize) * 5 + 1;  // a leftover block too
          const Bytes data = mixed_items(size, size_t(typesize), seed++);
          const Bytes chunk = encode_chunk(data, p);
          expect_all_decodes(chunk, data,
                             std::string(codec_name(codec)) + " " + pipe.name + " ts" + std::to_string(typesize) +
                                 " split" + std::to_string(int(split)));
          if (::testing::Test::HasFatalFailure()) return;
        }
}

// A VL-block chunk (format-notes §5) whose blocks are shuffled or bit-shuffled as items
// of 4 bytes, each stored raw when BloscLZ does not shrink it: raw blocks are read in place.
Bytes vl_chunk(const std::vector<Bytes>& blocks, uint8_t filter) {
  int32_t nbytes = 0;
  for (const Bytes& b : blocks) nbytes += int32_t(b.size());
  Bytes c(32 + 4 * blocks.size());
  for (size_t j = 0; j < blocks.size(); ++j) {
    store_le32(c.data() + 32 + 4 * j, uint32_t(c.size()));
    Bytes filtered(blocks[j].size());
    if (filter == kFilterShuffle)
      shuffle(blocks[j].data(), filtered.data(), filtered.size(), 4);
    else
      bitshuffle(blocks[j].data(), filtered.data(), filtered.size(), 4);
    Bytes body(filtered.size() + 64);
    int n = blosclz_compress(5, filtered.data(), filtered.size(), body.data(), filtered.size() - 1);
    if (n <= 0) {
      n = int(filtered.size());
      std::memcpy(body.data(), filtered.data(), filtered.size());
    }
    append_le32(c, uint32_t(blocks[j].size()));
    c.insert(c.end(), body.begin(), body.begin() + n);
  }
  c[0] = 6;
  c[1] = 1;
  c[2] = 0x05 | 0x10;  // Blosc2 extended header, no split; compformat 0 (BloscLZ)
  c[3] = 4;
  store_le32(c.data() + 4, uint32_t(nbytes));
  store_le32(c.data() + 8, uint32_t(blocks.size()));
  store_le32(c.data() + 12, uint32_t(c.size()));
  c[16 + 5] = filter;
  c[30] = kFlags2VlBlocks;
  return c;
}

TEST(ChunkDecodePaths, VariableLengthBlocksStoredRawAndFiltered) {
  std::vector<Bytes> blocks;
  Bytes all;
  std::mt19937 rng(21);
  for (size_t j = 0; j < 6; ++j) {
    Bytes b = j % 2 == 0 ? Bytes(400 * (j + 1) + 12) : mixed_items(400 * (j + 1) + 12, 4, unsigned(j));
    for (auto& x : b)
      if (j % 2 == 0) x = uint8_t(rng());  // noise: stored raw
    all.insert(all.end(), b.begin(), b.end());
    blocks.push_back(b);
  }
  for (uint8_t filter : {kFilterShuffle, kFilterBitshuffle}) {
    const Bytes chunk = vl_chunk(blocks, filter);
    expect_all_decodes(chunk, all, "VL filter " + std::to_string(filter));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ChunkDecodePaths, TruncatedRawStreamIsAnError) {
  CompressParams p;
  p.codec = Codec::lz4;
  p.typesize = 4;
  p.splitmode = SplitMode::always;
  p.blocksize = 16384;
  const Bytes data = mixed_items(65536, 4, 3);
  const Bytes chunk = encode_chunk(data, p);
  // Cut the stored bytes short but keep cbytes: the view must refuse the chunk or
  // fail the decode, never read past what it was given.
  for (size_t cut : {size_t(1), size_t(100), chunk.size() / 2}) {
    const Bytes shorter(chunk.begin(), chunk.end() - ptrdiff_t(cut));
    EXPECT_THROW(
        {
          const ChunkView view(shorter);
          view.decode();
        },
        FormatError)
        << "cut " << cut;
  }
}

TEST(ChunkDecodePaths, UnshuffleStreamsMatchesScalarUnshuffle) {
  std::vector<shuffle_detail::StreamsUnshuffleFn> kernels{shuffle_detail::unshuffle_streams_scalar};
  if (shuffle_detail::sse2_kernels()) kernels.push_back(shuffle_detail::unshuffle_streams_sse2);
  if (shuffle_detail::avx2_kernels()) kernels.push_back(shuffle_detail::unshuffle_streams_avx2);
  std::mt19937 rng(11);
  for (size_t typesize : {1, 2, 3, 4, 5, 8, 9, 16, 17, 24, 32, 255})
    for (size_t n : {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4099}) {
      // Streams scattered through one buffer, each at an odd offset.
      std::vector<uint8_t> pool(typesize * (n + 37) + 64);
      for (auto& b : pool) b = uint8_t(rng());
      std::vector<const uint8_t*> streams(typesize);
      Bytes contiguous(typesize * n);
      for (size_t k = 0; k < typesize; ++k) {
        streams[k] = pool.data() + (typesize - 1 - k) * (n + 37) + 1 + k % 7;
        if (n > 0) std::memcpy(contiguous.data() + k * n, streams[k], n);
      }
      Bytes want(typesize * n);
      shuffle_detail::unshuffle_scalar(contiguous.data(), want.data(), want.size(), typesize);
      for (auto fn : kernels) {
        Bytes got(typesize * n + 1, 0xEE);
        fn(streams.data(), got.data(), n, typesize);
        ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "typesize " << typesize << " n " << n;
        ASSERT_EQ(got.back(), 0xEE) << "wrote past n * typesize";
      }
      Bytes got(typesize * n);
      unshuffle_streams(streams.data(), got.data(), n, typesize);
      ASSERT_EQ(got, want);
    }
}

#if defined(__x86_64__)
TEST(ChunkDecodePaths, GfniBitunshuffleMatchesScalar) {
  // Every CI machine so far has AVX2; one without it has no kernel to check.
  ASSERT_NE(shuffle_detail::avx2_kernels(), nullptr) << "this CPU has no AVX2: the GFNI kernel cannot run here";
  // The kernel with the instruction modelled runs everywhere; the instruction itself only
  // where the CPU has it (the model is checked against it there).
  const bool hardware = shuffle_detail::gfni_supported();
  std::printf("GFNI kernel checked with %s\n",
              hardware ? "the CPU's GF2P8AFFINEQB and its software model"
                       : "GF2P8AFFINEQB modelled in software (this CPU has no GFNI)");
  std::mt19937 rng(13);
  for (size_t typesize : {1, 2, 3, 4, 8, 16, 24})
    for (size_t items : {0, 8, 255, 256, 257, 1024, 8200, 40000}) {
      const size_t size = items * typesize + typesize / 2;
      Bytes src(size);
      for (auto& b : src) b = uint8_t(rng());
      Bytes want(size), plain(size), model(size);
      shuffle_detail::bitunshuffle_scalar(src.data(), want.data(), size, typesize);
      shuffle_detail::bitunshuffle_avx2(src.data(), plain.data(), size, typesize);
      shuffle_detail::bitunshuffle_avx2_gfni_model(src.data(), model.data(), size, typesize);
      ASSERT_EQ(plain, want) << "typesize " << typesize << " items " << items;
      ASSERT_EQ(model, want) << "typesize " << typesize << " items " << items;
      if (hardware) {
        Bytes gfni(size);
        shuffle_detail::bitunshuffle_avx2_gfni(src.data(), gfni.data(), size, typesize);
        ASSERT_EQ(gfni, want) << "typesize " << typesize << " items " << items;
      }
    }
}
#endif

TEST(ChunkDecodePaths, BlosclzWideCopiesKeepExactOutput) {
  // Matches at every distance 1..40 and long ones, literals of every length, with the
  // output buffer exactly as large as the data: the wide copies must fall back near the end.
  std::mt19937 rng(5);
  for (size_t period = 1; period <= 40; ++period)
    for (size_t size : {size_t(20), size_t(47), size_t(300), size_t(5000)}) {
      Bytes data(size);
      for (size_t i = 0; i < size; ++i) data[i] = i % 97 < 60 ? uint8_t(i % period * 7) : uint8_t(rng());
      Bytes packed(size * 2 + 64);
      const int n = blosclz_compress(9, data.data(), size, packed.data(), packed.size());
      ASSERT_GT(n, 0);
      Bytes out(size);
      ASSERT_EQ(blosclz_decompress(packed.data(), size_t(n), out.data(), size), int(size))
          << "period " << period << " size " << size;
      ASSERT_EQ(out, data) << "period " << period << " size " << size;
      // One byte too small an output must fail, not overflow.
      Bytes small(size - 1);
      EXPECT_LT(blosclz_decompress(packed.data(), size_t(n), small.data(), small.size()), int(size));
    }
}

}  // namespace
}  // namespace blosc2fs
