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

// A remote C2Array reference has no frame: its directory holds frame.json only.
constexpr uint64_t kRemoteJsonLocal = 2;

// Listing cookies of a leaf directory's keys, after its Volume's own entries.
constexpr int64_t kLeafChildCookie = int64_t(1) << 56;
// What a key component shows as when a name of the mount's own or another key's takes it.
constexpr const char* kTakenNameSuffix = ".key";

// Names the mount shows in a leaf's directory: its single-frame tree.
bool name_of_leaf_tree(std::string_view name) {
  for (const FixedFile& f : kRootChildren)
    if (name == f.name) return true;
  return false;
}

// Names the mount shows in a group's directory: store.json (the root), a table's
// files, a TreeStore group's attrs/.
bool name_of_group_tree(std::string_view name, bool root, bool tree) {
  return (root && name == "store.json") || name == "zarr.json" || name == "table.csv" || name == "schema.json" || (tree && name == "attrs");
}

const StoreTree::Child* find_child(const std::vector<StoreTree::Child>& children, std::string_view name) {
  auto it = std::lower_bound(children.begin(), children.end(), name,
                             [](const StoreTree::Child& c, std::string_view n) { return c.name < n; });
  return it != children.end() && it->name == name ? &*it : nullptr;
}

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
  // One pool for every leaf: a leaf's share of the budget keeps no chunk's
  // buffer. A quarter of what one Volume keeps: 16 readers of 16 leaves
  // (bench/remote.py, 8 MiB chunks, cache_size 256M) peaked at 224-236 MB RSS
  // and 1.02-1.09 CPU-s with 16 MiB kept, 268-290 MB and 0.95-1.0 CPU-s with
  // 64 MiB, 169-195 MB and 1.19-1.25 CPU-s with none reused.
  if (!leaf_options_.buffer_pool)
    leaf_options_.buffer_pool =
        BufferPool::create(size_t(std::min(leaf_options_.cache_budget * max_open_, ChunkCache::kPoolBytes) / 4));
  struct stat st {};
  if (leaf_options_.fixed_access) {
    store_access_ = *leaf_options_.fixed_access;
    ::clock_gettime(CLOCK_REALTIME, &store_time_);
  } else if (::stat(store_->path().c_str(), &st) == 0) {
    store_time_ = st.st_mtim;
    store_access_ = frame_access_of_file(st);
  }
  if (store_->leaves().size() > kMaxLeaves)
    throw FormatError(store_->path().string() + ": " + std::to_string(store_->leaves().size()) +
                      " keys, more than the " + std::to_string(kMaxLeaves) + " a mount can number");
  // The groups, from the keys' components (keys are sorted, so "/a" comes before "/a/b").
  // A container is a directory keys are shown in: a group's, or a leaf's when keys lie under it.
  const bool tree = store_->tree();
  struct Container {
    std::map<std::string, Child> by_key;  // key component -> the child (Child::name: the name shown)
    std::set<std::string> shown;
    bool leaf = false, root = false;
  };
  std::vector<Container> containers(1);
  containers[0].root = true;
  std::vector<size_t> group_container{0};  // group -> container
  std::map<size_t, size_t> leaf_container;  // leaf -> container, made when a key lies under it
  groups_.push_back(Group{"/", {}, {}, std::nullopt});
  // The name a key component shows as in container c: itself, or with ".key" appended
  // while a name of the mount's own or an earlier key's takes it.
  auto free_name = [&](size_t c, const std::string& name) -> std::optional<std::string> {
    std::string shown = name;
    for (int i = 0; i < 4; ++i, shown += kTakenNameSuffix) {
      const bool reserved = containers[c].leaf ? name_of_leaf_tree(shown)
                                               : name_of_group_tree(shown, containers[c].root, tree);
      if (!reserved && !containers[c].shown.count(shown) && shown.size() <= kMaxKeyComponent) return shown;
    }
    return std::nullopt;
  };
  auto container_of = [&](const Child& child) -> size_t {
    if (!child.leaf) return group_container[child.index];
    auto [it, made] = leaf_container.try_emplace(child.index, containers.size());
    if (made) {
      containers.emplace_back();
      containers.back().leaf = true;
    }
    return it->second;
  };
  for (const StoreLeaf& leaf : store_->leaves()) {
    std::vector<std::string> parts = key_components(leaf.key);
    size_t c = 0, group = 0;
    bool in_group = true, usable = true;
    std::string prefix;
    for (size_t i = 0; i + 1 < parts.size() && usable; ++i) {
      prefix += "/" + parts[i];
      auto it = containers[c].by_key.find(parts[i]);
      if (it == containers[c].by_key.end()) {
        std::optional<std::string> shown = free_name(c, parts[i]);
        if (!shown) {
          usable = false;
          break;
        }
        groups_.push_back(Group{prefix, {}, {}, std::nullopt});
        group_container.push_back(containers.size());
        containers.emplace_back();
        containers[c].shown.insert(*shown);
        it = containers[c].by_key.emplace(parts[i], Child{*shown, false, groups_.size() - 1}).first;
      }
      const Child child = it->second;
      c = container_of(child);
      in_group = !child.leaf;
      group = child.index;
    }
    // A TreeStore group's attribute carrier: the group's attrs/, not a directory of its own.
    if (usable && tree && in_group && parts.back() == kAttrsCarrierName && !groups_[group].attrs_leaf) {
      groups_[group].attrs_leaf = leaves_.size();
      Leaf l;
      l.store_leaf = &leaf;
      leaves_.push_back(std::move(l));
      continue;
    }
    std::optional<std::string> shown;
    if (usable && !containers[c].by_key.count(parts.back())) shown = free_name(c, parts.back());
    if (!shown) {
      spdlog::warn("{}: key {} is not shown: its name is taken by other keys or the mount's own files",
                   store_->path().string(), leaf.key);
      continue;
    }
    if (*shown != parts.back())
      spdlog::info("{}: key {} is shown as '{}': '{}' is taken there", store_->path().string(), leaf.key, *shown,
                   parts.back());
    containers[c].shown.insert(*shown);
    containers[c].by_key.emplace(parts.back(), Child{*shown, true, leaves_.size()});
    Leaf l;
    l.store_leaf = &leaf;
    leaves_.push_back(std::move(l));
  }
  auto sorted_children = [&](size_t c) {
    std::vector<Child> out;
    for (auto& [key, child] : containers[c].by_key) out.push_back(child);
    std::sort(out.begin(), out.end(), [](const Child& x, const Child& y) { return x.name < y.name; });
    return out;
  };
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].children = sorted_children(group_container[g]);
  for (auto& [l, c] : leaf_container) leaves_[l].children = sorted_children(c);
  groups_[0].files.push_back(TreeFile{"store.json", kStoreJsonIno, 0, false});
  add_tables();
  for (size_t g = 0; g < groups_.size(); ++g) {
    TreeFile f{"zarr.json", kFileBase + files_.size(), 0, false, g};
    files_.push_back(f);
    groups_[g].files.push_back(f);
  }
  for (const std::string& line : store_->skipped()) spdlog::warn("{}: skipped {}", store_->path().string(), line);
}

