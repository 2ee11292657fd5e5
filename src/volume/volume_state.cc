// VolumeState: the questions the tree's names, sizes and paths ask of the
// frame shown and what is written on top of it; the frame on disk.
#include "volume_state.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include <spdlog/spdlog.h>

#include "error.h"
#include "frame_editor.h"
#include "frame_lock.h"
#include "fs_error.h"
#include "npy_replacement.h"
#include "zarr_view.h"

namespace blosc2fs {

VolumeState::VolumeState(const std::filesystem::path& frame_path, VolumeOptions volume_options)
    : path(frame_path), options(std::move(volume_options)), cache(loader, options.cache_budget, options.buffer_pool),
      overlay(cache) {
  if (options.frame_source) options.writable = false;
}

VolumeState::~VolumeState() = default;

std::string VolumeState::stats_text(const ChunkCacheStats& stats) const {
  std::string text = stats.text();
  if (options.more_stats) text += " " + options.more_stats();
  return text + "\n";
}

uint64_t VolumeState::new_version() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

FrameAccess VolumeState::read_access() const {
  if (options.fixed_access) return *options.fixed_access;
  if (!options.frame_source) return read_frame_access(path);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw_errno(path.string() + ": stat");
  return frame_access_of_file(st);
}

std::string VolumeState::path_of_node(const Node& node) const {
  if (ZarrNames::is_kind(node.kind)) return ZarrNames(files->zarr()).path(node);
  if (node.kind == NodeKind::scratch && node.dir == NodeKind::zarr_dir) return node.name;  // c/I/NAME already
  if (node.kind == NodeKind::root) return "/";
  return path_in(directory_of(node), file_name_of(node));
}

bool VolumeState::exists(const Node& node) const {
  auto created_draft = [&](NodeKind dir, const std::string& name) REQUIRES_SHARED(mutex) {
    return names.created(dir, name);
  };
  if (ZarrNames::is_kind(node.kind)) return ZarrNames(files->zarr()).exists(node);
  switch (node.kind) {
    case NodeKind::array_npy: return files->has_array() || npy_replacement;
    case NodeKind::items_jsonl: return files->has_items();
    case NodeKind::usermeta: return files->usermeta() != nullptr;
    case NodeKind::preview_png: return files->has_preview();
    case NodeKind::chunk: return node.index >= 0 && node.index < overlay.count();
    case NodeKind::raw_chunk: {
      if (node.index >= 0 && node.index < files->nchunks()) return true;
      const Draft* d = node.index >= 0 ? names.draft(kRawBase + uint64_t(node.index)) : nullptr;
      return d && d->created;
    }
    case NodeKind::meta: return files->find_meta(node.name) || created_draft(NodeKind::meta_dir, node.name);
    case NodeKind::vlmeta: return files->find_vlmeta(node.name) || created_draft(NodeKind::vlmeta_dir, node.name);
    case NodeKind::attrs: {
      const LayerFile* layer = files->find_vlmeta(node.name);
      return (layer && layer->attrs_text) || created_draft(NodeKind::attrs_dir, node.name);
    }
    case NodeKind::scratch: return names.scratch_named(node.dir, node.name).has_value();
    default: return true;
  }
}

std::optional<Node> VolumeState::lookup_node(NodeKind dir, std::string_view name_view) const {
  const std::string name(name_view);
  if (std::optional<uint64_t> scratch = names.scratch_named(dir, name)) return names.scratch(*scratch)->node;
  if (names.hidden(dir, name)) return std::nullopt;
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

std::vector<std::pair<std::string, Node>> VolumeState::listing(NodeKind dir) const {
  std::vector<std::pair<std::string, Node>> out;
  auto add = [&](const std::string& name, Node node) REQUIRES_SHARED(mutex) {
    if (!names.hidden(dir, name) && exists(node)) out.emplace_back(name, std::move(node));
  };
  auto add_created = [&](NodeKind kind) REQUIRES_SHARED(mutex) {
    for (const auto& [name, ino] : names.names_in(dir)) {
      const Draft* d = names.draft(ino);
      if (d && d->created) add(name, Node{kind, 0, name});
    }
  };
  switch (dir) {
    case NodeKind::meta_dir:
      for (const LayerFile& f : files->metas()) add(f.name, Node{NodeKind::meta, 0, f.name});
      add_created(NodeKind::meta);
      break;
    case NodeKind::vlmeta_dir:
      for (const LayerFile& f : files->vlmetas()) add(f.name, Node{NodeKind::vlmeta, 0, f.name});
      add_created(NodeKind::vlmeta);
      break;
    case NodeKind::attrs_dir:
      for (const LayerFile& f : files->vlmetas())
        if (f.attrs_text) add(f.name, Node{NodeKind::attrs, 0, f.name});
      add_created(NodeKind::attrs);
      break;
    default:
      break;
  }
  return out;
}

int64_t VolumeState::size_of(const Node& node, uint64_t ino) const {
  auto layer_draft = [&]() REQUIRES_SHARED(mutex) -> const Draft* { return names.draft(ino); };
  if (ZarrNames::is_kind(node.kind)) return ZarrNames(files->zarr()).size(node);
  switch (node.kind) {
    case NodeKind::frame_json: return int64_t(files->frame_json()->size());
    case NodeKind::index_tsv: return files->index_tsv().size();
    case NodeKind::data: return overlay.data_size(*files);
    case NodeKind::array_npy: return array_npy_size();
    case NodeKind::items_jsonl: return files->has_items() ? files->items().size() : 0;
    case NodeKind::cache_stats: return int64_t(stats_text(cache.stats()).size());
    case NodeKind::usermeta: return files->usermeta() ? files->usermeta()->size : 0;
    case NodeKind::preview_png: return files->preview_size();  // never draws (ls -l stays instant)
    case NodeKind::chunk:
      if (overlay.holds(node.index)) return overlay.chunk_size(*files, node.index);
      return files->chunk_size_for_stat(node.index);
    case NodeKind::raw_chunk:
      if (const Draft* d = layer_draft()) return int64_t(d->content.size());
      return files->raw_size_for_stat(node.index);
    case NodeKind::meta:
    case NodeKind::vlmeta:
    case NodeKind::attrs: {
      if (const Draft* d = layer_draft()) return int64_t(d->content.size());
      const LayerFile* layer =
          node.kind == NodeKind::meta ? files->find_meta(node.name) : files->find_vlmeta(node.name);
      if (!layer) return 0;
      return node.kind == NodeKind::attrs ? int64_t(layer->attrs_text.value_or("").size()) : layer->size;
    }
    case NodeKind::scratch: {
      const Scratch* s = names.scratch(ino);
      return s ? int64_t(s->content.size()) : 0;
    }
    default: return 0;
  }
}

bool VolumeState::in_frame(const Node& node) const {
  switch (node.kind) {
    case NodeKind::meta: return files->find_meta(node.name) != nullptr;
    case NodeKind::vlmeta: return files->find_vlmeta(node.name) != nullptr;
    case NodeKind::attrs: {
      const LayerFile* layer = files->find_vlmeta(node.name);
      return layer && layer->attrs_text;
    }
    case NodeKind::raw_chunk: return node.index < files->nchunks();
    default: return true;
  }
}

// The whole current content of a file (what a rename onto a scratch name keeps).
Bytes VolumeState::current_content(uint64_t ino, const Node& node) const {
  if (const Draft* d = names.draft(ino)) return d->content;
  switch (node.kind) {
    case NodeKind::meta: {
      const LayerFile* layer = files->find_meta(node.name);
      return layer ? layer->content : Bytes{};
    }
    case NodeKind::vlmeta:
    case NodeKind::attrs: {
      const LayerFile* layer = files->find_vlmeta(node.name);
      if (!layer) return {};
      if (node.kind == NodeKind::vlmeta) {
        if (!layer->error.empty()) throw FormatError(layer->error);
        return layer->content;
      }
      const std::string& text = layer->attrs_text.value_or("");
      return Bytes(text.begin(), text.end());
    }
    case NodeKind::raw_chunk:
      return node.index < files->nchunks() ? files->frame().read_raw_chunk(node.index) : Bytes{};
    case NodeKind::scratch: {
      const Scratch* s = names.scratch(ino);
      return s ? s->content : Bytes{};
    }
    case NodeKind::chunk: {
      Bytes out(size_t(overlay.chunk_size(*files, node.index)));
      out.resize(overlay.read_chunk(*files, node.index, 0, out));
      return out;
    }
    case NodeKind::data: {
      const int64_t size = overlay.data_size(*files);
      if (size > kMaxHeldFile) throw FsError{EFBIG};
      Bytes out(static_cast<size_t>(size));
      out.resize(overlay.read_data(*files, 0, out));
      return out;
    }
    default: throw FsError{EACCES};
  }
}

void VolumeState::check_new_layer(NodeKind dir, const std::string& name) const {
  const std::string path = path_in(dir, name);
  if (const std::optional<LayerNameRefusal> refusal = refuse_layer_name(name)) {
    spdlog::warn("{}: cannot create: {}", path, refusal->why);
    throw FsError{refusal->error};
  }
  std::set<std::string> layer_names;
  for (const Vlmetalayer& layer : files->frame().vlmetalayers()) layer_names.insert(layer.name);
  for (NodeKind d : {NodeKind::vlmeta_dir, NodeKind::attrs_dir})
    for (const auto& [name, ino] : names.names_in(d)) {
      const Draft* draft = names.draft(ino);
      if (draft && draft->created) layer_names.insert(name);
    }
  if (!layer_names.count(name) && layer_names.size() >= size_t(kMaxMetalayers)) {
    spdlog::warn("{}: cannot create: the frame already has {} vlmetalayers, c-blosc2's limit", path, kMaxMetalayers);
    throw FsError{ENOSPC};
  }
}

FrameStamp VolumeState::read_disk_stamp() const {
  if (options.frame_source) return {};  // nothing on disk of its own to watch
  std::error_code ec;
  return read_frame_stamp(std::filesystem::is_directory(path, ec) ? path / "chunks.b2frame" : path);
}

std::pair<std::shared_ptr<const Frame>, FrameStamp> VolumeState::open_committed_frame() const {
  if (options.frame_source) return {options.frame_source(), FrameStamp{}};
  // Under c-blosc2's lock when the frame has one, so a cooperating writer is
  // never seen half-way.
  std::error_code ec;
  LockSidecar sidecar(LockSidecar::path_for(path, std::filesystem::is_directory(path, ec)));
  try {
    sidecar.open(false);
  } catch (const IoError&) {  // unreadable sidecar: read without it
  }
  SidecarLockGuard guard(sidecar, SidecarLockGuard::Mode::shared);
  FrameStamp stamp = read_disk_stamp();
  std::shared_ptr<const Frame> frame = Frame::open(path);
  return {std::move(frame), stamp};
}

ChunkOverlay::Limits VolumeState::overlay_limits(const FrameFiles& files) const {
  constexpr int64_t kLargestChunk = int64_t(INT32_MAX) - 64;  // what the editor accepts
  const int32_t chunksize = files.frame().header().chunksize;
  const bool array = files.array_layout() != nullptr;
  if (chunksize > 0) return {chunksize, chunksize, array};
  int64_t grow_to = 0;
  if (chunksize == 0) grow_to = files.frame().largest_chunk_nbytes();  // variable chunks: up to the largest there is
  if (grow_to <= 0) grow_to = std::clamp<int64_t>(options.preferred_chunksize, 1, kLargestChunk);
  return {kLargestChunk, grow_to, array};
}

void VolumeState::note_inode(KernelNotes& notes, uint64_t ino) {
  if (kernel.changed(ino) || ino <= kRootIno + std::size(kRootChildren)) notes.inodes.push_back(ino);
}

void VolumeState::note_entry(KernelNotes& notes, NodeKind dir, const std::string& name) {
  notes.entries.emplace_back(directory_inode(dir), name);
}

bool VolumeState::array_creatable() const {
  if (!options.writable || files->array_layout()) return false;
  const Frame& frame = *files->frame_ptr();
  return frame.nchunks() == 0 && frame.metalayers().empty() && overlay.clean() && overlay.count() == 0;
}

int64_t VolumeState::array_npy_size() const {
  return npy_replacement ? npy_replacement->size : files->array_size();
}

bool VolumeState::overlay_batch_due() const {
  const uint64_t held = overlay.materialized_bytes();
  const uint64_t limit =
      std::min(options.batch_bytes, std::max(options.cache_budget / 2, options.batch_min_bytes));
  return (overlay.materialized_chunks() > options.batch_chunks && held >= options.batch_min_bytes) ||
         held >= limit;
}

}  // namespace blosc2fs
