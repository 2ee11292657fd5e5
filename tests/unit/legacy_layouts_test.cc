// Frames of c-blosc2's pre-releases (legacy-layouts.md): every one in
// fixtures-extra reads exactly as the release that wrote it read it back
// (its expect.json and data.gz), and damaged copies fail with errors, never crashes.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "b2nd.h"
#include "chunk_codec.h"
#include "exercise_frame.h"
#include "fixtures.h"
#include "frame.h"
#include "frame_editor.h"
#include "frame_json.h"
#include "frame_nd.h"

namespace blosc2fs {
namespace {

using testing::fixtures_extra_dir;
using testing::gunzip_file;
using testing::hex_to_bytes;
using testing::TempDir;
using testing::write_file;

struct LegacyFixture {
  const char* name;
  FrameLayout layout;
  int header_elements;
};

// Every frame of fixtures-extra in an older layout, with what its bytes say it is.
const LegacyFixture kLegacyFixtures[] = {
    {"v2.0.0-beta.1-lz4-shuffle-f4.b2frame", FrameLayout::beta1, 11},
    {"v2.0.0-beta.1-zstd-bitshuffle-f8-meta.b2frame", FrameLayout::beta1, 12},
    {"v2.0.0-beta.2-zstd-bitshuffle-f8-meta-usermeta.b2frame", FrameLayout::beta2, 13},
    {"v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame", FrameLayout::beta3_5, 13},
    {"v2.0.0.beta.5-zlib-delta-shuffle-i4-meta.b2frame", FrameLayout::beta3_5, 13},
    {"python-caterva-example.cat", FrameLayout::beta3_5, 13},
};

std::filesystem::path legacy_path(const std::string& name) { return fixtures_extra_dir() / "frames" / name; }

nlohmann::json legacy_expect(const std::string& name) {
  Bytes text = testing::read_file(fixtures_extra_dir() / "expect" / (name + ".expect.json"));
  return nlohmann::json::parse(text.begin(), text.end());
}

class LegacyFrame : public ::testing::TestWithParam<LegacyFixture> {};

std::string param_name(const ::testing::TestParamInfo<LegacyFixture>& info) {
  std::string s;
  for (const char* c = info.param.name; *c; ++c) s += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
  return s;
}

TEST(LegacyLayouts, EveryOlderFrameOfFixturesExtraIsListed) {
  std::set<std::string> listed;
  for (const LegacyFixture& f : kLegacyFixtures) listed.insert(f.name);
  for (const auto& entry : std::filesystem::directory_iterator(fixtures_extra_dir() / "frames")) {
    const Bytes head = testing::read_file(entry.path());
    ASSERT_GE(head.size(), 26u) << entry.path();
    // Byte 0 is the header's fixarray: 0x9B..0x9D are the betas' 11 to 13 elements.
    const bool older = head[0] >= 0x9B && head[0] <= 0x9D;
    EXPECT_EQ(older, listed.count(entry.path().filename().string()) == 1) << entry.path();
  }
}

TEST_P(LegacyFrame, ReadsAsItsWriterReadIt) {
  const LegacyFixture& fixture = GetParam();
  const std::string name = fixture.name;
  const auto expect = legacy_expect(name);
  auto frame = Frame::open(legacy_path(name));
  const FrameHeader& h = frame->header();
  EXPECT_EQ(frame->layout(), fixture.layout);
  EXPECT_TRUE(h.legacy());
  EXPECT_EQ(testing::read_file(legacy_path(name))[0], 0x90 + fixture.header_elements);
  EXPECT_FALSE(frame->sparse());
  EXPECT_EQ(expect["kind"], "cframe");
  EXPECT_EQ(h.typesize, expect["typesize"].get<int>());
  EXPECT_EQ(h.chunksize, expect["chunksize"].get<int>());
  EXPECT_EQ(h.blocksize, expect["blocksize"].get<int>());  // 0: these headers have none
  EXPECT_EQ(frame->nchunks(), expect["nchunks"].get<int64_t>());
  EXPECT_EQ(h.nbytes, expect["nbytes"].get<int64_t>());
  EXPECT_EQ(h.cbytes, expect["cbytes"].get<int64_t>());
  EXPECT_EQ(h.compcode(), expect["compcode"].get<int>());
  EXPECT_EQ(h.clevel(), expect["clevel"].get<int>());
  EXPECT_EQ(expect["splitmode"].get<int>(), 0);  // these releases had no splitmode
  for (int i = 0; i < kMaxFilters; ++i) {
    EXPECT_EQ(h.filters[i], expect["filters"][i].get<int>()) << "slot " << i;
    EXPECT_EQ(h.filters_meta[i], expect["filters_meta"][i].get<int>()) << "slot " << i;
  }
  EXPECT_EQ(frame->trailer_len(), fixture.layout == FrameLayout::beta1
                                      ? 0
                                      : int64_t(kUsermetaTrailerMinLen + frame->stored_usermeta().size()));

  Bytes data;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    SCOPED_TRACE("chunk " + std::to_string(n));
    const auto& e = expect["chunks"][size_t(n)];
    EXPECT_EQ(frame->index_entry(n).raw, e["index_entry"].get<int64_t>());
    ChunkInfo info = frame->chunk_info(n);
    EXPECT_EQ(info.nbytes, e["nbytes"].get<int>());
    EXPECT_EQ(info.cbytes, e["cbytes"].get<int>());
    EXPECT_EQ(info.blocksize, e["blocksize"].get<int>());
    EXPECT_EQ(int(info.special), e["special"].get<int>());
    EXPECT_EQ(int64_t(frame->read_raw_chunk(n).size()), e["cbytes"].get<int64_t>());
    EXPECT_EQ(frame->chunk_data_offset(n), int64_t(data.size()));
    Bytes chunk = frame->read_chunk(n);
    data.insert(data.end(), chunk.begin(), chunk.end());
  }
  const Bytes expected = gunzip_file(fixtures_extra_dir() / "expect" / (name + ".data.gz"));
  ASSERT_EQ(expected.size(), data.size());
  EXPECT_TRUE(expected == data) << "decoded data differs";

