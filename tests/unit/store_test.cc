// The store library: keys from paths, the zip directory (members read in place),
// the EmbedStore map, Store::open for .b2d/.b2z/.b2e, and hostile stores: every
// bad entry is skipped with a reason or refused with an error, never served.
#include "store.h"

#include <zlib.h>

#include <gtest/gtest.h>

#include <fstream>

#include "embed_map.h"
#include "error.h"
#include "fixtures.h"
#include "frame_writer.h"
#include "msgpack.h"
#include "store_key.h"
#include "table_csv.h"
#include "zip_directory.h"

namespace blosc2fs {
namespace {

using testing::TempDir;
using testing::text_bytes;
namespace fs = std::filesystem;

void write_file(const fs::path& path, ByteSpan bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good());
}

Bytes msgpack_of(const char* json_text) { return json_text_to_msgpack(json_text); }

// A frame of `data` in chunks of `chunksize` (typesize 1), as bytes.
Bytes frame_bytes(const TempDir& tmp, ByteSpan data, int32_t chunksize, std::vector<Metalayer> metas = {},
                  std::vector<std::pair<std::string, Bytes>> vlmetas = {}) {
  static int counter = 0;
  fs::path path = tmp.path() / ("frame" + std::to_string(counter++) + ".b2frame");
  FrameParams params;
  params.cparams.typesize = 1;
  params.chunksize = chunksize;
  params.metalayers = std::move(metas);
  {
    FrameWriter writer(path, params);
    if (!data.empty()) writer.append_data(data);
    for (auto& [name, content] : vlmetas) writer.set_vlmetalayer(name, content);
    writer.close();
  }
  return testing::read_file(path);
}

Bytes leaf_frame(const TempDir& tmp, const std::string& text) { return frame_bytes(tmp, text_bytes(text), 64); }

// An EmbedStore frame: `frames` laid at the given stream offsets, and the map.
Bytes embed_frame(const TempDir& tmp, const std::vector<std::pair<std::string, Bytes>>& frames, int64_t gap = 0,
                  const char* tag = "b2tree") {
  Bytes stream;
  Json map = Json::object();
  for (const auto& [key, frame] : frames) {
    stream.resize(stream.size() + size_t(gap), 0xEE);  // dead gaps, as deletions leave
    map[key] = {{"offset", stream.size()}, {"length", frame.size()}};
    stream.insert(stream.end(), frame.begin(), frame.end());
  }
  Json doc = {{"embed_map", map}, {"current_offset", stream.size()}};
  return frame_bytes(tmp, stream, 8192, {Metalayer{tag, msgpack_of("{\"version\":1}")}},
                     {{"estore_metadata", json_to_msgpack(doc)}});
}

// A zip archive made by hand, so that each field can be made wrong.
struct ZipEntry {
  std::string name;
  Bytes data;
  uint16_t method = 0;
  std::string local_name;      // empty: same as name
  int64_t cd_size_delta = 0;   // added to the central directory's sizes
  int64_t cd_offset_delta = 0; // added to the central directory's local header offset
  bool zip64 = false;          // sizes and offset in a zip64 extra field
};

// A raw deflate stream (zip method 8).
Bytes raw_deflate(const Bytes& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&z, uLong(data.size())));
  z.next_in = const_cast<uint8_t*>(data.data());
  z.avail_in = uInt(data.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

Bytes make_zip(const std::vector<ZipEntry>& entries) {
  Bytes out, cd;
  auto le16 = [](Bytes& b, uint16_t v) { b.push_back(uint8_t(v)), b.push_back(uint8_t(v >> 8)); };
  auto le32 = [](Bytes& b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
  };
  auto le64 = [&](Bytes& b, uint64_t v) { le32(b, uint32_t(v)), le32(b, uint32_t(v >> 32)); };
  for (const ZipEntry& entry : entries) {
    ZipEntry e = entry;
    const uint32_t inflated_size = uint32_t(e.data.size());
    if (e.method == 8) e.data = raw_deflate(e.data);
    const std::string& local_name = e.local_name.empty() ? e.name : e.local_name;
    uint32_t offset = uint32_t(out.size());
    le32(out, 0x04034b50);
    le16(out, 20), le16(out, 0), le16(out, e.method), le16(out, 0), le16(out, 0);
    le32(out, 0);  // crc: not checked by readers that read in place
    le32(out, uint32_t(e.data.size())), le32(out, inflated_size);
    le16(out, uint16_t(local_name.size())), le16(out, 0);
    out.insert(out.end(), local_name.begin(), local_name.end());
    out.insert(out.end(), e.data.begin(), e.data.end());

    Bytes extra;
    uint32_t size32 = uint32_t(int64_t(e.data.size()) + e.cd_size_delta);
    uint32_t off32 = uint32_t(int64_t(offset) + e.cd_offset_delta);
    if (e.zip64) {
      le16(extra, 1), le16(extra, 24);
      le64(extra, size32), le64(extra, size32), le64(extra, off32);
      size32 = off32 = 0xFFFFFFFF;
    }
    le32(cd, 0x02014b50);
    le16(cd, 20), le16(cd, 20), le16(cd, 0), le16(cd, e.method), le16(cd, 0), le16(cd, 0);
    le32(cd, 0), le32(cd, size32), le32(cd, e.zip64 ? size32 : inflated_size);
    le16(cd, uint16_t(e.name.size())), le16(cd, uint16_t(extra.size())), le16(cd, 0), le16(cd, 0), le16(cd, 0);
    le32(cd, 0), le32(cd, off32);
    cd.insert(cd.end(), e.name.begin(), e.name.end());
    cd.insert(cd.end(), extra.begin(), extra.end());
  }
  uint32_t cd_offset = uint32_t(out.size());
  out.insert(out.end(), cd.begin(), cd.end());
  le32(out, 0x06054b50);
  le16(out, 0), le16(out, 0), le16(out, uint16_t(entries.size())), le16(out, uint16_t(entries.size()));
  le32(out, uint32_t(cd.size())), le32(out, cd_offset), le16(out, 0);
  return out;
}

std::string first_chunk_text(const Frame& frame) {
  Bytes chunk = frame.read_chunk(0);
  return std::string(chunk.begin(), chunk.end());
}

bool skipped_mentions(const std::vector<std::string>& skipped, const std::string& what) {
  for (const std::string& line : skipped)
    if (line.find(what) != std::string::npos) return true;
  return false;
}

TEST(StoreKey, RelativePathsThatCannotEscape) {
  EXPECT_FALSE(bad_relative_path("a/b.b2nd"));
  EXPECT_TRUE(bad_relative_path(""));
  EXPECT_TRUE(bad_relative_path("/etc/passwd"));
  EXPECT_TRUE(bad_relative_path("../x.b2nd"));
  EXPECT_TRUE(bad_relative_path("a/../../x.b2nd"));
  EXPECT_TRUE(bad_relative_path("a/./x.b2nd"));
  EXPECT_TRUE(bad_relative_path("a//x.b2nd"));
  EXPECT_TRUE(bad_relative_path(std::string("a\0b", 3)));
  EXPECT_TRUE(bad_relative_path("a\\..\\x"));
  EXPECT_TRUE(bad_relative_path(std::string(256, 'x')));
  EXPECT_FALSE(bad_relative_path(std::string(255, 'x')));
  EXPECT_TRUE(bad_key("a/b"));
  EXPECT_FALSE(bad_key("/a/b"));
}

TEST(StoreKey, KeysFromPathsAsSplitext) {
  EXPECT_EQ(key_from_relative_path("a/b.b2nd"), "/a/b");
  EXPECT_EQ(key_from_relative_path("x.tar.b2f"), "/x.tar");
  EXPECT_EQ(key_from_relative_path("a.d/.b2nd"), "/a.d/.b2nd");
  EXPECT_EQ(key_from_relative_path("..b2nd"), "/..b2nd");
  EXPECT_EQ(key_components("/a/b/c"), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(TableCsv, Rfc4180Fields) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "\"\"");  // an empty string; a null is no field text at all
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines\r"), "\"two\nlines\r\"");
}

