// A store's tree without FUSE: a .b2d made in a temporary directory from the
// fixture frames (two leaves of their own files, one in a group, and one
// embedded in embed.b2e): its names, store.json, a leaf's data read through the
// tree, and the edits docs/operations.md lets through (a leaf of its own file)
// or refuses (the store's own names and files, an embedded leaf, a read-only mount).
#include "store_tree.h"

#include <fcntl.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "frame_writer.h"
#include "fs_errno.h"
#include "fs_error.h"
#include "msgpack.h"
#include "read_pieces.h"

namespace blosc2fs {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::errno_of;

constexpr const char* kLeafFixture = "b2nd-1d-i4.b2nd";
constexpr const char* kOtherFixture = "b2nd-2d-u1.b2nd";

void copy_fixture(const std::string& name, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(testing::frame_path(name), to);
  fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                          fs::perms::others_read);
}

// embed.b2e holding `frame` as the key `key` (an EmbedStore: its data the frames
// laid end to end, its map in the estore_metadata vlmetalayer).
void write_embed_store(const fs::path& path, const std::string& key, const Bytes& frame) {
  FrameParams params;
  params.cparams.typesize = 1;
  params.chunksize = 8192;
  params.metalayers = {Metalayer{"b2tree", json_text_to_msgpack("{\"version\":1}")}};
  FrameWriter writer(path, params);
  writer.append_data(frame);
  Json map = Json::object();
  map[key] = {{"offset", 0}, {"length", frame.size()}};
  writer.set_vlmetalayer("estore_metadata", json_to_msgpack(Json{{"embed_map", map}, {"current_offset", frame.size()}}));
  writer.close();
}

// s.b2d: /a/x and /z of their own files, /y embedded.
fs::path make_store(const TempDir& tmp) {
  const fs::path dir = tmp.path() / "s.b2d";
  fs::create_directories(dir);
  write_embed_store(dir / "embed.b2e", "/y", testing::read_file(testing::frame_path(kOtherFixture)));
  copy_fixture(kLeafFixture, dir / "a" / "x.b2nd");
  copy_fixture(kOtherFixture, dir / "z.b2nd");
  return dir;
}

std::vector<std::string> names(MountTree& tree, uint64_t dir) {
  std::vector<std::string> out;
  int64_t cookie = 0;
  while (std::optional<DirEntry> e = tree.entry(dir, cookie)) {
    EXPECT_EQ(tree.lookup(dir, e->name), e->ino) << e->name;
    out.push_back(e->name);
    cookie = e->next;
  }
  return out;
}

uint64_t ino_at(MountTree& tree, const std::vector<std::string>& path) {
  uint64_t ino = kRootIno;
  for (const std::string& name : path) {
    std::optional<uint64_t> child = tree.lookup(ino, name);
    EXPECT_TRUE(child.has_value()) << name;
    if (!child) return 0;
    ino = *child;
  }
  return ino;
}

Bytes read_whole(MountTree& tree, uint64_t ino) {
  bool keep_cache = false, direct_io = false;
  KernelNotes notes;
  std::unique_ptr<OpenFile> file = tree.open(ino, O_RDONLY, keep_cache, direct_io, notes);
  Bytes out;
  for (int64_t offset = 0;;) {
    ReadPieces pieces;
    tree.read_pieces(ino, *file, offset, 1 << 16, pieces);
    if (pieces.size() == 0) break;
    const size_t at = out.size();
    out.resize(at + pieces.size());
    pieces.copy_to(MutableByteSpan(out.data() + at, pieces.size()));
    offset += int64_t(pieces.size());
  }
  tree.release(std::move(file), notes);
  return out;
}

int open_for_writing(MountTree& tree, uint64_t ino) {
  return errno_of([&] {
    bool keep_cache = false, direct_io = false;
    KernelNotes notes;
    std::unique_ptr<OpenFile> file = tree.open(ino, O_WRONLY, keep_cache, direct_io, notes);
    tree.release(std::move(file), notes);
  });
}

StoreTree open_tree(const fs::path& dir, bool writable) {
  return StoreTree(Store::open(dir), VolumeOptions{}, 2, writable);
}

