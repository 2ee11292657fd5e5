// Volume: opening, writing, closing, truncating, creating, removing and
// renaming files, handed to FileEdits, ArrayNpy, ZarrView and CommitPipeline.
#include <fcntl.h>
#include <linux/fs.h>

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


// Files whose writes are staged in the chunk overlay.
bool chunk_file(NodeKind kind) {
  return kind == NodeKind::chunk || kind == NodeKind::data || kind == NodeKind::array_npy;
}

}  // namespace

// --- open, read-write ---

std::unique_ptr<OpenFile> Volume::open(uint64_t ino, int flags, bool& keep_cache, bool& direct_io,
                                       KernelNotes& notes) {
  npy_.remove_released_trees();
  std::optional<Node> n = node(ino);
  if (!n) throw FsError{ENOENT};
  if (is_directory(n->kind)) throw FsError{EISDIR};
  const bool write = (flags & O_ACCMODE) != O_RDONLY;
  const bool truncate = flags & O_TRUNC;
  if (write || truncate) {
    if (!state_.options.writable) throw FsError{EROFS};
    if (!is_writable_file(n->kind)) throw FsError{EACCES};
    if (n->kind == NodeKind::array_npy) {
      ReaderLock lock(state_.mutex);
      if (!state_.files->array_layout()) throw FsError{EACCES};
    }
  }
  auto file = std::make_unique<OpenFile>();
  file->ino = ino;
  file->writable = write;
  if (truncate) {
    UniqueMutexLock commit(commits_.mutex(), std::defer_lock);
    if (chunk_file(n->kind)) commit.lock();
    WriterLock lock(state_.mutex);
    // An N-d array's data keeps its size (docs/operations.md): written anew whole.
    if (n->kind == NodeKind::data && state_.overlay.limits().fixed_count) file->rewrite_end = 0;
    else edits_.truncate_node(ino, *n, 0);
  }
  if (write) {
    WriterLock lock(state_.mutex);
    state_.names.add_writer(ino);
  }
  // Texts made anew at open: the kernel must not keep pages of an older one.
  bool live_json = false;
  if (n->kind == NodeKind::frame_json) {
    std::shared_ptr<FrameFiles> files;
    {
      ReaderLock lock(state_.mutex);  // a commit may replace state_.files meanwhile
      files = state_.files;
    }
    live_json = files->frame_json_is_live();
    if (live_json) files->renew_frame_json();
  }
  // preview.png is drawn by its first open, not by stat: until then stat shows
  // the largest size the PNG can have. The open that draws it reads without the
  // page cache (the kernel's size is that bound) and has the kernel ask for the
  // attributes again, which then give the PNG's own size.
  bool drew_preview = false;
  if (n->kind == NodeKind::preview_png) {
    ReaderLock lock(state_.mutex);  // the chunk cache serves this frame while drawing
    state_.files->preview(&drew_preview);
  }
  if (drew_preview) notes.attributes.push_back(ino);
  // Last, so that a failed open leaves no record.
  const bool older_open = note_open(*file);
  bool zarr_exact = false;
  if (n->kind == NodeKind::zarr_chunk) {
    ReaderLock lock(state_.mutex);
    zarr_exact = ZarrNames(state_.files->zarr()).read_exactly(*n);
  }
  direct_io = n->kind == NodeKind::cache_stats || live_json || drew_preview || older_open || zarr_exact;
  keep_cache = cache_still_valid(ino) && !truncate && !drew_preview && !older_open;
  return file;
}

bool Volume::note_open(OpenFile& file) {
  file.version = state_.version;
  return state_.kernel.file_opened(file.ino, file.version);
}

bool Volume::cache_still_valid(uint64_t ino) { return state_.kernel.cache_still_valid(ino); }

