#include "store_tree.h"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "fs_error.h"
#include "frame_lock.h"
#include "read_pieces.h"
#include "store_key.h"
#include "zarr_meta.h"

namespace blosc2fs {

namespace {

using namespace store_numbers;

// A remote C2Array reference has no frame: its directory holds frame.json only.
constexpr uint64_t kRemoteJsonLocal = 2;

// Listing cookies of a leaf directory's keys, after its Volume's own entries.
constexpr int64_t kLeafChildCookie = int64_t(1) << 56;

std::string remote_json(const StoreLeaf& leaf) {
  Json j = Json::object();
  j["kind"] = "c2array";
  j["key"] = leaf.key;
  j["urlbase"] = leaf.where.urlbase;
  j["path"] = leaf.where.remote_path;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace

StoreTree::StoreTree(std::unique_ptr<Store> store, VolumeOptions leaf_options, size_t max_open, bool writable)
    : store_(std::move(store)),
      leaf_options_(std::move(leaf_options)),
      writable_(writable && store_->format() == StoreFormat::b2d),
      layout_(*store_),
      leaves_(max_open, true),
      store_json_(*store_, leaf_options_.live_json_fields) {
  leaf_options_.writable = false;
  // One pool for every leaf: a leaf's share of the budget keeps no chunk's
  // buffer. A quarter of what one Volume keeps: 16 readers of 16 leaves
  // (bench/remote.py, 8 MiB chunks, cache_size 256M) peaked at 224-236 MB RSS
  // and 1.02-1.09 CPU-s with 16 MiB kept, 268-290 MB and 0.95-1.0 CPU-s with
  // 64 MiB, 169-195 MB and 1.19-1.25 CPU-s with none reused.
  if (!leaf_options_.buffer_pool)
    leaf_options_.buffer_pool = BufferPool::create(
        size_t(std::min(leaf_options_.cache_budget * std::max<size_t>(max_open, 1), ChunkCache::kPoolBytes) / 4));
  struct stat st {};
  if (leaf_options_.fixed_access) {
    store_access_ = *leaf_options_.fixed_access;
    ::clock_gettime(CLOCK_REALTIME, &store_time_);
  } else if (::stat(store_->path().c_str(), &st) == 0) {
    store_time_ = st.st_mtim;
    store_access_ = frame_access_of_file(st);
  }
}

StoreTree::~StoreTree() = default;

bool StoreTree::underlying_statfs(struct statvfs& out) const {
  return !store_->remote() && ::statvfs(store_->path().c_str(), &out) == 0;
}

std::shared_ptr<Volume> StoreTree::volume(uint64_t slot) {
  const StoreLayout::Leaf& leaf = layout_.leaf(slot);
  if (leaf.remote()) throw FsError{ENOENT};
  auto open = [&](const std::optional<InodeMemory>& inodes) -> std::shared_ptr<MountTree> {
    MutexLock lock(opening_);
    VolumeOptions options = leaf_options_;
    if (inodes) options.inodes = *inodes;
    std::filesystem::path file = store_->leaf_file(*leaf.store_leaf);
    if (file.empty()) {
      const StoreLeaf* sl = leaf.store_leaf;
      const Store* store = store_.get();
      options.frame_source = [store, sl] { return store->open_leaf(*sl); };
      file = store_->path();
      if (sl->where.type == LeafLocation::Type::embedded) {
        // Its frame is read from an in-memory copy: frame.json says where the bytes lie instead.
        Json embedded = Json::object();
        embedded["store"] = store_->path().string();
        embedded["key"] = sl->key;
        embedded["offset"] = sl->where.offset;
        embedded["length"] = sl->where.length;
        options.frame_json_fields["path"] = store_->embed_file().string();
        options.frame_json_fields["embedded"] = std::move(embedded);
      }
    } else if (writable_ && !leaf.table_part) {
      options.writable = true;
      options.store_lock = LockSidecar::path_for(store_->path() / "embed.b2e", false);
    }
    try {
      return std::make_shared<Volume>(file, options);
    } catch (const IoError& e) {
      if (!options.writable) throw;
      spdlog::warn("{}: cannot be opened for writing ({}): read-only", file.string(), e.what());
      options.writable = false;
      return std::make_shared<Volume>(file, options);
    }
  };
  return std::static_pointer_cast<Volume>(leaves_.get(slot - 1, open));
}

std::shared_ptr<Volume> StoreTree::open_volume_if_open(uint64_t slot) const {
  if (slot == 0 || slot > layout_.leaf_count()) return nullptr;
  return std::static_pointer_cast<Volume>(leaves_.if_open(slot - 1));
}

void StoreTree::translate(uint64_t slot, KernelNotes& notes) {
  for (uint64_t& ino : notes.inodes) ino = global(slot, ino);
  for (uint64_t& ino : notes.attributes) ino = global(slot, ino);
  for (auto& [parent, name] : notes.entries) parent = global(slot, parent);
}

struct stat StoreTree::directory_attributes(uint64_t ino) const {
  struct stat st {};
  st.st_ino = ino;
  const NodeAccess access = node_access(NodeKind::root, store_access_, writable_, leaf_options_.access);
  st.st_uid = access.uid;
  st.st_gid = access.gid;
  st.st_mode = S_IFDIR | access.mode;
  st.st_nlink = 2;
  st.st_blksize = 4096;  // a small getdents buffer, as for a leaf's own directories (Volume::attributes)
  st.st_atim = st.st_mtim = st.st_ctim = store_time_;
  return st;
}

std::optional<Node> StoreTree::node(uint64_t ino) const {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0) {
    if (layout_.group_of(ino)) return Node{NodeKind::store_group};
    if (const StoreLayout::TreeFile* f = layout_.file_of(ino)) {
      if (ino == kStoreJsonIno) return Node{NodeKind::store_json};
      if (f->zarr_group) return Node{NodeKind::group_zarr_json};
      return Node{f->csv ? NodeKind::table_csv : NodeKind::table_schema};
    }
    return std::nullopt;
  }
  if (slot > layout_.leaf_count()) return std::nullopt;
  if (local == kRootIno) return Node{NodeKind::root};
  if (layout_.leaf(slot).remote())
    return local == kRemoteJsonLocal ? std::optional<Node>(Node{NodeKind::frame_json}) : std::nullopt;
  return const_cast<StoreTree*>(this)->volume(slot)->node(local);
}

std::optional<uint64_t> StoreTree::lookup(uint64_t parent, std::string_view name) {
  const uint64_t slot = slot_of(parent), local = local_of(parent);
  if (slot == 0) {
    const StoreLayout::Group* g = layout_.group_of(parent);
    if (!g) throw FsError{ENOENT};
    for (const StoreLayout::TreeFile& f : g->files)
      if (f.name == name) return f.ino;
    if (g->attrs_leaf && name == "attrs") return global(*g->attrs_leaf + 1, directory_inode(NodeKind::attrs_dir));
    const StoreLayout::Child* c = find_store_child(g->children, name);
    if (!c) return std::nullopt;
    return layout_.child_ino(*c);
  }
  const StoreLayout::Leaf& leaf = layout_.leaf(slot);
  if (local == kRootIno)
    if (const StoreLayout::Child* c = find_store_child(leaf.children, name)) return layout_.child_ino(*c);
  if (leaf.remote()) {
    if (local == kRootIno && name == "frame.json") return global(slot, kRemoteJsonLocal);
    return std::nullopt;
  }
  std::optional<uint64_t> child = volume(slot)->lookup(local, name);
  if (!child) return std::nullopt;
  return global(slot, *child);
}

std::optional<DirEntry> StoreTree::entry(uint64_t dir, int64_t cookie) {
  const uint64_t slot = slot_of(dir), local = local_of(dir);
  if (slot == 0) {
    const StoreLayout::Group* g = layout_.group_of(dir);
    if (!g) throw FsError{ENOENT};
    const int64_t files = int64_t(g->files.size());
    if (cookie < files) {
      const StoreLayout::TreeFile& f = g->files[size_t(std::max<int64_t>(cookie, 0))];
      return DirEntry{f.name, f.ino, false, std::max<int64_t>(cookie, 0) + 1};
    }
    const int64_t first = files + (g->attrs_leaf ? 1 : 0);
    if (cookie < first)
      return DirEntry{"attrs", global(*g->attrs_leaf + 1, directory_inode(NodeKind::attrs_dir)), true, first};
    const int64_t i = std::max<int64_t>(cookie, first) - first;
    if (i >= int64_t(g->children.size())) return std::nullopt;
    const StoreLayout::Child& c = g->children[size_t(i)];
    return DirEntry{c.name, layout_.child_ino(c), true, first + i + 1};
  }
  const StoreLayout::Leaf& leaf = layout_.leaf(slot);
  // A leaf's directory: its own tree, then the keys under it.
  auto key_child = [&](int64_t i) -> std::optional<DirEntry> {
    if (local != kRootIno || i >= int64_t(leaf.children.size())) return std::nullopt;
    const StoreLayout::Child& c = leaf.children[size_t(i)];
    return DirEntry{c.name, layout_.child_ino(c), true, kLeafChildCookie + i + 1};
  };
  if (cookie >= kLeafChildCookie) return key_child(cookie - kLeafChildCookie);
  std::optional<DirEntry> e;
  if (leaf.remote()) {
    if (cookie <= 0 && local == kRootIno) e = DirEntry{"frame.json", global(slot, kRemoteJsonLocal), false, 1};
  } else {
    e = volume(slot)->entry(local, cookie);
    if (e) e->ino = global(slot, e->ino);
  }
  return e ? e : key_child(0);
}

struct stat StoreTree::attributes(uint64_t ino) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0) {
    if (layout_.group_of(ino)) return directory_attributes(ino);
    const StoreLayout::TreeFile* f = layout_.file_of(ino);
    if (!f) throw FsError{ENOENT};
    struct stat st = directory_attributes(ino);
    st.st_mode = S_IFREG | node_access(NodeKind::frame_json, store_access_, writable_, leaf_options_.access).mode;
    st.st_nlink = 1;
    if (f->zarr_group) st.st_size = off_t(layout_.group_zarr_json(*f->zarr_group).size());
    else if (ino != kStoreJsonIno && !f->csv) st.st_size = off_t(layout_.table(f->table).schema_json().size());
    // table.csv: size 0, read with direct I/O until its end (it is made as it is
    // read); store.json too: it opens every leaf, which a listing must not wait for.
    st.st_blocks = (st.st_size + 511) / 512;
    return st;
  }
  const StoreLayout::Leaf& leaf = layout_.leaf(slot);
  if (local == kRootIno) return directory_attributes(ino);
  if (leaf.remote()) {
    if (local != kRemoteJsonLocal) throw FsError{ENOENT};
    struct stat st = directory_attributes(ino);
    st.st_mode = S_IFREG | node_access(NodeKind::frame_json, store_access_, writable_, leaf_options_.access).mode;
    st.st_nlink = 1;
    st.st_size = off_t(remote_json(*leaf.store_leaf).size());
    return st;
  }
  struct stat st = volume(slot)->attributes(local);
  st.st_ino = ino;
  return st;
}

