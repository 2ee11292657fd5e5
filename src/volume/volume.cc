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

Volume::Volume(const std::filesystem::path& frame_path, VolumeOptions options)
    : state_(frame_path, std::move(options)),
      commits_(state_),
      npy_(state_, commits_),
      edits_(state_, commits_, npy_),
      zarr_(state_, commits_, edits_),
      watch_(state_, commits_) {
  commits_.load();
  if (state_.options.inodes) {
    state_.names.restore(*state_.options.inodes);
    state_.kernel.seed(std::move(state_.options.inodes->lookups));
    state_.options.inodes.reset();
  }
}

Volume::~Volume() = default;

bool Volume::closable() const {
  ReaderLock lock(state_.mutex);
  return state_.names.only_layer_names() && state_.overlay.clean() && !state_.npy_replacement;
}

InodeMemory Volume::inode_memory() const {
  InodeMemory memory;
  {
    ReaderLock lock(state_.mutex);
    memory = state_.names.layers();
  }
  memory.lookups = state_.kernel.lookups();
  return memory;
}

bool Volume::underlying_statfs(struct statvfs& out) const {
  return !state_.options.fixed_access && ::statvfs(state_.path.c_str(), &out) == 0;
}

int64_t Volume::nchunks() const {
  ReaderLock lock(state_.mutex);
  return state_.overlay.count();
}

// --- names ---

std::optional<Node> Volume::node(uint64_t ino) const {
  ReaderLock lock(state_.mutex);
  if (std::optional<Node> node = computed_node(ino)) {
    if (state_.exists(*node)) return node;
    return std::nullopt;
  }
  const Node* node = state_.names.named(ino);
  if (!node || !state_.exists(*node)) return std::nullopt;
  if (!computed_inode(*node)) {  // a name's inode: only while the name still has it
    if (state_.names.find(directory_of(*node), node->name) != ino) return std::nullopt;
  }
  return *node;
}

std::optional<uint64_t> Volume::lookup(uint64_t parent, std::string_view name) {
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  {
    ReaderLock lock(state_.mutex);
    // The Zarr view's chunk coordinates name directories by their position, and
    // "c" is a file in a 0-d array: looked up apart from the other names.
    if (ZarrNames::is_kind(dir->kind) || (dir->kind == NodeKind::root && name == "c" && state_.files->zarr() &&
                                    state_.files->zarr()->zero_d())) {
      if (std::optional<uint64_t> scratch = zarr_.scratch(*dir, name)) return scratch;
      std::optional<Node> child = ZarrNames(state_.files->zarr()).lookup(*dir, name);
      if (!child) return std::nullopt;
      return computed_inode(*child);
    }
    std::optional<Node> child = state_.lookup_node(dir->kind, name);
    if (!child) return std::nullopt;
    if (auto ino = state_.names.known_ino(*child)) return ino;
  }
  WriterLock lock(state_.mutex);
  std::optional<Node> child = state_.lookup_node(dir->kind, name);
  if (!child) return std::nullopt;
  return state_.names.ino(*child);
}