TEST(ZipDirectory, MembersAtTheirLocalHeaderDataOffset) {
  TempDir tmp;
  Bytes zip = make_zip({{"a/x.b2nd", text_bytes("hello")}, {"embed.b2e", text_bytes("world!")}});
  write_file(tmp.path() / "s.b2z", zip);
  auto file = open_local_file(tmp.path() / "s.b2z");
  EXPECT_TRUE(looks_like_zip(*file));
  ZipDirectory dir = read_zip_directory(*file);
  ASSERT_EQ(dir.members.size(), 2u);
  EXPECT_TRUE(dir.skipped.empty());
  EXPECT_EQ(dir.members[0].name, "a/x.b2nd");
  EXPECT_EQ(dir.members[0].data_offset, 30 + 8);
  EXPECT_EQ(dir.members[0].stored_size, 5);
  EXPECT_EQ(dir.members[1].data_offset, 30 + 8 + 5 + 30 + 9);
}

TEST(ZipDirectory, Zip64ExtraFieldsAreRead) {
  TempDir tmp;
  ZipEntry e{"big.b2nd", text_bytes("0123456789")};
  e.zip64 = true;
  write_file(tmp.path() / "s.b2z", make_zip({e}));
  ZipDirectory dir = read_zip_directory(*open_local_file(tmp.path() / "s.b2z"));
  ASSERT_EQ(dir.members.size(), 1u);
  EXPECT_EQ(dir.members[0].stored_size, 10);
  EXPECT_EQ(dir.members[0].data_offset, 30 + 8);
}

