// Every fixture frame reads exactly as c-blosc2 reported it (fixtures/expect).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "b2nd.h"
#include "chunk_codec.h"
#include "fixtures.h"
#include "frame.h"
#include "frame_json.h"

namespace blosc2fs {
namespace {

using testing::fixture_frame_names;
using testing::fixtures_dir;
using testing::frame_path;
using testing::gunzip_file;
using testing::hex_to_bytes;
using testing::load_expect;

// A frame of fixtures/ or fixtures-extra/ (same layout and expectation schema).
struct FixtureParam {
  std::filesystem::path root;
  std::string name;
  bool extra = false;
  std::filesystem::path frame() const { return root / "frames" / name; }
  std::filesystem::path expect_file(const std::string& suffix) const { return root / "expect" / (name + suffix); }
};

std::vector<FixtureParam> all_fixture_frames() {
  std::vector<FixtureParam> out;
  for (const std::string& name : fixture_frame_names()) out.push_back({fixtures_dir(), name, false});
  for (const std::string& name : testing::fixture_extra_frame_names())
    out.push_back({testing::fixtures_extra_dir(), name, true});
  return out;
}

class FixtureFrame : public ::testing::TestWithParam<FixtureParam> {};

std::string param_name(const ::testing::TestParamInfo<FixtureParam>& info) {
  std::string s = info.param.extra ? "extra_" : "";
  for (char c : info.param.name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

// The C-order array from decoded chunks, item by item (format-notes §7).
Bytes reference_array(const NdMeta& m, const Bytes& data, int ts, int64_t chunk_bytes) {
  const int nd = m.ndim;
  int64_t nitems = 1;
  for (int64_t s : m.shape) nitems *= s;
  Bytes out(size_t(nitems * ts));
  std::vector<int64_t> ext(nd), cpd(nd), bpd(nd);
  int64_t block_items = 1;
  for (int i = 0; i < nd; ++i) {
    ext[i] = (m.chunkshape[i] + m.blockshape[i] - 1) / m.blockshape[i] * m.blockshape[i];
    cpd[i] = (m.shape[i] + m.chunkshape[i] - 1) / m.chunkshape[i];
    bpd[i] = ext[i] / m.blockshape[i];
    block_items *= m.blockshape[i];
  }
  for (int64_t item = 0; item < nitems; ++item) {
    int64_t rest = item, chunk = 0, block = 0, inb = 0;
    std::vector<int64_t> g(nd);
    for (int i = nd - 1; i >= 0; --i) {
      g[i] = rest % m.shape[i];
      rest /= m.shape[i];
    }
    for (int i = 0; i < nd; ++i) {
      int64_t ic = g[i] % m.chunkshape[i];
      chunk = chunk * cpd[i] + g[i] / m.chunkshape[i];
      block = block * bpd[i] + ic / m.blockshape[i];
      inb = inb * m.blockshape[i] + ic % m.blockshape[i];
    }
    int64_t src = chunk * chunk_bytes + (block * block_items + inb) * ts;
    std::memcpy(out.data() + item * ts, data.data() + src, size_t(ts));
  }
  return out;
}

TEST_P(FixtureFrame, MatchesExpectations) {
  const FixtureParam& fixture = GetParam();
  auto expect = load_expect(fixture.root, fixture.name);
  auto frame = Frame::open(fixture.frame());
  const FrameHeader& h = frame->header();
  EXPECT_EQ(frame->sparse(), expect["kind"] == "sframe");
  EXPECT_EQ(h.typesize, expect["typesize"].get<int>());
  EXPECT_EQ(h.chunksize, expect["chunksize"].get<int>());
  EXPECT_EQ(h.blocksize, expect["blocksize"].get<int>());
  EXPECT_EQ(frame->nchunks(), expect["nchunks"].get<int64_t>());
  EXPECT_EQ(h.nbytes, expect["nbytes"].get<int64_t>());
  EXPECT_EQ(h.cbytes, expect["cbytes"].get<int64_t>());
  EXPECT_EQ(h.compcode(), expect["compcode"].get<int>());
  EXPECT_EQ(h.clevel(), expect["clevel"].get<int>());
  if (expect["splitmode"].get<int>() == 0) {
    // Releases before 2.6 had no split mode (fixtures-extra/README.md): 2.0.0
    // wrote 0 in byte 0x1C, which c-blosc2 3.x, like us, reads as ALWAYS.
    EXPECT_EQ(h.other_flags & 0x03, 0);
    EXPECT_EQ(h.splitmode(), SplitMode::always);
  } else {
    EXPECT_EQ(int(h.splitmode()), expect["splitmode"].get<int>());
  }
  for (int i = 0; i < kMaxFilters; ++i) {
    EXPECT_EQ(h.filters[i], expect["filters"][i].get<int>()) << "slot " << i;
    EXPECT_EQ(h.filters_meta[i], expect["filters_meta"][i].get<int>()) << "slot " << i;
  }

  Bytes data;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    SCOPED_TRACE("chunk " + std::to_string(n));
    const auto& e = expect["chunks"][size_t(n)];
    IndexEntry entry = frame->index_entry(n);
    EXPECT_EQ(entry.raw, e["index_entry"].get<int64_t>());
    ChunkInfo info = frame->chunk_info(n);
    Bytes raw = frame->read_raw_chunk(n);
    ChunkHeader rh = parse_chunk_header(raw);
    EXPECT_EQ(info.nbytes, e["nbytes"].get<int>());
    EXPECT_EQ(rh.nbytes, e["nbytes"].get<int>());
    EXPECT_EQ(int64_t(raw.size()), e["cbytes"].get<int64_t>());
    EXPECT_EQ(rh.blocksize, e["blocksize"].get<int>());
    EXPECT_EQ(int(info.special), e["special"].get<int>());
    EXPECT_EQ(int(rh.special()), e["special"].get<int>());
    if (entry.raw < 0) {
      EXPECT_EQ(info.cbytes, 0);
    } else {
      EXPECT_EQ(info.cbytes, e["cbytes"].get<int>());
      EXPECT_EQ(info.blocksize, e["blocksize"].get<int>());
    }
    EXPECT_EQ(frame->chunk_nbytes(n), info.nbytes);
    EXPECT_EQ(frame->chunk_data_offset(n), int64_t(data.size()));
    Bytes chunk = frame->read_chunk(n);
    EXPECT_EQ(int64_t(chunk.size()), info.nbytes);
    data.insert(data.end(), chunk.begin(), chunk.end());
  }
  EXPECT_EQ(frame->chunk_data_offset(frame->nchunks()), int64_t(data.size()));
  auto data_gz = fixture.expect_file(".data.gz");
  if (frame->nchunks() > 0) {
    ASSERT_TRUE(std::filesystem::exists(data_gz));
    Bytes expected = gunzip_file(data_gz);
    ASSERT_EQ(expected.size(), data.size());
    // An uninitialized chunk has no defined content: c-blosc2 leaves whatever its
    // buffer held (the previous chunk, in special-chunks-f4); we give zeros.
    for (int64_t n = 0; n < frame->nchunks(); ++n) {
      if (frame->chunk_info(n).special != Special::uninit) continue;
      auto begin = data.begin() + frame->chunk_data_offset(n);
      auto end = begin + frame->chunk_nbytes(n);
      EXPECT_TRUE(std::all_of(begin, end, [](uint8_t b) { return b == 0; }));
      std::copy(begin, end, expected.begin() + frame->chunk_data_offset(n));
    }
    EXPECT_TRUE(expected == data) << "decoded data differs";
  }
  EXPECT_EQ(int64_t(data.size()), h.nbytes);
  EXPECT_THROW(frame->read_chunk(frame->nchunks()), std::out_of_range);

  EXPECT_EQ(frame->metalayers().size(), expect["metalayers"].size());
  for (auto& [meta_name, hex] : expect["metalayers"].items()) {
    const Metalayer* m = frame->find_metalayer(meta_name);
    ASSERT_TRUE(m) << meta_name;
    EXPECT_EQ(m->content, hex_to_bytes(hex.get<std::string>())) << meta_name;
  }
  EXPECT_EQ(frame->vlmetalayers().size(), expect["vlmetalayers"].size());
  for (auto& [vl_name, hex] : expect["vlmetalayers"].items()) {
    const Vlmetalayer* v = frame->find_vlmetalayer(vl_name);
    ASSERT_TRUE(v) << vl_name;
    EXPECT_EQ(frame->vlmetalayer_content(*v), hex_to_bytes(hex.get<std::string>())) << vl_name;
  }

  const Metalayer* nd = frame->find_metalayer("b2nd");
  if (!nd) nd = frame->find_metalayer("caterva");
  if (nd) {
    NdMeta meta = parse_nd_meta(nd->content, nd->name == "caterva");
    if (expect.contains("b2nd")) {
      EXPECT_EQ(meta.shape, expect["b2nd"]["shape"].get<std::vector<int64_t>>());
      EXPECT_EQ(meta.chunkshape, expect["b2nd"]["chunkshape"].get<std::vector<int32_t>>());
      EXPECT_EQ(meta.blockshape, expect["b2nd"]["blockshape"].get<std::vector<int32_t>>());
      EXPECT_EQ(*meta.dtype, expect["b2nd"]["dtype"].get<std::string>());
    }
    NdLayout layout(meta, h.typesize, frame->nchunks(), h.chunksize);
    Bytes reference = reference_array(meta, data, h.typesize, layout.chunk_bytes());
    auto array_gz = fixture.expect_file(".array.gz");
    if (std::filesystem::exists(array_gz)) {
      EXPECT_TRUE(gunzip_file(array_gz) == reference);
    }
    std::vector<Bytes> chunks(size_t(frame->nchunks()));
    auto chunk_data = [&](int64_t c) {
      chunks[size_t(c)] = frame->read_chunk(c);
      return ByteSpan(chunks[size_t(c)]);
    };
    Bytes whole(static_cast<size_t>(layout.array_bytes()));
    layout.read(0, whole, chunk_data);
    EXPECT_TRUE(whole == reference) << "whole array differs";
    std::mt19937 rng(42);
    for (int i = 0; i < 50; ++i) {
      int64_t off = int64_t(rng() % reference.size());
      int64_t len = int64_t(rng() % std::min<int64_t>(int64_t(reference.size()) - off + 1, 100000));
      Bytes part(static_cast<size_t>(len));
      layout.read(off, part, chunk_data);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), reference.begin() + off)) << off << "+" << len;
    }
  }