  EXPECT_EQ(frame->metalayers().size(), expect["metalayers"].size());
  for (auto& [meta_name, hex] : expect["metalayers"].items()) {
    const Metalayer* m = frame->find_metalayer(meta_name);
    ASSERT_TRUE(m) << meta_name;
    EXPECT_EQ(m->content, hex_to_bytes(hex.get<std::string>())) << meta_name;
  }
  EXPECT_TRUE(frame->vlmetalayers().empty());
  EXPECT_EQ(expect["vlmetalayers"].size(), 0u);
  if (expect.contains("usermeta")) {
    ASSERT_TRUE(frame->usermeta().has_value());
    EXPECT_EQ(*frame->usermeta(), hex_to_bytes(expect["usermeta"].get<std::string>()));
  } else {
    EXPECT_FALSE(frame->usermeta().has_value());
  }

  Json info = frame_to_json(*frame);
  EXPECT_EQ(info["layout"], frame_layout_name(fixture.layout));
  EXPECT_TRUE(info["splitmode"].is_null());
  EXPECT_EQ(info["nchunks"].get<int64_t>(), frame->nchunks());
  if (expect.contains("usermeta")) {
    EXPECT_EQ(info["usermeta"]["size"].get<size_t>(), expect["usermeta"].get<std::string>().size() / 2);
    EXPECT_EQ(info["usermeta"]["stored_size"].get<size_t>(), frame->stored_usermeta().size());
  } else {
    EXPECT_TRUE(info["usermeta"].is_null());
  }
  std::string tsv = index_tsv_text(*frame);
  EXPECT_EQ(std::count(tsv.begin(), tsv.end(), '\n'), frame->nchunks() + 1);
  EXPECT_EQ(tsv.find("error"), std::string::npos);
}

TEST_P(LegacyFrame, TheLibraryRefusesToEditIt) {
  TempDir dir;
  const auto copy = dir.path() / "f.b2frame";
  std::filesystem::copy_file(legacy_path(GetParam().name), copy);
  try {
    FrameEditor editor(copy, 0, EditOptions{});
    FAIL() << "an editor was made for an older layout";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(frame_layout_name(GetParam().layout)), std::string::npos) << e.what();
  }
  EXPECT_EQ(testing::read_file(copy), testing::read_file(legacy_path(GetParam().name)));
}

