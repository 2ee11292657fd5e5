// NDLZ (plugin-codecs.md §2), written from the format facts.
//
// A stream is `u8 ndim (2) | i32 b0 | i32 b1` and then one token per C x C cell of
// the b0 x b1 byte block, cells in row-major order. Every back-reference points
// into the compressed stream itself, at bytes an earlier cell stored literally, and
// is relative to the referring token's position. Cells at the block's right and
// bottom edges are clipped; their bytes are read with the clipped row length.
#include "ndlz.h"
#include "error.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

namespace blosc2fs {

namespace {

constexpr size_t kHeaderSize = 9;
constexpr uint8_t kNdim = 2;
constexpr uint8_t kTokenLiteral = 0x00;
constexpr uint8_t kTokenConstant = 0x40;
constexpr uint8_t kTokenCellMatch = 0xC0;
constexpr size_t kMaxOffset = 0xFFFF;

// Rows of a clipped cell: C, or the remainder of the block's edge.
int64_t clipped(int64_t index, int64_t count, int64_t extent, int cell) {
  return index == count - 1 && extent % cell ? extent % cell : cell;
}

class StreamReader {
 public:
  StreamReader(ByteSpan in, int cell) : in_(in), cell_(cell) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw FormatError("ndlz (" + str(cell_) + "x" + str(cell_) + " cells): " + why);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void outside(int64_t pos, int64_t n, const char* what) const {
    fail(std::string(what) + " of " + str(n) + " bytes at stream offset " + str(pos) + " lies outside its " +
         str(int64_t(in_.size())) + " bytes");
  }
  // Bytes [pos, pos + n) of the stream, which must lie inside it. The check is
  // on every token: the message is built only on the cold path.
  const uint8_t* at(int64_t pos, int64_t n, const char* what) const {
    if (pos < 0 || n < 0 || pos > int64_t(in_.size()) - n) [[unlikely]]
      outside(pos, n, what);
    return in_.data() + pos;
  }
  // The stream position `token_at - offset`, offset being the u16 at `pos`.
  int64_t reference_at(int64_t pos, int64_t token_at) const {
    return token_at - load_le16(at(pos, 2, "back-reference offset"));
  }

