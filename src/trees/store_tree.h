// A python-blosc2 store mounted as a tree: each key's groups are directories,
// each leaf a directory holding the single-frame tree of its frame (a Volume,
// opened on first use; at most `max_open` stay open, the least recently used
// closed first), and store.json at the root.
//
// Inode numbers: the top 20 bits say which Volume (0 = the store's own tree),
// the low 44 bits are that Volume's own inode number (its root, 1, being the
// leaf's directory) XOR a 20-bit scatter of the slot, so every Volume keeps the
// numbering of a single-frame mount. The store's own tree: 1 the root, 2 store.json, kGroupBase + g group g.
// A Volume is closed only when no file of it is open, no request is using it
// and it holds nothing but its committed frame (Volume::closable); what it
// numbered and the kernel holds (its InodeMemory: layers' numbers are handed
// out in order of first sight) is kept with the leaf and given to the Volume
// that opens it again, so the kernel may keep every inode it looked up while
// the leaves come and go.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "store.h"
#include "table_csv.h"
#include "volume.h"

namespace blosc2fs {

class StoreTree : public MountTree {
 public:
  static constexpr int kSlotShift = 44;
  static constexpr uint64_t kLocalMask = (uint64_t(1) << kSlotShift) - 1;
  static constexpr uint64_t kStoreJsonIno = 2;
  static constexpr uint64_t kGroupBase = 16;
  static constexpr uint64_t kFileBase = uint64_t(1) << 32;  // files of groups: table.csv, schema.json
  static constexpr size_t kMaxLeaves = (size_t(1) << 20) - 2;

  // `leaf_options`: what each leaf's Volume gets (its cache budget, access overrides).
  // `writable`: the leaves that are frame files of a .b2d are edited like a
  // mounted frame, under the store's lock; every other leaf is read-only.
  StoreTree(std::unique_ptr<Store> store, VolumeOptions leaf_options, size_t max_open, bool writable = false);
  ~StoreTree() override;

  const Store& store() const { return *store_; }

