// Volume: opening, writing, truncating, creating and removing files. Commits
// themselves are in volume_commit.cc, renames in volume_rename.cc.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "codec_registry.h"
#include "dynamic_plugins.h"
#include "frame.h"
#include "fs_error.h"
#include "npy_replacement.h"
#include "volume.h"

namespace blosc2fs {

namespace {

// Files held whole in memory (layers being written, scratch files) stay below this.
constexpr int64_t kMaxHeldFile = int64_t(1) << 30;


// Files whose writes are staged in the chunk overlay.
bool chunk_file(NodeKind kind) {
  return kind == NodeKind::chunk || kind == NodeKind::data || kind == NodeKind::array_npy;
}

}  // namespace

// --- helpers (state lock held as volume.h says) ---

bool Volume::in_frame(const Node& node) const {
  switch (node.kind) {
    case NodeKind::meta: return files_->find_meta(node.name) != nullptr;
    case NodeKind::vlmeta: return files_->find_vlmeta(node.name) != nullptr;
    case NodeKind::attrs: {
      const LayerFile* layer = files_->find_vlmeta(node.name);
      return layer && layer->attrs_text;
    }
    case NodeKind::raw_chunk: return node.index < files_->nchunks();
    default: return true;
  }
}

Draft& Volume::draft_for(uint64_t ino, const Node& node) {
  if (Draft* d = names_.draft(ino)) return *d;
  Draft d;
  d.created = !in_frame(node);
  if (!d.created) d.content = current_content(ino, node);
  return names_.put_draft(ino, std::move(d));
}

// The whole current content of a file (what a rename onto a scratch name keeps).
Bytes Volume::current_content(uint64_t ino, const Node& node) const {
  if (const Draft* d = names_.draft(ino)) return d->content;
  switch (node.kind) {
    case NodeKind::meta: {
      const LayerFile* layer = files_->find_meta(node.name);
      return layer ? layer->content : Bytes{};
    }
    case NodeKind::vlmeta:
    case NodeKind::attrs: {
      const LayerFile* layer = files_->find_vlmeta(node.name);
      if (!layer) return {};
      if (node.kind == NodeKind::vlmeta) {
        if (!layer->error.empty()) throw FormatError(layer->error);
        return layer->content;
      }
      const std::string& text = layer->attrs_text.value_or("");
      return Bytes(text.begin(), text.end());
    }
    case NodeKind::raw_chunk:
      return node.index < files_->nchunks() ? files_->frame().read_raw_chunk(node.index) : Bytes{};
    case NodeKind::scratch: {
      const Scratch* s = names_.scratch(ino);
      return s ? s->content : Bytes{};
    }
    case NodeKind::chunk: {
      Bytes out(size_t(overlay_.chunk_size(*files_, node.index)));
      out.resize(overlay_.read_chunk(*files_, node.index, 0, out));
      return out;
    }
    case NodeKind::data: {
      const int64_t size = overlay_.data_size(*files_);
      if (size > kMaxHeldFile) throw FsError{EFBIG};
      Bytes out(static_cast<size_t>(size));
      out.resize(overlay_.read_data(*files_, 0, out));
      return out;
    }
    default: throw FsError{EACCES};
  }
}

void Volume::check_new_layer(NodeKind dir, const std::string& name) const {
  const std::string path = path_in(dir, name);
  if (name.size() > size_t(kMaxMetalayerNameLen)) {
    spdlog::warn("{}: cannot create: vlmetalayer names are at most {} bytes", path, kMaxMetalayerNameLen);
    throw FsError{ENAMETOOLONG};
  }
  std::set<std::string> names;
  for (const Vlmetalayer& layer : files_->frame().vlmetalayers()) names.insert(layer.name);
  for (NodeKind d : {NodeKind::vlmeta_dir, NodeKind::attrs_dir})
    for (const auto& [name, ino] : names_.names_in(d)) {
      const Draft* draft = names_.draft(ino);
      if (draft && draft->created) names.insert(name);
    }
  if (!names.count(name) && names.size() >= size_t(kMaxMetalayers)) {
    spdlog::warn("{}: cannot create: the frame already has {} vlmetalayers, c-blosc2's limit", path, kMaxMetalayers);
    throw FsError{ENOSPC};
  }
}

// --- open, read-write ---

std::unique_ptr<OpenFile> Volume::open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                       KernelNotes& notes) {
  remove_released_trees();
  std::optional<Node> n = node(ino);
  if (!n) throw FsError{ENOENT};
  if (is_directory(n->kind)) throw FsError{EISDIR};
  const bool write = (flags & O_ACCMODE) != O_RDONLY;
  const bool truncate = flags & O_TRUNC;
  if (write || truncate) {
    if (!options_.writable) throw FsError{EROFS};
    if (!is_writable_file(n->kind)) throw FsError{EACCES};
    if (n->kind == NodeKind::array_npy) {
      std::shared_lock lock(state_mutex_);
      if (!files_->array_layout()) throw FsError{EACCES};
    }
  }
  auto file = std::make_unique<OpenFile>();
  file->ino = ino;
  file->writable = write;
  if (truncate) {
    std::unique_lock<std::mutex> commit(commit_mutex_, std::defer_lock);
    if (chunk_file(n->kind)) commit.lock();
    std::unique_lock lock(state_mutex_);
    // An N-d array's data keeps its size (docs/operations.md): written anew whole.
    if (n->kind == NodeKind::data && overlay_.limits().fixed_count) file->rewrite_end = 0;
    else truncate_node(ino, *n, 0);
  }
  if (write) {
    std::unique_lock lock(state_mutex_);
    names_.add_writer(ino);
  }
  // Texts made anew at open: the kernel must not keep pages of an older one.
  const bool live_json = n->kind == NodeKind::frame_json && files_->frame_json_is_live();
  if (live_json) files_->renew_frame_json();
  // preview.png is drawn by its first open, not by stat: until then stat shows
  // the largest size the PNG can have. The open that draws it reads without the
  // page cache (the kernel's size is that bound) and has the kernel ask for the
  // attributes again, which then give the PNG's own size.
  bool drew_preview = false;
  if (n->kind == NodeKind::preview_png) {
    std::shared_lock lock(state_mutex_);  // the chunk cache serves this frame while drawing
    files_->preview(&drew_preview);
  }
  if (drew_preview) notes.attributes.push_back(ino);
  // Last, so that a failed open leaves no record.
  const bool older_open = note_open(*file);
  direct_io = n->kind == NodeKind::cache_stats || live_json || drew_preview || older_open || zarr_read_exactly(*n);
  keep_cache = cache_still_valid(ino) && !truncate && !drew_preview && !older_open;
  return file;
}

