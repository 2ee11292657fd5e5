// CollectionTree: names, attributes and reads of the place's directories,
// datasets and files; the datasets' trees opened on demand. The listing of the
// source is in collection_listing.cc, the writes passed to datasets in
// collection_writes.cc, the description file in collection_description.cc.
#include "collection_tree.h"
#include "collection_tree_internal.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "fs_error.h"
#include "read_pieces.h"
#include "store_tree.h"
#include "tree_access.h"
#include "zarr_meta.h"

namespace blosc2fs {

using collection_tree_detail::join;
using collection_tree_detail::kZarrGroupName;
using namespace collection_numbers;

namespace {

// A folder has no attributes of its own to give its group.
const std::string& group_json() {
  static const std::string text = zarr_group_json(Json::object());
  return text;
}

}  // namespace

CollectionTree::~CollectionTree() = default;

std::optional<size_t> CollectionTree::present_group_json(uint64_t ino) const {
  const std::optional<size_t> d = group_json_of(ino);
  if (!d) return std::nullopt;
  MutexLock lock(mutex_);
  if (*d >= listed_.dir_count() || !listed_.dir(*d).present) throw FsError{ENOENT};
  return d;
}

std::optional<size_t> CollectionTree::item_of(uint64_t ino) const {
  if (ino < kItemBase || ino >= kMappedBase) return std::nullopt;
  MutexLock lock(mutex_);
  const size_t slot = size_t(ino - kItemBase);
  if (slot >= listed_.item_count()) throw FsError{ENOENT};
  return slot;
}

ListedPlace::Item& CollectionTree::item(size_t slot) const {
  MutexLock lock(mutex_);
  if (slot >= listed_.item_count()) throw FsError{ENOENT};
  return listed_.item(slot);
}

std::shared_ptr<MountTree> CollectionTree::child(size_t slot) {
  ListedPlace::Item& d = item(slot);
  if (!d.is_dataset()) throw FsError{ENOTDIR};
  auto open = [&](const std::optional<InodeMemory>& inodes) -> std::shared_ptr<MountTree> {
    VolumeOptions vo = settings_.leaf_options;  // a store's leaves share it (dataset_opener.h)
    vo.inodes = inodes;
    OpenedDataset opened;
    try {
      opened = source_->open_dataset(d.path, d.entry.kind, vo, settings_.max_open, settings_.writable);
    } catch (const std::exception& e) {
      const IoError* io = dynamic_cast<const IoError*>(&e);
      const int error = io && io->error_number() == ENOENT ? ENOENT : EIO;
      MutexLock lock(mutex_);
      if (d.failure != e.what()) spdlog::error("{}/{}: cannot be read: {}", source_->name(), d.path, e.what());
      d.failure = e.what();
      throw FsError{error};
    }
    MutexLock lock(mutex_);
    d.failure.clear();
    return opened.tree;
  };
  return datasets_.get(slot, open);
}

std::shared_ptr<const ByteSource> CollectionTree::file_bytes(size_t slot) {
  ListedPlace::Item& f = item(slot);
  {
    MutexLock lock(mutex_);
    if (f.bytes) return f.bytes;
  }
  std::shared_ptr<const ByteSource> bytes = source_->open_file(f.path);
  MutexLock lock(mutex_);
  if (!f.bytes) f.bytes = bytes;
  return f.bytes;
}

int64_t CollectionTree::nchunks() const {
  MutexLock lock(mutex_);
  return int64_t(listed_.item_count());
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
    if (std::optional<Mapped> m = numbers_.find(ino))
      return const_cast<CollectionTree*>(this)->child(m->slot)->node(m->local);
    if (std::optional<size_t> slot = item_of(ino)) {
      MutexLock lock(mutex_);
      const ListedPlace::Item& it = listed_.item(*slot);
      switch (it.entry.type) {
        case CollectionEntry::Type::dataset: return Node{it.is_store() ? NodeKind::store_group : NodeKind::root};
        case CollectionEntry::Type::symlink: return Node{NodeKind::symlink};
        default: return Node{NodeKind::plain_file};
      }
    }
  } catch (const FsError&) {
    return std::nullopt;
  }
  if (ino == kDescriptionIno) return Node{NodeKind::collection_json};
  if (std::optional<size_t> g = group_json_of(ino)) {
    MutexLock lock(mutex_);
    return *g < listed_.dir_count() && listed_.dir(*g).present ? std::optional<Node>(Node{NodeKind::group_zarr_json})
                                                              : std::nullopt;
  }
  MutexLock lock(mutex_);
  return listed_.dir_index(ino) ? std::optional<Node>(Node{NodeKind::collection_dir}) : std::nullopt;
}

