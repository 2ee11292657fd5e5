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
#include "volume.h"
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

bool Volume::is_zarr_scratch_name(std::string_view name) {
  constexpr std::string_view kSuffix = ".partial";
  return name.size() > kSuffix.size() && name.ends_with(kSuffix);
}

std::string Volume::zarr_scratch_key(const Node& dir, std::string_view name) const {
  return zarr_path(dir) + "/" + std::string(name);
}

std::optional<uint64_t> Volume::zarr_scratch(const Node& dir, std::string_view name) const {
  if (dir.kind != NodeKind::zarr_dir) return std::nullopt;
  return names_.scratch_named(NodeKind::zarr_dir, zarr_scratch_key(dir, name));
}

namespace {

[[noreturn]] void refuse_v2_view(std::string_view name) {
  spdlog::warn("zarr2/{}: refused: the Zarr v2 view takes no writes (write through c/ or chunks/)", name);
  throw FsError{EPERM};
}

}  // namespace

uint64_t Volume::zarr_create(const Node& dir, const std::string& name, int flags) {
  if (dir.kind == NodeKind::zarr2_dir) refuse_v2_view(name);
  if (std::optional<uint64_t> ino = zarr_scratch(dir, name)) {
    if (flags & O_EXCL) throw FsError{EEXIST};
    if (flags & O_TRUNC) names_.scratch(*ino)->content.clear();
    return *ino;
  }
  if (zarr_lookup(dir, name)) throw FsError{EACCES};  // a chunk file: written by renaming onto it
  if (!files_->zarr() || !zarr_exists(dir) || !is_zarr_scratch_name(name)) {
    spdlog::warn("{}/{}: cannot create: the Zarr view takes only a writer's temporary files (*.partial)",
                 zarr_path(dir), name);
    throw FsError{EPERM};
  }
  return names_.add_scratch(NodeKind::zarr_dir, zarr_scratch_key(dir, name), {}, std::nullopt);
}

bool Volume::zarr_owns(const Node& dir, std::string_view name) const {
  if (dir.kind == NodeKind::zarr_dir || dir.kind == NodeKind::zarr2_dir) return true;
  const ZarrFiles* z = files_->zarr();
  return dir.kind == NodeKind::root && z && (name == "zarr.json" || (name == "c" && z->zero_d()));
}

void Volume::zarr_rename(const Node& dir, const std::string& from, const std::string& to, unsigned flags,
                         KernelNotes& notes) {
  if (dir.kind == NodeKind::zarr2_dir) refuse_v2_view(from);
  std::optional<uint64_t> source;
  std::optional<Node> target;
  {
    std::shared_lock lock(state_mutex_);
    if (dir.kind == NodeKind::zarr_dir) {
      source = zarr_scratch(dir, from);
    } else if (std::optional<Node> s = lookup_node(NodeKind::root, from); s && s->kind == NodeKind::scratch) {
      source = names_.known_ino(*s);
    }
    if (to == "zarr.json" && dir.kind == NodeKind::root) target = Node{NodeKind::zarr_json};
    else target = zarr_lookup(dir, to);
    if (!source) {
      if (dir.kind == NodeKind::zarr_dir && !zarr_lookup(dir, from)) throw FsError{ENOENT};
      spdlog::warn("{}: cannot rename to {}: only a writer's temporary file can be renamed onto the Zarr view's files",
                   dir.kind == NodeKind::zarr_dir ? zarr_path(dir) + "/" + from : from, to);
      throw FsError{EPERM};
    }
  }
  if (target && (flags & RENAME_NOREPLACE)) throw FsError{EEXIST};
  if (!target) {
    // One temporary name onto another (in c/ only: the root's go the usual way).
    if (dir.kind != NodeKind::zarr_dir || !is_zarr_scratch_name(to)) {
      spdlog::warn("{}/{}: cannot rename to {}: not a chunk of the array", zarr_path(dir), from, to);
      throw FsError{EPERM};
    }
    std::unique_lock lock(state_mutex_);
    if (std::optional<uint64_t> old = zarr_scratch(dir, to)) names_.drop(NodeKind::zarr_dir, zarr_scratch_key(dir, to));
    names_.move_scratch(*source, NodeKind::zarr_dir, zarr_scratch_key(dir, to));
    return;
  }
  if (target->kind == NodeKind::zarr_json) return zarr_commit_attributes(*source, notes);
  if (target->kind != NodeKind::zarr_chunk) throw FsError{EISDIR};
  zarr_commit_chunk(*source, dir, target->index, to, notes);
}

