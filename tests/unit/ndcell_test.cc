// NDCELL (filter 32) and NDMEAN (filter 33) on hand-made blocks: answers worked
// out from plugin-codecs.md §4-§5 by hand, c-blosc2's quirk, hostile geometry.
#include "ndcell.h"

#include <gtest/gtest.h>

#include "block_geometries.h"

#include <cstring>

#include "error.h"

namespace blosc2fs {
namespace {

using testing::geometry;

// A 3 x 5 block of items 0..14 in cells of 2 x 2, written cell after cell in
// row-major order over the 2 x 3 cell grid, each cell's rows clipped at the
// block's edge: (0,0) 0 1 5 6 | (0,1) 2 3 7 8 | (0,2) 4 9 | (1,0) 10 11 |
// (1,1) 12 13 | (1,2) 14.
const std::vector<int> kCellOrder = {0, 1, 5, 6, 2, 3, 7, 8, 4, 9, 10, 11, 12, 13, 14};

template <class T>
Bytes items(const std::vector<T>& values) {
  Bytes out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(Ndcell, TwoDimensionalCellsKnownAnswer) {
  std::vector<uint8_t> row_major(15);
  for (int k = 0; k < 15; ++k) row_major[size_t(k)] = uint8_t(k);
  std::vector<uint8_t> cells(kCellOrder.begin(), kCellOrder.end());
  Bytes out(15);
  ndcell_encode(items(row_major), out, 2, geometry(1, {3, 5}));
  EXPECT_EQ(out, items(cells));
  ndcell_decode(items(cells), out, 2, geometry(1, {3, 5}));
  EXPECT_EQ(out, items(row_major));
}

TEST(Ndcell, TypesizeMovesWholeItems) {
  std::vector<uint16_t> row_major(15), cells;
  for (int k = 0; k < 15; ++k) row_major[size_t(k)] = uint16_t(1000 + 257 * k);
  for (int k : kCellOrder) cells.push_back(uint16_t(1000 + 257 * k));
  Bytes out(30);
  ndcell_decode(items(cells), out, 2, geometry(2, {3, 5}));
  EXPECT_EQ(out, items(row_major));
  ndcell_encode(items(row_major), out, 2, geometry(2, {3, 5}));
  EXPECT_EQ(out, items(cells));
}

TEST(Ndcell, OneAndThreeDimensionsRoundTrip) {
  // 1-D: cells of 4 are the items in order.
  Bytes seq(10);
  for (int k = 0; k < 10; ++k) seq[size_t(k)] = uint8_t(k);
  Bytes out(10);
  ndcell_encode(seq, out, 4, geometry(1, {10}));
  EXPECT_EQ(out, seq);
  // 3-D 3 x 4 x 5, cells of 2: a permutation that decodes back.
  Bytes block(60), encoded(60), decoded(60);
  for (int k = 0; k < 60; ++k) block[size_t(k)] = uint8_t(k);
  ndcell_encode(block, encoded, 2, geometry(1, {3, 4, 5}));
  EXPECT_NE(encoded, block);
  // The first cell is items (0,0,0) (0,0,1) (0,1,0) (0,1,1) (1,0,0) (1,0,1) (1,1,0) (1,1,1).
  EXPECT_EQ(Bytes(encoded.begin(), encoded.begin() + 8), (Bytes{0, 1, 5, 6, 20, 21, 25, 26}));
  ndcell_decode(encoded, decoded, 2, geometry(1, {3, 4, 5}));
  EXPECT_EQ(decoded, block);
}

TEST(Ndmean, EveryCellBecomesItsMeanAndDecodesLikeNdcell) {
  std::vector<float> row_major(15), means;
  for (int k = 0; k < 15; ++k) row_major[size_t(k)] = float(k);
  // Means of the cells above: (0+1+5+6)/4 = 3, (2+3+7+8)/4 = 5, (4+9)/2 = 6.5,
  // (10+11)/2 = 10.5, (12+13)/2 = 12.5, 14.
  means = {3, 3, 3, 3, 5, 5, 5, 5, 6.5f, 6.5f, 10.5f, 10.5f, 12.5f, 12.5f, 14};
  Bytes out(60);
  ndmean_encode(items(row_major), out, 2, geometry(4, {3, 5}));
  EXPECT_EQ(out, items(means));
  // Backward is the NDCELL scatter of what is stored.
  std::vector<float> scattered = {3, 3, 5, 5, 6.5f, 3, 3, 5, 5, 6.5f, 10.5f, 10.5f, 12.5f, 12.5f, 14};
  ndmean_decode(items(means), out, 2, geometry(4, {3, 5}));
  EXPECT_EQ(out, items(scattered));
  // Doubles too; the cell size is capped by the block (meta 8 on a 3 x 5 block: cells of 3 x 5).
  std::vector<double> d(15, 2.5);
  Bytes out8(120);
  ndmean_decode(items(d), out8, 8, geometry(8, {3, 5}));
  EXPECT_EQ(out8, items(d));
}

TEST(Ndmean, ABlockThatCBlosc2CannotDecodeFails) {
  // 2 x 40 with meta 4: cells are min(4, b[d]) = 2 x 4, and c-blosc2 offsets
  // cell origins by cs[0] = 2 instead of 4, so its final check fails (§5).
  Bytes in(2 * 40 * 4), out(in.size());
  EXPECT_THROW(ndmean_decode(in, out, 4, geometry(4, {2, 40})), FormatError);
}

TEST(Ndcell, HostileGeometryIsAnErrorNeverUndefined) {
  Bytes in(64), out(64);
  EXPECT_THROW(ndcell_decode(in, out, 0, geometry(1, {8, 8})), FormatError);      // cell 0
  EXPECT_THROW(ndcell_decode(in, out, 9, geometry(1, {8, 8})), FormatError);      // 81 > 64 items
  EXPECT_THROW(ndcell_decode(in, out, 2, geometry(1, {8, 4})), FormatError);      // 32 items, 64 bytes
  EXPECT_THROW(ndcell_decode(in, out, 2, geometry(0, {8, 8})), FormatError);      // typesize 0
  EXPECT_THROW(ndcell_decode(in, out, 2, BlockGeometry{1, 0, {}}), FormatError);  // no b2nd block shape
  EXPECT_THROW(ndcell_decode(in, out, 2, geometry(1, {-8, -8})), FormatError);
  EXPECT_THROW(ndcell_decode(in, out, 2, geometry(1, {0, 8})), FormatError);
  // 255^8 overflows 64 bits: refused, not wrapped.
  Bytes one(1), one_out(1);
  EXPECT_THROW(ndcell_decode(one, one_out, 255, geometry(1, {1, 1, 1, 1, 1, 1, 1, 1})), FormatError);
  Bytes short_out(63);
  EXPECT_THROW(ndcell_decode(in, short_out, 2, geometry(1, {8, 8})), FormatError);  // sizes differ
  // NDMEAN: meta is int8 and must be > 0; typesize > 0.
  Bytes f(64 * 4), f_out(f.size());
  EXPECT_THROW(ndmean_decode(f, f_out, 0, geometry(4, {8, 8})), FormatError);
  EXPECT_THROW(ndmean_decode(f, f_out, 200, geometry(4, {8, 8})), FormatError);  // -56 as int8
  EXPECT_THROW(ndmean_decode(f, f_out, 2, geometry(0, {8, 8})), FormatError);
  Bytes halves(64 * 2), halves_out(64 * 2);
  EXPECT_THROW(ndmean_encode(halves, halves_out, 2, geometry(2, {8, 8})), FormatError);  // typesize 2
}

}  // namespace
}  // namespace blosc2fs