std::optional<DirEntry> Volume::entry(uint64_t dir_ino, int64_t cookie) {
  std::optional<Node> dir = node(dir_ino);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  if (cookie < 0) return std::nullopt;
  for (int pass = 0; pass < 2; ++pass) {
    // Names of layers may need an inode number: then once more, exclusively.
    bool need_exclusive = false;
    auto find = [&]() REQUIRES_SHARED(state_.mutex) -> std::optional<DirEntry> {
      auto make = [&](const std::string& name, const Node& node, int64_t next) REQUIRES_SHARED(state_.mutex)
          -> std::optional<DirEntry> {
        std::optional<uint64_t> ino = state_.names.known_ino(node);
        if (!ino && pass == 0) return std::nullopt;
        return DirEntry{name, ino ? *ino : state_.names.ino(node), is_directory(node.kind), next};
      };
      std::optional<DirEntry> found;
      if (cookie < kScratchCookieBase) {
        switch (dir->kind) {
          case NodeKind::root:
            for (int64_t i = cookie; i < int64_t(std::size(kRootChildren)) && !found; ++i) {
              const FixedFile& f = kRootChildren[i];
              Node node{f.kind};
              if (f.kind == NodeKind::zarr_dir && state_.files->zarr() && state_.files->zarr()->zero_d())
                found = DirEntry{f.name, kZarrChunkBase, false, i + 1};  // a 0-d array's one chunk: the file c
              else if (!state_.names.hidden(NodeKind::root, f.name) && state_.exists(node))
                found = DirEntry{f.name, f.ino, is_directory(f.kind), i + 1};
            }
            break;
          case NodeKind::chunks_dir:
          case NodeKind::raw_dir: {
            const bool raw = dir->kind == NodeKind::raw_dir;
            const int64_t count = raw ? state_.files->nchunks() : state_.overlay.count();
            for (int64_t i = cookie; i < count && !found; ++i) {
              Node node{raw ? NodeKind::raw_chunk : NodeKind::chunk, i};
              const std::string name = file_name_of(node);
              if (!state_.names.hidden(dir->kind, name)) found = DirEntry{name, *computed_inode(node), false, i + 1};
            }
            break;
          }
          case NodeKind::zarr_dir:
          case NodeKind::zarr2_dir:
            return ZarrNames(state_.files->zarr()).entry(*dir, cookie);
          default: {
            auto names = state_.listing(dir->kind);
            if (cookie < int64_t(names.size())) {
              found = make(names[size_t(cookie)].first, names[size_t(cookie)].second, cookie + 1);
              need_exclusive = !found;
            }
            break;
          }
        }
        if (found) return found;
        if (need_exclusive) return std::nullopt;
      }
      // Scratch files, in name order.
      int64_t k = 0;
      for (const auto& [name, ino] : state_.names.names_in(dir->kind)) {
        if (!state_.names.scratch(ino)) continue;
        if (kScratchCookieBase + k >= cookie) return DirEntry{name, ino, false, kScratchCookieBase + k + 1};
        ++k;
      }
      return std::nullopt;
    };
    std::optional<DirEntry> found;
    if (pass == 0) {
      ReaderLock lock(state_.mutex);
      found = find();
    } else {
      WriterLock lock(state_.mutex);
      found = find();
    }
    if (!need_exclusive) return found;
  }
  return std::nullopt;
}

std::string Volume::path_of(uint64_t ino) const {
  std::optional<Node> n = node(ino);
  if (!n) return "inode " + std::to_string(ino);
  if (ZarrNames::is_kind(n->kind)) {  // named from the array's grid, which a commit may replace
    ReaderLock lock(state_.mutex);
    return state_.path_of_node(*n);
  }
  return state_.path_of_node(*n);
}

void Volume::remember(uint64_t ino) { state_.kernel.remember(ino); }

void Volume::forget(uint64_t ino, uint64_t count) {
  if (!state_.kernel.forget(ino, count)) return;
  // A renamed file's inode kept answering as the file it was renamed over
  // (an alias in the name table); once the kernel lets go of it, nobody can ask again.
  if (ino < kNamedBase || ino >= kChunkBase) return;
  WriterLock lock(state_.mutex);
  const Node* alias = state_.names.named(ino);
  if (alias && computed_inode(*alias)) state_.names.erase_named(ino);
}

// --- stat ---

