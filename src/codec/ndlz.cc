// NDLZ (plugin-codecs.md §2), written from the format facts.
//
// A stream is `u8 ndim (2) | i32 b0 | i32 b1` and then one token per C x C cell of
// the b0 x b1 byte block, cells in row-major order. Every back-reference points
// into the compressed stream itself, at bytes an earlier literal cell stored, and
// is relative to the referring token's position. Cells at the block's right and
// bottom edges are clipped; their bytes are read with the clipped row length.
#include "ndlz.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace blosc2fs {

namespace {

constexpr size_t kHeaderSize = 9;
constexpr uint8_t kTokenLiteral = 0x00;
constexpr uint8_t kTokenConstant = 0x40;
constexpr uint8_t kTokenCellMatch = 0xC0;

std::string str(int64_t v) { return std::to_string(v); }

class StreamReader {
 public:
  StreamReader(ByteSpan in, int cell) : in_(in), cell_(cell) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw FormatError("ndlz (" + str(cell_) + "x" + str(cell_) + " cells): " + why);
  }
  // Bytes [pos, pos + n) of the stream, which must lie inside it.
  const uint8_t* at(int64_t pos, int64_t n, const char* what) const {
    if (pos < 0 || n < 0 || pos > int64_t(in_.size()) - n)
      fail(std::string(what) + " of " + str(n) + " bytes at stream offset " + str(pos) + " lies outside its " +
           str(int64_t(in_.size())) + " bytes");
    return in_.data() + pos;
  }
  uint16_t offset_at(int64_t pos) const { return load_le16(at(pos, 2, "back-reference offset")); }

 private:
  ByteSpan in_;
  int cell_;
};

// Rows of a cell assembled from references and literals, C bytes apart.
using CellBuffer = std::array<uint8_t, 64>;

// Decodes the token at `cur` into a cell whose bytes are then read p0 rows of p1
// bytes apart; returns where they are and advances `ip` past the token's bytes.
const uint8_t* decode_cell(const StreamReader& r, int cell, int64_t& ip, int64_t p0, int64_t p1, CellBuffer& buffer) {
  const int64_t cur = ip;
  const uint8_t token = *r.at(cur, 1, "token");
  ip = cur + 1;
  if (token == kTokenLiteral) {
    const uint8_t* bytes = r.at(ip, p0 * p1, "literal cell");
    ip += p0 * p1;
    return bytes;
  }
  if (token == kTokenCellMatch) {
    const int64_t ref = cur - r.offset_at(ip);
    ip += 2;
    return r.at(ref, p0 * p1, "matched cell");
  }
  if (token == kTokenConstant) {
    buffer.fill(*r.at(ip, 1, "constant cell value"));
    ip += 1;
    return buffer.data();
  }
  auto literal_row = [&](int row, int length) {
    std::memcpy(buffer.data() + row * length, r.at(ip, length, "literal row"), size_t(length));
    ip += length;
  };
  if (cell == 4) {
    if (token >= 0xE0) {  // three rows from one reference, the fourth literal
      const int64_t ref = cur - r.offset_at(ip);
      ip += 2;
      static constexpr int kRows[4][3] = {{1, 2, 3}, {0, 1, 2}, {0, 1, 3}, {0, 2, 3}};
      const int* rows = kRows[(token >> 3) - 28];
      const uint8_t* src = r.at(ref, 12, "matched rows");
      for (int k = 0; k < 3; ++k) std::memcpy(buffer.data() + rows[k] * 4, src + 4 * k, 4);
      for (int l = 0; l < 4; ++l) {
        if (l != rows[0] && l != rows[1] && l != rows[2]) {
          literal_row(l, 4);
          break;
        }
      }
      return buffer.data();
    }
    if (token >= 0x80 && token <= 0xBF) {  // two rows from one reference, the others literal
      const int64_t ref = cur - r.offset_at(ip);
      ip += 2;
      const int i = token == 0x80 ? 2 : (token - 128) >> 5;
      const int j = token == 0x80 ? 3 : ((token - 128) >> 3) - 4 * i;
      const uint8_t* src = r.at(ref, 8, "matched rows");
      std::memcpy(buffer.data() + i * 4, src, 4);
      std::memcpy(buffer.data() + j * 4, src + 4, 4);
      for (int k = 0; k < 4; ++k)
        if (k != i && k != j) literal_row(k, 4);
      return buffer.data();
    }
    if (token >= 40 && token <= 63) {  // rows 0 and j from one reference, the other two from another
      const int64_t ref1 = cur - r.offset_at(ip);
      const int64_t ref2 = cur - r.offset_at(ip + 2);
      ip += 4;
      const int j = (token - 32) >> 3;
      int l = -1, m = -1;
      for (int k = 1; k < 4; ++k) {
        if (k == j) continue;
        (l < 0 ? l : m) = k;
      }
      const uint8_t* src1 = r.at(ref1, 8, "matched rows");
      const uint8_t* src2 = r.at(ref2, 8, "matched rows");
      std::memcpy(buffer.data(), src1, 4);
      std::memcpy(buffer.data() + j * 4, src1 + 4, 4);
      std::memcpy(buffer.data() + l * 4, src2, 4);
      std::memcpy(buffer.data() + m * 4, src2 + 4, 4);
      return buffer.data();
    }
  } else {
    const int kind = token >> 3, row = token & 7;
    const int matched = kind == 21 ? 3 : kind == 17 ? 2 : 0;
    if (matched > 0) {  // `matched` rows from row `row` on from one reference, the others literal
      if (row + matched > 8) r.fail("matched rows " + str(row) + ".." + str(row + matched - 1) + " of an 8-row cell");
      const int64_t ref = cur - r.offset_at(ip);
      ip += 2;
      std::memcpy(buffer.data() + row * 8, r.at(ref, 8 * matched, "matched rows"), size_t(8 * matched));
      for (int l = 0; l < 8; ++l)
        if (l < row || l >= row + matched) literal_row(l, 8);
      return buffer.data();
    }
  }
  r.fail("unknown token " + str(token) + " at stream offset " + str(cur));
}

}  // namespace