bool Volume::note_open(OpenFile& file) {
  file.version = version_;
  return kernel_.file_opened(file.ino, file.version);
}

bool Volume::cache_still_valid(uint64_t ino) { return kernel_.cache_still_valid(ino); }

void Volume::write_draft(uint64_t ino, const Node& node, int64_t offset, ByteSpan data) {
  Draft& d = draft_for(ino, node);
  const std::string path = path_of_node(node);
  if (d.poisoned) throw FsError{EINVAL};
  const int64_t end = offset + int64_t(data.size());
  if (end > kMaxHeldFile || (node.kind == NodeKind::raw_chunk && end > INT32_MAX)) throw FsError{EFBIG};
  if (node.kind == NodeKind::meta) {
    const LayerFile* layer = files_->find_meta(node.name);
    const int64_t length = layer ? layer->size : 0;
    if (end > length) {
      spdlog::warn("{}: write refused: the metalayer is {} bytes and keeps its length", path, length);
      throw FsError{EINVAL};
    }
  }
  const size_t old_size = d.content.size();
  const bool appending = offset == int64_t(old_size);
  Bytes saved;
  if (node.kind == NodeKind::attrs && !appending) saved = d.content;
  if (end > int64_t(old_size)) d.content.resize(size_t(end), 0);
  if (!data.empty()) std::memcpy(d.content.data() + offset, data.data(), data.size());
  if (node.kind == NodeKind::attrs) {
    bool ok;
    if (appending && d.json_checked == old_size) {
      ok = d.json.feed(as_text(data));
    } else {
      d.json.reset();
      ok = d.json.feed(as_text(d.content));
    }
    d.json_checked = d.content.size();
    if (!ok) {
      if (appending) d.content.resize(old_size);
      else d.content = std::move(saved);
      d.poisoned = true;
      spdlog::warn("{}: write refused: the text can no longer become valid JSON; nothing will be stored", path);
      throw FsError{EINVAL};
    }
  }
  d.dirty = true;
  ++d.version;
}