  Json info = frame_to_json(*frame);
  EXPECT_EQ(info["nchunks"].get<int64_t>(), frame->nchunks());
  EXPECT_EQ(info["frame_type"], frame->sparse() ? "sparse" : "contiguous");
  EXPECT_EQ(info["metalayers"].size(), frame->metalayers().size());
  EXPECT_EQ(info["vlmetalayers"].size(), frame->vlmetalayers().size());
  if (nd) {
    ASSERT_TRUE(info.contains("array"));
    EXPECT_FALSE(info["array"].contains("error")) << info["array"].dump();
  }
  std::string tsv = index_tsv_text(*frame);
  EXPECT_EQ(std::count(tsv.begin(), tsv.end(), '\n'), frame->nchunks() + 1);
  EXPECT_EQ(tsv.find("error"), std::string::npos);
}

// The serializers write today's layout: the commit engine never rewrites a frame
// of an older layout (those mount read-only; legacy_layouts_test checks that).
std::vector<FixtureParam> current_layout_fixture_frames() {
  std::vector<FixtureParam> out;
  for (const FixtureParam& p : all_fixture_frames()) {
    try {
      if (Frame::open(p.frame())->layout() != FrameLayout::current) continue;
    } catch (const std::exception&) {
      // kept: the test itself then fails on opening it
    }
    out.push_back(p);
  }
  return out;
}