std::string StoreTree::path_of(uint64_t ino) const {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0) {
    if (const StoreLayout::Group* g = layout_.group_of(ino)) return g->path;
    if (const StoreLayout::TreeFile* f = layout_.file_of(ino)) return f->name;
    return "inode " + std::to_string(ino);
  }
  if (slot > layout_.leaf_count()) return "inode " + std::to_string(ino);
  const std::string& key = layout_.leaf(slot).store_leaf->key;
  if (local == kRootIno) return key;
  std::shared_ptr<Volume> v = open_volume_if_open(slot);
  return key + "/" + (v ? v->path_of(local) : "inode " + std::to_string(local));
}

void StoreTree::remember(uint64_t ino) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || slot > layout_.leaf_count() || local == kRootIno) return;
  leaves_.remember(slot - 1, local);
}

void StoreTree::forget(uint64_t ino, uint64_t count) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || slot > layout_.leaf_count() || local == kRootIno) return;
  leaves_.forget(slot - 1, local, count);
}

std::unique_ptr<OpenFile> StoreTree::open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                          KernelNotes& notes) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  const bool remote_json =
      slot != 0 && local == kRemoteJsonLocal && layout_.leaf(slot).remote();
  if (slot == 0 || remote_json) {
    if (!node(ino)) throw FsError{ENOENT};
    // The store's own files are made from it: never written (EACCES, as a read-only attribute of sysfs).
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) throw FsError{writable_ ? EACCES : EROFS};
    const StoreLayout::TreeFile* f = slot == 0 ? layout_.file_of(ino) : nullptr;
    direct_io = f && (f->csv || ino == kStoreJsonIno);
    keep_cache = !direct_io;
    if (ino == kStoreJsonIno) store_json_.text(true);  // a remote store's counters as they are now
    auto file = std::make_unique<OpenFile>();
    file->ino = ino;
    return file;
  }
  std::shared_ptr<Volume> v = volume(slot);
  if (((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) && !v->writable()) refuse_write(slot);
  std::unique_ptr<OpenFile> file = v->open(local, flags, keep_cache, direct_io, notes);
  translate(slot, notes);
  leaves_.file_opened(slot - 1);  // the handle belongs to this Volume: it stays open
  file->ino = ino;
  return file;
}

