#include "caterva2_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <set>

#include <spdlog/spdlog.h>

#include "exit_status.h"
#include "frame.h"
#include "fs_error.h"
#include "read_pieces.h"
#include "store.h"

namespace blosc2fs {

namespace {

// server.json asks api/info of at most this many paths (a request each):
// every path of a smaller listing, else only the files that are not Blosc2.
constexpr size_t kMaxInfos = 1000;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm {};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

// Turns an open file's number into its dataset tree's own for one call, and
// back (and the call's kernel notes into the mount's numbers) when it ends.
class Caterva2Tree::ChildCall {
 public:
  ChildCall(Caterva2Tree& tree, size_t slot, uint64_t local, OpenFile* file, KernelNotes& notes)
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
  Caterva2Tree& tree_;
  size_t slot_;
  OpenFile* file_;
  KernelNotes& notes_;
  uint64_t mount_ino_ = 0;
};

Caterva2Tree::Caterva2Tree(std::shared_ptr<Caterva2Session> session, std::vector<std::string> listing,
                           Settings settings)
    : session_(std::move(session)), settings_(std::move(settings)) {
  settings_.max_open = std::max<size_t>(settings_.max_open, 1);
  settings_.leaf_options.writable = false;
  ::clock_gettime(CLOCK_REALTIME, &mount_time_);
  dirs_.push_back(Dir{"", {}, true});
  dir_index_[""] = 0;
  std::lock_guard lock(mutex_);
  apply_listing(listing, nullptr);
}

Caterva2Tree::~Caterva2Tree() = default;

size_t Caterva2Tree::dir_for(const std::string& path) {
  auto it = dir_index_.find(path);
  if (it != dir_index_.end()) {
    dirs_[it->second].listed = true;
    return it->second;
  }
  dir_for(parent_of(path));  // its parents first
  const size_t d = dirs_.size();
  dirs_.push_back(Dir{path, {}, true});
  dir_index_[path] = d;
  return d;
}

void Caterva2Tree::apply_listing(const std::vector<std::string>& listing, KernelNotes* notes) {
  // What each directory showed, to tell the kernel what changed.
  std::vector<std::set<std::string>> before(dirs_.size());
  for (size_t d = 0; d < dirs_.size(); ++d)
    if (dirs_[d].listed)
      for (const Child& c : dirs_[d].children) before[d].insert(c.name);
  for (Dir& d : dirs_) {
    d.children.clear();
    d.listed = false;
  }
  dirs_[0].listed = true;
  for (auto& d : datasets_) d->listed = false;
  listing_ = listing;
  std::map<size_t, std::map<std::string, Child>> children;
  for (const std::string& listed : listing) {
    const Caterva2Kind kind = caterva2_kind(listed);
    if (kind == Caterva2Kind::other) continue;  // in server.json only
    // A sparse frame or .b2d store is listed by its marker file; the dataset is its directory.
    const bool directory = kind == Caterva2Kind::sparse_frame || kind == Caterva2Kind::store_directory;
    const std::string path = directory ? parent_of(listed) : listed;
    const std::string parent = parent_of(path);
    // Names the tree takes for itself, and a dataset path that is also a directory's.
    if ((parent.empty() && name_of(path) == "server.json") || dir_index_.count(path)) {
      spdlog::warn("{}: {} is not shown: its name is taken", session_->url().display(), path);
      continue;
    }
    auto [it, made] = dataset_index_.try_emplace(path, datasets_.size());
    if (made) {
      if (datasets_.size() >= kMaxDatasets) {
        dataset_index_.erase(it);
        continue;
      }
      auto d = std::make_unique<Dataset>();
      d->path = path;
      d->kind = kind;
      datasets_.push_back(std::move(d));
    }
    datasets_[it->second]->listed = true;
    size_t d = dir_for(parent);
    children[d][name_of(path)] = Child{name_of(path), true, it->second};
    // Each directory on the way shows in its parent.
    for (std::string dir = parent; !dir.empty(); dir = parent_of(dir)) {
      const size_t index = dir_for(dir);
      children[dir_for(parent_of(dir))].try_emplace(name_of(dir), Child{name_of(dir), false, index});
    }
  }
  for (auto& [d, named] : children)
    for (auto& [name, child] : named) dirs_[d].children.push_back(child);
  listed_at_ = std::chrono::steady_clock::now();
  listed_at_text_ = utc_now();
  if (!notes) return;
  for (size_t d = 0; d < dirs_.size(); ++d) {
    std::set<std::string> now;
    for (const Child& c : dirs_[d].children) now.insert(c.name);
    const std::set<std::string> empty;
    const std::set<std::string>& was = d < before.size() ? before[d] : empty;
    if (now == was) continue;
    notes->inodes.push_back(dir_ino(d));  // its listing
    for (const std::string& name : was)
      if (!now.count(name)) notes->entries.emplace_back(dir_ino(d), name);
    for (const std::string& name : now)
      if (!was.count(name)) notes->entries.emplace_back(dir_ino(d), name);  // a remembered "no such name"
  }
}

const Caterva2Tree::Dir* Caterva2Tree::dir_of(uint64_t ino) const {
  if (ino == kRootIno) return &dirs_[0];
  if (ino > kDirBase && ino < kDatasetBase && ino - kDirBase < dirs_.size()) {
    const Dir& d = dirs_[ino - kDirBase];
    return d.listed ? &d : nullptr;
  }
  return nullptr;
}

std::optional<Caterva2Tree::Mapped> Caterva2Tree::mapped(uint64_t ino) const {
  std::lock_guard lock(mutex_);
  if (ino >= kMappedBase) {
    auto it = mapped_.find(ino);
    if (it == mapped_.end()) throw FsError{ENOENT};
    return it->second;
  }
  if (ino >= kDatasetBase) {
    const size_t slot = size_t(ino - kDatasetBase);
    if (slot >= datasets_.size()) throw FsError{ENOENT};
    return Mapped{slot, kRootIno};
  }
  return std::nullopt;
}

uint64_t Caterva2Tree::to_mount(size_t slot, uint64_t local) {
  if (local == kRootIno) return dataset_ino(slot);
  std::lock_guard lock(mutex_);
  auto [it, made] = mount_numbers_.try_emplace({slot, local}, next_mapped_);
  if (made) mapped_[next_mapped_++] = Mapped{slot, local};
  return it->second;
}

void Caterva2Tree::translate(size_t slot, KernelNotes& notes) {
  for (uint64_t& ino : notes.inodes) ino = to_mount(slot, ino);
  for (uint64_t& ino : notes.attributes) ino = to_mount(slot, ino);
  for (auto& [parent, name] : notes.entries) parent = to_mount(slot, parent);
}

Caterva2Tree::Dataset& Caterva2Tree::dataset(size_t slot) const {
  std::lock_guard lock(mutex_);
  if (slot >= datasets_.size()) throw FsError{ENOENT};
  return *datasets_[slot];
}

namespace {

// frame.json's and store.json's "source" of a dataset: where it is, what was
// pinned, the mount's counters as they are now.
std::function<Json()> source_fields(std::string shown, std::function<std::string()> identity,
                                    std::function<Json()> counters) {
  return [shown = std::move(shown), identity = std::move(identity), counters = std::move(counters)] {
    Json source = Json::object();
    source["url"] = shown;
    source["identity"] = identity();
    source["counters"] = counters();
    Json fields = Json::object();
    fields["source"] = std::move(source);
    return fields;
  };
}

}  // namespace

std::shared_ptr<MountTree> Caterva2Tree::open_dataset(Dataset& d) {
  const std::string shown = session_->url().display() + "/" + d.path;
  VolumeOptions vo = settings_.leaf_options;
  const bool store = d.kind == Caterva2Kind::store || d.kind == Caterva2Kind::store_directory;
  if (store) vo.cache_budget = std::max<uint64_t>(vo.cache_budget / settings_.max_open, 1);
  std::shared_ptr<const SourceDirectory> directory;
  std::shared_ptr<const RemoteObject> object;
  if (d.kind == Caterva2Kind::sparse_frame || d.kind == Caterva2Kind::store_directory) {
    directory = open_caterva2_directory(session_, d.path);
    vo.live_json_fields = source_fields(
        shown, [] { return std::string("a directory: each object pinned when opened"); }, settings_.counters);
  } else {
    object = session_->open(d.path);
    vo.live_json_fields = source_fields(
        shown, [object] { return object->identity().text(); }, settings_.counters);
  }
  if (store) return std::make_shared<StoreTree>(Store::open(StoreSource{object, directory}), vo, settings_.max_open, false);
  std::shared_ptr<const Frame> frame = directory ? Frame::open_sparse(directory) : Frame::open(object);
  {
    std::lock_guard lock(mutex_);
    if (d.inodes) vo.inodes = std::move(*d.inodes);
    d.inodes.reset();
  }
  vo.frame_source = [frame] { return frame; };
  return std::make_shared<Volume>(std::filesystem::path(shown), vo);
}

std::shared_ptr<MountTree> Caterva2Tree::child_if_open(size_t slot) const {
  std::lock_guard lock(mutex_);
  return slot < datasets_.size() ? datasets_[slot]->tree : nullptr;
}

std::shared_ptr<MountTree> Caterva2Tree::child(size_t slot) {
  Dataset& d = dataset(slot);
  std::lock_guard opening(d.opening);
  {
    std::lock_guard lock(mutex_);
    if (d.tree) {
      if (d.volume) lru_.splice(lru_.begin(), lru_, d.lru);
      return d.tree;
    }
  }
  std::shared_ptr<MountTree> tree;
  try {
    tree = open_dataset(d);
  } catch (const std::exception& e) {
    const int error = dynamic_cast<const IoError*>(&e) && dynamic_cast<const IoError*>(&e)->error_number() == ENOENT
                          ? ENOENT
                          : EIO;
    std::lock_guard lock(mutex_);
    if (d.failure != e.what()) spdlog::error("{}/{}: cannot be read: {}", session_->url().display(), d.path, e.what());
    d.failure = e.what();
    throw FsError{error};
  }
  std::lock_guard lock(mutex_);
  d.failure.clear();
  d.tree = tree;
  d.volume = dynamic_cast<Volume*>(tree.get());
  if (!d.volume) return tree;  // a store's tree stays open: its own leaves come and go
  lru_.push_front(slot);
  d.lru = lru_.begin();
  // Close the least recently used Volumes beyond the bound, skipping those in use.
  for (auto it = lru_.end(); lru_.size() > settings_.max_open && it != lru_.begin();) {
    --it;
    Dataset& old = *datasets_[*it];
    if (old.open_files > 0 || *it == slot || old.tree.use_count() > 1 || !old.volume->closable()) continue;
    InodeMemory memory = old.volume->inode_memory();
    if (!memory.lookups.empty() || !memory.layers.empty()) old.inodes = std::make_unique<InodeMemory>(std::move(memory));
    old.tree.reset();
    old.volume = nullptr;
    it = lru_.erase(it);
  }
  return tree;
}

int64_t Caterva2Tree::nchunks() const {
  std::lock_guard lock(mutex_);
  return int64_t(datasets_.size());
}

struct stat Caterva2Tree::directory_attributes(uint64_t ino) const {
  struct stat st {};
  st.st_ino = ino;
  const FrameAccess access = settings_.leaf_options.fixed_access.value_or(FrameAccess{::getuid(), ::getgid(), 0444, 0});
  const NodeAccess a = node_access(NodeKind::root, access, false, settings_.leaf_options.access);
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_mode = S_IFDIR | a.mode;
  st.st_nlink = 2;
  st.st_blksize = 4096;
  st.st_atim = st.st_mtim = st.st_ctim = mount_time_;
  return st;
}

std::optional<Node> Caterva2Tree::node(uint64_t ino) const {
  std::optional<Mapped> m;
  try {
    m = mapped(ino);
  } catch (const FsError&) {
    return std::nullopt;
  }
  if (!m) {
    if (ino == kServerJsonIno) return Node{NodeKind::frame_json};
    std::lock_guard lock(mutex_);
    return dir_of(ino) ? std::optional<Node>(Node{NodeKind::root}) : std::nullopt;
  }
  if (m->local == kRootIno) return Node{NodeKind::root};
  return const_cast<Caterva2Tree*>(this)->child(m->slot)->node(m->local);
}

std::optional<uint64_t> Caterva2Tree::lookup(uint64_t parent, std::string_view name) {
  std::optional<Mapped> m = mapped(parent);
  if (!m) {
    std::lock_guard lock(mutex_);
    const Dir* d = dir_of(parent);
    if (!d) throw FsError{ENOENT};
    if (parent == kRootIno && name == "server.json") return kServerJsonIno;
    auto it = std::lower_bound(d->children.begin(), d->children.end(), name,
                               [](const Child& c, std::string_view n) { return c.name < n; });
    if (it == d->children.end() || it->name != name) return std::nullopt;
    return it->dataset ? dataset_ino(it->index) : dir_ino(it->index);
  }
  std::optional<uint64_t> found = child(m->slot)->lookup(m->local, name);
  if (!found) return std::nullopt;
  return to_mount(m->slot, *found);
}

std::optional<DirEntry> Caterva2Tree::entry(uint64_t dir, int64_t cookie) {
  std::optional<Mapped> m = mapped(dir);
  if (!m) {
    std::lock_guard lock(mutex_);
    const Dir* d = dir_of(dir);
    if (!d) throw FsError{ENOENT};
    const int64_t files = dir == kRootIno ? 1 : 0;
    if (cookie < files) return DirEntry{"server.json", kServerJsonIno, false, 1};
    const int64_t i = std::max<int64_t>(cookie, files) - files;
    if (i >= int64_t(d->children.size())) return std::nullopt;
    const Child& c = d->children[size_t(i)];
    return DirEntry{c.name, c.dataset ? dataset_ino(c.index) : dir_ino(c.index), true, files + i + 1};
  }
  std::optional<DirEntry> e = child(m->slot)->entry(m->local, cookie);
  if (e) e->ino = to_mount(m->slot, e->ino);
  return e;
}

struct stat Caterva2Tree::attributes(uint64_t ino) {
  std::optional<Mapped> m = mapped(ino);
  if (!m) {
    struct stat st = directory_attributes(ino);
    if (ino == kServerJsonIno) {
      st.st_mode = S_IFREG | (st.st_mode & 0444);
      st.st_nlink = 1;
      return st;  // size 0, read with direct I/O: it is made at each open
    }
    std::lock_guard lock(mutex_);
    if (!dir_of(ino)) throw FsError{ENOENT};
    return st;
  }
  // A dataset's directory is shown without opening it: a listing of thousands opens none.
  if (m->local == kRootIno) return directory_attributes(ino);
  struct stat st = child(m->slot)->attributes(m->local);
  st.st_ino = ino;
  return st;
}

std::string Caterva2Tree::path_of(uint64_t ino) const {
  std::optional<Mapped> m;
  try {
    m = mapped(ino);
  } catch (const FsError&) {
    return "inode " + std::to_string(ino);
  }
  std::lock_guard lock(mutex_);
  if (!m) {
    if (ino == kServerJsonIno) return "server.json";
    const Dir* d = dir_of(ino);
    return d ? "/" + d->path : "inode " + std::to_string(ino);
  }
  const Dataset& d = *datasets_[m->slot];
  if (m->local == kRootIno || !d.tree) return d.path;
  return d.path + "/" + d.tree->path_of(m->local);
}

std::optional<Caterva2Tree::Mapped> Caterva2Tree::mapped_below_dataset(uint64_t ino) const {
  try {
    std::optional<Mapped> m = mapped(ino);
    if (m && m->local != kRootIno) return m;
  } catch (const FsError&) {
  }
  return std::nullopt;
}

void Caterva2Tree::remember(uint64_t ino) {
  std::optional<Mapped> m = mapped_below_dataset(ino);
  if (!m) return;
  std::lock_guard lock(mutex_);
  Dataset& d = *datasets_[m->slot];
  if (d.tree) return d.tree->remember(m->local);
  if (!d.inodes) d.inodes = std::make_unique<InodeMemory>();
  ++d.inodes->lookups[m->local];
}

void Caterva2Tree::forget(uint64_t ino, uint64_t count) {
  std::optional<Mapped> m = mapped_below_dataset(ino);
  if (!m) return;
  std::lock_guard lock(mutex_);
  Dataset& d = *datasets_[m->slot];
  if (d.tree) return d.tree->forget(m->local, count);
  if (!d.inodes) return;
  auto it = d.inodes->lookups.find(m->local);
  if (it == d.inodes->lookups.end()) return;
  if (it->second > count) it->second -= count;
  else d.inodes->lookups.erase(it);
}

std::unique_ptr<OpenFile> Caterva2Tree::open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                             KernelNotes& notes) {
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) throw FsError{EROFS};
  std::optional<Mapped> m = mapped(ino);
  if (!m) {
    if (!node(ino)) throw FsError{ENOENT};
    if (ino == kServerJsonIno) {
      std::string text = server_json();
      std::lock_guard lock(json_mutex_);
      server_json_ = std::make_shared<const std::string>(std::move(text));
    }
    direct_io = ino == kServerJsonIno;
    keep_cache = false;
    auto file = std::make_unique<OpenFile>();
    file->ino = ino;
    return file;
  }
  std::shared_ptr<MountTree> tree = child(m->slot);
  std::unique_ptr<OpenFile> file = tree->open(m->local, flags, keep_cache, direct_io, notes);
  translate(m->slot, notes);
  {
    std::lock_guard lock(mutex_);
    ++datasets_[m->slot]->open_files;
  }
  file->ino = ino;
  return file;
}