void Volume::write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  if (!file.writable) throw FsError{EBADF};
  if (offset < 0) throw FsError{EINVAL};
  file.wrote = true;
  std::optional<Node> n = node(file.ino);
  if (!n) throw FsError{ENOENT};
  switch (n->kind) {
    case NodeKind::scratch: {
      std::unique_lock lock(state_mutex_);
      Scratch* scratch = names_.scratch(file.ino);
      if (!scratch) throw FsError{ENOENT};
      Bytes& content = scratch->content;
      const int64_t end = offset + int64_t(data.size());
      if (end > kMaxHeldFile) throw FsError{EFBIG};
      if (end > int64_t(content.size())) content.resize(size_t(end), 0);
      if (!data.empty()) std::memcpy(content.data() + offset, data.data(), data.size());
      return;
    }
    case NodeKind::meta:
    case NodeKind::vlmeta:
    case NodeKind::attrs:
    case NodeKind::raw_chunk: {
      std::unique_lock lock(state_mutex_);
      try {
        write_draft(file.ino, *n, offset, data);
      } catch (const FsError&) {
        if (const Draft* d = names_.draft(file.ino)) file.outcome = d->outcome;
        throw;
      }
      file.outcome = names_.draft(file.ino)->outcome;
      return;
    }
    case NodeKind::chunk:
    case NodeKind::data:
      write_chunks(file, *n, offset, data, notes);
      if (file.rewrite_end >= offset) file.rewrite_end = std::max(file.rewrite_end, offset + int64_t(data.size()));
      return;
    case NodeKind::array_npy:
      return write_array(file, offset, data, notes);
    default:
      throw FsError{EACCES};
  }
}

void Volume::write_chunks(OpenFile& file, const Node& node, int64_t offset, ByteSpan data, KernelNotes& notes) {
  // Refused at the first write, before the old chunk is decoded (which needs the same plugin).
  if (const CodecInfo* codec = frame_codec(files_->frame().header()); codec && codec->runtime_plugin &&
                                                                      !codec->encodable()) {
    report_missing_plugin(*codec);
    throw IoError("the frame's codec " + std::string(codec->name) + " is loaded at run time and no plugin is loaded (" +
                      plugin_install_hint(*codec) + "), so chunks cannot be rewritten (metadata edits still work)",
                  EOPNOTSUPP);
  }
  std::lock_guard commit(commit_mutex_);
  std::optional<int64_t> filling;
  bool batch_due;
  {
    std::unique_lock lock(state_mutex_);
    if (!exists(node)) throw FsError{ENOENT};
    if (node.kind == NodeKind::chunk) {
      overlay_.write_chunk(*files_, node.index, offset, data);
      filling = node.index;
    } else {
      overlay_.write_data(*files_, offset, data);
      if (!data.empty()) filling = overlay_.chunk_at(*files_, offset + int64_t(data.size()) - 1);
    }
    file.outcome = overlay_outcome_;
    batch_due = overlay_batch_due();
  }
  // A long write commits what it has finished, so memory stays bounded.
  if (batch_due) {
    commit_chunks(filling, path_of_node(node), notes);
    maybe_compact(notes, false);
  }
}

