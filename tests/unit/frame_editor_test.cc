// FrameEditor on copies of the reference fixtures and on FrameWriter frames:
// every edit, reopened with Frame::open and compared with what it should give.
#include "frame_editor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "b2nd.h"
#include "chunk_codec.h"
#include "fixtures.h"
#include "frame_editor_test_util.h"
#include "frame_writer.h"

namespace blosc2fs::testing {
namespace {

namespace fs = std::filesystem;

int64_t plan_write_bytes(const CommitPlan& plan) {
  int64_t total = 0;
  for (const auto& step : plan)
    if (step.kind == CommitStep::Kind::write) total += int64_t(step.payload().size());
  return total;
}

uint64_t sidecar_counter(const fs::path& lock) {
  Bytes b = read_file(lock);
  if (b.size() < 16) return 0;
  uint64_t v;
  std::memcpy(&v, b.data() + 8, 8);
  return v;
}

const std::vector<std::string> kCframes = {
    "metas-vlmetas.b2frame",          "frame_simple-lz4.b2frame",           "mutated-cframe-i4.b2frame",
    "empty-with-vlmeta.b2frame",      "fill-special-zeros-f8.b2frame",      "special-chunks-f4.b2frame",
    "b2nd-2d-u1.b2nd",                "varchunks-lz4-3.0.0.b2frame",        "vlblocks-lz4-variable-3.0.0.b2frame",
    "filter-delta-shuffle-zstd-i4.b2frame", "zstd-dict-i4.b2frame"};
const std::vector<std::string> kSframes = {"sframe-mutated-i4.b2frame", "b2nd-4d-i2-sframe.b2nd",
                                           "sframe-zstd-f4.b2frame"};

TEST(FrameEditor, VlmetaSetRenameRemoveOnEveryKindOfFrame) {
  std::vector<std::string> names = kCframes;
  names.insert(names.end(), kSframes.begin(), kSframes.end());
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    TempDir tmp;
    fs::path p = copy_fixture(tmp, name);
    FrameContent want = read_content(p);
    FrameEditor ed(p);
    ed.set_vlmetalayer("added", to_bytes("hello"));
    ed.commit();
    want.vlmetalayers["added"] = to_bytes("hello");
    expect_content(p, want);
    EXPECT_TRUE(ed.frame().header().has_vlmetalayers);

    ed.rename_vlmetalayer("added", "renamed");
    std::string first = want.vlmetalayers.begin()->first;
    if (first != "added") {
      ed.remove_vlmetalayer(first);
      want.vlmetalayers.erase(first);
    }
    Bytes big = make_data(100000, 3);
    ed.set_vlmetalayer("big2", big);
    ed.commit();
    want.vlmetalayers.erase("added");
    want.vlmetalayers["renamed"] = to_bytes("hello");
    want.vlmetalayers["big2"] = big;
    expect_content(p, want);
    EXPECT_EQ(read_content(p), read_content(p));  // a fresh open agrees with itself

    for (const auto& [n, v] : FrameContent(want).vlmetalayers) ed.remove_vlmetalayer(n);
    ed.commit();
    want.vlmetalayers.clear();
    expect_content(p, want);
    EXPECT_FALSE(ed.frame().header().has_vlmetalayers);
  }
}

TEST(FrameEditor, VlmetaLimits) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "many-vlmetas.b2frame");
  FrameContent want = read_content(p);
  ASSERT_EQ(want.vlmetalayers.size(), 16u);
  FrameEditor ed(p);
  ed.set_vlmetalayer("key00", to_bytes("overwritten"));
  EXPECT_EQ(errno_of([&] { ed.set_vlmetalayer("key16", to_bytes("x")); }), ENOSPC);
  EXPECT_EQ(errno_of([&] { ed.set_vlmetalayer(std::string(32, 'n'), to_bytes("x")); }), ENAMETOOLONG);
  EXPECT_EQ(errno_of([&] { ed.set_vlmetalayer("", to_bytes("x")); }), EINVAL);
  // Not UTF-8: python-blosc2 could not list the frame's vlmeta.
  EXPECT_EQ(errno_of([&] { ed.set_vlmetalayer("\xff", to_bytes("x")); }), EINVAL);
  EXPECT_EQ(errno_of([&] { ed.rename_vlmetalayer("key01", "ab\xc3"); }), EINVAL);
  EXPECT_EQ(errno_of([&] { ed.remove_vlmetalayer("missing"); }), ENOENT);
  EXPECT_EQ(errno_of([&] { ed.rename_vlmetalayer("key01", std::string(40, 'r')); }), ENAMETOOLONG);
  EXPECT_EQ(errno_of([&] { ed.set_vlmetalayer(std::string(31, 'n'), Bytes{}); }), ENOSPC);
  EXPECT_TRUE(ed.has_staged_edits());  // the overwrite of key00 stays staged
  ed.discard_staged_edits();
  ed.set_vlmetalayer("key00", to_bytes("overwritten"));
  ed.remove_vlmetalayer("key15");
  ed.set_vlmetalayer(std::string(31, 'n'), Bytes{});
  ed.commit();
  want.vlmetalayers["key00"] = to_bytes("overwritten");
  want.vlmetalayers.erase("key15");
  want.vlmetalayers[std::string(31, 'n')] = Bytes{};
  expect_content(p, want);
}