bool Caterva2Tree::cache_still_valid(uint64_t ino) {
  std::optional<Mapped> m = mapped(ino);
  if (!m) return false;  // our directories change with the listing; they are cheap to list again
  if (m->local == kRootIno) return true;
  return child(m->slot)->cache_still_valid(m->local);
}

void Caterva2Tree::read_pieces(uint64_t ino, int64_t offset, size_t size, ReadPieces& out) {
  std::optional<Mapped> m = mapped(ino);
  if (!m) {
    if (ino != kServerJsonIno) throw FsError{EISDIR};
    std::shared_ptr<const std::string> text;
    {
      std::lock_guard lock(json_mutex_);
      text = server_json_;
    }
    if (!text) text = std::make_shared<const std::string>(server_json());
    MutableByteSpan dst = out.add_copy(size);
    out.trim_copy(copy_from(as_bytes(*text), offset, dst));
    return;
  }
  if (m->local == kRootIno) throw FsError{EISDIR};
  child(m->slot)->read_pieces(m->local, offset, size, out);
}

void Caterva2Tree::write(OpenFile&, int64_t, ByteSpan, KernelNotes&) { throw FsError{EROFS}; }

void Caterva2Tree::flush(OpenFile& file, KernelNotes& notes, bool fsync) {
  std::optional<Mapped> m = mapped(file.ino);
  if (!m) return;
  std::shared_ptr<MountTree> tree = child_if_open(m->slot);
  if (!tree) return;
  ChildCall call(*this, m->slot, m->local, &file, notes);
  tree->flush(file, notes, fsync);
}

