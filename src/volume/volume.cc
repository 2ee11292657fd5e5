// Volume: construction, the names of the tree, stat, and reads.
#include "volume.h"

#include <fcntl.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "error.h"
#include "fs_error.h"
#include "npy_replacement.h"
#include "read_pieces.h"

namespace blosc2fs {


namespace {

constexpr blksize_t kPreferredIoSize = 1 << 20;
// Cookies of scratch files in readdir, after every real entry.
constexpr int64_t kScratchCookieBase = int64_t(1) << 50;

}  // namespace

std::string Volume::stats_text(const ChunkCacheStats& stats) const {
  std::string text = stats.text();
  if (options_.more_stats) text += " " + options_.more_stats();
  return text + "\n";
}

Volume::Volume(const std::filesystem::path& frame_path, VolumeOptions options)
    : path_(frame_path), options_(std::move(options)), cache_(loader_, options_.cache_budget, options_.buffer_pool), overlay_(cache_) {
  if (options_.frame_source) options_.writable = false;
  if (options_.writable) editor_ = std::make_unique<FrameEditor>(path_, 0, options_.edit);
  auto [frame, stamp] = open_committed_frame();
  disk_stamp_ = stamp;
  if (frame->nchunks() > kMaxChunksShown)
    throw FormatError("the frame claims " + std::to_string(frame->nchunks()) + " chunks, more than can be shown");
  files_ = std::make_shared<FrameFiles>(frame, cache_, options_.frame_json_fields, options_.live_json_fields);
  loader_.set_frame(frame, files_->proxy());
  overlay_.reset(*files_, overlay_limits(*files_));
  mtime_ns_ = stamp.mtime_ns;
  frame_access_ = read_access();
  size_at_compaction_check_ = stamp.file_size;
  if (options_.inodes) {
    names_.restore(*options_.inodes);
    kernel_.seed(std::move(options_.inodes->lookups));
    options_.inodes.reset();
  }
}

Volume::~Volume() = default;

uint64_t Volume::new_version() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

bool Volume::closable() const {
  std::shared_lock lock(state_mutex_);
  return names_.only_layer_names() && overlay_.clean() && !npy_replacement_;
}

InodeMemory Volume::inode_memory() const {
  InodeMemory memory;
  {
    std::shared_lock lock(state_mutex_);
    memory = names_.layers();
  }
  memory.lookups = kernel_.lookups();
  return memory;
}

FrameAccess Volume::read_access() const {
  if (options_.fixed_access) return *options_.fixed_access;
  if (!options_.frame_source) return read_frame_access(path_);
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) throw_errno(path_.string() + ": stat");
  return frame_access_of_file(st);
}

bool Volume::underlying_statfs(struct statvfs& out) const {
  return !options_.fixed_access && ::statvfs(path_.c_str(), &out) == 0;
}

int64_t Volume::nchunks() const {
  std::shared_lock lock(state_mutex_);
  return overlay_.count();
}

// --- names ---

std::string Volume::path_of_node(const Node& node) const {
  if (is_zarr_kind(node.kind)) return zarr_path(node);
  if (node.kind == NodeKind::scratch && node.dir == NodeKind::zarr_dir) return node.name;  // c/I/NAME already
  if (node.kind == NodeKind::root) return "/";
  return path_in(directory_of(node), file_name_of(node));
}