 private:
  ByteSpan in_;
  int cell_;
};

// Rows of a cell assembled from references and literals, C bytes apart.
using CellBuffer = std::array<uint8_t, 64>;

// Row-match tokens fill every row of `buffer` with a stride of C; the caller then
// reads it with the clipped row length p1, as c-blosc2 does for edge cells.
void decode_rows_4x4(const StreamReader& r, uint8_t token, int64_t token_at, int64_t& ip, CellBuffer& buffer) {
  auto literal_row = [&](int row) {
    std::memcpy(buffer.data() + row * 4, r.at(ip, 4, "literal row"), 4);
    ip += 4;
  };
  if (token >= 0xE0) {  // three rows from one reference, the fourth literal
    static constexpr int kRows[4][3] = {{1, 2, 3}, {0, 1, 2}, {0, 1, 3}, {0, 2, 3}};
    const int* rows = kRows[(token >> 3) - 28];
    const uint8_t* src = r.at(r.reference_at(ip, token_at), 12, "matched rows");
    ip += 2;
    for (int k = 0; k < 3; ++k) std::memcpy(buffer.data() + rows[k] * 4, src + 4 * k, 4);
    literal_row(6 - rows[0] - rows[1] - rows[2]);
    return;
  }
  if (token >= 0x80 && token <= 0xBF) {  // two rows from one reference, the others literal
    // i == j is possible (e.g. 0x81): both copies land on one row, three are literal.
    const int i = token == 0x80 ? 2 : (token - 0x80) >> 5;
    const int j = token == 0x80 ? 3 : ((token - 0x80) >> 3) - 4 * i;
    const uint8_t* src = r.at(r.reference_at(ip, token_at), 8, "matched rows");
    ip += 2;
    std::memcpy(buffer.data() + i * 4, src, 4);
    std::memcpy(buffer.data() + j * 4, src + 4, 4);
    for (int k = 0; k < 4; ++k)
      if (k != i && k != j) literal_row(k);
    return;
  }
  if (token >= 40 && token <= 63) {  // rows 0 and j from one reference, the other two from another
    const int j = (token - 32) >> 3;
    const int l = j == 1 ? 2 : 1, m = j == 3 ? 2 : 3;
    const uint8_t* first = r.at(r.reference_at(ip, token_at), 8, "matched rows");
    const uint8_t* second = r.at(r.reference_at(ip + 2, token_at), 8, "matched rows");
    ip += 4;
    std::memcpy(buffer.data(), first, 4);
    std::memcpy(buffer.data() + j * 4, first + 4, 4);
    std::memcpy(buffer.data() + l * 4, second, 4);
    std::memcpy(buffer.data() + m * 4, second + 4, 4);
    return;
  }
  r.fail("unknown token " + str(token) + " at stream offset " + str(token_at));
}

void decode_rows_8x8(const StreamReader& r, uint8_t token, int64_t token_at, int64_t& ip, CellBuffer& buffer) {
  const int kind = token >> 3, first = token & 7;
  const int matched = kind == 21 ? 3 : kind == 17 ? 2 : 0;
  if (matched == 0) r.fail("unknown token " + str(token) + " at stream offset " + str(token_at));
  if (first + matched > 8)
    r.fail("token " + str(token) + " matches rows " + str(first) + ".." + str(first + matched - 1) +
           " of an 8-row cell");
  const uint8_t* src = r.at(r.reference_at(ip, token_at), 8 * matched, "matched rows");
  ip += 2;
  std::memcpy(buffer.data() + first * 8, src, size_t(8 * matched));
  for (int row = 0; row < 8; ++row) {
    if (row >= first && row < first + matched) continue;
    std::memcpy(buffer.data() + row * 8, r.at(ip, 8, "literal row"), 8);
    ip += 8;
  }
}

// Decodes the token at `ip` into the bytes of a p0 x p1 cell, read p1 bytes per
// row; advances `ip` past the token and everything it carries.
const uint8_t* decode_cell(const StreamReader& r, int cell, int64_t& ip, int64_t p0, int64_t p1, CellBuffer& buffer) {
  const int64_t token_at = ip;
  const uint8_t token = *r.at(token_at, 1, "token");
  ip = token_at + 1;
  if (token == kTokenLiteral) {
    const uint8_t* bytes = r.at(ip, p0 * p1, "literal cell");
    ip += p0 * p1;
    return bytes;
  }
  if (token == kTokenCellMatch) {
    const uint8_t* bytes = r.at(r.reference_at(ip, token_at), p0 * p1, "matched cell");
    ip += 2;
    return bytes;
  }
  if (token == kTokenConstant) {
    buffer.fill(*r.at(ip, 1, "constant cell value"));
    ip += 1;
    return buffer.data();
  }
  if (cell == 4)
    decode_rows_4x4(r, token, token_at, ip, buffer);
  else
    decode_rows_8x8(r, token, token_at, ip, buffer);
  return buffer.data();
}

// Every cell of a b0 x b1 block, in row-major order, into `out`; full cells
// are copied with rows of a size known at compile time.
template <int C>
void decode_cells(const StreamReader& r, int64_t b0, int64_t b1, uint8_t* out) {
  const int64_t cell_rows = (b0 + C - 1) / C, cell_columns = (b1 + C - 1) / C;
  int64_t ip = kHeaderSize;
  CellBuffer buffer{};
  for (int64_t i0 = 0; i0 < cell_rows; ++i0) {
    const int64_t p0 = clipped(i0, cell_rows, b0, C);
    for (int64_t i1 = 0; i1 < cell_columns; ++i1) {
      const int64_t p1 = clipped(i1, cell_columns, b1, C);
      uint8_t* origin = out + i0 * C * b1 + i1 * C;
      if (p0 == C && p1 == C) {
        // The common tokens of full cells inline; the rest through decode_cell.
        const uint8_t token = *r.at(ip, 1, "token");
        const uint8_t* bytes;
        if (token == kTokenLiteral) {
          bytes = r.at(ip + 1, C * C, "literal cell");
          ip += 1 + C * C;
        } else if (token == kTokenConstant) {
          const uint8_t value = *r.at(ip + 1, 1, "constant cell value");
          ip += 2;
          for (int row = 0; row < C; ++row) std::memset(origin + row * b1, value, C);
          continue;
        } else if (token == kTokenCellMatch) {
          bytes = r.at(r.reference_at(ip + 1, ip), C * C, "matched cell");
          ip += 3;
        } else {
          bytes = decode_cell(r, C, ip, C, C, buffer);
        }
        for (int row = 0; row < C; ++row) std::memcpy(origin + row * b1, bytes + row * C, C);
      } else {
        const uint8_t* bytes = decode_cell(r, C, ip, p0, p1, buffer);
        for (int64_t row = 0; row < p0; ++row) std::memcpy(origin + row * b1, bytes + row * p1, size_t(p1));
      }
    }
  }
}

// Writes one stream. Full cells are coded, cheapest first, as a constant, a match
// of an earlier literal cell, matches of some of their rows, or literally; the
// hash tables hold where earlier full literal cells, and each run of two and three
// of their rows, sit in the stream (the only bytes c-blosc2's encoder refers to).
// Once a write does not fit, nothing more is written and overflowed() is true.
class Encoder {
 public:
  Encoder(MutableByteSpan out, size_t limit, int cell)
      : out_(out), limit_(limit), cell_(size_t(cell)), cell_size_(size_t(cell) * size_t(cell)) {}

