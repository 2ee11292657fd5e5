#include "store_tree.h"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <spdlog/spdlog.h>

#include "fs_error.h"
#include "frame_lock.h"
#include "read_pieces.h"
#include "store_key.h"

namespace blosc2fs {

namespace {

// A remote C2Array reference has no frame: its directory holds frame.json only.
constexpr uint64_t kRemoteJsonLocal = 2;

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
      max_open_(std::max<size_t>(max_open, 1)),
      writable_(writable && store_->format() == StoreFormat::b2d) {
  leaf_options_.writable = false;
  struct stat st {};
  if (::stat(store_->path().c_str(), &st) == 0) {
    store_time_ = st.st_mtim;
    store_access_ = frame_access_of_file(st);
  }
  if (store_->leaves().size() > kMaxLeaves)
    throw FormatError(store_->path().string() + ": " + std::to_string(store_->leaves().size()) +
                      " keys, more than the " + std::to_string(kMaxLeaves) + " a mount can number");
  // The groups, from the keys' components (keys are sorted, so "/a" comes before "/a/b").
  std::vector<std::map<std::string, Child>> children(1);
  groups_.push_back(Group{"/", {}});
  for (const StoreLeaf& leaf : store_->leaves()) {
    std::vector<std::string> parts = key_components(leaf.key);
    size_t g = 0;
    bool usable = true;
    for (size_t i = 0; i + 1 < parts.size() && usable; ++i) {
      auto it = children[g].find(parts[i]);
      if (it == children[g].end()) {
        groups_.push_back(Group{groups_[g].path + (g == 0 ? "" : "/") + parts[i], {}});
        children.emplace_back();
        it = children[g].emplace(parts[i], Child{parts[i], false, groups_.size() - 1}).first;
      } else if (it->second.leaf) {
        usable = false;  // a DictStore may hold "/a" and "/a/b": "/a" is a frame's directory
      }
      g = it->second.index;
    }
    const std::string& name = parts.back();
    if (!usable || children[g].count(name) || (g == 0 && name == "store.json")) {
      spdlog::warn("{}: key {} is not shown: its name is taken by another key or by store.json",
                   store_->path().string(), leaf.key);
      continue;
    }
    children[g].emplace(name, Child{name, true, leaves_.size()});
    Leaf l;
    l.store_leaf = &leaf;
    leaves_.push_back(std::move(l));
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    for (auto& [name, child] : children[g]) groups_[g].children.push_back(child);
  groups_[0].files.push_back(TreeFile{"store.json", kStoreJsonIno, 0, false});
  add_tables();
  for (const std::string& line : store_->skipped()) spdlog::warn("{}: skipped {}", store_->path().string(), line);
}

StoreTree::~StoreTree() = default;

void StoreTree::add_tables() {
  for (const Leaf& leaf : leaves_) {
    const std::string& key = leaf.store_leaf->key;
    if (!key.ends_with("/_meta")) continue;
    const std::string prefix = key.substr(0, key.size() - 6);
    // The group directory of the table: the root, or the group at `prefix`.
    const Group* group = &groups_[0];
    size_t g = 0;
    if (!prefix.empty()) {
      for (const std::string& part : key_components(prefix)) {
        auto it = std::find_if(group->children.begin(), group->children.end(),
                               [&](const Child& c) { return c.name == part; });
        if (it == group->children.end() || it->leaf) {
          group = nullptr;
          break;
        }
        g = it->index;
        group = &groups_[g];
      }
    }
    if (!group) continue;
    try {
      std::shared_ptr<const Frame> meta = store_->open_leaf(*leaf.store_leaf);
      const Vlmetalayer* kind = meta->find_vlmetalayer("kind");
      std::optional<Json> value = kind ? msgpack_to_json(meta->vlmetalayer_content(*kind)) : std::nullopt;
      if (!value || *value != "ctable") continue;
    } catch (const std::exception& e) {
      spdlog::warn("{}: {}: {}", store_->path().string(), key, e.what());
      continue;
    }
    auto table = std::make_unique<Table>();
    try {
      table->csv = std::make_unique<TableCsv>(*store_, prefix);
    } catch (const std::exception& e) {
      spdlog::warn("{}: table {} has no table.csv: {}", store_->path().string(), prefix.empty() ? "/" : prefix,
                   e.what());
      continue;
    }
    const size_t t = tables_.size();
    tables_.push_back(std::move(table));
    for (bool csv : {true, false}) {
      TreeFile f{csv ? "table.csv" : "schema.json", kFileBase + files_.size(), t, csv};
      files_.push_back(f);
      groups_[g].files.push_back(f);
    }
  }
}

const StoreTree::TreeFile* StoreTree::file_of(uint64_t ino) const {
  if (ino == kStoreJsonIno) return &groups_[0].files[0];
  if (ino >= kFileBase && ino - kFileBase < files_.size()) return &files_[ino - kFileBase];
  return nullptr;
}

void StoreTree::read_table_csv(Table& table, int64_t offset, size_t size, ReadPieces& out) {
  constexpr size_t kStep = size_t(1) << 20;
  std::lock_guard lock(table.mutex);
  if (!table.started || offset < table.base) {
    table.base = 0;
    table.text = table.csv->header();
    table.row = 0;
    table.started = true;
  }
  const int64_t end = offset + int64_t(size);
  while (table.base + int64_t(table.text.size()) < end && table.row < table.csv->physical_rows()) {
    // Text wholly before the read is dropped as it is made: a read far ahead holds no more than a step.
    if (table.base + int64_t(table.text.size()) <= offset) {
      table.base += int64_t(table.text.size());
      table.text.clear();
    }
    const size_t want = std::min<size_t>(size_t(end - table.base), table.text.size() + kStep);
    table.row = table.csv->append_rows(table.row, want, table.text);
  }
  if (offset > table.base) {
    const size_t drop = std::min<size_t>(table.text.size(), size_t(offset - table.base));
    table.text.erase(0, drop);
    table.base += int64_t(drop);
  }
  if (offset != table.base) return;  // past the end
  const size_t n = std::min(size, table.text.size());
  MutableByteSpan dst = out.add_copy(n);
  std::memcpy(dst.data(), table.text.data(), n);
}

size_t StoreTree::open_volumes() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

bool StoreTree::underlying_statfs(struct statvfs& out) const { return ::statvfs(store_->path().c_str(), &out) == 0; }

uint64_t StoreTree::child_ino(const Child& child) const {
  return child.leaf ? global(child.index + 1, kRootIno) : kGroupBase + child.index;
}

const StoreTree::Group* StoreTree::group_of(uint64_t ino) const {
  if (ino == kRootIno) return &groups_[0];
  if (ino >= kGroupBase && ino - kGroupBase < groups_.size()) return &groups_[ino - kGroupBase];
  return nullptr;
}

StoreTree::Leaf& StoreTree::leaf_of(uint64_t slot) {
  if (slot == 0 || slot > leaves_.size()) throw FsError{ENOENT};
  return leaves_[slot - 1];
}

std::shared_ptr<Volume> StoreTree::volume(uint64_t slot) {
  std::lock_guard lock(mutex_);
  Leaf& leaf = leaf_of(slot);
  if (leaf.store_leaf->where.type == LeafLocation::Type::remote) throw FsError{ENOENT};
  if (leaf.volume) {
    lru_.splice(lru_.begin(), lru_, leaf.lru);
    return leaf.volume;
  }
  VolumeOptions options = leaf_options_;
  if (leaf.inodes) options.inodes = std::move(*leaf.inodes);
  std::filesystem::path file = store_->leaf_file(*leaf.store_leaf);
  if (file.empty()) {
    const StoreLeaf* sl = leaf.store_leaf;
    const Store* store = store_.get();
    options.frame_source = [store, sl] { return store->open_leaf(*sl); };
    file = store_->path();
  } else if (writable_) {
    options.writable = true;
    options.store_lock = LockSidecar::path_for(store_->path() / "embed.b2e", false);
  }
  try {
    leaf.volume = std::make_shared<Volume>(file, options);
  } catch (const IoError& e) {
    if (!options.writable) throw;
    spdlog::warn("{}: cannot be opened for writing ({}): read-only", file.string(), e.what());
    options.writable = false;
    leaf.volume = std::make_shared<Volume>(file, options);
  }
  leaf.inodes.reset();
  lru_.push_front(slot - 1);
  leaf.lru = lru_.begin();
  // Close the least recently used beyond the bound, skipping those in use:
  // with open files, held by a request (every copy of the pointer is made
  // under mutex_, so a count of 1 is exact), or holding uncommitted state.
  for (auto it = lru_.end(); lru_.size() > max_open_ && it != lru_.begin();) {
    --it;
    Leaf& old = leaves_[*it];
    if (old.open_files > 0 || *it == slot - 1 || old.volume.use_count() > 1 || !old.volume->closable()) continue;
    if (old.volume->writable()) old.volume->shutdown();  // a compaction when due
    // Layers' numbers are kept even when the kernel holds none of them now:
    // a request may have just looked one up and not yet told remember().
    InodeMemory memory = old.volume->inode_memory();
    if (!memory.lookups.empty() || !memory.layers.empty())
      old.inodes = std::make_unique<InodeMemory>(std::move(memory));
    old.volume.reset();
    it = lru_.erase(it);
  }
  return leaf.volume;
}

std::shared_ptr<Volume> StoreTree::open_volume_if_open(uint64_t slot) {
  std::lock_guard lock(mutex_);
  if (slot == 0 || slot > leaves_.size()) return nullptr;
  return leaves_[slot - 1].volume;
}

void StoreTree::translate(uint64_t slot, KernelNotes& notes) const {
  for (uint64_t& ino : notes.inodes) ino = global(slot, ino);
  for (uint64_t& ino : notes.attributes) ino = global(slot, ino);
  for (auto& [parent, name] : notes.entries) parent = global(slot, parent);
}

const std::string& StoreTree::store_json() {
  std::lock_guard lock(store_json_mutex_);  // not mutex_: making it opens every leaf, for a while
  if (!store_json_made_) {
    store_json_ = store_json_text(*store_);
    store_json_made_ = true;
  }
  return store_json_;
}

struct stat StoreTree::directory_attributes(uint64_t ino) const {
  struct stat st {};
  st.st_ino = ino;
  const NodeAccess access = node_access(NodeKind::root, store_access_, writable_, leaf_options_.access);
  st.st_uid = access.uid;
  st.st_gid = access.gid;
  st.st_mode = S_IFDIR | access.mode;
  st.st_nlink = 2;
  st.st_atim = st.st_mtim = st.st_ctim = store_time_;
  return st;
}

std::optional<Node> StoreTree::node(uint64_t ino) const {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0) {
    if (group_of(ino)) return Node{NodeKind::root};
    if (file_of(ino)) return Node{NodeKind::frame_json};
    return std::nullopt;
  }
  if (slot > leaves_.size()) return std::nullopt;
  if (local == kRootIno) return Node{NodeKind::root};
  if (leaves_[slot - 1].store_leaf->where.type == LeafLocation::Type::remote)
    return local == kRemoteJsonLocal ? std::optional<Node>(Node{NodeKind::frame_json}) : std::nullopt;
  return const_cast<StoreTree*>(this)->volume(slot)->node(local);
}

std::optional<uint64_t> StoreTree::lookup(uint64_t parent, std::string_view name) {
  const uint64_t slot = slot_of(parent), local = local_of(parent);
  if (slot == 0) {
    const Group* g = group_of(parent);
    if (!g) throw FsError{ENOENT};
    for (const TreeFile& f : g->files)
      if (f.name == name) return f.ino;
    auto it = std::lower_bound(g->children.begin(), g->children.end(), name,
                               [](const Child& c, std::string_view n) { return c.name < n; });
    if (it == g->children.end() || it->name != name) return std::nullopt;
    return child_ino(*it);
  }
  Leaf& leaf = leaf_of(slot);
  if (leaf.store_leaf->where.type == LeafLocation::Type::remote) {
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
    const Group* g = group_of(dir);
    if (!g) throw FsError{ENOENT};
    const int64_t first = int64_t(g->files.size());
    if (cookie < first) {
      const TreeFile& f = g->files[size_t(std::max<int64_t>(cookie, 0))];
      return DirEntry{f.name, f.ino, false, std::max<int64_t>(cookie, 0) + 1};
    }
    const int64_t i = std::max<int64_t>(cookie, first) - first;
    if (i >= int64_t(g->children.size())) return std::nullopt;
    const Child& c = g->children[size_t(i)];
    return DirEntry{c.name, child_ino(c), true, first + i + 1};
  }
  Leaf& leaf = leaf_of(slot);
  if (leaf.store_leaf->where.type == LeafLocation::Type::remote) {
    if (cookie <= 0 && local == kRootIno) return DirEntry{"frame.json", global(slot, kRemoteJsonLocal), false, 1};
    return std::nullopt;
  }
  std::optional<DirEntry> e = volume(slot)->entry(local, cookie);
  if (e) e->ino = global(slot, e->ino);
  return e;
}

struct stat StoreTree::attributes(uint64_t ino) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0) {
    if (group_of(ino)) return directory_attributes(ino);
    const TreeFile* f = file_of(ino);
    if (!f) throw FsError{ENOENT};
    struct stat st = directory_attributes(ino);
    st.st_mode = S_IFREG | node_access(NodeKind::frame_json, store_access_, writable_, leaf_options_.access).mode;
    st.st_nlink = 1;
    if (ino != kStoreJsonIno && !f->csv) st.st_size = off_t(tables_[f->table]->csv->schema_json().size());
    // table.csv: size 0, read with direct I/O until its end (it is made as it is
    // read); store.json too: it opens every leaf, which a listing must not wait for.
    st.st_blocks = (st.st_size + 511) / 512;
    return st;
  }
  Leaf& leaf = leaf_of(slot);
  if (local == kRootIno) return directory_attributes(ino);
  if (leaf.store_leaf->where.type == LeafLocation::Type::remote) {
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
    if (const Group* g = group_of(ino)) return g->path;
    if (const TreeFile* f = file_of(ino)) return f->name;
    return "inode " + std::to_string(ino);
  }
  if (slot > leaves_.size()) return "inode " + std::to_string(ino);
  const std::string& key = leaves_[slot - 1].store_leaf->key;
  if (local == kRootIno) return key;
  std::shared_ptr<Volume> v = const_cast<StoreTree*>(this)->open_volume_if_open(slot);
  return key + "/" + (v ? v->path_of(local) : "inode " + std::to_string(local));
}