  bool writable() const override { return writable_; }
  // Unmount: every open leaf commits what it still holds.
  void shutdown() override;
  int64_t nchunks() const override { return int64_t(leaves_.size()); }
  bool underlying_statfs(struct statvfs& out) const override;
  std::optional<Node> node(uint64_t ino) const override;
  std::optional<uint64_t> lookup(uint64_t parent, std::string_view name) override;
  std::optional<DirEntry> entry(uint64_t dir, int64_t cookie) override;
  struct stat attributes(uint64_t ino) override;
  std::string path_of(uint64_t ino) const override;
  void remember(uint64_t ino) override;
  void forget(uint64_t ino, uint64_t count) override;
  std::unique_ptr<OpenFile> open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                 KernelNotes& notes) override;
  bool cache_still_valid(uint64_t ino) override;
  void read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) override;
  void write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) override;
  void flush(OpenFile& file, KernelNotes& notes, bool fsync = false) override;
  void release(std::unique_ptr<OpenFile> file, KernelNotes& notes) override;
  struct stat setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) override;
  std::pair<uint64_t, std::unique_ptr<OpenFile>> create(uint64_t parent, std::string_view name, int flags,
                                                        KernelNotes& notes) override;
  void unlink(uint64_t parent, std::string_view name, KernelNotes& notes) override;
  void rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name, unsigned flags,
              KernelNotes& notes) override;
  void maybe_refresh(KernelNotes& notes) override;
  bool read_only_at(uint64_t ino) override;

  // A name in a group directory, or a key under a leaf in the leaf's directory.
  struct Child {
    std::string name;
    bool leaf = false;
    size_t index = 0;  // group or leaf index
  };

 private:
  // A file of the store's own tree: store.json, a table's table.csv and schema.json.
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
  // A CTable: table.csv made a block of rows at a time as it is read in order;
  // a read elsewhere starts again from the top, holding at most about 1 MiB.
  struct Table {
    std::unique_ptr<TableCsv> csv;
    std::mutex mutex;
    int64_t base = 0;   // the offset of `text` in table.csv
    std::string text;   // made and not yet read past
    int64_t row = 0;    // the next physical row to make
    bool started = false;
  };
  struct Leaf {
    const StoreLeaf* store_leaf = nullptr;
    std::shared_ptr<Volume> volume;                // null while closed
    std::list<size_t>::iterator lru;               // valid while open
    std::vector<Child> children;                   // keys under this one ("/a/b" under "/a"), by name
    uint64_t open_files = 0;                       // it stays open while a file of it is open
    // A part of a CTable (its _meta, _valid_rows, _cols/...): read-only, since
    // python-blosc2 opens a table only with all of its parts as it wrote them
    // (removing the schema's vlmetalayers would leave a store it cannot open).
    bool table_part = false;
    std::unique_ptr<InodeMemory> inodes;           // while closed: what its last Volume numbered
  };
  // Turns an open file's inode number into its leaf Volume's own for one call,
  // and back (and the call's kernel notes into the mount's numbers) when it ends.
  class LeafCall;

  // The kernel hashes inode numbers into buckets mostly by their low bits, so
  // with the slot alone in the top bits every leaf's root (and its frame.json, ...)
  // would share one bucket: 10,000 leaves made each lookup walk thousands of
  // inodes (find_inode was half of a cold listing). The slot's own 20-bit
  // scatter, XORed into the low bits, spreads them; slot 0 keeps its numbers.
  static uint64_t scatter(uint64_t slot) { return (slot * 0x9E3779B97F4A7C15u) >> kSlotShift; }
  static uint64_t slot_of(uint64_t ino) { return ino >> kSlotShift; }
  static uint64_t local_of(uint64_t ino) { return (ino & kLocalMask) ^ scatter(slot_of(ino)); }
  static uint64_t global(uint64_t slot, uint64_t local) { return slot << kSlotShift | (local ^ scatter(slot)); }
  uint64_t child_ino(const Child& child) const;
  const Group* group_of(uint64_t ino) const;
  const TreeFile* file_of(uint64_t ino) const;
  void add_tables();
  // A group's zarr.json: its attributes are the TreeStore group's (its __vlmeta__ carrier's), else {}.
  std::string group_zarr_json(size_t g) const;
  void read_table_csv(Table& table, int64_t offset, size_t size, ReadPieces& out);
  // The leaf's Volume, opened when closed; closes the least recently used
  // closable ones beyond max_open_.
  std::shared_ptr<Volume> volume(uint64_t slot);
  std::shared_ptr<Volume> open_volume_if_open(uint64_t slot);
  Leaf& leaf_of(uint64_t slot);
  static void translate(uint64_t slot, KernelNotes& notes);
  // Whether `name` in the directory (slot, local) is a key under a leaf (it cannot be made, removed or renamed there).
  bool key_child_named(uint64_t slot, uint64_t local, std::string_view name) const;
  // store.json; made anew when `renew` and it has live fields (a remote store's counters).
  std::shared_ptr<const std::string> store_json(bool renew = false);
  struct stat directory_attributes(uint64_t ino) const;
  // EROFS, after one log line, for a write to a leaf that cannot be changed in place.
  [[noreturn]] void refuse_write(uint64_t slot) const;
  std::shared_ptr<Volume> pinned_volume(uint64_t slot);

  std::unique_ptr<Store> store_;
  VolumeOptions leaf_options_;
  size_t max_open_;
  bool writable_;
  struct timespec store_time_ {};
  // Who may read and write the store itself (the .b2d directory, the .b2z or .b2e
  // file): its groups, store.json and tables show these bits (tree_access.h).
  FrameAccess store_access_;
  std::vector<Group> groups_;  // 0 = root
  std::vector<std::unique_ptr<Table>> tables_;
  std::vector<TreeFile> files_;  // every group's files, by ino - kFileBase (store.json apart)

  mutable std::mutex mutex_;  // leaves_' volumes, open files, inode memories and the LRU
  std::mutex store_json_mutex_;  // store_json_
  std::vector<Leaf> leaves_;  // slot = index + 1
  std::list<size_t> lru_;     // open leaves, most recently used first
  Json store_json_base_;
  std::shared_ptr<const std::string> store_json_;
  std::chrono::steady_clock::time_point last_refresh_{};  // of the open leaves (maybe_refresh)
};

}  // namespace blosc2fs
