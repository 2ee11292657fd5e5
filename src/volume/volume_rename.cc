// Volume: rename. Within one directory only (EXDEV otherwise: mv then copies).
//   scratch -> scratch  in memory
//   scratch -> real     the scratch file's content becomes the real file's, in
//                       one commit (sed -i, vim's writebackup, cp --backup)
//   real -> scratch     the real name is hidden and the scratch file keeps a
//                       copy; writing the name anew cancels its removal (vim
//                       saving with a backup), removing the scratch file
//                       commits it (mv x .x; rm .x)
//   real -> real        vlmetalayers only: rename_vlmetalayer, over the target
#include <fcntl.h>
#include <linux/fs.h>

#include <cerrno>

#include <spdlog/spdlog.h>

#include "fs_error.h"
#include "volume.h"

namespace blosc2fs {

namespace {

bool layer_dir(NodeKind dir) { return dir == NodeKind::vlmeta_dir || dir == NodeKind::attrs_dir; }

NodeKind layer_kind(NodeKind dir) {
  switch (dir) {
    case NodeKind::meta_dir: return NodeKind::meta;
    case NodeKind::vlmeta_dir: return NodeKind::vlmeta;
    default: return NodeKind::attrs;
  }
}

}  // namespace

void Volume::rename(uint64_t parent, std::string_view name_view, uint64_t new_parent, std::string_view new_view,
                    unsigned flags, KernelNotes& notes) {
  if (!options_.writable) throw FsError{EROFS};
  if (flags & RENAME_EXCHANGE) throw FsError{EINVAL};
  std::optional<Node> dir = node(parent);
  if (!dir) throw FsError{ENOENT};
  if (!is_directory(dir->kind)) throw FsError{ENOTDIR};
  if (parent != new_parent) {
    if (!node(new_parent)) throw FsError{ENOENT};
    throw FsError{EXDEV};
  }
  const std::string from(name_view), to(new_view);
  if (!usable_file_name(to)) throw FsError{to.size() > 255 ? ENAMETOOLONG : EINVAL};
  std::lock_guard commit(commit_mutex_);
  std::optional<Node> source, target;
  std::optional<uint64_t> source_ino, target_ino;
  {
    std::shared_lock lock(state_mutex_);
    if (zarr_owns(*dir, to)) {
      lock.unlock();
      return zarr_rename(*dir, from, to, flags, notes);
    }
    source = lookup_node(dir->kind, from);
    if (source) source_ino = names_.known_ino(*source);
    target = lookup_node(dir->kind, to);
    if (target) target_ino = names_.known_ino(*target);
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
      if (target) unlink_scratch(*target_ino, notes);
      std::unique_lock lock(state_mutex_);
      names_.move_scratch(*source_ino, dir->kind, to);
      return;
    }
    return rename_scratch_onto_real(*source_ino, dir->kind, to, notes);
  }
  if (to_scratch) {
    if (target) unlink_scratch(*target_ino, notes);
    return rename_real_onto_scratch(dir->kind, from, to, notes);
  }
  if (!layer_dir(dir->kind)) {
    spdlog::warn("{}: cannot rename to {}: only vlmetalayers can be renamed", path_in(dir->kind, from), to);
    throw FsError{EPERM};
  }
  rename_layer(dir->kind, from, to, notes);
}

void Volume::rename_real_onto_scratch(NodeKind dir, const std::string& from, const std::string& to,
                                      KernelNotes& notes) {
  std::unique_lock lock(state_mutex_);
  std::optional<Node> source = lookup_node(dir, from);
  if (!source) throw FsError{ENOENT};
  const std::optional<uint64_t> source_ino = names_.known_ino(*source);
  Bytes content = current_content(source_ino.value_or(0), *source);
  names_.hide(dir, from);
  if (is_layer(source->kind)) {
    // The inode goes with the name, as the kernel expects after a rename.
    if (source_ino) names_.unbind(dir, from);
    names_.add_scratch(dir, to, std::move(content), from, source_ino);
  } else {
    // Files at computed inodes keep them; the kernel is told to look the
    // scratch name up again to meet its own inode.
    names_.add_scratch(dir, to, std::move(content), from);
    if (source->kind == NodeKind::raw_chunk) names_.erase_draft(kRawBase + uint64_t(source->index));
    note_entry(notes, dir, to);
  }
}

