// b2nd/caterva metalayers, the N-d chunk layout, and .npy headers.
#include "b2nd.h"
#include "b2nd_partition.h"
#include "ndcell.h"
#include "read_pieces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <tuple>

#include "fixtures.h"

namespace blosc2fs {
namespace {

using testing::TempDir;

// Gathers chunk n of a C-order array into the stored chunk/block layout, item by
// item, straight from the definitions in format-notes §7 (padding stays 0xEE).
Bytes gather_chunk(const NdMeta& m, const Bytes& array, int ts, int64_t n) {
  const int nd = m.ndim;
  std::vector<int64_t> ext(nd), cpd(nd), bpd(nd);
  int64_t chunk_items = 1, block_items = 1;
  for (int i = 0; i < nd; ++i) {
    ext[i] = (m.chunkshape[i] + m.blockshape[i] - 1) / m.blockshape[i] * m.blockshape[i];
    cpd[i] = (m.shape[i] + m.chunkshape[i] - 1) / m.chunkshape[i];
    bpd[i] = ext[i] / m.blockshape[i];
    chunk_items *= ext[i];
    block_items *= m.blockshape[i];
  }
  std::vector<int64_t> cc(nd);
  for (int i = nd - 1; i >= 0; --i) {
    cc[i] = n % cpd[i];
    n /= cpd[i];
  }
  Bytes chunk(size_t(chunk_items * ts), 0xEE);
  for (int64_t item = 0; item < chunk_items; ++item) {
    int64_t b = item / block_items, in = item % block_items;
    bool inside = true;
    int64_t flat = 0;
    std::vector<int64_t> g(nd);
    for (int i = nd - 1; i >= 0; --i) {
      int64_t bc = b % bpd[i];
      b /= bpd[i];
      int64_t ic = in % m.blockshape[i];
      in /= m.blockshape[i];
      int64_t pos = bc * m.blockshape[i] + ic;
      g[i] = cc[i] * m.chunkshape[i] + pos;
      if (pos >= m.chunkshape[i] || g[i] >= m.shape[i]) inside = false;
    }
    if (!inside) continue;
    for (int i = 0; i < nd; ++i) flat = flat * m.shape[i] + g[i];
    std::memcpy(chunk.data() + item * ts, array.data() + flat * ts, size_t(ts));
  }
  return chunk;
}

NdMeta make_meta(std::vector<int64_t> shape, std::vector<int32_t> chunks, std::vector<int32_t> blocks) {
  NdMeta m;
  m.ndim = int(shape.size());
  m.shape = std::move(shape);
  m.chunkshape = std::move(chunks);
  m.blockshape = std::move(blocks);
  m.dtype = "<i4";
  return m;
}

int64_t count_chunks(const NdMeta& m) {
  int64_t n = 1;
  for (int i = 0; i < m.ndim; ++i) n *= (m.shape[i] + m.chunkshape[i] - 1) / m.chunkshape[i];
  return n;
}

void check_layout(const NdMeta& m, int ts, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "ndim " << m.ndim << " ts " << ts);
  int64_t nitems = 1;
  for (int64_t s : m.shape) nitems *= s;
  Bytes array(size_t(nitems * ts));
  std::mt19937 rng(seed);
  for (auto& b : array) b = uint8_t(rng());
  const int64_t nchunks = nitems == 0 ? 0 : count_chunks(m);
  std::vector<Bytes> chunks;
  for (int64_t c = 0; c < nchunks; ++c) chunks.push_back(gather_chunk(m, array, ts, c));
  int64_t chunk_bytes = chunks.empty() ? 0 : int64_t(chunks[0].size());
  NdLayout layout(m, ts, nchunks, int32_t(chunk_bytes));
  ASSERT_EQ(layout.nitems(), nitems);
  ASSERT_EQ(layout.array_bytes(), nitems * ts);
  ASSERT_EQ(layout.nchunks(), nchunks);
  if (nchunks) {
    ASSERT_EQ(layout.chunk_bytes(), chunk_bytes);
  }