TEST(ZipDirectory, HostileMembersAreSkippedWithAReason) {
  TempDir tmp;
  ZipEntry deflated{"c.b2nd", text_bytes("zzz"), 8};
  ZipEntry disagreeing{"d.b2nd", text_bytes("ddd")};
  disagreeing.local_name = "e.b2nd";
  ZipEntry too_long{"f.b2nd", text_bytes("fff")};
  too_long.cd_size_delta = 1000000;  // runs past the central directory
  ZipEntry bad_offset{"g.b2nd", text_bytes("ggg")};
  bad_offset.cd_offset_delta = 3;  // no local header there
  std::vector<ZipEntry> entries = {
      {"../escape.b2nd", text_bytes("x")},
      {"/abs.b2nd", text_bytes("x")},
      {std::string("nul\0.b2nd", 9), text_bytes("x")},
      {std::string(300, 'n') + ".b2nd", text_bytes("x")},
      {"dup.b2nd", text_bytes("first")},
      {"dup.b2nd", text_bytes("second")},
      deflated, disagreeing, too_long, bad_offset,
      {"dir/", {}},
      {"ok.b2nd", text_bytes("ok")},
  };
  write_file(tmp.path() / "s.b2z", make_zip(entries));
  ZipDirectory dir = read_zip_directory(*open_local_file(tmp.path() / "s.b2z"));
  std::vector<std::string> names;
  for (const ZipMember& m : dir.members) names.push_back(m.name);
  // The deflated member is listed (with its method); the store layer skips it.
  EXPECT_EQ(names, (std::vector<std::string>{"dup.b2nd", "c.b2nd", "ok.b2nd"}));
  EXPECT_EQ(dir.members[0].stored_size, 6);  // the later duplicate
  EXPECT_FALSE(dir.members[1].stored());
  for (const char* why : {"'..'", "starting with '/'", "NUL", "over 255", "duplicate", "disagrees", "runs past",
                          "no local header"})
    EXPECT_TRUE(skipped_mentions(dir.skipped, why)) << why;
}

TEST(ZipDirectory, OverlapDetected) {
  TempDir tmp;
  ZipEntry a{"a.b2nd", text_bytes(std::string(100, 'a'))};
  ZipEntry b{"b.b2nd", text_bytes("bbbb")};
  Bytes zip = make_zip({a, b});
  // A third central entry that reuses a's local header under a's name would be a
  // duplicate; instead point b's central entry at a's local header with b's name
  // in a fake local header inside a's data.
  Bytes fake;
  fake.insert(fake.end(), {0x50, 0x4b, 0x03, 0x04});
  fake.resize(30, 0);
  store_le32(fake.data() + 18, 4);
  store_le32(fake.data() + 22, 4);
  fake[26] = 6;
  std::string bn = "b.b2nd";
  fake.insert(fake.end(), bn.begin(), bn.end());
  fake.insert(fake.end(), {'b', 'b', 'b', 'b'});
  std::copy(fake.begin(), fake.end(), zip.begin() + 30 + 6 + 10);
  size_t cd = zip.size() - 22 - 2 * (46 + 6);
  size_t b_cd = cd + 46 + 6;
  store_le32(zip.data() + b_cd + 42, 30 + 6 + 10);
  write_file(tmp.path() / "s.b2z", zip);
  ZipDirectory dir = read_zip_directory(*open_local_file(tmp.path() / "s.b2z"));
  EXPECT_TRUE(dir.members.empty());
  EXPECT_TRUE(skipped_mentions(dir.skipped, "'a.b2nd': overlaps"));
  EXPECT_TRUE(skipped_mentions(dir.skipped, "'b.b2nd': overlaps"));
}

