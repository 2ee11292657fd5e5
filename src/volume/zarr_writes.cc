// Writes through the Zarr view (docs/zarr.md, "Writing"). zarr-python's
// LocalStore writes every key as a temporary file beside it,
// `<key>.<32 hex>.partial` (Path.with_suffix: `0.<hex>.partial` for c/I/0,
// `zarr.<hex>.partial` for zarr.json), opened "wb" (O_CREAT | O_TRUNC), then
// renames it over the key (os.replace); it deletes a chunk that holds only the
// fill value (write_empty_chunks=False, its default). Those are the operations
// taken here, as an editor's scratch files are elsewhere in the tree:
//   rename onto c/I/J   the chunk replaced (a shard taken apart by its index,
//                       a plain chunk re-laid out into block order), committed
//                       as chunks/N writes are
//   unlink c/I/J        the chunk becomes zeros (the fill value)
//   rename onto zarr.json   attrs/ changed, when the attributes are all that differ
// Anything else in c/ is refused (EPERM); zarr2/ takes no writes.
#include <fcntl.h>
#include <linux/fs.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "frame_files.h"
#include "fs_error.h"
#include "msgpack.h"
#include "zarr_view.h"
#include "zarr_files.h"

namespace blosc2fs {

std::optional<Bytes> ZarrFiles::decoded_chunk_of(ByteSpan written, std::string* why) const {
  auto refuse = [&](std::string reason) -> std::optional<Bytes> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!chunk_layout_) return refuse("the array has no chunks");
  const int64_t decoded_bytes = chunk_layout_->chunk_bytes();
  Bytes decoded(size_t(decoded_bytes), 0);
  if (plan_.sharded) {
    // The index is untrusted: every entry is checked against the file's length
    // before a byte is copied.
    const int64_t index_bytes = plan_.shard_index_bytes();
    const int64_t inner_bytes = plan_.inner_bytes();
    if (plan_.shard_data_bytes() != decoded_bytes) return refuse("the shard does not match the decoded chunk");
    if (int64_t(written.size()) < index_bytes)
      return refuse(std::to_string(written.size()) + " bytes, shorter than the shard index (" +
                    std::to_string(index_bytes) + " bytes)");
    const uint64_t body = uint64_t(written.size()) - uint64_t(index_bytes);
    const uint8_t* index = written.data() + body;
    constexpr uint64_t kEmpty = ~uint64_t(0);
    for (int64_t i = 0; i < plan_.ninner; ++i) {
      const uint64_t offset = load_le64(index + 16 * i), nbytes = load_le64(index + 16 * i + 8);
      if (offset == kEmpty && nbytes == kEmpty) continue;  // the fill value: zeros
      if (nbytes != uint64_t(inner_bytes))
        return refuse("inner chunk " + std::to_string(i) + " is " + std::to_string(nbytes) + " bytes, not " +
                      std::to_string(inner_bytes) + " (inner chunks must be uncompressed, codecs [bytes])");
      if (offset > body || body - offset < nbytes)
        return refuse("inner chunk " + std::to_string(i) + " lies outside the shard's " + std::to_string(body) +
                      " data bytes");
      std::memcpy(decoded.data() + size_t(i * inner_bytes), written.data() + offset, size_t(nbytes));
    }
    return decoded;
  }
  if (int64_t(written.size()) != plan_.plain_chunk_bytes())
    return refuse(std::to_string(written.size()) + " bytes, a chunk is " + std::to_string(plan_.plain_chunk_bytes()));
  chunk_layout_->write(0, written, [&](int64_t) { return MutableByteSpan(decoded); });
  return decoded;
}

// --- the Volume's part ---

ZarrView::ZarrView(VolumeState& state, CommitPipeline& commits, FileEdits& edits)
    : state_(state), commits_(commits), edits_(edits) {}

ZarrNames ZarrView::zarr_names() const { return ZarrNames(state_.files->zarr()); }

bool ZarrView::is_scratch_name(std::string_view name) {
  constexpr std::string_view kSuffix = ".partial";
  return name.size() > kSuffix.size() && name.ends_with(kSuffix);
}

std::string ZarrView::scratch_key(const Node& dir, std::string_view name) const {
  return zarr_names().path(dir) + "/" + std::string(name);
}

std::optional<uint64_t> ZarrView::scratch(const Node& dir, std::string_view name) const {
  state_.mutex.assert_held_shared();
  if (dir.kind != NodeKind::zarr_dir) return std::nullopt;
  return state_.names.scratch_named(NodeKind::zarr_dir, scratch_key(dir, name));
}

namespace {

[[noreturn]] void refuse_v2_view(std::string_view name) {
  spdlog::warn("zarr2/{}: refused: the Zarr v2 view takes no writes (write through c/ or chunks/)", name);
  throw FsError{EPERM};
}

}  // namespace