// The kernel's references go to the leaf's Volume, or while it is closed to
// what it left (given to the next one). Under mutex_, without a copy of the
// Volume's pointer, so that they never keep a leaf from being closed.
void StoreTree::remember(uint64_t ino) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || slot > leaves_.size() || local == kRootIno) return;
  std::lock_guard lock(mutex_);
  Leaf& leaf = leaves_[slot - 1];
  if (leaf.volume) return leaf.volume->remember(local);
  if (!leaf.inodes) leaf.inodes = std::make_unique<InodeMemory>();
  ++leaf.inodes->lookups[local];
}

void StoreTree::forget(uint64_t ino, uint64_t count) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || slot > leaves_.size() || local == kRootIno) return;
  std::lock_guard lock(mutex_);
  Leaf& leaf = leaves_[slot - 1];
  if (leaf.volume) return leaf.volume->forget(local, count);
  if (!leaf.inodes) return;
  auto it = leaf.inodes->lookups.find(local);
  if (it == leaf.inodes->lookups.end()) return;
  if (it->second > count) it->second -= count;
  else leaf.inodes->lookups.erase(it);
}

std::unique_ptr<OpenFile> StoreTree::open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                          KernelNotes& notes) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  const bool remote_json =
      slot != 0 && local == kRemoteJsonLocal && leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote;
  if (slot == 0 || remote_json) {
    if (!node(ino)) throw FsError{ENOENT};
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) throw FsError{EROFS};
    const TreeFile* f = slot == 0 ? file_of(ino) : nullptr;
    direct_io = f && (f->csv || ino == kStoreJsonIno);
    keep_cache = !direct_io;
    auto file = std::make_unique<OpenFile>();
    file->ino = ino;
    return file;
  }
  std::shared_ptr<Volume> v = volume(slot);
  if (((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) && !v->writable()) refuse_write(slot);
  std::unique_ptr<OpenFile> file = v->open(local, flags, keep_cache, direct_io, notes);
  translate(slot, notes);
  {
    std::lock_guard lock(mutex_);
    ++leaves_[slot - 1].open_files;  // the handle belongs to this Volume: it stays open
  }
  file->ino = ino;
  return file;
}