bool Volume::exists(const Node& node) const {
  auto created_draft = [&](NodeKind dir, const std::string& name) { return names_.created(dir, name); };
  if (is_zarr_kind(node.kind)) return zarr_exists(node);
  switch (node.kind) {
    case NodeKind::array_npy: return files_->has_array() || npy_replacement_;
    case NodeKind::items_jsonl: return files_->has_items();
    case NodeKind::usermeta: return files_->usermeta() != nullptr;
    case NodeKind::preview_png: return files_->has_preview();
    case NodeKind::chunk: return node.index >= 0 && node.index < overlay_.count();
    case NodeKind::raw_chunk: {
      if (node.index >= 0 && node.index < files_->nchunks()) return true;
      const Draft* d = node.index >= 0 ? names_.draft(kRawBase + uint64_t(node.index)) : nullptr;
      return d && d->created;
    }
    case NodeKind::meta: return files_->find_meta(node.name) || created_draft(NodeKind::meta_dir, node.name);
    case NodeKind::vlmeta: return files_->find_vlmeta(node.name) || created_draft(NodeKind::vlmeta_dir, node.name);
    case NodeKind::attrs: {
      const LayerFile* layer = files_->find_vlmeta(node.name);
      return (layer && layer->attrs_text) || created_draft(NodeKind::attrs_dir, node.name);
    }
    case NodeKind::scratch: return names_.scratch_named(node.dir, node.name).has_value();
    default: return true;
  }
}

std::optional<Node> Volume::lookup_node(NodeKind dir, std::string_view name_view) const {
  const std::string name(name_view);
  if (std::optional<uint64_t> scratch = names_.scratch_named(dir, name)) return names_.scratch(*scratch)->node;
  if (names_.hidden(dir, name)) return std::nullopt;
  std::optional<Node> node;
  switch (dir) {
    case NodeKind::root:
      for (const FixedFile& f : kRootChildren)
        if (name == f.name) node = Node{f.kind};
      break;
    case NodeKind::chunks_dir:
      if (auto n = parse_chunk_file_name(name)) node = Node{NodeKind::chunk, *n};
      break;
    case NodeKind::raw_dir:
      if (auto n = parse_raw_file_name(name)) node = Node{NodeKind::raw_chunk, *n};
      break;
    case NodeKind::meta_dir: node = Node{NodeKind::meta, 0, name}; break;
    case NodeKind::vlmeta_dir: node = Node{NodeKind::vlmeta, 0, name}; break;
    case NodeKind::attrs_dir: node = Node{NodeKind::attrs, 0, name}; break;
    default: break;
  }
  if (!node || !exists(*node)) return std::nullopt;
  return node;
}

std::optional<Node> Volume::node(uint64_t ino) const {
  std::shared_lock lock(state_mutex_);
  if (std::optional<Node> node = computed_node(ino)) {
    if (exists(*node)) return node;
    return std::nullopt;
  }
  const Node* node = names_.named(ino);
  if (!node || !exists(*node)) return std::nullopt;
  if (!computed_inode(*node)) {  // a name's inode: only while the name still has it
    if (names_.find(directory_of(*node), node->name) != ino) return std::nullopt;
  }
  return *node;
}

std::optional<uint64_t> Volume::lookup(uint64_t parent, std::string_view name) {
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  {
    std::shared_lock lock(state_mutex_);
    // The Zarr view's chunk coordinates name directories by their position, and
    // "c" is a file in a 0-d array: looked up apart from the other names.
    if (is_zarr_kind(dir->kind) || (dir->kind == NodeKind::root && name == "c" && files_->zarr() &&
                                    files_->zarr()->zero_d())) {
      if (std::optional<uint64_t> scratch = zarr_scratch(*dir, name)) return scratch;
      std::optional<Node> child = zarr_lookup(*dir, name);
      if (!child) return std::nullopt;
      return computed_inode(*child);
    }
    std::optional<Node> child = lookup_node(dir->kind, name);
    if (!child) return std::nullopt;
    if (auto ino = names_.known_ino(*child)) return ino;
  }
  std::unique_lock lock(state_mutex_);
  std::optional<Node> child = lookup_node(dir->kind, name);
  if (!child) return std::nullopt;
  return names_.ino(*child);
}