bool StoreTree::cache_still_valid(uint64_t ino) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || local == kRootIno || layout_.leaf(slot).remote())
    return true;  // the store's own tree does not change while mounted
  return volume(slot)->cache_still_valid(local);
}

void StoreTree::read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  auto copy_text = [&](const std::string& text) {
    MutableByteSpan dst = out.add_copy(size);
    out.trim_copy(copy_from(as_bytes(text), offset, dst));
  };
  if (slot == 0) {
    const StoreLayout::TreeFile* f = layout_.file_of(ino);
    if (!f) throw FsError{layout_.group_of(ino) ? EISDIR : ENOENT};
    if (ino == kStoreJsonIno) return copy_text(*store_json_.text());
    if (f->zarr_group) return copy_text(layout_.group_zarr_json(*f->zarr_group));
    TableCsvStream& table = layout_.table(f->table);
    if (!f->csv) return copy_text(table.schema_json());
    return table.read(offset, size, out);
  }
  const StoreLayout::Leaf& leaf = layout_.leaf(slot);
  if (leaf.remote()) {
    if (local != kRemoteJsonLocal) throw FsError{local == kRootIno ? EISDIR : ENOENT};
    return copy_text(remote_json(*leaf.store_leaf));
  }
  volume(slot)->read_pieces(local, file, offset, size, out);
}