void Volume::write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  if (!file.writable) throw FsError{EBADF};
  if (offset < 0) throw FsError{EINVAL};
  file.wrote = true;
  if (file.flushed.load()) {
    WriterLock lock(state_.mutex);
    if (file.flushed.exchange(false)) state_.names.writer_resumed(file.ino);
  }
  std::optional<Node> n = node(file.ino);
  if (!n) throw FsError{ENOENT};
  switch (n->kind) {
    case NodeKind::scratch: {
      WriterLock lock(state_.mutex);
      Scratch* scratch = state_.names.scratch(file.ino);
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
      WriterLock lock(state_.mutex);
      try {
        edits_.write_draft(file.ino, *n, offset, data);
      } catch (const FsError&) {
        if (const Draft* d = state_.names.draft(file.ino)) file.outcome = d->outcome;
        throw;
      }
      file.outcome = state_.names.draft(file.ino)->outcome;
      return;
    }
    case NodeKind::chunk:
    case NodeKind::data:
      edits_.write_chunks(file, *n, offset, data, notes);
      if (file.rewrite_end >= offset) file.rewrite_end = std::max(file.rewrite_end, offset + int64_t(data.size()));
      return;
    case NodeKind::array_npy:
      return npy_.write(file, offset, data, notes);
    default:
      throw FsError{EACCES};
  }
}

// --- close ---