std::vector<std::pair<std::string, Node>> Volume::listing(NodeKind dir) const {
  std::vector<std::pair<std::string, Node>> out;
  auto add = [&](const std::string& name, Node node) {
    if (!names_.hidden(dir, name) && exists(node)) out.emplace_back(name, std::move(node));
  };
  auto add_created = [&](NodeKind kind) {
    for (const auto& [name, ino] : names_.names_in(dir)) {
      const Draft* d = names_.draft(ino);
      if (d && d->created) add(name, Node{kind, 0, name});
    }
  };
  switch (dir) {
    case NodeKind::meta_dir:
      for (const LayerFile& f : files_->metas()) add(f.name, Node{NodeKind::meta, 0, f.name});
      add_created(NodeKind::meta);
      break;
    case NodeKind::vlmeta_dir:
      for (const LayerFile& f : files_->vlmetas()) add(f.name, Node{NodeKind::vlmeta, 0, f.name});
      add_created(NodeKind::vlmeta);
      break;
    case NodeKind::attrs_dir:
      for (const LayerFile& f : files_->vlmetas())
        if (f.attrs_text) add(f.name, Node{NodeKind::attrs, 0, f.name});
      add_created(NodeKind::attrs);
      break;
    default:
      break;
  }
  return out;
}

std::optional<DirEntry> Volume::entry(uint64_t dir_ino, int64_t cookie) {
  std::optional<Node> dir = node(dir_ino);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  if (cookie < 0) return std::nullopt;
  for (int pass = 0; pass < 2; ++pass) {
    // Names of layers may need an inode number: then once more, exclusively.
    std::shared_lock shared(state_mutex_, std::defer_lock);
    std::unique_lock exclusive(state_mutex_, std::defer_lock);
    if (pass == 0) shared.lock();
    else exclusive.lock();
    auto make = [&](const std::string& name, const Node& node, int64_t next) -> std::optional<DirEntry> {
      std::optional<uint64_t> ino = names_.known_ino(node);
      if (!ino && pass == 0) return std::nullopt;
      return DirEntry{name, ino ? *ino : names_.ino(node), is_directory(node.kind), next};
    };
    bool need_exclusive = false;
    std::optional<DirEntry> found;
    if (cookie < kScratchCookieBase) {
      switch (dir->kind) {
        case NodeKind::root:
          for (int64_t i = cookie; i < int64_t(std::size(kRootChildren)) && !found; ++i) {
            const FixedFile& f = kRootChildren[i];
            Node node{f.kind};
            if (f.kind == NodeKind::zarr_dir && files_->zarr() && files_->zarr()->zero_d())
              found = DirEntry{f.name, kZarrChunkBase, false, i + 1};  // a 0-d array's one chunk: the file c
            else if (!names_.hidden(NodeKind::root, f.name) && exists(node))
              found = DirEntry{f.name, f.ino, is_directory(f.kind), i + 1};
          }
          break;
        case NodeKind::chunks_dir:
        case NodeKind::raw_dir: {
          const bool raw = dir->kind == NodeKind::raw_dir;
          const int64_t count = raw ? files_->nchunks() : overlay_.count();
          for (int64_t i = cookie; i < count && !found; ++i) {
            Node node{raw ? NodeKind::raw_chunk : NodeKind::chunk, i};
            const std::string name = file_name_of(node);
            if (!names_.hidden(dir->kind, name)) found = DirEntry{name, *computed_inode(node), false, i + 1};
          }
          break;
        }
        case NodeKind::zarr_dir:
        case NodeKind::zarr2_dir:
          return zarr_entry(*dir, cookie);
        default: {
          auto names = listing(dir->kind);
          if (cookie < int64_t(names.size())) {
            found = make(names[size_t(cookie)].first, names[size_t(cookie)].second, cookie + 1);
            need_exclusive = !found;
          }
          break;
        }
      }
      if (found) return found;
      if (need_exclusive) continue;
    }
    // Scratch files, in name order.
    int64_t k = 0;
    for (const auto& [name, ino] : names_.names_in(dir->kind)) {
      if (!names_.scratch(ino)) continue;
      if (kScratchCookieBase + k >= cookie) return DirEntry{name, ino, false, kScratchCookieBase + k + 1};
      ++k;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string Volume::path_of(uint64_t ino) const {
  std::optional<Node> n = node(ino);
  if (!n) return "inode " + std::to_string(ino);
  if (is_zarr_kind(n->kind)) {  // named from the array's grid, which a commit may replace
    std::shared_lock lock(state_mutex_);
    return path_of_node(*n);
  }
  return path_of_node(*n);
}

void Volume::remember(uint64_t ino) { kernel_.remember(ino); }

void Volume::forget(uint64_t ino, uint64_t count) {
  if (!kernel_.forget(ino, count)) return;
  // A renamed file's inode kept answering as the file it was renamed over
  // (an alias in the name table); once the kernel lets go of it, nobody can ask again.
  if (ino < kNamedBase || ino >= kChunkBase) return;
  std::unique_lock lock(state_mutex_);
  const Node* alias = names_.named(ino);
  if (alias && computed_inode(*alias)) names_.erase_named(ino);
}

// --- stat ---

int64_t Volume::size_of(const Node& node, uint64_t ino) const {
  auto layer_draft = [&]() -> const Draft* { return names_.draft(ino); };
  if (is_zarr_kind(node.kind)) return zarr_size(node);
  switch (node.kind) {
    case NodeKind::frame_json: return int64_t(files_->frame_json()->size());
    case NodeKind::index_tsv: return files_->index_tsv().size();
    case NodeKind::data: return overlay_.data_size(*files_);
    case NodeKind::array_npy: return array_npy_size();
    case NodeKind::items_jsonl: return files_->has_items() ? files_->items().size() : 0;
    case NodeKind::cache_stats: return int64_t(stats_text(cache_.stats()).size());
    case NodeKind::usermeta: return files_->usermeta() ? files_->usermeta()->size : 0;
    case NodeKind::preview_png: return files_->preview_size();  // never draws (ls -l stays instant)
    case NodeKind::chunk:
      if (overlay_.holds(node.index)) return overlay_.chunk_size(*files_, node.index);
      return files_->chunk_size_for_stat(node.index);
    case NodeKind::raw_chunk:
      if (const Draft* d = layer_draft()) return int64_t(d->content.size());
      return files_->raw_size_for_stat(node.index);
    case NodeKind::meta:
    case NodeKind::vlmeta:
    case NodeKind::attrs: {
      if (const Draft* d = layer_draft()) return int64_t(d->content.size());
      const LayerFile* layer =
          node.kind == NodeKind::meta ? files_->find_meta(node.name) : files_->find_vlmeta(node.name);
      if (!layer) return 0;
      return node.kind == NodeKind::attrs ? int64_t(layer->attrs_text.value_or("").size()) : layer->size;
    }
    case NodeKind::scratch: {
      const Scratch* s = names_.scratch(ino);
      return s ? int64_t(s->content.size()) : 0;
    }
    default: return 0;
  }
}

struct stat Volume::attributes(uint64_t ino) {
  std::optional<Node> n = node(ino);
  if (!n) throw FsError{ENOENT};
  struct stat st {};
  st.st_ino = ino;
  NodeAccess access;
  {
    std::shared_lock lock(state_mutex_);
    access = node_access(n->kind, frame_access_, options_.writable, options_.access);
    // array.npy takes writes only as a b2nd/caterva array (not a tensor's).
    if (n->kind == NodeKind::array_npy && !files_->array_layout() && !npy_replacement_) access.mode &= mode_t(~0222);
  }
  st.st_uid = access.uid;
  st.st_gid = access.gid;
  st.st_mode = (is_directory(n->kind) ? S_IFDIR : S_IFREG) | access.mode;
  if (is_directory(n->kind)) {
    st.st_nlink = n->kind == NodeKind::root ? 7 : 2;  // root: ".", its name, 5 subdirectories' ".."
    // glibc's opendir sizes its getdents buffer by st_blksize, and the kernel
    // allocates that much for every FUSE readdir, the last empty one too: 1 MiB
    // for a directory of a dozen names made a store's cold listing spend most of
    // its time allocating and freeing pages. Only chunk listings can use big ones.
    st.st_blksize = 4096;
    if (n->kind == NodeKind::chunks_dir || n->kind == NodeKind::raw_dir) {
      std::shared_lock lock(state_mutex_);
      const int64_t entries = n->kind == NodeKind::raw_dir ? files_->nchunks() : overlay_.count();
      const auto wanted = int64_t(std::bit_ceil(uint64_t(std::clamp<int64_t>(entries, 1, int64_t(1) << 32)))) * 256;
      st.st_blksize = blksize_t(std::clamp<int64_t>(wanted, 4096, kPreferredIoSize));
    }
  } else {
    st.st_nlink = 1;
    std::shared_lock lock(state_mutex_);
    st.st_size = size_of(*n, ino);
    st.st_blksize = is_zarr_kind(n->kind) ? zarr_io_size(*n) : kPreferredIoSize;
  }
  st.st_blocks = (st.st_size + 511) / 512;
  int64_t mtime;
  {
    std::shared_lock lock(state_mutex_);
    mtime = mtime_ns_;
  }
  struct timespec t {};
  t.tv_sec = time_t(mtime / 1000000000);
  t.tv_nsec = long(mtime % 1000000000);
  st.st_atim = st.st_mtim = st.st_ctim = t;
  return st;
}

// --- reads ---

size_t Volume::read(uint64_t ino, int64_t offset, MutableByteSpan out) {
  OpenFile file;
  file.ino = ino;
  file.version = version_;
  ReadPieces pieces;
  read_pieces(ino, file, offset, out.size(), pieces);
  return pieces.copy_to(out);
}

void Volume::check_version(uint64_t ino, const OpenFile& file, const std::optional<Node>& node) const {
  const uint64_t now = version_;
  if (file.version == now) return;
  // Bytes made by this mount alone (the statistics, scratch files, a layer
  // being written) are not the frame's: they stay readable.
  if (node && (node->kind == NodeKind::cache_stats || node->kind == NodeKind::scratch)) return;
  if (names_.draft(ino)) return;
  if (stale_reported_.exchange(now) != now)
    spdlog::warn("{}: {} was opened before another program changed the frame: it reads EIO from now on (opened "
                 "again, it reads the new content)",
                 path_.string(), node ? path_of_node(*node) : "inode " + std::to_string(ino));
  throw FsError{EIO};
}

void Volume::read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) {
  std::optional<Node> n = node(ino);
  if (!n) {
    // Gone with another program's change (array.npy of a frame that is no longer an array).
    if (file.version != version_) {
      std::shared_lock lock(state_mutex_);
      check_version(ino, file, std::nullopt);
    }
    throw FsError{ENOENT};
  }
  if (is_directory(n->kind)) throw FsError{EISDIR};
  if (offset < 0) throw FsError{EINVAL};
  std::unique_lock<std::mutex> streaming;
  if (n->kind == NodeKind::array_npy) streaming = settle_array_read(offset, size);
  std::shared_lock lock(state_mutex_);
  // Under the lock a reload takes exclusively: no change is installed between the check and the read.
  check_version(ino, file, n);
  const bool draft = names_.draft(ino) != nullptr;
  if (n->kind == NodeKind::data && !draft) {
    const size_t before = out.size();
    overlay_.gather_data(*files_, offset, size, out);
    const int64_t end = offset + int64_t(out.size() - before);
    for (int64_t far = data_read_farthest_; end > far && !data_read_farthest_.compare_exchange_weak(far, end);) {
    }
    // Sequential: the stored bytes of the chunk after this read's last one
    // are loaded meanwhile.
    if (data_read_end_.exchange(end) == offset && end > offset) {
      const int64_t next = overlay_.chunk_at(*files_, end - 1) + 1;
      // Over a network, only a reader past the middle of its chunk: two reads
      // in a row are also what the kernel's readahead makes of one small
      // read, which should fetch a few blocks, not the next whole chunk.
      const bool ready = !files_->frame().source().remote() || next >= files_->nchunks() ||
                         (end - overlay_.offset(*files_, next - 1)) * 2 >=
                             overlay_.offset(*files_, next) - overlay_.offset(*files_, next - 1);
      if (ready && next < files_->nchunks() && !overlay_.holds(next)) prefetcher_.request(next);
    }
    return;
  }
  if (n->kind == NodeKind::chunk && !draft) return overlay_.gather_chunk(*files_, n->index, offset, size, out);
  if (is_zarr_kind(n->kind)) return zarr_gather(*n, offset, size, out);
  // Sized by the file, so a big read of a small file allocates little; the
  // statistics text is made anew by each read, so its size is not known.
  const int64_t file_size = n->kind == NodeKind::cache_stats ? offset + int64_t(size) : size_of(*n, ino);
  if (offset >= file_size) return;
  MutableByteSpan copy = out.add_copy(size_t(std::min<int64_t>(int64_t(size), file_size - offset)));
  out.trim_copy(read_locked(ino, *n, offset, copy));
}

void Volume::prefetch_chunk(int64_t n) {
  std::shared_lock lock(state_mutex_);  // a commit does not switch frames under it
  // The kernel's readahead may have asked for the chunk meanwhile: loading it
  // again after it was read and retired would only fill the cache.
  if (n >= files_->nchunks() || overlay_.holds(n) || overlay_.offset(*files_, n) < data_read_farthest_) return;
  const bool cached_before = cache_.holds(n);
  cache_.load(n);
  // A reader that went past the whole chunk while this load ran read it from an
  // entry of its own and retired it: this late one would stay in the cache unread.
  if (!cached_before && overlay_.offset(*files_, n) + overlay_.chunk_size(*files_, n) <= data_read_farthest_)
    cache_.invalidate(n);
}

size_t Volume::read_locked(uint64_t ino, const Node& node, int64_t offset, MutableByteSpan out) {
  if (const Draft* d = names_.draft(ino)) return copy_from(d->content, offset, out);
  switch (node.kind) {
    case NodeKind::frame_json: return copy_from(as_bytes(*files_->frame_json()), offset, out);
    case NodeKind::index_tsv: return files_->index_tsv().read(offset, out);
    case NodeKind::cache_stats: return copy_from(as_bytes(stats_text(cache_.stats())), offset, out);
    case NodeKind::data: return overlay_.read_data(*files_, offset, out);
    case NodeKind::array_npy: return read_array_locked(offset, out);
    case NodeKind::items_jsonl: return files_->has_items() ? files_->items().read(offset, out) : 0;
    case NodeKind::usermeta: {
      const LayerFile* layer = files_->usermeta();
      if (!layer) return 0;
      if (!layer->error.empty()) throw FormatError(layer->error);
      return copy_from(layer->content, offset, out);
    }
    case NodeKind::preview_png: {
      std::shared_ptr<const Bytes> png = files_->preview();
      return png ? copy_from(*png, offset, out) : 0;
    }
    case NodeKind::chunk: return overlay_.read_chunk(*files_, node.index, offset, out);
    case NodeKind::raw_chunk: return files_->read_raw(node.index, offset, out);
    case NodeKind::meta: {
      const LayerFile* layer = files_->find_meta(node.name);
      return layer ? copy_from(layer->content, offset, out) : 0;
    }
    case NodeKind::vlmeta:
    case NodeKind::attrs: {
      const LayerFile* layer = files_->find_vlmeta(node.name);
      if (!layer) return 0;
      if (node.kind == NodeKind::attrs) return copy_from(as_bytes(layer->attrs_text.value_or("")), offset, out);
      if (!layer->error.empty()) throw FormatError(layer->error);
      return copy_from(layer->content, offset, out);
    }
    case NodeKind::scratch: {
      const Scratch* s = names_.scratch(ino);
      return s ? copy_from(s->content, offset, out) : 0;
    }
    default: return 0;
  }
}

}  // namespace blosc2fs
