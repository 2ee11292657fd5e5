// FrameWriter: frames it creates read back through Frame with the header fields
// c-blosc2 writes; specials and variable chunks follow format-notes §8.
#include "frame_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>

#include "b2nd.h"
#include "fixtures.h"
#include "frame_json.h"

namespace blosc2fs {
namespace {

using testing::frame_path;
using testing::TempDir;

Bytes pattern(size_t n, uint32_t seed) {
  Bytes b(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    b[i] = uint8_t((i / 7) ^ ((x >> 24) & 3));  // compressible but not trivial
  }
  return b;
}

FrameParams params_for(Codec codec, int32_t typesize, int32_t chunksize, bool sparse) {
  FrameParams p;
  p.cparams.codec = codec;
  p.cparams.clevel = 5;
  p.cparams.typesize = typesize;
  p.chunksize = chunksize;
  p.sparse = sparse;
  return p;
}

Bytes file_bytes(const Frame& f) {
  return testing::read_file(f.sparse() ? f.path() / "chunks.b2frame" : f.path());
}

void expect_serializes_back(const Frame& f) {
  Bytes bytes = file_bytes(f);
  const FrameHeader& h = f.header();
  ASSERT_EQ(int64_t(bytes.size()), h.frame_len);
  Bytes header(bytes.begin(), bytes.begin() + h.header_len);
  Bytes trailer(bytes.end() - f.trailer_len(), bytes.end());
  ParsedHeader parsed = parse_frame_header(header);
  EXPECT_EQ(serialize_frame_header(parsed.fixed, parsed.metalayers), header);
  EXPECT_EQ(serialize_frame_trailer(parse_frame_trailer(trailer)), trailer);
}

struct Variant {
  Codec codec;
  int32_t typesize;
  uint8_t filter;
  bool sparse;
};

class WriterVariants : public ::testing::TestWithParam<Variant> {};

TEST_P(WriterVariants, WritesAndReadsBack) {
  const Variant v = GetParam();
  TempDir dir;
  auto path = dir.path() / "out.b2frame";
  FrameParams p = params_for(v.codec, v.typesize, 40000, v.sparse);
  p.cparams.filters = {0, 0, 0, 0, 0, v.filter};
  p.cparams.splitmode = SplitMode::always;
  p.metalayers.push_back({"note", Bytes{'h', 'i'}});
  Bytes data = pattern(40000 * 5 + 1200 * size_t(v.typesize), 7);
  {
    FrameWriter w(path, p);
    w.append_data(data);
    w.set_vlmetalayer("author", Bytes{0xa3, 'b', 'o', 'b'});
    w.set_vlmetalayer("big", pattern(100000, 3));
    w.set_vlmetalayer("author", Bytes{0xa3, 'a', 'n', 'n'});  // replaces
    w.close();
  }
  auto f = Frame::open(path);
  const FrameHeader& h = f->header();
  EXPECT_EQ(f->sparse(), v.sparse);
  EXPECT_EQ(h.version(), 2);
  EXPECT_EQ(h.general_flags, 0x12);
  EXPECT_EQ(h.compcode(), uint8_t(v.codec));
  EXPECT_EQ(h.udcodec, uint8_t(v.codec));
  EXPECT_EQ(h.clevel(), 5);
  EXPECT_EQ(h.splitmode(), SplitMode::always);
  EXPECT_EQ(h.typesize, v.typesize);
  EXPECT_EQ(h.chunksize, 40000);
  EXPECT_EQ(h.nthreads_comp, 1);
  EXPECT_EQ(h.nthreads_decomp, 1);
  EXPECT_EQ(h.filters[5], v.filter);
  EXPECT_TRUE(h.has_vlmetalayers);
  EXPECT_EQ(h.nbytes, int64_t(data.size()));
  ASSERT_EQ(f->nchunks(), 6);
  Bytes back;
  int64_t stored = 0;
  for (int64_t n = 0; n < f->nchunks(); ++n) {
    Bytes c = f->read_chunk(n);
    back.insert(back.end(), c.begin(), c.end());
    stored += f->chunk_info(n).cbytes;
    EXPECT_EQ(f->index_entry(n).raw, v.sparse ? n : stored - f->chunk_info(n).cbytes);
    if (v.sparse) {
      EXPECT_TRUE(std::filesystem::exists(path / sframe_chunk_filename(n)));
    }
  }
  EXPECT_EQ(back, data);
  EXPECT_EQ(h.cbytes, stored);
  ASSERT_EQ(f->metalayers().size(), 1u);
  EXPECT_EQ(f->metalayers()[0].content, (Bytes{'h', 'i'}));
  ASSERT_EQ(f->vlmetalayers().size(), 2u);
  EXPECT_EQ(f->vlmetalayers()[0].name, "author");
  EXPECT_EQ(f->vlmetalayer_content(f->vlmetalayers()[0]), (Bytes{0xa3, 'a', 'n', 'n'}));
  EXPECT_EQ(f->vlmetalayer_content(f->vlmetalayers()[1]), pattern(100000, 3));
  ChunkHeader vh = parse_chunk_header(f->vlmetalayers()[1].stored);
  EXPECT_EQ(vh.typesize, 1);  // as python-blosc2 stores vlmeta
  expect_serializes_back(*f);
  Json j = frame_to_json(*f);
  EXPECT_EQ(j["vlmetalayers"][1]["size"], 100000);
}

INSTANTIATE_TEST_SUITE_P(All, WriterVariants,
                         ::testing::Values(Variant{Codec::blosclz, 4, kFilterShuffle, false},
                                           Variant{Codec::lz4, 8, kFilterBitshuffle, false},
                                           Variant{Codec::lz4hc, 2, kFilterShuffle, true},
                                           Variant{Codec::zlib, 1, kFilterNone, false},
                                           Variant{Codec::zstd, 4, kFilterShuffle, true},
                                           Variant{Codec::zstd, 16, kFilterBytedelta, false}));

TEST(FrameWriter, RechunkedFixtureHasTheSameHeaderAndChunkRegion) {
  for (std::string name : {"codec-zstd-shuffle-f4.b2frame", "codec-lz4-shuffle-f4.b2frame", "b2nd-3d-f8.b2nd",
                           "filter-delta-shuffle-zstd-i4.b2frame", "special-chunks-f4.b2frame"}) {
    SCOPED_TRACE(name);
    auto original = Frame::open(frame_path(name));
    const FrameHeader& oh = original->header();
    FrameParams p;
    p.cparams.codec = Codec(oh.compcode());
    p.cparams.clevel = oh.clevel();
    p.cparams.typesize = oh.typesize;
    p.cparams.blocksize = oh.blocksize;
    p.cparams.filters = oh.filters;
    p.cparams.filters_meta = oh.filters_meta;
    p.cparams.splitmode = oh.splitmode();
    p.chunksize = oh.chunksize;
    p.metalayers = original->metalayers();
    TempDir dir;
    auto path = dir.path() / "copy";
    {
      FrameWriter w(path, p);
      for (int64_t n = 0; n < original->nchunks(); ++n) w.append_raw(original->read_raw_chunk(n));
      for (const Vlmetalayer& v : original->vlmetalayers()) w.set_vlmetalayer(v.name, original->vlmetalayer_content(v));
    }
    auto copy = Frame::open(path);
    FrameHeader ch = copy->header();
    ch.frame_len = oh.frame_len;
    ch.nthreads_comp = oh.nthreads_comp;
    ch.nthreads_decomp = oh.nthreads_decomp;
    Bytes ours = serialize_frame_header(ch, copy->metalayers());
    Bytes theirs = serialize_frame_header(oh, original->metalayers());
    for (size_t i = 0; i < std::min(ours.size(), theirs.size()); ++i)
      EXPECT_EQ(int(ours[i]), int(theirs[i])) << "header byte " << i;
    EXPECT_EQ(ours.size(), theirs.size());
    Bytes a = file_bytes(*original), b = file_bytes(*copy);
    ASSERT_GE(b.size(), size_t(oh.header_len + oh.cbytes));
    EXPECT_TRUE(std::equal(a.begin() + oh.header_len, a.begin() + oh.header_len + oh.cbytes, b.begin() + oh.header_len));
    for (int64_t n = 0; n < original->nchunks(); ++n) EXPECT_EQ(copy->index_entry(n).raw, original->index_entry(n).raw);
  }
}

TEST(FrameWriter, SpecialChunksWithFixedChunksize) {
  TempDir dir;
  auto path = dir.path() / "s.b2frame";
  FrameParams p = params_for(Codec::zstd, 4, 4000, false);
  Bytes zeros(4000, 0), regular = pattern(4000, 1), repeated(4000);
  for (size_t i = 0; i < repeated.size(); i += 4) {
    float v = 3.25f;
    std::memcpy(&repeated[i], &v, 4);
  }
  Bytes nan_chunk = make_special_chunk(Special::nan, 4000, 4);
  Bytes uninit_chunk = make_special_chunk(Special::uninit, 4000, 4);
  {
    FrameWriter w(path, p);
    w.append(zeros);  // chunk 0: never a stored zeros chunk (B3)
    w.append(regular);
    w.append_raw(nan_chunk);
    w.append(repeated);
    w.append_raw(uninit_chunk);
    w.append(Bytes(1000, 0));  // short last chunk
  }
  auto f = Frame::open(path);
  ASSERT_EQ(f->nchunks(), 6);
  EXPECT_EQ(f->index_entry(0).raw, int64_t(0x8100000000000000ull));
  EXPECT_EQ(f->index_entry(2).raw, int64_t(0x8200000000000000ull));
  EXPECT_EQ(f->index_entry(4).raw, int64_t(0x8400000000000000ull));
  EXPECT_EQ(f->index_entry(5).raw, int64_t(0x8100000000000000ull));
  EXPECT_EQ(f->index_entry(1).raw, 0);
  EXPECT_EQ(f->chunk_info(3).special, Special::value);
  EXPECT_EQ(f->chunk_info(3).cbytes, 36);
  EXPECT_EQ(f->header().cbytes, f->chunk_info(1).cbytes + 36);
  EXPECT_EQ(f->read_chunk(0), zeros);
  EXPECT_EQ(f->read_chunk(1), regular);
  Bytes nan = f->read_chunk(2);
  float first;
  std::memcpy(&first, nan.data(), 4);
  EXPECT_TRUE(std::isnan(first));
  EXPECT_EQ(f->read_chunk(3), repeated);
  EXPECT_EQ(f->read_chunk(5), Bytes(1000, 0));
  EXPECT_EQ(f->chunk_nbytes(5), 1000);
  EXPECT_EQ(f->header().nbytes, 21000);
  expect_serializes_back(*f);
}

TEST(FrameWriter, VariableChunksStoreRepeatValuesNotSpecialEntries) {
  for (bool sparse : {false, true}) {
    TempDir dir;
    auto path = dir.path() / "v.b2frame";
    FrameParams p = params_for(Codec::lz4, 1, 0, sparse);
    std::vector<Bytes> chunks = {Bytes(1000, 0), pattern(500, 2), pattern(2000, 3), Bytes(520, 0), pattern(301, 4)};
    {
      FrameWriter w(path, p);
      for (const Bytes& c : chunks) w.append(c);
      w.append_raw(make_special_chunk(Special::uninit, 64, 1));
      w.append_raw(make_special_chunk(Special::nan, 64, 8));
    }
    chunks.push_back(Bytes(64, 0));
    Bytes nan8(64);
    for (size_t i = 0; i < 64; i += 8) store_le64(&nan8[i], 0x7FF8000000000000ull);
    chunks.push_back(nan8);
    auto f = Frame::open(path);
    const FrameHeader& h = f->header();
    EXPECT_EQ(h.chunksize, 0);
    EXPECT_EQ(h.version(), 3);
    EXPECT_EQ(h.general_flags, 0x53);
    ASSERT_EQ(f->nchunks(), int64_t(chunks.size()));
    int64_t offset = 0;
    for (int64_t n = 0; n < f->nchunks(); ++n) {
      SCOPED_TRACE(n);
      EXPECT_GE(f->index_entry(n).raw, 0);  // no special entries with variable chunks (B2)
      Special s = f->chunk_info(n).special;
      EXPECT_TRUE(s == Special::none || s == Special::value);  // no stored zeros/nan/uninit (B3)
      EXPECT_EQ(f->read_chunk(n), chunks[size_t(n)]);
      EXPECT_EQ(f->chunk_data_offset(n), offset);
      offset += int64_t(chunks[size_t(n)].size());
    }
    EXPECT_EQ(f->chunk_data_offset(f->nchunks()), offset);
    expect_serializes_back(*f);
  }
}

TEST(FrameWriter, VariableModeWithEqualChunksWritesAFixedChunksize) {
  TempDir dir;
  auto path = dir.path() / "e.b2frame";
  {
    FrameWriter w(path, params_for(Codec::blosclz, 4, 0, false));
    w.append(pattern(800, 1));
    w.append(pattern(800, 2));
    w.append(pattern(400, 3));
  }
  auto f = Frame::open(path);
  EXPECT_EQ(f->header().chunksize, 800);
  EXPECT_EQ(f->header().version(), 2);
  EXPECT_EQ(f->nchunks(), 3);
  EXPECT_EQ(f->read_chunk(2), pattern(400, 3));
}

TEST(FrameWriter, EmptyFrames) {
  for (bool sparse : {false, true}) {
    TempDir dir;
    auto path = dir.path() / "empty.b2frame";
    {
      FrameWriter w(path, params_for(Codec::zstd, 8, 1000, sparse));
      w.set_vlmetalayer("comment", Bytes{'n', 'o'});
    }
    auto f = Frame::open(path);
    EXPECT_EQ(f->nchunks(), 0);
    EXPECT_EQ(f->header().chunksize, -1);
    EXPECT_EQ(f->header().header_len, 97);
    EXPECT_EQ(f->header().frame_len, 97 + f->trailer_len());
    EXPECT_EQ(f->vlmetalayer_content(f->vlmetalayers()[0]), (Bytes{'n', 'o'}));
    expect_serializes_back(*f);
  }
}

TEST(FrameWriter, B2ndArrayRoundTrip) {
  TempDir dir;
  auto path = dir.path() / "a.b2nd";
  NdMeta meta;
  meta.ndim = 2;
  meta.shape = {30, 40};
  meta.chunkshape = {16, 16};
  meta.blockshape = {8, 8};
  meta.dtype = "<i4";
  FrameParams p = params_for(Codec::zstd, 4, 16 * 16 * 4, false);
  p.metalayers.push_back({"b2nd", serialize_b2nd_meta(meta)});
  std::vector<Bytes> chunks;
  {
    FrameWriter w(path, p);
    for (int c = 0; c < 6; ++c) {
      chunks.push_back(pattern(1024, uint32_t(c)));
      w.append(chunks.back());
    }
  }
  auto f = Frame::open(path);
  NdMeta back = parse_nd_meta(f->find_metalayer("b2nd")->content, false);
  EXPECT_EQ(back.shape, meta.shape);
  NdLayout layout(back, f->header().typesize, f->nchunks(), f->header().chunksize);
  EXPECT_EQ(layout.array_bytes(), 30 * 40 * 4);
  Json j = frame_to_json(*f);
  EXPECT_EQ(j["array"]["npy_descr"], "<i4");
  EXPECT_EQ(j["array"]["dtype_mismatch"], false);
  EXPECT_EQ(j["metalayers"][0]["content"]["dtype"], "<i4");
}

TEST(FrameWriter, RefusesWhatC_Blosc2WouldNotAccept) {
  TempDir dir;
  std::filesystem::path existing = dir.path() / "exists";
  std::ofstream(existing) << "x";
  try {
    FrameWriter w(existing, params_for(Codec::zstd, 4, 100, false));
    FAIL();
  } catch (const IoError& e) {
    EXPECT_EQ(e.error_number(), EEXIST);
  }
  EXPECT_THROW(FrameWriter(existing, params_for(Codec::zstd, 4, 100, true)), IoError);

  FrameParams many = params_for(Codec::zstd, 4, 100, false);
  for (int i = 0; i < 17; ++i) many.metalayers.push_back({"m" + std::to_string(i), Bytes{1}});
  EXPECT_THROW(FrameWriter(dir.path() / "m", many), FormatError);
  FrameParams long_name = params_for(Codec::zstd, 4, 100, false);
  long_name.metalayers.push_back({std::string(32, 'n'), Bytes{1}});
  EXPECT_THROW(FrameWriter(dir.path() / "n", long_name), FormatError);

  FrameWriter w(dir.path() / "w", params_for(Codec::zstd, 4, 100, false));
  EXPECT_THROW(w.append(Bytes(101, 1)), FormatError);
  EXPECT_THROW(w.append(Bytes()), FormatError);
  w.append(Bytes(60, 1));
  EXPECT_THROW(w.append(Bytes(100, 1)), FormatError);  // only the last chunk may be short
  for (int i = 0; i < 16; ++i) w.set_vlmetalayer("v" + std::to_string(i), Bytes{1});
  EXPECT_THROW(w.set_vlmetalayer("v16", Bytes{1}), FormatError);
  w.set_vlmetalayer("v3", Bytes{2});  // replacing is fine
  EXPECT_THROW(w.set_vlmetalayer(std::string(32, 'x'), Bytes{1}), FormatError);
  Bytes raw = make_special_chunk(Special::zeros, 40, 4);
  raw.push_back(0);  // longer than its cbytes
  EXPECT_THROW(w.append_raw(raw), FormatError);
  w.close();
  EXPECT_THROW(w.append(Bytes(4, 1)), FormatError);
  auto f = Frame::open(dir.path() / "w");
  EXPECT_EQ(f->vlmetalayers().size(), 16u);
  EXPECT_EQ(f->vlmetalayer_content(*f->find_vlmetalayer("v3")), Bytes{2});
}

TEST(FrameWriter, RejectsCorruptRawChunks) {
  TempDir dir;
  FrameWriter w(dir.path() / "r", params_for(Codec::zstd, 4, 0, false));
  Bytes smooth(4000);
  for (size_t i = 0; i < smooth.size(); ++i) smooth[i] = uint8_t(i / 64);
  Bytes good = encode_chunk(smooth, CompressParams{Codec::zstd, 5, 4});
  Bytes bad = good;
  ASSERT_EQ(good[2] & kFlagMemcpyed, 0) << "want a compressed chunk";
  store_le32(&bad[32], uint32_t(bad.size() + 100));  // first block starts past the end
  EXPECT_THROW(w.append_raw(bad), FormatError);
  EXPECT_THROW(w.append_raw(ByteSpan(good).first(good.size() - 1)), FormatError);
  Bytes lazy = good;
  lazy[31] |= kBlosc2Lazy;
  EXPECT_THROW(w.append_raw(lazy), FormatError);
  w.append_raw(good);
}

long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

TEST(FrameWriter, AMillionChunksOpenInMilliseconds) {
  TempDir dir;
  auto path = dir.path() / "million.b2frame";
  const int64_t kChunks = 1000000;
  {
    FrameParams p = params_for(Codec::blosclz, 8, 8, false);
    FrameWriter w(path, p);
    Bytes chunk(8);
    for (int64_t n = 0; n < kChunks; ++n) {
      store_le64(chunk.data(), uint64_t(n) + 1);
      w.append(chunk);
    }
  }
  // CPU time of this process, not wall time: other processes on a busy
  // machine would stretch the latter.
  auto cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
  };
  long before = rss_kb();
  const double t0 = cpu_ms();
  auto f = Frame::open(path);
  const double ms = cpu_ms() - t0;
  long after = rss_kb();
  std::printf("opened %lld chunks in %.1f ms of CPU, RSS +%ld kB\n", static_cast<long long>(kChunks), ms, after - before);
  EXPECT_LT(ms, 1000.0);
  EXPECT_LT(after - before, 64 * 1024);
  ASSERT_EQ(f->nchunks(), kChunks);
  EXPECT_EQ(f->chunk_data_offset(kChunks - 1), (kChunks - 1) * 8);
  Bytes c = f->read_chunk(765432);
  EXPECT_EQ(load_le64(c.data()), 765433u);
}

}  // namespace
}  // namespace blosc2fs
