// NDLZ: hand-made streams of every token kind for both cell sizes, edge cells,
// the encoder's round trips, and hostile streams (references outside the stream,
// truncation, shapes that do not match the block).
#include "ndlz.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "bytes.h"

namespace blosc2fs {
namespace {

Bytes header(int32_t b0, int32_t b1) {
  Bytes s = {2};
  append_le32(s, uint32_t(b0));
  append_le32(s, uint32_t(b1));
  return s;
}

void append_u16(Bytes& s, uint16_t v) {
  s.push_back(uint8_t(v));
  s.push_back(uint8_t(v >> 8));
}

Bytes decode(const Bytes& stream, size_t size, uint8_t cell) {
  Bytes out(size, 0xCD);
  ndlz_decode(stream, out, cell);
  return out;
}

TEST(Ndlz, LiteralConstantAndWholeCellMatchCells4x4) {
  // A 4 x 12 block: three cells. Cell 0 literal, cell 1 constant 7, cell 2 a copy of cell 0.
  Bytes s = header(4, 12);
  s.push_back(0x00);
  const size_t literal_at = s.size();
  for (int i = 0; i < 16; ++i) s.push_back(uint8_t(i + 1));
  s.push_back(0x40);
  s.push_back(7);
  const size_t token_at = s.size();
  s.push_back(0xC0);
  append_u16(s, uint16_t(token_at - literal_at));
  Bytes out = decode(s, 48, 4);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(out[size_t(r * 12 + c)], r * 4 + c + 1);
      EXPECT_EQ(out[size_t(r * 12 + 4 + c)], 7);
      EXPECT_EQ(out[size_t(r * 12 + 8 + c)], r * 4 + c + 1);
    }
}

TEST(Ndlz, RowMatchTokensCells4x4) {
  // Cell 0 literal rows A B C D; then cells built from its rows.
  Bytes s = header(4, 16);
  s.push_back(0x00);
  const size_t rows_at = s.size();
  for (int i = 0; i < 16; ++i) s.push_back(uint8_t(0x10 * (i / 4 + 1) + i % 4));
  // Cell 1: token 0xE0 (three rows 1,2,3 from ref[0:12]), row 0 literal.
  size_t token_at = s.size();
  s.push_back(0xE0);
  append_u16(s, uint16_t(token_at - rows_at));
  for (int i = 0; i < 4; ++i) s.push_back(uint8_t(0xE0 + i));
  // Cell 2: token 0x80 (rows 2,3 from ref[0:8]), rows 0,1 literal.
  token_at = s.size();
  s.push_back(0x80);
  append_u16(s, uint16_t(token_at - rows_at));
  for (int i = 0; i < 8; ++i) s.push_back(uint8_t(0x80 + i));
  // Cell 3: token 40 (j = 1): rows 0,1 from ref1[0:8], rows 2,3 from ref2[0:8].
  token_at = s.size();
  s.push_back(40);
  append_u16(s, uint16_t(token_at - rows_at));
  append_u16(s, uint16_t(token_at - (rows_at + 8)));
  Bytes out = decode(s, 64, 4);
  auto row = [&](int cell, int r) { return Bytes(out.begin() + r * 16 + cell * 4, out.begin() + r * 16 + cell * 4 + 4); };
  const Bytes A = {0x10, 0x11, 0x12, 0x13}, B = {0x20, 0x21, 0x22, 0x23}, C = {0x30, 0x31, 0x32, 0x33},
              D = {0x40, 0x41, 0x42, 0x43};
  EXPECT_EQ(row(1, 0), (Bytes{0xE0, 0xE1, 0xE2, 0xE3}));
  EXPECT_EQ(row(1, 1), A);
  EXPECT_EQ(row(1, 2), B);
  EXPECT_EQ(row(1, 3), C);
  EXPECT_EQ(row(2, 0), (Bytes{0x80, 0x81, 0x82, 0x83}));
  EXPECT_EQ(row(2, 1), (Bytes{0x84, 0x85, 0x86, 0x87}));
  EXPECT_EQ(row(2, 2), A);
  EXPECT_EQ(row(2, 3), B);
  EXPECT_EQ(row(3, 0), A);
  EXPECT_EQ(row(3, 1), B);
  EXPECT_EQ(row(3, 2), C);
  EXPECT_EQ(row(3, 3), D);
}

TEST(Ndlz, RowMatchTokensCells8x8AndEdgeCells) {
  // A 10 x 8 block: a full 8 x 8 cell and a 2 x 8 edge cell below it.
  Bytes s = header(10, 8);
  s.push_back(0x00);
  const size_t rows_at = s.size();
  for (int i = 0; i < 64; ++i) s.push_back(uint8_t(i));
  // Edge cell: a whole-cell match of 2 x 8 bytes (rows 0-1 of cell 0).
  const size_t token_at = s.size();
  s.push_back(0xC0);
  append_u16(s, uint16_t(token_at - rows_at));
  Bytes out = decode(s, 80, 8);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[size_t(i)], i);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[size_t(64 + i)], i);

  // An 8 x 8 block from a triple match (token 21 << 3 | 2: rows 2-4) and literal rows.
  Bytes t = header(8, 16);
  t.push_back(0x00);
  const size_t base = t.size();
  for (int i = 0; i < 64; ++i) t.push_back(uint8_t(100 + i));
  const size_t at = t.size();
  t.push_back(uint8_t(21 << 3 | 2));
  append_u16(t, uint16_t(at - base));
  for (int i = 0; i < 40; ++i) t.push_back(uint8_t(200 + i));
  Bytes o = decode(t, 128, 8);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      const uint8_t got = o[size_t(r * 16 + 8 + c)];
      if (r >= 2 && r <= 4)
        EXPECT_EQ(got, 100 + (r - 2) * 8 + c) << r << "," << c;
      else
        EXPECT_EQ(got, 200 + (r < 2 ? r : r - 3) * 8 + c) << r << "," << c;
    }
}

