#include "collection_tree.h"

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

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm {};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string join(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

// Every directory of the place is a Zarr group (docs/zarr.md); a folder has no
// attributes of its own to give it.
const std::string kZarrGroupName = "zarr.json";
const std::string& group_json() {
  static const std::string text = zarr_group_json(Json::object());
  return text;
}

bool single_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
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

// Turns an open file's number into its dataset tree's own for one call, and
// back (and the call's kernel notes into the mount's numbers) when it ends.
class CollectionTree::ChildCall {
 public:
  ChildCall(CollectionTree& tree, size_t slot, uint64_t local, OpenFile* file, KernelNotes& notes)
      : tree_(tree), slot_(slot), file_(file), notes_(notes) {
    if (file_) {
      mount_ino_ = file_->ino;
      file_->ino = local;
    }
  }
  ~ChildCall() {
    if (file_) file_->ino = mount_ino_;
    tree_.translate(slot_, notes_);
  }
  ChildCall(const ChildCall&) = delete;
  ChildCall& operator=(const ChildCall&) = delete;

 private:
  CollectionTree& tree_;
  size_t slot_;
  OpenFile* file_;
  KernelNotes& notes_;
  uint64_t mount_ino_ = 0;
};

CollectionTree::CollectionTree(std::shared_ptr<CollectionSource> source, Settings settings)
    : source_(std::move(source)), settings_(std::move(settings)) {
  settings_.max_open = std::max<size_t>(settings_.max_open, 1);
  if (source_->remote()) settings_.writable = false;
  ::clock_gettime(CLOCK_REALTIME, &mount_time_);
  dirs_.push_back(Dir{});
  dir_index_[""] = 0;
  round_at_ = std::chrono::steady_clock::now();
  // The mount refuses to start without its top level, with the source's own
  // error as it is (its type, errno and the one line naming the place).
  const std::string version = source_->version("");  // before the listing, as list_now takes it
  std::vector<CollectionEntry> top = source_->list("");
  std::lock_guard lock(mutex_);
  dirs_[0].version = version;
  apply_listing(0, std::move(top), nullptr);
  ++listings_;
  listed_at_text_ = utc_now();
}

CollectionTree::~CollectionTree() = default;

size_t CollectionTree::dir_for(const std::string& path) {
  auto it = dir_index_.find(path);
  if (it != dir_index_.end()) return it->second;
  const size_t d = dirs_.size();
  Dir dir;
  dir.path = path;
  dirs_.push_back(std::move(dir));
  dir_index_[path] = d;
  return d;
}

void CollectionTree::list_now(size_t d, KernelNotes* notes, bool if_changed) {
  std::string path, was;
  {
    std::lock_guard lock(mutex_);
    path = dirs_[d].path;
    was = dirs_[d].version;
  }
  // Taken before the listing: a change while it is read shows at the next refresh.
  const std::string version = source_->version(path);
  if (if_changed && !version.empty() && version == was) {
    std::lock_guard lock(mutex_);
    dirs_[d].listed_at = std::chrono::steady_clock::now();
    return;
  }
  std::vector<CollectionEntry> entries;
  try {
    entries = source_->list(path);
  } catch (const std::exception& e) {
    const std::string why = source_->name() + (path.empty() ? "" : "/" + path) + ": cannot be listed: " + e.what();
    std::lock_guard lock(mutex_);
    Dir& dir = dirs_[d];
    if (dir.failure != why) spdlog::error("{}", why);
    dir.failure = why;
    // A directory listed before keeps its listing until the next try.
    dir.listed_at = std::chrono::steady_clock::now();
    if (!dir.fetched && d != 0) {
      const IoError* io = dynamic_cast<const IoError*>(&e);
      throw FsError{io && io->error_number() == ENOENT ? ENOENT : EIO};
    }
    return;
  }
  std::lock_guard lock(mutex_);
  dirs_[d].failure.clear();
  dirs_[d].version = version;
  apply_listing(d, std::move(entries), notes);
  ++listings_;
  listed_at_text_ = utc_now();
}

void CollectionTree::ensure_listed(size_t d) {
  {
    std::lock_guard lock(mutex_);
    if (dirs_[d].fetched) return;
  }
  list_now(d, nullptr);
}

void CollectionTree::apply_listing(size_t d, std::vector<CollectionEntry> entries, KernelNotes* notes) {
  std::set<std::string> before;
  const bool was_fetched = dirs_[d].fetched;
  for (const Child& c : dirs_[d].children) before.insert(c.name);
  const std::string dir_path = dirs_[d].path;
  std::map<std::string, Child> children;
  const std::string reserved = source_->description_name();
  for (CollectionEntry& e : entries) {
    // Sources check names; a second check costs nothing and keeps every name inside the mount.
    if (!single_name(e.name)) continue;
    if ((d == 0 && e.name == reserved) || e.name == kZarrGroupName) {
      spdlog::warn("{}: {} is not shown: the mount's own {} takes its name", source_->name(), join(dir_path, e.name),
                   e.name);
      continue;
    }
    const std::string path = join(dir_path, e.name);
    if (e.type == CollectionEntry::Type::directory) {
      const size_t sub = dir_for(path);
      dirs_[sub].present = true;
      children[e.name] = Child{e.name, true, sub};
      continue;
    }
    auto it = item_index_.find(path);
    if (it != item_index_.end()) {
      Item& old = *items_[it->second];
      const bool same = old.entry.type == e.type && old.entry.kind == e.kind && old.entry.link_target == e.link_target;
      if (!same) {
        // Another kind of entry under the same name: a new inode, the old one gone.
        old.present = false;
        item_index_.erase(it);
        it = item_index_.end();
      } else {
        // Only the size may differ (readers of the type, kind and target hold no lock).
        if (old.entry.size != e.size) {
          old.bytes.reset();  // a file that changed: its bytes fetched anew
          old.entry.size = e.size;
        }
        old.present = true;
      }
    }
    if (it == item_index_.end()) {
      if (items_.size() >= kMaxItems) continue;
      auto item = std::make_unique<Item>();
      item->path = path;
      item->entry = e;
      it = item_index_.emplace(path, items_.size()).first;
      items_.push_back(std::move(item));
    }
    children[e.name] = Child{e.name, false, it->second};
  }
  // What went away.
  for (const Child& c : dirs_[d].children) {
    if (children.count(c.name) && children[c.name].directory == c.directory && children[c.name].index == c.index)
      continue;
    if (c.directory) dirs_[c.index].present = false;
    else items_[c.index]->present = false;
  }
  Dir& dir = dirs_[d];
  dir.children.clear();
  for (auto& [name, child] : children) dir.children.push_back(child);
  dir.fetched = true;
  dir.listed_at = std::chrono::steady_clock::now();
  if (!notes || !was_fetched) return;
  std::set<std::string> now;
  for (const Child& c : dir.children) now.insert(c.name);
  if (now == before) return;
  notes->inodes.push_back(dir_ino(d));  // its listing
  for (const std::string& name : before)
    if (!now.count(name)) notes->entries.emplace_back(dir_ino(d), name);
  for (const std::string& name : now)
    if (!before.count(name)) notes->entries.emplace_back(dir_ino(d), name);  // a remembered "no such name"
}

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
  VolumeOptions vo = settings_.leaf_options;
  const bool store = d.entry.kind == DatasetKind::store || d.entry.kind == DatasetKind::store_directory;
  if (store) vo.cache_budget = std::max<uint64_t>(vo.cache_budget / settings_.max_open, 1);
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
        case CollectionEntry::Type::dataset: return Node{NodeKind::root};
        case CollectionEntry::Type::symlink: return Node{NodeKind::symlink};
        default: return Node{NodeKind::plain_file};
      }
    }
  } catch (const FsError&) {
    return std::nullopt;
  }
  if (ino == kDescriptionIno) return Node{NodeKind::frame_json};
  if (std::optional<size_t> g = group_json_of(ino)) {
    std::lock_guard lock(mutex_);
    return *g < dirs_.size() && dirs_[*g].present ? std::optional<Node>(Node{NodeKind::zarr_json}) : std::nullopt;
  }
  std::lock_guard lock(mutex_);
  return dir_of(ino) ? std::optional<Node>(Node{NodeKind::root}) : std::nullopt;
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
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) throw FsError{refusal()};
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