INSTANTIATE_TEST_SUITE_P(All, LegacyFrame, ::testing::ValuesIn(kLegacyFixtures), param_name);

// The two frames whose last chunk has bitshuffled blocks of 12500 items (not a
// multiple of 8) decode as their writers stored them only with the old rule.
TEST(LegacyLayouts, OldBitshuffleRuleOnlyForBeta1AndBeta2) {
  for (const char* name : {"v2.0.0-beta.1-zstd-bitshuffle-f8-meta.b2frame",
                           "v2.0.0-beta.2-zstd-bitshuffle-f8-meta-usermeta.b2frame"}) {
    SCOPED_TRACE(name);
    auto frame = Frame::open(legacy_path(name));
    EXPECT_TRUE(frame->decode_rules().old_bitshuffle_leftovers);
    const int64_t last = frame->nchunks() - 1;
    const Bytes raw = frame->read_raw_chunk(last);
    const Bytes expected = gunzip_file(fixtures_extra_dir() / "expect" / (std::string(name) + ".data.gz"));
    const Bytes want(expected.end() - frame->chunk_nbytes(last), expected.end());
    EXPECT_TRUE(ChunkView(raw, frame->decode_rules()).decode() == want);
    EXPECT_FALSE(ChunkView(raw).decode() == want);  // what c-blosc2 3.x reads: wrong
    // Block by block too (the mount's path).
    ChunkView view(raw, frame->decode_rules());
    Bytes blocks(size_t(view.nbytes()));
    for (int32_t j = 0; j < view.nblocks(); ++j)
      view.decode_block(j, MutableByteSpan(blocks).subspan(size_t(view.block_offset(j)), size_t(view.block_size(j))));
    EXPECT_TRUE(blocks == want);
  }
  for (const char* name : {"v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame", "python-caterva-example.cat",
                           "v2.0.0-beta.1-lz4-shuffle-f4.b2frame"}) {
    auto frame = Frame::open(legacy_path(name));
    EXPECT_EQ(frame->decode_rules().old_bitshuffle_leftovers, frame->layout() == FrameLayout::beta1) << name;
  }
  EXPECT_FALSE(Frame::open(fixtures_extra_dir() / "frames" / "v2.0.0-lz4hc-shuffle-i8-mutated.b2frame")
                   ->decode_rules()
                   .old_bitshuffle_leftovers);
}

// python-caterva's example: a 2-d float64 array whose dtype comes from the
// `type` metalayer (the caterva metalayer has none).
TEST(LegacyLayouts, PythonCatervaExampleIsAnArray) {
  auto frame = Frame::open(legacy_path("python-caterva-example.cat"));
  const Metalayer* caterva = frame->find_metalayer("caterva");
  ASSERT_TRUE(caterva);
  EXPECT_EQ(frame_nd_metalayer(*frame), caterva);
  EXPECT_FALSE(parse_nd_meta(caterva->content, true).dtype);
  NdMeta meta = frame_nd_meta(*frame, *caterva);
  EXPECT_EQ(meta.shape, (std::vector<int64_t>{1000, 1000}));
  EXPECT_EQ(meta.dtype, "<f8");
  Json info = frame_to_json(*frame);
  ASSERT_TRUE(info.contains("array"));
  EXPECT_FALSE(info["array"].contains("error")) << info["array"].dump();
  EXPECT_EQ(info["array"]["npy_descr"], "<f8");
  EXPECT_EQ(info["array"]["dtype_mismatch"], false);
  // The whole array, C order, from the decoded chunks: every item of the
  // expected data lands once.
  NdLayout layout(meta, frame->header().typesize, frame->nchunks(), frame->header().chunksize);
  std::vector<Bytes> chunks(size_t(frame->nchunks()));
  Bytes whole(size_t(layout.array_bytes()));
  layout.read(0, whole, [&](int64_t c) {
    chunks[size_t(c)] = frame->read_chunk(c);
    return ByteSpan(chunks[size_t(c)]);
  });
  EXPECT_EQ(whole.size(), size_t(1000 * 1000 * 8));
}

