// CommitPipeline: committing through the FrameEditor and showing the result;
// compaction; unmount.
#include "volume_commit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <set>

#include <spdlog/spdlog.h>

#include "frame_lock.h"
#include "fs_error.h"
#include "msgpack.h"

namespace blosc2fs {

namespace {

bool chunk_inode(uint64_t ino) { return ino >= kChunkBase && ino < kRawBase + uint64_t(kMaxChunksShown); }
bool zarr_inode(uint64_t ino) { return ino >= kZarrChunkBase && ino < kZarr2ChunkBase + uint64_t(kMaxZarrChunks); }

}  // namespace

// --- loading the committed state ---

CommitPipeline::CommitPipeline(VolumeState& state) : state_(state) {
  if (state_.options.writable) editor_ = std::make_unique<FrameEditor>(state_.path, 0, state_.options.edit);
}

CommitPipeline::~CommitPipeline() = default;

void CommitPipeline::load() {
  auto [frame, stamp] = state_.open_committed_frame();
  state_.disk_stamp = stamp;
  if (frame->nchunks() > kMaxChunksShown)
    throw FormatError("the frame claims " + std::to_string(frame->nchunks()) + " chunks, more than can be shown");
  state_.files = std::make_shared<FrameFiles>(frame, state_.cache, state_.options.frame_json_fields, state_.options.live_json_fields);
  state_.loader.set_frame(frame, state_.files->proxy());
  state_.overlay.reset(*state_.files, state_.overlay_limits(*state_.files));
  state_.mtime_ns = stamp.mtime_ns;
  state_.frame_access = state_.read_access();
  size_at_compaction_check_ = stamp.file_size;
}

void CommitPipeline::notes_for_changes(const FrameFiles& before, const FrameFiles& after, const ChunkChanges& changes,
                               KernelNotes& notes) {
  state_.note_inode(notes, fixed_file(NodeKind::frame_json)->ino);
  state_.note_inode(notes, fixed_file(NodeKind::index_tsv)->ino);
  state_.note_inode(notes, fixed_file(NodeKind::items_jsonl)->ino);  // made from the chunks and the kind's tags
  if (before.has_items() != after.has_items()) {
    state_.note_inode(notes, kRootIno);
    if (!after.has_items()) state_.note_entry(notes, NodeKind::root, "items.jsonl");
  }
  const int64_t old_count = before.nchunks(), new_count = after.nchunks();
  const bool chunks_changed = changes.all || !changes.chunks.empty() || changes.from != INT64_MAX ||
                              old_count != new_count;
  bool array_changed = chunks_changed;
  // What array.npy's pages in the kernel show is now wrong: not written
  // through them, or replaced under another header than the one written.
  const bool written_whole = changes.npy_written_header && before.has_array() && after.has_array() &&
                             after.npy_header_text() == *changes.npy_written_header;
  bool npy_pages_changed = chunks_changed && !written_whole &&
                           (changes.all || !changes.npy_pages_current || old_count != new_count);
  if (chunks_changed) {
    state_.note_inode(notes, fixed_file(NodeKind::data)->ino);
    const std::vector<uint64_t> known = state_.kernel.held(chunk_inode);
    const int64_t from = std::min({changes.from, old_count, new_count});
    std::set<int64_t> listed(changes.chunks.begin(), changes.chunks.end());
    for (uint64_t ino : known) {
      const bool raw = ino >= kRawBase;
      const int64_t n = int64_t(ino - (raw ? kRawBase : kChunkBase));
      if (changes.all || listed.count(n) || n >= from) state_.note_inode(notes, ino);
      if (n >= new_count)
        state_.note_entry(notes, raw ? NodeKind::raw_dir : NodeKind::chunks_dir,
                   raw ? chunk_file_name(n) + std::string(kRawSuffix) : chunk_file_name(n));
    }
    if (old_count != new_count || changes.all) {
      state_.note_inode(notes, fixed_file(NodeKind::chunks_dir)->ino);
      state_.note_inode(notes, fixed_file(NodeKind::raw_dir)->ino);
    }
  }
  // Layers: what changed, appeared or went.
  auto known_ino = [&](NodeKind dir, const std::string& name) REQUIRES(state_.mutex) {
    return state_.names.find(dir, name);
  };
  std::set<std::string> names;
  for (const LayerFile& f : before.metas()) names.insert(f.name);
  for (const LayerFile& f : after.metas()) names.insert(f.name);
  for (const std::string& name : names) {
    const LayerFile *a = before.find_meta(name), *b = after.find_meta(name);
    if (a && b && a->content == b->content) continue;
    array_changed = true;
    if (!written_whole) npy_pages_changed = true;  // else the header tells the shape it gives
    if (auto ino = known_ino(NodeKind::meta_dir, name)) state_.note_inode(notes, *ino);
    if (!a || !b) state_.note_inode(notes, fixed_file(NodeKind::meta_dir)->ino);
    if (!b) state_.note_entry(notes, NodeKind::meta_dir, name);
  }
  names.clear();
  for (const LayerFile& f : before.vlmetas()) names.insert(f.name);
  for (const LayerFile& f : after.vlmetas()) names.insert(f.name);
  for (const std::string& name : names) {
    const LayerFile *a = before.find_vlmeta(name), *b = after.find_vlmeta(name);
    const bool same = a && b && a->content == b->content && a->error == b->error;
    if (!same) {
      if (auto ino = known_ino(NodeKind::vlmeta_dir, name)) state_.note_inode(notes, *ino);
      if (!a || !b) state_.note_inode(notes, fixed_file(NodeKind::vlmeta_dir)->ino);
      if (!b) state_.note_entry(notes, NodeKind::vlmeta_dir, name);
    }
    const bool text_a = a && a->attrs_text, text_b = b && b->attrs_text;
    if (same && text_a == text_b) continue;
    if (auto ino = known_ino(NodeKind::attrs_dir, name)) state_.note_inode(notes, *ino);
    if (text_a != text_b) state_.note_inode(notes, fixed_file(NodeKind::attrs_dir)->ino);
    if (text_a && !text_b) state_.note_entry(notes, NodeKind::attrs_dir, name);
  }
  if (array_changed || before.has_preview() != after.has_preview()) {
    // Drawn anew from the new state on its next open; its size is the bound until then.
    state_.note_inode(notes, fixed_file(NodeKind::preview_png)->ino);
    if (before.has_preview() != after.has_preview()) {
      state_.note_inode(notes, kRootIno);
      if (!after.has_preview()) state_.note_entry(notes, NodeKind::root, "preview.png");
    }
  }
  // The Zarr view: its texts follow the attributes, its chunk files the chunks,
  // its directories the array's shape (a few inodes; the kernel holds the rest).
  state_.note_inode(notes, fixed_file(NodeKind::zarr_json)->ino);
  state_.note_inode(notes, fixed_file(NodeKind::zarray)->ino);
  state_.note_inode(notes, fixed_file(NodeKind::zattrs)->ino);
  if (array_changed || (before.zarr() == nullptr) != (after.zarr() == nullptr)) {
    state_.note_inode(notes, kRootIno);
    state_.note_inode(notes, fixed_file(NodeKind::zarr_dir)->ino);
    state_.note_inode(notes, fixed_file(NodeKind::zarr2_dir)->ino);
    const std::vector<uint64_t> known = state_.kernel.held(zarr_inode);
    for (uint64_t ino : known) state_.note_inode(notes, ino);
  }
  if (npy_pages_changed || before.has_array() != after.has_array()) {
    state_.note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
    if (before.has_array() != after.has_array()) {
      state_.note_inode(notes, kRootIno);
      if (!after.has_array()) state_.note_entry(notes, NodeKind::root, "array.npy");
    }
  } else if (array_changed) {
    notes.attributes.push_back(fixed_file(NodeKind::array_npy)->ino);  // its mtime
  }
}

void CommitPipeline::install(const ChunkChanges& changes, KernelNotes& notes, const std::function<void()>& after) {
  std::shared_ptr<const Frame> frame;
  std::shared_ptr<FrameFiles> files;
  FrameStamp stamp;
  ChunkOverlay::Limits limits;
  try {
    std::tie(frame, stamp) = state_.open_committed_frame();
    files = std::make_shared<FrameFiles>(frame, state_.cache, state_.options.frame_json_fields, state_.options.live_json_fields);
    limits = state_.overlay_limits(*files);
  } catch (const std::exception& e) {
    spdlog::error("{}: cannot load the frame after a change: {}", state_.path.string(), e.what());
    throw FsError{EIO};
  }
  WriterLock lock(state_.mutex);
  std::shared_ptr<FrameFiles> before = state_.files;
  state_.loader.set_frame(frame, files->proxy());
  state_.files = files;
  state_.disk_stamp = stamp;
  state_.mtime_ns = stamp.mtime_ns;
  if (changes.all) {
    state_.cache.clear();
  } else {
    for (int64_t n : changes.chunks) state_.cache.invalidate(n);
    const int64_t from = std::min({changes.from, before->nchunks(), files->nchunks()});
    if (from < INT64_MAX) state_.cache.invalidate_from(from);
  }
  if (after) after();
  // Nothing written waiting: the chunks are the frame's, however many it has
  // now (another writer may have added some).
  if (state_.overlay.clean()) state_.overlay.reset(*state_.files, limits);
  else state_.overlay.rebase(*state_.files, limits);
  const bool same_chunks = !changes.all && changes.chunks.empty() && changes.from == INT64_MAX &&
                           before->nchunks() == state_.files->nchunks();
  if (same_chunks) state_.files->keep_preview_of(*before);  // a commit of layers only: the same picture
  notes_for_changes(*before, *state_.files, changes, notes);
}

// --- committing ---

void CommitPipeline::fail(const std::string& what, int error, const std::string& why) {
  spdlog::error("{}: not stored in the frame: {}", what, why);
  throw FsError{error};
}

namespace {

// The store lock of VolumeOptions::store_lock, when there is one and its sidecar exists.
class StoreLock {
 public:
  explicit StoreLock(const std::filesystem::path& path) : sidecar_(path) {
    if (!path.empty() && sidecar_.open(false)) {
      sidecar_.lock_exclusive();
      locked_ = true;
    }
  }
  ~StoreLock() {
    if (locked_) sidecar_.unlock();
  }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  LockSidecar sidecar_;
  bool locked_ = false;
};

}  // namespace

void CommitPipeline::run_commit(const std::string& what, const std::function<void(FrameEditor&)>& stage) {
  if (!editor_) throw FsError{EROFS};
  std::optional<StoreLock> store_lock;
  auto failed = [&](int error, const std::string& why) {
    // The frame is as it was; these edits are dropped so that the next
    // commit (of another file) does not carry them or fail on them.
    try {
      editor_->discard_staged_edits();
    } catch (...) {
    }
    // A sparse frame keeps the chunk files the failed commit wrote until a
    // later commit deletes them; on a full disk that commit could never run.
    // Compacting a sparse frame only deletes unreferenced files.
    std::error_code ec;
    if (error == ENOSPC && std::filesystem::is_directory(state_.path, ec)) {
      try {
        editor_->compact();
      } catch (const std::exception& e) {
        spdlog::warn("{}: cannot remove what the failed commit left: {}", state_.path.string(), e.what());
      }
    }
    fail(what, error, why);
  };
  try {
    store_lock.emplace(state_.options.store_lock);
    stage(*editor_);
    editor_->commit();
  } catch (const FsError& e) {
    failed(e.error, std::strerror(e.error));
  } catch (const IoError& e) {
    failed(e.error_number(), e.what());
  } catch (const FormatError& e) {
    failed(EIO, e.what());
  } catch (const std::bad_alloc&) {
    failed(ENOMEM, "out of memory");
  }
  committed_any_ = true;
}

Bytes CommitPipeline::attrs_to_msgpack(const std::string& what, ByteSpan text) const {
  try {
    return json_text_to_msgpack(as_text(text));
  } catch (const FormatError& e) {
    fail(what, EINVAL, e.what());
  }
}

void CommitPipeline::commit_draft(uint64_t ino, KernelNotes& notes) {
  MutexLock commit(mutex_);
  Node node;
  Bytes content;
  uint64_t version = 0;
  bool poisoned = false, created = false;
  std::shared_ptr<CommitOutcome> outcome;
  std::optional<Bytes> current;  // the stored content, to skip commits that change nothing
  std::optional<std::string> current_text;
  {
    ReaderLock lock(state_.mutex);
    const Draft* draft = state_.names.draft(ino);
    if (!draft || !draft->dirty) return;
    if (std::optional<Node> computed = computed_node(ino)) node = *computed;
    else if (const Node* named = state_.names.named(ino)) node = *named;
    else return;
    const Draft& d = *draft;
    content = d.content;
    version = d.version;
    poisoned = d.poisoned;
    created = d.created;
    outcome = d.outcome;
    const LayerFile* layer = node.kind == NodeKind::meta ? state_.files->find_meta(node.name)
                             : is_layer(node.kind)       ? state_.files->find_vlmeta(node.name)
                                                         : nullptr;
    if (layer && layer->error.empty()) current = layer->content;
    if (layer && node.kind == NodeKind::attrs) current_text = layer->attrs_text;
  }
  const std::string what = state_.path_of_node(node);
  auto drop_draft = [&, ino](bool only_if_unchanged) REQUIRES(state_.mutex) {
    const Draft* d = state_.names.draft(ino);
    if (d && (!only_if_unchanged || d->version == version)) state_.names.erase_draft(ino);
  };
  try {
    if (poisoned) fail(what, EINVAL, "the text written is not valid JSON");
    if (node.kind == NodeKind::attrs) {
      // The text as read back: stored bytes stay exactly as they are.
      if (current_text && as_text(content) == *current_text) {
        current = content;
      } else {
        content = attrs_to_msgpack(what, content);
      }
    }
    if (current && *current == content && node.kind != NodeKind::raw_chunk) {
      WriterLock lock(state_.mutex);
      drop_draft(true);
      state_.note_inode(notes, ino);  // the page cache may hold another spelling of the same JSON
      return;
    }
    int64_t appended_raw = -1;
    run_commit(what, [&](FrameEditor& editor) {
      switch (node.kind) {
        case NodeKind::meta: editor.set_metalayer(node.name, content); break;
        case NodeKind::vlmeta:
        case NodeKind::attrs: editor.set_vlmetalayer(node.name, content); break;
        case NodeKind::raw_chunk:
          if (created) {
            appended_raw = node.index;
            editor.append_raw_chunk(content);
          } else {
            editor.replace_raw_chunk(node.index, content);
          }
          break;
        default: throw FsError{EACCES};
      }
    });
    ChunkChanges changes;
    if (node.kind == NodeKind::raw_chunk) changes.chunks.push_back(node.index);
    (void)appended_raw;
    install(changes, notes, [&]() REQUIRES(state_.mutex) { drop_draft(true); });
    state_.note_inode(notes, ino);
  } catch (const FsError& e) {
    WriterLock lock(state_.mutex);
    outcome->error = e.error;
    drop_draft(false);
    state_.note_inode(notes, ino);
    if (created) state_.note_entry(notes, directory_of(node), file_name_of(node));
    throw;
  }
  maybe_compact(notes, false);
}

void CommitPipeline::commit_chunks(std::optional<int64_t> skip, const std::string& what, KernelNotes& notes) {
  ChunkOverlay::Batch batch;
  std::shared_ptr<CommitOutcome> outcome;
  int64_t zeros_needed = 0;
  ChunkChanges changes;
  // A failed commit drops every staged edit: the views show the frame again.
  auto drop_staged = [&](int error) REQUIRES(state_.mutex) {
    outcome->error = error;
    state_.overlay_outcome = std::make_shared<CommitOutcome>();
    const int64_t count = state_.overlay.count();
    state_.overlay.discard();
    state_.note_inode(notes, fixed_file(NodeKind::data)->ino);
    state_.note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
    for (int64_t n : changes.chunks) {
      state_.note_inode(notes, kChunkBase + uint64_t(n));
      if (n >= state_.overlay.count()) state_.note_entry(notes, NodeKind::chunks_dir, chunk_file_name(n));
    }
    if (count != state_.overlay.count()) state_.note_inode(notes, fixed_file(NodeKind::chunks_dir)->ino);
  };
  {
    // Chunks held by region and not written whole take the committed bytes
    // they lack now, each decoded once (under the lock: their gaps change).
    WriterLock lock(state_.mutex);
    outcome = state_.overlay_outcome;
    try {
      state_.overlay.complete(*state_.files, skip);
    } catch (const std::exception& e) {
      const ChunkOverlay::Batch pending = state_.overlay.batch(skip);
      for (const auto* list : {&pending.replace, &pending.append})
        for (const auto& entry : *list) changes.chunks.push_back(entry.first);
      drop_staged(EIO);
      spdlog::error("{}: not stored in the frame: the chunks written cannot be completed: {}", what, e.what());
      throw FsError{EIO};
    }
    batch = state_.overlay.batch(skip);
    if (!batch.empty()) {
      // Stale pages are dropped by this commit's notes (or, if it fails, by drop_staged's).
      changes.npy_pages_current = batch.truncate_to < 0 && batch.append.empty() && !state_.npy_pages_stale;
      state_.npy_pages_stale = false;
    }
  }
  if (batch.empty()) return;
  for (const auto* list : {&batch.replace, &batch.append})
    for (const auto& [n, held] : *list) {
      changes.chunks.push_back(n);
      if (held->zeros) zeros_needed = std::max(zeros_needed, held->size);
      if (!held->written_through_pages) changes.npy_pages_current = false;
    }
  if (batch.truncate_to >= 0) changes.from = batch.truncate_to;
  const Bytes zeros(size_t(zeros_needed), 0);
  auto bytes_of = [&](const ChunkOverlay::Held* held) -> ByteSpan {
    if (held->zeros) return ByteSpan(zeros.data(), size_t(held->size));
    return held->bytes.bytes();
  };
  try {
    run_commit(what, [&](FrameEditor& editor) {
      if (batch.truncate_to >= 0) editor.truncate_chunks(batch.truncate_to);
      std::vector<FrameEditor::ChunkPut> puts;
      for (const auto& [n, held] : batch.replace) puts.push_back({n, bytes_of(held)});
      for (const auto& [n, held] : batch.append) puts.push_back({-1, bytes_of(held)});
      editor.put_chunks(puts);
    });
  } catch (const FsError& e) {
    WriterLock lock(state_.mutex);
    drop_staged(e.error);
    throw;
  }
  install(changes, notes, [&]() REQUIRES(state_.mutex) { state_.overlay.committed(batch, state_.files->nchunks()); });
}

// --- compaction and unmount ---

void CommitPipeline::maybe_compact(KernelNotes& notes, bool at_unmount) {
  if (!editor_) return;
  constexpr int64_t kCommitsBetweenChecks = 64;
  std::error_code ec;
  const bool sparse = std::filesystem::is_directory(state_.path, ec);
  const int64_t size = int64_t(std::filesystem::file_size(sparse ? state_.path / "chunks.b2frame" : state_.path, ec));
  ++commits_since_compaction_check_;
  // Counting unused bytes reads every chunk header: only now and then.
  if (!at_unmount && commits_since_compaction_check_ < kCommitsBetweenChecks &&
      size - size_at_compaction_check_ < state_.options.edit.compact_min_bytes / 4)
    return;
  commits_since_compaction_check_ = 0;
  size_at_compaction_check_ = size;
  try {
    if (!editor_->compaction_due()) return;
    const int64_t unused = editor_->unused_bytes();
    StoreLock store_lock(state_.options.store_lock);
    editor_->compact();
    spdlog::info("{}: compacted, {} unused bytes reclaimed", state_.path.string(), unused);
  } catch (const std::exception& e) {
    spdlog::warn("{}: compaction failed, the frame is unchanged: {}", state_.path.string(), e.what());
    return;
  }
  size_at_compaction_check_ = int64_t(std::filesystem::file_size(sparse ? state_.path / "chunks.b2frame" : state_.path, ec));
  try {
    install({}, notes);
  } catch (const FsError&) {
  }
}

void CommitPipeline::shutdown() {
  if (!editor_) return;
  KernelNotes notes;  // the kernel has let go already
  std::vector<uint64_t> dirty;
  {
    ReaderLock lock(state_.mutex);
    for (const auto& [ino, d] : state_.names.drafts())
      if (d.dirty) dirty.push_back(ino);
  }
  for (uint64_t ino : dirty) {
    try {
      commit_draft(ino, notes);
    } catch (const FsError&) {
    }
  }
  MutexLock commit(mutex_);
  try {
    commit_chunks(std::nullopt, "data", notes);
  } catch (const FsError&) {
  }
  // Layers moved onto scratch names and never written anew: removed, as a
  // rename away from the name said.
  std::vector<std::pair<NodeKind, std::string>> removals;
  {
    ReaderLock lock(state_.mutex);
    for (const auto& [ino, s] : state_.names.scratches())
      if (s.origin && (s.node.dir == NodeKind::vlmeta_dir || s.node.dir == NodeKind::attrs_dir) &&
          state_.files->find_vlmeta(*s.origin))
        removals.emplace_back(s.node.dir, *s.origin);
  }
  for (const auto& removal : removals) {
    const std::string& name = removal.second;
    try {
      run_commit(path_in(removal.first, name),
                 [&](FrameEditor& editor) { editor.remove_vlmetalayer(name); });
      install({}, notes);
    } catch (const FsError&) {
    }
  }
  // Reclaim what this mount's commits left (counting reads every chunk
  // header, so not after a mount that changed nothing).
  if (committed_any_) maybe_compact(notes, true);
}

}  // namespace blosc2fs