void Volume::truncate_node(uint64_t ino, const Node& node, int64_t size) {
  if (size < 0) throw FsError{EINVAL};
  switch (node.kind) {
    case NodeKind::scratch: {
      if (size > kMaxHeldFile) throw FsError{EFBIG};
      Scratch* scratch = names_.scratch(ino);
      if (!scratch) throw FsError{ENOENT};
      scratch->content.resize(size_t(size), 0);
      return;
    }
    case NodeKind::meta:
    case NodeKind::vlmeta:
    case NodeKind::attrs:
    case NodeKind::raw_chunk: {
      if (size > kMaxHeldFile) throw FsError{EFBIG};
      if (node.kind == NodeKind::meta) {
        const LayerFile* layer = files_->find_meta(node.name);
        if (size > (layer ? layer->size : 0)) throw FsError{EINVAL};
      }
      Draft* d;
      if (size == 0) {  // starting over: nothing to load, nothing refused so far counts
        d = names_.draft(ino);
        if (!d) {
          Draft fresh;
          fresh.created = !in_frame(node);
          d = &names_.put_draft(ino, std::move(fresh));
        }
        d->poisoned = false;
      } else {
        d = &draft_for(ino, node);
      }
      d->content.resize(size_t(size), 0);
      d->json.reset();
      d->json_checked = size == 0 ? 0 : SIZE_MAX;
      d->dirty = true;
      ++d->version;
      return;
    }
    case NodeKind::chunk: return overlay_.resize_chunk(*files_, node.index, size);
    case NodeKind::data: return overlay_.resize_data(*files_, size);
    case NodeKind::array_npy: return truncate_array(size);
    default: throw FsError{EACCES};
  }
}

// --- close ---

void Volume::flush(OpenFile& file, KernelNotes& notes, bool fsync) {
  if (!file.writable) return;
  std::optional<Node> n = node(file.ino);
  // A new array.npy this file wrote is finished at close even when an fsync
  // since its last write found it not yet whole.
  bool replacing = false;
  if (n && n->kind == NodeKind::array_npy) {
    std::shared_lock lock(state_mutex_);
    replacing = npy_replacement_ && file.outcome == npy_replacement_->outcome;
  }
  const bool wrote = std::exchange(file.wrote, false) || fsync || replacing;
  try {
    if (!wrote) {
      // nothing of this handle's to commit (see OpenFile::wrote)
    } else if (n && (is_layer(n->kind) || n->kind == NodeKind::raw_chunk)) {
      commit_draft(file.ino, notes);
    } else if (n && chunk_file(n->kind)) {
      std::lock_guard commit(commit_mutex_);
      if (file.rewrite_end >= 0 && !fsync) refuse_partial_rewrite(file, notes);
      // fsync of a new array.npy still being written waits for it to be whole.
      if (n->kind == NodeKind::array_npy && replacing_array()) finish_array_replacement(notes, fsync);
      else commit_chunks(std::nullopt, path_of_node(*n), notes);
      maybe_compact(notes, false);
    }
  } catch (const FsError&) {
    file.outcome.reset();  // reported now, not again at the next flush
    throw;
  }
  // Edits of this file that another file's commit (or a batch) failed to store.
  if (file.outcome && file.outcome->error) {
    const int error = file.outcome->error;
    file.outcome.reset();
    throw FsError{error};
  }
}

void Volume::refuse_partial_rewrite(const OpenFile& file, KernelNotes& notes) {
  std::unique_lock lock(state_mutex_);
  const int64_t size = overlay_.data_size(*files_);
  if (file.rewrite_end >= size) return;
  spdlog::warn("data: an N-d array's data keeps its {} bytes: opened with O_TRUNC, it must be written whole from "
               "its start, and {} were; what was written is dropped",
               size, file.rewrite_end);
  const ChunkOverlay::Batch staged = overlay_.batch();
  overlay_outcome_->error = EINVAL;
  overlay_outcome_ = std::make_shared<CommitOutcome>();
  overlay_.discard();
  note_inode(notes, fixed_file(NodeKind::data)->ino);
  note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
  for (const auto* list : {&staged.replace, &staged.append})
    for (const auto& [n, held] : *list) note_inode(notes, kChunkBase + uint64_t(n));
  throw FsError{EINVAL};
}

