// Who may do what on a mount: the owner, group and modes the tree shows, from
// the frame's own (tree_access.h), for every kind of node.
#include "tree_access.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "error.h"

namespace blosc2fs {
namespace {

struct stat with_mode(mode_t mode, uid_t uid = 1000, gid_t gid = 100) {
  struct stat st {};
  st.st_mode = mode;
  st.st_uid = uid;
  st.st_gid = gid;
  return st;
}

constexpr NodeKind kReadOnlyFiles[] = {NodeKind::frame_json, NodeKind::index_tsv, NodeKind::cache_stats};
// array.npy: of a b2nd/caterva array (a tensor's loses its write bits in Volume::attributes).
constexpr NodeKind kWritableFiles[] = {NodeKind::data,   NodeKind::chunk, NodeKind::raw_chunk, NodeKind::meta,
                                       NodeKind::vlmeta, NodeKind::attrs, NodeKind::scratch, NodeKind::array_npy};
constexpr NodeKind kDirectories[] = {NodeKind::root,       NodeKind::chunks_dir, NodeKind::raw_dir,
                                     NodeKind::meta_dir,   NodeKind::vlmeta_dir, NodeKind::attrs_dir};

mode_t mode_of(NodeKind kind, mode_t frame_mode, bool writable, AccessOverrides overrides = {}) {
  return node_access(kind, frame_access_of_file(with_mode(S_IFREG | frame_mode)), writable, overrides).mode;
}

TEST(TreeAccess, FrameOwnerAndGroupEverywhere) {
  const FrameAccess frame = frame_access_of_file(with_mode(S_IFREG | 0640, 1234, 567));
  for (NodeKind kind : {NodeKind::root, NodeKind::data, NodeKind::frame_json, NodeKind::vlmeta}) {
    NodeAccess a = node_access(kind, frame, true, {});
    EXPECT_EQ(a.uid, 1234u);
    EXPECT_EQ(a.gid, 567u);
  }
}

TEST(TreeAccess, ModesFollowTheFrame) {
  // A root-owned 0644 frame shared read-write: only the owner may write.
  for (NodeKind k : kWritableFiles) EXPECT_EQ(mode_of(k, 0644, true), 0644u);
  for (NodeKind k : kReadOnlyFiles) EXPECT_EQ(mode_of(k, 0644, true), 0444u);
  for (NodeKind k : kDirectories) EXPECT_EQ(mode_of(k, 0644, true), 0755u);
  // Group-writable.
  for (NodeKind k : kWritableFiles) EXPECT_EQ(mode_of(k, 0664, true), 0664u);
  for (NodeKind k : kDirectories) EXPECT_EQ(mode_of(k, 0664, true), 0775u);
  for (NodeKind k : kReadOnlyFiles) EXPECT_EQ(mode_of(k, 0664, true), 0444u);
  // Private: nobody else may even look.
  for (NodeKind k : kWritableFiles) EXPECT_EQ(mode_of(k, 0600, true), 0600u);
  for (NodeKind k : kDirectories) EXPECT_EQ(mode_of(k, 0600, true), 0700u);
  for (NodeKind k : kReadOnlyFiles) EXPECT_EQ(mode_of(k, 0600, true), 0400u);
  // The frame's execute bits mean nothing here; set-id and sticky bits neither.
  EXPECT_EQ(mode_of(NodeKind::data, 07755, true), 0644u);
  EXPECT_EQ(mode_of(NodeKind::root, 07755, true), 0755u);
  // Write-only for the group: it may search the directories to reach the files.
  EXPECT_EQ(mode_of(NodeKind::data, 0620, true), 0620u);
  EXPECT_EQ(mode_of(NodeKind::vlmeta_dir, 0620, true), 0730u);
}

TEST(TreeAccess, ReadOnlyMountShowsNoWriteBits) {
  for (mode_t frame : {0644u, 0664u, 0666u, 0600u}) {
    for (NodeKind k : kWritableFiles) EXPECT_EQ(mode_of(k, frame, false), frame & 0444);
    for (NodeKind k : kDirectories) EXPECT_EQ(mode_of(k, frame, false), (frame & 0444) | ((frame & 0444) >> 2));
  }
  EXPECT_EQ(mode_of(NodeKind::data, 0444, true), 0444u);  // an unwritable frame, even on a rw mount
}

TEST(TreeAccess, OverridesWin) {
  AccessOverrides o{uid_t(42), gid_t(43), mode_t(027)};
  NodeAccess a = node_access(NodeKind::data, frame_access_of_file(with_mode(S_IFREG | 0666, 1, 2)), true, o);
  EXPECT_EQ(a.uid, 42u);
  EXPECT_EQ(a.gid, 43u);
  EXPECT_EQ(a.mode, 0640u);
  EXPECT_EQ(mode_of(NodeKind::root, 0666, true, o), 0750u);
  AccessOverrides only_uid{uid_t(7), std::nullopt, std::nullopt};
  a = node_access(NodeKind::root, frame_access_of_file(with_mode(S_IFREG | 0644, 1, 2)), true, only_uid);
  EXPECT_EQ(a.uid, 7u);
  EXPECT_EQ(a.gid, 2u);
  EXPECT_EQ(a.mode, 0755u);
}

TEST(TreeAccess, SparseFrameNeedsDirectoryAndHeader) {
  // Directory 0755, chunks.b2frame 0644: as a contiguous 0644 frame.
  FrameAccess a = frame_access_of_sparse(with_mode(S_IFDIR | 0755, 5, 6), with_mode(S_IFREG | 0644, 9, 9));
  EXPECT_EQ(a, (FrameAccess{5, 6, 0444, 0200}));
  // The group may write chunks.b2frame but not add chunk files: no write.
  a = frame_access_of_sparse(with_mode(S_IFDIR | 0755), with_mode(S_IFREG | 0664));
  EXPECT_EQ(a.write, 0200u);
  // Group-writable directory and header.
  a = frame_access_of_sparse(with_mode(S_IFDIR | 02775), with_mode(S_IFREG | 0664));
  EXPECT_EQ(a.write, 0220u);
  EXPECT_EQ(a.read, 0444u);
  // Others may read the header but not search the directory: nothing.
  a = frame_access_of_sparse(with_mode(S_IFDIR | 0754), with_mode(S_IFREG | 0644));
  EXPECT_EQ(a.read, 0440u);
  // A readable directory that cannot be searched gives nothing either.
  a = frame_access_of_sparse(with_mode(S_IFDIR | 0644), with_mode(S_IFREG | 0644));
  EXPECT_EQ(a, (FrameAccess{1000, 100, 0, 0}));
}

TEST(TreeAccess, ReadFromDisk) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("tree_access_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "f.b2frame";
  std::ofstream(file) << "x";
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  FrameAccess a = read_frame_access(file);
  EXPECT_EQ(a.uid, ::getuid());
  EXPECT_EQ(a.gid, ::getgid());
  EXPECT_EQ(a.read, 0440u);
  EXPECT_EQ(a.write, 0200u);
  // A sparse frame: the directory and its chunks.b2frame.
  const std::filesystem::path sparse = dir / "s.b2frame";
  std::filesystem::create_directories(sparse);
  std::ofstream(sparse / "chunks.b2frame") << "x";
  ASSERT_EQ(::chmod(sparse.c_str(), 0750), 0);
  ASSERT_EQ(::chmod((sparse / "chunks.b2frame").c_str(), 0664), 0);
  a = read_frame_access(sparse);
  EXPECT_EQ(a.read, 0440u);
  EXPECT_EQ(a.write, 0200u);  // the group may write chunks.b2frame, not the directory
  ASSERT_EQ(::chmod(sparse.c_str(), 0770), 0);
  EXPECT_EQ(read_frame_access(sparse).write, 0220u);
  std::filesystem::remove(sparse / "chunks.b2frame");
  EXPECT_THROW(read_frame_access(sparse), IoError);
  EXPECT_THROW(read_frame_access(dir / "missing"), IoError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace blosc2fs