void StoreTree::refuse_write(uint64_t slot) const {
  if (!writable_) throw FsError{EROFS};
  const StoreLeaf& leaf = *layout_.leaf(slot).store_leaf;
  const char* what = layout_.leaf(slot).table_part                  ? "a part of a CTable, changed as a whole by python-blosc2"
                     : leaf.where.type == LeafLocation::Type::embedded ? "embedded in embed.b2e"
                     : leaf.where.type == LeafLocation::Type::remote   ? "a remote reference"
                                                                        : "not a frame file of its own";
  spdlog::warn("{}: key {} is {}: read-only", store_->path().string(), leaf.key, what);
  throw FsError{EROFS};
}

std::shared_ptr<Volume> StoreTree::pinned_volume(uint64_t slot) const {
  std::shared_ptr<Volume> v = slot == 0 ? nullptr : open_volume_if_open(slot);
  if (!v) throw FsError{EBADF};
  return v;
}

class StoreTree::LeafCall {
 public:
  LeafCall(uint64_t slot, OpenFile* file, KernelNotes& notes) : slot_(slot), file_(file), notes_(notes) {
    if (file_) {
      mount_ino_ = file_->ino;
      file_->ino = local_of(mount_ino_);
    }
  }
  ~LeafCall() {
    if (file_) file_->ino = mount_ino_;
    translate(slot_, notes_);
  }
  LeafCall(const LeafCall&) = delete;
  LeafCall& operator=(const LeafCall&) = delete;

 private:
  uint64_t slot_;
  OpenFile* file_;
  KernelNotes& notes_;
  uint64_t mount_ino_ = 0;
};

void StoreTree::write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  const uint64_t slot = slot_of(file.ino);
  if (slot == 0) throw FsError{EROFS};
  std::shared_ptr<Volume> v = pinned_volume(slot);
  if (!v->writable()) refuse_write(slot);
  LeafCall call(slot, &file, notes);
  v->write(file, offset, data, notes);
}

void StoreTree::flush(OpenFile& file, KernelNotes& notes, bool fsync) {
  const uint64_t slot = slot_of(file.ino);
  std::shared_ptr<Volume> v = slot == 0 ? nullptr : open_volume_if_open(slot);
  if (!v) return;
  LeafCall call(slot, &file, notes);
  v->flush(file, notes, fsync);
}