  void put_header(int32_t b0, int32_t b1) {
    uint8_t header[kHeaderSize] = {kNdim};
    store_le32(header + 1, uint32_t(b0));
    store_le32(header + 5, uint32_t(b1));
    put_bytes(header, kHeaderSize);
  }
  bool overflowed() const { return overflowed_; }
  size_t size() const { return op_; }

  // A clipped edge cell is always literal, as c-blosc2's own encoder writes it.
  void put_edge_cell(const uint8_t* bytes, size_t n) { put_literal(bytes, n); }

  void put_full_cell(const uint8_t* cell) {
    token_at_ = op_;
    if (std::memcmp(cell, cell + 1, cell_size_ - 1) == 0) return put({kTokenConstant, cell[0]});
    if (const uint16_t offset = find(cells_, cell, cell_size_)) return put_match(kTokenCellMatch, offset);
    if (cell_ == 4 ? put_rows_4x4(cell) : put_rows_8x8(cell)) return;
    const size_t literal_at = op_ + 1;
    put_literal(cell, cell_size_);
    if (overflowed_) return;
    remember(cells_, literal_at, cell_size_);
    for (size_t row = 0; row + 1 < cell_; ++row) remember(pairs_, literal_at + row * cell_, 2 * cell_);
    for (size_t row = 0; row + 2 < cell_; ++row) remember(triples_, literal_at + row * cell_, 3 * cell_);
  }

 private:
  static constexpr int kHashBits = 12;
  using Table = std::array<size_t, size_t(1) << kHashBits>;  // stream positions; 0: none

  static size_t hash(const uint8_t* bytes, size_t n) {
    uint64_t h = n;
    for (size_t k = 0; k < n; k += 4) h = (h ^ load_le32(bytes + k)) * 0x9E3779B97F4A7C15ull;
    return size_t(h >> (64 - kHashBits));
  }
  void remember(Table& table, size_t pos, size_t n) { table[hash(out_.data() + pos, n)] = pos; }
  // The offset from the current token back to an earlier copy of `bytes`, or 0.
  uint16_t find(const Table& table, const uint8_t* bytes, size_t n) const {
    const size_t pos = table[hash(bytes, n)];
    if (pos == 0 || token_at_ - pos > kMaxOffset || std::memcmp(out_.data() + pos, bytes, n) != 0) return 0;
    return uint16_t(token_at_ - pos);
  }

