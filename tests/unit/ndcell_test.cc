// NDCELL and NDMEAN: known answers on hand-made blocks (the cell orders and means
// worked out by hand from plugin-codecs.md §4-5, not taken from our output), the
// blocks c-blosc2 itself refuses, and hostile geometry: every one a FormatError.
#include "ndcell.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

#include "block_geometries.h"
#include "bytes.h"

namespace blosc2fs {
namespace {

using testing::geometry;

template <typename T>
Bytes bytes_of(const std::vector<T>& items) {
  Bytes out(items.size() * sizeof(T));
  std::memcpy(out.data(), items.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> items_of(const Bytes& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// A 5 x 6 block of bytes, item (r, c) = 10r + c, in NDCELL 4 cell order: the
// 2 x 2 grid of cells row-major; the edge cells clipped to 2 columns, 1 row.
const Bytes kBlock5x6 = {0,  1,  2,  3,  4,  5,  10, 11, 12, 13, 14, 15, 20, 21, 22,
                         23, 24, 25, 30, 31, 32, 33, 34, 35, 40, 41, 42, 43, 44, 45};
const Bytes kCells5x6 = {
    0,  1,  2,  3,  10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33,  // cell (0,0): rows 0-3, columns 0-3
    4,  5,  14, 15, 24, 25, 34, 35,                                  // cell (0,1): rows 0-3, columns 4-5
    40, 41, 42, 43,                                                  // cell (1,0): row 4, columns 0-3
    44, 45,                                                          // cell (1,1): row 4, columns 4-5
};

TEST(Ndcell, TwoDimensionalBlockWithClippedEdgeCells) {
  const BlockGeometry g = geometry(1, {5, 6});
  Bytes out(kBlock5x6.size(), 0xCD);
  ndcell_decode(kCells5x6, out, 4, g);
  EXPECT_EQ(out, kBlock5x6);
  Bytes cells(kBlock5x6.size(), 0xCD);
  ndcell_encode(kBlock5x6, cells, 4, g);
  EXPECT_EQ(cells, kCells5x6);
}

TEST(Ndcell, ThreeDimensionalBlockOfTwoByteItems) {
  // Block 2 x 3 x 3, cell 2 (8 items <= 18): a 1 x 2 x 2 grid. Item (i, j, k) = 100i + 10j + k.
  const BlockGeometry g = geometry(2, {2, 3, 3});
  std::vector<uint16_t> block;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) block.push_back(uint16_t(100 * i + 10 * j + k));
  const std::vector<uint16_t> cells = {
      0,   1,   10,  11,  100, 101, 110, 111,  // cell (0,0,0): runs (i, j) = (0,0) (0,1) (1,0) (1,1), k = 0-1
      2,   12,  102, 112,                      // cell (0,0,1): the same runs at k = 2
      20,  21,  120, 121,                      // cell (0,1,0): j = 2 only, k = 0-1
      22,  122,                                // cell (0,1,1): j = 2, k = 2
  };
  Bytes out(block.size() * 2, 0xCD);
  ndcell_decode(bytes_of(cells), out, 2, g);
  EXPECT_EQ(items_of<uint16_t>(out), block);
  Bytes encoded(block.size() * 2, 0xCD);
  ndcell_encode(bytes_of(block), encoded, 2, g);
  EXPECT_EQ(items_of<uint16_t>(encoded), cells);
}

TEST(Ndcell, OneDimensionalBlockKeepsItsOrder) {
  const BlockGeometry g = geometry(4, {10});
  std::vector<uint32_t> items(10);
  for (uint32_t i = 0; i < 10; ++i) items[i] = 0x01020304u * (i + 1);
  Bytes out(40, 0xCD);
  ndcell_decode(bytes_of(items), out, 4, g);
  EXPECT_EQ(items_of<uint32_t>(out), items);
}

TEST(Ndcell, CellLargerThanAShortDimensionIsClipped) {
  // Block 2 x 40, cell 8: 64 items <= 80; every cell holds 2 rows of 8 columns.
  const BlockGeometry g = geometry(1, {2, 40});
  Bytes block(80), cells;
  for (size_t i = 0; i < 80; ++i) block[i] = uint8_t(i);
  for (int c = 0; c < 5; ++c)
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < 8; ++k) cells.push_back(uint8_t(r * 40 + c * 8 + k));
  Bytes out(80, 0xCD);
  ndcell_decode(cells, out, 8, g);
  EXPECT_EQ(out, block);
}

TEST(Ndmean, KnownMeansOfA4x6Block) {
  // Item (r, c) = 6r + c as float32, cell 4: cell (0,0) holds rows 0-3 x columns 0-3,
  // sum 24*(0+1+2+3) + 4*(0+1+2+3) = 168 over 16 items: 10.5; cell (0,1) holds
  // columns 4-5, sum 12*(0+1+2+3) + 4*9 = 108 over 8 items: 13.5.
  const BlockGeometry g = geometry(4, {4, 6});
  std::vector<float> block;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) block.push_back(float(6 * r + c));
  std::vector<float> means(16, 10.5f);
  means.insert(means.end(), 8, 13.5f);
  Bytes encoded(block.size() * 4, 0xCD);
  ndmean_encode(bytes_of(block), encoded, 4, g);
  EXPECT_EQ(items_of<float>(encoded), means);

  std::vector<float> expected;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) expected.push_back(c < 4 ? 10.5f : 13.5f);
  Bytes out(block.size() * 4, 0xCD);
  ndmean_decode(encoded, out, 4, g);
  EXPECT_EQ(items_of<float>(out), expected);
}

TEST(Ndmean, DoublesAndCellsClippedToTheBlock) {
  // Block 3 x 2 float64, meta 4: the cell is min(4, b) = 3 x 2, the whole block;
  // mean of 1..6 is 3.5.
  const BlockGeometry g = geometry(8, {3, 2});
  const std::vector<double> block = {1, 2, 3, 4, 5, 6};
  Bytes encoded(48, 0xCD), out(48, 0xCD);
  ndmean_encode(bytes_of(block), encoded, 4, g);
  EXPECT_EQ(items_of<double>(encoded), std::vector<double>(6, 3.5));
  ndmean_decode(encoded, out, 4, g);
  EXPECT_EQ(items_of<double>(out), std::vector<double>(6, 3.5));
}

TEST(Ndmean, DecodeIsTheCellScatterForAnyPositiveTypesize) {
  // c-blosc2 averages int32 bit patterns as floats and decodes any typesize > 0:
  // the scatter of NDCELL with the cell min(meta, b[d]).
  const BlockGeometry g = geometry(1, {5, 6});
  Bytes out(kBlock5x6.size(), 0xCD);
  ndmean_decode(kCells5x6, out, 4, g);
  EXPECT_EQ(out, kBlock5x6);
}

TEST(Ndmean, CellOriginQuirkFailsWhereCblosc2Fails) {
  // Block 2 x 40, meta 4: cells 2 x 4, but c-blosc2 steps cell origins by cs[0] = 2,
  // so the last cell ends at item 18 + 40 + 4 = 62 of 80 and its check fails
  // (reproduced with c-blosc2: error -1).
  const BlockGeometry g = geometry(1, {2, 40});
  Bytes in(80, 1), out(80);
  EXPECT_THROW(ndmean_decode(in, out, 4, g), FormatError);
  // The same with b[0] < meta < b[1] in other shapes, and in three dimensions.
  Bytes in30(30, 1), out30(30);
  EXPECT_THROW(ndmean_decode(in30, out30, 4, geometry(1, {3, 10})), FormatError);
  Bytes in64(64, 1), out64(64);
  EXPECT_THROW(ndmean_decode(in64, out64, 4, geometry(1, {2, 8, 4})), FormatError);
  // NDCELL uses one cell size for every dimension: the same block decodes.
  EXPECT_NO_THROW(ndcell_decode(in, out, 4, g));
}

TEST(Ndmean, MetaIsASignedByteThatMustBePositive) {
  const BlockGeometry g = geometry(4, {4, 6});
  Bytes in(96), out(96);
  for (uint8_t meta : {0x00, 0x80, 0xFF, 0xFC}) {
    EXPECT_THROW(ndmean_decode(in, out, meta, g), FormatError) << int(meta);
    EXPECT_THROW(ndmean_encode(in, out, meta, g), FormatError) << int(meta);
  }
  EXPECT_NO_THROW(ndmean_decode(in, out, 0x7F, g)) << "127: one cell, clipped to the block";
}

TEST(Ndmean, TypesizeIsReadAsASignedByte) {
  // 200 as int8 is -56; 256 is 0: both refused, as c-blosc2 refuses them.
  for (int32_t typesize : {0, -4, 200, 256}) {
    Bytes in(24), out(24);
    EXPECT_THROW(ndmean_decode(in, out, 2, geometry(typesize, {4, 6})), FormatError) << typesize;
  }
  // Encoding averages floats: typesize 4 or 8 only.
  Bytes in(48), out(48);
  EXPECT_THROW(ndmean_encode(in, out, 2, geometry(2, {4, 6})), FormatError);
}

TEST(Ndcell, MetaZeroAndCellsLargerThanTheBlockAreRefused) {
  Bytes in(9), out(9);
  EXPECT_THROW(ndcell_decode(in, out, 0, geometry(1, {3, 3})), FormatError);
  // 4 x 4 = 16 items in a cell of a 9-item block: c-blosc2 checks cell^ndim <= nitems.
  EXPECT_THROW(ndcell_decode(in, out, 4, geometry(1, {3, 3})), FormatError);
  EXPECT_NO_THROW(ndcell_decode(in, out, 3, geometry(1, {3, 3})));
  // 255^8 overflows int64: still a clean refusal.
  Bytes in256(256), out256(256);
  EXPECT_THROW(ndcell_decode(in256, out256, 255, geometry(1, {2, 2, 2, 2, 2, 2, 2, 2})), FormatError);
  EXPECT_NO_THROW(ndcell_decode(in256, out256, 2, geometry(1, {2, 2, 2, 2, 2, 2, 2, 2})));
}

// Every decoder and encoder, on geometry that does not describe the buffers.
void expect_all_refuse(ByteSpan in, MutableByteSpan out, uint8_t meta, const BlockGeometry& g, const char* why) {
  EXPECT_THROW(ndcell_decode(in, out, meta, g), FormatError) << why;
  EXPECT_THROW(ndcell_encode(in, out, meta, g), FormatError) << why;
  EXPECT_THROW(ndmean_decode(in, out, meta, g), FormatError) << why;
  EXPECT_THROW(ndmean_encode(in, out, meta, g), FormatError) << why;
}

TEST(NdcellHostile, GeometryThatDoesNotDescribeTheBlock) {
  Bytes in(96), out(96);
  expect_all_refuse(in, out, 2, geometry(4, {}), "no b2nd block shape");
  BlockGeometry nine = geometry(4, {1, 1, 1, 1, 1, 1, 1, 1});
  nine.ndim = 9;
  expect_all_refuse(in, out, 2, nine, "9 dimensions");
  BlockGeometry negative_ndim = geometry(4, {4, 6});
  negative_ndim.ndim = -1;
  expect_all_refuse(in, out, 2, negative_ndim, "ndim -1");
  expect_all_refuse(in, out, 2, geometry(4, {4, 0}), "a zero dimension");
  expect_all_refuse(in, out, 2, geometry(4, {-4, -6}), "negative dimensions (positive product)");
  expect_all_refuse(in, out, 2, geometry(4, {4, -6}), "a negative dimension");
  expect_all_refuse(in, out, 2, geometry(4, {4, 5}), "80 bytes of items in a 96-byte block");
  expect_all_refuse(in, out, 2, geometry(8, {4, 6}), "typesize 8: 192 bytes in a 96-byte block");
  expect_all_refuse(in, out, 2, geometry(0, {4, 6}), "typesize 0");
  expect_all_refuse(in, out, 2, geometry(-4, {4, 6}), "typesize -4");
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  expect_all_refuse(in, out, 2, geometry(4, {kMax, kMax, kMax, kMax}), "a product overflowing int64");
  expect_all_refuse(in, out, 2, geometry(4, {kMax, kMax, kMax, kMax, kMax, kMax, kMax, kMax}),
                    "eight dimensions of 2^31-1");
  Bytes shorter(95);
  expect_all_refuse(in, MutableByteSpan(shorter), 2, geometry(4, {4, 6}), "output shorter than the input");
  expect_all_refuse(ByteSpan(in).first(95), MutableByteSpan(out).first(95), 2, geometry(4, {4, 6}),
                    "95 bytes for 24 items of 4");
  expect_all_refuse({}, {}, 2, geometry(4, {4, 6}), "empty buffers");
}

TEST(NdcellHostile, EveryCellSizeOnAwkwardShapesStaysInsideTheBlock) {
  // Each meta either decodes (writing every byte: the output starts as 0xCD and
  // must come out as the NDCELL order of a known block) or is refused.
  for (const auto& shape : {std::vector<int32_t>{7}, std::vector<int32_t>{3, 5}, std::vector<int32_t>{1, 7, 2},
                            std::vector<int32_t>{2, 3, 1, 5}}) {
    BlockGeometry g;
    g.typesize = 1;
    g.ndim = int32_t(shape.size());
    size_t items = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      g.blockshape[d] = shape[d];
      items *= size_t(shape[d]);
    }
    Bytes block(items);
    for (size_t i = 0; i < items; ++i) block[i] = uint8_t(i + 1);
    for (int meta = 0; meta < 256; ++meta) {
      Bytes cells(items, 0xCD), back(items, 0xCD);
      try {
        ndcell_encode(block, cells, uint8_t(meta), g);
      } catch (const FormatError&) {
        EXPECT_THROW(ndcell_decode(block, back, uint8_t(meta), g), FormatError) << meta;
        continue;
      }
      ndcell_decode(cells, back, uint8_t(meta), g);
      EXPECT_EQ(back, block) << "meta " << meta << ", ndim " << g.ndim;
      try {
        ndmean_decode(block, back, uint8_t(meta), g);
      } catch (const FormatError&) {
      }
    }
  }
}

}  // namespace
}  // namespace blosc2fs