TEST(FrameEditor, ReplaceChunkKeepsEverythingElse) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
  FrameContent want = read_content(p);
  auto before = Frame::open(p);
  FrameEditor ed(p);
  Bytes data = make_data(20000, 7);
  ed.replace_chunk(2, data);
  ed.commit();
  want.chunks[2] = data;
  expect_content(p, want);
  auto after = Frame::open(p);
  for (int64_t n : {0, 1, 3, 4, 5}) EXPECT_EQ(after->index_entry(n).raw, before->index_entry(n).raw);
  EXPECT_GE(after->index_entry(2).raw, before->header().frame_len - before->header().header_len);
  EXPECT_EQ(after->header().header_len, before->header().header_len);
  EXPECT_EQ(after->header().version(), 2);
}

TEST(FrameEditor, ChunkSizeRulesOfFixedFrames) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  EXPECT_EQ(errno_of([&] { ed.replace_chunk(1, make_data(10000, 1)); }), EINVAL);
  EXPECT_EQ(errno_of([&] { ed.replace_chunk(5, make_data(30000, 1)); }), EINVAL);
  EXPECT_EQ(errno_of([&] { ed.replace_chunk(6, make_data(20000, 1)); }), EINVAL);
  EXPECT_EQ(errno_of([&] { ed.append_chunk(make_data(30000, 1)); }), EINVAL);
  EXPECT_EQ(errno_of([&] { ed.append_chunk(Bytes{}); }), EINVAL);
  EXPECT_FALSE(ed.has_staged_edits());
  ed.replace_chunk(5, make_data(8000, 2));                                   // last may shrink
  EXPECT_EQ(errno_of([&] { ed.append_chunk(make_data(100, 3)); }), EINVAL);  // after a short one
  ed.commit();
  want.chunks[5] = make_data(8000, 2);
  want.nbytes = 5 * 20000 + 8000;
  expect_content(p, want);
  EXPECT_EQ(errno_of([&] { ed.append_chunk(make_data(100, 3)); }), EINVAL);
  ed.replace_chunk(5, make_data(20000, 4));
  ed.append_chunk(make_data(12000, 5));
  ed.commit();
  want.chunks[5] = make_data(20000, 4);
  want.chunks.push_back(make_data(12000, 5));
  want.nbytes = 6 * 20000 + 12000;
  expect_content(p, want);
  EXPECT_EQ(ed.frame().header().chunksize, 20000);
}

TEST(FrameEditor, AppendAndTruncate) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "frame_simple-lz4.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.append_chunk(make_data(200000, 1));
  ed.append_chunk(make_data(200000, 2));
  ed.commit();
  want.chunks.push_back(make_data(200000, 1));
  want.chunks.push_back(make_data(200000, 2));
  want.nbytes += 400000;
  expect_content(p, want);
  ed.truncate_chunks(3);
  ed.append_chunk(make_data(50000, 3));
  ed.commit();
  want.chunks.resize(3);
  want.chunks.push_back(make_data(50000, 3));
  want.nbytes = 3 * 200000 + 50000;
  expect_content(p, want);
  ed.truncate_chunks(0);
  ed.commit();
  want.chunks.clear();
  want.nbytes = 0;
  expect_content(p, want);
  ed.append_chunk(make_data(1000, 9));  // an emptied frame takes chunks up to its chunksize again
  ed.commit();
  want.chunks.push_back(make_data(1000, 9));
  want.nbytes = 1000;
  expect_content(p, want);
  EXPECT_EQ(errno_of([&] { ed.truncate_chunks(5); }), EINVAL);
}

