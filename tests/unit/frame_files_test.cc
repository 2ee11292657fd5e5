// FrameFiles (src/views/frame_files.h) on its own, without a Volume or FUSE:
// one committed frame as the files a mount shows (the layer lists and their
// bytes, frame.json, the kind, array.npy) and as the ChunkSource an overlay
// sits on, checked against what c-blosc2 reported for the fixture frames.
#include "frame_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "b2nd.h"
#include "fixtures.h"
#include "frame.h"
#include "frame_chunk_loader.h"
#include "frame_writer.h"
#include "msgpack.h"

namespace blosc2fs {
namespace frame_files_test {  // unity builds: helpers of their own
namespace {

// Chunk n as the overlay loads it (ChunkSource::load), as plain bytes.
Bytes loaded(FrameFiles& files, int64_t n) {
  const PooledBuffer b = files.load(n, files.cache().pool());
  return Bytes(b.data(), b.data() + b.size());
}

using testing::fixture_frame_names;
using testing::fixtures_dir;
using testing::frame_path;
using testing::gunzip_file;
using testing::hex_to_bytes;
using testing::load_expect;
using testing::TempDir;

// A frame with the loader and cache a Volume would give it.
struct OpenedFrame {
  explicit OpenedFrame(const std::filesystem::path& path, Json fields = Json::object(),
                       std::function<Json()> live = {})
      : frame(Frame::open(path)), cache(loader, uint64_t(1) << 30) {
    loader.set_frame(frame);
    files = std::make_unique<FrameFiles>(frame, cache, std::move(fields), std::move(live));
  }
  std::shared_ptr<const Frame> frame;
  FrameChunkLoader loader;
  ChunkCache cache;
  std::unique_ptr<FrameFiles> files;
};

std::string text_of(ByteSpan b) { return std::string(b.begin(), b.end()); }

// Every chunk of the fixture decompressed, uninitialized chunks as zeros (what
// blosc2fs shows; c-blosc2 recorded whatever its buffer held).
Bytes expected_data(const std::string& name, const nlohmann::json& expect) {
  Bytes data = gunzip_file(fixtures_dir() / "expect" / (name + ".data.gz"));
  int64_t at = 0;
  for (const auto& c : expect["chunks"]) {
    const int64_t nbytes = c["nbytes"];
    if (int(c["special"]) == 4 && at + nbytes <= int64_t(data.size()))
      std::fill(data.begin() + at, data.begin() + at + nbytes, 0);
    at += nbytes;
  }
  return data;
}

class FrameFilesFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(FrameFilesFixture, LayerListsHoldTheFramesLayers) {
  const std::string name = GetParam();
  const nlohmann::json expect = load_expect(name);
  OpenedFrame f(frame_path(name));
  std::set<std::string> metas;
  for (const LayerFile& m : f.files->metas()) {
    metas.insert(m.name);
    ASSERT_TRUE(expect["metalayers"].contains(m.name)) << m.name;
    const Bytes want = hex_to_bytes(expect["metalayers"][m.name]);
    EXPECT_EQ(m.content, want) << "meta/" << m.name;
    EXPECT_EQ(m.size, int64_t(want.size()));
    EXPECT_TRUE(m.error.empty());
    EXPECT_EQ(f.files->find_meta(m.name), &m);
  }
  EXPECT_EQ(metas.size(), expect["metalayers"].size());
  std::set<std::string> vlmetas;
  for (const LayerFile& v : f.files->vlmetas()) {
    vlmetas.insert(v.name);
    ASSERT_TRUE(expect["vlmetalayers"].contains(v.name)) << v.name;
    const Bytes want = hex_to_bytes(expect["vlmetalayers"][v.name]);
    EXPECT_EQ(v.content, want) << "vlmeta/" << v.name;
    EXPECT_EQ(v.size, int64_t(want.size()));
    EXPECT_TRUE(v.error.empty());
    EXPECT_EQ(f.files->find_vlmeta(v.name), &v);
    // attrs/NAME: the content's one msgpack value as JSON text, when it has one.
    std::optional<std::string> json_text;
    try {
      if (std::optional<Json> value = msgpack_to_json(want)) json_text = value->dump() + "\n";
    } catch (const std::exception&) {  // not one value, or a str that is not UTF-8
    }
    EXPECT_EQ(v.attrs_text, json_text) << v.name;
  }
  EXPECT_EQ(vlmetas.size(), expect["vlmetalayers"].size());
  EXPECT_EQ(f.files->find_meta("no such layer"), nullptr);
  EXPECT_EQ(f.files->find_vlmeta("no such layer"), nullptr);
  EXPECT_EQ(f.files->usermeta(), nullptr);  // only the older layouts have one
}

TEST_P(FrameFilesFixture, ChunkSourceGivesTheChunksCBloscDecoded) {
  const std::string name = GetParam();
  const nlohmann::json expect = load_expect(name);
  OpenedFrame f(frame_path(name));
  FrameFiles& files = *f.files;
  const int64_t nchunks = expect["nchunks"];
  ASSERT_EQ(files.nchunks(), nchunks);
  const Bytes data = expected_data(name, expect);
  int64_t offset = 0;
  for (int64_t n = 0; n < nchunks; ++n) {
    const auto& c = expect["chunks"][size_t(n)];
    const int64_t nbytes = c["nbytes"];
    EXPECT_EQ(files.chunk_size(n), nbytes) << "chunk " << n;
    EXPECT_EQ(files.chunk_size_for_stat(n), nbytes) << "chunk " << n;
    EXPECT_EQ(files.raw_size_for_stat(n), int64_t(c["index_entry"]) < 0 ? 32 : int64_t(c["cbytes"])) << n;
    EXPECT_EQ(files.chunk_offset(n), offset) << "chunk " << n;
    const Bytes want(data.begin() + offset, data.begin() + offset + nbytes);
    EXPECT_EQ(loaded(files, n), want) << "chunk " << n;
    // view(): a middle piece, a piece running past the end (clipped), nothing past it.
    std::shared_ptr<const void> keep;
    const int64_t from = nbytes / 3;
    ByteSpan piece = files.view(n, from, size_t(nbytes / 4 + 1), keep);
    EXPECT_TRUE(keep != nullptr || piece.empty());
    EXPECT_EQ(Bytes(piece.begin(), piece.end()),
              Bytes(want.begin() + from, want.begin() + std::min<int64_t>(nbytes, from + nbytes / 4 + 1)));
    ByteSpan tail = files.view(n, nbytes - 1, std::numeric_limits<size_t>::max() / 2, keep);
    if (nbytes > 0) {
      EXPECT_EQ(Bytes(tail.begin(), tail.end()), Bytes(want.end() - 1, want.end()));
    }
    EXPECT_TRUE(files.view(n, nbytes, 10, keep).empty());
    offset += nbytes;
  }
  // n == nchunks (and past it): the end of the data.
  EXPECT_EQ(files.chunk_offset(nchunks), int64_t(expect["nbytes"]));
  EXPECT_EQ(files.chunk_offset(nchunks + 7), int64_t(expect["nbytes"]));
}

TEST_P(FrameFilesFixture, FrameJsonDescribesTheFrame) {
  const std::string name = GetParam();
  const nlohmann::json expect = load_expect(name);
  OpenedFrame f(frame_path(name));
  std::shared_ptr<const std::string> text = f.files->frame_json();
  ASSERT_TRUE(text && !text->empty());
  EXPECT_EQ(text->back(), '\n');
  EXPECT_EQ(f.files->frame_json(), text);  // made once, kept
  const nlohmann::json j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["nchunks"], expect["nchunks"]);
  EXPECT_EQ(j["nbytes"], expect["nbytes"]);
  EXPECT_EQ(j["cbytes"], expect["cbytes"]);
  EXPECT_EQ(j["typesize"], expect["typesize"]);
  EXPECT_EQ(j["frame_type"], expect["kind"] == "sframe" ? "sparse" : "contiguous");
  EXPECT_EQ(j["kind"], f.files->kind().name);
  EXPECT_EQ(j["metalayers"].size(), expect["metalayers"].size());
  EXPECT_EQ(j["vlmetalayers"].size(), expect["vlmetalayers"].size());
  EXPECT_FALSE(f.files->frame_json_is_live());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FrameFilesFixture, ::testing::ValuesIn(fixture_frame_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(FrameFiles, ChunkSourceRefusesChunksOutOfRange) {
  OpenedFrame f(frame_path("codec-zstd-shuffle-f4.b2frame"));
  FrameFiles& files = *f.files;
  const int64_t n = files.nchunks();
  ASSERT_GT(n, 1);
  std::shared_ptr<const void> keep;
  for (int64_t bad : {int64_t(-1), n, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    EXPECT_ANY_THROW(files.chunk_size(bad)) << bad;
    EXPECT_ANY_THROW(loaded(files, bad)) << bad;
    EXPECT_ANY_THROW(files.view(bad, 0, 16, keep)) << bad;
  }
  EXPECT_ANY_THROW(files.chunk_offset(-1));
  // A negative offset or an offset past the chunk gives nothing, and the
  // chunk still reads right afterwards.
  EXPECT_TRUE(files.view(0, -1, 16, keep).empty());
  EXPECT_TRUE(files.view(0, std::numeric_limits<int64_t>::min(), 16, keep).empty());
  EXPECT_TRUE(files.view(0, files.chunk_size(0) + 1000, 16, keep).empty());
  EXPECT_TRUE(files.view(0, std::numeric_limits<int64_t>::max(), 16, keep).empty());
  EXPECT_TRUE(files.view(0, 0, 0, keep).empty());
  Bytes out(16);
  EXPECT_EQ(files.read_raw(0, -1, out), 0u);
  EXPECT_EQ(files.read_raw(0, std::numeric_limits<int64_t>::max(), out), 0u);
  EXPECT_ANY_THROW(files.read_raw(n, 0, out));
  EXPECT_ANY_THROW(files.read_raw(-1, 0, out));
  EXPECT_EQ(loaded(files, 0).size(), size_t(files.chunk_size(0)));
}

TEST(FrameFiles, RawChunksAreTheStoredBytes) {
  const std::string name = "mutated-cframe-i4.b2frame";
  const nlohmann::json expect = load_expect(name);
  OpenedFrame f(frame_path(name));
  for (int64_t n = 0; n < f.files->nchunks(); ++n) {
    const Bytes stored = f.frame->read_raw_chunk(n);
    Bytes got(stored.size() + 10);
    got.resize(f.files->read_raw(n, 0, got));
    EXPECT_EQ(got, stored) << "raw " << n;
    EXPECT_EQ(int64_t(got.size()), int64_t(expect["chunks"][size_t(n)]["cbytes"]));
    Bytes tail(4);
    EXPECT_EQ(f.files->read_raw(n, int64_t(stored.size()) - 2, tail), 2u);
    EXPECT_EQ(tail[0], stored[stored.size() - 2]);
  }
}

// The N-d fixtures' array.npy: the header, then the body c-blosc2 read back,
// read in pieces that cross chunk and header boundaries.
class FrameFilesArray : public ::testing::TestWithParam<std::string> {};

TEST_P(FrameFilesArray, ArrayNpyIsTheArrayInCOrder) {
  const std::string name = GetParam();
  const nlohmann::json expect = load_expect(name);
  OpenedFrame f(frame_path(name));
  FrameFiles& files = *f.files;
  ASSERT_TRUE(files.has_array());
  ASSERT_NE(files.array_layout(), nullptr);
  const Bytes array = gunzip_file(fixtures_dir() / "expect" / (name + ".array.gz"));
  const std::string& header = files.npy_header_text();
  ASSERT_GE(header.size(), 10u);
  EXPECT_EQ(header.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ((header.size()) % 64, 0u);  // the body is aligned
  EXPECT_EQ(header.back(), '\n');
  // The header's shape is the array's.
  std::string shape = "(";
  for (const auto& s : expect["b2nd"]["shape"]) shape += std::to_string(s.get<int64_t>()) + ", ";
  if (expect["b2nd"]["shape"].size() > 1) shape.resize(shape.size() - 2);
  else shape.resize(shape.size() - 1);
  shape += ")";
  EXPECT_NE(header.find("'shape': " + shape), std::string::npos) << header;
  EXPECT_EQ(files.array_size(), int64_t(header.size() + array.size()));
  EXPECT_EQ(files.kind().name, "ndarray");

  for (size_t piece : {size_t(7), size_t(4096), size_t(100003)}) {
    Bytes whole;
    Bytes buf(piece);
    for (int64_t at = 0;;) {
      const size_t got = files.read_array(at, buf);
      if (got == 0) break;
      whole.insert(whole.end(), buf.begin(), buf.begin() + int64_t(got));
      at += int64_t(got);
    }
    ASSERT_EQ(whole.size(), header.size() + array.size()) << "pieces of " << piece;
    EXPECT_EQ(text_of(ByteSpan(whole).first(header.size())), header);
    EXPECT_TRUE(std::equal(array.begin(), array.end(), whole.begin() + int64_t(header.size())))
        << "pieces of " << piece;
  }
  // One item from the middle, offsets at and past the end, a negative one.
  const size_t mid = array.size() / 2;
  Bytes one(3);
  EXPECT_EQ(files.read_array(int64_t(header.size() + mid), one), 3u);
  EXPECT_EQ(one, Bytes(array.begin() + int64_t(mid), array.begin() + int64_t(mid) + 3));
  EXPECT_EQ(files.read_array(files.array_size(), one), 0u);
  EXPECT_EQ(files.read_array(files.array_size() - 1, one), 1u);
  EXPECT_EQ(one[0], array.back());
  EXPECT_EQ(files.read_array(std::numeric_limits<int64_t>::max(), one), 0u);
  EXPECT_EQ(files.read_array(-1, one), 0u);
}

INSTANTIATE_TEST_SUITE_P(NdFixtures, FrameFilesArray,
                         ::testing::Values("b2nd-1d-i4.b2nd", "b2nd-2d-u1.b2nd", "b2nd-3d-f8.b2nd",
                                           "b2nd-4d-i2-sframe.b2nd", "b2nd-2d-struct.b2nd",
                                           "example_day_month_temp.b2nd"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(FrameFiles, PlainFramesHaveNoArray) {
  OpenedFrame f(frame_path("codec-lz4-shuffle-f4.b2frame"));
  EXPECT_FALSE(f.files->has_array());
  EXPECT_EQ(f.files->array_layout(), nullptr);
  EXPECT_EQ(f.files->zarr(), nullptr);
  EXPECT_EQ(f.files->array_size(), 0);
  EXPECT_TRUE(f.files->npy_header_text().empty());
  Bytes out(64, 0xAB);
  EXPECT_EQ(f.files->read_array(0, out), 0u);
  EXPECT_EQ(out[0], 0xAB);
  EXPECT_EQ(f.files->kind().name, "schunk");
  EXPECT_FALSE(f.files->has_items());
  EXPECT_FALSE(f.files->has_preview());
  EXPECT_EQ(f.files->preview_size(), 0);
  EXPECT_EQ(f.files->preview(), nullptr);
}

TEST(FrameFiles, KindOfTheArrayFixtures) {
  for (const char* name : {"b2nd-1d-i4.b2nd", "b2nd-3d-f8.b2nd", "b2nd-4d-i2-sframe.b2nd"}) {
    OpenedFrame f(frame_path(name));
    EXPECT_EQ(f.files->kind().name, "ndarray") << name;
    EXPECT_EQ(f.files->proxy(), nullptr);
    EXPECT_NE(f.files->zarr(), nullptr) << name;
  }
  // A dtype ('|u1') that disagrees with the typesize (4): array.npy says |V4,
  // and there is no Zarr view.
  OpenedFrame prices(frame_path("example_item_prices.b2nd"));
  EXPECT_EQ(prices.files->kind().name, "ndarray");
  EXPECT_NE(prices.files->npy_header_text().find("'descr': '|V4'"), std::string::npos)
      << prices.files->npy_header_text();
  EXPECT_EQ(prices.files->zarr(), nullptr);
  // A structured dtype has no Zarr v3 core type: array.npy, but no Zarr view.
  OpenedFrame s(frame_path("b2nd-2d-struct.b2nd"));
  EXPECT_TRUE(s.files->has_array());
  EXPECT_EQ(s.files->zarr(), nullptr);
}

// Names a directory cannot hold are left out of the lists; the first of two
// layers of one name is kept.
TEST(FrameFiles, LayersWhoseNamesCannotBeFileNamesAreLeftOut) {
  TempDir dir;
  const auto path = dir.path() / "names.b2frame";
  {
    FrameParams params;
    params.cparams.typesize = 4;
    params.chunksize = 4000;
    params.metalayers = {Metalayer{"good", Bytes{1, 2, 3}}, Metalayer{"a/b", Bytes{4}}, Metalayer{"..", Bytes{5}},
                         Metalayer{".", Bytes{7}}};
    FrameWriter w(path, params);
    w.append(Bytes(4000, 9));
    w.set_vlmetalayer("fine", json_to_msgpack(Json{{"x", 1}}));
    w.set_vlmetalayer("x/y", json_to_msgpack(Json(2)));
    w.set_vlmetalayer("..", json_to_msgpack(Json(3)));
    w.set_vlmetalayer(std::string(1, '\0') + "nul", json_to_msgpack(Json(4)));
    w.set_vlmetalayer("raw", Bytes{0xc1, 0xff, 0x00});  // not msgpack: vlmeta/ only
    w.close();
  }
  OpenedFrame f(path);
  ASSERT_EQ(f.frame->metalayers().size(), 4u);
  ASSERT_EQ(f.files->metas().size(), 1u);
  EXPECT_EQ(f.files->metas()[0].name, "good");
  EXPECT_EQ(f.files->metas()[0].content, (Bytes{1, 2, 3}));
  EXPECT_EQ(f.files->find_meta("a/b"), nullptr);
  EXPECT_EQ(f.files->find_meta(".."), nullptr);
  std::vector<std::string> vl;
  for (const LayerFile& v : f.files->vlmetas()) vl.push_back(v.name);
  EXPECT_EQ(vl, (std::vector<std::string>{"fine", "raw"}));
  const LayerFile* fine = f.files->find_vlmeta("fine");
  ASSERT_NE(fine, nullptr);
  EXPECT_EQ(fine->content, json_to_msgpack(Json{{"x", 1}}));
  ASSERT_TRUE(fine->attrs_text.has_value());
  EXPECT_EQ(*fine->attrs_text, "{\"x\":1}\n");
  const LayerFile* raw = f.files->find_vlmeta("raw");
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->content, (Bytes{0xc1, 0xff, 0x00}));
  EXPECT_EQ(raw->size, 3);
  EXPECT_FALSE(raw->attrs_text.has_value());
  // frame.json still lists every layer of the frame, the left-out ones too.
  const nlohmann::json j = nlohmann::json::parse(*f.files->frame_json());
  EXPECT_EQ(j["metalayers"].size(), 4u);
  EXPECT_EQ(j["vlmetalayers"].size(), 5u);
}

// A vlmetalayer whose stored chunk cannot be decompressed (its header claims
// more bytes than its body holds) is still listed, with the size its header
// claims; its reads fail with the error, and it has no JSON view.
TEST(FrameFiles, AVlmetalayerThatCannotBeDecompressedIsListedWithItsError) {
  TempDir dir;
  const auto path = dir.path() / "bad-vlmeta.b2frame";
  Bytes text;
  for (int i = 0; i < 400; ++i) text.push_back(uint8_t("abcdefgh"[i % 8]));
  {
    FrameParams params;
    params.cparams.typesize = 1;
    params.chunksize = 100;
    FrameWriter w(path, params);
    w.append(Bytes(100, 5));
    w.set_vlmetalayer("good", json_to_msgpack(Json("fine")));
    w.set_vlmetalayer("bad", text);
    w.close();
  }
  Bytes file = testing::read_file(path);
  const Bytes stored = Frame::open(path)->find_vlmetalayer("bad")->stored;
  ASSERT_GE(stored.size(), 16u);
  auto at = std::search(file.begin(), file.end(), stored.begin(), stored.end());
  ASSERT_NE(at, file.end());
  store_le32(&*at + 4, 4000);  // nbytes: ten times what the body decompresses to
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
  }
  OpenedFrame f(path);
  const LayerFile* bad = f.files->find_vlmeta("bad");
  ASSERT_NE(bad, nullptr);
  EXPECT_FALSE(bad->error.empty());
  EXPECT_NE(bad->error.find("vlmetalayer bad"), std::string::npos) << bad->error;
  EXPECT_EQ(bad->size, 4000);
  EXPECT_TRUE(bad->content.empty());
  EXPECT_FALSE(bad->attrs_text.has_value());
  const LayerFile* good = f.files->find_vlmeta("good");
  ASSERT_NE(good, nullptr);
  EXPECT_TRUE(good->error.empty());
  EXPECT_EQ(good->attrs_text, std::optional<std::string>("\"fine\"\n"));
  // frame.json still describes the frame, naming the layer's error.
  const nlohmann::json j = nlohmann::json::parse(*f.files->frame_json());
  EXPECT_EQ(j["vlmetalayers"].size(), 2u);
  EXPECT_EQ(j["nchunks"], 1);
}

TEST(FrameFiles, OlderLayoutsShowTheirUsermeta) {
  const std::string name = "v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame";
  const nlohmann::json expect = load_expect(testing::fixtures_extra_dir(), name);
  OpenedFrame f(testing::fixtures_extra_dir() / "frames" / name);
  const LayerFile* u = f.files->usermeta();
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->name, "usermeta");
  EXPECT_EQ(u->content, hex_to_bytes(expect["usermeta"]));
  EXPECT_EQ(text_of(u->content), "{\"units\": \"counts\", \"scale\": 1}");
  EXPECT_EQ(u->size, int64_t(u->content.size()));
  EXPECT_TRUE(u->error.empty());
  EXPECT_TRUE(f.files->metas().empty());
  EXPECT_TRUE(f.files->vlmetas().empty());
  const nlohmann::json j = nlohmann::json::parse(*f.files->frame_json());
  EXPECT_EQ(j["usermeta"]["size"], int64_t(u->content.size()));
}

TEST(FrameFiles, FrameJsonFieldsAndLiveFields) {
  int asked = 0;
  OpenedFrame f(frame_path("b2nd-1d-i4.b2nd"), Json{{"source", "https://example.org/x.b2nd"}, {"nchunks", -5}},
                [&asked] { return Json{{"fetched_bytes", ++asked * 100}}; });
  EXPECT_TRUE(f.files->frame_json_is_live());
  nlohmann::json j = nlohmann::json::parse(*f.files->frame_json());
  EXPECT_EQ(j["source"], "https://example.org/x.b2nd");
  EXPECT_EQ(j["nchunks"], -5);  // the given fields replace the frame's own
  EXPECT_EQ(j["fetched_bytes"], 100);
  EXPECT_EQ(j["kind"], "ndarray");
  EXPECT_EQ(j["typesize"], 4);
  std::shared_ptr<const std::string> first = f.files->frame_json();
  EXPECT_EQ(asked, 1);  // asked when made, not at each read
  f.files->renew_frame_json();
  EXPECT_EQ(asked, 2);
  EXPECT_NE(f.files->frame_json(), first);
  EXPECT_EQ(nlohmann::json::parse(*f.files->frame_json())["fetched_bytes"], 200);
  EXPECT_EQ(nlohmann::json::parse(*first)["fetched_bytes"], 100);  // a reader's copy stays as it was

  // Without live fields, renew changes nothing.
  OpenedFrame plain(frame_path("b2nd-1d-i4.b2nd"));
  std::shared_ptr<const std::string> before = plain.files->frame_json();
  plain.files->renew_frame_json();
  EXPECT_EQ(plain.files->frame_json(), before);
}

// An array of chunks of 1 MiB or more: a small read of array.npy (a page of a
// memory map, the kernel's read-around) decodes only the blocks it touches.
TEST(FrameFiles, SmallReadsOfBigChunksDecodeOnlyTheirBlocks) {
  TempDir dir;
  const auto path = dir.path() / "big-chunks.b2nd";
  NdMeta meta;
  meta.version = 0;
  meta.ndim = 2;
  meta.shape = {8, 262144};
  meta.chunkshape = {2, 262144};  // 2 MiB chunks of int32
  meta.blockshape = {1, 16384};   // 64 KiB blocks, 32 a chunk
  meta.dtype = "<i4";
  const int64_t chunk_bytes = 2 * 262144 * 4;
  {
    FrameParams params;
    params.cparams.typesize = 4;
    params.cparams.blocksize = 16384 * 4;
    params.chunksize = int32_t(chunk_bytes);
    params.metalayers = {Metalayer{"b2nd", serialize_b2nd_meta(meta)}};
    FrameWriter w(path, params);
    for (int64_t c = 0; c < 4; ++c) {  // item i holds i: blocks are whole runs of rows, so chunks are in C order
      Bytes chunk(size_t(chunk_bytes), 0);
      for (int64_t k = 0; k < chunk_bytes / 4; ++k) store_le32(chunk.data() + 4 * k, uint32_t(c * chunk_bytes / 4 + k));
      w.append(chunk);
    }
    w.close();
  }
  OpenedFrame f(path);
  ASSERT_TRUE(f.files->has_array());
  const int64_t header = int64_t(f.files->npy_header_text().size());
  auto expect_items = [&](int64_t first_item, int64_t count) {
    Bytes out(size_t(count * 4));
    ASSERT_EQ(f.files->read_array(header + first_item * 4, out), out.size());
    for (int64_t k = 0; k < count; ++k) ASSERT_EQ(load_le32(out.data() + 4 * k), uint32_t(first_item + k)) << first_item + k;
  };
  expect_items(5 * 262144 + 1000, 1024);  // 4 KiB inside block 0 of row 5 (chunk 2)
  EXPECT_EQ(f.cache.stats().decoded_blocks, 1u);
  expect_items(3 * 262144 - 512, 1024);  // across rows 2 and 3 of chunk 1: a block of each
  EXPECT_EQ(f.cache.stats().decoded_blocks, 3u);
  expect_items(2 * 262144 - 512, 1024);  // across chunks 0 and 1: a block of each
  EXPECT_EQ(f.cache.stats().decoded_blocks, 5u);
  expect_items(0, 262144 + 16384);  // half of chunk 0 or more: the rest of it
  EXPECT_EQ(f.cache.stats().decoded_blocks, 5u + 31u);
}

// A frame of chunks of varying size: each chunk's own size and place in data.
TEST(FrameFiles, VariableChunksHaveTheirOwnSizesAndOffsets) {
  TempDir dir;
  const auto path = dir.path() / "var.b2frame";
  {
    FrameParams params;
    params.cparams.typesize = 1;
    params.chunksize = 0;  // variable chunks
    FrameWriter w(path, params);
    w.append(Bytes(100, 1));
    w.append(Bytes(300, 2));
    w.append(Bytes(7, 3));
    w.close();
  }
  OpenedFrame f(path);
  EXPECT_EQ(f.files->nchunks(), 3);
  EXPECT_EQ(f.files->chunk_size(1), 300);
  EXPECT_EQ(f.files->chunk_offset(1), 100);
  EXPECT_EQ(f.files->chunk_offset(2), 400);
  EXPECT_EQ(f.files->chunk_offset(3), 407);
  EXPECT_EQ(loaded(*f.files, 2), Bytes(7, 3));
  EXPECT_EQ(loaded(*f.files, 1), Bytes(300, 2));
}

}  // namespace
}  // namespace frame_files_test
}  // namespace blosc2fs