TEST(StoreTree, NamesGroupsAndLeaves) {
  TempDir tmp;
  const fs::path dir = make_store(tmp);
  StoreTree tree(Store::open(dir), VolumeOptions{}, 2);
  EXPECT_EQ(tree.nchunks(), 3);
  EXPECT_EQ(names(tree, kRootIno), (std::vector<std::string>{"store.json", "zarr.json", "a", "y", "z"}));
  EXPECT_EQ(names(tree, ino_at(tree, {"a"})), (std::vector<std::string>{"zarr.json", "x"}));
  EXPECT_FALSE(tree.lookup(kRootIno, "x").has_value());
  EXPECT_EQ(tree.node(kRootIno)->kind, NodeKind::store_group);
  EXPECT_EQ(tree.node(ino_at(tree, {"store.json"}))->kind, NodeKind::store_json);
  // A leaf's directory is the tree of its frame alone.
  const uint64_t x = ino_at(tree, {"a", "x"});
  EXPECT_EQ(tree.node(x)->kind, NodeKind::root);
  EXPECT_TRUE(S_ISDIR(tree.attributes(x).st_mode));
  const std::vector<std::string> leaf = names(tree, x);
  EXPECT_EQ(leaf.front(), "frame.json");
  EXPECT_NE(std::find(leaf.begin(), leaf.end(), "data"), leaf.end());
  EXPECT_EQ(tree.path_of(x), "/a/x");
  EXPECT_EQ(tree.path_of(ino_at(tree, {"a", "x", "data"})), "/a/x/data");
  // Leaves are numbered apart: the same name in two leaves, two inodes.
  EXPECT_NE(ino_at(tree, {"a", "x", "data"}), ino_at(tree, {"z", "data"}));
}

TEST(StoreTree, ReadsLeavesAndStoreJson) {
  TempDir tmp;
  const fs::path dir = make_store(tmp);
  StoreTree tree(Store::open(dir), VolumeOptions{}, 1);  // one open leaf at a time: they close and open again
  const Bytes x_data = testing::gunzip_file(testing::fixtures_dir() / "expect" / (std::string(kLeafFixture) + ".data.gz"));
  const Bytes z_data = testing::gunzip_file(testing::fixtures_dir() / "expect" / (std::string(kOtherFixture) + ".data.gz"));
  ASSERT_FALSE(x_data.empty());
  const uint64_t x = ino_at(tree, {"a", "x", "data"});
  EXPECT_EQ(read_whole(tree, x), x_data);
  EXPECT_EQ(read_whole(tree, ino_at(tree, {"z", "data"})), z_data);
  EXPECT_EQ(read_whole(tree, ino_at(tree, {"y", "data"})), z_data);  // the embedded copy
  EXPECT_EQ(read_whole(tree, x), x_data);  // its Volume opened again, its numbers kept
  const Json store_json = Json::parse(read_whole(tree, ino_at(tree, {"store.json"})));
  EXPECT_TRUE(store_json.is_object());
}

TEST(StoreTree, EditsOnlyLeavesOfTheirOwnFiles) {
  TempDir tmp;
  const fs::path dir = make_store(tmp);
  StoreTree tree = open_tree(dir, true);
  ASSERT_TRUE(tree.writable());
  KernelNotes notes;
  const uint64_t x = ino_at(tree, {"a", "x"}), y = ino_at(tree, {"y"});
  // A leaf of its own file is edited as a mount of its frame is.
  EXPECT_FALSE(tree.read_only_at(x));
  EXPECT_EQ(open_for_writing(tree, ino_at(tree, {"a", "x", "data"})), 0);
  // An embedded leaf is read-only: EROFS.
  EXPECT_TRUE(tree.read_only_at(y));
  EXPECT_EQ(open_for_writing(tree, ino_at(tree, {"y", "data"})), EROFS);
  EXPECT_EQ(errno_of([&] { tree.create(y, "new", O_WRONLY, notes); }), EROFS);
  // The store's own names and files: EPERM for names, EACCES for writes.
  EXPECT_EQ(open_for_writing(tree, ino_at(tree, {"store.json"})), EACCES);
  EXPECT_EQ(errno_of([&] { tree.create(kRootIno, "new", O_WRONLY, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { tree.unlink(kRootIno, "z", notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { tree.rename(x, "data", ino_at(tree, {"z"}), "data", 0, notes); }), EXDEV);
  tree.shutdown();
}

TEST(StoreTree, ReadOnlyMountRefusesEveryEdit) {
  TempDir tmp;
  const fs::path dir = make_store(tmp);
  StoreTree tree = open_tree(dir, false);
  KernelNotes notes;
  EXPECT_TRUE(tree.read_only_at(ino_at(tree, {"a", "x"})));
  EXPECT_EQ(open_for_writing(tree, ino_at(tree, {"a", "x", "data"})), EROFS);
  EXPECT_EQ(open_for_writing(tree, ino_at(tree, {"store.json"})), EROFS);
  EXPECT_EQ(errno_of([&] { tree.create(kRootIno, "new", O_WRONLY, notes); }), EROFS);
  EXPECT_EQ(errno_of([&] { tree.unlink(kRootIno, "z", notes); }), EROFS);
}

}  // namespace
}  // namespace blosc2fs