TEST(FrameEditor, PutChunksCompressesABatchInOrder) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "frame_simple-lz4.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  std::vector<Bytes> data;
  for (int k = 0; k < 9; ++k) data.push_back(k == 4 ? Bytes(200000, 0) : make_data(200000, 10 + k));
  std::vector<FrameEditor::ChunkPut> puts{{1, data[0]}};
  for (int k = 1; k < 9; ++k) puts.push_back({-1, data[size_t(k)]});
  ed.put_chunks(puts);
  ed.commit();
  want.chunks[1] = data[0];
  for (int k = 1; k < 9; ++k) want.chunks.push_back(data[size_t(k)]);
  want.nbytes += 8 * 200000;
  expect_content(p, want);
  // A failure stops the batch there: what came before it is staged, nothing after.
  const size_t before = want.chunks.size();
  Bytes too_big = make_data(300000, 7);
  std::vector<FrameEditor::ChunkPut> bad{{-1, data[1]}, {-1, too_big}, {-1, data[2]}};
  EXPECT_EQ(errno_of([&] { ed.put_chunks(bad); }), EINVAL);
  ed.commit();
  want.chunks.push_back(data[1]);
  want.nbytes += 200000;
  expect_content(p, want);
  EXPECT_EQ(want.chunks.size(), before + 1);
  std::vector<FrameEditor::ChunkPut> missing{{int64_t(want.chunks.size()), data[3]}};
  EXPECT_EQ(errno_of([&] { ed.put_chunks(missing); }), EINVAL);
}

TEST(FrameEditor, ZeroChunksOfFixedFramesBecomeSpecialEntries) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.replace_chunk(1, Bytes(20000, 0));
  ed.append_raw_chunk(make_special_chunk(Special::zeros, 20000, 4));
  ed.commit();
  want.chunks[1] = Bytes(20000, 0);
  want.chunks.push_back(Bytes(20000, 0));
  want.nbytes += 20000;
  expect_content(p, want);
  auto f = Frame::open(p);
  EXPECT_EQ(f->index_entry(1).special, Special::zeros);
  EXPECT_EQ(f->index_entry(6).special, Special::zeros);
  EXPECT_EQ(f->header().cbytes, Frame::open(frame_path("mutated-cframe-i4.b2frame"))->header().frame_len -
                                    f->header().header_len);  // no payload was written
}

TEST(FrameEditor, ZeroChunksOfVariableFramesAreRepeatValueChunks) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "varchunks-lz4-3.0.0.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.replace_chunk(1, Bytes(700, 0));  // variable frames: any size, anywhere
  ed.append_chunk(Bytes(333, 0));
  ed.append_raw_chunk(make_special_chunk(Special::nan, 64, 4));
  ed.commit();
  want.chunks[1] = Bytes(700, 0);
  want.chunks.push_back(Bytes(333, 0));
  Bytes nan(64);
  for (int i = 0; i < 16; ++i) store_le32(nan.data() + 4 * i, 0x7FC00000u);
  want.chunks.push_back(nan);
  want.nbytes += 200 + 333 + 64;
  expect_content(p, want);
  auto f = Frame::open(p);
  for (int64_t n : {1, 5, 6}) {
    EXPECT_EQ(f->index_entry(n).special, Special::none) << n;
    EXPECT_EQ(f->chunk_info(n).special, Special::value) << n;
  }
  EXPECT_EQ(f->header().chunksize, 0);
  EXPECT_EQ(f->header().version(), 3);
}

// c-blosc2 3.3.5 cannot open a frame whose first chunk is a zeros entry (or a
// repeat-value chunk) of a size that is not a whole number of items, nor
// decode such a chunk elsewhere: those zeros are stored as ordinary chunks.
TEST(FrameEditor, ZerosThatAreNotWholeItemsAreOrdinaryChunks) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
  ASSERT_EQ(Frame::open(p)->header().typesize, 4);
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.truncate_chunks(0);
  ed.append_chunk(Bytes(122, 0));
  ed.commit();
  auto f = Frame::open(p);
  ASSERT_EQ(f->nchunks(), 1);
  EXPECT_EQ(f->index_entry(0).special, Special::none);
  EXPECT_EQ(f->chunk_info(0).special, Special::none);
  EXPECT_EQ(f->read_chunk(0), Bytes(122, 0));
}

TEST(FrameEditor, SpecialFramesKeepTheirEntries) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "fill-special-zeros-f8.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.replace_chunk(2, make_data(80000, 5));
  ed.commit();
  want.chunks[2] = make_data(80000, 5);
  expect_content(p, want);
  auto f = Frame::open(p);
  for (int64_t n : {0, 1, 3, 4}) EXPECT_EQ(f->index_entry(n).special, Special::zeros);
}