TEST(ZipDirectory, UnreadableArchivesAreRefused) {
  TempDir tmp;
  for (Bytes bytes : {Bytes{}, text_bytes("PK\x03\x04 not really a zip"), Bytes(100000, 0)}) {
    write_file(tmp.path() / "s.b2z", bytes);
    EXPECT_THROW(read_zip_directory(*open_local_file(tmp.path() / "s.b2z")), FormatError);
  }
  // A central directory claiming more entries than it holds.
  Bytes zip = make_zip({{"a.b2nd", text_bytes("a")}});
  store_le32(zip.data() + zip.size() - 22 + 8, 0x00050005);
  write_file(tmp.path() / "s.b2z", zip);
  EXPECT_THROW(read_zip_directory(*open_local_file(tmp.path() / "s.b2z")), FormatError);
}

TEST(EmbedMap, HostileEntriesAreSkipped) {
  Json map = Json::object();
  map["/ok"] = {{"offset", 0}, {"length", 200}};
  map["/overlap1"] = {{"offset", 300}, {"length", 200}};
  map["/overlap2"] = {{"offset", 400}, {"length", 200}};
  map["/past"] = {{"offset", 900}, {"length", 200}};
  map["/tiny"] = {{"offset", 700}, {"length", 3}};
  map["/neg"] = {{"offset", -1}, {"length", 200}};
  map["../up"] = {{"offset", 0}, {"length", 200}};
  map["/a/../b"] = {{"offset", 0}, {"length", 200}};
  map["/remote"] = {{"urlbase", "https://cat2.cloud/demo"}, {"path", "@public/x.b2nd"}};
  map["/weird"] = {{"something", 1}};
  Json doc = {{"embed_map", map}, {"current_offset", 1000}};
  EmbedMap parsed = parse_embed_map(json_to_msgpack(doc), 1000);
  std::vector<std::string> keys;
  for (const EmbedEntry& e : parsed.entries) keys.push_back(e.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"/ok", "/remote"}));
  EXPECT_TRUE(parsed.entries[1].remote);
  EXPECT_EQ(parsed.skipped.size(), 8u);
  EXPECT_THROW(parse_embed_map(msgpack_of("[1,2]"), 10), FormatError);
  EXPECT_THROW(parse_embed_map(Bytes{0xc1}, 10), FormatError);
}

TEST(Store, B2zLeavesReadInPlaceAndEmbedded) {
  TempDir tmp;
  Bytes embed = embed_frame(tmp, {{"/small", leaf_frame(tmp, "embedded leaf")}}, 17);
  Bytes external = leaf_frame(tmp, "external leaf");
  write_file(tmp.path() / "s.b2z", make_zip({{"a/big.b2nd", external}, {"embed.b2e", embed}}));
  ASSERT_EQ(detect_store(tmp.path() / "s.b2z"), StoreFormat::b2z);
  auto store = Store::open(tmp.path() / "s.b2z");
  EXPECT_EQ(store->tag(), "b2tree");
  ASSERT_EQ(store->leaves().size(), 2u);
  EXPECT_EQ(store->leaves()[0].key, "/a/big");
  EXPECT_EQ(store->leaves()[0].where.type, LeafLocation::Type::zip_member);
  EXPECT_EQ(store->leaves()[0].where.offset, 30 + 10);
  EXPECT_EQ(first_chunk_text(*store->open_leaf(store->leaves()[0])), "external leaf");
  EXPECT_EQ(store->leaves()[1].key, "/small");
  EXPECT_EQ(store->leaves()[1].where.type, LeafLocation::Type::embedded);
  EXPECT_EQ(store->leaves()[1].where.offset, 17);
  EXPECT_EQ(first_chunk_text(*store->open_leaf(store->leaves()[1])), "embedded leaf");
  Json j = store->to_json();
  EXPECT_EQ(j["format"], "b2z");
  // A TreeStore lists its group /a as a key, as python-blosc2's TreeStore.keys() does.
  ASSERT_EQ(j["keys"].size(), 3u);
  EXPECT_EQ(j["keys"][0]["key"], "/a");
  EXPECT_EQ(j["keys"][0]["kind"], "group");
  EXPECT_EQ(j["keys"][1]["kind"], "schunk");
  EXPECT_EQ(j["keys"][1]["nbytes"], 13);
  EXPECT_EQ(j["keys"][2]["storage"]["type"], "embedded");
}