TEST(LegacyLayouts, LizardChunksAreRefusedNamingTheCodec) {
  // A beta.5 chunk with its codec bits set to compformat 5 (lizard).
  auto frame = Frame::open(legacy_path("v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame"));
  Bytes raw = frame->read_raw_chunk(0);
  raw[2] = uint8_t((raw[2] & 0x1F) | (kCompformatLizard << 5));
  EXPECT_EQ(parse_chunk_header(raw).codec_label(), "lizard");
  try {
    ChunkView(raw).decode();  // its streams are compressed: they need the codec
    FAIL() << "a lizard chunk was accepted";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("lizard"), std::string::npos) << e.what();
  }
}

TEST(LegacyLayouts, HeaderLayoutsAreToldApartStrictly) {
  Bytes beta1 = testing::read_file(legacy_path("v2.0.0-beta.1-lz4-shuffle-f4.b2frame"));
  Bytes beta5 = testing::read_file(legacy_path("v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame"));
  EXPECT_EQ(frame_header_layout(ByteSpan(beta1).first(26)), FrameLayout::beta1);
  EXPECT_EQ(frame_header_layout(ByteSpan(beta5).first(26)), FrameLayout::beta3_5);
  Bytes b = beta1;
  b[25] = 0x21;  // 11 elements with beta.2's flags
  EXPECT_THROW(frame_header_layout(b), FormatError);
  b = beta5;
  b[25] = 0x24;  // 13 elements with beta.1's flags
  EXPECT_THROW(frame_header_layout(b), FormatError);
  b[25] = 0x11;  // 13 elements, 32-bit offsets: never written
  EXPECT_THROW(frame_header_layout(b), FormatError);
  b = beta5;
  b[3] = 'x';
  EXPECT_THROW(frame_header_layout(b), FormatError);
  EXPECT_THROW(frame_header_layout(ByteSpan(beta5).first(20)), FormatError);
}

// An empty beta.1 frame is its 64-byte header alone; an empty beta.2+ frame
// has its usermeta trailer right after the header.
TEST(LegacyLayouts, EmptyFrames) {
  TempDir dir;
  auto path = dir.path() / "e.b2frame";
  Bytes beta1 = testing::read_file(legacy_path("v2.0.0-beta.1-lz4-shuffle-f4.b2frame"));
  Bytes empty(beta1.begin(), beta1.begin() + kBeta1HeaderLen);
  store_be64(empty.data() + 16, uint64_t(kBeta1HeaderLen));  // frame_len
  store_be64(empty.data() + 30, 0);                          // nbytes
  store_be64(empty.data() + 39, 0);                          // cbytes
  store_be32(empty.data() + 53, 0);                          // chunksize
  write_file(path, empty);
  auto frame = Frame::open(path);
  EXPECT_EQ(frame->layout(), FrameLayout::beta1);
  EXPECT_EQ(frame->nchunks(), 0);
  EXPECT_FALSE(frame->usermeta());

  Bytes beta5 = testing::read_file(legacy_path("v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame"));
  const int64_t header_len = int32_t(load_be32(beta5.data() + 11));
  const int64_t trailer_len = int32_t(load_be32(beta5.data() + beta5.size() - 22));
  Bytes e5(beta5.begin(), beta5.begin() + header_len);
  e5.insert(e5.end(), beta5.end() - trailer_len, beta5.end());
  store_be64(e5.data() + 16, uint64_t(e5.size()));
  store_be64(e5.data() + 30, 0);
  store_be64(e5.data() + 39, 0);
  write_file(path, e5);
  frame = Frame::open(path);
  EXPECT_EQ(frame->layout(), FrameLayout::beta3_5);
  EXPECT_EQ(frame->nchunks(), 0);
  ASSERT_TRUE(frame->usermeta());
  EXPECT_EQ(*frame->usermeta(), hex_to_bytes(legacy_expect("v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame")
                                                 ["usermeta"]
                                                     .get<std::string>()));
}