  auto read = [&](int64_t off, int64_t len) {
    Bytes out(size_t(len), 0x55);
    std::map<int64_t, int> calls;
    layout.read(off, out, [&](int64_t c) {
      ++calls[c];
      return ByteSpan(chunks.at(size_t(c)));
    });
    std::vector<int64_t> expected = layout.chunks_for_range(off, len);
    EXPECT_EQ(calls.size(), expected.size());
    for (int64_t c : expected) EXPECT_EQ(calls[c], 1) << "chunk " << c;
    EXPECT_TRUE(std::equal(out.begin(), out.end(), array.begin() + off)) << "range " << off << "+" << len;
  };
  read(0, int64_t(array.size()));
  // Run by run, the whole array: in order, each run where read() copies it from,
  // and each chunk's items (not its padding) exactly once.
  std::map<int64_t, int64_t> item_bytes;
  int64_t next = 0;
  layout.for_each_run(0, int64_t(array.size()), [&](int64_t c, int64_t at, int64_t in, int64_t n) {
    EXPECT_EQ(in, next);
    next += n;
    item_bytes[c] += n;
    EXPECT_TRUE(std::equal(array.begin() + in, array.begin() + in + n, chunks.at(size_t(c)).begin() + at));
  });
  EXPECT_EQ(next, int64_t(array.size()));
  for (int64_t c = 0; c < nchunks; ++c) EXPECT_EQ(item_bytes[c], layout.chunk_item_bytes(c)) << "chunk " << c;
  for (int i = 0; i < 200 && !array.empty(); ++i) {
    int64_t off = int64_t(rng() % array.size());
    int64_t len = int64_t(rng() % (array.size() - off + 1));
    read(off, len);
  }
  EXPECT_THROW(read(0, int64_t(array.size()) + 1), std::out_of_range);
}

TEST(NdLayout, VerifiedExampleFromTheNotes) {
  NdMeta m = make_meta({5, 7}, {3, 4}, {2, 3});
  Bytes array(35);
  for (int i = 0; i < 35; ++i) array[i] = uint8_t(i + 1);
  Bytes chunk0 = gather_chunk(m, array, 1, 0);
  const uint8_t expect[] = {1, 2, 3, 8, 9, 10, 4, 0xEE, 0xEE, 11, 0xEE, 0xEE,
                            15, 16, 17, 0xEE, 0xEE, 0xEE, 18, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE};
  ASSERT_EQ(chunk0, Bytes(std::begin(expect), std::end(expect)));
  check_layout(m, 1, 1);
}

TEST(NdLayout, ManyShapes) {
  check_layout(make_meta({100001}, {16384}, {4096}), 4, 2);
  check_layout(make_meta({30, 40}, {16, 16}, {8, 8}), 12, 3);
  check_layout(make_meta({50, 37, 23}, {20, 15, 10}, {7, 6, 5}), 8, 4);
  check_layout(make_meta({9, 10, 11, 12}, {6, 6, 6, 6}, {3, 3, 3, 3}), 2, 5);
  check_layout(make_meta({400, 3}, {110, 3}, {57, 3}), 4, 6);
  check_layout(make_meta({7, 1, 5}, {3, 1, 5}, {3, 1, 2}), 3, 7);
  check_layout(make_meta({13}, {13}, {20}), 1, 8);  // blockshape beyond chunkshape
  check_layout(make_meta({}, {}, {}), 8, 9);        // ndim 0: one item
  check_layout(make_meta({4, 0, 3}, {2, 2, 2}, {1, 1, 1}), 4, 10);
}

// write() against read() and the definitions: chunks gathered from array A, a
// random byte range of array B scattered into them, must equal the chunks gathered
// from A with that range replaced (padding untouched), and read() must give it back.
void check_write(const NdMeta& m, int ts, uint32_t seed, int rounds) {
  SCOPED_TRACE(::testing::Message() << "write: ndim " << m.ndim << " ts " << ts << " seed " << seed);
  int64_t nitems = 1;
  for (int64_t s : m.shape) nitems *= s;
  std::mt19937 rng(seed);
  Bytes array(size_t(nitems * ts));
  for (auto& b : array) b = uint8_t(rng());
  const int64_t nchunks = nitems == 0 ? 0 : count_chunks(m);
  std::vector<Bytes> chunks;
  for (int64_t c = 0; c < nchunks; ++c) chunks.push_back(gather_chunk(m, array, ts, c));
  NdLayout layout(m, ts, nchunks, chunks.empty() ? 0 : int32_t(chunks[0].size()));
  for (int r = 0; r < rounds && !array.empty(); ++r) {
    int64_t off = int64_t(rng() % array.size());
    int64_t len = int64_t(rng() % (array.size() - off + 1));
    if (r % 3 == 0) len = std::min<int64_t>(len, 1 + int64_t(rng() % 17));  // sub-item and short runs
    Bytes patch(static_cast<size_t>(len));
    for (auto& b : patch) b = uint8_t(rng());
    std::map<int64_t, int> calls;
    std::vector<int64_t> order;
    layout.write(off, patch, [&](int64_t c) {
      ++calls[c];
      order.push_back(c);
      return MutableByteSpan(chunks.at(size_t(c)));
    });
    EXPECT_EQ(order, layout.chunks_for_range(off, len));
    for (auto& [c, n] : calls) EXPECT_EQ(n, 1) << "chunk " << c;
    std::copy(patch.begin(), patch.end(), array.begin() + off);
    for (int64_t c = 0; c < nchunks; ++c)
      ASSERT_EQ(chunks[size_t(c)], gather_chunk(m, array, ts, c)) << "chunk " << c << " after " << off << "+" << len;
    Bytes back(static_cast<size_t>(len));
    layout.read(off, back, [&](int64_t c) { return ByteSpan(chunks.at(size_t(c))); });
    EXPECT_EQ(back, patch);
    // chunk_ranges(): read() copies from those bytes alone (the rest flipped here).
    std::vector<Bytes> flipped(chunks.size());
    std::vector<int64_t> range_order;
    for (const NdLayout::ChunkRange& range : layout.chunk_ranges(off, len)) {
      const Bytes& chunk = chunks.at(size_t(range.chunk));
      ASSERT_TRUE(0 <= range.first && range.first < range.end && range.end <= int64_t(chunk.size()));
      range_order.push_back(range.chunk);
      Bytes& f = flipped[size_t(range.chunk)];
      f = chunk;
      for (size_t i = 0; i < f.size(); ++i)
        if (int64_t(i) < range.first || int64_t(i) >= range.end) f[i] ^= 0xFF;
    }
    std::vector<int64_t> touched = layout.chunks_for_range(off, len);
    std::sort(touched.begin(), touched.end());
    EXPECT_EQ(range_order, touched);
    Bytes within(static_cast<size_t>(len));
    layout.read(off, within, [&](int64_t c) { return ByteSpan(flipped.at(size_t(c))); });
    EXPECT_EQ(within, patch);
  }
  EXPECT_THROW(layout.write(0, Bytes(array.size() + 1), [&](int64_t c) { return MutableByteSpan(chunks.at(size_t(c))); }),
               std::out_of_range);
  if (nchunks > 0) {
    Bytes short_chunk(chunks[0].size() - 1);
    EXPECT_THROW(layout.write(0, Bytes(1), [&](int64_t) { return MutableByteSpan(short_chunk); }), FormatError);
  }
}

TEST(NdLayout, WriteMirrorsRead) {
  check_write(make_meta({5, 7}, {3, 4}, {2, 3}), 1, 11, 100);
  check_write(make_meta({100001}, {16384}, {4096}), 4, 12, 30);
  check_write(make_meta({50, 37, 23}, {20, 15, 10}, {7, 6, 5}), 8, 13, 40);
  check_write(make_meta({9, 10, 11, 12}, {6, 6, 6, 6}, {3, 3, 3, 3}), 2, 14, 40);
  check_write(make_meta({13}, {13}, {20}), 1, 15, 50);  // blockshape beyond chunkshape
  check_write(make_meta({}, {}, {}), 8, 16, 20);        // ndim 0: one item
  check_write(make_meta({4, 0, 3}, {2, 2, 2}, {1, 1, 1}), 4, 17, 5);
}

TEST(NdLayout, WriteMirrorsReadOnRandomShapes) {
  std::mt19937 rng(2026);
  for (int t = 0; t < 60; ++t) {
    const int nd = 1 + int(rng() % 4);
    std::vector<int64_t> shape(nd);
    std::vector<int32_t> chunks(nd), blocks(nd);
    for (int i = 0; i < nd; ++i) {
      shape[i] = 1 + int64_t(rng() % (nd == 1 ? 300 : nd == 2 ? 40 : 12));
      chunks[i] = 1 + int32_t(rng() % uint32_t(shape[i] + 2));  // may exceed the shape: one edge chunk
      blocks[i] = 1 + int32_t(rng() % uint32_t(chunks[i] + 1));  // not a divisor in general
    }
    const int ts = 1 + int(rng() % 9);
    check_write(make_meta(shape, chunks, blocks), ts, 100 + uint32_t(t), 12);
  }
}

TEST(NpyFileHeader, ReadsWhatNpyHeaderWrites) {
  for (const auto& [descr, shape] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"<f8", {3, 4}},
                                                                 {"|b1", {}},
                                                                 {">i2", {7}},
                                                                 {"[('a', '<i4'), ('b', '<f8', (2,))]", {2, 0, 5}}}) {
    const std::string text = npy_header(descr, shape);
    std::string why;
    auto h = parse_npy_file_header(as_bytes(text), &why);
    ASSERT_TRUE(h.has_value()) << descr << ": " << why;
    EXPECT_EQ(h->header_len, int64_t(text.size()));
    EXPECT_EQ(h->dtype.descr, npy_dtype(descr)->descr);
    EXPECT_EQ(h->shape, shape);
    EXPECT_FALSE(h->fortran_order);
    // Cut anywhere inside, it is refused with a reason.
    for (size_t cut : {size_t(0), size_t(5), size_t(9), text.size() / 2, text.size() - 1}) {
      why.clear();
      EXPECT_FALSE(parse_npy_file_header(as_bytes(text).first(cut), &why).has_value()) << cut;
      EXPECT_FALSE(why.empty());
    }
  }
  std::string fortran = npy_header("<f4", {2, 3});
  fortran.replace(fortran.find("False"), 5, "True ");
  std::string why;
  auto h = parse_npy_file_header(as_bytes(fortran), &why);
  ASSERT_TRUE(h.has_value()) << why;
  EXPECT_TRUE(h->fortran_order);
  std::string object = npy_header("|O", {2});
  EXPECT_FALSE(parse_npy_file_header(as_bytes(object), &why).has_value());
  EXPECT_EQ(npy_descr_swapped("<f8"), std::optional<std::string>(">f8"));
  EXPECT_EQ(npy_descr_swapped(">c16"), std::optional<std::string>("<c16"));
  EXPECT_EQ(npy_descr_swapped("|b1"), std::nullopt);
  EXPECT_EQ(npy_descr_swapped("<U6"), std::nullopt);
}