void Caterva2Tree::release(std::unique_ptr<OpenFile> file, KernelNotes& notes) {
  std::optional<Mapped> m = mapped(file->ino);
  if (!m) return;
  std::shared_ptr<MountTree> tree = child_if_open(m->slot);
  if (!tree) return;
  {
    std::lock_guard lock(mutex_);
    Dataset& d = *datasets_[m->slot];
    if (d.open_files) --d.open_files;
  }
  file->ino = m->local;
  ChildCall call(*this, m->slot, m->local, nullptr, notes);
  tree->release(std::move(file), notes);
}

struct stat Caterva2Tree::setattr(uint64_t ino, OpenFile*, std::optional<int64_t> size, KernelNotes&) {
  if (size) throw FsError{EROFS};
  return attributes(ino);  // chmod, chown, utimens: accepted and ignored, as on a frame's mount
}

std::pair<uint64_t, std::unique_ptr<OpenFile>> Caterva2Tree::create(uint64_t, std::string_view, int, KernelNotes&) {
  throw FsError{EROFS};
}

void Caterva2Tree::unlink(uint64_t, std::string_view, KernelNotes&) { throw FsError{EROFS}; }

void Caterva2Tree::rename(uint64_t, std::string_view, uint64_t, std::string_view, unsigned, KernelNotes&) {
  throw FsError{EROFS};
}