TEST(FrameEditor, RawChunksAreValidated) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  Bytes raw3 = ed.frame().read_raw_chunk(3);
  Bytes corrupt = raw3;
  corrupt.resize(corrupt.size() - 7);
  EXPECT_EQ(errno_of([&] { ed.replace_raw_chunk(0, corrupt); }), EINVAL);
  corrupt = raw3;
  store_le32(corrupt.data() + 32, 0x7FFFFFF0u);  // the first block starts far past the chunk
  EXPECT_EQ(errno_of([&] { ed.replace_raw_chunk(0, corrupt); }), EINVAL);
  Bytes lazy = raw3;
  lazy[31] |= 0x08;
  EXPECT_EQ(errno_of([&] { ed.replace_raw_chunk(0, lazy); }), EINVAL);
  CompressParams cp;
  cp.typesize = 4;
  EXPECT_EQ(errno_of([&] { ed.replace_raw_chunk(1, encode_chunk(make_data(10000, 1), cp)); }), EINVAL);
  // 32 bytes claiming 2 GB of zeros: refused by the frame's chunksize before anything is decoded.
  Bytes huge_zeros = encode_chunk(Bytes(20000, 0), cp);
  ASSERT_EQ(huge_zeros.size(), 32u);
  store_le32(huge_zeros.data() + 4, 0x7FFFFF00u);
  try {
    ed.replace_raw_chunk(0, huge_zeros);
    ADD_FAILURE() << "a chunk larger than the chunksize was accepted";
  } catch (const IoError& e) {
    EXPECT_EQ(e.error_number(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("exceed the chunksize"), std::string::npos) << e.what();
  }
  auto vl = Frame::open(frame_path("vlblocks-lz4-fixed-3.0.0.b2frame"));
  EXPECT_EQ(errno_of([&] { ed.append_raw_chunk(vl->read_raw_chunk(0)); }), EINVAL);
  EXPECT_FALSE(ed.has_staged_edits());
  ed.replace_raw_chunk(0, raw3);
  ed.commit();
  want.chunks[0] = want.chunks[3];
  expect_content(p, want);
}

TEST(FrameEditor, VlBlockFramesTakeOnlyVlRawChunks) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "vlblocks-lz4-variable-3.0.0.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  EXPECT_EQ(errno_of([&] { ed.replace_chunk(1, make_data(1500, 1)); }), EOPNOTSUPP);
  CompressParams cp;
  cp.typesize = 1;
  EXPECT_EQ(errno_of([&] { ed.append_raw_chunk(encode_chunk(make_data(999, 1), cp)); }), EINVAL);
  ed.replace_raw_chunk(1, ed.frame().read_raw_chunk(3));  // variable frame: size may change
  ed.append_raw_chunk(ed.frame().read_raw_chunk(0));
  ed.commit();
  want.chunks[1] = want.chunks[3];
  want.chunks.push_back(want.chunks[0]);
  want.nbytes += int64_t(want.chunks[3].size()) - 1500 + int64_t(want.chunks[0].size());
  expect_content(p, want);
  EXPECT_EQ(Frame::open(p)->header().general_flags & 0xC0, 0xC0);
}

TEST(FrameEditor, MetalayerOverwriteInPlace) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "metas-vlmetas.b2frame");
  FrameContent want = read_content(p);
  int64_t size_before = size_of(p);
  FrameEditor ed(p);
  Bytes fresh = make_data(16, 8);
  EXPECT_EQ(errno_of([&] { ed.set_metalayer("rawbytes", make_data(15, 1)); }), EINVAL);
  EXPECT_EQ(errno_of([&] { ed.set_metalayer("nope", make_data(16, 1)); }), ENOENT);
  ed.set_metalayer("rawbytes", fresh);
  CommitPlan plan = ed.plan_commit();
  EXPECT_EQ(plan_write_bytes(plan), 16);
  ed.commit();
  want.metalayers["rawbytes"] = fresh;
  expect_content(p, want);
  EXPECT_EQ(size_of(p), size_before);

  fs::path nd = copy_fixture(tmp, "b2nd-2d-u1.b2nd");
  FrameContent nd_want = read_content(nd);
  FrameEditor nd_ed(nd);
  Bytes meta = nd_want.metalayers.at("b2nd");
  EXPECT_EQ(errno_of([&] { nd_ed.set_metalayer("b2nd", Bytes(meta.size(), 0xFF)); }), EINVAL);
  NdMeta parsed = parse_nd_meta(meta, false);
  ASSERT_EQ(parsed.dtype.value_or(""), "|u1");
  parsed.dtype = "|i1";
  Bytes changed = serialize_b2nd_meta(parsed);
  ASSERT_EQ(changed.size(), meta.size());
  nd_ed.set_metalayer("b2nd", changed);
  nd_ed.commit();
  nd_want.metalayers["b2nd"] = changed;
  expect_content(nd, nd_want);
}

TEST(FrameEditor, EmptyFrameFirstChunkSetsChunksize) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "empty-with-vlmeta.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.append_chunk(make_data(800, 1));
  ed.append_chunk(make_data(800, 2));
  ed.append_chunk(make_data(400, 3));
  EXPECT_EQ(errno_of([&] { ed.append_chunk(make_data(400, 4)); }), EINVAL);
  ed.commit();
  want.chunks = {make_data(800, 1), make_data(800, 2), make_data(400, 3)};
  want.nbytes = 2000;
  want.chunksize = 800;
  expect_content(p, want);
}