struct stat Volume::attributes(uint64_t ino) {
  std::optional<Node> n = node(ino);
  if (!n) throw FsError{ENOENT};
  struct stat st {};
  st.st_ino = ino;
  NodeAccess access;
  {
    ReaderLock lock(state_.mutex);
    access = node_access(n->kind, state_.frame_access, state_.options.writable, state_.options.access);
    // array.npy takes writes only as a b2nd/caterva array (not a tensor's).
    if (n->kind == NodeKind::array_npy && !state_.files->array_layout() && !state_.npy_replacement) access.mode &= mode_t(~0222);
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
      ReaderLock lock(state_.mutex);
      const int64_t entries = n->kind == NodeKind::raw_dir ? state_.files->nchunks() : state_.overlay.count();
      const auto wanted = int64_t(std::bit_ceil(uint64_t(std::clamp<int64_t>(entries, 1, int64_t(1) << 32)))) * 256;
      st.st_blksize = blksize_t(std::clamp<int64_t>(wanted, 4096, kPreferredIoSize));
    }
  } else {
    st.st_nlink = 1;
    ReaderLock lock(state_.mutex);
    st.st_size = state_.size_of(*n, ino);
    st.st_blksize = ZarrNames::is_kind(n->kind) ? ZarrNames(state_.files->zarr()).io_size(*n) : kPreferredIoSize;
  }
  st.st_blocks = (st.st_size + 511) / 512;
  int64_t mtime;
  {
    ReaderLock lock(state_.mutex);
    mtime = state_.mtime_ns;
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
  file.version = state_.version;
  ReadPieces pieces;
  read_pieces(ino, file, offset, out.size(), pieces);
  return pieces.copy_to(out);
}

void Volume::check_version(uint64_t ino, const OpenFile& file, const std::optional<Node>& node) const {
  const uint64_t now = state_.version;
  if (file.version == now) return;
  // Bytes made by this mount alone (the statistics, scratch files, a layer
  // being written) are not the frame's: they stay readable.
  if (node && (node->kind == NodeKind::cache_stats || node->kind == NodeKind::scratch)) return;
  if (state_.names.draft(ino)) return;
  if (stale_reported_.exchange(now) != now)
    spdlog::warn("{}: {} was opened before another program changed the frame: it reads EIO from now on (opened "
                 "again, it reads the new content)",
                 state_.path.string(), node ? state_.path_of_node(*node) : "inode " + std::to_string(ino));
  throw FsError{EIO};
}

void Volume::read_pieces(uint64_t ino, const OpenFile& file, int64_t offset, size_t size, ReadPieces& out) {
  std::optional<Node> n = node(ino);
  if (!n) {
    // Gone with another program's change (array.npy of a frame that is no longer an array).
    if (file.version != state_.version) {
      ReaderLock lock(state_.mutex);
      check_version(ino, file, std::nullopt);
    }
    throw FsError{ENOENT};
  }
  if (is_directory(n->kind)) throw FsError{EISDIR};
  if (offset < 0) throw FsError{EINVAL};
  UniqueMutexLock streaming(commits_.mutex(), std::defer_lock);
  if (n->kind == NodeKind::array_npy) streaming = npy_.settle_read(offset, size);
  ReaderLock lock(state_.mutex);
  // Under the lock a reload takes exclusively: no change is installed between the check and the read.
  check_version(ino, file, n);
  const bool draft = state_.names.draft(ino) != nullptr;
  if (n->kind == NodeKind::data && !draft) {
    const size_t before = out.size();
    state_.overlay.gather_data(*state_.files, offset, size, out);
    const int64_t end = offset + int64_t(out.size() - before);
    for (int64_t far = data_read_farthest_; end > far && !data_read_farthest_.compare_exchange_weak(far, end);) {
    }
    // Sequential: the stored bytes of the chunk after this read's last one
    // are loaded meanwhile.
    if (data_read_end_.exchange(end) == offset && end > offset) {
      const int64_t next = state_.overlay.chunk_at(*state_.files, end - 1) + 1;
      // Over a network, only a reader past the middle of its chunk: two reads
      // in a row are also what the kernel's readahead makes of one small
      // read, which should fetch a few blocks, not the next whole chunk.
      const bool ready = !state_.files->frame().source().remote() || next >= state_.files->nchunks() ||
                         (end - state_.overlay.offset(*state_.files, next - 1)) * 2 >=
                             state_.overlay.offset(*state_.files, next) - state_.overlay.offset(*state_.files, next - 1);
      if (ready && next < state_.files->nchunks() && !state_.overlay.holds(next)) prefetcher_.request(next);
    }
    return;
  }
  if (n->kind == NodeKind::chunk && !draft) return state_.overlay.gather_chunk(*state_.files, n->index, offset, size, out);
  if (n->kind == NodeKind::array_npy && !draft && npy_.gather_views(offset, size, out)) return;
  if (ZarrNames::is_kind(n->kind)) return zarr_.gather(*n, offset, size, out);
  // Sized by the file, so a big read of a small file allocates little; the
  // statistics text is made anew by each read, so its size is not known.
  const int64_t file_size = n->kind == NodeKind::cache_stats ? offset + int64_t(size) : state_.size_of(*n, ino);
  if (offset >= file_size) return;
  MutableByteSpan copy = out.add_copy(size_t(std::min<int64_t>(int64_t(size), file_size - offset)));
  out.trim_copy(read_locked(ino, *n, offset, copy));
}