TEST(NdLayout, RejectsInconsistentFrames) {
  NdMeta m = make_meta({10, 10}, {5, 5}, {5, 5});
  EXPECT_NO_THROW(NdLayout(m, 4, 4, 100));
  EXPECT_THROW(NdLayout(m, 4, 3, 100), FormatError);
  EXPECT_THROW(NdLayout(m, 4, 4, 96), FormatError);
  EXPECT_THROW(NdLayout(m, 0, 4, 100), FormatError);
  NdMeta bad = make_meta({10, -1}, {5, 5}, {5, 5});
  EXPECT_THROW(NdLayout(bad, 4, 4, 100), FormatError);
  NdMeta zero_chunk = make_meta({10, 10}, {0, 5}, {5, 5});
  EXPECT_THROW(NdLayout(zero_chunk, 4, 4, 100), FormatError);
  NdMeta huge = make_meta({1LL << 40, 1LL << 40}, {1 << 20, 1 << 20}, {1 << 20, 1 << 20});
  EXPECT_THROW(NdLayout(huge, 4, 1, 0), FormatError);
  // A chunk shorter than the layout needs.
  NdLayout layout(m, 4, 4, 100);
  Bytes out(8), small(10);
  EXPECT_THROW(layout.read(0, out, [&](int64_t) { return ByteSpan(small); }), FormatError);
}

TEST(B2ndMeta, ParsesAndSerializesFixtures) {
  for (const std::string& name : testing::fixture_frame_names()) {
    auto expect = testing::load_expect(name);
    if (!expect.contains("b2nd")) continue;
    SCOPED_TRACE(name);
    Bytes content = testing::hex_to_bytes(expect["metalayers"]["b2nd"].get<std::string>());
    NdMeta m = parse_nd_meta(content, false);
    const auto& e = expect["b2nd"];
    EXPECT_EQ(m.ndim, e["ndim"].get<int>());
    EXPECT_EQ(m.shape, e["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(m.chunkshape, e["chunkshape"].get<std::vector<int32_t>>());
    EXPECT_EQ(m.blockshape, e["blockshape"].get<std::vector<int32_t>>());
    EXPECT_EQ(m.dtype_format, e["dtype_format"].get<int>());
    ASSERT_TRUE(m.dtype);
    EXPECT_EQ(*m.dtype, e["dtype"].get<std::string>());
    EXPECT_FALSE(m.legacy_caterva);
    EXPECT_EQ(serialize_b2nd_meta(m), content);
  }
}

TEST(B2ndMeta, Caterva) {
  auto expect = testing::load_expect("caterva-2d-f4.caterva");
  Bytes content = testing::hex_to_bytes(expect["metalayers"]["caterva"].get<std::string>());
  NdMeta m = parse_nd_meta(content, true);
  EXPECT_TRUE(m.legacy_caterva);
  EXPECT_EQ(m.ndim, 2);
  EXPECT_FALSE(m.dtype);
  EXPECT_EQ(serialize_b2nd_meta(m), content);
}

TEST(B2ndMeta, HostileBytes) {
  auto expect = testing::load_expect("b2nd-3d-f8.b2nd");
  Bytes content = testing::hex_to_bytes(expect["metalayers"]["b2nd"].get<std::string>());
  for (size_t len = 0; len < content.size(); ++len) {
    Bytes cut(content.begin(), content.begin() + len);
    try {
      parse_nd_meta(cut, false);
    } catch (const FormatError&) {
    }
  }
  Bytes too_many = content;
  too_many[2] = 17;
  EXPECT_THROW(parse_nd_meta(too_many, false), FormatError);
  Bytes long_dtype = content;
  long_dtype[long_dtype.size() - 4] = 0x7F;  // dtype length beyond the data
  EXPECT_THROW(parse_nd_meta(long_dtype, false), FormatError);
}

TEST(NpyDescr, ItemSizes) {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"<f8", 8}, {"|u1", 1}, {"<i2", 2}, {"|b1", 1}, {"|?", 1}, {"<c16", 16}, {"<U5", 20}, {"|S3", 3},
      {"|V8", 8}, {"<M8[ns]", 8}, {"<m8[s]", 8}, {"<M8", 8}, {"float32", 4}, {"int64", 8}, {"bool", 1},
      {"[('a', '<i4'), ('b', '<f8')]", 12},
      {"[('x', '<f4', (3,)), ('y', [('p', '|u1'), ('q', '<i2')]), ('', '|V1')]", 16},
      {"[(('title', 'name'), '<i8', (2, 2))]", 32},
  };
  for (const auto& [dtype, size] : cases) {
    auto got = numpy_dtype_itemsize(dtype);
    ASSERT_TRUE(got) << dtype;
    EXPECT_EQ(*got, size) << dtype;
  }
  for (const char* bad : {"", "|S0", "<U", "foo", "[('a', '<i4'", "[('a',)]", "<M8[ns", "Z8", "|O", "<M8[n's]", "[]",
                          "('<f4', (3,))"})
    EXPECT_FALSE(numpy_dtype_itemsize(bad)) << bad;
}