  void put_bytes(const uint8_t* bytes, size_t n) {
    if (overflowed_ || limit_ - op_ < n) {
      overflowed_ = true;
      return;
    }
    std::memcpy(out_.data() + op_, bytes, n);
    op_ += n;
  }
  void put(std::initializer_list<uint8_t> bytes) { put_bytes(bytes.begin(), bytes.size()); }
  void put_match(uint8_t token, uint16_t offset) { put({token, uint8_t(offset), uint8_t(offset >> 8)}); }
  void put_literal(const uint8_t* bytes, size_t n) {
    put({kTokenLiteral});
    put_bytes(bytes, n);
  }

  // The 4-byte rows `rows` of a 4x4 cell, one after another.
  static std::array<uint8_t, 12> gather(const uint8_t* cell, std::initializer_list<int> rows) {
    std::array<uint8_t, 12> bytes{};
    size_t at = 0;
    for (int row : rows) std::memcpy(bytes.data() + 4 * at++, cell + 4 * row, 4);
    return bytes;
  }
  // Whether some rows matched and the cell was written.
  bool put_rows_4x4(const uint8_t* cell) {
    for (int j = 1; j <= 3; ++j) {  // token 32 + 8j: rows 0 and j from one place, the other two from another
      const int l = j == 1 ? 2 : 1, m = j == 3 ? 2 : 3;
      const uint16_t first = find(pairs_, gather(cell, {0, j}).data(), 8);
      const uint16_t second = first ? find(pairs_, gather(cell, {l, m}).data(), 8) : 0;
      if (second) {
        put({uint8_t(32 + 8 * j), uint8_t(first), uint8_t(first >> 8), uint8_t(second), uint8_t(second >> 8)});
        return true;
      }
    }
    struct Rows {
      uint8_t token;
      int matched[3];  // -1: unused
      int literal[3];  // -1: unused
    };
    // Three rows from one place, the fourth literal; then two rows, tokens
    // 0x80 | i << 5 | j << 3 for i in {0, 1}, and 0x80 alone for rows 2 and 3.
    static constexpr Rows kRowSets[] = {
        {0xE0, {1, 2, 3}, {0, -1, -1}}, {0xE8, {0, 1, 2}, {3, -1, -1}}, {0xF0, {0, 1, 3}, {2, -1, -1}},
        {0xF8, {0, 2, 3}, {1, -1, -1}}, {0x88, {0, 1, -1}, {2, 3, -1}}, {0x90, {0, 2, -1}, {1, 3, -1}},
        {0x98, {0, 3, -1}, {1, 2, -1}}, {0xB0, {1, 2, -1}, {0, 3, -1}}, {0xB8, {1, 3, -1}, {0, 2, -1}},
        {0x80, {2, 3, -1}, {0, 1, -1}}};
    for (const Rows& set : kRowSets) {
      const bool three = set.matched[2] >= 0;
      const auto rows = three ? gather(cell, {set.matched[0], set.matched[1], set.matched[2]})
                              : gather(cell, {set.matched[0], set.matched[1]});
      const uint16_t offset = find(three ? triples_ : pairs_, rows.data(), three ? 12 : 8);
      if (offset == 0) continue;
      put_match(set.token, offset);
      for (int row : set.literal)
        if (row >= 0) put_bytes(cell + 4 * row, 4);
      return true;
    }
    return false;
  }
  // Token 21 << 3 | r: rows r..r+2 from one place; 17 << 3 | r: rows r, r+1. The other rows are literal.
  bool put_rows_8x8(const uint8_t* cell) {
    for (size_t run : {3, 2}) {
      for (size_t first = 0; first + run <= 8; ++first) {
        const uint16_t offset = find(run == 3 ? triples_ : pairs_, cell + 8 * first, 8 * run);
        if (offset == 0) continue;
        put_match(uint8_t((run == 3 ? 21 : 17) << 3 | first), offset);
        put_bytes(cell, 8 * first);
        put_bytes(cell + 8 * (first + run), 8 * (8 - first - run));
        return true;
      }
    }
    return false;
  }