bool StoreTree::cache_still_valid(uint64_t ino) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || local == kRootIno || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote)
    return true;  // the store's own tree does not change while mounted
  return volume(slot)->cache_still_valid(local);
}

void StoreTree::read_pieces(uint64_t ino, int64_t offset, size_t size, ReadPieces& out) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  auto copy_text = [&](const std::string& text) {
    MutableByteSpan dst = out.add_copy(size);
    out.trim_copy(copy_from(as_bytes(text), offset, dst));
  };
  if (slot == 0) {
    const TreeFile* f = file_of(ino);
    if (!f) throw FsError{group_of(ino) ? EISDIR : ENOENT};
    if (ino == kStoreJsonIno) return copy_text(store_json());
    Table& table = *tables_[f->table];
    if (!f->csv) return copy_text(table.csv->schema_json());
    return read_table_csv(table, offset, size, out);
  }
  Leaf& leaf = leaf_of(slot);
  if (leaf.store_leaf->where.type == LeafLocation::Type::remote) {
    if (local != kRemoteJsonLocal) throw FsError{local == kRootIno ? EISDIR : ENOENT};
    return copy_text(remote_json(*leaf.store_leaf));
  }
  volume(slot)->read_pieces(local, offset, size, out);
}

void StoreTree::refuse_write(uint64_t slot) const {
  if (!writable_) throw FsError{EROFS};
  const StoreLeaf& leaf = *leaves_[slot - 1].store_leaf;
  const char* what = leaf.where.type == LeafLocation::Type::embedded ? "embedded in embed.b2e"
                     : leaf.where.type == LeafLocation::Type::remote ? "a remote reference"
                                                                      : "not a frame file of its own";
  spdlog::warn("{}: key {} is {}: read-only", store_->path().string(), leaf.key, what);
  throw FsError{EROFS};
}