// c-blosc2 reads the trailer of a frame without data at header_len, not at
// frame_len (frame.c get_trailer_offset): such frames must stay laid out so.
void expect_trailer_after_header(const fs::path& p) {
  auto f = Frame::open(p);
  ASSERT_EQ(f->header().nbytes, 0);
  EXPECT_EQ(f->header().frame_len, f->header().header_len + f->trailer_len());
  Bytes raw = read_file(p);
  EXPECT_EQ(int64_t(raw.size()), f->header().frame_len);
  ASSERT_GT(raw.size(), size_t(f->header().header_len));
  EXPECT_EQ(raw[size_t(f->header().header_len)], 0x94);  // the trailer's fixarray(4)
}

TEST(FrameEditor, FramesWithoutDataKeepTheirTrailerAfterTheHeader) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "empty-with-vlmeta.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.set_vlmetalayer("comment", make_data(500, 1));
  ed.set_vlmetalayer("second", to_bytes("2"));
  ed.commit();
  want.vlmetalayers["comment"] = make_data(500, 1);
  want.vlmetalayers["second"] = to_bytes("2");
  expect_content(p, want);
  expect_trailer_after_header(p);

  fs::path q = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
  FrameEditor ed2(q);
  ed2.truncate_chunks(0);
  ed2.set_vlmetalayer("history", to_bytes("emptied"));
  ed2.commit();
  expect_trailer_after_header(q);
  FrameContent c = read_content(q);
  EXPECT_TRUE(c.chunks.empty());
  EXPECT_EQ(c.vlmetalayers.at("history"), to_bytes("emptied"));
  ed2.append_chunk(make_data(20000, 1));
  ed2.commit();
  EXPECT_EQ(read_content(q).chunks, std::vector<Bytes>{make_data(20000, 1)});
  for (const auto& e : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".commit-"), std::string::npos);

  // Embedded at an offset, the trailer's place cannot be switched atomically.
  fs::path emb = tmp.path() / "embedded-empty.bin";
  {
    Bytes frame = read_file(frame_path("empty-with-vlmeta.b2frame"));
    std::ofstream out(emb, std::ios::binary);
    out << std::string(100, 'p');
    out.write(reinterpret_cast<const char*>(frame.data()), std::streamsize(frame.size()));
  }
  FrameEditor ed3(emb, 100);
  ed3.set_vlmetalayer("x", to_bytes("y"));
  EXPECT_EQ(errno_of([&] { ed3.commit(); }), EOPNOTSUPP);
  ed3.discard_staged_edits();
  ed3.append_chunk(make_data(64, 1));  // gaining data is an ordinary append-then-switch
  ed3.commit();
  EXPECT_EQ(read_content(emb, 100).chunks, std::vector<Bytes>{make_data(64, 1)});
}

TEST(FrameEditor, FramesMadeByFrameWriter) {
  for (bool sparse : {false, true}) {
    for (int32_t chunksize : {4096, 0}) {
      SCOPED_TRACE(std::to_string(sparse) + "/" + std::to_string(chunksize));
      TempDir tmp;
      fs::path p = tmp.path() / "w.b2frame";
      FrameParams params;
      params.cparams.codec = Codec::lz4;
      params.cparams.typesize = 4;
      params.chunksize = chunksize;
      params.sparse = sparse;
      params.metalayers.push_back({"fixed", make_data(24, 1)});
      {
        FrameWriter w(p, params);
        for (uint32_t i = 0; i < 5; ++i) w.append(make_data(chunksize ? 4096 : 1000 + 100 * i, i));
        w.set_vlmetalayer("v", to_bytes("1"));
        w.close();
      }
      FrameContent want = read_content(p);
      FrameEditor ed(p);
      ed.replace_chunk(3, make_data(chunksize ? 4096 : 50, 40));
      ed.append_chunk(make_data(1000, 41));
      ed.set_vlmetalayer("v", to_bytes("2"));
      ed.set_metalayer("fixed", make_data(24, 2));
      ed.commit();
      want.chunks[3] = make_data(chunksize ? 4096 : 50, 40);
      want.chunks.push_back(make_data(1000, 41));
      want.nbytes = 0;
      for (const auto& c : want.chunks) want.nbytes += int64_t(c.size());
      want.vlmetalayers["v"] = to_bytes("2");
      want.metalayers["fixed"] = make_data(24, 2);
      expect_content(p, want);
    }
  }
}

