// FrameEditor on sparse frames: new chunk files under free numbers, the rename
// of chunks.b2frame, removal of unreferenced files, compaction.
#include <algorithm>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "frame_editor.h"
#include "frame_editor_internal.h"
#include "frame_editor_test_util.h"
#include "frame_lock.h"
#include "frame_writer.h"

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


// A whole sparse frame rewritten (array.npy replaced): a new directory beside
// it, exchanged with it in one step; the .b2lock sidecar stays the same file.
TEST(FrameEditor, SparseRewriteExchangesDirectories) {
  TempDir tmp;
  const fs::path p = copy_fixture(tmp, "sframe-mutated-i4.b2frame");
  const FrameContent old = read_content(p);
  {
    std::ofstream lock(p / ".b2lock", std::ios::binary);
    lock << std::string(16, '\0');
  }
  struct stat before {};
  ASSERT_EQ(::stat((p / ".b2lock").c_str(), &before), 0);
  const fs::path stale = p.parent_path() / ("." + p.filename().string() + ".compact-00000000deadbeef");
  fs::create_directory(stale);
  std::ofstream(stale / "chunks.b2frame") << "an interrupted rewrite's";
  std::ofstream(stale / "00000000.chunk") << "chunk";

  FrameEditor ed(p);
  const fs::path temp = ed.rewrite_temp_path();
  EXPECT_EQ(temp.parent_path(), p.parent_path());
  EXPECT_EQ(temp.filename().string().rfind("." + p.filename().string() + ".compact-", 0), 0u);
  FrameParams params;
  params.cparams = ed.compress_params();
  params.chunksize = 16000;
  params.sparse = true;
  const auto reader = Frame::open(p);  // opened before the exchange: reads the old tree
  {
    FrameWriter writer(temp, params);
    for (uint32_t k = 0; k < 3; ++k) writer.append(make_data(16000, 40 + k));
    RetiredTree retired = ed.install_rewrite(temp, [&](const Frame& current) -> FrameWriter& {
      EXPECT_EQ(current.nchunks(), int64_t(old.chunks.size()));
      return writer;
    });
    EXPECT_EQ(retired.path(), temp);
    EXPECT_TRUE(fs::exists(temp / "chunks.b2frame")) << "the old tree stays while its holder keeps it";
    ASSERT_EQ(reader->nchunks(), int64_t(old.chunks.size()));
    for (int64_t k = 0; k < reader->nchunks(); ++k)
      EXPECT_EQ(reader->read_chunk(k), old.chunks[size_t(k)]) << "the old frame's chunk " << k;
    RetiredTree moved = std::move(retired);
    EXPECT_TRUE(retired.empty());
    EXPECT_TRUE(fs::exists(temp)) << "moving the holder removes nothing";
  }  // dropped: removed (the EXPECT_FALSE below)
  const FrameContent now = read_content(p);
  ASSERT_EQ(now.chunks.size(), 3u);
  for (uint32_t k = 0; k < 3; ++k) EXPECT_EQ(now.chunks[k], make_data(16000, 40 + k));
  EXPECT_EQ(ed.frame().nchunks(), 3);
  EXPECT_TRUE(fs::is_directory(p));
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(stale));
  struct stat after {};
  ASSERT_EQ(::stat((p / ".b2lock").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_nlink, 1u);  // the old tree's link went with it
  std::ifstream lock(p / ".b2lock", std::ios::binary);
  std::string counter(16, '\0');
  lock.read(counter.data(), 16);
  EXPECT_EQ(counter[8], 1);

  // A failed completion leaves the frame as it was and removes the new tree.
  const fs::path temp2 = ed.rewrite_temp_path();
  {
    FrameWriter writer(temp2, params);
    writer.append(make_data(16000, 50));
    EXPECT_THROW(ed.install_rewrite(temp2, [&](const Frame&) -> FrameWriter& { throw IoError("refused", EBUSY); }),
                 IoError);
  }
  EXPECT_FALSE(fs::exists(temp2));
  EXPECT_EQ(read_content(p), now);

  // A frame named "dir/." is rewritten beside "dir", not inside it.
  FrameEditor dotted(p / ".");
  const fs::path temp3 = dotted.rewrite_temp_path();
  EXPECT_EQ(temp3.parent_path(), p.parent_path());
  {
    FrameWriter writer(temp3, params);
    writer.append(make_data(16000, 60));
    dotted.install_rewrite(temp3, [&](const Frame&) -> FrameWriter& { return writer; });
  }
  const FrameContent last = read_content(p);
  ASSERT_EQ(last.chunks.size(), 1u);
  EXPECT_EQ(last.chunks[0], make_data(16000, 60));
  EXPECT_FALSE(fs::exists(temp3));
}

