// Volume: committing through the FrameEditor and showing the result; other
// writers; compaction; unmount.
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
#include "volume.h"

namespace blosc2fs {

namespace {

bool chunk_inode(uint64_t ino) { return ino >= kChunkBase && ino < kRawBase + uint64_t(kMaxChunksShown); }
bool zarr_inode(uint64_t ino) { return ino >= kZarrChunkBase && ino < kZarr2ChunkBase + uint64_t(kMaxZarrChunks); }

}  // namespace

// --- loading the committed state ---

FrameStamp Volume::read_disk_stamp() const {
  if (options_.frame_source) return {};  // nothing on disk of its own to watch
  std::error_code ec;
  return read_frame_stamp(std::filesystem::is_directory(path_, ec) ? path_ / "chunks.b2frame" : path_);
}

std::pair<std::shared_ptr<const Frame>, FrameStamp> Volume::open_committed_frame() const {
  if (options_.frame_source) return {options_.frame_source(), FrameStamp{}};
  // Under c-blosc2's lock when the frame has one, so a cooperating writer is
  // never seen half-way.
  std::error_code ec;
  LockSidecar sidecar(LockSidecar::path_for(path_, std::filesystem::is_directory(path_, ec)));
  try {
    sidecar.open(false);
  } catch (const IoError&) {  // unreadable sidecar: read without it
  }
  SidecarLockGuard guard(sidecar, SidecarLockGuard::Mode::shared);
  FrameStamp stamp = read_disk_stamp();
  std::shared_ptr<const Frame> frame = Frame::open(path_);
  return {std::move(frame), stamp};
}

ChunkOverlay::Limits Volume::overlay_limits(const FrameFiles& files) const {
  constexpr int64_t kLargestChunk = int64_t(INT32_MAX) - 64;  // what the editor accepts
  const int32_t chunksize = files.frame().header().chunksize;
  const bool array = files.array_layout() != nullptr;
  if (chunksize > 0) return {chunksize, chunksize, array};
  int64_t grow_to = 0;
  if (chunksize == 0) grow_to = files.frame().largest_chunk_nbytes();  // variable chunks: up to the largest there is
  if (grow_to <= 0) grow_to = std::clamp<int64_t>(options_.preferred_chunksize, 1, kLargestChunk);
  return {kLargestChunk, grow_to, array};
}

void Volume::note_inode(KernelNotes& notes, uint64_t ino) {
  if (kernel_.changed(ino) || ino <= kRootIno + std::size(kRootChildren)) notes.inodes.push_back(ino);
}

void Volume::note_entry(KernelNotes& notes, NodeKind dir, const std::string& name) {
  notes.entries.emplace_back(directory_inode(dir), name);
}

void Volume::notes_for_changes(const FrameFiles& before, const FrameFiles& after, const ChunkChanges& changes,
                               KernelNotes& notes) {
  note_inode(notes, fixed_file(NodeKind::frame_json)->ino);
  note_inode(notes, fixed_file(NodeKind::index_tsv)->ino);
  note_inode(notes, fixed_file(NodeKind::items_jsonl)->ino);  // made from the chunks and the kind's tags
  if (before.has_items() != after.has_items()) {
    note_inode(notes, kRootIno);
    if (!after.has_items()) note_entry(notes, NodeKind::root, "items.jsonl");
  }
  const int64_t old_count = before.nchunks(), new_count = after.nchunks();
  const bool chunks_changed = changes.all || !changes.chunks.empty() || changes.from != INT64_MAX ||
                              old_count != new_count;
  bool array_changed = chunks_changed;
  if (chunks_changed) {
    note_inode(notes, fixed_file(NodeKind::data)->ino);
    const std::vector<uint64_t> known = kernel_.held(chunk_inode);
    const int64_t from = std::min({changes.from, old_count, new_count});
    std::set<int64_t> listed(changes.chunks.begin(), changes.chunks.end());
    for (uint64_t ino : known) {
      const bool raw = ino >= kRawBase;
      const int64_t n = int64_t(ino - (raw ? kRawBase : kChunkBase));
      if (changes.all || listed.count(n) || n >= from) note_inode(notes, ino);
      if (n >= new_count)
        note_entry(notes, raw ? NodeKind::raw_dir : NodeKind::chunks_dir,
                   raw ? chunk_file_name(n) + std::string(kRawSuffix) : chunk_file_name(n));
    }
    if (old_count != new_count || changes.all) {
      note_inode(notes, fixed_file(NodeKind::chunks_dir)->ino);
      note_inode(notes, fixed_file(NodeKind::raw_dir)->ino);
    }
  }
  // Layers: what changed, appeared or went.
  auto known_ino = [&](NodeKind dir, const std::string& name) { return names_.find(dir, name); };
  std::set<std::string> names;
  for (const LayerFile& f : before.metas()) names.insert(f.name);
  for (const LayerFile& f : after.metas()) names.insert(f.name);
  for (const std::string& name : names) {
    const LayerFile *a = before.find_meta(name), *b = after.find_meta(name);
    if (a && b && a->content == b->content) continue;
    array_changed = true;
    if (auto ino = known_ino(NodeKind::meta_dir, name)) note_inode(notes, *ino);
    if (!a || !b) note_inode(notes, fixed_file(NodeKind::meta_dir)->ino);
    if (!b) note_entry(notes, NodeKind::meta_dir, name);
  }
  names.clear();
  for (const LayerFile& f : before.vlmetas()) names.insert(f.name);
  for (const LayerFile& f : after.vlmetas()) names.insert(f.name);
  for (const std::string& name : names) {
    const LayerFile *a = before.find_vlmeta(name), *b = after.find_vlmeta(name);
    const bool same = a && b && a->content == b->content && a->error == b->error;
    if (!same) {
      if (auto ino = known_ino(NodeKind::vlmeta_dir, name)) note_inode(notes, *ino);
      if (!a || !b) note_inode(notes, fixed_file(NodeKind::vlmeta_dir)->ino);
      if (!b) note_entry(notes, NodeKind::vlmeta_dir, name);
    }
    const bool text_a = a && a->attrs_text, text_b = b && b->attrs_text;
    if (same && text_a == text_b) continue;
    if (auto ino = known_ino(NodeKind::attrs_dir, name)) note_inode(notes, *ino);
    if (text_a != text_b) note_inode(notes, fixed_file(NodeKind::attrs_dir)->ino);
    if (text_a && !text_b) note_entry(notes, NodeKind::attrs_dir, name);
  }
  if (array_changed || before.has_preview() != after.has_preview()) {
    // Drawn anew from the new state on its next open; its size is the bound until then.
    note_inode(notes, fixed_file(NodeKind::preview_png)->ino);
    if (before.has_preview() != after.has_preview()) {
      note_inode(notes, kRootIno);
      if (!after.has_preview()) note_entry(notes, NodeKind::root, "preview.png");
    }
  }
  // The Zarr view: its texts follow the attributes, its chunk files the chunks,
  // its directories the array's shape (a few inodes; the kernel holds the rest).
  note_inode(notes, fixed_file(NodeKind::zarr_json)->ino);
  note_inode(notes, fixed_file(NodeKind::zarray)->ino);
  note_inode(notes, fixed_file(NodeKind::zattrs)->ino);
  if (array_changed || (before.zarr() == nullptr) != (after.zarr() == nullptr)) {
    note_inode(notes, kRootIno);
    note_inode(notes, fixed_file(NodeKind::zarr_dir)->ino);
    note_inode(notes, fixed_file(NodeKind::zarr2_dir)->ino);
    const std::vector<uint64_t> known = kernel_.held(zarr_inode);
    for (uint64_t ino : known) note_inode(notes, ino);
  }
  if (array_changed || before.has_array() != after.has_array()) {
    note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
    if (before.has_array() != after.has_array()) {
      note_inode(notes, kRootIno);
      if (!after.has_array()) note_entry(notes, NodeKind::root, "array.npy");
    }
  }
}

void Volume::install(const ChunkChanges& changes, KernelNotes& notes, const std::function<void()>& after) {
  std::shared_ptr<const Frame> frame;
  std::shared_ptr<FrameFiles> files;
  FrameStamp stamp;
  ChunkOverlay::Limits limits;
  try {
    std::tie(frame, stamp) = open_committed_frame();
    files = std::make_shared<FrameFiles>(frame, cache_, options_.frame_json_fields, options_.live_json_fields);
    limits = overlay_limits(*files);
  } catch (const std::exception& e) {
    spdlog::error("{}: cannot load the frame after a change: {}", path_.string(), e.what());
    throw FsError{EIO};
  }
  std::unique_lock lock(state_mutex_);
  std::shared_ptr<FrameFiles> before = files_;
  loader_.set_frame(frame, files->proxy());
  files_ = files;
  disk_stamp_ = stamp;
  mtime_ns_ = stamp.mtime_ns;
  if (changes.all) {
    cache_.clear();
  } else {
    for (int64_t n : changes.chunks) cache_.invalidate(n);
    const int64_t from = std::min({changes.from, before->nchunks(), files->nchunks()});
    if (from < INT64_MAX) cache_.invalidate_from(from);
  }
  if (after) after();
  // Nothing written waiting: the chunks are the frame's, however many it has
  // now (another writer may have added some).
  if (overlay_.clean()) overlay_.reset(*files_, limits);
  else overlay_.rebase(*files_, limits);
  const bool same_chunks = !changes.all && changes.chunks.empty() && changes.from == INT64_MAX &&
                           before->nchunks() == files_->nchunks();
  if (same_chunks) files_->keep_preview_of(*before);  // a commit of layers only: the same picture
  notes_for_changes(*before, *files_, changes, notes);
}

// --- committing ---

void Volume::fail(const std::string& what, int error, const std::string& why) const {
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

void Volume::run_commit(const std::string& what, const std::function<void(FrameEditor&)>& stage) {
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
    if (error == ENOSPC && std::filesystem::is_directory(path_, ec)) {
      try {
        editor_->compact();
      } catch (const std::exception& e) {
        spdlog::warn("{}: cannot remove what the failed commit left: {}", path_.string(), e.what());
      }
    }
    fail(what, error, why);
  };
  try {
    store_lock.emplace(options_.store_lock);
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

Bytes Volume::attrs_to_msgpack(const std::string& what, ByteSpan text) const {
  try {
    return json_text_to_msgpack(as_text(text));
  } catch (const FormatError& e) {
    fail(what, EINVAL, e.what());
  }
}

void Volume::commit_draft(uint64_t ino, KernelNotes& notes) {
  std::lock_guard commit(commit_mutex_);
  Node node;
  Bytes content;
  uint64_t version = 0;
  bool poisoned = false, created = false;
  std::shared_ptr<CommitOutcome> outcome;
  std::optional<Bytes> current;  // the stored content, to skip commits that change nothing
  std::optional<std::string> current_text;
  {
    std::shared_lock lock(state_mutex_);
    const Draft* draft = names_.draft(ino);
    if (!draft || !draft->dirty) return;
    if (std::optional<Node> computed = computed_node(ino)) node = *computed;
    else if (const Node* named = names_.named(ino)) node = *named;
    else return;
    const Draft& d = *draft;
    content = d.content;
    version = d.version;
    poisoned = d.poisoned;
    created = d.created;
    outcome = d.outcome;
    const LayerFile* layer = node.kind == NodeKind::meta ? files_->find_meta(node.name)
                             : is_layer(node.kind)       ? files_->find_vlmeta(node.name)
                                                         : nullptr;
    if (layer && layer->error.empty()) current = layer->content;
    if (layer && node.kind == NodeKind::attrs) current_text = layer->attrs_text;
  }
  const std::string what = path_of_node(node);
  auto drop_draft = [&, ino](bool only_if_unchanged) {
    const Draft* d = names_.draft(ino);
    if (d && (!only_if_unchanged || d->version == version)) names_.erase_draft(ino);
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
      std::unique_lock lock(state_mutex_);
      drop_draft(true);
      note_inode(notes, ino);  // the page cache may hold another spelling of the same JSON
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
    install(changes, notes, [&] { drop_draft(true); });
    note_inode(notes, ino);
  } catch (const FsError& e) {
    std::unique_lock lock(state_mutex_);
    outcome->error = e.error;
    drop_draft(false);
    note_inode(notes, ino);
    if (created) note_entry(notes, directory_of(node), file_name_of(node));
    throw;
  }
  maybe_compact(notes, false);
}

void Volume::commit_chunks(std::optional<int64_t> skip, const std::string& what, KernelNotes& notes) {
  ChunkOverlay::Batch batch;
  std::shared_ptr<CommitOutcome> outcome;
  int64_t zeros_needed = 0;
  {
    std::shared_lock lock(state_mutex_);
    batch = overlay_.batch(skip);
    outcome = overlay_outcome_;
  }
  if (batch.empty()) return;
  ChunkChanges changes;
  for (const auto* list : {&batch.replace, &batch.append})
    for (const auto& [n, held] : *list) {
      changes.chunks.push_back(n);
      if (held->zeros) zeros_needed = std::max(zeros_needed, held->size);
    }
  if (batch.truncate_to >= 0) changes.from = batch.truncate_to;
  const Bytes zeros(size_t(zeros_needed), 0);
  auto bytes_of = [&](const ChunkOverlay::Held* held) -> ByteSpan {
    if (held->zeros) return ByteSpan(zeros.data(), size_t(held->size));
    return held->bytes;
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
    std::unique_lock lock(state_mutex_);
    outcome->error = e.error;
    overlay_outcome_ = std::make_shared<CommitOutcome>();
    const int64_t count = overlay_.count();
    overlay_.discard();
    note_inode(notes, fixed_file(NodeKind::data)->ino);
    note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
    for (int64_t n : changes.chunks) {
      note_inode(notes, kChunkBase + uint64_t(n));
      if (n >= overlay_.count()) note_entry(notes, NodeKind::chunks_dir, chunk_file_name(n));
    }
    if (count != overlay_.count()) note_inode(notes, fixed_file(NodeKind::chunks_dir)->ino);
    throw;
  }
  install(changes, notes, [&] { overlay_.committed(batch, files_->nchunks()); });
}

// --- other writers ---

void Volume::maybe_refresh(KernelNotes& notes) {
  {
    std::lock_guard lock(refresh_mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_refresh_check_ < options_.refresh_interval) return;
    last_refresh_check_ = now;
  }
  refresh_access(notes);
  std::unique_lock<std::mutex> commit(commit_mutex_, std::try_to_lock);
  if (!commit.owns_lock()) return;  // a commit is running: it reloads anyway
  {
    std::shared_lock lock(state_mutex_);
    if (!overlay_.clean() || npy_replacement_) return;  // written chunks sit on the loaded frame
  }
  bool changed;
  try {
    changed = editor_ ? editor_->refresh() : read_disk_stamp() != disk_stamp_;
  } catch (const std::exception& e) {
    spdlog::debug("{}: cannot check for changes: {}", path_.string(), e.what());
    return;
  }
  if (!changed) return;
  spdlog::info("{} was changed by another program: showing the new content", path_.string());
  ChunkChanges all;
  all.all = true;
  try {
    // Files open now were opened on the old content: they read EIO from now on.
    install(all, notes, [this] { version_ = new_version(); });
  } catch (const FsError&) {
    return;
  }
  kernel_.all_changed();
}

void Volume::refresh_access(KernelNotes& notes) {
  FrameAccess now;
  try {
    now = read_access();
  } catch (const std::exception& e) {
    spdlog::debug("{}: cannot check its owner and permissions: {}", path_.string(), e.what());
    return;
  }
  {
    std::shared_lock lock(state_mutex_);
    if (now == frame_access_) return;
  }
  {
    std::unique_lock lock(state_mutex_);
    frame_access_ = now;
  }
  spdlog::info("{}: owner, group or permissions changed (uid {}, gid {}, mode {:o}): the tree follows",
               path_.string(), now.uid, now.gid, unsigned(now.read | now.write));
  for (uint64_t ino = kRootIno; ino <= kRootIno + std::size(kRootChildren); ++ino) notes.attributes.push_back(ino);
  for (uint64_t ino : kernel_.held([](uint64_t ino) { return ino > kRootIno + std::size(kRootChildren); }))
    notes.attributes.push_back(ino);
}

// --- compaction and unmount ---

void Volume::maybe_compact(KernelNotes& notes, bool at_unmount) {
  if (!editor_) return;
  constexpr int64_t kCommitsBetweenChecks = 64;
  std::error_code ec;
  const bool sparse = std::filesystem::is_directory(path_, ec);
  const int64_t size = int64_t(std::filesystem::file_size(sparse ? path_ / "chunks.b2frame" : path_, ec));
  ++commits_since_compaction_check_;
  // Counting unused bytes reads every chunk header: only now and then.
  if (!at_unmount && commits_since_compaction_check_ < kCommitsBetweenChecks &&
      size - size_at_compaction_check_ < options_.edit.compact_min_bytes / 4)
    return;
  commits_since_compaction_check_ = 0;
  size_at_compaction_check_ = size;
  try {
    if (!editor_->compaction_due()) return;
    const int64_t unused = editor_->unused_bytes();
    StoreLock store_lock(options_.store_lock);
    editor_->compact();
    spdlog::info("{}: compacted, {} unused bytes reclaimed", path_.string(), unused);
  } catch (const std::exception& e) {
    spdlog::warn("{}: compaction failed, the frame is unchanged: {}", path_.string(), e.what());
    return;
  }
  size_at_compaction_check_ = int64_t(std::filesystem::file_size(sparse ? path_ / "chunks.b2frame" : path_, ec));
  try {
    install({}, notes);
  } catch (const FsError&) {
  }
}

void Volume::shutdown() {
  if (!editor_) return;
  KernelNotes notes;  // the kernel has let go already
  std::vector<uint64_t> dirty;
  {
    std::shared_lock lock(state_mutex_);
    for (const auto& [ino, d] : names_.drafts())
      if (d.dirty) dirty.push_back(ino);
  }
  for (uint64_t ino : dirty) {
    try {
      commit_draft(ino, notes);
    } catch (const FsError&) {
    }
  }
  std::lock_guard commit(commit_mutex_);
  try {
    commit_chunks(std::nullopt, "data", notes);
  } catch (const FsError&) {
  }
  // Layers moved onto scratch names and never written anew: removed, as a
  // rename away from the name said.
  std::vector<std::pair<NodeKind, std::string>> removals;
  {
    std::shared_lock lock(state_mutex_);
    for (const auto& [ino, s] : names_.scratches())
      if (s.origin && (s.node.dir == NodeKind::vlmeta_dir || s.node.dir == NodeKind::attrs_dir) &&
          files_->find_vlmeta(*s.origin))
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