TEST(Store, TreeStoreKeysGroupsAttributesAndObjectRoots) {
  TempDir tmp;
  auto carrier = [&](const char* attrs_json) {
    std::vector<std::pair<std::string, Bytes>> vl;
    Json attrs = Json::parse(attrs_json);
    for (auto it = attrs.begin(); it != attrs.end(); ++it) vl.emplace_back(it.key(), json_to_msgpack(*it));
    return frame_bytes(tmp, {}, 64, {}, vl);
  };
  Bytes ctable_meta = frame_bytes(tmp, {}, 64, {}, {{"kind", msgpack_of("\"ctable\"")}});
  const std::vector<std::pair<std::string, Bytes>> frames = {
      {"/__vlmeta__", carrier("{\"title\": \"root\"}")},
      {"/g/__vlmeta__", carrier("{\"level\": 1}")},
      {"/g/h/x", leaf_frame(tmp, "x")},
      {"/only_attrs/__vlmeta__", carrier("{\"a\": [1, 2]}")},
      {"/t/_meta", ctable_meta},
      {"/t/_cols/id", leaf_frame(tmp, "ids")},
  };
  for (const char* tag : {"b2tree", "b2dict"}) {
    write_file(tmp.path() / tag / "s.b2z", make_zip({{"embed.b2e", embed_frame(tmp, frames, 0, tag)}}));
    auto store = Store::open(tmp.path() / tag / "s.b2z");
    Json j = store->to_json();
    std::vector<std::string> keys;
    for (const Json& k : j["keys"]) keys.push_back(k["key"]);
    if (std::string(tag) == "b2dict") {
      // A DictStore lists what is stored, carriers included.
      EXPECT_EQ(keys, (std::vector<std::string>{"/__vlmeta__", "/g/__vlmeta__", "/g/h/x", "/only_attrs/__vlmeta__",
                                                "/t/_cols/id", "/t/_meta"}));
      EXPECT_FALSE(j.contains("attrs"));
      continue;
    }
    // TreeStore.keys(): groups (prefixes and attribute-only groups), the CTable root, not its parts nor carriers.
    EXPECT_EQ(keys, (std::vector<std::string>{"/g", "/g/h", "/g/h/x", "/only_attrs", "/t"}));
    EXPECT_EQ(j["attrs"], Json::parse("{\"title\": \"root\"}"));
    EXPECT_EQ(j["attrs_storage"]["type"], "embedded");
    EXPECT_EQ(j["keys"][0]["kind"], "group");
    EXPECT_EQ(j["keys"][0]["attrs"], Json::parse("{\"level\": 1}"));
    EXPECT_EQ(j["keys"][1]["attrs"], Json::object());
    EXPECT_FALSE(j["keys"][1].contains("attrs_storage"));
    EXPECT_EQ(j["keys"][3]["attrs"], Json::parse("{\"a\": [1, 2]}"));
    EXPECT_EQ(j["keys"][4]["kind"], "ctable");
    ASSERT_EQ(j["keys"][4]["parts"].size(), 2u);
    EXPECT_EQ(j["keys"][4]["parts"][0]["key"], "/t/_cols/id");
    EXPECT_EQ(j["keys"][4]["parts"][1]["key"], "/t/_meta");
  }
}

