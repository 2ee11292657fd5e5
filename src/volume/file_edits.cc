// FileEdits: writes held in memory until their commit (layer drafts, scratch
// files, staged chunks), truncation, creation and removal of names, renames.
// Renames stay within one directory (EXDEV otherwise: mv then copies):
//   scratch -> scratch  in memory
//   scratch -> real     the scratch file's content becomes the real file's, in
//                       one commit (sed -i, vim's writebackup, cp --backup)
//   real -> scratch     the real name is hidden and the scratch file keeps a
//                       copy; writing the name anew cancels its removal (vim
//                       saving with a backup), removing the scratch file
//                       commits it (mv x .x; rm .x)
//   real -> real        vlmetalayers only: rename_vlmetalayer, over the target
#include "file_edits.h"

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
#include "frame_editor.h"
#include "fs_error.h"
#include "npy_replacement.h"

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

FileEdits::FileEdits(VolumeState& state, CommitPipeline& commits, ArrayNpy& npy)
    : state_(state), commits_(commits), npy_(npy) {}

Draft& FileEdits::draft_for(uint64_t ino, const Node& node) {
  if (Draft* d = state_.names.draft(ino)) return *d;
  Draft d;
  d.created = !state_.in_frame(node);
  if (!d.created) d.content = state_.current_content(ino, node);
  return state_.names.put_draft(ino, std::move(d));
}