// A write step of 16 MiB or more goes to the file in pieces, each handed to the
// disk as it is written (frame_commit.cc): every piece lands where it belongs.
TEST(FrameEditor, ALargeWriteStepLandsWhole) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "contiguous");
    TempDir tmp;
    fs::path p = tmp.path() / "big.b2frame";
    FrameParams params;
    params.cparams.codec = Codec::lz4;
    params.cparams.typesize = 4;
    params.chunksize = 0;  // variable: the chunks differ in size
    params.sparse = sparse;
    {
      FrameWriter w(p, params);
      w.append(make_data(500, 1));
      w.append(make_data(1000, 3));
      w.close();
    }
    FrameContent want = read_content(p);
    const Bytes big = random_data((size_t(20) << 20) + 12345, 5);  // stored memcpyed: a 20 MiB write
    FrameEditor ed(p);
    ed.append_chunk(big);
    ed.replace_chunk(0, make_data(500, 2));
    EXPECT_GE(plan_write_bytes(ed.plan_commit()), int64_t(big.size()));
    ed.commit();
    want.chunks[0] = make_data(500, 2);
    want.chunks.push_back(big);
    want.nbytes += int64_t(big.size());
    expect_content(p, want);
  }
}

TEST(FrameEditor, RepeatedCommits) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "metas-vlmetas.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  for (uint32_t i = 0; i < 30; ++i) {
    if (i % 3 == 0) {
      ed.set_vlmetalayer("counter", to_bytes(std::to_string(i)));
      want.vlmetalayers["counter"] = to_bytes(std::to_string(i));
    } else if (i % 3 == 1) {
      ed.replace_chunk(i % 3, make_data(20000, i));
      want.chunks[i % 3] = make_data(20000, i);
    } else {
      ed.set_vlmetalayer("author", make_data(i * 10, i));
      ed.replace_chunk(0, make_data(20000, 100 + i));
      want.vlmetalayers["author"] = make_data(i * 10, i);
      want.chunks[0] = make_data(20000, 100 + i);
    }
    ed.commit();
    ASSERT_NO_FATAL_FAILURE(expect_content(p, want));
  }
  // vlmeta-only commits alternate between two trailer places: the file stays bounded.
  int64_t max_size = 0, first = size_of(p), trailer = ed.frame().trailer_len();
  for (int i = 0; i < 20; ++i) {
    ed.set_vlmetalayer("counter", to_bytes("value " + std::to_string(i % 10)));
    ed.commit();
    max_size = std::max(max_size, size_of(p));
  }
  EXPECT_LE(max_size - first, 2 * trailer + 64);
  want.vlmetalayers["counter"] = to_bytes("value 9");
  expect_content(p, want);
}

TEST(FrameEditor, CompactionKeepsContentAndDropsUnusedBytes) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
  EditOptions opt;
  opt.compact_min_bytes = 1000;
  opt.compact_fraction = 0.2;
  FrameEditor ed(p, 0, opt);
  for (uint32_t i = 0; i < 4; ++i) {
    ed.replace_chunk(i, make_data(20000, 50 + i));
    ed.set_vlmetalayer("round", to_bytes(std::to_string(i)));
    ed.commit();
  }
  FrameContent want = read_content(p);
  EXPECT_GT(ed.unused_bytes(), 4 * 5000);
  EXPECT_TRUE(ed.compaction_due());
  int64_t before = size_of(p), unused_before = ed.unused_bytes();
  ed.compact();
  expect_content(p, want);
  EXPECT_EQ(ed.unused_bytes(), 0);
  EXPECT_FALSE(ed.compaction_due());
  EXPECT_LE(size_of(p), before - unused_before + 64);
  auto f = Frame::open(p);
  int64_t live = 0;
  for (int64_t n = 0; n < f->nchunks(); ++n) live += f->chunk_info(n).cbytes;
  EXPECT_EQ(f->header().cbytes, live);
  ed.replace_chunk(5, make_data(20000, 99));  // still editable afterwards
  ed.commit();
  want.chunks[5] = make_data(20000, 99);
  expect_content(p, want);
  for (const auto& e : fs::directory_iterator(tmp.path()))
    EXPECT_EQ(e.path().filename().string().find(".compact-"), std::string::npos);
}