class CurrentLayoutFrame : public FixtureFrame {};

TEST_P(CurrentLayoutFrame, HeaderAndTrailerSerializeByteIdentically) {
  const FixtureParam& fixture = GetParam();
  auto frame = Frame::open(fixture.frame());
  auto file = frame->sparse() ? fixture.frame() / "chunks.b2frame" : fixture.frame();
  Bytes bytes = testing::read_file(file);
  const FrameHeader& h = frame->header();
  Bytes header(bytes.begin(), bytes.begin() + h.header_len);
  Bytes trailer(bytes.begin() + (h.frame_len - frame->trailer_len()), bytes.begin() + h.frame_len);
  ParsedHeader parsed = parse_frame_header(header);
  EXPECT_EQ(serialize_frame_header(parsed.fixed, parsed.metalayers), header);
  EXPECT_EQ(serialize_frame_trailer(parse_frame_trailer(trailer)), trailer);
}

INSTANTIATE_TEST_SUITE_P(All, FixtureFrame, ::testing::ValuesIn(all_fixture_frames()), param_name);
INSTANTIATE_TEST_SUITE_P(All, CurrentLayoutFrame, ::testing::ValuesIn(current_layout_fixture_frames()), param_name);

TEST(FrameOpen, EmbeddedAtAnOffsetWithTrailingJunk) {
  testing::TempDir dir;
  Bytes frame_bytes = testing::read_file(frame_path("frame_simple-zstd.b2frame"));
  Bytes file(1000, 0xAB);
  file.insert(file.end(), frame_bytes.begin(), frame_bytes.end());
  file.insert(file.end(), 333, 0xCD);
  auto path = dir.path() / "embedded.bin";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
  auto plain = Frame::open(frame_path("frame_simple-zstd.b2frame"));
  auto embedded = Frame::open(path, 1000);
  EXPECT_EQ(embedded->file_offset(), 1000);
  ASSERT_EQ(embedded->nchunks(), plain->nchunks());
  for (int64_t n = 0; n < plain->nchunks(); ++n) EXPECT_EQ(embedded->read_chunk(n), plain->read_chunk(n));
  EXPECT_THROW(Frame::open(path, 999), FormatError);
  EXPECT_THROW(Frame::open(path), FormatError);
}