void Volume::prefetch_chunk(int64_t n) {
  ReaderLock lock(state_.mutex);  // a commit does not switch frames under it
  // The kernel's readahead may have asked for the chunk meanwhile: loading it
  // again after it was read and retired would only fill the cache.
  if (n >= state_.files->nchunks() || state_.overlay.holds(n) || state_.overlay.offset(*state_.files, n) < data_read_farthest_) return;
  const bool cached_before = state_.cache.holds(n);
  state_.cache.load(n);
  // A reader that went past the whole chunk while this load ran read it from an
  // entry of its own and retired it: this late one would stay in the cache unread.
  if (!cached_before && state_.overlay.offset(*state_.files, n) + state_.overlay.chunk_size(*state_.files, n) <= data_read_farthest_)
    state_.cache.invalidate(n);
}

size_t Volume::read_locked(uint64_t ino, const Node& node, int64_t offset, MutableByteSpan out) {
  if (const Draft* d = state_.names.draft(ino)) return copy_from(d->content, offset, out);
  switch (node.kind) {
    case NodeKind::frame_json: return copy_from(as_bytes(*state_.files->frame_json()), offset, out);
    case NodeKind::index_tsv: return state_.files->index_tsv().read(offset, out);
    case NodeKind::cache_stats: return copy_from(as_bytes(state_.stats_text(state_.cache.stats())), offset, out);
    case NodeKind::data: return state_.overlay.read_data(*state_.files, offset, out);
    case NodeKind::array_npy: return npy_.read_locked(offset, out);
    case NodeKind::items_jsonl: return state_.files->has_items() ? state_.files->items().read(offset, out) : 0;
    case NodeKind::usermeta: {
      const LayerFile* layer = state_.files->usermeta();
      if (!layer) return 0;
      if (!layer->error.empty()) throw FormatError(layer->error);
      return copy_from(layer->content, offset, out);
    }
    case NodeKind::preview_png: {
      std::shared_ptr<const Bytes> png = state_.files->preview();
      return png ? copy_from(*png, offset, out) : 0;
    }
    case NodeKind::chunk: return state_.overlay.read_chunk(*state_.files, node.index, offset, out);
    case NodeKind::raw_chunk: return state_.files->read_raw(node.index, offset, out);
    case NodeKind::meta: {
      const LayerFile* layer = state_.files->find_meta(node.name);
      return layer ? copy_from(layer->content, offset, out) : 0;
    }
    case NodeKind::vlmeta:
    case NodeKind::attrs: {
      const LayerFile* layer = state_.files->find_vlmeta(node.name);
      if (!layer) return 0;
      if (node.kind == NodeKind::attrs) return copy_from(as_bytes(layer->attrs_text.value_or("")), offset, out);
      if (!layer->error.empty()) throw FormatError(layer->error);
      return copy_from(layer->content, offset, out);
    }
    case NodeKind::scratch: {
      const Scratch* s = state_.names.scratch(ino);
      return s ? copy_from(s->content, offset, out) : 0;
    }
    default: return 0;
  }
}

}  // namespace blosc2fs