std::optional<uint64_t> CollectionTree::lookup(uint64_t parent, std::string_view name) {
  if (std::optional<Mapped> m = numbers_.find(parent)) {
    std::optional<uint64_t> found = child(m->slot)->lookup(m->local, name);
    if (!found) return std::nullopt;
    return numbers_.to_mount(m->slot, *found);
  }
  if (std::optional<size_t> slot = item_of(parent)) {
    std::optional<uint64_t> found = child(*slot)->lookup(kRootIno, name);
    if (!found) return std::nullopt;
    return numbers_.to_mount(*slot, *found);
  }
  std::optional<size_t> d;
  {
    MutexLock lock(mutex_);
    d = listed_.dir_index(parent);
  }
  if (!d) throw FsError{ENOENT};
  if (parent == kRootIno && name == source_->description_name()) return kDescriptionIno;
  if (name == kZarrGroupName) return kGroupJsonBase + *d;
  ensure_listed(*d);
  MutexLock lock(mutex_);
  const ListedPlace::Dir& dir = listed_.dir(*d);
  auto it = std::lower_bound(dir.children.begin(), dir.children.end(), name,
                             [](const ListedPlace::Child& c, std::string_view n) { return c.name < n; });
  if (it == dir.children.end() || it->name != name) return std::nullopt;
  return it->directory ? dir_ino(it->index) : item_ino(it->index);
}

std::optional<DirEntry> CollectionTree::entry(uint64_t dir, int64_t cookie) {
  if (std::optional<Mapped> m = numbers_.find(dir)) {
    std::optional<DirEntry> e = child(m->slot)->entry(m->local, cookie);
    if (e) e->ino = numbers_.to_mount(m->slot, e->ino);
    return e;
  }
  if (std::optional<size_t> slot = item_of(dir)) {
    std::optional<DirEntry> e = child(*slot)->entry(kRootIno, cookie);
    if (e) e->ino = numbers_.to_mount(*slot, e->ino);
    return e;
  }
  std::optional<size_t> d;
  {
    MutexLock lock(mutex_);
    d = listed_.dir_index(dir);
  }
  if (!d) throw FsError{ENOENT};
  ensure_listed(*d);
  MutexLock lock(mutex_);
  const ListedPlace::Dir& listed = listed_.dir(*d);
  // The description (the top only), then zarr.json, then the listing.
  const int64_t files = dir == kRootIno ? 2 : 1;
  if (cookie < files - 1) return DirEntry{source_->description_name(), kDescriptionIno, false, 1};
  if (cookie < files) return DirEntry{kZarrGroupName, kGroupJsonBase + *d, false, files};
  const int64_t i = std::max<int64_t>(cookie, files) - files;
  if (i >= int64_t(listed.children.size())) return std::nullopt;
  const ListedPlace::Child& c = listed.children[size_t(i)];
  DirEntry e{c.name, c.directory ? dir_ino(c.index) : item_ino(c.index), c.directory, files + i + 1};
  if (!c.directory) {
    const CollectionEntry& what = listed_.item(c.index).entry;
    e.directory = what.type == CollectionEntry::Type::dataset;
    e.symlink = what.type == CollectionEntry::Type::symlink;
  }
  return e;
}