TEST(Store, EmbeddedFramesSpanningChunksAndWrongLengths) {
  TempDir tmp;
  // A leaf of ~20 KB compressed poorly spans several 8 KiB chunks of the stream.
  Bytes noise(20000);
  uint32_t x = 1;
  for (uint8_t& b : noise) b = uint8_t((x = x * 1103515245u + 12345u) >> 24);
  Bytes big = frame_bytes(tmp, noise, 4096);
  Bytes embed = embed_frame(tmp, {{"/big", big}, {"/other", leaf_frame(tmp, "x")}}, 5000);
  write_file(tmp.path() / "s.b2e", embed);
  ASSERT_EQ(detect_store(tmp.path() / "s.b2e"), StoreFormat::b2e);
  auto store = Store::open(tmp.path() / "s.b2e");
  auto frame = store->open_leaf(*store->find("/big"));
  Bytes back;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    Bytes c = frame->read_chunk(n);
    back.insert(back.end(), c.begin(), c.end());
  }
  EXPECT_EQ(back, noise);

  // An entry whose length is not the frame's: refused when opened.
  StoreLeaf wrong = *store->find("/other");
  wrong.where.length -= 1;
  EXPECT_THROW(store->open_leaf(wrong), FormatError);
  StoreLeaf shifted = *store->find("/other");
  shifted.where.offset += 1;
  EXPECT_THROW(store->open_leaf(shifted), FormatError);
}

TEST(Store, B2dExternalWinsAndLinksAreNotFollowed) {
  TempDir tmp;
  fs::path dir = tmp.path() / "s.b2d";
  write_file(dir / "embed.b2e", embed_frame(tmp, {{"/a/x", leaf_frame(tmp, "embedded x")},
                                                  {"/y", leaf_frame(tmp, "embedded y")}}));
  write_file(dir / "a" / "x.b2nd", leaf_frame(tmp, "external x"));
  write_file(dir / "notes.txt", text_bytes("not a leaf"));
  write_file(tmp.path() / "outside.b2nd", leaf_frame(tmp, "outside"));
  fs::create_symlink(tmp.path() / "outside.b2nd", dir / "link.b2nd");
  fs::create_directory_symlink(tmp.path(), dir / "up");
  ASSERT_EQ(detect_store(dir), StoreFormat::b2d);
  auto store = Store::open(dir);
  std::vector<std::string> keys;
  for (const StoreLeaf& l : store->leaves()) keys.push_back(l.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"/a/x", "/y"}));
  EXPECT_EQ(first_chunk_text(*store->open_leaf(*store->find("/a/x"))), "external x");
  EXPECT_EQ(store->leaf_file(*store->find("/a/x")), dir / "a" / "x.b2nd");
  EXPECT_TRUE(skipped_mentions(store->skipped(), "symbolic link"));
}

TEST(Store, CompressedMembersAndWhatIsNotAStore) {
  TempDir tmp;
  Bytes embed = embed_frame(tmp, {});
  // Deflated members (method 8) are inflated into memory; other methods are skipped.
  write_file(tmp.path() / "a.b2z", make_zip({{"x.b2nd", leaf_frame(tmp, "x"), 8},
                                             {"y.b2nd", leaf_frame(tmp, "y"), 12},
                                             {"embed.b2e", embed}}));
  auto store = Store::open(tmp.path() / "a.b2z");
  ASSERT_EQ(store->leaves().size(), 1u);
  EXPECT_EQ(store->leaves()[0].key, "/x");
  EXPECT_EQ(first_chunk_text(*store->open_leaf(store->leaves()[0])), "x");
  EXPECT_TRUE(skipped_mentions(store->skipped(), "method 12"));

  write_file(tmp.path() / "b.b2z", make_zip({{"embed.b2e", embed, 8}}));
  EXPECT_TRUE(Store::open(tmp.path() / "b.b2z")->leaves().empty());
  write_file(tmp.path() / "c.b2z", make_zip({{"x.b2nd", leaf_frame(tmp, "x")}}));
  EXPECT_THROW(Store::open(tmp.path() / "c.b2z"), FormatError);

  // A plain frame, a sparse-frame-like directory and garbage are not stores.
  write_file(tmp.path() / "plain.b2frame", leaf_frame(tmp, "plain"));
  EXPECT_FALSE(detect_store(tmp.path() / "plain.b2frame"));
  fs::create_directory(tmp.path() / "empty.b2d");
  EXPECT_FALSE(detect_store(tmp.path() / "empty.b2d"));
  write_file(tmp.path() / "junk", text_bytes("junk"));
  EXPECT_FALSE(detect_store(tmp.path() / "junk"));
  EXPECT_THROW(Store::open(tmp.path() / "junk"), FormatError);
}

}  // namespace
}  // namespace blosc2fs