// A commit that creates files in the frame's place (the rewrite of a frame
// without data, compaction, a sparse frame's chunk files and chunks.b2frame,
// a created .b2lock) gives them the frame's owner, group and permissions: a
// mount run by root must not hand a user's frame over to root.
TEST(FrameEditor, FilesACommitCreatesKeepTheFramesOwner) {
  ASSERT_EQ(::geteuid(), 0u) << "cannot run: needs root to give the frame another owner (chown)";
  static constexpr uid_t kUid = 54321;
  static constexpr gid_t kGid = 54322;
  auto expect_owner = [](const fs::path& file, mode_t mode) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_uid, kUid) << file;
    EXPECT_EQ(st.st_gid, kGid) << file;
    EXPECT_EQ(st.st_mode & 07777, mode) << file;
  };
  auto give_away = [](const fs::path& file, mode_t mode) {
    ASSERT_EQ(::chown(file.c_str(), kUid, kGid), 0) << file;
    ASSERT_EQ(::chmod(file.c_str(), mode), 0) << file;
  };
  TempDir tmp;
  {  // without data: rewritten whole and renamed over the frame
    fs::path p = copy_fixture(tmp, "empty-with-vlmeta.b2frame");
    give_away(p, 0640);
    EditOptions locking;
    locking.create_lock_sidecar = true;
    FrameEditor ed(p, 0, locking);
    ed.set_vlmetalayer("added", to_bytes("x"));
    ed.commit();
    expect_owner(p, 0640);
    expect_owner(fs::path(p.string() + ".b2lock"), 0640);
  }
  {  // compaction: a clean copy renamed over the frame
    fs::path p = copy_fixture(tmp, "mutated-cframe-i4.b2frame");
    give_away(p, 0604);
    EditOptions opt;
    opt.compact_min_bytes = 1000;
    opt.compact_fraction = 0.2;
    FrameEditor ed(p, 0, opt);
    for (uint32_t i = 0; i < 4; ++i) {
      ed.replace_chunk(i, make_data(20000, 70 + i));
      ed.commit();
    }
    ASSERT_TRUE(ed.compaction_due());
    ed.compact();
    expect_owner(p, 0604);
  }
  {  // sparse: new chunk files, chunks.b2frame renamed
    fs::path p = copy_fixture(tmp, "sframe-zstd-f4.b2frame");
    for (const auto& entry : fs::directory_iterator(p)) give_away(entry.path(), 0660);
    FrameEditor ed(p);
    ed.replace_chunk(0, make_data(size_t(ed.frame().header().chunksize), 9));
    ed.commit();
    for (const auto& entry : fs::directory_iterator(p)) expect_owner(entry.path(), 0660);
  }
}

TEST(FrameEditor, RefreshSeesAnotherEditor) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "frame_simple-lz4.b2frame");
  FrameEditor a(p);
  EditOptions locking;
  locking.create_lock_sidecar = true;
  FrameEditor b(p, 0, locking);
  EXPECT_FALSE(a.refresh());
  b.set_vlmetalayer("from-b", to_bytes("1"));
  b.commit();
  fs::path lock = fs::path(p.string() + ".b2lock");
  EXPECT_EQ(sidecar_counter(lock), 1u);
  EXPECT_TRUE(a.refresh());
  ASSERT_NE(a.frame().find_vlmetalayer("from-b"), nullptr);
  EXPECT_FALSE(a.refresh());
  b.replace_chunk(3, make_data(200000, 3));
  b.commit();
  EXPECT_EQ(sidecar_counter(lock), 2u);
  EXPECT_TRUE(a.refresh());
  EXPECT_EQ(a.frame().read_chunk(3), make_data(200000, 3));
  // A staged edit on a stale base is rebased onto the other writer's state.
  a.set_vlmetalayer("from-a", to_bytes("2"));
  EXPECT_EQ(errno_of([&] { a.refresh(); }), EBUSY);
  b.set_vlmetalayer("from-b", to_bytes("3"));
  b.commit();
  a.commit();
  EXPECT_EQ(sidecar_counter(lock), 4u);
  FrameContent c = read_content(p);
  EXPECT_EQ(c.vlmetalayers.at("from-a"), to_bytes("2"));
  EXPECT_EQ(c.vlmetalayers.at("from-b"), to_bytes("3"));
  EXPECT_TRUE(b.refresh());
}

TEST(FrameEditor, VlmetaEditOnALargeFrameWritesKilobytes) {
  TempDir tmp;
  fs::path p = tmp.path() / "large.b2frame";
  FrameParams params;
  params.cparams.typesize = 8;
  params.chunksize = 1 << 20;
  {
    FrameWriter w(p, params);
    for (uint32_t i = 0; i < 24; ++i) w.append(random_data(1 << 20, i));
    w.close();
  }
  ASSERT_GT(size_of(p), 24 << 20);
  FrameEditor ed(p);
  ed.set_vlmetalayer("attrs", make_data(2000, 1));
  CommitPlan plan = ed.plan_commit();
  EXPECT_LT(plan_write_bytes(plan), 8192);
  ed.commit();
  ed.set_vlmetalayer("attrs", make_data(1500, 2));
  EXPECT_LT(plan_write_bytes(ed.plan_commit()), 8192);
  ed.commit();
  ed.replace_chunk(7, random_data(1 << 20, 99));
  EXPECT_LT(plan_write_bytes(ed.plan_commit()), (1 << 20) + 65536);
  ed.commit();
  EXPECT_EQ(read_content(p).vlmetalayers.at("attrs"), make_data(1500, 2));
}

