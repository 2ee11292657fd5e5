// CollectionTree: names, attributes and reads of the place's directories,
// datasets and files; the datasets' trees opened on demand. The listing of the
// source is in collection_listing.cc, the writes passed to datasets in
// collection_writes.cc.
#include "collection_tree.h"
#include "collection_tree_internal.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <set>

#include <spdlog/spdlog.h>

#include "fs_error.h"
#include "read_pieces.h"
#include "store_tree.h"
#include "tree_access.h"
#include "zarr_meta.h"

namespace blosc2fs {

using collection_tree_detail::join;
using collection_tree_detail::kZarrGroupName;

namespace {

// A folder has no attributes of its own to give its group.
const std::string& group_json() {
  static const std::string text = zarr_group_json(Json::object());
  return text;
}

const char* type_name(CollectionEntry::Type type) {
  switch (type) {
    case CollectionEntry::Type::directory: return "directory";
    case CollectionEntry::Type::dataset: return "dataset";
    case CollectionEntry::Type::file: return "file";
    case CollectionEntry::Type::symlink: return "symlink";
  }
  return "file";
}

}  // namespace

CollectionTree::~CollectionTree() = default;

std::optional<size_t> CollectionTree::dir_index(uint64_t ino) const {
  if (ino == kRootIno) return 0;
  if (ino > kDirBase && ino < kGroupJsonBase && ino - kDirBase < dirs_.size()) {
    const size_t d = size_t(ino - kDirBase);
    if (dirs_[d].present) return d;
  }
  return std::nullopt;
}

const CollectionTree::Dir* CollectionTree::dir_of(uint64_t ino) const {
  std::optional<size_t> d = dir_index(ino);
  return d ? &dirs_[*d] : nullptr;
}

std::optional<size_t> CollectionTree::present_group_json(uint64_t ino) const {
  const std::optional<size_t> d = group_json_of(ino);
  if (!d) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (*d >= dirs_.size() || !dirs_[*d].present) throw FsError{ENOENT};
  return d;
}

std::optional<size_t> CollectionTree::item_of(uint64_t ino) const {
  if (ino < kItemBase || ino >= kMappedBase) return std::nullopt;
  std::lock_guard lock(mutex_);
  const size_t slot = size_t(ino - kItemBase);
  if (slot >= items_.size()) throw FsError{ENOENT};
  return slot;
}

std::optional<CollectionTree::Mapped> CollectionTree::mapped(uint64_t ino) const {
  if (ino >= kMappedBase) {
    std::lock_guard lock(mutex_);
    auto it = mapped_.find(ino);
    if (it == mapped_.end()) throw FsError{ENOENT};
    return it->second;
  }
  return std::nullopt;
}

std::optional<CollectionTree::Mapped> CollectionTree::mapped_below_dataset(uint64_t ino) const {
  try {
    return mapped(ino);
  } catch (const FsError&) {
  }
  return std::nullopt;
}

uint64_t CollectionTree::to_mount(size_t slot, uint64_t local) {
  if (local == kRootIno) return item_ino(slot);
  std::lock_guard lock(mutex_);
  auto [it, made] = mount_numbers_.try_emplace({slot, local}, next_mapped_);
  if (made) mapped_[next_mapped_++] = Mapped{slot, local};
  return it->second;
}

void CollectionTree::translate(size_t slot, KernelNotes& notes) {
  for (uint64_t& ino : notes.inodes) ino = to_mount(slot, ino);
  for (uint64_t& ino : notes.attributes) ino = to_mount(slot, ino);
  for (auto& [parent, name] : notes.entries) parent = to_mount(slot, parent);
}

CollectionTree::Item& CollectionTree::item(size_t slot) const {
  std::lock_guard lock(mutex_);
  if (slot >= items_.size()) throw FsError{ENOENT};
  return *items_[slot];
}

std::shared_ptr<MountTree> CollectionTree::child_if_open(size_t slot) const {
  std::lock_guard lock(mutex_);
  return slot < items_.size() ? items_[slot]->tree : nullptr;
}

std::shared_ptr<MountTree> CollectionTree::child(size_t slot) {
  Item& d = item(slot);
  if (!d.is_dataset()) throw FsError{ENOTDIR};
  std::lock_guard opening(d.opening);
  {
    std::lock_guard lock(mutex_);
    if (d.tree) {
      if (d.volume) lru_.splice(lru_.begin(), lru_, d.lru);
      return d.tree;
    }
  }
  VolumeOptions vo = settings_.leaf_options;  // a store's leaves share it (dataset_opener.h)
  {
    std::lock_guard lock(mutex_);
    if (d.inodes) vo.inodes = std::move(*d.inodes);
    d.inodes.reset();
  }
  OpenedDataset opened;
  try {
    opened = source_->open_dataset(d.path, d.entry.kind, vo, settings_.max_open, settings_.writable);
  } catch (const std::exception& e) {
    const IoError* io = dynamic_cast<const IoError*>(&e);
    const int error = io && io->error_number() == ENOENT ? ENOENT : EIO;
    std::lock_guard lock(mutex_);
    if (d.failure != e.what()) spdlog::error("{}/{}: cannot be read: {}", source_->name(), d.path, e.what());
    d.failure = e.what();
    if (vo.inodes) d.inodes = std::make_unique<InodeMemory>(std::move(*vo.inodes));
    throw FsError{error};
  }
  std::lock_guard lock(mutex_);
  d.failure.clear();
  d.tree = opened.tree;
  d.writable = opened.writable;
  d.volume = dynamic_cast<Volume*>(opened.tree.get());
  if (!d.volume) {  // a store's tree stays open: its own leaves come and go
    open_stores_.push_back(slot);
    return opened.tree;
  }
  lru_.push_front(slot);
  d.lru = lru_.begin();
  // Close the least recently used Volumes beyond the bound, skipping those in use.
  for (auto it = lru_.end(); lru_.size() > settings_.max_open && it != lru_.begin();) {
    --it;
    Item& old = *items_[*it];
    if (old.open_files > 0 || *it == slot || old.tree.use_count() > 1 || !old.volume->closable()) continue;
    InodeMemory memory = old.volume->inode_memory();
    if (!memory.lookups.empty() || !memory.layers.empty()) old.inodes = std::make_unique<InodeMemory>(std::move(memory));
    old.tree.reset();
    old.volume = nullptr;
    it = lru_.erase(it);
  }
  return opened.tree;
}

std::shared_ptr<const ByteSource> CollectionTree::file_bytes(size_t slot) {
  Item& f = item(slot);
  {
    std::lock_guard lock(mutex_);
    if (f.bytes) return f.bytes;
  }
  std::shared_ptr<const ByteSource> bytes = source_->open_file(f.path);
  std::lock_guard lock(mutex_);
  if (!f.bytes) f.bytes = bytes;
  return f.bytes;
}

int64_t CollectionTree::nchunks() const {
  std::lock_guard lock(mutex_);
  return int64_t(items_.size());
}

bool CollectionTree::underlying_statfs(struct statvfs& out) const {
  if (source_->remote() || !source_->local_stat("")) return false;
  return ::statvfs(source_->name().c_str(), &out) == 0;
}

struct stat CollectionTree::own_attributes(uint64_t ino, const std::string& path, bool directory) const {
  struct stat st {};
  const FrameAccess fixed = settings_.leaf_options.fixed_access.value_or(FrameAccess{::getuid(), ::getgid(), 0444, 0});
  std::optional<struct stat> local = source_->local_stat(path);
  if (local && ((directory && S_ISDIR(local->st_mode)) || (!directory && !S_ISDIR(local->st_mode)))) {
    st = *local;
    // The folder's own owner and modes; write bits only where writes go (inside datasets).
    FrameAccess access = frame_access_of_file(*local);
    if (!directory) access.write = 0;
    const NodeAccess a = node_access(directory ? NodeKind::root : NodeKind::frame_json, access,
                                     directory && settings_.writable, settings_.leaf_options.access);
    st.st_uid = a.uid;
    st.st_gid = a.gid;
    st.st_mode = (local->st_mode & S_IFMT) | a.mode;
  } else {
    const NodeAccess a = node_access(directory ? NodeKind::root : NodeKind::frame_json, fixed, false,
                                     settings_.leaf_options.access);
    st.st_uid = a.uid;
    st.st_gid = a.gid;
    st.st_mode = (directory ? S_IFDIR : S_IFREG) | a.mode;
    st.st_atim = st.st_mtim = st.st_ctim = mount_time_;
  }
  st.st_ino = ino;
  st.st_nlink = directory ? 2 : 1;
  st.st_blksize = 4096;
  st.st_dev = 0;
  st.st_rdev = 0;
  return st;
}

std::optional<Node> CollectionTree::node(uint64_t ino) const {
  try {
    if (std::optional<Mapped> m = mapped(ino))
      return const_cast<CollectionTree*>(this)->child(m->slot)->node(m->local);
    if (std::optional<size_t> slot = item_of(ino)) {
      std::lock_guard lock(mutex_);
      switch (items_[*slot]->entry.type) {
        case CollectionEntry::Type::dataset: return Node{items_[*slot]->is_store() ? NodeKind::store_group : NodeKind::root};
        case CollectionEntry::Type::symlink: return Node{NodeKind::symlink};
        default: return Node{NodeKind::plain_file};
      }
    }
  } catch (const FsError&) {
    return std::nullopt;
  }
  if (ino == kDescriptionIno) return Node{NodeKind::collection_json};
  if (std::optional<size_t> g = group_json_of(ino)) {
    std::lock_guard lock(mutex_);
    return *g < dirs_.size() && dirs_[*g].present ? std::optional<Node>(Node{NodeKind::group_zarr_json})
                                                  : std::nullopt;
  }
  std::lock_guard lock(mutex_);
  return dir_of(ino) ? std::optional<Node>(Node{NodeKind::collection_dir}) : std::nullopt;
}

std::optional<uint64_t> CollectionTree::lookup(uint64_t parent, std::string_view name) {
  if (std::optional<Mapped> m = mapped(parent)) {
    std::optional<uint64_t> found = child(m->slot)->lookup(m->local, name);
    if (!found) return std::nullopt;
    return to_mount(m->slot, *found);
  }
  if (std::optional<size_t> slot = item_of(parent)) {
    std::optional<uint64_t> found = child(*slot)->lookup(kRootIno, name);
    if (!found) return std::nullopt;
    return to_mount(*slot, *found);
  }
  std::optional<size_t> d;
  {
    std::lock_guard lock(mutex_);
    d = dir_index(parent);
  }
  if (!d) throw FsError{ENOENT};
  if (parent == kRootIno && name == source_->description_name()) return kDescriptionIno;
  if (name == kZarrGroupName) return kGroupJsonBase + *d;
  ensure_listed(*d);
  std::lock_guard lock(mutex_);
  const Dir& dir = dirs_[*d];
  auto it = std::lower_bound(dir.children.begin(), dir.children.end(), name,
                             [](const Child& c, std::string_view n) { return c.name < n; });
  if (it == dir.children.end() || it->name != name) return std::nullopt;
  return it->directory ? dir_ino(it->index) : item_ino(it->index);
}

std::optional<DirEntry> CollectionTree::entry(uint64_t dir, int64_t cookie) {
  if (std::optional<Mapped> m = mapped(dir)) {
    std::optional<DirEntry> e = child(m->slot)->entry(m->local, cookie);
    if (e) e->ino = to_mount(m->slot, e->ino);
    return e;
  }
  if (std::optional<size_t> slot = item_of(dir)) {
    std::optional<DirEntry> e = child(*slot)->entry(kRootIno, cookie);
    if (e) e->ino = to_mount(*slot, e->ino);
    return e;
  }
  std::optional<size_t> d;
  {
    std::lock_guard lock(mutex_);
    d = dir_index(dir);
  }
  if (!d) throw FsError{ENOENT};
  ensure_listed(*d);
  std::lock_guard lock(mutex_);
  const Dir& listed = dirs_[*d];
  // The description (the top only), then zarr.json, then the listing.
  const int64_t files = dir == kRootIno ? 2 : 1;
  if (cookie < files - 1) return DirEntry{source_->description_name(), kDescriptionIno, false, 1};
  if (cookie < files) return DirEntry{kZarrGroupName, kGroupJsonBase + *d, false, files};
  const int64_t i = std::max<int64_t>(cookie, files) - files;
  if (i >= int64_t(listed.children.size())) return std::nullopt;
  const Child& c = listed.children[size_t(i)];
  DirEntry e{c.name, c.directory ? dir_ino(c.index) : item_ino(c.index), c.directory, files + i + 1};
  if (!c.directory) {
    const CollectionEntry& what = items_[c.index]->entry;
    e.directory = what.type == CollectionEntry::Type::dataset;
    e.symlink = what.type == CollectionEntry::Type::symlink;
  }
  return e;
}

struct stat CollectionTree::attributes(uint64_t ino) {
  if (std::optional<Mapped> m = mapped(ino)) {
    struct stat st = child(m->slot)->attributes(m->local);
    st.st_ino = ino;
    return st;
  }
  if (std::optional<size_t> slot = item_of(ino)) {
    std::string path;
    CollectionEntry entry;
    {
      std::lock_guard lock(mutex_);
      path = items_[*slot]->path;
      entry = items_[*slot]->entry;
    }
    switch (entry.type) {
      case CollectionEntry::Type::dataset: {
        // Shown without opening it: a listing of thousands opens none. Its
        // modes are its file's (a sparse frame's or .b2d's: its directory's).
        struct stat st = own_attributes(ino, path, false);
        std::optional<struct stat> local = source_->local_stat(path);
        FrameAccess access = settings_.leaf_options.fixed_access.value_or(FrameAccess{::getuid(), ::getgid(), 0444, 0});
        if (local) {
          access = frame_access_of_file(*local);
          st.st_atim = local->st_atim;
          st.st_mtim = local->st_mtim;
          st.st_ctim = local->st_ctim;
        }
        const NodeAccess a = node_access(NodeKind::root, access, settings_.writable, settings_.leaf_options.access);
        st.st_mode = S_IFDIR | a.mode;
        st.st_uid = a.uid;
        st.st_gid = a.gid;
        st.st_nlink = 2;
        st.st_size = 0;
        st.st_blocks = 0;
        return st;
      }
      case CollectionEntry::Type::symlink: {
        struct stat st = own_attributes(ino, path, false);
        st.st_mode = S_IFLNK | 0777;
        st.st_size = off_t(entry.link_target.size());
        st.st_blocks = 0;
        return st;
      }
      default: break;
    }
    struct stat st = own_attributes(ino, path, false);
    if (!source_->local_stat(path)) {
      // A web index gives no reliable size: the object's own, asked when it is looked up.
      st.st_size = entry.size >= 0 ? entry.size : file_bytes(*slot)->size();
      st.st_blocks = (st.st_size + 511) / 512;
    }
    return st;
  }
  if (present_group_json(ino)) {
    struct stat st = own_attributes(ino, "", true);
    st.st_mode = S_IFREG | (st.st_mode & 0444);
    st.st_nlink = 1;
    st.st_size = off_t(group_json().size());
    st.st_blocks = (st.st_size + 511) / 512;
    return st;
  }
  if (ino == kDescriptionIno) {
    struct stat st = own_attributes(ino, "", true);
    st.st_mode = S_IFREG | (st.st_mode & 0444);
    st.st_nlink = 1;
    st.st_size = 0;  // read with direct I/O: it is made at each open
    st.st_blocks = 0;
    return st;
  }
  std::string path;
  {
    std::lock_guard lock(mutex_);
    const Dir* d = dir_of(ino);
    if (!d) throw FsError{ENOENT};
    path = d->path;
  }
  return own_attributes(ino, path, true);
}

std::string CollectionTree::path_of(uint64_t ino) const {
  std::optional<Mapped> m;
  std::optional<size_t> slot;
  try {
    m = mapped(ino);
    if (!m) slot = item_of(ino);
  } catch (const FsError&) {
    return "inode " + std::to_string(ino);
  }
  std::lock_guard lock(mutex_);
  if (m) {
    const Item& d = *items_[m->slot];
    return d.tree ? d.path + "/" + d.tree->path_of(m->local) : d.path;
  }
  if (slot) return items_[*slot]->path;
  if (ino == kDescriptionIno) return source_->description_name();
  if (std::optional<size_t> g = group_json_of(ino))
    return *g < dirs_.size() ? "/" + join(dirs_[*g].path, kZarrGroupName) : "inode " + std::to_string(ino);
  const Dir* d = dir_of(ino);
  return d ? "/" + d->path : "inode " + std::to_string(ino);
}

std::string CollectionTree::readlink(uint64_t ino) {
  if (std::optional<Mapped> m = mapped(ino)) return child(m->slot)->readlink(m->local);
  if (std::optional<size_t> slot = item_of(ino)) {
    std::lock_guard lock(mutex_);
    const Item& it = *items_[*slot];
    if (it.entry.type == CollectionEntry::Type::symlink) return it.entry.link_target;
    throw FsError{EINVAL};
  }
  if (!node(ino)) throw FsError{ENOENT};
  throw FsError{EINVAL};
}

void CollectionTree::remember(uint64_t ino) {
  std::optional<Mapped> m = mapped_below_dataset(ino);
  if (!m) return;
  std::lock_guard lock(mutex_);
  Item& d = *items_[m->slot];
  if (d.tree) return d.tree->remember(m->local);
  if (!d.inodes) d.inodes = std::make_unique<InodeMemory>();
  ++d.inodes->lookups[m->local];
}

void CollectionTree::forget(uint64_t ino, uint64_t count) {
  std::optional<Mapped> m = mapped_below_dataset(ino);
  if (!m) return;
  std::lock_guard lock(mutex_);
  Item& d = *items_[m->slot];
  if (d.tree) return d.tree->forget(m->local, count);
  if (!d.inodes) return;
  auto it = d.inodes->lookups.find(m->local);
  if (it == d.inodes->lookups.end()) return;
  if (it->second > count) it->second -= count;
  else d.inodes->lookups.erase(it);
}

std::unique_ptr<OpenFile> CollectionTree::open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                               KernelNotes& notes) {
  if (std::optional<Mapped> m = mapped(ino)) {
    std::shared_ptr<MountTree> tree = child(m->slot);
    std::unique_ptr<OpenFile> file = tree->open(m->local, flags, keep_cache, direct_io, notes);
    translate(m->slot, notes);
    {
      std::lock_guard lock(mutex_);
      ++items_[m->slot]->open_files;
    }
    file->ino = ino;
    return file;
  }
  // The place's own files are never written (EACCES, as a read-only attribute of sysfs).
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) throw FsError{settings_.writable ? EACCES : EROFS};
  std::optional<size_t> slot = item_of(ino);
  if (slot) {
    if (item(*slot).entry.type != CollectionEntry::Type::file) throw FsError{EISDIR};
    file_bytes(*slot);
    std::lock_guard lock(mutex_);
    ++items_[*slot]->open_files;
  } else if (ino == kDescriptionIno) {
    std::string text = description();
    std::lock_guard lock(json_mutex_);
    description_ = std::make_shared<const std::string>(std::move(text));
  } else if (!node(ino)) {
    throw FsError{ENOENT};
  }
  direct_io = ino == kDescriptionIno;
  keep_cache = false;
  auto file = std::make_unique<OpenFile>();
  file->ino = ino;
  return file;
}