TEST(NpyDescr, MismatchFallsBackToVoid) {
  NdMeta m = make_meta({3}, {3}, {3});
  bool mismatch = true;
  EXPECT_EQ(npy_descr(m, 4, &mismatch), "<i4");
  EXPECT_FALSE(mismatch);
  m.dtype = "|u1";  // example_day_month_temp.b2nd
  EXPECT_EQ(npy_descr(m, 4, &mismatch), "|V4");
  EXPECT_TRUE(mismatch);
  m.dtype = "|O";  // object items: np.load would refuse them
  EXPECT_EQ(npy_descr(m, 8, &mismatch), "|V8");
  EXPECT_TRUE(mismatch);
  // No dtype: python-blosc2 reads S<typesize>; legacy caterva shows raw items.
  m.dtype.reset();
  EXPECT_EQ(npy_descr(m, 2, &mismatch), "|S2");
  EXPECT_FALSE(mismatch);
  m.legacy_caterva = true;
  EXPECT_EQ(npy_descr(m, 2, &mismatch), "|V2");
  EXPECT_FALSE(mismatch);
  m.legacy_caterva = false;
  m.dtype = "[('a', '<i4'), ('b', '<f8')]";
  EXPECT_EQ(npy_descr(m, 12, &mismatch), "[('a', '<i4'), ('b', '<f8')]");
  EXPECT_FALSE(mismatch);
}

std::string run_python(const std::string& script) {
  TempDir dir;
  auto path = dir.path() / "gen.py";
  std::ofstream(path) << script;
  std::string cmd = "/usr/bin/python3 " + path.string();
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  int c;
  while (pipe && (c = std::fgetc(pipe.get())) != EOF) out += char(c);
  return out;
}

// The forms python-blosc2 4.14.1 writes (str(dtype) for kind 'V', dtype.str otherwise),
// each with the descr numpy's dtype.descr gives (checked with NumPy 2.4).
TEST(NpyDescr, PythonBlosc2Forms) {
  const std::vector<std::tuple<std::string, std::string, int64_t>> cases = {
      {"<f8", "<f8", 8}, {">f4", ">f4", 4}, {"|b1", "|b1", 1}, {"<c16", "<c16", 16}, {"<U6", "<U6", 24},
      {"|S6", "|S6", 6}, {"<M8[ns]", "<M8[ns]", 8}, {"datetime64[ns]", "datetime64[ns]", 8}, {"|V8", "|V8", 8},
      // list form, with unprefixed 'S10' and '?' as str(dtype) writes them
      {"[('a', '<i4'), ('b', '<f8'), ('c', 'S10'), ('d', '?')]",
       "[('a', '<i4'), ('b', '<f8'), ('c', 'S10'), ('d', '?')]", 23},
      // subarray fields
      {"[('x', '<f4', (3,)), ('y', '<i2', (2, 2))]", "[('x', '<f4', (3,)), ('y', '<i2', (2, 2))]", 20},
      // nested struct, titles
      {"[('p', [('q', '<i4'), ('r', 'u1')]), ('s', '<f8')]", "[('p', [('q', '<i4'), ('r', 'u1')]), ('s', '<f8')]", 13},
      {"[(('T', 'a'), '<i4')]", "[(('T', 'a'), '<i4')]", 4},
      // dict form: padding between and after fields
      {"{'names': ['a', 'b'], 'formats': ['<i4', '<f8'], 'offsets': [0, 8], 'itemsize': 20}",
       "[('a', '<i4'), ('', '|V4'), ('b', '<f8'), ('', '|V4')]", 20},
      // aligned
      {"{'names': ['a', 'b'], 'formats': ['u1', '<f8'], 'offsets': [0, 8], 'itemsize': 16, 'aligned': True}",
       "[('a', 'u1'), ('', '|V7'), ('b', '<f8')]", 16},
      // fields out of offset order, a subarray as a (format, shape) tuple
      {"{'names': ['a', 'b'], 'formats': [('<f4', (2,)), 'u1'], 'offsets': [4, 0], 'itemsize': 12}",
       "[('b', 'u1'), ('', '|V3'), ('a', '<f4', (2,))]", 12},
      // nested list and nested dict formats, titles
      {"{'names': ['a', 'b'], 'formats': [[('q', '<i4')], 'u1'], 'offsets': [0, 8], 'itemsize': 12}",
       "[('a', [('q', '<i4')]), ('', '|V4'), ('b', 'u1'), ('', '|V3')]", 12},
      {"{'names': ['a', 'b'], 'formats': [{'names': ['q'], 'formats': ['<i2'], 'offsets': [2], 'itemsize': 6}, "
       "'u1'], 'offsets': [0, 8], 'itemsize': 12}",
       "[('a', [('', '|V2'), ('q', '<i2'), ('', '|V2')]), ('', '|V2'), ('b', 'u1'), ('', '|V3')]", 12},
      {"{'names': ['a'], 'formats': ['<i4'], 'titles': ['T'], 'offsets': [0], 'itemsize': 4}", "[(('T', 'a'), '<i4')]",
       4},
      // names needing escapes, and a non-ASCII name
      {"[('na\xc3\xafve', '<i4'), (\"it's\", 'u1'), ('tab\\t', 'u1')]",
       "[('na\xc3\xafve', '<i4'), ('it\\'s', 'u1'), ('tab\\x09', 'u1')]", 6},
  };
  for (const auto& [dtype, descr, size] : cases) {
    auto got = npy_dtype(dtype);
    ASSERT_TRUE(got) << dtype;
    EXPECT_EQ(got->descr, descr) << dtype;
    EXPECT_EQ(got->itemsize, size) << dtype;
  }
  // Overlapping fields have no list form; unknown keys are not a dtype.
  EXPECT_FALSE(npy_dtype("{'names': ['a', 'b'], 'formats': ['<i4', '<i4'], 'offsets': [0, 2], 'itemsize': 8}"));
  EXPECT_FALSE(npy_dtype("{'names': ['a'], 'formats': ['<i4'], 'shape': 3}"));
  EXPECT_FALSE(npy_dtype("{'names': ['a'], 'formats': ['<i4'], 'offsets': [0], 'itemsize': 2}"));
  // Not UTF-8 (a latin-1 byte, an overlong form, an escape giving a surrogate).
  EXPECT_FALSE(npy_dtype("[('na\xefve', '<i4')]"));
  EXPECT_FALSE(npy_dtype("[('\xc0\xaf', '<i4')]"));
  EXPECT_FALSE(npy_dtype("[('\\ud800', '<i4')]"));
}

