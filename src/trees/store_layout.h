// What a mounted store shows, fixed when it is mounted: its groups (from its
// keys' components), its leaves with the keys that lie under them, and the
// files of its own tree (store.json, a table's table.csv and schema.json, every
// group's zarr.json), with their inode numbers.
//
// Inode numbers: the top 20 bits say which leaf's Volume (0 = the store's own
// tree), the low 44 bits are that Volume's own inode number (its root, 1, being
// the leaf's directory) XOR a 20-bit scatter of the slot, so every Volume keeps
// the numbering of a single-frame mount. The store's own tree: 1 the root,
// 2 store.json, kGroupBase + g group g, kFileBase + f the other files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store.h"
#include "table_csv_stream.h"

namespace blosc2fs {

namespace store_numbers {

inline constexpr int kSlotShift = 44;
inline constexpr uint64_t kLocalMask = (uint64_t(1) << kSlotShift) - 1;
inline constexpr uint64_t kStoreJsonIno = 2;
inline constexpr uint64_t kGroupBase = 16;
inline constexpr uint64_t kFileBase = uint64_t(1) << 32;  // files of groups: table.csv, schema.json, zarr.json
inline constexpr size_t kMaxLeaves = (size_t(1) << 20) - 2;

// The kernel hashes inode numbers into buckets mostly by their low bits, so
// with the slot alone in the top bits every leaf's root (and its frame.json, ...)
// would share one bucket: 10,000 leaves made each lookup walk thousands of
// inodes (find_inode was half of a cold listing). The slot's own 20-bit
// scatter, XORed into the low bits, spreads them; slot 0 keeps its numbers.
inline uint64_t scatter(uint64_t slot) { return (slot * 0x9E3779B97F4A7C15u) >> kSlotShift; }
inline uint64_t slot_of(uint64_t ino) { return ino >> kSlotShift; }
inline uint64_t local_of(uint64_t ino) { return (ino & kLocalMask) ^ scatter(slot_of(ino)); }
inline uint64_t global(uint64_t slot, uint64_t local) { return slot << kSlotShift | (local ^ scatter(slot)); }

}  // namespace store_numbers

class StoreLayout {
 public:
  // A name in a group directory, or a key under a leaf in the leaf's directory.
  struct Child {
    std::string name;
    bool leaf = false;
    size_t index = 0;  // group or leaf index
  };
  // A file of the store's own tree: store.json, a table's table.csv and schema.json, a group's zarr.json.
  struct TreeFile {
    std::string name;
    uint64_t ino = 0;
    size_t table = 0;      // table.csv, schema.json: which table
    bool csv = false;      // table.csv: made as it is read (direct I/O, size 0)
    std::optional<size_t> zarr_group;  // zarr.json of this group (docs/zarr.md)
  };
  struct Group {
    std::string path;             // "/" or the key prefix "/a/b"
    std::vector<TreeFile> files;  // listed first
    std::vector<Child> children;  // sorted by name
    // A TreeStore group's attributes: the leaf of its __vlmeta__ carrier, whose
    // attrs/ directory the group shows as its own attrs/.
    std::optional<size_t> attrs_leaf;
  };
  struct Leaf {
    const StoreLeaf* store_leaf = nullptr;
    std::vector<Child> children;  // keys under this one ("/a/b" under "/a"), by name
    // A part of a CTable (its _meta, _valid_rows, _cols/...): read-only, since
    // python-blosc2 opens a table only with all of its parts as it wrote them
    // (removing the schema's vlmetalayers would leave a store it cannot open).
    bool table_part = false;
    bool remote() const { return store_leaf->where.type == LeafLocation::Type::remote; }
  };

  // Logs the keys it cannot show and the store's skipped entries. Throws
  // FormatError for more keys than the numbers hold.
  explicit StoreLayout(const Store& store);
  ~StoreLayout();

  size_t leaf_count() const { return leaves_.size(); }
  // Slot s (1-based) is leaf s - 1. Throws FsError ENOENT for none.
  const Leaf& leaf(uint64_t slot) const;
  const Group* group_of(uint64_t ino) const;
  const TreeFile* file_of(uint64_t ino) const;
  TableCsvStream& table(size_t t) const { return *tables_[t]; }
  uint64_t child_ino(const Child& child) const;
  // Whether `name` in the directory (slot, local) is a key under a leaf (it cannot be made, removed or renamed there).
  bool key_child_named(uint64_t slot, uint64_t local, std::string_view name) const;
  // A group's zarr.json: its attributes are the TreeStore group's (its __vlmeta__ carrier's), else {}.
  std::string group_zarr_json(size_t g) const;

 private:
  void add_tables();

  const Store& store_;
  std::vector<Group> groups_;  // 0 = root
  std::vector<Leaf> leaves_;   // slot = index + 1
  std::vector<std::unique_ptr<TableCsvStream>> tables_;
  std::vector<TreeFile> files_;  // every group's files, by ino - kFileBase (store.json apart)
};

// The child of that name among `children` (sorted by name), or null.
const StoreLayout::Child* find_store_child(const std::vector<StoreLayout::Child>& children, std::string_view name);

}  // namespace blosc2fs
