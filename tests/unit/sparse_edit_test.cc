// FrameEditor on sparse frames: new chunk files under free numbers, the rename
// of chunks.b2frame, removal of unreferenced files, compaction.
#include <algorithm>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "frame_editor.h"
#include "frame_editor_test_util.h"

namespace blosc2fs::testing {
namespace {

namespace fs = std::filesystem;

TEST(FrameEditor, SparseFrameChunkEdits) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "sframe-mutated-i4.b2frame");
  FrameContent want = read_content(p);
  std::ofstream(p / "00000001.chunk") << "left over by a crash";  // unreferenced: must not be reused now
  FrameEditor ed(p);
  ed.replace_chunk(1, make_data(16000, 1));  // entry 0 before
  ed.append_chunk(make_data(16000, 2));
  ed.commit();
  want.chunks[1] = make_data(16000, 1);
  want.chunks.push_back(make_data(16000, 2));
  want.nbytes += 16000;
  expect_content(p, want);
  auto f = Frame::open(p);
  EXPECT_EQ(f->index_entry(1).raw, 5);
  EXPECT_EQ(f->index_entry(4).raw, 6);
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(p)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"00000002.chunk", "00000003.chunk", "00000004.chunk", "00000005.chunk",
                                          "00000006.chunk", "chunks.b2frame"}));
  int64_t sum = 0;
  for (int64_t n = 0; n < f->nchunks(); ++n) sum += f->chunk_info(n).cbytes;
  EXPECT_EQ(f->header().cbytes, sum);

  ed.replace_chunk(0, Bytes(16000, 0));  // special entry: its file goes
  ed.truncate_chunks(4);
  ed.append_chunk(make_data(4000, 3));  // reuses the lowest free number
  ed.commit();
  want.chunks[0] = Bytes(16000, 0);
  want.chunks.resize(4);
  want.chunks.push_back(make_data(4000, 3));
  want.nbytes = 4 * 16000 + 4000;
  expect_content(p, want);
  f = Frame::open(p);
  EXPECT_EQ(f->index_entry(0).special, Special::zeros);
  EXPECT_EQ(f->index_entry(4).raw, 0);
  EXPECT_FALSE(fs::exists(p / "00000002.chunk"));
  EXPECT_FALSE(fs::exists(p / "00000006.chunk"));
  EXPECT_EQ(ed.unused_bytes(), 0);
}

TEST(FrameEditor, SparseChunkNumbersStayLow) {
  // c-blosc2 refuses to reopen a sparse frame whose largest chunk-file number
  // exceeds compressed_size - 32 (bug B4): numbers are reused, never grown.
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "sframe-mutated-i4.b2frame");
  FrameEditor ed(p);
  for (uint32_t i = 0; i < 25; ++i) {
    ed.replace_chunk(i % 4, i % 5 == 0 ? Bytes(16000, 0) : make_data(16000, i));
    ed.commit();
  }
  auto f = Frame::open(p);
  int64_t max_id = 0;
  for (int64_t n = 0; n < f->nchunks(); ++n) max_id = std::max(max_id, f->index_entry(n).raw);
  EXPECT_LE(max_id, 5);
  EXPECT_LE(max_id, f->header().cbytes - 32);
  EXPECT_EQ(ed.unused_bytes(), 0);
}

TEST(FrameEditor, SparseB2ndArray) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "b2nd-4d-i2-sframe.b2nd");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.replace_chunk(5, make_data(2304, 11));
  ed.set_metalayer("b2nd", want.metalayers.at("b2nd"));
  ed.set_vlmetalayer("note", to_bytes("edited"));
  ed.commit();
  want.chunks[5] = make_data(2304, 11);
  want.vlmetalayers["note"] = to_bytes("edited");
  expect_content(p, want);
}

TEST(FrameEditor, SparseCompactionDeletesUnreferencedFiles) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "sframe-mutated-i4.b2frame");
  FrameContent want = read_content(p);
  std::ofstream(p / "0000000A.chunk") << std::string(1000, 'x');
  std::ofstream(p / "notachunk.txt") << "kept";
  FrameEditor ed(p);
  EXPECT_EQ(ed.unused_bytes(), 1000);
  ed.compact();
  EXPECT_EQ(ed.unused_bytes(), 0);
  EXPECT_FALSE(fs::exists(p / "0000000A.chunk"));
  EXPECT_TRUE(fs::exists(p / "notachunk.txt"));
  expect_content(p, want);
}

TEST(FrameEditor, FailedCommitKeepsTheFrameAndTheStagedEdits) {
  TempDir tmp;
  fs::path p = copy_fixture(tmp, "sframe-mutated-i4.b2frame");
  FrameContent want = read_content(p);
  FrameEditor ed(p);
  ed.replace_chunk(2, make_data(16000, 5));
  ed.set_vlmetalayer("v", to_bytes("1"));
  CommitPlan plan = ed.plan_commit();
  auto rename = std::find_if(plan.begin(), plan.end(),
                             [](const CommitStep& s) { return s.kind == CommitStep::Kind::rename; });
  ASSERT_NE(rename, plan.end());
  std::ofstream(rename->path) << "in the way";  // the commit's temporary name is taken
  EXPECT_EQ(errno_of([&] { ed.commit(); }), EEXIST);
  EXPECT_TRUE(ed.has_staged_edits());
  expect_content(p, want);
  EXPECT_TRUE(fs::exists(rename->path));  // not ours: left alone
  ed.commit();                            // a fresh temporary name
  want.chunks[2] = make_data(16000, 5);
  want.vlmetalayers["v"] = to_bytes("1");
  expect_content(p, want);
  EXPECT_FALSE(fs::exists(rename->path));  // a stale temporary: removed by the next commit
  EXPECT_EQ(ed.unused_bytes(), 0);
}

}  // namespace
}  // namespace blosc2fs::testing