// Every converted descr loads in numpy as the dtype python-blosc2 reads from the string.
TEST(NpyDescr, NumpyReadsConvertedDescrs) {
  const std::vector<std::string> dtypes = {
      "{'names': ['a', 'b'], 'formats': ['<i4', '<f8'], 'offsets': [0, 8], 'itemsize': 20}",
      "{'names': ['a', 'b'], 'formats': ['u1', '<f8'], 'offsets': [0, 8], 'itemsize': 16, 'aligned': True}",
      "{'names': ['a', 'b'], 'formats': [{'names': ['q'], 'formats': ['<i2'], 'offsets': [2], 'itemsize': 6}, "
      "'u1'], 'offsets': [0, 8], 'itemsize': 12}",
      "[('x', '<f4', (3,)), ('y', '<i2', (2, 2)), ('c', 'S10'), ('d', '?')]",
      "[('na\xc3\xafve', '<i4'), (\"it's\", 'u1')]",
      "[('\xce\xbb', '<i4')]",
  };
  TempDir dir;
  std::string script = "import ast, numpy as np\n";
  for (size_t i = 0; i < dtypes.size(); ++i) {
    auto d = npy_dtype(dtypes[i]);
    ASSERT_TRUE(d) << dtypes[i];
    auto path = dir.path() / ("a" + std::to_string(i) + ".npy");
    std::ofstream out(path, std::ios::binary);
    out << npy_header(d->descr, {2}) << std::string(size_t(d->itemsize) * 2, '\x01');
    out.close();
    std::string literal;
    for (char c : dtypes[i]) literal += c == '"' ? std::string("\\\"") : std::string(1, c);
    script += "want = np.dtype(ast.literal_eval(\"" + literal + "\"))\n"
              "a = np.load('" + path.string() + "', mmap_mode='r')\n"
              "print(a.dtype == want and a.dtype.itemsize == want.itemsize and a.shape == (2,))\n";
  }
  std::string expect;
  for (size_t i = 0; i < dtypes.size(); ++i) expect += "True\n";
  EXPECT_EQ(run_python(script), expect);
}

// 16 dimensions: c-blosc2 writes 0x90 + 16 = 0xA0 as the array marker; read by position.
TEST(B2ndMeta, SixteenDimensions) {
  NdMeta m;
  m.ndim = 16;
  m.shape.assign(16, 2);
  m.chunkshape.assign(16, 2);
  m.blockshape.assign(16, 1);
  m.shape[15] = 3;
  m.dtype = "<f8";
  Bytes content = serialize_b2nd_meta(m);
  EXPECT_EQ(content[0], 0x97);
  EXPECT_EQ(content[2], 16);
  EXPECT_EQ(content[3], 0xA0);
  EXPECT_EQ(content[4 + 16 * 9], 0xA0);
  NdMeta back = parse_nd_meta(content, false);
  EXPECT_EQ(back.ndim, 16);
  EXPECT_EQ(back.shape, m.shape);
  EXPECT_EQ(back.chunkshape, m.chunkshape);
  EXPECT_EQ(back.blockshape, m.blockshape);
  EXPECT_EQ(back.dtype, m.dtype);
  NdLayout layout(back, 8, 2, 8 * 65536);
  EXPECT_EQ(layout.nitems(), 3 * 32768);
  m.ndim = 17;
  m.shape.push_back(1);
  m.chunkshape.push_back(1);
  m.blockshape.push_back(1);
  EXPECT_THROW(serialize_b2nd_meta(m), FormatError);
}

// The 5-element caterva form under the name "b2nd" (c-blosc2 test data of 2023-01,
// example_double_same_cells.b2nd): no dtype_format, no dtype.
TEST(B2ndMeta, FiveElementFormNamedB2nd) {
  NdMeta m = make_meta({10, 10}, {5, 5}, {5, 5});
  m.legacy_caterva = true;
  m.dtype.reset();
  Bytes content = serialize_b2nd_meta(m);
  EXPECT_EQ(content[0], 0x95);
  NdMeta back = parse_nd_meta(content, false);
  EXPECT_FALSE(back.legacy_caterva);
  EXPECT_EQ(back.shape, m.shape);
  EXPECT_FALSE(back.dtype);
  bool mismatch = true;
  EXPECT_EQ(npy_descr(back, 8, &mismatch), "|S8");
  EXPECT_FALSE(mismatch);
}