  MutableByteSpan out_;
  size_t limit_;
  size_t cell_, cell_size_;
  size_t op_ = 0, token_at_ = 0;
  bool overflowed_ = false;
  Table cells_{}, pairs_{}, triples_{};
};

}  // namespace

void ndlz_decode(ByteSpan in, MutableByteSpan out, uint8_t cell) {
  if (cell != 4 && cell != 8) throw FormatError("ndlz: cell size " + str(cell) + " (codec meta must be 4 or 8)");
  const StreamReader r(in, cell);
  if (in.size() < kHeaderSize) r.fail("stream of " + str(int64_t(in.size())) + " bytes, shorter than its header");
  if (in[0] != kNdim) r.fail("ndim " + str(in[0]) + " (only 2-D blocks exist)");
  // Both are int32, so their product fits in int64.
  const int64_t b0 = int32_t(load_le32(in.data() + 1));
  const int64_t b1 = int32_t(load_le32(in.data() + 5));
  if (b0 < 0 || b1 < 0) r.fail("negative block shape " + str(b0) + " x " + str(b1));
  if (b0 * b1 != int64_t(out.size()))
    r.fail("block shape " + str(b0) + " x " + str(b1) + " holds " + str(b0 * b1) + " bytes, the block " +
           str(int64_t(out.size())));
  if (out.empty()) return;  // a 0 x N block: no cells
  // The cells tile the block exactly (the edge ones clipped), so every output
  // byte is written: no clearing first.
  if (cell == 4)
    decode_cells<4>(r, b0, b1, out.data());
  else
    decode_cells<8>(r, b0, b1, out.data());
}

size_t ndlz_encode(ByteSpan in, int32_t b0, int32_t b1, uint8_t cell, MutableByteSpan out) {
  if (cell != 4 && cell != 8) throw FormatError("ndlz: cell size " + str(cell) + " (codec meta must be 4 or 8)");
  if (b0 < 0 || b1 < 0 || int64_t(b0) * b1 != int64_t(in.size()))
    throw FormatError("ndlz: block shape " + str(b0) + " x " + str(b1) + " for " + str(int64_t(in.size())) + " bytes");
  if (in.size() <= kHeaderSize) return 0;  // the header alone is no smaller
  // The stream must come out smaller than the block. The encoder holds 96 KiB of
  // hash tables: off the stack, which a FUSE worker thread may have little of.
  auto encoder = std::make_unique<Encoder>(out, std::min(out.size(), in.size() - 1), cell);
  encoder->put_header(b0, b1);
  CellBuffer bytes{};
  const int64_t cell_rows = (b0 + cell - 1) / cell, cell_columns = (b1 + cell - 1) / cell;
  for (int64_t i0 = 0; i0 < cell_rows && !encoder->overflowed(); ++i0) {
    const int64_t p0 = clipped(i0, cell_rows, b0, cell);
    for (int64_t i1 = 0; i1 < cell_columns && !encoder->overflowed(); ++i1) {
      const int64_t p1 = clipped(i1, cell_columns, b1, cell);
      const int64_t origin = i0 * cell * b1 + i1 * cell;
      for (int64_t row = 0; row < p0; ++row)
        std::memcpy(bytes.data() + row * p1, in.data() + origin + row * b1, size_t(p1));
      if (p0 == cell && p1 == cell)
        encoder->put_full_cell(bytes.data());
      else
        encoder->put_edge_cell(bytes.data(), size_t(p0 * p1));
    }
  }
  if (encoder->overflowed()) return 0;
  return encoder->size();
}

}  // namespace blosc2fs