uint64_t ZarrView::create(const Node& dir, const std::string& name, int flags) {
  state_.mutex.assert_held();
  commits_.mutex().assert_held();
  if (dir.kind == NodeKind::zarr2_dir) refuse_v2_view(name);
  if (std::optional<uint64_t> ino = scratch(dir, name)) {
    if (flags & O_EXCL) throw FsError{EEXIST};
    if (flags & O_TRUNC) state_.names.scratch(*ino)->content.clear();
    return *ino;
  }
  if (zarr_names().lookup(dir, name)) throw FsError{EACCES};  // a chunk file: written by renaming onto it
  if (!state_.files->zarr() || !zarr_names().exists(dir) || !is_scratch_name(name)) {
    spdlog::warn("{}/{}: cannot create: the Zarr view takes only a writer's temporary files (*.partial)",
                 zarr_names().path(dir), name);
    throw FsError{EPERM};
  }
  return state_.names.add_scratch(NodeKind::zarr_dir, scratch_key(dir, name), {}, std::nullopt);
}

bool ZarrView::owns(const Node& dir, std::string_view name) const {
  state_.mutex.assert_held_shared();
  if (dir.kind == NodeKind::zarr_dir || dir.kind == NodeKind::zarr2_dir) return true;
  const ZarrFiles* z = state_.files->zarr();
  return dir.kind == NodeKind::root && z && (name == "zarr.json" || (name == "c" && z->zero_d()));
}

void ZarrView::rename(const Node& dir, const std::string& from, const std::string& to, unsigned flags,
                         KernelNotes& notes) {
  commits_.mutex().assert_held();
  if (dir.kind == NodeKind::zarr2_dir) refuse_v2_view(from);
  std::optional<uint64_t> source;
  std::optional<Node> target;
  std::string dir_path;  // for a log line, made while the names are at hand
  {
    ReaderLock lock(state_.mutex);
    if (dir.kind == NodeKind::zarr_dir) {
      source = scratch(dir, from);
    } else if (std::optional<Node> s = state_.lookup_node(NodeKind::root, from); s && s->kind == NodeKind::scratch) {
      source = state_.names.known_ino(*s);
    }
    if (to == "zarr.json" && dir.kind == NodeKind::root) target = Node{NodeKind::zarr_json};
    else target = zarr_names().lookup(dir, to);
    if (!target) dir_path = zarr_names().path(dir);
    if (!source) {
      if (dir.kind == NodeKind::zarr_dir && !zarr_names().lookup(dir, from)) throw FsError{ENOENT};
      spdlog::warn("{}: cannot rename to {}: only a writer's temporary file can be renamed onto the Zarr view's files",
                   dir.kind == NodeKind::zarr_dir ? zarr_names().path(dir) + "/" + from : from, to);
      throw FsError{EPERM};
    }
  }
  if (from == to) return;  // a temporary file onto its own name: nothing changes
  if (target && (flags & RENAME_NOREPLACE)) throw FsError{EEXIST};
  if (!target) {
    // One temporary name onto another (in c/ only: the root's go the usual way).
    if (dir.kind != NodeKind::zarr_dir || !is_scratch_name(to)) {
      spdlog::warn("{}/{}: cannot rename to {}: not a chunk of the array", dir_path, from, to);
      throw FsError{EPERM};
    }
    WriterLock lock(state_.mutex);
    if (std::optional<uint64_t> old = scratch(dir, to)) state_.names.drop(NodeKind::zarr_dir, scratch_key(dir, to));
    state_.names.move_scratch(*source, NodeKind::zarr_dir, scratch_key(dir, to));
    return;
  }
  if (target->kind == NodeKind::zarr_json) return commit_attributes(*source, notes);
  if (target->kind != NodeKind::zarr_chunk) throw FsError{EISDIR};
  commit_chunk(*source, dir, target->index, to, notes);
}

void ZarrView::commit_chunk(uint64_t scratch_ino, const Node& dir, int64_t n, const std::string& to,
                               KernelNotes& notes) {
  std::string what;
  {
    WriterLock lock(state_.mutex);
    const ZarrFiles* z = state_.files->zarr();
    if (!z) throw FsError{ENOENT};
    what = zarr_names().path(Node{NodeKind::zarr_chunk, n});
    std::string why;
    std::optional<Bytes> decoded = z->decoded_chunk_of(state_.names.scratch(scratch_ino)->content, &why);
    if (!decoded) {
      spdlog::warn("{}: write refused: {}; the chunk is unchanged", what, why);
      throw FsError{EINVAL};
    }
    if (n >= state_.overlay.count()) throw FsError{ENOENT};
    state_.overlay.set_chunk(n, std::move(*decoded));
  }
  commits_.commit_chunks(std::nullopt, what, notes);
  WriterLock lock(state_.mutex);
  // Its name is gone: c/I/NAME of the Zarr view's, or a 0-d array's NAME at the top.
  const Node scratch_node = state_.names.scratch(scratch_ino)->node;
  state_.names.unbind(scratch_node.dir, scratch_node.name);
  state_.names.erase_scratch(scratch_ino);
  state_.names.set_named(scratch_ino, Node{NodeKind::zarr_chunk, n});  // the renamed inode keeps working for open files
  if (auto dir_ino = computed_inode(dir)) notes.entries.emplace_back(*dir_ino, to);
  else if (dir.kind == NodeKind::root) state_.note_entry(notes, NodeKind::root, to);
  state_.note_inode(notes, kZarrChunkBase + uint64_t(n));
  state_.note_inode(notes, kZarr2ChunkBase + uint64_t(n));
}