bool CollectionTree::cache_still_valid(uint64_t ino) {
  if (std::optional<Mapped> m = mapped(ino)) return child(m->slot)->cache_still_valid(m->local);
  if (std::optional<size_t> slot = item_of(ino)) {
    if (item(*slot).is_dataset()) return child(*slot)->cache_still_valid(kRootIno);
    return false;  // a file's bytes are the place's: the kernel asks again
  }
  return false;  // our directories change with the listing; they are cheap to list again
}

void CollectionTree::read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size,
                                 ReadPieces& out) {
  if (std::optional<Mapped> m = mapped(ino)) return child(m->slot)->read_pieces(m->local, file, offset, size, out);
  if (std::optional<size_t> slot = item_of(ino)) {
    if (item(*slot).entry.type != CollectionEntry::Type::file) throw FsError{EISDIR};
    std::shared_ptr<const ByteSource> bytes = file_bytes(*slot);
    if (offset < 0) throw FsError{EINVAL};
    if (offset >= bytes->size()) return;
    const size_t n = size_t(std::min<int64_t>(int64_t(size), bytes->size() - offset));
    MutableByteSpan dst = out.add_copy(n);
    out.trim_copy(bytes->read_at(offset, dst));
    return;
  }
  if (present_group_json(ino)) {
    MutableByteSpan dst = out.add_copy(size);
    out.trim_copy(copy_from(as_bytes(group_json()), offset, dst));
    return;
  }
  if (ino != kDescriptionIno) throw FsError{EISDIR};
  std::shared_ptr<const std::string> text;
  {
    std::lock_guard lock(json_mutex_);
    text = description_;
  }
  if (!text) text = std::make_shared<const std::string>(description());
  MutableByteSpan dst = out.add_copy(size);
  out.trim_copy(copy_from(as_bytes(*text), offset, dst));
}