std::shared_ptr<Volume> StoreTree::pinned_volume(uint64_t slot) {
  std::shared_ptr<Volume> v = slot == 0 ? nullptr : open_volume_if_open(slot);
  if (!v) throw FsError{EBADF};
  return v;
}

void StoreTree::write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  const uint64_t slot = slot_of(file.ino), ino = file.ino;
  if (slot == 0) throw FsError{EROFS};
  std::shared_ptr<Volume> v = pinned_volume(slot);
  if (!v->writable()) refuse_write(slot);
  file.ino = local_of(ino);
  try {
    v->write(file, offset, data, notes);
  } catch (...) {
    file.ino = ino;
    translate(slot, notes);
    throw;
  }
  file.ino = ino;
  translate(slot, notes);
}

void StoreTree::flush(OpenFile& file, KernelNotes& notes, bool fsync) {
  const uint64_t slot = slot_of(file.ino);
  std::shared_ptr<Volume> v = slot == 0 ? nullptr : open_volume_if_open(slot);
  if (!v) return;
  const uint64_t ino = file.ino;
  file.ino = local_of(ino);
  try {
    v->flush(file, notes, fsync);
  } catch (...) {
    file.ino = ino;
    translate(slot, notes);
    throw;
  }
  file.ino = ino;
  translate(slot, notes);
}