void FileEdits::write_draft(uint64_t ino, const Node& node, int64_t offset, ByteSpan data) {
  state_.mutex.assert_held();
  Draft& d = draft_for(ino, node);
  const std::string path = state_.path_of_node(node);
  if (d.poisoned) throw FsError{EINVAL};
  const int64_t end = offset + int64_t(data.size());
  if (end > kMaxHeldFile || (node.kind == NodeKind::raw_chunk && end > INT32_MAX)) throw FsError{EFBIG};
  if (node.kind == NodeKind::meta) {
    const LayerFile* layer = state_.files->find_meta(node.name);
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

void FileEdits::write_chunks(OpenFile& file, const Node& node, int64_t offset, ByteSpan data, KernelNotes& notes) {
  // Refused at the first write, before the old chunk is decoded (which needs the same plugin).
  // Under the state lock: a commit may replace state_.files meanwhile.
  const CodecInfo* codec;
  {
    ReaderLock lock(state_.mutex);
    codec = frame_codec(state_.files->frame().header());
  }
  if (codec && codec->runtime_plugin && !codec->encodable()) {
    report_missing_plugin(*codec);
    throw IoError("the frame's codec " + std::string(codec->name) + " is loaded at run time and no plugin is loaded (" +
                      plugin_install_hint(*codec) + "), so chunks cannot be rewritten (metadata edits still work)",
                  EOPNOTSUPP);
  }
  MutexLock commit(commits_.mutex());
  std::optional<int64_t> filling;
  bool batch_due;
  {
    WriterLock lock(state_.mutex);
    if (!state_.exists(node)) throw FsError{ENOENT};
    if (node.kind == NodeKind::chunk) {
      state_.overlay.write_chunk(*state_.files, node.index, offset, data);
      filling = node.index;
    } else {
      state_.overlay.write_data(*state_.files, offset, data);
      if (!data.empty()) filling = state_.overlay.chunk_at(*state_.files, offset + int64_t(data.size()) - 1);
    }
    file.outcome = state_.overlay_outcome;
    batch_due = state_.overlay_batch_due();
  }
  // A long write commits what it has finished, so memory stays bounded.
  if (batch_due) {
    commits_.commit_chunks(filling, state_.path_of_node(node), notes);
    commits_.maybe_compact(notes, false);
  }
}

void FileEdits::truncate_node(uint64_t ino, const Node& node, int64_t size) {
  state_.mutex.assert_held();
  if (size < 0) throw FsError{EINVAL};
  switch (node.kind) {
    case NodeKind::scratch: {
      if (size > kMaxHeldFile) throw FsError{EFBIG};
      Scratch* scratch = state_.names.scratch(ino);
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
        const LayerFile* layer = state_.files->find_meta(node.name);
        if (size > (layer ? layer->size : 0)) throw FsError{EINVAL};
      }
      Draft* d;
      if (size == 0) {  // starting over: nothing to load, nothing refused so far counts
        d = state_.names.draft(ino);
        if (!d) {
          Draft fresh;
          fresh.created = !state_.in_frame(node);
          d = &state_.names.put_draft(ino, std::move(fresh));
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
    case NodeKind::chunk: return state_.overlay.resize_chunk(*state_.files, node.index, size);
    case NodeKind::data: return state_.overlay.resize_data(*state_.files, size);
    case NodeKind::array_npy: return npy_.truncate(size);
    default: throw FsError{EACCES};
  }
}

void FileEdits::refuse_partial_rewrite(const OpenFile& file, KernelNotes& notes) {
  commits_.mutex().assert_held();
  WriterLock lock(state_.mutex);
  const int64_t size = state_.overlay.data_size(*state_.files);
  if (file.rewrite_end >= size) return;
  spdlog::warn("data: an N-d array's data keeps its {} bytes: opened with O_TRUNC, it must be written whole from "
               "its start, and {} were; what was written is dropped",
               size, file.rewrite_end);
  const ChunkOverlay::Batch staged = state_.overlay.batch();
  state_.overlay_outcome->error = EINVAL;
  state_.overlay_outcome = std::make_shared<CommitOutcome>();
  state_.overlay.discard();
  state_.note_inode(notes, fixed_file(NodeKind::data)->ino);
  state_.note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
  for (const auto* list : {&staged.replace, &staged.append})
    for (const auto& [n, held] : *list) state_.note_inode(notes, kChunkBase + uint64_t(n));
  throw FsError{EINVAL};
}

uint64_t FileEdits::create_real(NodeKind dir, const std::string& name) {
  state_.mutex.assert_held();
  commits_.mutex().assert_held();
  switch (dir) {
    case NodeKind::vlmeta_dir:
    case NodeKind::attrs_dir: {
      state_.check_new_layer(dir, name);
      state_.names.cancel_removal(dir, name);
      Node node{dir == NodeKind::vlmeta_dir ? NodeKind::vlmeta : NodeKind::attrs, 0, name};
      const uint64_t ino = state_.names.ino(node);
      Draft d;
      d.created = !state_.in_frame(node);
      d.dirty = true;
      state_.names.put_draft(ino, std::move(d));
      return ino;
    }
    case NodeKind::meta_dir: {
      // Metalayers are fixed at the frame's creation: only one moved aside
      // by an editor (vim's rename to NAME~) may be written anew.
      if (!state_.names.hidden(dir, name)) throw FsError{EPERM};
      state_.names.cancel_removal(dir, name);
      Node node{NodeKind::meta, 0, name};
      const uint64_t ino = state_.names.ino(node);
      Draft d;
      d.dirty = true;
      state_.names.put_draft(ino, std::move(d));
      return ino;
    }
    case NodeKind::chunks_dir: {
      std::optional<int64_t> n = parse_chunk_file_name(name);
      if (!n) throw FsError{EPERM};
      if (*n == state_.overlay.count()) {
        state_.overlay.append_chunk();
      } else if (*n < state_.overlay.count() && state_.names.hidden(dir, name)) {
        state_.names.cancel_removal(dir, name);
        state_.overlay.resize_chunk(*state_.files, *n, 0);
      } else {
        throw FsError{EPERM};
      }
      return kChunkBase + uint64_t(*n);
    }
    case NodeKind::raw_dir: {
      std::optional<int64_t> n = parse_raw_file_name(name);
      if (!n) throw FsError{EPERM};
      const bool append = *n == state_.files->nchunks() && state_.overlay.count() == state_.files->nchunks();
      if (append && state_.overlay.limits().fixed_count) throw FsError{EPERM};
      if (!append && !(*n < state_.files->nchunks() && state_.names.hidden(dir, name))) throw FsError{EPERM};
      state_.names.cancel_removal(dir, name);
      const uint64_t ino = kRawBase + uint64_t(*n);
      Draft d;
      d.created = append;
      d.dirty = true;
      state_.names.put_draft(ino, std::move(d));
      return ino;
    }
    case NodeKind::root:
      if (name == "data" && state_.names.hidden(dir, name)) {
        state_.names.cancel_removal(dir, name);
        state_.overlay.resize_data(*state_.files, 0);
        return fixed_file(NodeKind::data)->ino;
      }
      if (name == "array.npy" && state_.array_creatable()) {  // a new array (array_npy.cc)
        npy_.truncate(0);
        return fixed_file(NodeKind::array_npy)->ino;
      }
      throw FsError{EPERM};
    default:
      throw FsError{EPERM};
  }
}

void FileEdits::unlink_scratch(uint64_t ino, KernelNotes& notes) {
  commits_.mutex().assert_held();
  NodeKind dir;
  std::string name;
  std::optional<std::string> origin;
  bool layer_in_frame = false;
  {
    ReaderLock lock(state_.mutex);
    const Scratch& s = *state_.names.scratch(ino);
    dir = s.node.dir;
    name = s.node.name;
    origin = s.origin;
    layer_in_frame = origin && state_.files->find_vlmeta(*origin);
  }
  const bool remove_layer = layer_in_frame && (dir == NodeKind::vlmeta_dir || dir == NodeKind::attrs_dir);
  auto forget_names = [&]() REQUIRES(state_.mutex) {
    state_.names.drop(dir, name);
    if (origin) {
      state_.names.unhide(dir, *origin);
      if (remove_layer) state_.names.drop(dir, *origin);
    }
  };
  if (!remove_layer) {
    WriterLock lock(state_.mutex);
    forget_names();
    if (origin) state_.note_inode(notes, directory_inode(dir));
    return;
  }
  // The layer moved onto this scratch name is thrown away with it.
  const std::string what = path_in(dir, *origin);
  commits_.run_commit(what, [&](FrameEditor& editor) { editor.remove_vlmetalayer(*origin); });
  commits_.install({}, notes, forget_names);
  commits_.maybe_compact(notes, false);
}

void FileEdits::unlink_real(NodeKind dir, const std::string& name, KernelNotes& notes) {
  commits_.mutex().assert_held();
  const std::string what = path_in(dir, name);
  switch (dir) {
    case NodeKind::vlmeta_dir:
    case NodeKind::attrs_dir: {
      bool committed_layer;
      {
        WriterLock lock(state_.mutex);
        committed_layer = state_.files->find_vlmeta(name) != nullptr;
        if (!committed_layer) {  // created and not stored yet
          state_.names.drop(dir, name);
          return;
        }
      }
      commits_.run_commit(what, [&](FrameEditor& editor) { editor.remove_vlmetalayer(name); });
      commits_.install({}, notes, [&]() REQUIRES(state_.mutex) { state_.names.drop(dir, name); });
      commits_.maybe_compact(notes, false);
      return;
    }
    case NodeKind::chunks_dir:
    case NodeKind::raw_dir: {
      // Only the last chunk can go: the others have numbers after them.
      std::optional<int64_t> n =
          dir == NodeKind::chunks_dir ? parse_chunk_file_name(name) : parse_raw_file_name(name);
      {
        WriterLock lock(state_.mutex);
        if (state_.overlay.limits().fixed_count) {
          spdlog::warn("{}: cannot remove: an N-d array has the chunks its shape needs (resize it through array.npy)",
                       what);
          throw FsError{EPERM};
        }
        if (!n || *n != state_.overlay.count() - 1) {
          spdlog::warn("{}: cannot remove: only the last chunk can be removed", what);
          throw FsError{EPERM};
        }
        state_.overlay.truncate_count(*n);
        state_.names.erase_draft(kRawBase + uint64_t(*n));
      }
      commits_.commit_chunks(std::nullopt, what, notes);
      commits_.maybe_compact(notes, false);
      return;
    }
    default:
      spdlog::warn("{}: cannot remove: only vlmetalayers, the last chunk of a frame and editors' scratch files can be "
                   "removed", what);
      throw FsError{EPERM};
  }
}

void FileEdits::rename_real_onto_scratch(NodeKind dir, const std::string& from, const std::string& to,
                                      KernelNotes& notes) {
  commits_.mutex().assert_held();
  WriterLock lock(state_.mutex);
  std::optional<Node> source = state_.lookup_node(dir, from);
  if (!source) throw FsError{ENOENT};
  const std::optional<uint64_t> source_ino = state_.names.known_ino(*source);
  Bytes content = state_.current_content(source_ino.value_or(0), *source);
  state_.names.hide(dir, from);
  if (is_layer(source->kind)) {
    // The inode goes with the name, as the kernel expects after a rename.
    if (source_ino) state_.names.unbind(dir, from);
    state_.names.add_scratch(dir, to, std::move(content), from, source_ino);
  } else {
    // Files at computed inodes keep them; the kernel is told to look the
    // scratch name up again to meet its own inode.
    state_.names.add_scratch(dir, to, std::move(content), from);
    if (source->kind == NodeKind::raw_chunk) state_.names.erase_draft(kRawBase + uint64_t(source->index));
    state_.note_entry(notes, dir, to);
  }
}

void FileEdits::rename_scratch_onto_real(uint64_t ino, NodeKind dir, const std::string& to, KernelNotes& notes) {
  commits_.mutex().assert_held();
  Scratch scratch;
  std::optional<Node> target;
  bool origin_in_frame = false;
  {
    ReaderLock lock(state_.mutex);
    scratch = *state_.names.scratch(ino);
    if (scratch.origin) origin_in_frame = state_.files->find_vlmeta(*scratch.origin) != nullptr;
  }
  const std::string what = path_in(dir, to);
  const bool drop_origin = scratch.origin && *scratch.origin != to && origin_in_frame && layer_dir(dir);

  // What the names look like once the content is in: the scratch file is the
  // real file now.
  auto rename_names = [&, ino]() REQUIRES(state_.mutex) {
    state_.names.erase_scratch(ino);
    state_.names.unbind(dir, scratch.node.name);
    state_.names.cancel_removal(dir, to);
    if (scratch.origin) {
      state_.names.unhide(dir, *scratch.origin);
      if (drop_origin) state_.names.drop(dir, *scratch.origin);
    }
    if (dir == NodeKind::meta_dir || layer_dir(dir)) {
      state_.names.drop(dir, to);
      state_.names.bind(dir, to, ino, Node{layer_kind(dir), 0, to});
    } else {
      std::optional<Node> real = state_.lookup_node(dir, to);
      if (real) state_.names.set_named(ino, *real);  // the old inode keeps working for open files
      else state_.names.erase_named(ino);
      state_.note_entry(notes, dir, to);
    }
  };

  switch (dir) {
    case NodeKind::vlmeta_dir:
    case NodeKind::attrs_dir: {
      {
        ReaderLock lock(state_.mutex);
        if (!state_.files->find_vlmeta(to) || drop_origin) state_.check_new_layer(dir, to);
      }
      Bytes content =
          dir == NodeKind::attrs_dir ? commits_.attrs_to_msgpack(what, scratch.content) : std::move(scratch.content);
      commits_.run_commit(what, [&](FrameEditor& editor) {
        if (drop_origin) editor.remove_vlmetalayer(*scratch.origin);
        editor.set_vlmetalayer(to, content);
      });
      commits_.install({}, notes, rename_names);
      break;
    }
    case NodeKind::meta_dir: {
      {
        ReaderLock lock(state_.mutex);
        if (!state_.files->find_meta(to)) throw FsError{EPERM};
      }
      commits_.run_commit(what, [&](FrameEditor& editor) { editor.set_metalayer(to, scratch.content); });
      commits_.install({}, notes, rename_names);
      break;
    }
    case NodeKind::raw_dir: {
      std::optional<int64_t> n = parse_raw_file_name(to);
      bool append;
      {
        ReaderLock lock(state_.mutex);
        if (!n || *n > state_.files->nchunks()) throw FsError{EPERM};
        append = *n == state_.files->nchunks();
        if (append && state_.overlay.limits().fixed_count) throw FsError{EPERM};
        if (append && !state_.overlay.clean()) throw FsError{EBUSY};
      }
      commits_.run_commit(what, [&](FrameEditor& editor) {
        if (append) editor.append_raw_chunk(scratch.content);
        else editor.replace_raw_chunk(*n, scratch.content);
      });
      ChunkChanges changes;
      changes.chunks.push_back(*n);
      commits_.install(changes, notes, rename_names);
      break;
    }
    case NodeKind::chunks_dir:
    case NodeKind::root: {
      {
        WriterLock lock(state_.mutex);
        if (dir == NodeKind::root) {
          if (to != "data") throw FsError{EPERM};
          // An array's data keeps its size: a new content of that size is written over it.
          if (!state_.overlay.limits().fixed_count) state_.overlay.resize_data(*state_.files, 0);
          else if (int64_t(scratch.content.size()) != state_.overlay.data_size(*state_.files)) throw FsError{EINVAL};
          state_.overlay.write_data(*state_.files, 0, scratch.content);
        } else {
          std::optional<int64_t> n = parse_chunk_file_name(to);
          if (!n || *n > state_.overlay.count()) throw FsError{EPERM};
          const bool appended = *n == state_.overlay.count();
          if (appended) state_.overlay.append_chunk();
          try {
            state_.overlay.set_chunk(*n, scratch.content);
          } catch (const FsError&) {
            // Refused (bigger than a chunk may be): the chunk it was to be is not left behind, empty.
            if (appended) state_.overlay.truncate_count(*n);
            throw;
          }
        }
      }
      commits_.commit_chunks(std::nullopt, what, notes);
      WriterLock lock(state_.mutex);
      rename_names();
      break;
    }
    default:
      throw FsError{EPERM};
  }
  commits_.maybe_compact(notes, false);
}

void FileEdits::rename_layer(NodeKind dir, const std::string& from, const std::string& to, KernelNotes& notes) {
  commits_.mutex().assert_held();
  const std::string base = std::string(fixed_file(dir)->name) + "/";
  std::optional<Bytes> pending;  // written and not committed: stored under the new name
  uint64_t ino = 0;
  {
    WriterLock lock(state_.mutex);
    if (const std::optional<LayerNameRefusal> refusal = refuse_layer_name(to)) {
      spdlog::warn("{}{}: cannot rename: {}", base, from, refusal->why);
      throw FsError{refusal->error};
    }
    const std::optional<uint64_t> named = state_.names.find(dir, from);
    if (named) ino = *named;
    const Draft* draft = named ? state_.names.draft(ino) : nullptr;
    if (!state_.files->find_vlmeta(from)) {
      // Created and not committed yet: the draft just changes its name.
      if (!named) throw FsError{ENOENT};
      state_.names.cancel_removal(dir, to);
      state_.names.drop(dir, to);
      Node node = *state_.names.named(ino);
      node.name = to;
      state_.names.unbind(dir, from);
      state_.names.bind(dir, to, ino, node);
      return;
    }
    if (draft && draft->dirty) pending = draft->content;
  }
  if (pending && dir == NodeKind::attrs_dir) pending = commits_.attrs_to_msgpack(base + from, *pending);
  commits_.run_commit(base + to, [&](FrameEditor& editor) {
    if (pending) editor.set_vlmetalayer(from, *pending);
    editor.rename_vlmetalayer(from, to);
  });
  commits_.install({}, notes, [&]() REQUIRES(state_.mutex) {
    state_.names.cancel_removal(dir, to);
    state_.names.drop(dir, to);
    if (const std::optional<uint64_t> moved = state_.names.find(dir, from)) {
      state_.names.unbind(dir, from);
      state_.names.erase_draft(*moved);
      state_.names.bind(dir, to, *moved, Node{layer_kind(dir), 0, to});
    }
  });
  commits_.maybe_compact(notes, false);
}

}  // namespace blosc2fs