void Volume::release(std::unique_ptr<OpenFile> file, KernelNotes& notes) {
  kernel_.file_released(file->ino, file->version);
  remove_released_trees();
  if (!file->writable) return;
  std::optional<Node> n = node(file->ino);
  bool last = false, chunk_writers = false;
  {
    std::unique_lock lock(state_mutex_);
    last = names_.remove_writer(file->ino);
    for (uint64_t ino : names_.written()) {
      std::optional<Node> other = computed_node(ino);
      chunk_writers |= other && chunk_file(other->kind);
    }
  }
  if (!last || !n) return;
  // The kernel flushes at every close; this stores what a flush could not
  // see (e.g. writes through a memory map). Failures are logged by the commit.
  try {
    if (is_layer(n->kind) || n->kind == NodeKind::raw_chunk) {
      commit_draft(file->ino, notes);
    } else if (chunk_file(n->kind)) {
      std::lock_guard commit(commit_mutex_);
      if (file->rewrite_end >= 0) refuse_partial_rewrite(*file, notes);
      if (n->kind == NodeKind::array_npy && replacing_array()) finish_array_replacement(notes);
      else if (!chunk_writers) commit_chunks(std::nullopt, path_of_node(*n), notes);
    }
  } catch (const FsError&) {
  }
  std::unique_lock lock(state_mutex_);
  if (const Draft* d = names_.draft(file->ino); d && !d->dirty && !names_.has_writers(file->ino))
    names_.erase_draft(file->ino);
}

struct stat Volume::setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) {
  std::optional<Node> n = node(ino);
  if (!n) throw FsError{ENOENT};
  if (size) {
    if (!options_.writable) throw FsError{EROFS};
    if (is_directory(n->kind)) throw FsError{EISDIR};
    if (!is_writable_file(n->kind)) throw FsError{EACCES};
    const bool chunky = chunk_file(n->kind);
    std::unique_lock<std::mutex> commit(commit_mutex_, std::defer_lock);
    if (chunky) commit.lock();
    bool commit_now;
    {
      std::unique_lock lock(state_mutex_);
      truncate_node(ino, *n, *size);
      if (file && file->writable) {
        file->wrote = true;
        if (chunky) file->outcome = overlay_outcome_;
        else if (const Draft* d = names_.draft(ino)) file->outcome = d->outcome;
      }
      // truncate(2) without an open file: nothing else will commit it.
      commit_now = !file && !names_.has_writers(ino) && n->kind != NodeKind::scratch;
    }
    if (commit_now) {
      if (n->kind == NodeKind::array_npy && replacing_array()) {
        finish_array_replacement(notes);
      } else if (chunky) {
        commit_chunks(std::nullopt, path_of_node(*n), notes);
        maybe_compact(notes, false);
      } else {
        commit_draft(ino, notes);
      }
    }
  }
  return attributes(ino);
}

// --- names ---