struct stat CollectionTree::attributes(uint64_t ino) {
  if (std::optional<Mapped> m = numbers_.find(ino)) {
    struct stat st = child(m->slot)->attributes(m->local);
    st.st_ino = ino;
    return st;
  }
  if (std::optional<size_t> slot = item_of(ino)) {
    std::string path;
    CollectionEntry entry;
    {
      MutexLock lock(mutex_);
      path = listed_.item(*slot).path;
      entry = listed_.item(*slot).entry;
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
    MutexLock lock(mutex_);
    const std::optional<size_t> d = listed_.dir_index(ino);
    if (!d) throw FsError{ENOENT};
    path = listed_.dir(*d).path;
  }
  return own_attributes(ino, path, true);
}

std::string CollectionTree::path_of(uint64_t ino) const {
  std::optional<Mapped> m;
  std::optional<size_t> slot;
  try {
    m = numbers_.find(ino);
    if (!m) slot = item_of(ino);
  } catch (const FsError&) {
    return "inode " + std::to_string(ino);
  }
  MutexLock lock(mutex_);
  if (m) {
    const ListedPlace::Item& d = listed_.item(m->slot);
    const std::shared_ptr<MountTree> tree = datasets_.if_open(m->slot);
    return tree ? d.path + "/" + tree->path_of(m->local) : d.path;
  }
  if (slot) return listed_.item(*slot).path;
  if (ino == kDescriptionIno) return source_->description_name();
  if (std::optional<size_t> g = group_json_of(ino))
    return *g < listed_.dir_count() ? "/" + join(listed_.dir(*g).path, kZarrGroupName) : "inode " + std::to_string(ino);
  const std::optional<size_t> d = listed_.dir_index(ino);
  return d ? "/" + listed_.dir(*d).path : "inode " + std::to_string(ino);
}

std::string CollectionTree::readlink(uint64_t ino) {
  if (std::optional<Mapped> m = numbers_.find(ino)) return child(m->slot)->readlink(m->local);
  if (std::optional<size_t> slot = item_of(ino)) {
    MutexLock lock(mutex_);
    const ListedPlace::Item& it = listed_.item(*slot);
    if (it.entry.type == CollectionEntry::Type::symlink) return it.entry.link_target;
    throw FsError{EINVAL};
  }
  if (!node(ino)) throw FsError{ENOENT};
  throw FsError{EINVAL};
}

void CollectionTree::remember(uint64_t ino) {
  if (std::optional<Mapped> m = numbers_.find_below_dataset(ino)) datasets_.remember(m->slot, m->local);
}

void CollectionTree::forget(uint64_t ino, uint64_t count) {
  if (std::optional<Mapped> m = numbers_.find_below_dataset(ino)) datasets_.forget(m->slot, m->local, count);
}

std::unique_ptr<OpenFile> CollectionTree::open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                               KernelNotes& notes) {
  if (std::optional<Mapped> m = numbers_.find(ino)) {
    std::shared_ptr<MountTree> tree = child(m->slot);
    std::unique_ptr<OpenFile> file = tree->open(m->local, flags, keep_cache, direct_io, notes);
    numbers_.translate(m->slot, notes);
    datasets_.file_opened(m->slot);
    file->ino = ino;
    return file;
  }
  // The place's own files are never written (EACCES, as a read-only attribute of sysfs).
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) throw FsError{settings_.writable ? EACCES : EROFS};
  std::optional<size_t> slot = item_of(ino);
  if (slot) {
    if (item(*slot).entry.type != CollectionEntry::Type::file) throw FsError{EISDIR};
    file_bytes(*slot);
    MutexLock lock(mutex_);
    ++listed_.item(*slot).open_files;
  } else if (ino == kDescriptionIno) {
    description_.set(description());
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
  if (std::optional<Mapped> m = numbers_.find(ino)) return child(m->slot)->cache_still_valid(m->local);
  if (std::optional<size_t> slot = item_of(ino)) {
    if (item(*slot).is_dataset()) return child(*slot)->cache_still_valid(kRootIno);
    return false;  // a file's bytes are the place's: the kernel asks again
  }
  return false;  // our directories change with the listing; they are cheap to list again
}

void CollectionTree::read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size,
                                 ReadPieces& out) {
  if (std::optional<Mapped> m = numbers_.find(ino)) return child(m->slot)->read_pieces(m->local, file, offset, size, out);
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
  std::shared_ptr<const std::string> text = description_.get();
  if (!text) text = std::make_shared<const std::string>(description());
  MutableByteSpan dst = out.add_copy(size);
  out.trim_copy(copy_from(as_bytes(*text), offset, dst));
}

void CollectionTree::shutdown() {
  for (const auto& [slot, tree] : datasets_.open_trees()) {
    try {
      tree->shutdown();
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", source_->name(), e.what());
    }
  }
}

}  // namespace blosc2fs