TEST(FrameEditor, BigChunksCommitFromTheirStagedBytes) {
  // commit() writes chunks stored in 1 MiB or more from the staged edits
  // (borrowed), the rest through the tail; the frame reads back either way,
  // also embedded at an offset.
  for (const int64_t offset : {int64_t(0), int64_t(4096)}) {
    SCOPED_TRACE(offset);
    TempDir tmp;
    fs::path p = tmp.path() / "big.bin";
    Bytes frame = read_file(frame_path("varchunks-lz4-3.0.0.b2frame"));
    {
      std::ofstream out(p, std::ios::binary);
      Bytes prefix = random_data(size_t(offset), 1);
      out.write(reinterpret_cast<const char*>(prefix.data()), std::streamsize(prefix.size()));
      out.write(reinterpret_cast<const char*>(frame.data()), std::streamsize(frame.size()));
    }
    std::vector<Bytes> want = read_content(p, offset).chunks;
    FrameEditor ed(p, offset);
    const std::vector<Bytes> added = {random_data(1 << 21, 2), make_data(3000, 3), random_data(3 << 19, 4)};
    for (const Bytes& chunk : added) ed.append_chunk(chunk);
    ed.replace_chunk(0, random_data(want[0].size(), 5));
    CommitPlan plan = ed.plan_commit();
    EXPECT_TRUE(std::none_of(plan.begin(), plan.end(), [](const CommitStep& s) { return !s.borrowed.empty(); }))
        << "a plan handed out owns its bytes";
    ed.commit();
    want[0] = random_data(want[0].size(), 5);
    for (const Bytes& chunk : added) want.push_back(chunk);
    EXPECT_EQ(read_content(p, offset).chunks, want);
    ed.append_chunk(random_data(1 << 20, 6));
    ed.commit();
    want.push_back(random_data(1 << 20, 6));
    EXPECT_EQ(read_content(p, offset).chunks, want);
  }
}

TEST(FrameEditor, EmbeddedFrameAtAnOffset) {
  TempDir tmp;
  fs::path p = tmp.path() / "embedded.bin";
  Bytes prefix = random_data(4096, 1);
  Bytes frame = read_file(frame_path("frame_simple-lz4.b2frame"));
  {
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(prefix.data()), std::streamsize(prefix.size()));
    out.write(reinterpret_cast<const char*>(frame.data()), std::streamsize(frame.size()));
  }
  FrameContent want = read_content(p, 4096);
  FrameEditor ed(p, 4096);
  ed.set_vlmetalayer("vlmetalayer", to_bytes("moved"));
  ed.replace_chunk(2, make_data(200000, 2));
  ed.commit();
  want.vlmetalayers["vlmetalayer"] = to_bytes("moved");
  want.chunks[2] = make_data(200000, 2);
  EXPECT_EQ(read_content(p, 4096), want);
  Bytes now = read_file(p);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), now.begin()));
  EXPECT_EQ(errno_of([&] { ed.compact(); }), EINVAL);
  EXPECT_FALSE(ed.compaction_due());

  // Something after the frame: growing would overwrite it.
  std::ofstream(p, std::ios::binary | std::ios::app) << "trailing data";
  FrameEditor ed2(p, 4096);
  ed2.set_vlmetalayer("big", random_data(5000, 3));
  EXPECT_EQ(errno_of([&] { ed2.commit(); }), EROFS);
  EXPECT_EQ(read_content(p, 4096), want);
}

}  // namespace
}  // namespace blosc2fs::testing

namespace blosc2fs::testing {
namespace {

// docs/operations.md: a commit to an N-d array that has the chunks its shape needs
// keeps them, whatever edit reached the editor: refused with EINVAL, the frame as it was.
TEST(FrameEditor, ArraysKeepTheChunksTheirShapeNeeds) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "b2nd-2d-u1.b2nd");
  const FrameContent before = read_content(p);
  const int64_t n = int64_t(before.chunks.size());
  FrameEditor ed(p);
  auto refused = [&](const std::function<void()>& stage) {
    stage();
    const int e = errno_of([&] { ed.commit(); });
    ed.discard_staged_edits();
    return e;
  };
  EXPECT_EQ(refused([&] { ed.truncate_chunks(n - 1); }), EINVAL);
  EXPECT_EQ(refused([&] { ed.append_chunk(before.chunks[0]); }), EINVAL);
  Bytes shorter(before.chunks[0].begin(), before.chunks[0].end() - 1);
  EXPECT_EQ(refused([&] { ed.replace_chunk(n - 1, shorter); }), EINVAL);
  // A b2nd metalayer (of the same length) that describes one chunk row less.
  NdMeta meta = parse_nd_meta(before.metalayers.at("b2nd"), false);
  meta.shape[0] -= meta.chunkshape[0];
  const Bytes nd = serialize_b2nd_meta(meta);
  ASSERT_EQ(nd.size(), before.metalayers.at("b2nd").size());
  EXPECT_EQ(refused([&] { ed.set_metalayer("b2nd", nd); }), EINVAL);
  ed.replace_chunk(0, before.chunks[0]);  // the same size: taken
  ed.commit();
  expect_content(p, before);
}

}  // namespace
}  // namespace blosc2fs::testing