// A sparse frame opened before its directory is exchanged with another (a
// replacement's renameat2) reads its own chunk files still, never the other
// frame's files of the same names: its readers see the old array or an error,
// never the old index over the new chunks.
TEST(SparseRewrite, AFrameOpenBeforeAnExchangeReadsItsOwnChunks) {
  TempDir tmp;
  FrameParams params;
  params.cparams.codec = Codec::lz4;
  params.cparams.typesize = 4;
  params.chunksize = 16000;
  params.sparse = true;
  const fs::path p = tmp.path() / "a.b2frame", q = tmp.path() / "b.b2frame";
  for (const auto& [path, seed] : {std::pair{p, 70u}, std::pair{q, 80u}}) {
    FrameWriter writer(path, params);
    for (uint32_t k = 0; k < 3; ++k) writer.append(make_data(16000, seed + k));
    writer.close();
  }
  auto before = Frame::open(p);
  EXPECT_EQ(before->read_chunk(0), make_data(16000, 70));  // chunk 0 opened before, 1 and 2 after
  editor::exchange_directories(q, p, false);
  EXPECT_EQ(read_content(p).chunks[1], make_data(16000, 81)) << "the path names the other frame now";
  for (uint32_t k = 0; k < 3; ++k) EXPECT_EQ(before->read_chunk(k), make_data(16000, 70 + k)) << "chunk " << k;
  editor::remove_sparse_tree(q);  // the old tree, removed: its chunks are gone, not another frame's
  EXPECT_THROW(before->read_chunk(2), IoError);
}

TEST(SparseRewrite, ProbeStaleDirsAndTreeRemoval) {
  TempDir tmp;
  const fs::path p = copy_fixture(tmp, "sframe-mutated-i4.b2frame");
  EXPECT_EQ(editor::probe_directory_exchange(p), 0);  // the tests' file system has RENAME_EXCHANGE
  const std::string stem = "." + p.filename().string() + ".compact-";
  for (const auto& e : fs::directory_iterator(p.parent_path()))  // the probe left nothing behind
    EXPECT_NE(e.path().filename().string().rfind(stem, 0), 0u) << e.path();

  const fs::path ours = p.parent_path() / (stem + "0123456789abcdef");
  const fs::path foreign = p.parent_path() / (stem + "0123456789abcdef0");  // not a rewrite's name
  const fs::path file = p.parent_path() / (stem + "fedcba9876543210");     // not a directory
  fs::create_directory(ours);
  fs::create_directory(foreign);
  std::ofstream(file) << "x";
  EXPECT_EQ(editor::stale_rewrite_dirs(p), std::vector<fs::path>{ours});

  // Only a sparse frame's files go; anything else keeps the directory.
  std::ofstream(ours / "chunks.b2frame") << "h";
  std::ofstream(ours / "0000000A.chunk") << "c";
  std::ofstream(ours / ".b2lock") << "l";
  std::ofstream(ours / "notes.txt") << "mine";
  editor::remove_sparse_tree(ours);
  EXPECT_TRUE(fs::exists(ours / "notes.txt"));
  EXPECT_FALSE(fs::exists(ours / "chunks.b2frame"));
  EXPECT_FALSE(fs::exists(ours / "0000000A.chunk"));
  EXPECT_FALSE(fs::exists(ours / ".b2lock"));
  fs::remove(ours / "notes.txt");
  editor::remove_sparse_tree(ours);
  EXPECT_FALSE(fs::exists(ours));

  // The exchange swaps the two trees.
  const fs::path other = p.parent_path() / (stem + "1111111111111111");
  fs::create_directory(other);
  std::ofstream(other / "marker") << "new";
  editor::exchange_directories(other, p, true);
  EXPECT_TRUE(fs::exists(p / "marker"));
  EXPECT_TRUE(fs::exists(other / "chunks.b2frame"));
}

}  // namespace
}  // namespace blosc2fs::testing