TEST(NpyHeader, MatchesNumpy) {
  struct Case {
    std::string descr, py_descr;
    std::vector<int64_t> shape;
    std::string py_shape;
  };
  std::string many_fields = "[";
  std::string py_many = "[";
  for (int i = 0; i < 3000; ++i) {
    std::string f = "('field_number_" + std::to_string(i) + "', '<f8')";
    many_fields += (i ? ", " : "") + f;
    py_many += (i ? ", " : "") + f;
  }
  many_fields += "]";
  py_many += "]";
  const std::vector<Case> cases = {
      {"<f8", "'<f8'", {3, 4}, "(3, 4)"},
      {"|u1", "'|u1'", {100001}, "(100001,)"},
      {"<i2", "'<i2'", {}, "()"},
      {"|V4", "'|V4'", {400, 3}, "(400, 3)"},
      {"<i8", "'<i8'", {0, 5}, "(0, 5)"},
      {"[('a', '<i4'), ('b', '<f8')]", "[('a', '<i4'), ('b', '<f8')]", {30, 40}, "(30, 40)"},
      {many_fields, py_many, {7}, "(7,)"},
      {"[('a', 'u1'), ('', '|V7'), ('b', '<f8')]", "[('a', 'u1'), ('', '|V7'), ('b', '<f8')]", {4}, "(4,)"},
      {"[('na\xc3\xafve', '<i4')]", "[('na\\xefve', '<i4')]", {2}, "(2,)"},
      {"[('\xce\xbb', '<i4')]", "[('\\u03bb', '<i4')]", {2}, "(2,)"},
  };
  std::string script = "import io, warnings, numpy.lib.format as f\nwarnings.simplefilter('ignore')\n";
  for (const Case& c : cases)
    script += "b = io.BytesIO(); f._write_array_header(b, {'descr': " + c.py_descr +
              ", 'fortran_order': False, 'shape': " + c.py_shape + "}); print(b.getvalue().hex())\n";
  std::string out = run_python(script);
  std::vector<std::string> lines;
  for (size_t pos = 0, next; (next = out.find('\n', pos)) != std::string::npos; pos = next + 1)
    lines.push_back(out.substr(pos, next - pos));
  ASSERT_EQ(lines.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string header = npy_header(cases[i].descr, cases[i].shape);
    EXPECT_EQ(header.size() % 64, 0u);
    EXPECT_EQ(header.back(), '\n');
    Bytes bytes(header.begin(), header.end());
    EXPECT_EQ(bytes, testing::hex_to_bytes(lines[i])) << header.substr(0, 120);
  }
  EXPECT_EQ(npy_header(many_fields, {7})[6], 2);  // > 65535 bytes: format 2.0
  EXPECT_EQ(npy_header("[('\xce\xbb', '<i4')]", {2})[6], 3);  // beyond latin-1: format 3.0
}

TEST(NpyHeader, NumpyLoadsIt) {
  TempDir dir;
  auto path = dir.path() / "a.npy";
  std::string header = npy_header("<i4", {2, 3});
  std::ofstream out(path, std::ios::binary);
  out << header;
  for (int32_t v = 0; v < 6; ++v) out.write(reinterpret_cast<const char*>(&v), 4);
  out.close();
  std::string got = run_python("import numpy as np\na = np.load('" + path.string() +
                               "', mmap_mode='r')\nprint(a.shape, a.dtype, a.tolist())\n");
  EXPECT_EQ(got, "(2, 3) int32 [[0, 1, 2], [3, 4, 5]]\n");
}

// The machine the expected partitions were measured on with python-blosc2
// 4.14.1: an x86-64 with a 32 KiB L1, 512 KiB L2 and 32 MiB L3.
CacheSizes reference_machine() {
  CacheSizes c;
  c.l1_data = 32 << 10;
  c.l2 = 512 << 10;
  c.l3 = 32 << 20;
  c.x86_64 = true;
  return c;
}

// python-blosc2 on the reference machine (blosc2.asarray(np.zeros(shape,
// dtype)).chunks/.blocks there); the integration test test_npy_create.py
// compares with python-blosc2 on the machine it runs on.
TEST(B2ndPartition, PythonBlosc2Defaults) {
  const CacheSizes c = reference_machine();
  NdPartition p = b2nd_partition({1000, 1000}, 8, std::nullopt, std::nullopt, c);
  EXPECT_EQ(p.blockshape, (std::vector<int64_t>{10, 1000}));
  EXPECT_EQ(p.chunkshape, (std::vector<int64_t>{1000, 1000}));
  p = b2nd_partition({0, 5}, 4, std::nullopt, std::nullopt, c);
  EXPECT_EQ(p.chunkshape, (std::vector<int64_t>{0, 5}));
  p = b2nd_partition({33, 47}, 8, std::vector<int64_t>{10, 20}, std::vector<int64_t>{5, 4}, c);
  EXPECT_EQ(p.blockshape, (std::vector<int64_t>{5, 4}));
  EXPECT_THROW(b2nd_partition({33, 47}, 8, std::vector<int64_t>{10}, std::nullopt, c), FormatError);
  EXPECT_THROW(b2nd_partition({33, 47}, 8, std::vector<int64_t>{4, 4}, std::vector<int64_t>{5, 4}, c), FormatError);
}

