// The tree and file contents of every fixture frame, without FUSE: names,
// inode numbers, listings, exact sizes, and bytes against the expectations.
#include "tree.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "frame.h"
#include "frame_files.h"

namespace blosc2fs {
namespace {

using testing::fixture_frame_names;
using testing::frame_path;
using testing::gunzip_file;
using testing::hex_to_bytes;
using testing::load_expect;

Bytes read_all(FrameFiles& files, Node node, size_t piece = 70001) {
  Bytes out;
  Bytes buf(piece);
  for (int64_t offset = 0;;) {
    size_t got = files.read(node, offset, buf);
    out.insert(out.end(), buf.begin(), buf.begin() + got);
    if (got == 0) break;
    offset += int64_t(got);
  }
  return out;
}

std::vector<DirEntry> list(const Tree& tree, Node dir) {
  std::vector<DirEntry> out;
  int64_t i = 0;
  while (std::optional<DirEntry> e = tree.entry(dir, i)) {
    i = e->next;
    out.push_back(std::move(*e));
  }
  return out;
}

TEST(FsTree, ChunkFileNames) {
  EXPECT_EQ(chunk_file_name(0), "00000000");
  EXPECT_EQ(chunk_file_name(42), "00000042");
  EXPECT_EQ(chunk_file_name(123456789), "123456789");
  EXPECT_EQ(parse_chunk_file_name("00000042"), 42);
  EXPECT_EQ(parse_chunk_file_name("123456789"), 123456789);
  for (const char* bad : {"42", "000000042", "0000004x", "", "-0000042", "0123456789", "99999999999999999999"})
    EXPECT_FALSE(parse_chunk_file_name(bad).has_value()) << bad;
}

class FsTreeFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(FsTreeFixture, MatchesExpectations) {
  const std::string name = GetParam();
  const nlohmann::json expect = load_expect(name);
  std::shared_ptr<const Frame> frame = Frame::open(frame_path(name));
  FrameFiles files(frame, 64 << 20);
  Tree tree(files, Ownership{1234, 5678, 022}, 1'700'000'000'123'456'789);
  const int64_t nchunks = expect["nchunks"];
  ASSERT_EQ(files.nchunks(), nchunks);

  // Root listing and lookups.
  const Node root{NodeKind::root, 0};
  std::vector<std::string> names;
  for (const DirEntry& e : list(tree, root)) {
    names.push_back(e.name);
    EXPECT_EQ(tree.lookup(root, e.name), e.node);
    EXPECT_EQ(tree.node(Tree::inode(e.node)), e.node);
  }
  const bool nd = expect.contains("b2nd") || expect["metalayers"].contains("caterva");
  std::vector<std::string> want{"frame.json", "index.tsv", "data"};
  if (nd) want.push_back("array.npy");
  for (const char* d : {"chunks", "raw", "meta", "vlmeta", "attrs"}) want.push_back(d);
  EXPECT_EQ(names, want);
  EXPECT_FALSE(tree.lookup(root, "nothing").has_value());