void StoreTree::release(std::unique_ptr<OpenFile> file, KernelNotes& notes) {
  const uint64_t slot = slot_of(file->ino);
  std::shared_ptr<Volume> v = slot == 0 ? nullptr : open_volume_if_open(slot);
  if (!v) return;
  leaves_.file_released(slot - 1);
  file->ino = local_of(file->ino);
  LeafCall call(slot, nullptr, notes);  // the file goes to the Volume: only the notes come back
  v->release(std::move(file), notes);
}

struct stat StoreTree::setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || local == kRootIno || layout_.leaf(slot).remote()) {
    if (size) throw FsError{writable_ ? EACCES : EROFS};
    return attributes(ino);  // chmod, chown, utimens: accepted and ignored, as on a frame's mount
  }
  std::shared_ptr<Volume> v = volume(slot);
  if (size && !v->writable()) refuse_write(slot);
  struct stat st;
  {
    LeafCall call(slot, file, notes);
    st = v->setattr(local, file, size, notes);
  }
  st.st_ino = ino;
  return st;
}

std::pair<uint64_t, std::unique_ptr<OpenFile>> StoreTree::create(uint64_t parent, std::string_view name, int flags,
                                                                 KernelNotes& notes) {
  const uint64_t slot = slot_of(parent), local = local_of(parent);
  if (slot == 0 || layout_.leaf(slot).remote())
    throw FsError{writable_ ? EPERM : EROFS};  // keys are not made through the mount
  if (layout_.key_child_named(slot, local, name)) throw FsError{EEXIST};  // a key's directory
  std::shared_ptr<Volume> v = volume(slot);
  if (!v->writable()) refuse_write(slot);
  auto [child, file] = v->create(local, name, flags, notes);
  translate(slot, notes);
  leaves_.file_opened(slot - 1);
  file->ino = global(slot, child);
  return {global(slot, child), std::move(file)};
}

void StoreTree::unlink(uint64_t parent, std::string_view name, KernelNotes& notes) {
  const uint64_t slot = slot_of(parent), local = local_of(parent);
  if (slot == 0 || layout_.leaf(slot).remote())
    throw FsError{writable_ ? EPERM : EROFS};
  if (layout_.key_child_named(slot, local, name)) throw FsError{writable_ ? EPERM : EROFS};  // keys are not removed
  std::shared_ptr<Volume> v = volume(slot);
  if (!v->writable()) refuse_write(slot);
  v->unlink(local, name, notes);
  translate(slot, notes);
}

void StoreTree::rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
                       unsigned flags, KernelNotes& notes) {
  const uint64_t slot = slot_of(parent);
  if (slot == 0 || layout_.leaf(slot).remote())
    throw FsError{writable_ ? EPERM : EROFS};
  if (slot_of(new_parent) != slot) throw FsError{EXDEV};
  if (layout_.key_child_named(slot, local_of(parent), name) || layout_.key_child_named(slot, local_of(new_parent), new_name))
    throw FsError{writable_ ? EPERM : EROFS};  // keys are not renamed, nor replaced
  std::shared_ptr<Volume> v = volume(slot);
  if (!v->writable()) refuse_write(slot);
  v->rename(local_of(parent), name, local_of(new_parent), new_name, flags, notes);
  translate(slot, notes);
}

bool StoreTree::read_only_at(uint64_t ino) {
  const uint64_t slot = slot_of(ino);
  if (!writable_ || slot == 0) return !writable_;
  if (slot > layout_.leaf_count() || layout_.leaf(slot).remote()) return true;
  return !volume(slot)->writable();
}

void StoreTree::maybe_refresh(KernelNotes& notes) {
  if (!writable_) return;  // read-only leaves of a read-only mount are read when opened
  for (auto& [index, tree] : leaves_.due_for_refresh(leaf_options_.refresh_interval)) {
    const uint64_t slot = index + 1;
    KernelNotes mine;
    tree->maybe_refresh(mine);
    translate(slot, mine);
    notes.inodes.insert(notes.inodes.end(), mine.inodes.begin(), mine.inodes.end());
    notes.attributes.insert(notes.attributes.end(), mine.attributes.begin(), mine.attributes.end());
    notes.entries.insert(notes.entries.end(), mine.entries.begin(), mine.entries.end());
  }
}

void StoreTree::shutdown() {
  for (auto& [index, tree] : leaves_.open_trees())
    if (tree->writable()) tree->shutdown();
}

}  // namespace blosc2fs