void Volume::flush(OpenFile& file, KernelNotes& notes, bool fsync) {
  if (!file.writable) return;
  {
    WriterLock lock(state_.mutex);
    if (!file.flushed.exchange(true)) state_.names.writer_flushed(file.ino);
  }
  std::optional<Node> n = node(file.ino);
  // A new array.npy this file wrote is finished at close even when an fsync
  // since its last write found it not yet whole.
  bool replacing = false;
  if (n && n->kind == NodeKind::array_npy) {
    ReaderLock lock(state_.mutex);
    replacing = state_.npy_replacement && file.outcome == state_.npy_replacement->outcome;
  }
  const bool wrote = std::exchange(file.wrote, false) || fsync || replacing;
  try {
    if (!wrote) {
      // nothing of this handle's to commit (see OpenFile::wrote)
    } else if (n && (is_layer(n->kind) || n->kind == NodeKind::raw_chunk)) {
      commits_.commit_draft(file.ino, notes);
    } else if (n && chunk_file(n->kind)) {
      MutexLock commit(commits_.mutex());
      if (file.rewrite_end >= 0 && !fsync) edits_.refuse_partial_rewrite(file, notes);
      // fsync of a new array.npy still being written waits for it to be whole.
      if (n->kind == NodeKind::array_npy && state_.replacing_npy(commits_.mutex()))
        npy_.finish_replacement(notes, fsync);
      else
        commits_.commit_chunks(std::nullopt, state_.path_of_node(*n), notes);
      commits_.maybe_compact(notes, false);
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

void Volume::release(std::unique_ptr<OpenFile> file, KernelNotes& notes) {
  state_.kernel.file_released(file->ino, file->version);
  npy_.remove_released_trees();
  if (!file->writable) return;
  std::optional<Node> n = node(file->ino);
  bool last = false, chunk_writers = false;
  {
    WriterLock lock(state_.mutex);
    last = state_.names.remove_writer(file->ino, file->flushed.load());
    for (uint64_t ino : state_.names.written()) {
      std::optional<Node> other = computed_node(ino);
      chunk_writers |= other && chunk_file(other->kind);
    }
  }
  if (!last || !n) return;
  // The kernel flushes at every close; this stores what a flush could not
  // see (e.g. writes through a memory map). Failures are logged by the commit.
  try {
    if (is_layer(n->kind) || n->kind == NodeKind::raw_chunk) {
      commits_.commit_draft(file->ino, notes);
    } else if (chunk_file(n->kind)) {
      MutexLock commit(commits_.mutex());
      if (file->rewrite_end >= 0) edits_.refuse_partial_rewrite(*file, notes);
      if (n->kind == NodeKind::array_npy && state_.replacing_npy(commits_.mutex())) npy_.finish_replacement(notes);
      else if (!chunk_writers) commits_.commit_chunks(std::nullopt, state_.path_of_node(*n), notes);
    }
  } catch (const FsError&) {
  }
  WriterLock lock(state_.mutex);
  if (const Draft* d = state_.names.draft(file->ino); d && !d->dirty && !state_.names.has_writers(file->ino))
    state_.names.erase_draft(file->ino);
}

struct stat Volume::setattr(uint64_t ino, OpenFile* file, std::optional<int64_t> size, KernelNotes& notes) {
  std::optional<Node> n = node(ino);
  if (!n) throw FsError{ENOENT};
  if (size) {
    if (!state_.options.writable) throw FsError{EROFS};
    if (is_directory(n->kind)) throw FsError{EISDIR};
    if (!is_writable_file(n->kind)) throw FsError{EACCES};
    const bool chunky = chunk_file(n->kind);
    UniqueMutexLock commit(commits_.mutex(), std::defer_lock);
    if (chunky) commit.lock();
    bool commit_now;
    {
      WriterLock lock(state_.mutex);
      edits_.truncate_node(ino, *n, *size);
      if (file && file->writable) {
        file->wrote = true;
        if (file->flushed.exchange(false)) state_.names.writer_resumed(ino);
        if (chunky) file->outcome = state_.overlay_outcome;
        else if (const Draft* d = state_.names.draft(ino)) file->outcome = d->outcome;
      }
      // truncate(2) without an open file: nothing else will commit it, unless a
      // writer may still write (a flushed one's release is only late).
      commit_now = !file && !state_.names.has_unflushed_writers(ino) && n->kind != NodeKind::scratch;
    }
    if (commit_now && chunky) {
      commits_.mutex().assert_held();  // taken above, for chunk files (array.npy is one)
      if (n->kind == NodeKind::array_npy && state_.replacing_npy(commits_.mutex())) {
        npy_.finish_replacement(notes);
      } else {
        commits_.commit_chunks(std::nullopt, state_.path_of_node(*n), notes);
        commits_.maybe_compact(notes, false);
      }
    } else if (commit_now) {
      commits_.commit_draft(ino, notes);
    }
  }
  return attributes(ino);
}

// --- names ---

std::pair<uint64_t, std::unique_ptr<OpenFile>> Volume::create(uint64_t parent, std::string_view name_view, int flags,
                                                              KernelNotes& notes) {
  if (!state_.options.writable) throw FsError{EROFS};
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  const std::string name(name_view);
  if (!usable_file_name(name)) throw FsError{name.size() > 255 ? ENAMETOOLONG : EINVAL};
  MutexLock commit(commits_.mutex());
  uint64_t ino;
  {
    WriterLock lock(state_.mutex);
    if (dir->kind == NodeKind::zarr_dir || dir->kind == NodeKind::zarr2_dir) {
      ino = zarr_.create(*dir, name, flags);
    } else if (std::optional<Node> existing = state_.lookup_node(dir->kind, name)) {
      if (flags & O_EXCL) throw FsError{EEXIST};
      if (!is_writable_file(existing->kind)) throw FsError{EACCES};
      ino = state_.names.ino(*existing);
      if (flags & O_TRUNC) edits_.truncate_node(ino, *existing, 0);
    } else if (is_scratch_name(name) ||
               (dir->kind == NodeKind::root && state_.files->zarr() && ZarrView::is_scratch_name(name))) {
      ino = state_.names.add_scratch(dir->kind, name, {}, std::nullopt);
    } else {
      ino = edits_.create_real(dir->kind, name);
    }
  }
  auto file = std::make_unique<OpenFile>();
  file->ino = ino;
  file->writable = (flags & O_ACCMODE) != O_RDONLY;
  note_open(*file);
  {
    WriterLock lock(state_.mutex);
    if (file->writable) state_.names.add_writer(ino);
    if (const Draft* d = state_.names.draft(ino)) file->outcome = d->outcome;
  }
  state_.kernel.opened(ino);
  (void)notes;
  return {ino, std::move(file)};
}

void Volume::unlink(uint64_t parent, std::string_view name_view, KernelNotes& notes) {
  if (!state_.options.writable) throw FsError{EROFS};
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  const std::string name(name_view);
  MutexLock commit(commits_.mutex());
  std::optional<Node> target;
  std::optional<uint64_t> ino;
  {
    ReaderLock lock(state_.mutex);
    if (zarr_.owns(*dir, name)) {
      lock.unlock();
      return zarr_.unlink(*dir, name, notes);
    }
    target = state_.lookup_node(dir->kind, name);
    if (target) ino = state_.names.known_ino(*target);
  }
  if (!target) throw FsError{ENOENT};
  if (is_directory(target->kind)) throw FsError{EISDIR};
  if (target->kind == NodeKind::scratch) return edits_.unlink_scratch(*ino, notes);
  edits_.unlink_real(dir->kind, name, notes);
}

void Volume::rename(uint64_t parent, std::string_view name_view, uint64_t new_parent, std::string_view new_view,
                    unsigned flags, KernelNotes& notes) {
  if (!state_.options.writable) throw FsError{EROFS};
  if (flags & RENAME_EXCHANGE) throw FsError{EINVAL};
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  if (parent != new_parent) {
    const std::optional<Node> new_dir = node(new_parent);
    if (!new_dir) throw FsError{ENOENT};
    // attrs/NAME and vlmeta/NAME are one layer: moving one onto the other is a
    // rename onto another link of the same file, which succeeds and changes
    // nothing (rename(2)). EXDEV would send mv to copy instead, and mv unlinks
    // the target first: the layer would be gone.
    const auto layer_views = [](NodeKind k) { return k == NodeKind::attrs_dir || k == NodeKind::vlmeta_dir; };
    if (layer_views(dir->kind) && layer_views(new_dir->kind) && name_view == new_view) {
      ReaderLock lock(state_.mutex);
      const std::string name(name_view);
      const std::optional<Node> source = state_.lookup_node(dir->kind, name);
      const std::optional<Node> target = state_.lookup_node(new_dir->kind, name);
      const auto layer = [](const std::optional<Node>& n) { return n && n->kind != NodeKind::scratch; };
      if (layer(source) && layer(target)) return;
    }
    throw FsError{EXDEV};
  }
  const std::string from(name_view), to(new_view);
  if (!usable_file_name(to)) throw FsError{to.size() > 255 ? ENAMETOOLONG : EINVAL};
  MutexLock commit(commits_.mutex());
  std::optional<Node> source, target;
  std::optional<uint64_t> source_ino, target_ino;
  {
    ReaderLock lock(state_.mutex);
    if (zarr_.owns(*dir, to)) {
      lock.unlock();
      return zarr_.rename(*dir, from, to, flags, notes);
    }
    source = state_.lookup_node(dir->kind, from);
    if (source) source_ino = state_.names.known_ino(*source);
    target = state_.lookup_node(dir->kind, to);
    if (target) target_ino = state_.names.known_ino(*target);
  }
  if (!source) throw FsError{ENOENT};
  if (is_directory(source->kind)) throw FsError{EPERM};
  if (from == to) return;
  // What an editor may move aside and write anew (a scratch name) or rename
  // (vlmetalayers); array.npy is replaced by writing it whole.
  if (source->kind != NodeKind::scratch && (!is_writable_file(source->kind) || source->kind == NodeKind::array_npy)) {
    spdlog::warn("{}: cannot rename: only vlmetalayers can be renamed, and editable files moved aside by an editor",
                 path_in(dir->kind, from));
    throw FsError{EPERM};
  }
  if (target && (flags & RENAME_NOREPLACE)) throw FsError{EEXIST};
  if (target && is_directory(target->kind)) throw FsError{EISDIR};

  const bool to_scratch = target ? target->kind == NodeKind::scratch : is_scratch_name(to);
  if (source->kind == NodeKind::scratch) {
    if (to_scratch) {
      if (target) edits_.unlink_scratch(*target_ino, notes);
      WriterLock lock(state_.mutex);
      state_.names.move_scratch(*source_ino, dir->kind, to);
      return;
    }
    return edits_.rename_scratch_onto_real(*source_ino, dir->kind, to, notes);
  }
  if (to_scratch) {
    if (target) edits_.unlink_scratch(*target_ino, notes);
    return edits_.rename_real_onto_scratch(dir->kind, from, to, notes);
  }
  if (dir->kind != NodeKind::vlmeta_dir && dir->kind != NodeKind::attrs_dir) {
    spdlog::warn("{}: cannot rename to {}: only vlmetalayers can be renamed", path_in(dir->kind, from), to);
    throw FsError{EPERM};
  }
  edits_.rename_layer(dir->kind, from, to, notes);
}

}  // namespace blosc2fs