  // stat basics.
  struct stat st = tree.attributes(root);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0555 & ~022);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  EXPECT_EQ(st.st_mtim.tv_sec, 1'700'000'000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 123'456'789);

  // data. Uninitialized chunks have no defined content (c-blosc2 leaves its
  // buffer as it was, and the fixture recorded that); blosc2fs shows zeros.
  Bytes data = gunzip_file(testing::fixtures_dir() / "expect" / (name + ".data.gz"));
  for (int64_t n = 0, at = 0; n < nchunks; ++n) {
    const auto& c = expect["chunks"][size_t(n)];
    const int64_t nbytes = c["nbytes"];
    if (int(c["special"]) == 4 && at + nbytes <= int64_t(data.size()))
      std::fill(data.begin() + at, data.begin() + at + nbytes, 0);
    at += nbytes;
  }
  const Node data_node{NodeKind::data, 0};
  EXPECT_EQ(tree.attributes(data_node).st_size, int64_t(expect["nbytes"]));
  EXPECT_EQ(read_all(files, data_node), data);

  // chunks/ and raw/
  const Node chunks_dir{NodeKind::chunks_dir, 0}, raw_dir{NodeKind::raw_dir, 0};
  auto chunk_entries = list(tree, chunks_dir);
  auto raw_entries = list(tree, raw_dir);
  ASSERT_EQ(int64_t(chunk_entries.size()), nchunks);
  ASSERT_EQ(int64_t(raw_entries.size()), nchunks);
  int64_t offset = 0;
  for (int64_t n = 0; n < nchunks; ++n) {
    const auto& c = expect["chunks"][size_t(n)];
    const Node chunk{NodeKind::chunk, n}, raw{NodeKind::raw_chunk, n};
    EXPECT_EQ(chunk_entries[size_t(n)].name, chunk_file_name(n));
    EXPECT_EQ(tree.lookup(chunks_dir, chunk_file_name(n)), chunk);
    EXPECT_EQ(tree.lookup(raw_dir, chunk_file_name(n) + ".chunk"), raw);
    EXPECT_EQ(tree.node(Tree::inode(chunk)), chunk);
    EXPECT_EQ(tree.node(Tree::inode(raw)), raw);
    const int64_t nbytes = c["nbytes"];
    EXPECT_EQ(tree.attributes(chunk).st_size, nbytes) << "chunk " << n;
    const bool special_entry = int64_t(c["index_entry"]) < 0;
    EXPECT_EQ(tree.attributes(raw).st_size, special_entry ? 32 : int64_t(c["cbytes"])) << "raw " << n;
    Bytes got = read_all(files, chunk, 5000);
    ASSERT_LE(offset + nbytes, int64_t(data.size()));
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + offset) && int64_t(got.size()) == nbytes)
        << "chunk " << n;
    EXPECT_EQ(int64_t(read_all(files, raw).size()), tree.attributes(raw).st_size);
    offset += nbytes;
  }
  EXPECT_FALSE(tree.node(kChunkBase + uint64_t(nchunks)).has_value());
  EXPECT_FALSE(tree.lookup(chunks_dir, chunk_file_name(nchunks)).has_value());
  EXPECT_FALSE(tree.lookup(chunks_dir, "0").has_value());

  // meta/ and vlmeta/
  const Node meta_dir{NodeKind::meta_dir, 0}, vlmeta_dir{NodeKind::vlmeta_dir, 0};
  std::set<std::string> metas;
  for (const DirEntry& e : list(tree, meta_dir)) {
    metas.insert(e.name);
    ASSERT_TRUE(expect["metalayers"].contains(e.name));
    Bytes want_bytes = hex_to_bytes(expect["metalayers"][e.name]);
    EXPECT_EQ(read_all(files, e.node), want_bytes) << "meta/" << e.name;
    EXPECT_EQ(tree.attributes(e.node).st_size, int64_t(want_bytes.size()));
    EXPECT_EQ(tree.path(e.node), "meta/" + e.name);
  }
  EXPECT_EQ(metas.size(), expect["metalayers"].size());
  std::set<std::string> vlmetas;
  for (const DirEntry& e : list(tree, vlmeta_dir)) {
    vlmetas.insert(e.name);
    ASSERT_TRUE(expect["vlmetalayers"].contains(e.name));
    Bytes want_bytes = hex_to_bytes(expect["vlmetalayers"][e.name]);
    EXPECT_EQ(read_all(files, e.node), want_bytes) << "vlmeta/" << e.name;
    EXPECT_EQ(tree.attributes(e.node).st_size, int64_t(want_bytes.size()));
  }
  EXPECT_EQ(vlmetas.size(), expect["vlmetalayers"].size());
  for (const DirEntry& e : list(tree, {NodeKind::attrs_dir, 0})) {
    EXPECT_TRUE(vlmetas.count(e.name));
    Bytes text = read_all(files, e.node);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    EXPECT_TRUE(nlohmann::json::accept(text.begin(), text.end())) << "attrs/" << e.name;
  }

  // Generated texts: sizes are exact.
  for (NodeKind kind : {NodeKind::frame_json, NodeKind::index_tsv}) {
    Node node{kind, 0};
    EXPECT_EQ(int64_t(read_all(files, node).size()), tree.attributes(node).st_size);
  }
  if (nd) {
    Node npy{NodeKind::array_npy, 0};
    Bytes bytes = read_all(files, npy, 3333);
    EXPECT_EQ(int64_t(bytes.size()), tree.attributes(npy).st_size);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(std::string(bytes.begin() + 1, bytes.begin() + 6), "NUMPY");
    auto array_gz = testing::fixtures_dir() / "expect" / (name + ".array.gz");
    if (std::filesystem::exists(array_gz)) {
      Bytes array = gunzip_file(array_gz);
      ASSERT_GE(bytes.size(), array.size());
      EXPECT_TRUE(std::equal(array.begin(), array.end(), bytes.end() - int64_t(array.size()))) << "array.npy body";
    }
  } else {
    EXPECT_FALSE(tree.node(5).has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FsTreeFixture, ::testing::ValuesIn(fixture_frame_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace blosc2fs