void CollectionTree::write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  std::optional<Mapped> m = mapped(file.ino);
  if (!m) throw FsError{refusal()};
  std::shared_ptr<MountTree> tree = child(m->slot);
  ChildCall call(*this, m->slot, m->local, &file, notes);
  tree->write(file, offset, data, notes);
}

void CollectionTree::flush(OpenFile& file, KernelNotes& notes, bool fsync) {
  std::optional<Mapped> m = mapped(file.ino);
  if (!m) return;
  std::shared_ptr<MountTree> tree = child_if_open(m->slot);
  if (!tree) return;
  ChildCall call(*this, m->slot, m->local, &file, notes);
  tree->flush(file, notes, fsync);
}

void CollectionTree::release(std::unique_ptr<OpenFile> file, KernelNotes& notes) {
  std::optional<Mapped> m = mapped_below_dataset(file->ino);
  if (!m) {
    std::optional<size_t> slot;
    try {
      slot = item_of(file->ino);
    } catch (const FsError&) {
    }
    if (!slot) return;
    std::lock_guard lock(mutex_);
    Item& f = *items_[*slot];
    if (f.open_files && --f.open_files == 0 && !source_->remote()) f.bytes.reset();  // a local file: its descriptor
    return;
  }
  std::shared_ptr<MountTree> tree = child_if_open(m->slot);
  if (!tree) return;
  {
    std::lock_guard lock(mutex_);
    Item& d = *items_[m->slot];
    if (d.open_files) --d.open_files;
  }
  file->ino = m->local;
  ChildCall call(*this, m->slot, m->local, nullptr, notes);
  tree->release(std::move(file), notes);
}