uint64_t Volume::create_real(NodeKind dir, const std::string& name) {
  switch (dir) {
    case NodeKind::vlmeta_dir:
    case NodeKind::attrs_dir: {
      check_new_layer(dir, name);
      names_.cancel_removal(dir, name);
      Node node{dir == NodeKind::vlmeta_dir ? NodeKind::vlmeta : NodeKind::attrs, 0, name};
      const uint64_t ino = names_.ino(node);
      Draft d;
      d.created = !in_frame(node);
      d.dirty = true;
      names_.put_draft(ino, std::move(d));
      return ino;
    }
    case NodeKind::meta_dir: {
      // Metalayers are fixed at the frame's creation: only one moved aside
      // by an editor (vim's rename to NAME~) may be written anew.
      if (!names_.hidden(dir, name)) throw FsError{EPERM};
      names_.cancel_removal(dir, name);
      Node node{NodeKind::meta, 0, name};
      const uint64_t ino = names_.ino(node);
      Draft d;
      d.dirty = true;
      names_.put_draft(ino, std::move(d));
      return ino;
    }
    case NodeKind::chunks_dir: {
      std::optional<int64_t> n = parse_chunk_file_name(name);
      if (!n) throw FsError{EPERM};
      if (*n == overlay_.count()) {
        overlay_.append_chunk();
      } else if (*n < overlay_.count() && names_.hidden(dir, name)) {
        names_.cancel_removal(dir, name);
        overlay_.resize_chunk(*files_, *n, 0);
      } else {
        throw FsError{EPERM};
      }
      return kChunkBase + uint64_t(*n);
    }
    case NodeKind::raw_dir: {
      std::optional<int64_t> n = parse_raw_file_name(name);
      if (!n) throw FsError{EPERM};
      const bool append = *n == files_->nchunks() && overlay_.count() == files_->nchunks();
      if (append && overlay_.limits().fixed_count) throw FsError{EPERM};
      if (!append && !(*n < files_->nchunks() && names_.hidden(dir, name))) throw FsError{EPERM};
      names_.cancel_removal(dir, name);
      const uint64_t ino = kRawBase + uint64_t(*n);
      Draft d;
      d.created = append;
      d.dirty = true;
      names_.put_draft(ino, std::move(d));
      return ino;
    }
    case NodeKind::root:
      if (name == "data" && names_.hidden(dir, name)) {
        names_.cancel_removal(dir, name);
        overlay_.resize_data(*files_, 0);
        return fixed_file(NodeKind::data)->ino;
      }
      if (name == "array.npy" && array_creatable()) {  // a new array (volume_npy.cc)
        truncate_array(0);
        return fixed_file(NodeKind::array_npy)->ino;
      }
      throw FsError{EPERM};
    default:
      throw FsError{EPERM};
  }
}

std::pair<uint64_t, std::unique_ptr<OpenFile>> Volume::create(uint64_t parent, std::string_view name_view, int flags,
                                                              KernelNotes& notes) {
  if (!options_.writable) throw FsError{EROFS};
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  const std::string name(name_view);
  if (!usable_file_name(name)) throw FsError{name.size() > 255 ? ENAMETOOLONG : EINVAL};
  std::lock_guard commit(commit_mutex_);
  uint64_t ino;
  {
    std::unique_lock lock(state_mutex_);
    if (dir->kind == NodeKind::zarr_dir || dir->kind == NodeKind::zarr2_dir) {
      ino = zarr_create(*dir, name, flags);
    } else if (std::optional<Node> existing = lookup_node(dir->kind, name)) {
      if (flags & O_EXCL) throw FsError{EEXIST};
      if (!is_writable_file(existing->kind)) throw FsError{EACCES};
      ino = names_.ino(*existing);
      if (flags & O_TRUNC) truncate_node(ino, *existing, 0);
    } else if (is_scratch_name(name) ||
               (dir->kind == NodeKind::root && files_->zarr() && is_zarr_scratch_name(name))) {
      ino = names_.add_scratch(dir->kind, name, {}, std::nullopt);
    } else {
      ino = create_real(dir->kind, name);
    }
  }
  auto file = std::make_unique<OpenFile>();
  file->ino = ino;
  file->writable = (flags & O_ACCMODE) != O_RDONLY;
  note_open(*file);
  {
    std::unique_lock lock(state_mutex_);
    if (file->writable) names_.add_writer(ino);
    if (const Draft* d = names_.draft(ino)) file->outcome = d->outcome;
  }
  kernel_.opened(ino);
  (void)notes;
  return {ino, std::move(file)};
}