// The fuzzer's small seeds (tests/data/legacy-seeds): each opens in its
// layout, and a one-chunk seed reads its chunk as the fixture it came from.
TEST(LegacyLayouts, FuzzSeedsReadLikeTheirFixtures) {
  const std::pair<const char*, const char*> seeds[] = {
      {"beta1-lz4", "v2.0.0-beta.1-lz4-shuffle-f4.b2frame"},
      {"beta1-meta-bitshuffle", "v2.0.0-beta.1-zstd-bitshuffle-f8-meta.b2frame"},
      {"beta2-usermeta-bitshuffle", "v2.0.0-beta.2-zstd-bitshuffle-f8-meta-usermeta.b2frame"},
      {"beta5-usermeta", "v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame"},
      {"caterva-type", "python-caterva-example.cat"},
  };
  for (const auto& [stem, fixture] : seeds) {
    SCOPED_TRACE(stem);
    auto original = Frame::open(legacy_path(fixture));
    const Bytes data = gunzip_file(fixtures_extra_dir() / "expect" / (std::string(fixture) + ".data.gz"));
    auto one = Frame::open(testing::hostile_frame_path("legacy-seeds/" + std::string(stem) + "-one-chunk.b2frame"));
    auto empty = Frame::open(testing::hostile_frame_path("legacy-seeds/" + std::string(stem) + "-empty.b2frame"));
    EXPECT_EQ(one->layout(), original->layout());
    EXPECT_EQ(empty->layout(), original->layout());
    EXPECT_EQ(empty->nchunks(), 0);
    EXPECT_EQ(one->usermeta(), original->usermeta());
    EXPECT_EQ(empty->usermeta(), original->usermeta());
    ASSERT_EQ(one->nchunks(), 1);
    const Bytes chunk = one->read_chunk(0);
    EXPECT_TRUE(std::equal(chunk.begin(), chunk.end(), data.end() - ptrdiff_t(chunk.size())));
  }
}

TEST(LegacyLayouts, TruncatedAndCorruptedCopiesFailCleanly) {
  TempDir dir;
  auto path = dir.path() / "t.b2frame";
  int cases = 0, opened = 0;
  std::mt19937 rng(2019);
  for (const LegacyFixture& f : kLegacyFixtures) {
    const Bytes bytes = testing::read_file(legacy_path(f.name));
    EXPECT_TRUE(testing::exercise_frame(legacy_path(f.name))) << f.name;
    std::set<size_t> lengths;
    for (size_t len = 0; len < 140; ++len) lengths.insert(len);
    for (size_t back = 1; back < 80; ++back) lengths.insert(bytes.size() - back);
    for (int i = 0; i < 12; ++i) lengths.insert(rng() % bytes.size());
    for (size_t len : lengths) {
      Bytes cut(bytes.begin(), bytes.begin() + ptrdiff_t(len));
      write_file(path, cut);
      opened += testing::exercise_frame(path);
      ++cases;
      if (len >= 24) {  // frame_len claiming the cut: the trailer and index checks see it
        store_be64(cut.data() + 16, len);
        write_file(path, cut);
        opened += testing::exercise_frame(path);
        ++cases;
      }
    }
    const size_t header_len = load_be32(bytes.data() + 11);
    const size_t tail_start = header_len + load_be64(bytes.data() + 39);
    for (int i = 0; i < 160; ++i) {
      Bytes b = bytes;
      size_t pos = i % 3 == 0 ? rng() % header_len
                 : i % 3 == 1 ? tail_start + rng() % (b.size() - tail_start)
                              : rng() % b.size();
      for (int k = 0; k < 1 + int(rng() % 3) && pos + size_t(k) < b.size(); ++k)
        b[pos + size_t(k)] = i % 2 ? uint8_t(rng()) : uint8_t(b[pos + size_t(k)] ^ (1u << (rng() % 8)));
      write_file(path, b);
      opened += testing::exercise_frame(path);
      ++cases;
    }
  }
  std::printf("%d legacy damage cases, %d opened\n", cases, opened);
  EXPECT_GT(cases, 3000);
}

}  // namespace
}  // namespace blosc2fs