std::string CollectionTree::description() {
  Json j = source_->describe();
  if (!j.contains("entries")) {
    // Every directory, listed now when it was not yet (an explicit read of the description).
    Json entries = Json::array();
    Json failed = Json::array();
    std::map<std::string, size_t> counts;
    std::vector<size_t> pending{0};
    size_t described = 0;
    bool cut = false;
    while (!pending.empty()) {
      const size_t d = pending.back();
      pending.pop_back();
      try {
        ensure_listed(d);
      } catch (const FsError&) {
      }
      std::lock_guard lock(mutex_);
      const Dir& dir = dirs_[d];
      if (!dir.failure.empty()) failed.push_back(Json{{"path", dir.path}, {"why", dir.failure}});
      for (auto it = dir.children.rbegin(); it != dir.children.rend(); ++it)
        if (it->directory) pending.push_back(it->index);
      for (const Child& c : dir.children) {
        if (++described > kMaxDescribedEntries) {
          cut = true;
          break;
        }
        Json e = Json::object();
        const std::string path = join(dir.path, c.name);
        e["path"] = path;
        if (c.directory) {
          e["type"] = "directory";
          ++counts["directories"];
        } else {
          const Item& item = *items_[c.index];
          e["type"] = type_name(item.entry.type);
          switch (item.entry.type) {
            case CollectionEntry::Type::dataset:
              e["kind"] = dataset_kind_name(item.entry.kind, path);
              ++counts[item.is_store() ? "stores" : "frames"];
              e["open"] = bool(item.tree);
              if (!item.failure.empty()) {
                e["error"] = item.failure;
                failed.push_back(Json{{"path", path}, {"why", item.failure}});
              }
              break;
            case CollectionEntry::Type::symlink:
              e["target"] = item.entry.link_target;
              ++counts["symlinks"];
              break;
            default:
              e["kind"] = dataset_kind_name(DatasetKind::other, path);
              if (item.entry.size >= 0) e["size"] = item.entry.size;
              ++counts["other_files"];
              break;
          }
        }
        entries.push_back(std::move(e));
      }
      if (cut) break;
    }
    Json c = Json::object();
    for (const char* name : {"frames", "stores", "other_files", "symlinks", "directories"}) c[name] = counts[name];
    j["source"] = source_->name();
    j["type"] = source_->type();
    j["writable"] = settings_.writable;
    j["counts"] = std::move(c);
    j["entries"] = std::move(entries);
    if (cut) j["entries_note"] = "only the first 1000000 entries are described";
    j["failed"] = std::move(failed);
  }
  {
    std::lock_guard lock(mutex_);
    j["listed_at"] = listed_at_text_;
    j["listings_fetched"] = listings_;
    j["open_datasets"] = lru_.size() + open_stores_.size();
  }
  j["max_open"] = settings_.max_open;
  j["list_ttl"] = settings_.list_ttl.count();
  if (settings_.counters) j["counters"] = settings_.counters();
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

void CollectionTree::shutdown() {
  std::vector<std::shared_ptr<MountTree>> open;
  {
    std::lock_guard lock(mutex_);
    for (size_t s : lru_) open.push_back(items_[s]->tree);
    for (size_t s : open_stores_) open.push_back(items_[s]->tree);
  }
  for (const std::shared_ptr<MountTree>& tree : open) {
    try {
      if (auto* volume = dynamic_cast<Volume*>(tree.get())) volume->shutdown();
      else if (auto* store = dynamic_cast<StoreTree*>(tree.get())) store->shutdown();
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", source_->name(), e.what());
    }
  }
}

}  // namespace blosc2fs