void Volume::unlink(uint64_t parent, std::string_view name_view, KernelNotes& notes) {
  if (!options_.writable) throw FsError{EROFS};
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  const std::string name(name_view);
  std::lock_guard commit(commit_mutex_);
  std::optional<Node> target;
  std::optional<uint64_t> ino;
  {
    std::shared_lock lock(state_mutex_);
    if (zarr_owns(*dir, name)) {
      lock.unlock();
      return zarr_unlink(*dir, name, notes);
    }
    target = lookup_node(dir->kind, name);
    if (target) ino = names_.known_ino(*target);
  }
  if (!target) throw FsError{ENOENT};
  if (is_directory(target->kind)) throw FsError{EISDIR};
  if (target->kind == NodeKind::scratch) return unlink_scratch(*ino, notes);
  unlink_real(dir->kind, name, notes);
}

void Volume::unlink_scratch(uint64_t ino, KernelNotes& notes) {
  NodeKind dir;
  std::string name;
  std::optional<std::string> origin;
  bool layer_in_frame = false;
  {
    std::shared_lock lock(state_mutex_);
    const Scratch& s = *names_.scratch(ino);
    dir = s.node.dir;
    name = s.node.name;
    origin = s.origin;
    layer_in_frame = origin && files_->find_vlmeta(*origin);
  }
  const bool remove_layer = layer_in_frame && (dir == NodeKind::vlmeta_dir || dir == NodeKind::attrs_dir);
  auto forget_names = [&] {
    names_.drop(dir, name);
    if (origin) {
      names_.unhide(dir, *origin);
      if (remove_layer) names_.drop(dir, *origin);
    }
  };
  if (!remove_layer) {
    std::unique_lock lock(state_mutex_);
    forget_names();
    if (origin) note_inode(notes, directory_inode(dir));
    return;
  }
  // The layer moved onto this scratch name is thrown away with it.
  const std::string what = path_in(dir, *origin);
  run_commit(what, [&](FrameEditor& editor) { editor.remove_vlmetalayer(*origin); });
  install({}, notes, forget_names);
  maybe_compact(notes, false);
}

void Volume::unlink_real(NodeKind dir, const std::string& name, KernelNotes& notes) {
  const std::string what = path_in(dir, name);
  switch (dir) {
    case NodeKind::vlmeta_dir:
    case NodeKind::attrs_dir: {
      bool committed_layer;
      {
        std::unique_lock lock(state_mutex_);
        committed_layer = files_->find_vlmeta(name) != nullptr;
        if (!committed_layer) {  // created and not stored yet
          names_.drop(dir, name);
          return;
        }
      }
      run_commit(what, [&](FrameEditor& editor) { editor.remove_vlmetalayer(name); });
      install({}, notes, [&] { names_.drop(dir, name); });
      maybe_compact(notes, false);
      return;
    }
    case NodeKind::chunks_dir:
    case NodeKind::raw_dir: {
      // Only the last chunk can go: the others have numbers after them.
      std::optional<int64_t> n =
          dir == NodeKind::chunks_dir ? parse_chunk_file_name(name) : parse_raw_file_name(name);
      {
        std::unique_lock lock(state_mutex_);
        if (overlay_.limits().fixed_count) {
          spdlog::warn("{}: cannot remove: an N-d array has the chunks its shape needs (resize it through array.npy)",
                       what);
          throw FsError{EPERM};
        }
        if (!n || *n != overlay_.count() - 1) {
          spdlog::warn("{}: cannot remove: only the last chunk can be removed", what);
          throw FsError{EPERM};
        }
        overlay_.truncate_count(*n);
        names_.erase_draft(kRawBase + uint64_t(*n));
      }
      commit_chunks(std::nullopt, what, notes);
      maybe_compact(notes, false);
      return;
    }
    default:
      spdlog::warn("{}: cannot remove: only vlmetalayers, the last chunk of a frame and editors' scratch files can be "
                   "removed", what);
      throw FsError{EPERM};
  }
}

}  // namespace blosc2fs