void ZarrView::commit_attributes(uint64_t scratch_ino, KernelNotes& notes) {
  const std::string what = "zarr.json";
  Json attributes;
  std::vector<std::pair<std::string, Bytes>> sets;
  std::vector<std::string> removals;
  std::string scratch_name;
  {
    ReaderLock lock(state_.mutex);
    const ZarrFiles* z = state_.files->zarr();
    if (!z) throw FsError{ENOENT};
    const Scratch& s = *state_.names.scratch(scratch_ino);
    scratch_name = s.node.name;
    std::string why;
    std::optional<Json> changed = zarr_attributes_only_change(z->array_json(), std::string_view(reinterpret_cast<const char*>(s.content.data()), s.content.size()), &why);
    if (!changed) {
      spdlog::warn("{}: write refused: {}; only \"attributes\" can change, the array is unchanged", what, why);
      throw FsError{EPERM};
    }
    attributes = std::move(*changed);
    for (const LayerFile& layer : state_.files->vlmetas()) {
      if (!layer.attrs_text) continue;  // not shown as an attribute: left as it is
      if (!attributes.contains(layer.name)) removals.push_back(layer.name);
    }
    for (const auto& [name, value] : attributes.items()) {
      const LayerFile* layer = state_.files->find_vlmeta(name);
      if (layer && layer->attrs_text && Json::parse(*layer->attrs_text) == value) continue;
      if (layer && !layer->attrs_text) {
        spdlog::warn("{}: write refused: attribute {} names a vlmetalayer that is not JSON; the array is unchanged",
                     what, name);
        throw FsError{EPERM};
      }
      if (!layer) state_.check_new_layer(NodeKind::attrs_dir, name);
      sets.emplace_back(name, commits_.attrs_to_msgpack(what + " attribute " + name, as_bytes(value.dump())));
    }
  }
  if (!sets.empty() || !removals.empty()) {
    commits_.run_commit(what, [&](FrameEditor& editor) {
      for (const std::string& name : removals) editor.remove_vlmetalayer(name);
      for (const auto& [name, bytes] : sets) editor.set_vlmetalayer(name, bytes);
    });
  }
  commits_.install({}, notes, [&]() REQUIRES(state_.mutex) {
    state_.names.drop(NodeKind::root, scratch_name);
    // The kernel holds the renamed inode under the name zarr.json until it
    // drops the entry: it goes on answering as zarr.json meanwhile.
    state_.names.set_named(scratch_ino, Node{NodeKind::zarr_json});
    state_.note_entry(notes, NodeKind::root, what);
  });
  state_.note_inode(notes, fixed_file(NodeKind::zarr_json)->ino);
  state_.note_inode(notes, fixed_file(NodeKind::zattrs)->ino);
  state_.note_inode(notes, fixed_file(NodeKind::attrs_dir)->ino);
  commits_.maybe_compact(notes, false);
}

void ZarrView::unlink(const Node& dir, const std::string& name, KernelNotes& notes) {
  commits_.mutex().assert_held();
  if (dir.kind == NodeKind::zarr2_dir) {
    ReaderLock lock(state_.mutex);
    if (!zarr_names().lookup(dir, name)) throw FsError{ENOENT};
    lock.unlock();
    refuse_v2_view(name);
  }
  std::optional<uint64_t> scratch_ino;
  std::optional<Node> target;
  {
    ReaderLock lock(state_.mutex);
    scratch_ino = scratch(dir, name);
    if (!scratch_ino) target = dir.kind == NodeKind::root && name == "zarr.json" ? Node{NodeKind::zarr_json}
                                                                             : zarr_names().lookup(dir, name);
  }
  if (scratch_ino) return edits_.unlink_scratch(*scratch_ino, notes);
  if (!target) throw FsError{ENOENT};
  if (target->kind == NodeKind::zarr_dir) throw FsError{EISDIR};
  if (target->kind != NodeKind::zarr_chunk) {
    spdlog::warn("zarr.json: cannot remove: the array's metadata is made from the frame");
    throw FsError{EPERM};
  }
  // A Zarr writer removes a chunk that holds only the fill value: zeros.
  const int64_t n = target->index;
  std::string what;
  {
    WriterLock lock(state_.mutex);
    const ZarrFiles* z = state_.files->zarr();
    if (!z || n >= state_.overlay.count()) throw FsError{ENOENT};
    what = zarr_names().path(*target);
    state_.overlay.set_chunk(n, Bytes(size_t(z->decoded_chunk_bytes()), 0));
  }
  commits_.commit_chunks(std::nullopt, what, notes);
  state_.note_inode(notes, kZarrChunkBase + uint64_t(n));
  state_.note_inode(notes, kZarr2ChunkBase + uint64_t(n));
}

}  // namespace blosc2fs