void StoreTree::release(std::unique_ptr<OpenFile> file, KernelNotes& notes) {
  const uint64_t slot = slot_of(file->ino);
  std::shared_ptr<Volume> v = slot == 0 ? nullptr : open_volume_if_open(slot);
  if (!v) return;
  {
    std::lock_guard lock(mutex_);
    Leaf& leaf = leaves_[slot - 1];
    if (leaf.open_files) --leaf.open_files;
  }
  file->ino = local_of(file->ino);
  v->release(std::move(file), notes);
  translate(slot, notes);
}

struct stat StoreTree::setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || local == kRootIno || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote) {
    if (size) throw FsError{EROFS};
    return attributes(ino);  // chmod, chown, utimens: accepted and ignored, as on a frame's mount
  }
  std::shared_ptr<Volume> v = volume(slot);
  if (size && !v->writable()) refuse_write(slot);
  if (file) file->ino = local;
  struct stat st;
  try {
    st = v->setattr(local, file, size, notes);
  } catch (...) {
    if (file) file->ino = ino;
    translate(slot, notes);
    throw;
  }
  if (file) file->ino = ino;
  translate(slot, notes);
  st.st_ino = ino;
  return st;
}

std::pair<uint64_t, std::unique_ptr<OpenFile>> StoreTree::create(uint64_t parent, std::string_view name, int flags,
                                                                 KernelNotes& notes) {
  const uint64_t slot = slot_of(parent), local = local_of(parent);
  if (slot == 0 || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote)
    throw FsError{writable_ ? EPERM : EROFS};  // keys are not made through the mount
  std::shared_ptr<Volume> v = volume(slot);
  if (!v->writable()) refuse_write(slot);
  auto [child, file] = v->create(local, name, flags, notes);
  translate(slot, notes);
  {
    std::lock_guard lock(mutex_);
    ++leaves_[slot - 1].open_files;
  }
  file->ino = global(slot, child);
  return {global(slot, child), std::move(file)};
}