// Where sysfs has no cache sizes, python-blosc2 divides lscpu's by their instances
// (this is util-linux 2.38's `lscpu --json` on a 2-CPU x86-64 VM).
TEST(B2ndPartition, LscpuCacheSizes) {
  const std::string json = R"json({
   "lscpu": [
      {
         "field": "Architecture:",
         "data": "x86_64"
      },{
         "field": "L1d cache:",
         "data": "64 KiB (2 instances)"
      },{
         "field": "L1i cache:",
         "data": "64 KiB (2 instances)"
      },{
         "field": "L2 cache:",
         "data": "1 MiB (2 instances)"
      },{
         "field": "L3 cache:",
         "data": "32 MiB (1 instance)"
      }
   ]
})json";
  EXPECT_EQ(lscpu_cache_size(json, 0), 32 << 10);
  EXPECT_EQ(lscpu_cache_size(json, 2), 512 << 10);
  EXPECT_EQ(lscpu_cache_size(json, 3), 32 << 20);
  // python-blosc2 finds nothing where the size is not a whole number, the unit
  // unknown, the instances missing, or the level absent.
  EXPECT_EQ(lscpu_cache_size(R"json({"field": "L2 cache:", "data": "1.5 MiB (2 instances)"})json", 2), std::nullopt);
  EXPECT_EQ(lscpu_cache_size(R"json({"field": "L2 cache:", "data": "1 MB (2 instances)"})json", 2), std::nullopt);
  EXPECT_EQ(lscpu_cache_size(R"json({"field": "L2 cache:", "data": "1 MiB"})json", 2), std::nullopt);
  EXPECT_EQ(lscpu_cache_size(R"json({"field": "L2 cache:", "data": "1 MiB (0 instances)"})json", 2), std::nullopt);
  EXPECT_EQ(lscpu_cache_size(json, 4), std::nullopt);
  EXPECT_EQ(lscpu_cache_size("", 2), std::nullopt);
}

// python-blosc2 4.14.1 asks c-blosc2's tuner for the ZFP and NDLZ codecs'
// block size (blosc2.compute_chunks_blocks on the machine of PythonBlosc2Defaults).
CompressParams tuned(Codec codec, int clevel, SplitMode split, std::vector<uint8_t> filters = {}) {
  CompressParams p;
  p.codec = codec;
  p.clevel = clevel;
  p.splitmode = split;
  p.filters.fill(0);
  for (size_t i = 0; i < filters.size(); ++i) p.filters[i] = filters[i];
  return p;
}

// A partition python-blosc2 chose on the reference machine for these
// settings (blosc2.compute_chunks_blocks(shape, dtype, cparams=...)).
struct TunedPartition {
  std::vector<int64_t> shape;
  int64_t itemsize;
  Codec codec;
  int clevel;
  SplitMode split;
  std::vector<int64_t> chunks, blocks;
  std::vector<uint8_t> filters = {};
};

void expect_tuned_partitions(const std::vector<TunedPartition>& cases) {
  for (const TunedPartition& k : cases) {
    NdPartition p = b2nd_partition(k.shape, k.itemsize, std::nullopt, std::nullopt, reference_machine(),
                                   python_blosc2_block_hint(tuned(k.codec, k.clevel, k.split, k.filters), k.itemsize));
    EXPECT_EQ(p.chunkshape, k.chunks) << codec_name(k.codec) << " " << k.clevel << " " << k.itemsize;
    EXPECT_EQ(p.blockshape, k.blocks) << codec_name(k.codec) << " " << k.clevel << " " << k.itemsize;
  }
}

TEST(B2ndPartition, ZfpAndNdlzBlocks) {
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zstd, 9, SplitMode::always), 8), 32 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zfp_accuracy, 0, SplitMode::automatic), 4), 8 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::ndlz, 5, SplitMode::forward_compat), 4), 128 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zfp_rate, 9, SplitMode::never), 16), 256 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zfp_precision, 1, SplitMode::always), 2), 64 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zfp_precision, 9, SplitMode::always), 16), 4 << 20);
  expect_tuned_partitions({
      {{1000, 1000}, 4, Codec::zfp_accuracy, 9, SplitMode::automatic, {1000, 1000}, {50, 1000}},
      {{1000, 1000}, 4, Codec::zstd, 9, SplitMode::automatic, {1000, 1000}, {25, 1000}},
      {{300, 400, 500}, 8, Codec::zfp_rate, 9, SplitMode::always, {4, 400, 500}, {2, 400, 500}},
      {{300, 400, 500}, 8, Codec::ndlz, 6, SplitMode::never, {5, 400, 500}, {1, 50, 500}},
      {{2000, 3000}, 1, Codec::ndlz, 3, SplitMode::automatic, {2000, 3000}, {40, 3000}},
      {{5000, 5000}, 8, Codec::zfp_precision, 8, SplitMode::always, {200, 5000}, {50, 5000}},
  });
}

// The NDMEAN and NDCELL filters with the ordinary codecs: the block sizes
// c-blosc2's tuner gives python-blosc2 4.14.1 (blosc2.compress2 with
// tuner=STUNE of 8 MB of zeros, filters NOFILTER or SHUFFLE, every codec, split
// mode, level and item sizes 1 to 32), and compute_chunks_blocks's shapes.
TEST(B2ndPartition, NdmeanAndNdcellBlocks) {
  constexpr uint8_t kShuffle = kFilterShuffle, kMean = kFilterNdmean, kCell = kFilterNdcell;
  struct Hint {
    Codec codec;
    SplitMode split;
    std::vector<uint8_t> filters;
    int64_t itemsize;
    std::array<int64_t, 10> kib_or_bytes;  // KiB per clevel, or bytes where the item size does not divide
  };
  const Hint hints[] = {
      {Codec::blosclz, SplitMode::always, {kMean}, 1, {8, 32, 32, 32, 64, 64, 64, 128, 256, 512}},
      {Codec::lz4, SplitMode::automatic, {kMean, kShuffle}, 4, {8, 128, 128, 128, 256, 256, 256, 512, 1024, 2048}},
      {Codec::lz4, SplitMode::automatic, {kMean}, 4, {8, 16, 32, 64, 128, 128, 256, 256, 256, 256}},
      {Codec::blosclz, SplitMode::never, {kCell, kShuffle}, 16, {8, 16, 32, 64, 128, 128, 256, 256, 256, 256}},
      {Codec::zstd, SplitMode::always, {kCell}, 16, {16, 512, 512, 512, 1024, 1024, 1024, 2048, 4096, 4096}},
      {Codec::zstd, SplitMode::forward_compat, {kShuffle, kMean}, 8, {16, 256, 256, 256, 512, 512, 512, 512, 512, 1024}},
      {Codec::zstd, SplitMode::automatic, {kMean}, 4, {16, 32, 64, 128, 256, 256, 512, 512, 512, 1024}},
      {Codec::lz4hc, SplitMode::automatic, {kMean, kShuffle}, 2, {16, 32, 64, 128, 256, 256, 512, 512, 512, 1024}},
      {Codec::zlib, SplitMode::always, {kCell}, 2, {16, 64, 64, 64, 128, 128, 128, 256, 512, 1024}},
      {Codec::lz4, SplitMode::always, {kMean}, 32, {8, 1024, 1024, 1024, 2048, 2048, 2048, 4096, 4096, 4096}},
      {Codec::lz4, SplitMode::automatic, {kMean, kShuffle}, 32, {8, 16, 32, 64, 128, 128, 256, 256, 256, 256}},
  };
  for (const Hint& h : hints)
    for (int clevel = 0; clevel < 10; ++clevel)
      EXPECT_EQ(python_blosc2_block_hint(tuned(h.codec, clevel, h.split, h.filters), h.itemsize),
                h.kib_or_bytes[size_t(clevel)] * 1024)
          << codec_name(h.codec) << " clevel " << clevel << " itemsize " << h.itemsize;
  // Item sizes that do not divide the size: rounded down to whole items (8190 = 7 KiB and 1022 bytes).
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::lz4, 0, SplitMode::always, {kMean}), 3), 8190);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::lz4, 1, SplitMode::always, {kMean}), 3), 96 * 1024);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::lz4, 8, SplitMode::always, {kMean}), 17), 4194291);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::lz4, 1, SplitMode::automatic, {kMean, kShuffle}), 17), 16371);
  // compute_chunks_blocks((3000, 2000), float32, cparams=...) on the reference machine.
  expect_tuned_partitions({
      {{3000, 2000}, 4, Codec::zstd, 5, SplitMode::automatic, {1020, 2000}, {30, 2000}, {kMean}},
      {{3000, 2000}, 4, Codec::lz4, 9, SplitMode::always, {1000, 2000}, {250, 2000}, {kCell}},
      {{3000, 2000}, 4, Codec::blosclz, 1, SplitMode::automatic, {1005, 2000}, {15, 2000}, {kMean, kShuffle}},
      {{3000, 2000}, 4, Codec::zlib, 7, SplitMode::never, {1020, 2000}, {60, 2000}, {kShuffle, kCell}},
  });
}