struct stat CollectionTree::setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) {
  if (std::optional<Mapped> m = mapped(ino)) {
    std::shared_ptr<MountTree> tree = child(m->slot);
    struct stat st;
    {
      ChildCall call(*this, m->slot, m->local, file, notes);
      st = tree->setattr(m->local, file, size, notes);
    }
    st.st_ino = ino;
    return st;
  }
  if (size) throw FsError{refusal()};
  return attributes(ino);  // chmod, chown, utimens: accepted and ignored, as on a frame's mount
}

std::pair<uint64_t, std::unique_ptr<OpenFile>> CollectionTree::create(uint64_t parent, std::string_view name,
                                                                      int flags, KernelNotes& notes) {
  const std::optional<Mapped> at = inside_dataset(parent);
  if (!at) throw FsError{refusal()};
  const size_t s = at->slot;
  const uint64_t local = at->local;
  std::shared_ptr<MountTree> tree = child(s);
  std::pair<uint64_t, std::unique_ptr<OpenFile>> made;
  {
    ChildCall call(*this, s, local, nullptr, notes);
    made = tree->create(local, name, flags, notes);
  }
  const uint64_t ino = to_mount(s, made.first);
  made.second->ino = ino;
  {
    std::lock_guard lock(mutex_);
    ++items_[s]->open_files;
  }
  return {ino, std::move(made.second)};
}

void CollectionTree::unlink(uint64_t parent, std::string_view name, KernelNotes& notes) {
  const std::optional<Mapped> at = inside_dataset(parent);
  if (!at) throw FsError{refusal()};
  std::shared_ptr<MountTree> tree = child(at->slot);
  ChildCall call(*this, at->slot, at->local, nullptr, notes);
  tree->unlink(at->local, name, notes);
}

std::optional<CollectionTree::Mapped> CollectionTree::inside_dataset(uint64_t ino) const {
  if (std::optional<Mapped> m = mapped(ino)) return m;
  if (std::optional<size_t> slot = item_of(ino); slot && item(*slot).is_dataset()) return Mapped{*slot, kRootIno};
  return std::nullopt;
}

void CollectionTree::rename(uint64_t parent, std::string_view name, uint64_t new_parent, std::string_view new_name,
                            unsigned flags, KernelNotes& notes) {
  const std::optional<Mapped> from = inside_dataset(parent), to = inside_dataset(new_parent);
  if (!from || !to) throw FsError{refusal()};
  if (from->slot != to->slot) throw FsError{EXDEV};
  std::shared_ptr<MountTree> tree = child(from->slot);
  ChildCall call(*this, from->slot, from->local, nullptr, notes);
  tree->rename(from->local, name, to->local, new_name, flags, notes);
}

void CollectionTree::maybe_refresh(KernelNotes& notes) {
  // Open local datasets follow what other programs do to their files, looked
  // at as often as a Volume looks at its own (every request asks).
  const auto now = std::chrono::steady_clock::now();
  bool children_due = false;
  if (!source_->remote()) {
    std::lock_guard lock(mutex_);
    children_due = now - children_refreshed_at_ >= settings_.leaf_options.refresh_interval;
    if (children_due) children_refreshed_at_ = now;
  }
  if (children_due) {
    std::vector<std::pair<size_t, std::shared_ptr<MountTree>>> open;
    {
      std::lock_guard lock(mutex_);
      for (size_t s : lru_) open.emplace_back(s, items_[s]->tree);
      for (size_t s : open_stores_) open.emplace_back(s, items_[s]->tree);
    }
    for (auto& [slot, tree] : open) {
      KernelNotes own;
      try {
        tree->maybe_refresh(own);
      } catch (const std::exception& e) {
        spdlog::debug("{}: refresh: {}", source_->name(), e.what());
      }
      translate(slot, own);
      notes.inodes.insert(notes.inodes.end(), own.inodes.begin(), own.inodes.end());
      notes.attributes.insert(notes.attributes.end(), own.attributes.begin(), own.attributes.end());
      notes.entries.insert(notes.entries.end(), own.entries.begin(), own.entries.end());
    }
  }
  std::unique_lock round(refresh_mutex_, std::try_to_lock);
  if (!round.owns_lock()) return;  // another thread is listing
  std::vector<size_t> due;
  {
    std::lock_guard lock(mutex_);
    if (std::chrono::steady_clock::now() - round_at_ < settings_.list_ttl) return;
    round_at_ = std::chrono::steady_clock::now();
    for (size_t d = 0; d < dirs_.size(); ++d)
      if (dirs_[d].fetched && dirs_[d].present) due.push_back(d);
  }
  source_->relist();
  for (size_t d : due) {
    try {
      list_now(d, &notes, true);
    } catch (const FsError&) {
    }
  }
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
              ++counts[item.entry.kind == DatasetKind::store || item.entry.kind == DatasetKind::store_directory
                           ? "stores"
                           : "frames"];
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
