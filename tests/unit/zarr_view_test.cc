// The Zarr view without FUSE (docs/zarr.md): ZarrFiles' metadata texts and
// chunk re-layout, ZarrNames' names, listings, sizes and paths over the chunk
// grid, the chunk files' bytes read through a Volume against the arrays
// c-blosc2 read back, and ZarrView's writes (a writer's `<key>.<hex>.partial`
// renamed onto a chunk key, a key removed), checked through the Volume's own
// reads and through the frame reader.
#include "zarr_view.h"

#include <fcntl.h>
#include <linux/fs.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "frame.h"
#include "frame_chunk_loader.h"
#include "frame_editor_test_util.h"
#include "frame_files.h"
#include "frame_writer.h"
#include "fs_errno.h"
#include "fs_error.h"
#include "inodes.h"
#include "msgpack.h"
#include "volume.h"
#include "zarr_files.h"

namespace blosc2fs {
namespace zarr_view_test {  // unity builds: helpers of their own
namespace {

using testing::fixtures_dir;
using testing::frame_path;
using testing::gunzip_file;
using testing::TempDir;
using testing::errno_of;

// b2nd-3d-f8: shape 50 x 37 x 23 float64 in chunks 20 x 16 x 10 of blocks 7 x 5 x 4:
// a grid of 3 x 3 x 3 chunks, plain chunk files (25,600 bytes, under the 1 MiB a
// shard needs) re-laid out from blocks that are not rows of the chunk.
constexpr const char* k3d = "b2nd-3d-f8.b2nd";
const std::vector<int64_t> k3dShape{50, 37, 23}, k3dChunk{20, 16, 10}, k3dBlock{7, 5, 4};

struct OpenedFrame {
  explicit OpenedFrame(const std::filesystem::path& path) : frame(Frame::open(path)), cache(loader, uint64_t(1) << 30) {
    loader.set_frame(frame);
    files = std::make_unique<FrameFiles>(frame, cache);
  }
  std::shared_ptr<const Frame> frame;
  FrameChunkLoader loader;
  ChunkCache cache;
  std::unique_ptr<FrameFiles> files;
};

std::string text_of(const Bytes& b) { return std::string(b.begin(), b.end()); }

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Item `at` (coordinates in the chunk) of a decoded b2nd chunk: blocks in C
// order over the chunk's blocks, each block's items in C order. Written here
// from docs/b2nd.md, apart from the NdLayout the mount uses.
int64_t decoded_item(const std::vector<int64_t>& chunk, const std::vector<int64_t>& block,
                     const std::vector<int64_t>& at) {
  int64_t block_number = 0, in_block = 0;
  for (size_t d = 0; d < chunk.size(); ++d) {
    const int64_t blocks = (chunk[d] + block[d] - 1) / block[d];
    block_number = block_number * blocks + at[d] / block[d];
    in_block = in_block * block[d] + at[d] % block[d];
  }
  return block_number * product(block) + in_block;
}

// Calls f(item coordinates in the chunk, its C-order number there, its C-order
// number in the array or -1 outside it) for every item of chunk `grid_at`.
void for_each_item(const std::vector<int64_t>& shape, const std::vector<int64_t>& chunk,
                   const std::vector<int64_t>& grid_at,
                   const std::function<void(const std::vector<int64_t>&, int64_t, int64_t)>& f) {
  const size_t nd = shape.size();
  std::vector<int64_t> at(nd, 0);
  for (int64_t i = 0; i < product(chunk); ++i) {
    int64_t rest = i;
    for (size_t d = nd; d-- > 0;) {
      at[d] = rest % chunk[d];
      rest /= chunk[d];
    }
    int64_t flat = 0;
    bool inside = true;
    for (size_t d = 0; d < nd; ++d) {
      const int64_t x = grid_at[d] * chunk[d] + at[d];
      inside = inside && x < shape[d];
      flat = flat * shape[d] + x;
    }
    f(at, i, inside ? flat : -1);
  }
}

std::vector<int64_t> grid_coords(int64_t n, const std::vector<int64_t>& grid) {
  std::vector<int64_t> c(grid.size());
  for (size_t d = grid.size(); d-- > 0;) {
    c[d] = n % grid[d];
    n /= grid[d];
  }
  return c;
}

class ZarrVolume : public ::testing::Test {
 protected:
  std::unique_ptr<Volume> mount(const std::filesystem::path& path, bool writable) {
    VolumeOptions o;
    o.writable = writable;
    o.edit.sync = false;
    o.refresh_interval = std::chrono::milliseconds(0);
    return std::make_unique<Volume>(path, o);
  }
  std::filesystem::path copy(const std::string& name) {
    return testing::copy_frame(frame_path(name), dir_.path() / name);
  }
  static Bytes read_all(Volume& v, uint64_t ino, size_t piece = 65537) {
    Bytes out, buf(piece);
    for (int64_t at = 0;;) {
      const size_t got = v.read(ino, at, buf);
      if (got == 0) break;
      out.insert(out.end(), buf.begin(), buf.begin() + int64_t(got));
      at += int64_t(got);
    }
    return out;
  }
  // The inode at a path of names from the root.
  static uint64_t at(Volume& v, std::initializer_list<std::string> path) {
    uint64_t ino = kRootIno;
    for (const std::string& name : path) {
      std::optional<uint64_t> next = v.lookup(ino, name);
      if (!next) throw std::runtime_error("no " + name);
      ino = *next;
    }
    return ino;
  }
  // A whole file written the way zarr-python's LocalStore writes a key: create
  // (O_TRUNC), write, close.
  static void put(Volume& v, uint64_t parent, const std::string& name, const Bytes& content) {
    KernelNotes notes;
    auto [ino, file] = v.create(parent, name, O_WRONLY | O_CREAT | O_TRUNC, notes);
    v.write(*file, 0, content, notes);
    v.flush(*file, notes);
    v.release(std::move(file), notes);
  }
  TempDir dir_;
};

// --- ZarrFiles: the metadata texts ---

TEST(ZarrFiles, PlanAndMetadataOfA3dArray) {
  OpenedFrame f(frame_path(k3d));
  const ZarrFiles* z = f.files->zarr();
  ASSERT_NE(z, nullptr);
  const ZarrArrayPlan& plan = z->plan();
  EXPECT_EQ(plan.shape, k3dShape);
  EXPECT_EQ(plan.chunk_shape, k3dChunk);
  EXPECT_EQ(plan.block_shape, k3dBlock);
  EXPECT_EQ(plan.grid, (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(plan.nchunks, 27);
  EXPECT_EQ(plan.itemsize, 8);
  EXPECT_EQ(plan.data_type, "float64");
  EXPECT_EQ(plan.npy_descr, "<f8");
  EXPECT_FALSE(plan.sharded);
  EXPECT_FALSE(plan.chunk_in_c_order);
  EXPECT_FALSE(z->zero_d());
  EXPECT_EQ(z->ndim(), 3);
  EXPECT_EQ(z->dirs_at_level(0), 1);
  EXPECT_EQ(z->dirs_at_level(1), 3);
  EXPECT_EQ(z->dirs_at_level(2), 9);
  EXPECT_EQ(z->dirs_at_level(3), 27);
  // Blocks of 7 x 5 x 4 cover the chunk as 21 x 20 x 12 items.
  EXPECT_EQ(z->decoded_chunk_bytes(), 21 * 20 * 12 * 8);
  EXPECT_EQ(z->decoded_chunk_bytes(), f.frame->header().chunksize);

  const nlohmann::json v3 = nlohmann::json::parse(z->array_json());
  EXPECT_EQ(v3["zarr_format"], 3);
  EXPECT_EQ(v3["node_type"], "array");
  EXPECT_EQ(v3["shape"], nlohmann::json(k3dShape));
  EXPECT_EQ(v3["data_type"], "float64");
  EXPECT_EQ(v3["chunk_grid"]["name"], "regular");
  EXPECT_EQ(v3["chunk_grid"]["configuration"]["chunk_shape"], nlohmann::json(k3dChunk));
  EXPECT_EQ(v3["chunk_key_encoding"]["configuration"]["separator"], "/");
  EXPECT_EQ(v3["fill_value"], 0.0);
  ASSERT_EQ(v3["codecs"].size(), 1u);
  EXPECT_EQ(v3["codecs"][0]["name"], "bytes");
  EXPECT_EQ(v3["codecs"][0]["configuration"]["endian"], "little");
  // The attributes are the vlmetalayers that are one msgpack value.
  const nlohmann::json attrs = v3["attributes"];
  EXPECT_EQ(attrs["author"], "Alice Smith");
  EXPECT_EQ(attrs["answer"], 42);
  EXPECT_EQ(attrs["attrs"]["units"], "K");
  EXPECT_EQ(attrs["attrs"]["scale"], 0.5);
  EXPECT_EQ(attrs["attrs"]["valid"], nlohmann::json({0, 100}));
  EXPECT_EQ(attrs["attrs"]["ok"], true);
  EXPECT_EQ(v3["dimension_names"], nlohmann::json({"dim0_50", "dim1_37", "dim2_23"}));

  const nlohmann::json v2 = nlohmann::json::parse(z->zarray());
  EXPECT_EQ(v2["zarr_format"], 2);
  EXPECT_EQ(v2["shape"], nlohmann::json(k3dShape));
  EXPECT_EQ(v2["chunks"], nlohmann::json(k3dChunk));
  EXPECT_EQ(v2["dtype"], "<f8");
  EXPECT_TRUE(v2["compressor"].is_null());
  EXPECT_TRUE(v2["fill_value"].is_null());
  EXPECT_EQ(v2["order"], "C");
  EXPECT_EQ(v2["dimension_separator"], ".");
  const nlohmann::json za = nlohmann::json::parse(z->zattrs());
  EXPECT_EQ(za["_ARRAY_DIMENSIONS"], nlohmann::json({"dim0_50", "dim1_37", "dim2_23"}));
  EXPECT_EQ(za["answer"], 42);
  EXPECT_EQ(za["author"], "Alice Smith");
}

TEST(ZarrFiles, ArraysOfOtherTypesAndNone) {
  {
    OpenedFrame f(frame_path("b2nd-2d-u1.b2nd"));
    ASSERT_NE(f.files->zarr(), nullptr);
    EXPECT_EQ(f.files->zarr()->plan().data_type, "uint8");
    EXPECT_EQ(f.files->zarr()->plan().npy_descr, "|u1");
    EXPECT_FALSE(nlohmann::json::parse(f.files->zarr()->array_json())["codecs"][0]["configuration"].contains("endian"));
  }
  {
    OpenedFrame f(frame_path("b2nd-1d-i4.b2nd"));
    ASSERT_NE(f.files->zarr(), nullptr);
    EXPECT_EQ(f.files->zarr()->plan().data_type, "int32");
    EXPECT_EQ(f.files->zarr()->plan().grid.size(), 1u);
  }
  // No Zarr v3 core type, no array: no view.
  EXPECT_EQ(OpenedFrame(frame_path("b2nd-2d-struct.b2nd")).files->zarr(), nullptr);
  EXPECT_EQ(OpenedFrame(frame_path("codec-zstd-shuffle-f4.b2frame")).files->zarr(), nullptr);
}

// relayout(): the plain chunk file from the decoded chunk, item by item, and
// decoded_chunk_of(): its inverse, for every chunk of the 3-d fixture.
TEST(ZarrFiles, RelayoutAndItsInverseAgainstTheBlockGeometry) {
  OpenedFrame f(frame_path(k3d));
  const ZarrFiles& z = *f.files->zarr();
  for (int64_t n = 0; n < 27; ++n) {
    const Bytes decoded = f.frame->read_chunk(n);
    ASSERT_EQ(int64_t(decoded.size()), z.decoded_chunk_bytes());
    Bytes plain(size_t(z.plan().plain_chunk_bytes()));
    z.relayout(decoded, 0, plain);
    for_each_item(k3dShape, k3dChunk, grid_coords(n, z.plan().grid), [&](const std::vector<int64_t>& at, int64_t i,
                                                                         int64_t) {
      const int64_t from = decoded_item(k3dChunk, k3dBlock, at);
      ASSERT_EQ(std::memcmp(plain.data() + i * 8, decoded.data() + from * 8, 8), 0) << "chunk " << n << " item " << i;
    });
    // A piece from an odd offset is the same bytes.
    Bytes piece(1001);
    z.relayout(decoded, 8 * 333 + 3, piece);
    EXPECT_TRUE(std::equal(piece.begin(), piece.end(), plain.begin() + 8 * 333 + 3)) << "chunk " << n;
    // Written back, the plain chunk gives the decoded chunk's items (padding
    // left zero: it is never written).
    std::string why;
    std::optional<Bytes> back = z.decoded_chunk_of(plain, &why);
    ASSERT_TRUE(back.has_value()) << why;
    ASSERT_EQ(back->size(), decoded.size());
    for_each_item(k3dShape, k3dChunk, grid_coords(n, z.plan().grid), [&](const std::vector<int64_t>& at, int64_t,
                                                                         int64_t) {
      const int64_t item = decoded_item(k3dChunk, k3dBlock, at);
      ASSERT_EQ(std::memcmp(back->data() + item * 8, decoded.data() + item * 8, 8), 0) << "chunk " << n;
    });
  }
  std::string why;
  EXPECT_FALSE(z.decoded_chunk_of(Bytes(25599), &why).has_value());
  EXPECT_NE(why.find("25599 bytes"), std::string::npos) << why;
  EXPECT_FALSE(z.decoded_chunk_of(Bytes(25601), &why).has_value());
  EXPECT_FALSE(z.decoded_chunk_of(Bytes(), &why).has_value());
}

// --- ZarrNames: names, listings, sizes, paths ---

TEST(ZarrNames, LookupEntrySizeAndPathOverTheGrid) {
  OpenedFrame f(frame_path(k3d));
  const ZarrFiles* z = f.files->zarr();
  const ZarrNames names(z);
  const Node c{NodeKind::zarr_dir, 0};
  EXPECT_TRUE(ZarrNames::is_kind(NodeKind::zarr_chunk));
  EXPECT_TRUE(ZarrNames::is_kind(NodeKind::zattrs));
  EXPECT_FALSE(ZarrNames::is_kind(NodeKind::chunk));
  EXPECT_FALSE(ZarrNames::is_kind(NodeKind::root));
  EXPECT_TRUE(names.exists(c));
  EXPECT_EQ(names.path(c), "c");
  // "c" at the root is a file only for a 0-d array; here the root's c/ is a fixed entry.
  EXPECT_FALSE(names.lookup(Node{NodeKind::root}, "c").has_value());

  // c/2/1/0: chunk 2 * 9 + 1 * 3 + 0.
  std::optional<Node> c2 = names.lookup(c, "2");
  ASSERT_TRUE(c2.has_value());
  EXPECT_EQ(c2->kind, NodeKind::zarr_dir);
  EXPECT_EQ(c2->index, 2);
  EXPECT_EQ(c2->level, 1);
  EXPECT_EQ(names.path(*c2), "c/2");
  std::optional<Node> c21 = names.lookup(*c2, "1");
  ASSERT_TRUE(c21.has_value());
  EXPECT_EQ(c21->index, 7);
  EXPECT_EQ(c21->level, 2);
  EXPECT_EQ(names.path(*c21), "c/2/1");
  std::optional<Node> chunk = names.lookup(*c21, "0");
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->kind, NodeKind::zarr_chunk);
  EXPECT_EQ(chunk->index, 21);
  EXPECT_EQ(names.path(*chunk), "c/2/1/0");
  EXPECT_TRUE(names.exists(*chunk));
  EXPECT_EQ(names.size(*chunk), 20 * 16 * 10 * 8);
  // Every chunk's path walks back to it.
  for (int64_t n = 0; n < 27; ++n) {
    const std::vector<int64_t> g = grid_coords(n, z->plan().grid);
    EXPECT_EQ(names.path(Node{NodeKind::zarr_chunk, n}),
              "c/" + std::to_string(g[0]) + "/" + std::to_string(g[1]) + "/" + std::to_string(g[2]));
    Node dir = c;
    for (int d = 0; d < 3; ++d) dir = names.lookup(dir, std::to_string(g[size_t(d)])).value();
    EXPECT_EQ(dir, (Node{NodeKind::zarr_chunk, n}));
  }
  // Names that are not coordinates of the grid.
  for (const char* bad : {"3", "02", "-1", "", "1x", " 1", "+1", "1.0", "99999999999999999999", "0x1"})
    EXPECT_FALSE(names.lookup(c, bad).has_value()) << "'" << bad << "'";
  EXPECT_FALSE(names.lookup(*chunk, "0").has_value());  // a file has no children
  // Directories that are not there are neither looked into nor listed.
  Node deep{NodeKind::zarr_dir, 0};
  deep.level = 3;
  EXPECT_FALSE(names.exists(deep));
  EXPECT_FALSE(names.lookup(deep, "0").has_value());
  Node past{NodeKind::zarr_dir, 9};
  past.level = 2;
  EXPECT_FALSE(names.exists(past));
  EXPECT_FALSE(names.entry(past, 0).has_value());
  EXPECT_FALSE(names.exists(Node{NodeKind::zarr_chunk, 27}));
  EXPECT_FALSE(names.exists(Node{NodeKind::zarr_chunk, -1}));
  EXPECT_FALSE(names.exists(Node{NodeKind::zarr2_chunk, 27}));

  // Listings: c/ and c/2 name directories 0..2, c/2/1 names chunk files.
  auto listing = [&](const Node& dir) {
    std::vector<DirEntry> out;
    int64_t cookie = 0;
    while (std::optional<DirEntry> e = names.entry(dir, cookie)) {
      cookie = e->next;
      out.push_back(std::move(*e));
    }
    return out;
  };
  for (const Node& dir : {c, *c2}) {
    const std::vector<DirEntry> l = listing(dir);
    ASSERT_EQ(l.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(l[size_t(i)].name, std::to_string(i));
      EXPECT_TRUE(l[size_t(i)].directory);
      EXPECT_EQ(computed_node(l[size_t(i)].ino), names.lookup(dir, std::to_string(i)));
    }
  }
  const std::vector<DirEntry> files = listing(*c21);
  ASSERT_EQ(files.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(files[size_t(i)].directory);
    EXPECT_EQ(files[size_t(i)].ino, kZarrChunkBase + uint64_t(21 + i));
  }
  EXPECT_FALSE(names.entry(c, -1).has_value());
  EXPECT_FALSE(names.entry(c, 3).has_value());

  // zarr2/: .zarray, .zattrs, then "I.J.K" for every chunk in C order.
  const Node zarr2{NodeKind::zarr2_dir};
  const std::vector<DirEntry> v2 = listing(zarr2);
  ASSERT_EQ(v2.size(), 2u + 27u);
  EXPECT_EQ(v2[0].name, ".zarray");
  EXPECT_EQ(v2[1].name, ".zattrs");
  EXPECT_EQ(v2[2].name, "0.0.0");
  EXPECT_EQ(v2[2 + 21].name, "2.1.0");
  EXPECT_EQ(v2[2 + 21].ino, kZarr2ChunkBase + 21);
  EXPECT_EQ(v2.back().name, "2.2.2");
  EXPECT_EQ(names.lookup(zarr2, "2.1.0"), (Node{NodeKind::zarr2_chunk, 21}));
  EXPECT_EQ(names.lookup(zarr2, ".zarray"), (Node{NodeKind::zarray}));
  EXPECT_EQ(names.lookup(zarr2, ".zattrs"), (Node{NodeKind::zattrs}));
  for (const char* bad : {"2.1", "2.1.0.0", "3.0.0", "02.1.0", "2/1/0", "2..1", ".zgroup", "", "0"})
    EXPECT_FALSE(names.lookup(zarr2, bad).has_value()) << "'" << bad << "'";
  EXPECT_EQ(names.path(Node{NodeKind::zarr2_chunk, 21}), "zarr2/2.1.0");
  EXPECT_EQ(names.path(Node{NodeKind::zarray}), "zarr2/.zarray");
  EXPECT_EQ(names.path(Node{NodeKind::zarr_json}), "zarr.json");

  // Sizes: the texts' lengths, plain chunk files of the whole chunk shape.
  EXPECT_EQ(names.size(Node{NodeKind::zarr_json}), int64_t(z->array_json().size()));
  EXPECT_EQ(names.size(Node{NodeKind::zarray}), int64_t(z->zarray().size()));
  EXPECT_EQ(names.size(Node{NodeKind::zattrs}), int64_t(z->zattrs().size()));
  EXPECT_EQ(names.size(Node{NodeKind::zarr2_chunk, 26}), 25600);
  EXPECT_EQ(names.size(Node{NodeKind::zarr_chunk, 26}), 25600);  // an edge chunk: whole too
  EXPECT_EQ(names.size(c), 0);
  // Plain chunks go through the page cache in reads of up to 1 MiB.
  EXPECT_FALSE(names.read_exactly(*chunk));
  EXPECT_EQ(names.io_size(*chunk), 1 << 20);
}

TEST(ZarrNames, AFrameWithoutAnArrayHasNoZarrNames) {
  const ZarrNames names(nullptr);
  EXPECT_FALSE(names.exists(Node{NodeKind::zarr_json}));
  EXPECT_FALSE(names.exists(Node{NodeKind::zarr_dir, 0}));
  EXPECT_FALSE(names.lookup(Node{NodeKind::zarr_dir, 0}, "0").has_value());
  EXPECT_FALSE(names.lookup(Node{NodeKind::zarr2_dir}, ".zarray").has_value());
  EXPECT_FALSE(names.lookup(Node{NodeKind::root}, "c").has_value());
  EXPECT_FALSE(names.entry(Node{NodeKind::zarr2_dir}, 0).has_value());
  EXPECT_EQ(names.size(Node{NodeKind::zarr_json}), 0);
  EXPECT_EQ(names.size(Node{NodeKind::zarr_chunk, 0}), 0);
  EXPECT_EQ(names.path(Node{NodeKind::zarr2_chunk, 3}), "zarr2/?");
  EXPECT_FALSE(names.read_exactly(Node{NodeKind::zarr_chunk, 0}));
  EXPECT_EQ(names.io_size(Node{NodeKind::zarr_chunk, 0}), 1 << 20);
}

// --- the chunk files' bytes, through a Volume ---

TEST_F(ZarrVolume, PlainChunkFilesHoldTheArrayRegion) {
  const nlohmann::json expect = testing::load_expect(k3d);
  const Bytes array = gunzip_file(fixtures_dir() / "expect" / (std::string(k3d) + ".array.gz"));
  ASSERT_EQ(int64_t(array.size()), product(k3dShape) * 8);
  auto v = mount(frame_path(k3d), false);
  auto frame = Frame::open(frame_path(k3d));
  EXPECT_EQ(text_of(read_all(*v, at(*v, {"zarr.json"}))), OpenedFrame(frame_path(k3d)).files->zarr()->array_json());
  const std::vector<int64_t> grid{3, 3, 3};
  for (int64_t n = 0; n < 27; ++n) {
    const std::vector<int64_t> g = grid_coords(n, grid);
    const std::string i = std::to_string(g[0]), j = std::to_string(g[1]), k = std::to_string(g[2]);
    const uint64_t ino = at(*v, {"c", i, j, k});
    EXPECT_EQ(ino, kZarrChunkBase + uint64_t(n));
    EXPECT_EQ(v->attributes(ino).st_size, 25600);
    EXPECT_EQ(v->path_of(ino), "c/" + i + "/" + j + "/" + k);
    const Bytes file = read_all(*v, ino);
    ASSERT_EQ(file.size(), 25600u) << n;
    // Inside the array: the array's items. Past its edge (edge chunks are
    // full size, as Zarr stores them): what the b2nd chunk holds there.
    const Bytes decoded = frame->read_chunk(n);
    int64_t inside = 0;
    for_each_item(k3dShape, k3dChunk, g, [&](const std::vector<int64_t>& c, int64_t item, int64_t flat) {
      const uint8_t* want = flat >= 0 ? array.data() + flat * 8 : decoded.data() + decoded_item(k3dChunk, k3dBlock, c) * 8;
      inside += flat >= 0;
      ASSERT_EQ(std::memcmp(file.data() + item * 8, want, 8), 0) << "chunk " << n << " item " << item;
    });
    int64_t expected_inside = 1;
    for (size_t d = 0; d < 3; ++d) expected_inside *= std::min(k3dChunk[d], k3dShape[d] - g[d] * k3dChunk[d]);
    EXPECT_EQ(inside, expected_inside) << n;
    // zarr2/I.J.K: the same plain chunk; read in small pieces too.
    const uint64_t v2 = at(*v, {"zarr2", i + "." + j + "." + k});
    EXPECT_EQ(v2, kZarr2ChunkBase + uint64_t(n));
    EXPECT_EQ(read_all(*v, v2, 999), file) << n;
  }
  // Past the end of a chunk file: nothing.
  Bytes out(16);
  EXPECT_EQ(v->read(at(*v, {"c", "0", "0", "0"}), 25600, out), 0u);
  EXPECT_EQ(v->read(at(*v, {"c", "0", "0", "0"}), 25590, out), 10u);
}

// A frame whose chunks are big enough to be shards: 2048 x 1536 uint8 in
// chunks of 1024 x 1024 (1 MiB) and blocks of 256 x 256, a grid of 2 x 2, the
// second column of chunks half outside the array. Padding holds zeros.
class ZarrShards : public ZarrVolume {
 protected:
  static constexpr int64_t kRows = 2048, kCols = 1536, kChunk = 1024, kBlock = 256;
  static uint8_t item(int64_t r, int64_t c) { return uint8_t((r * 7 + c * 13) % 251); }
  std::filesystem::path make() {
    const auto path = dir_.path() / "shards-2d-u1.b2nd";
    NdMeta meta;
    meta.ndim = 2;
    meta.shape = {kRows, kCols};
    meta.chunkshape = {int32_t(kChunk), int32_t(kChunk)};
    meta.blockshape = {int32_t(kBlock), int32_t(kBlock)};
    meta.dtype = "|u1";
    FrameParams params;
    params.cparams.typesize = 1;
    params.cparams.blocksize = int32_t(kBlock * kBlock);
    params.chunksize = int32_t(kChunk * kChunk);
    params.metalayers.push_back(Metalayer{"b2nd", serialize_b2nd_meta(meta)});
    FrameWriter w(path, params);
    for (int64_t n = 0; n < 4; ++n) w.append(decoded_chunk(n));
    w.close();
    return path;
  }
  // Chunk n in block order (blocks of the chunk in C order, each in C order).
  static Bytes decoded_chunk(int64_t n) {
    Bytes chunk(size_t(kChunk * kChunk), 0);
    const int64_t r0 = (n / 2) * kChunk, c0 = (n % 2) * kChunk;
    for (int64_t y = 0; y < kChunk; ++y)
      for (int64_t x = 0; x < kChunk; ++x)
        if (r0 + y < kRows && c0 + x < kCols)
          chunk[size_t(decoded_item({kChunk, kChunk}, {kBlock, kBlock}, {y, x}))] = item(r0 + y, c0 + x);
    return chunk;
  }
};

TEST_F(ZarrShards, AShardIsTheDecodedChunkAndItsIndex) {
  const auto path = make();
  OpenedFrame f(path);
  const ZarrFiles* z = f.files->zarr();
  ASSERT_NE(z, nullptr);
  const ZarrArrayPlan& plan = z->plan();
  ASSERT_TRUE(plan.sharded);
  EXPECT_FALSE(plan.chunk_in_c_order);
  EXPECT_EQ(plan.inner_shape, (std::vector<int64_t>{kBlock, kBlock}));
  EXPECT_EQ(plan.ninner, 16);
  EXPECT_EQ(plan.inner_bytes(), kBlock * kBlock);
  EXPECT_EQ(plan.shard_index_bytes(), 16 * 16);
  EXPECT_EQ(plan.v3_chunk_bytes(), kChunk * kChunk + 256);
  EXPECT_EQ(plan.plain_chunk_bytes(), kChunk * kChunk);
  const nlohmann::json v3 = nlohmann::json::parse(z->array_json());
  ASSERT_EQ(v3["codecs"].size(), 1u);
  EXPECT_EQ(v3["codecs"][0]["name"], "sharding_indexed");
  EXPECT_EQ(v3["codecs"][0]["configuration"]["chunk_shape"], nlohmann::json({kBlock, kBlock}));
  EXPECT_EQ(v3["codecs"][0]["configuration"]["index_location"], "end");
  const ZarrNames names(z);
  const Node shard{NodeKind::zarr_chunk, 1}, plain{NodeKind::zarr2_chunk, 1};
  EXPECT_TRUE(names.read_exactly(shard));
  EXPECT_FALSE(names.read_exactly(plain));
  EXPECT_EQ(names.io_size(shard), kBlock * kBlock);  // divides the inner chunk
  EXPECT_EQ(names.io_size(plain), 1 << 20);
  EXPECT_EQ(names.size(shard), kChunk * kChunk + 256);
  EXPECT_EQ(names.size(plain), kChunk * kChunk);

  auto v = mount(path, false);
  for (int64_t n = 0; n < 4; ++n) {
    const std::string i = std::to_string(n / 2), j = std::to_string(n % 2);
    const uint64_t ino = at(*v, {"c", i, j});
    EXPECT_EQ(v->attributes(ino).st_size, kChunk * kChunk + 256);
    const Bytes file = read_all(*v, ino, 100000);
    ASSERT_EQ(int64_t(file.size()), kChunk * kChunk + 256);
    const uint8_t* index = file.data() + kChunk * kChunk;
    const int64_t r0 = (n / 2) * kChunk, c0 = (n % 2) * kChunk;
    for (int64_t b = 0; b < 16; ++b) {
      const uint64_t offset = load_le64(index + 16 * b), nbytes = load_le64(index + 16 * b + 8);
      EXPECT_EQ(offset, uint64_t(b * kBlock * kBlock)) << "chunk " << n << " inner " << b;
      EXPECT_EQ(nbytes, uint64_t(kBlock * kBlock));
      // Inner chunk b: block (b / 4, b % 4) of the chunk, its items in C order.
      const int64_t by = b / 4, bx = b % 4;
      for (int64_t y = 0; y < kBlock; y += 17)
        for (int64_t x = 0; x < kBlock; x += 3) {
          const int64_t r = r0 + by * kBlock + y, c = c0 + bx * kBlock + x;
          const uint8_t want = r < kRows && c < kCols ? item(r, c) : 0;
          ASSERT_EQ(file[size_t(offset) + size_t(y * kBlock + x)], want) << "chunk " << n << " row " << r << " col " << c;
        }
    }
    // zarr2/I.J: the plain chunk, C order over 1024 x 1024.
    const Bytes v2 = read_all(*v, at(*v, {"zarr2", i + "." + j}), 300000);
    ASSERT_EQ(int64_t(v2.size()), kChunk * kChunk);
    for (int64_t y = 0; y < kChunk; y += 13)
      for (int64_t x = 0; x < kChunk; x += 5) {
        const uint8_t want = r0 + y < kRows && c0 + x < kCols ? item(r0 + y, c0 + x) : 0;
        ASSERT_EQ(v2[size_t(y * kChunk + x)], want) << "chunk " << n;
      }
  }
  // A read of one inner chunk and of part of the index.
  Bytes inner(size_t(kBlock * kBlock));
  const uint64_t c10 = at(*v, {"c", "1", "0"});
  EXPECT_EQ(v->read(c10, 5 * kBlock * kBlock, inner), inner.size());
  EXPECT_EQ(inner[0], item(kChunk + kBlock, kBlock));
  Bytes entry(24);
  EXPECT_EQ(v->read(c10, kChunk * kChunk + 16 * 15, entry), 16u);
  EXPECT_EQ(load_le64(entry.data()), uint64_t(15 * kBlock * kBlock));
}

// A chunk key is its coordinates in canonical decimal: "-1" under c/1 is no
// name (c/1/-1 once resolved to c/0/2, another chunk under a second name).
TEST_F(ZarrVolume, CoordinatesAreCanonicalDecimals) {
  auto v = mount(frame_path(k3d), false);
  const uint64_t c = at(*v, {"c"}), c1 = at(*v, {"c", "1"}), c12 = at(*v, {"c", "1", "2"});
  for (uint64_t dir : {c, c1, c12})
    for (const char* bad : {"-1", "-0", "-3", "+1", "01", "1 ", "3", "", "1e0"})
      EXPECT_FALSE(v->lookup(dir, bad).has_value()) << v->path_of(dir) << " '" << bad << "'";
  const uint64_t zarr2 = at(*v, {"zarr2"});
  for (const char* bad : {"1.-1.0", "-0.0.0", "1.+1.0", "1.01.0"})
    EXPECT_FALSE(v->lookup(zarr2, bad).has_value()) << bad;
  EXPECT_EQ(v->lookup(c12, "2"), kZarrChunkBase + 1 * 9 + 2 * 3 + 2);
}

// --- writes through the Zarr view ---

TEST_F(ZarrVolume, APartialFileRenamedOntoAnEdgeChunkReplacesIt) {
  const auto path = copy(k3d);
  const Bytes array = gunzip_file(fixtures_dir() / "expect" / (std::string(k3d) + ".array.gz"));
  auto v = mount(path, true);
  KernelNotes notes;
  const uint64_t c22 = at(*v, {"c", "2", "2"});
  const uint64_t chunk = at(*v, {"c", "2", "2", "2"});
  const Bytes before = read_all(*v, chunk);
  // c/2/2/2, the corner chunk: 10 x 5 x 3 of its 20 x 16 x 10 items are the
  // array's; a Zarr writer fills the rest with anything (here 1e300).
  Bytes plain(25600);
  Bytes want_array = array;
  const std::vector<int64_t> g{2, 2, 2};
  for_each_item(k3dShape, k3dChunk, g, [&](const std::vector<int64_t>&, int64_t i, int64_t flat) {
    const double value = flat >= 0 ? double(flat) * 0.25 - 7 : 1e300;
    std::memcpy(plain.data() + i * 8, &value, 8);
    if (flat >= 0) std::memcpy(want_array.data() + flat * 8, &value, 8);
  });
  const std::string scratch = "2.0123456789abcdef0123456789abcdef.partial";
  put(*v, c22, scratch, plain);
  EXPECT_TRUE(v->lookup(c22, scratch).has_value());
  EXPECT_EQ(read_all(*v, chunk), before);  // nothing changes before the rename
  EXPECT_EQ(errno_of([&] { v->rename(c22, scratch, c22, "2", RENAME_NOREPLACE, notes); }), EEXIST);
  EXPECT_EQ(errno_of([&] { v->rename(c22, scratch, c22, "2", 0, notes); }), 0);
  EXPECT_FALSE(v->lookup(c22, scratch).has_value());

  // The tree's own reads: the chunk file is the plain chunk as written (its
  // items past the array's edge too: they are the b2nd chunk's padding now),
  // zarr2/ shows it, array.npy holds the new items.
  const Bytes after = read_all(*v, chunk);
  EXPECT_EQ(after, plain);
  EXPECT_EQ(read_all(*v, at(*v, {"zarr2", "2.2.2"})), after);
  const Bytes npy = read_all(*v, at(*v, {"array.npy"}));
  ASSERT_GE(npy.size(), want_array.size());
  EXPECT_TRUE(std::equal(want_array.begin(), want_array.end(), npy.end() - int64_t(want_array.size())));
  v->shutdown();
  v.reset();

  // The frame reader: the frame on disk holds the new chunk, array.npy reads it.
  OpenedFrame f(path);
  Bytes body(want_array.size());
  EXPECT_EQ(f.files->read_array(int64_t(f.files->npy_header_text().size()), body), body.size());
  EXPECT_EQ(body, want_array);
  const Bytes stored = f.frame->read_chunk(26);
  for_each_item(k3dShape, k3dChunk, g, [&](const std::vector<int64_t>& c, int64_t i, int64_t) {
    ASSERT_EQ(std::memcmp(stored.data() + decoded_item(k3dChunk, k3dBlock, c) * 8, plain.data() + i * 8, 8), 0);
  });
  EXPECT_EQ(f.frame->read_chunk(0), Frame::open(frame_path(k3d))->read_chunk(0));
}

TEST_F(ZarrVolume, RefusedWritesLeaveTheChunkAndTheScratchFile) {
  const auto path = copy(k3d);
  const testing::FrameContent original = testing::read_content(path);
  auto v = mount(path, true);
  KernelNotes notes;
  const uint64_t c = at(*v, {"c"}), c01 = at(*v, {"c", "0", "1"}), zarr2 = at(*v, {"zarr2"});
  const uint64_t chunk = at(*v, {"c", "0", "1", "2"});
  const Bytes before = read_all(*v, chunk);
  const std::string scratch = "2.ffff.partial";
  // The wrong size: EINVAL, the chunk unchanged, the scratch file kept for its writer.
  put(*v, c01, scratch, Bytes(25601, 1));
  EXPECT_EQ(errno_of([&] { v->rename(c01, scratch, c01, "2", 0, notes); }), EINVAL);
  EXPECT_TRUE(v->lookup(c01, scratch).has_value());
  EXPECT_EQ(read_all(*v, chunk), before);
  // O_EXCL on it: EEXIST; O_TRUNC empties it.
  EXPECT_EQ(errno_of([&] { v->create(c01, scratch, O_WRONLY | O_CREAT | O_EXCL, notes); }), EEXIST);
  {
    auto [ino, file] = v->create(c01, scratch, O_WRONLY | O_CREAT | O_TRUNC, notes);
    EXPECT_EQ(v->attributes(ino).st_size, 0);
    v->release(std::move(file), notes);
  }
  // Onto a key out of the grid, onto a directory, from a name that is not there.
  EXPECT_EQ(errno_of([&] { v->rename(c01, scratch, c01, "3", 0, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->rename(c01, "7.abc.partial", c01, "2", 0, notes); }), ENOENT);
  EXPECT_EQ(errno_of([&] { v->rename(c01, "1", c01, "2", 0, notes); }), EPERM);  // a chunk is no scratch file
  EXPECT_EQ(errno_of([&] { v->rename(c, "0.abc.partial", c, "0", 0, notes); }), ENOENT);
  // Only a writer's temporary files can be made; chunk keys are written by renaming.
  EXPECT_EQ(errno_of([&] { v->create(c01, "notes.txt", O_WRONLY | O_CREAT, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->create(c01, "2", O_WRONLY | O_CREAT | O_TRUNC, notes); }), EACCES);
  // zarr2/ takes no writes; its missing keys are missing.
  EXPECT_EQ(errno_of([&] { v->create(zarr2, "0.0.0.abc.partial", O_WRONLY | O_CREAT, notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->unlink(zarr2, "0.1.2", notes); }), EPERM);
  EXPECT_EQ(errno_of([&] { v->unlink(zarr2, "9.9.9", notes); }), ENOENT);
  EXPECT_EQ(errno_of([&] { v->unlink(c01, "9", notes); }), ENOENT);
  EXPECT_EQ(errno_of([&] { v->unlink(c, "0", notes); }), EISDIR);
  v->unlink(c01, scratch, notes);
  EXPECT_FALSE(v->lookup(c01, scratch).has_value());
  EXPECT_EQ(read_all(*v, chunk), before);
  v->shutdown();
  EXPECT_EQ(testing::read_content(path), original);
}

TEST_F(ZarrVolume, ScratchRenamedTwiceThenOntoAKey) {
  const auto path = copy(k3d);
  auto v = mount(path, true);
  KernelNotes notes;
  const uint64_t c10 = at(*v, {"c", "1", "0"});
  Bytes plain(25600);
  for (size_t i = 0; i < plain.size(); i += 8) {
    const double value = double(i);
    std::memcpy(plain.data() + i, &value, 8);
  }
  put(*v, c10, "1.aaaa.partial", Bytes(8, 0));
  put(*v, c10, "1.bbbb.partial", plain);
  // One temporary name onto another replaces it.
  v->rename(c10, "1.bbbb.partial", c10, "1.aaaa.partial", 0, notes);
  EXPECT_FALSE(v->lookup(c10, "1.bbbb.partial").has_value());
  const uint64_t moved = v->lookup(c10, "1.aaaa.partial").value();
  EXPECT_EQ(v->attributes(moved).st_size, 25600);
  // Onto its own name: nothing happens (as rename(2) of a name onto itself).
  EXPECT_EQ(errno_of([&] { v->rename(c10, "1.aaaa.partial", c10, "1.aaaa.partial", 0, notes); }), 0);
  EXPECT_EQ(v->lookup(c10, "1.aaaa.partial"), moved);
  EXPECT_EQ(v->attributes(moved).st_size, 25600);
  v->rename(c10, "1.aaaa.partial", c10, "1", 0, notes);
  const Bytes got = read_all(*v, at(*v, {"c", "1", "0", "1"}));
  // Chunk (1, 0, 1): rows 20..39, columns 0..15, all in the array; depth 10..19, too.
  EXPECT_EQ(got, plain);
  // The renamed inode now answers as the chunk.
  EXPECT_EQ(v->path_of(moved), "c/1/0/1");
  v->shutdown();
  v.reset();
  OpenedFrame f(path);
  Bytes relaid(25600);
  f.files->zarr()->relayout(f.frame->read_chunk(1 * 9 + 0 * 3 + 1), 0, relaid);
  EXPECT_EQ(relaid, plain);
}

TEST_F(ZarrVolume, RemovingAKeyStoresTheFillValue) {
  const auto path = copy(k3d);
  const Bytes array = gunzip_file(fixtures_dir() / "expect" / (std::string(k3d) + ".array.gz"));
  auto v = mount(path, true);
  KernelNotes notes;
  v->unlink(at(*v, {"c", "1", "1"}), "1", notes);
  // Still listed (a Zarr key of the grid), now zeros.
  const uint64_t chunk = at(*v, {"c", "1", "1", "1"});
  EXPECT_EQ(read_all(*v, chunk), Bytes(25600, 0));
  EXPECT_EQ(read_all(*v, at(*v, {"zarr2", "1.1.1"})), Bytes(25600, 0));
  v->shutdown();
  v.reset();
  OpenedFrame f(path);
  EXPECT_EQ(f.frame->read_chunk(13), Bytes(size_t(f.files->zarr()->decoded_chunk_bytes()), 0));
  Bytes body(array.size());
  EXPECT_EQ(f.files->read_array(int64_t(f.files->npy_header_text().size()), body), body.size());
  Bytes want = array;
  for_each_item(k3dShape, k3dChunk, {1, 1, 1}, [&](const std::vector<int64_t>&, int64_t, int64_t flat) {
    if (flat >= 0) std::memset(want.data() + flat * 8, 0, 8);
  });
  EXPECT_EQ(body, want);
}

// A 0-d array: its one chunk is the file c at the top (and zarr2/0). A
// writer's temporary file beside it, renamed onto c, replaces the value and
// leaves no name behind: once the kernel lets go of the renamed inode, the
// Volume holds nothing but the frame (a store leaf may be closed).
TEST_F(ZarrVolume, AZeroDArraysChunkIsTheFileC) {
  const auto path = dir_.path() / "scalar.b2nd";
  auto value_bytes = [](double v) {
    Bytes b(8);
    std::memcpy(b.data(), &v, 8);
    return b;
  };
  {
    NdMeta meta;
    meta.ndim = 0;
    meta.dtype = "<f8";
    FrameParams params;
    params.cparams.typesize = 8;
    params.chunksize = 8;
    params.metalayers.push_back(Metalayer{"b2nd", serialize_b2nd_meta(meta)});
    FrameWriter w(path, params);
    w.append(value_bytes(2.5));
    w.close();
  }
  {
    OpenedFrame f(path);
    ASSERT_NE(f.files->zarr(), nullptr);
    EXPECT_TRUE(f.files->zarr()->zero_d());
    const ZarrNames names(f.files->zarr());
    EXPECT_EQ(names.lookup(Node{NodeKind::root}, "c"), (Node{NodeKind::zarr_chunk, 0}));
    EXPECT_EQ(names.lookup(Node{NodeKind::zarr2_dir}, "0"), (Node{NodeKind::zarr2_chunk, 0}));
    EXPECT_FALSE(names.lookup(Node{NodeKind::zarr2_dir}, "0.0").has_value());
    EXPECT_EQ(names.path(Node{NodeKind::zarr_chunk, 0}), "c");
    EXPECT_EQ(names.path(Node{NodeKind::zarr2_chunk, 0}), "zarr2/0");
    EXPECT_EQ(nlohmann::json::parse(f.files->zarr()->array_json())["shape"], nlohmann::json::array());
  }
  auto v = mount(path, true);
  KernelNotes notes;
  const uint64_t c = at(*v, {"c"});
  EXPECT_EQ(c, kZarrChunkBase);
  EXPECT_EQ(v->attributes(c).st_size, 8);
  EXPECT_FALSE(S_ISDIR(v->attributes(c).st_mode));
  EXPECT_EQ(read_all(*v, c), value_bytes(2.5));
  EXPECT_EQ(read_all(*v, at(*v, {"zarr2", "0"})), value_bytes(2.5));
  put(*v, kRootIno, "c.0123abcd.partial", value_bytes(-7.25));
  const uint64_t scratch = v->lookup(kRootIno, "c.0123abcd.partial").value();
  v->remember(scratch);  // the kernel's entry of the temporary name
  v->rename(kRootIno, "c.0123abcd.partial", kRootIno, "c", 0, notes);
  EXPECT_FALSE(v->lookup(kRootIno, "c.0123abcd.partial").has_value());
  EXPECT_EQ(read_all(*v, c), value_bytes(-7.25));
  EXPECT_EQ(v->path_of(scratch), "c");  // the renamed inode answers as c while the kernel holds it
  v->forget(scratch, 1);
  EXPECT_TRUE(v->closable());
  v->shutdown();
  v.reset();
  EXPECT_EQ(Frame::open(path)->read_chunk(0), value_bytes(-7.25));
}

TEST_F(ZarrShards, AShardRenamedOntoAnEdgeKey) {
  const auto path = make();
  auto v = mount(path, true);
  KernelNotes notes;
  const uint64_t c0 = at(*v, {"c", "0"});
  // Inner chunks written in reverse order; inner chunk 6 left to the fill value.
  const int64_t inner = kBlock * kBlock;
  Bytes shard(size_t(16 * inner + 256), 0);
  for (int64_t b = 0; b < 16; ++b) {
    const int64_t place = (15 - b) * inner;
    for (int64_t k = 0; k < inner; ++k) shard[size_t(place + k)] = uint8_t(b * 11 + k % 13);
    uint64_t offset = uint64_t(place), nbytes = uint64_t(inner);
    if (b == 6) offset = nbytes = ~uint64_t(0);
    store_le64(shard.data() + 16 * inner + 16 * b, offset);
    store_le64(shard.data() + 16 * inner + 16 * b + 8, nbytes);
  }
  put(*v, c0, "1.0a0b.partial", shard);
  v->rename(c0, "1.0a0b.partial", c0, "1", 0, notes);
  const Bytes got = read_all(*v, at(*v, {"c", "0", "1"}), 77777);
  ASSERT_EQ(int64_t(got.size()), 16 * inner + 256);
  for (int64_t b = 0; b < 16; ++b) {
    EXPECT_EQ(load_le64(got.data() + 16 * inner + 16 * b), uint64_t(b * inner));
    for (int64_t k = 0; k < inner; k += 101)
      ASSERT_EQ(got[size_t(b * inner + k)], b == 6 ? 0 : uint8_t(b * 11 + k % 13)) << "inner " << b;
  }
  // zarr2/0.1 shows the same chunk in C order: row y, column x of the chunk is
  // in inner chunk (y / 256) * 4 + x / 256.
  const Bytes v2 = read_all(*v, at(*v, {"zarr2", "0.1"}), 1 << 20);
  for (int64_t y = 0; y < kChunk; y += 31)
    for (int64_t x = 0; x < kChunk; x += 7) {
      const int64_t b = (y / kBlock) * 4 + x / kBlock, k = (y % kBlock) * kBlock + x % kBlock;
      ASSERT_EQ(v2[size_t(y * kChunk + x)], b == 6 ? 0 : uint8_t(b * 11 + k % 13)) << y << "," << x;
    }
  v->shutdown();
  v.reset();
  auto frame = Frame::open(path);
  EXPECT_EQ(frame->read_chunk(1), Bytes(got.begin(), got.begin() + 16 * inner));
  EXPECT_EQ(frame->read_chunk(0), decoded_chunk(0));
  EXPECT_EQ(frame->read_chunk(3), decoded_chunk(3));
}

}  // namespace
}  // namespace zarr_view_test
}  // namespace blosc2fs