// With NDMEAN or NDCELL among the filters python-blosc2 4.14.1 asks c-blosc2's
// tuner too, with the other filters than shuffle and bitshuffle taken out: the
// codec's class, the level, the split mode (automatic: blosclz, lz4 and zstd up
// to level 5 split with shuffle and items of at most 16 bytes) and the item
// size decide. Expected values: blosc2.compute_chunks_blocks(shape, dtype,
// cparams=CParams(codec, clevel, splitmode, filters)) on the machine of
// PythonBlosc2Defaults (L1d 32 KiB, L2 512 KiB, L3 32 MiB, x86-64).
TEST(B2ndPartition, NdFiltersTunerAnswersAndPartitions) {
  const std::vector<uint8_t> ndmean{kFilterNdmean}, ndcell{kFilterNdcell};
  const std::vector<uint8_t> ndmean_shuffle{kFilterNdmean, kFilterShuffle};
  const std::vector<uint8_t> ndmean_bitshuffle{kFilterNdmean, kFilterBitshuffle};
  const std::vector<uint8_t> ndcell_shuffle{kFilterNdcell, kFilterShuffle};
  const std::vector<uint8_t> shuffle{0, 0, 0, 0, 0, kFilterShuffle};
  // The tuner's answers themselves (blosc2.compress2 with tuner=STUNE of 8 MB of zeros).
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zstd, 9, SplitMode::never, ndmean), 4), 1024 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zstd, 0, SplitMode::never, ndmean), 4), 16 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::lz4, 0, SplitMode::always, ndmean), 3), 8190);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::lz4, 9, SplitMode::automatic, ndmean_shuffle), 17), (256 << 10) / 17 * 17);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::lz4, 8, SplitMode::always, ndmean), 17), (4 << 20) / 17 * 17);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zstd, 5, SplitMode::automatic, ndcell_shuffle), 3), 192 * 1024);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zstd, 6, SplitMode::automatic, ndcell_shuffle), 3), (512 << 10) / 3 * 3);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zlib, 2, SplitMode::forward_compat, ndcell_shuffle), 16), 64 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::blosclz, 2, SplitMode::forward_compat, ndcell_shuffle), 16), 512 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::blosclz, 2, SplitMode::forward_compat, ndcell), 16), 32 << 10);
  EXPECT_EQ(python_blosc2_block_hint(tuned(Codec::zstd, 1, SplitMode::automatic, shuffle), 8), 32 << 10);  // not asked
  expect_tuned_partitions({
      {{1000, 1000}, 4, Codec::zstd, 9, SplitMode::never, {1000, 1000}, {250, 1000}, ndmean},
      {{1000, 1000}, 8, Codec::lz4, 8, SplitMode::automatic, {1000, 1000}, {250, 1000}, ndmean_shuffle},
      {{1000, 1000}, 8, Codec::lz4, 8, SplitMode::automatic, {1000, 1000}, {25, 1000}, ndmean_bitshuffle},
      {{300, 400, 500}, 4, Codec::zlib, 6, SplitMode::automatic, {10, 400, 500}, {1, 200, 500}, ndcell_shuffle},
      {{300, 400, 500}, 4, Codec::zstd, 5, SplitMode::automatic, {10, 400, 500}, {1, 100, 500}, ndcell_shuffle},
      {{300, 400, 500}, 4, Codec::zstd, 6, SplitMode::forward_compat, {10, 400, 500}, {1, 200, 500}, ndcell_shuffle},
      {{2000, 3000}, 2, Codec::blosclz, 9, SplitMode::always, {1000, 3000}, {125, 3000}, ndmean},
      {{5000, 5000}, 16, Codec::blosclz, 9, SplitMode::always, {100, 5000}, {50, 5000}, ndcell},
      {{4000, 4000}, 8, Codec::lz4hc, 9, SplitMode::automatic, {256, 4000}, {32, 4000}, ndmean_shuffle},
      {{100, 200, 300}, 1, Codec::zstd, 9, SplitMode::automatic, {100, 200, 300}, {10, 200, 300}, ndcell_shuffle},
      {{2000, 2000}, 8, Codec::zstd, 1, SplitMode::automatic, {504, 2000}, {8, 2000}, shuffle},
  });
}

}  // namespace
}  // namespace blosc2fs