TEST(FrameOpen, SparseWithTrailingSlashAndErrors) {
  auto frame = Frame::open(frame_path("sframe-zstd-f4.b2frame").string() + "/");
  EXPECT_TRUE(frame->sparse());
  EXPECT_EQ(frame->read_chunk(0).size(), size_t(frame->chunk_nbytes(0)));
  EXPECT_THROW(Frame::open(fixtures_dir() / "frames" / "does-not-exist"), IoError);
  EXPECT_THROW(Frame::open(fixtures_dir() / "README.md"), FormatError);
  EXPECT_THROW(Frame::open(fixtures_dir() / "chunks"), IoError);  // no chunks.b2frame
}

TEST(FrameOpen, ErrorsNameTheChunkAndFrame) {
  testing::TempDir dir;
  std::filesystem::copy(frame_path("sframe-zstd-f4.b2frame"), dir.path() / "s.b2frame");
  std::filesystem::remove(dir.path() / "s.b2frame" / "00000003.chunk");
  auto frame = Frame::open(dir.path() / "s.b2frame");
  try {
    frame->read_chunk(3);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("chunk 3 of " + (dir.path() / "s.b2frame").string() + ": ", 0), 0u)
        << e.what();
  }
  EXPECT_NO_THROW(frame->read_chunk(2));
  std::string tsv = index_tsv_text(*frame);
  EXPECT_NE(tsv.find("3\t3\terror"), std::string::npos) << tsv;
  EXPECT_NO_THROW(frame_json_text(*frame));
}

TEST(FrameOpen, ConcurrentReadsAgree) {
  auto frame = Frame::open(frame_path("varchunks-lz4-3.0.0.b2frame"));
  std::vector<Bytes> expected;
  for (int64_t n = 0; n < frame->nchunks(); ++n) expected.push_back(frame->read_chunk(n));
  for (int round = 0; round < 20; ++round) {
    auto fresh = Frame::open(frame_path("varchunks-lz4-3.0.0.b2frame"));
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int64_t n = 0; n < fresh->nchunks(); ++n) {
          int64_t k = (n + t) % fresh->nchunks();
          int64_t off = fresh->chunk_data_offset(k);
          int64_t want = 0;
          for (int64_t i = 0; i < k; ++i) want += int64_t(expected[size_t(i)].size());
          if (off != want || fresh->read_chunk(k) != expected[size_t(k)]) ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
  }
}

TEST(FrameOpen, StampFollowsTheFile) {
  testing::TempDir dir;
  auto path = dir.path() / "f.b2frame";
  std::filesystem::copy(frame_path("frame_simple-lz4.b2frame"), path);
  auto frame = Frame::open(path);
  Frame::Stamp a = frame->stamp();
  EXPECT_EQ(a.frame_len, frame->header().frame_len);
  EXPECT_EQ(a.file_size, int64_t(std::filesystem::file_size(path)));
  EXPECT_EQ(frame->stamp(), a);
  std::ofstream(path, std::ios::app) << "x";
  EXPECT_NE(frame->stamp(), a);
}

}  // namespace
}  // namespace blosc2fs