TEST(Ndlz, EdgeCellsOfEveryKindWriteEveryByte) {
  // A 4 x 6 block, 4 x 4 cells: a literal cell, then a 4 x 2 edge cell coded with
  // token 0xE0 (rows 1-3 from the first cell's bytes 0-11, row 0 the literal
  // 90-93). c-blosc2 lays those rows 4 bytes apart, 90 91 92 93 0 1 2 3 4 5 ...,
  // and reads the edge cell back 2 bytes per row.
  Bytes s = header(4, 6);
  s.push_back(0x00);
  for (int i = 0; i < 16; ++i) s.push_back(uint8_t(i));
  s.push_back(0xE0);
  append_u16(s, 16);  // the edge cell's token sits at 26, the literal bytes at 10
  for (int i = 0; i < 4; ++i) s.push_back(uint8_t(90 + i));
  const Bytes expected = {0, 1, 2,  3,  90, 91, 4,  5,  6,  7,  92, 93,
                          8, 9, 10, 11, 0,  1,  12, 13, 14, 15, 2,  3};
  EXPECT_EQ(decode(s, 24, 4), expected);  // decode() starts from 0xCD bytes

  // A 5 x 4 block: a constant full cell and a constant 1 x 4 edge cell.
  Bytes c = header(5, 4);
  c.insert(c.end(), {0x40, 7, 0x40, 9});
  EXPECT_EQ(decode(c, 20, 4), (Bytes{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 9, 9, 9, 9}));
  EXPECT_EQ(decode(c, 20, 8), Bytes(20, 7)) << "8 x 8: one 5 x 4 edge cell, constant";
}

Bytes image(int32_t b0, int32_t b1, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(size_t(b0) * size_t(b1));
  for (int32_t r = 0; r < b0; ++r)
    for (int32_t c = 0; c < b1; ++c)
      out[size_t(r * b1 + c)] = uint8_t(((r / 5) * 16 + (c / 9) * 4) % 256 + (rng() % 97 == 0 ? rng() % 7 : 0));
  return out;
}

TEST(Ndlz, EncoderRoundTripsEveryShape) {
  for (uint8_t cell : {4, 8}) {
    for (auto [b0, b1] : {std::pair{1, 40}, {40, 1}, {5, 7}, {64, 48}, {100, 100}, {33, 17}, {128, 256}}) {
      SCOPED_TRACE(std::to_string(cell) + ": " + std::to_string(b0) + " x " + std::to_string(b1));
      for (const Bytes& block : {image(b0, b1, 1), Bytes(size_t(b0 * b1), 9)}) {
        Bytes stream(block.size());
        const size_t n = ndlz_encode(block, b0, b1, cell, stream);
        if (n == 0) continue;  // not smaller: stored raw
        ASSERT_LT(n, block.size());
        stream.resize(n);
        EXPECT_EQ(decode(stream, block.size(), cell), block);
      }
    }
  }
  // Image-like blocks of the usual sizes do compress.
  Bytes block = image(64, 48, 2), stream(block.size());
  EXPECT_GT(ndlz_encode(block, 64, 48, 4, stream), 0u);
  std::mt19937 rng(3);
  Bytes noise(4096);
  for (auto& b : noise) b = uint8_t(rng());
  EXPECT_EQ(ndlz_encode(noise, 64, 64, 8, stream), 0u) << "noise must be left raw";
}

TEST(Ndlz, HostileStreamsAreFormatErrors) {
  Bytes good = header(4, 4);
  good.push_back(0x00);
  for (int i = 0; i < 16; ++i) good.push_back(uint8_t(i));
  EXPECT_NO_THROW(decode(good, 16, 4));
  auto refuses = [](const Bytes& s, size_t size, uint8_t cell) {
    Bytes out(size);
    EXPECT_THROW(ndlz_decode(s, out, cell), FormatError);
  };
  refuses(good, 16, 5);                                     // cell size
  refuses(good, 17, 4);                                     // shape against the block
  refuses(Bytes(good.begin(), good.end() - 1), 16, 4);      // truncated literal
  refuses(Bytes(good.begin(), good.begin() + 8), 16, 4);    // truncated header
  Bytes ndim3 = good;
  ndim3[0] = 3;
  refuses(ndim3, 16, 4);
  Bytes negative = header(-4, 4);
  refuses(negative, 16, 4);
  Bytes huge = header(0x7FFFFFFF, 0x7FFFFFFF);
  refuses(huge, 16, 4);
  Bytes before_start = header(4, 4);  // a whole-cell match reaching before byte 0
  before_start.push_back(0xC0);
  append_u16(before_start, 0xFFFF);
  refuses(before_start, 16, 4);
  Bytes self = header(4, 4);  // a match of 16 bytes at its own token: runs past the end
  self.push_back(0xC0);
  append_u16(self, 0);
  refuses(self, 16, 4);
  Bytes unknown = header(4, 4);
  unknown.push_back(0x07);
  refuses(unknown, 16, 4);
  Bytes bad_row = header(8, 8);  // triple match from row 6: rows 6..8 do not fit
  bad_row.push_back(uint8_t(21 << 3 | 6));
  append_u16(bad_row, 0);
  refuses(bad_row, 64, 8);
  Bytes out;
  EXPECT_NO_THROW(ndlz_decode(header(0, 5), out, 4)) << "an empty block decodes to nothing";
}

}  // namespace
}  // namespace blosc2fs