void Volume::zarr_commit_chunk(uint64_t scratch_ino, const Node& dir, int64_t n, const std::string& to,
                               KernelNotes& notes) {
  std::string what;
  {
    std::unique_lock lock(state_mutex_);
    const ZarrFiles* z = files_->zarr();
    if (!z) throw FsError{ENOENT};
    what = zarr_path(Node{NodeKind::zarr_chunk, n});
    std::string why;
    std::optional<Bytes> decoded = z->decoded_chunk_of(names_.scratch(scratch_ino)->content, &why);
    if (!decoded) {
      spdlog::warn("{}: write refused: {}; the chunk is unchanged", what, why);
      throw FsError{EINVAL};
    }
    if (n >= overlay_.count()) throw FsError{ENOENT};
    overlay_.set_chunk(n, std::move(*decoded));
  }
  commit_chunks(std::nullopt, what, notes);
  std::unique_lock lock(state_mutex_);
  const std::string key = names_.scratch(scratch_ino)->node.name;
  names_.unbind(NodeKind::zarr_dir, key);
  names_.erase_scratch(scratch_ino);
  names_.set_named(scratch_ino, Node{NodeKind::zarr_chunk, n});  // the renamed inode keeps working for open files
  if (auto dir_ino = computed_inode(dir)) notes.entries.emplace_back(*dir_ino, to);
  else if (dir.kind == NodeKind::root) note_entry(notes, NodeKind::root, to);
  note_inode(notes, kZarrChunkBase + uint64_t(n));
  note_inode(notes, kZarr2ChunkBase + uint64_t(n));
}

void Volume::zarr_commit_attributes(uint64_t scratch_ino, KernelNotes& notes) {
  const std::string what = "zarr.json";
  Json attributes;
  std::vector<std::pair<std::string, Bytes>> sets;
  std::vector<std::string> removals;
  std::string scratch_name;
  {
    std::shared_lock lock(state_mutex_);
    const ZarrFiles* z = files_->zarr();
    if (!z) throw FsError{ENOENT};
    const Scratch& s = *names_.scratch(scratch_ino);
    scratch_name = s.node.name;
    std::string why;
    std::optional<Json> changed = zarr_attributes_only_change(z->array_json(), std::string_view(reinterpret_cast<const char*>(s.content.data()), s.content.size()), &why);
    if (!changed) {
      spdlog::warn("{}: write refused: {}; only \"attributes\" can change, the array is unchanged", what, why);
      throw FsError{EPERM};
    }
    attributes = std::move(*changed);
    for (const LayerFile& layer : files_->vlmetas()) {
      if (!layer.attrs_text) continue;  // not shown as an attribute: left as it is
      if (!attributes.contains(layer.name)) removals.push_back(layer.name);
    }
    for (const auto& [name, value] : attributes.items()) {
      const LayerFile* layer = files_->find_vlmeta(name);
      if (layer && layer->attrs_text && Json::parse(*layer->attrs_text) == value) continue;
      if (layer && !layer->attrs_text) {
        spdlog::warn("{}: write refused: attribute {} names a vlmetalayer that is not JSON; the array is unchanged",
                     what, name);
        throw FsError{EPERM};
      }
      if (!layer) check_new_layer(NodeKind::attrs_dir, name);
      sets.emplace_back(name, attrs_to_msgpack(what + " attribute " + name, as_bytes(value.dump())));
    }
  }
  if (!sets.empty() || !removals.empty()) {
    run_commit(what, [&](FrameEditor& editor) {
      for (const std::string& name : removals) editor.remove_vlmetalayer(name);
      for (const auto& [name, bytes] : sets) editor.set_vlmetalayer(name, bytes);
    });
  }
  install({}, notes, [&] {
    names_.drop(NodeKind::root, scratch_name);
    // The kernel holds the renamed inode under the name zarr.json until it
    // drops the entry: it goes on answering as zarr.json meanwhile.
    names_.set_named(scratch_ino, Node{NodeKind::zarr_json});
    note_entry(notes, NodeKind::root, what);
  });
  note_inode(notes, fixed_file(NodeKind::zarr_json)->ino);
  note_inode(notes, fixed_file(NodeKind::zattrs)->ino);
  note_inode(notes, fixed_file(NodeKind::attrs_dir)->ino);
  maybe_compact(notes, false);
}

void Volume::zarr_unlink(const Node& dir, const std::string& name, KernelNotes& notes) {
  if (dir.kind == NodeKind::zarr2_dir) {
    std::shared_lock lock(state_mutex_);
    if (!zarr_lookup(dir, name)) throw FsError{ENOENT};
    lock.unlock();
    refuse_v2_view(name);
  }
  std::optional<uint64_t> scratch;
  std::optional<Node> target;
  {
    std::shared_lock lock(state_mutex_);
    scratch = zarr_scratch(dir, name);
    if (!scratch) target = dir.kind == NodeKind::root && name == "zarr.json" ? Node{NodeKind::zarr_json}
                                                                             : zarr_lookup(dir, name);
  }
  if (scratch) return unlink_scratch(*scratch, notes);
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
    std::unique_lock lock(state_mutex_);
    const ZarrFiles* z = files_->zarr();
    if (!z || n >= overlay_.count()) throw FsError{ENOENT};
    what = zarr_path(*target);
    overlay_.set_chunk(n, Bytes(size_t(z->decoded_chunk_bytes()), 0));
  }
  commit_chunks(std::nullopt, what, notes);
  note_inode(notes, kZarrChunkBase + uint64_t(n));
  note_inode(notes, kZarr2ChunkBase + uint64_t(n));
}

}  // namespace blosc2fs