void Caterva2Tree::maybe_refresh(KernelNotes& notes) {
  {
    std::lock_guard lock(mutex_);
    if (std::chrono::steady_clock::now() - listed_at_ < settings_.list_ttl) return;
  }
  std::vector<std::string> listing;
  try {
    listing = session_->list();
  } catch (const std::exception& e) {
    // The old listing stays; the next try after another list_ttl.
    spdlog::warn("{}: the listing could not be fetched again ({}): keeping the one of {}", session_->url().display(),
                 e.what(), listed_at_text_);
    std::lock_guard lock(mutex_);
    listed_at_ = std::chrono::steady_clock::now();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    apply_listing(listing, &notes);
    ++refreshes_;
  }
  std::lock_guard lock(json_mutex_);
  infos_.clear();
}

std::string Caterva2Tree::server_json() {
  std::vector<std::string> listing;
  std::vector<std::pair<std::string, Caterva2Kind>> shown;
  Json j = Json::object();
  {
    std::lock_guard lock(mutex_);
    listing = listing_;
    j["listed_at"] = listed_at_text_;
    j["listings_fetched"] = refreshes_ + 1;
    size_t open = 0;
    for (const auto& d : datasets_) open += d->tree ? 1 : 0;
    j["open_datasets"] = open;
  }
  const Caterva2Url& url = session_->url();
  j["url"] = url.display();
  j["server"] = url.server;
  j["root"] = url.root;
  j["directory"] = url.path;
  j["logged_in"] = session_->logged_in();
  j["list_ttl"] = settings_.list_ttl.count();
  const bool all = listing.size() <= kMaxInfos;
  auto wanted = [&](const std::string& path) {
    // cat2-server's api/info replaces a file whose suffix it does not serve
    // natively (README.md, a sparse frame's chunks.b2frame, a .b2d's
    // embed.b2e) with a compressed .b2 copy on its disk: a read-only mount
    // never asks about those.
    if (!caterva2_serves_natively(path)) return false;
    return all || caterva2_kind(path) == Caterva2Kind::other;
  };
  // The answers not asked yet, asked several at a time (not under the lock: a
  // listing of a thousand paths takes a moment, and another open of
  // server.json may ask the same again, which costs requests, not correctness).
  std::vector<std::string> ask;
  {
    std::lock_guard lock(json_mutex_);
    for (const std::string& path : listing)
      if (wanted(path) && !infos_.count(path) && ask.size() < kMaxInfos) ask.push_back(path);
  }
  std::vector<nlohmann::json> answers = session_->infos(ask);
  Json entries = Json::array();
  size_t datasets = 0, stores = 0, others = 0;
  std::lock_guard lock(json_mutex_);
  for (size_t i = 0; i < ask.size(); ++i) infos_.emplace(ask[i], Json::parse(answers[i].dump()));
  for (const std::string& path : listing) {
    const Caterva2Kind kind = caterva2_kind(path);
    (kind == Caterva2Kind::frame || kind == Caterva2Kind::sparse_frame ? datasets
     : kind == Caterva2Kind::store || kind == Caterva2Kind::store_directory ? stores
                                                                             : others)++;
    Json e = Json::object();
    e["path"] = path;
    e["kind"] = caterva2_kind_name(path);
    e["tree"] = kind != Caterva2Kind::other;  // whether it shows as a directory
    if (kind == Caterva2Kind::sparse_frame || kind == Caterva2Kind::store_directory)
      e["shown_as"] = parent_of(path);
    if (auto it = infos_.find(path); it != infos_.end()) e["info"] = it->second;
    else if (!caterva2_serves_natively(path))
      e["info_not_asked"] = "cat2-server replaces such a file with a compressed .b2 copy when asked about it";
    entries.push_back(std::move(e));
  }
  j["counts"] = Json{{"frames", datasets}, {"stores", stores}, {"other_files", others}};
  j["entries"] = std::move(entries);
  if (!all) j["info_note"] = "api/info is asked only for files that are not Blosc2 in listings of more than 1000 paths";
  if (settings_.counters) j["counters"] = settings_.counters();
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

void Caterva2Tree::shutdown() { session_->shutdown(); }

Caterva2Mount open_caterva2(const Options& options, uint64_t cache_budget, size_t max_open) {
  Caterva2Url url;
  std::optional<Caterva2Login> login;
  std::shared_ptr<RemoteClient> client;
  try {
    url = parse_caterva2_url(options.frame.string());
    if (!options.remote.caterva2_login_file.empty())
      login = read_caterva2_login_file(options.remote.caterva2_login_file);
    client = std::make_shared<RemoteClient>(remote_options(options.remote));
  } catch (const std::exception& e) {
    throw RemoteOpenError{kExitUsage, e.what()};
  }
  auto fail = [&](const IoError& e) -> RemoteOpenError {
    client->shutdown();
    return remote_open_error(e);
  };
  Caterva2Mount mount;
  try {
    mount.session = std::make_shared<Caterva2Session>(client, url, login);
  } catch (const IoError& e) {
    throw fail(e);
  }
  std::shared_ptr<Caterva2Session> session = mount.session;
  if (login) {
    // Reads refused with a cookie the server no longer takes log in again;
    // the client outlives the session, so it holds it weakly.
    client->set_reauthenticate([weak = std::weak_ptr<Caterva2Session>(session)] {
      std::shared_ptr<Caterva2Session> s = weak.lock();
      return s && s->log_in_again();
    });
  }
  const std::function<Json()> counters = [client] { return counters_json(*client); };
  if (!url.path.empty() &&
      (caterva2_kind(url.path) == Caterva2Kind::frame || caterva2_kind(url.path) == Caterva2Kind::store)) {
    // One dataset: mounted as a remote frame or store is (mount.cc).
    try {
      std::shared_ptr<const RemoteObject> object = session->open("");
      mount.dataset.url = url.display();
      mount.dataset.source.file = object;
      const std::string shown = url.display();
      mount.dataset.source_json = [object, shown, counters] {
        Json source = Json::object();
        source["url"] = shown;
        source["identity"] = object->identity().text();
        source["counters"] = counters();
        Json fields = Json::object();
        fields["source"] = std::move(source);
        return fields;
      };
    } catch (const IoError& e) {
      throw fail(e);
    }
  } else {
    std::vector<std::string> listing;
    try {
      listing = session->list();
    } catch (const IoError& e) {
      throw fail(e);
    }
    Caterva2Tree::Settings settings;
    settings.list_ttl = std::chrono::seconds(options.remote.list_ttl.value_or(60));
    settings.max_open = max_open;
    settings.leaf_options.access = AccessOverrides{options.uid, options.gid, options.umask};
    settings.leaf_options.fixed_access = FrameAccess{::getuid(), ::getgid(), 0444, 0};
    settings.leaf_options.cache_budget = std::max<uint64_t>(cache_budget / max_open, 1);
    settings.counters = counters;
    mount.tree = std::make_unique<Caterva2Tree>(session, std::move(listing), std::move(settings));
    mount.dataset.url = url.display();
  }
  mount.dataset.shutdown = [client, session] {
    session->shutdown();
    client->shutdown();
  };
  mount.dataset.before_fork = [client, session] {
    session->before_fork();
    client->suspend();
  };
  mount.dataset.after_fork = [client, session] {
    client->resume();
    session->after_fork();
  };
  return mount;
}

}  // namespace blosc2fs