void Volume::rename_scratch_onto_real(uint64_t ino, NodeKind dir, const std::string& to, KernelNotes& notes) {
  Scratch scratch;
  std::optional<Node> target;
  bool origin_in_frame = false;
  {
    std::shared_lock lock(state_mutex_);
    scratch = *names_.scratch(ino);
    if (scratch.origin) origin_in_frame = files_->find_vlmeta(*scratch.origin) != nullptr;
  }
  const std::string what = path_in(dir, to);
  const bool drop_origin = scratch.origin && *scratch.origin != to && origin_in_frame && layer_dir(dir);

  // What the names look like once the content is in: the scratch file is the
  // real file now.
  auto rename_names = [&, ino] {
    names_.erase_scratch(ino);
    names_.unbind(dir, scratch.node.name);
    names_.cancel_removal(dir, to);
    if (scratch.origin) {
      names_.unhide(dir, *scratch.origin);
      if (drop_origin) names_.drop(dir, *scratch.origin);
    }
    if (dir == NodeKind::meta_dir || layer_dir(dir)) {
      names_.drop(dir, to);
      names_.bind(dir, to, ino, Node{layer_kind(dir), 0, to});
    } else {
      std::optional<Node> real = lookup_node(dir, to);
      if (real) names_.set_named(ino, *real);  // the old inode keeps working for open files
      else names_.erase_named(ino);
      note_entry(notes, dir, to);
    }
  };

  switch (dir) {
    case NodeKind::vlmeta_dir:
    case NodeKind::attrs_dir: {
      {
        std::shared_lock lock(state_mutex_);
        if (!files_->find_vlmeta(to) || drop_origin) check_new_layer(dir, to);
      }
      Bytes content =
          dir == NodeKind::attrs_dir ? attrs_to_msgpack(what, scratch.content) : std::move(scratch.content);
      run_commit(what, [&](FrameEditor& editor) {
        if (drop_origin) editor.remove_vlmetalayer(*scratch.origin);
        editor.set_vlmetalayer(to, content);
      });
      install({}, notes, rename_names);
      break;
    }
    case NodeKind::meta_dir: {
      {
        std::shared_lock lock(state_mutex_);
        if (!files_->find_meta(to)) throw FsError{EPERM};
      }
      run_commit(what, [&](FrameEditor& editor) { editor.set_metalayer(to, scratch.content); });
      install({}, notes, rename_names);
      break;
    }
    case NodeKind::raw_dir: {
      std::optional<int64_t> n = parse_raw_file_name(to);
      bool append;
      {
        std::shared_lock lock(state_mutex_);
        if (!n || *n > files_->nchunks()) throw FsError{EPERM};
        append = *n == files_->nchunks();
        if (append && overlay_.limits().fixed_count) throw FsError{EPERM};
        if (append && !overlay_.clean()) throw FsError{EBUSY};
      }
      run_commit(what, [&](FrameEditor& editor) {
        if (append) editor.append_raw_chunk(scratch.content);
        else editor.replace_raw_chunk(*n, scratch.content);
      });
      ChunkChanges changes;
      changes.chunks.push_back(*n);
      install(changes, notes, rename_names);
      break;
    }
    case NodeKind::chunks_dir:
    case NodeKind::root: {
      {
        std::unique_lock lock(state_mutex_);
        if (dir == NodeKind::root) {
          if (to != "data") throw FsError{EPERM};
          // An array's data keeps its size: a new content of that size is written over it.
          if (!overlay_.limits().fixed_count) overlay_.resize_data(*files_, 0);
          else if (int64_t(scratch.content.size()) != overlay_.data_size(*files_)) throw FsError{EINVAL};
          overlay_.write_data(*files_, 0, scratch.content);
        } else {
          std::optional<int64_t> n = parse_chunk_file_name(to);
          if (!n || *n > overlay_.count()) throw FsError{EPERM};
          if (*n == overlay_.count()) overlay_.append_chunk();
          overlay_.set_chunk(*n, scratch.content);
        }
      }
      commit_chunks(std::nullopt, what, notes);
      std::unique_lock lock(state_mutex_);
      rename_names();
      break;
    }
    default:
      throw FsError{EPERM};
  }
  maybe_compact(notes, false);
}

void Volume::rename_layer(NodeKind dir, const std::string& from, const std::string& to, KernelNotes& notes) {
  const std::string base = std::string(fixed_file(dir)->name) + "/";
  std::optional<Bytes> pending;  // written and not committed: stored under the new name
  uint64_t ino = 0;
  {
    std::unique_lock lock(state_mutex_);
    if (to.size() > size_t(kMaxMetalayerNameLen)) {
      spdlog::warn("{}{}: cannot rename to {}: vlmetalayer names are at most {} bytes", base, from, to,
                   kMaxMetalayerNameLen);
      throw FsError{ENAMETOOLONG};
    }
    const std::optional<uint64_t> named = names_.find(dir, from);
    if (named) ino = *named;
    const Draft* draft = named ? names_.draft(ino) : nullptr;
    if (!files_->find_vlmeta(from)) {
      // Created and not committed yet: the draft just changes its name.
      if (!named) throw FsError{ENOENT};
      names_.cancel_removal(dir, to);
      names_.drop(dir, to);
      Node node = *names_.named(ino);
      node.name = to;
      names_.unbind(dir, from);
      names_.bind(dir, to, ino, node);
      return;
    }
    if (draft && draft->dirty) pending = draft->content;
  }
  if (pending && dir == NodeKind::attrs_dir) pending = attrs_to_msgpack(base + from, *pending);
  run_commit(base + to, [&](FrameEditor& editor) {
    if (pending) editor.set_vlmetalayer(from, *pending);
    editor.rename_vlmetalayer(from, to);
  });
  install({}, notes, [&] {
    names_.cancel_removal(dir, to);
    names_.drop(dir, to);
    if (const std::optional<uint64_t> moved = names_.find(dir, from)) {
      names_.unbind(dir, from);
      names_.erase_draft(*moved);
      names_.bind(dir, to, *moved, Node{layer_kind(dir), 0, to});
    }
  });
  maybe_compact(notes, false);
}

}  // namespace blosc2fs