void StoreTree::unlink(uint64_t parent, std::string_view name, KernelNotes& notes) {
  const uint64_t slot = slot_of(parent), local = local_of(parent);
  if (slot == 0 || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote)
    throw FsError{writable_ ? EPERM : EROFS};
  std::shared_ptr<Volume> v = volume(slot);
  if (!v->writable()) refuse_write(slot);
  v->unlink(local, name, notes);
  translate(slot, notes);
}

void StoreTree::rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
                       unsigned flags, KernelNotes& notes) {
  const uint64_t slot = slot_of(parent);
  if (slot == 0 || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote)
    throw FsError{writable_ ? EPERM : EROFS};
  if (slot_of(new_parent) != slot) throw FsError{EXDEV};
  std::shared_ptr<Volume> v = volume(slot);
  if (!v->writable()) refuse_write(slot);
  v->rename(local_of(parent), name, local_of(new_parent), new_name, flags, notes);
  translate(slot, notes);
}

void StoreTree::maybe_refresh(KernelNotes& notes) {
  if (!writable_) return;  // read-only leaves of a read-only mount are read when opened
  std::vector<std::pair<uint64_t, std::shared_ptr<Volume>>> open;
  {
    std::lock_guard lock(mutex_);
    // Every request asks: the open leaves are looked at once per refresh
    // interval, not each of them at every request (a listing's thousands).
    const auto now = std::chrono::steady_clock::now();
    if (now - last_refresh_ < leaf_options_.refresh_interval) return;
    last_refresh_ = now;
    for (size_t i : lru_) open.emplace_back(i + 1, leaves_[i].volume);
  }
  for (auto& [slot, v] : open) {
    KernelNotes mine;
    v->maybe_refresh(mine);
    translate(slot, mine);
    notes.inodes.insert(notes.inodes.end(), mine.inodes.begin(), mine.inodes.end());
    notes.attributes.insert(notes.attributes.end(), mine.attributes.begin(), mine.attributes.end());
    notes.entries.insert(notes.entries.end(), mine.entries.begin(), mine.entries.end());
  }
}

void StoreTree::shutdown() {
  std::vector<std::shared_ptr<Volume>> open;
  {
    std::lock_guard lock(mutex_);
    for (size_t i : lru_) open.push_back(leaves_[i].volume);
  }
  for (auto& v : open)
    if (v->writable()) v->shutdown();
}

}  // namespace blosc2fs