void ndlz_decode(ByteSpan in, MutableByteSpan out, uint8_t cell) {
  if (cell != 4 && cell != 8) throw FormatError("ndlz: cell size " + str(cell) + " (codec meta must be 4 or 8)");
  const StreamReader r(in, cell);
  if (in.size() < kHeaderSize) r.fail("stream of " + str(int64_t(in.size())) + " bytes, shorter than its header");
  if (in[0] != 2) r.fail("ndim " + str(in[0]) + " (only 2-D blocks exist)");
  const int64_t b0 = int32_t(load_le32(in.data() + 1));
  const int64_t b1 = int32_t(load_le32(in.data() + 5));
  if (b0 < 0 || b1 < 0) r.fail("negative block shape " + str(b0) + " x " + str(b1));
  if (b0 * b1 != int64_t(out.size()))
    r.fail("block shape " + str(b0) + " x " + str(b1) + " holds " + str(b0 * b1) + " bytes, the block " +
           str(int64_t(out.size())));
  if (out.empty()) return;  // a 0 x N block: no cells
  std::memset(out.data(), 0, out.size());
  const int64_t rows_of_cells = (b0 + cell - 1) / cell, columns_of_cells = (b1 + cell - 1) / cell;
  int64_t ip = kHeaderSize;
  CellBuffer buffer{};
  for (int64_t i0 = 0; i0 < rows_of_cells; ++i0) {
    const int64_t p0 = i0 == rows_of_cells - 1 && b0 % cell ? b0 % cell : cell;
    for (int64_t i1 = 0; i1 < columns_of_cells; ++i1) {
      const int64_t p1 = i1 == columns_of_cells - 1 && b1 % cell ? b1 % cell : cell;
      const uint8_t* bytes = decode_cell(r, cell, ip, p0, p1, buffer);
      const int64_t origin = i0 * cell * b1 + i1 * cell;
      for (int64_t row = 0; row < p0; ++row)
        std::memcpy(out.data() + origin + row * b1, bytes + row * p1, size_t(p1));
    }
  }
}

size_t ndlz_encode(ByteSpan in, int32_t b0, int32_t b1, uint8_t cell, MutableByteSpan out) {
  if (cell != 4 && cell != 8) throw FormatError("ndlz: cell size " + str(cell) + " (codec meta must be 4 or 8)");
  if (b0 < 1 || b1 < 1 || int64_t(b0) * b1 != int64_t(in.size()))
    throw FormatError("ndlz: block shape " + str(b0) + " x " + str(b1) + " for " + str(int64_t(in.size())) + " bytes");
  const size_t limit = std::min(out.size(), in.size() - 1);  // the stream must come out smaller
  if (limit < kHeaderSize) return 0;
  size_t op = 0;
  out[op++] = 2;
  store_le32(out.data() + op, uint32_t(b0));
  store_le32(out.data() + op + 4, uint32_t(b1));
  op += 8;
  const size_t cell_size = size_t(cell) * cell;
  // Where earlier full literal cells were stored, by a hash of their bytes.
  constexpr int kHashBits = 12;
  std::vector<int64_t> seen(size_t(1) << kHashBits, -1);
  CellBuffer bytes{};
  const int64_t rows_of_cells = (b0 + cell - 1) / cell, columns_of_cells = (b1 + cell - 1) / cell;
  for (int64_t i0 = 0; i0 < rows_of_cells; ++i0) {
    const int64_t p0 = i0 == rows_of_cells - 1 && b0 % cell ? b0 % cell : cell;
    for (int64_t i1 = 0; i1 < columns_of_cells; ++i1) {
      const int64_t p1 = i1 == columns_of_cells - 1 && b1 % cell ? b1 % cell : cell;
      const size_t n = size_t(p0 * p1);
      const int64_t origin = i0 * cell * b1 + i1 * cell;
      for (int64_t row = 0; row < p0; ++row)
        std::memcpy(bytes.data() + row * p1, in.data() + origin + row * b1, size_t(p1));
      const size_t token_at = op;
      if (std::memcmp(bytes.data(), bytes.data() + 1, n - 1) == 0) {
        if (limit - op < 2) return 0;
        out[op++] = kTokenConstant;
        out[op++] = bytes[0];
        continue;
      }
      const bool full = n == cell_size;
      uint32_t hash = 2166136261u;
      for (size_t k = 0; full && k < n; ++k) hash = (hash ^ bytes[k]) * 16777619u;
      int64_t& slot = seen[hash >> (32 - kHashBits)];
      if (full && slot >= 0 && int64_t(token_at) - slot <= 0xFFFF &&
          std::memcmp(out.data() + slot, bytes.data(), n) == 0) {
        if (limit - op < 3) return 0;
        out[op++] = kTokenCellMatch;
        const uint16_t offset = uint16_t(int64_t(token_at) - slot);
        out[op++] = uint8_t(offset);
        out[op++] = uint8_t(offset >> 8);
        continue;
      }
      if (limit - op < 1 + n) return 0;
      out[op++] = kTokenLiteral;
      if (full) slot = int64_t(op);
      std::memcpy(out.data() + op, bytes.data(), n);
      op += n;
    }
  }
  return op;
}

}  // namespace blosc2fs