StoreTree::~StoreTree() = default;

void StoreTree::add_tables() {
  for (const Leaf& leaf : leaves_) {  // (marks the parts of each table it finds: no reallocation)
    const std::string& key = leaf.store_leaf->key;
    if (!key.ends_with("/_meta")) continue;
    const std::string prefix = key.substr(0, key.size() - 6);
    // The group directory of the table: the root, or the group at `prefix`.
    const std::string path = prefix.empty() ? "/" : prefix;
    auto group = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.path == path; });
    if (group == groups_.end()) continue;
    const size_t g = size_t(group - groups_.begin());
    try {
      std::shared_ptr<const Frame> meta = store_->open_leaf(*leaf.store_leaf);
      const Vlmetalayer* kind = meta->find_vlmetalayer("kind");
      std::optional<Json> value = kind ? msgpack_to_json(meta->vlmetalayer_content(*kind)) : std::nullopt;
      if (!value || *value != "ctable") continue;
    } catch (const std::exception& e) {
      spdlog::warn("{}: {}: {}", store_->path().string(), key, e.what());
      continue;
    }
    for (Leaf& part : leaves_)
      if (part.store_leaf->key.starts_with(prefix + "/")) part.table_part = true;
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

std::string StoreTree::group_zarr_json(size_t g) const {
  Json attrs = Json::object();
  if (const std::optional<size_t> carrier = groups_[g].attrs_leaf) {
    try {
      attrs = frame_attributes(*store_->open_leaf(*leaves_[*carrier].store_leaf));
    } catch (const std::exception& e) {
      spdlog::warn("{}: group {}: its attributes are left out of zarr.json: {}", store_->path().string(),
                   groups_[g].path, e.what());
    }
  }
  return zarr_group_json(attrs);
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

bool StoreTree::underlying_statfs(struct statvfs& out) const {
  return !store_->remote() && ::statvfs(store_->path().c_str(), &out) == 0;
}

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

void StoreTree::translate(uint64_t slot, KernelNotes& notes) {
  for (uint64_t& ino : notes.inodes) ino = global(slot, ino);
  for (uint64_t& ino : notes.attributes) ino = global(slot, ino);
  for (auto& [parent, name] : notes.entries) parent = global(slot, parent);
}

std::shared_ptr<const std::string> StoreTree::store_json(bool renew) {
  std::lock_guard lock(store_json_mutex_);  // not mutex_: making it opens every leaf, for a while
  if (!store_json_) store_json_base_ = store_->to_json();
  if (!store_json_ || (renew && leaf_options_.live_json_fields)) {
    Json j = store_json_base_;
    if (leaf_options_.live_json_fields) {
      const Json live = leaf_options_.live_json_fields();
      for (auto it = live.begin(); it != live.end(); ++it) j[it.key()] = *it;
    }
    store_json_ = std::make_shared<const std::string>(j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
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
  st.st_blksize = 4096;  // a small getdents buffer, as for a leaf's own directories (Volume::attributes)
  st.st_atim = st.st_mtim = st.st_ctim = store_time_;
  return st;
}

std::optional<Node> StoreTree::node(uint64_t ino) const {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0) {
    if (group_of(ino)) return Node{NodeKind::store_group};
    if (const TreeFile* f = file_of(ino)) {
      if (ino == kStoreJsonIno) return Node{NodeKind::store_json};
      if (f->zarr_group) return Node{NodeKind::group_zarr_json};
      return Node{f->csv ? NodeKind::table_csv : NodeKind::table_schema};
    }
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
    if (g->attrs_leaf && name == "attrs") return global(*g->attrs_leaf + 1, directory_inode(NodeKind::attrs_dir));
    const Child* c = find_child(g->children, name);
    if (!c) return std::nullopt;
    return child_ino(*c);
  }
  Leaf& leaf = leaf_of(slot);
  if (local == kRootIno)
    if (const Child* c = find_child(leaf.children, name)) return child_ino(*c);
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
    const int64_t files = int64_t(g->files.size());
    if (cookie < files) {
      const TreeFile& f = g->files[size_t(std::max<int64_t>(cookie, 0))];
      return DirEntry{f.name, f.ino, false, std::max<int64_t>(cookie, 0) + 1};
    }
    const int64_t first = files + (g->attrs_leaf ? 1 : 0);
    if (cookie < first)
      return DirEntry{"attrs", global(*g->attrs_leaf + 1, directory_inode(NodeKind::attrs_dir)), true, first};
    const int64_t i = std::max<int64_t>(cookie, first) - first;
    if (i >= int64_t(g->children.size())) return std::nullopt;
    const Child& c = g->children[size_t(i)];
    return DirEntry{c.name, child_ino(c), true, first + i + 1};
  }
  Leaf& leaf = leaf_of(slot);
  // A leaf's directory: its own tree, then the keys under it.
  auto key_child = [&](int64_t i) -> std::optional<DirEntry> {
    if (local != kRootIno || i >= int64_t(leaf.children.size())) return std::nullopt;
    const Child& c = leaf.children[size_t(i)];
    return DirEntry{c.name, child_ino(c), true, kLeafChildCookie + i + 1};
  };
  if (cookie >= kLeafChildCookie) return key_child(cookie - kLeafChildCookie);
  std::optional<DirEntry> e;
  if (leaf.store_leaf->where.type == LeafLocation::Type::remote) {
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
    if (group_of(ino)) return directory_attributes(ino);
    const TreeFile* f = file_of(ino);
    if (!f) throw FsError{ENOENT};
    struct stat st = directory_attributes(ino);
    st.st_mode = S_IFREG | node_access(NodeKind::frame_json, store_access_, writable_, leaf_options_.access).mode;
    st.st_nlink = 1;
    if (f->zarr_group) st.st_size = off_t(group_zarr_json(*f->zarr_group).size());
    else if (ino != kStoreJsonIno && !f->csv) st.st_size = off_t(tables_[f->table]->csv->schema_json().size());
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
    // The store's own files are made from it: never written (EACCES, as a read-only attribute of sysfs).
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) throw FsError{writable_ ? EACCES : EROFS};
    const TreeFile* f = slot == 0 ? file_of(ino) : nullptr;
    direct_io = f && (f->csv || ino == kStoreJsonIno);
    keep_cache = !direct_io;
    if (ino == kStoreJsonIno) store_json(true);  // a remote store's counters as they are now
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

void StoreTree::read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  auto copy_text = [&](const std::string& text) {
    MutableByteSpan dst = out.add_copy(size);
    out.trim_copy(copy_from(as_bytes(text), offset, dst));
  };
  if (slot == 0) {
    const TreeFile* f = file_of(ino);
    if (!f) throw FsError{group_of(ino) ? EISDIR : ENOENT};
    if (ino == kStoreJsonIno) return copy_text(*store_json());
    if (f->zarr_group) return copy_text(group_zarr_json(*f->zarr_group));
    Table& table = *tables_[f->table];
    if (!f->csv) return copy_text(table.csv->schema_json());
    return read_table_csv(table, offset, size, out);
  }
  Leaf& leaf = leaf_of(slot);
  if (leaf.store_leaf->where.type == LeafLocation::Type::remote) {
    if (local != kRemoteJsonLocal) throw FsError{local == kRootIno ? EISDIR : ENOENT};
    return copy_text(remote_json(*leaf.store_leaf));
  }
  volume(slot)->read_pieces(local, file, offset, size, out);
}

bool StoreTree::key_child_named(uint64_t slot, uint64_t local, std::string_view name) const {
  return slot != 0 && local == kRootIno && slot <= leaves_.size() && find_child(leaves_[slot - 1].children, name);
}

void StoreTree::refuse_write(uint64_t slot) const {
  if (!writable_) throw FsError{EROFS};
  const StoreLeaf& leaf = *leaves_[slot - 1].store_leaf;
  const char* what = leaves_[slot - 1].table_part                  ? "a part of a CTable, changed as a whole by python-blosc2"
                     : leaf.where.type == LeafLocation::Type::embedded ? "embedded in embed.b2e"
                     : leaf.where.type == LeafLocation::Type::remote   ? "a remote reference"
                                                                        : "not a frame file of its own";
  spdlog::warn("{}: key {} is {}: read-only", store_->path().string(), leaf.key, what);
  throw FsError{EROFS};
}

std::shared_ptr<Volume> StoreTree::pinned_volume(uint64_t slot) {
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
  {
    std::lock_guard lock(mutex_);
    Leaf& leaf = leaves_[slot - 1];
    if (leaf.open_files) --leaf.open_files;
  }
  file->ino = local_of(file->ino);
  LeafCall call(slot, nullptr, notes);  // the file goes to the Volume: only the notes come back
  v->release(std::move(file), notes);
}

struct stat StoreTree::setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) {
  const uint64_t slot = slot_of(ino), local = local_of(ino);
  if (slot == 0 || local == kRootIno || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote) {
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
  if (slot == 0 || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote)
    throw FsError{writable_ ? EPERM : EROFS};  // keys are not made through the mount
  if (key_child_named(slot, local, name)) throw FsError{EEXIST};  // a key's directory
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
  if (key_child_named(slot, local, name)) throw FsError{writable_ ? EPERM : EROFS};  // keys are not removed
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
  if (key_child_named(slot, local_of(parent), name) || key_child_named(slot, local_of(new_parent), new_name))
    throw FsError{writable_ ? EPERM : EROFS};  // keys are not renamed, nor replaced
  std::shared_ptr<Volume> v = volume(slot);
  if (!v->writable()) refuse_write(slot);
  v->rename(local_of(parent), name, local_of(new_parent), new_name, flags, notes);
  translate(slot, notes);
}

bool StoreTree::read_only_at(uint64_t ino) {
  const uint64_t slot = slot_of(ino);
  if (!writable_ || slot == 0) return !writable_;
  if (slot > leaves_.size() || leaf_of(slot).store_leaf->where.type == LeafLocation::Type::remote) return true;
  return !volume(slot)->writable();
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
