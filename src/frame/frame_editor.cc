// FrameEditor: a loaded Frame and its staged edits (edit_staging.*), committed
// under c-blosc2's .b2lock protocol with the crash-safe plans of frame_commit.cc /
// sparse_commit.cc, compacted, or replaced whole.
#include "frame_editor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "edit_staging.h"
#include "error.h"
#include "frame_editor_internal.h"
#include "frame_lock.h"
#include "frame_writer.h"
#include "unique_fd.h"
#include "utf8.h"

namespace blosc2fs {

using editor::fail;

struct FrameEditor::Impl {
  std::filesystem::path path;
  int64_t offset = 0;
  EditOptions options;
  bool sparse = false;
  std::unique_ptr<Frame> frame;
  bool base_vlblocks = false;
  FrameStamp stamp;
  LockSidecar sidecar;
  std::optional<uint64_t> seen_counter;  // the sidecar counter our loaded state corresponds to
  editor::EditStaging staging{path, frame};
  mutable std::optional<int64_t> unused_cache;
  uint64_t compaction_nonce = editor::random_nonce();
  mutable std::optional<int> exchange_error;  // sparse: probe_directory_exchange's answer, once asked

  Impl(const std::filesystem::path& p, int64_t off, EditOptions opt)
      : path(p), offset(off), options(opt), sparse(std::filesystem::is_directory(p)),
        sidecar(LockSidecar::path_for(p, sparse), sparse ? p / "chunks.b2frame" : p) {}

  std::filesystem::path header_path() const { return sparse ? path / "chunks.b2frame" : path; }
  // The path that names the frame in its parent directory (a sparse frame
  // given as "dir/" or "dir/." names "dir"), where a rewrite is put beside it.
  std::filesystem::path frame_path() const {
    std::filesystem::path p = path;
    while ((p.filename().empty() || p.filename() == ".") && p.has_parent_path() && p.parent_path() != p)
      p = p.parent_path();
    return p;
  }

  bool chunk0_vlblocks() const {
    if (frame->nchunks() == 0) return frame->header().general_flags & 0x80;
    IndexEntry e = frame->index_entry(0);
    if (e.special != Special::none) return false;
    std::filesystem::path file = sparse ? path / editor::chunk_file_name(e.raw) : path;
    int64_t at = sparse ? 0 : offset + frame->header().header_len + e.raw;
    int64_t avail = editor::file_size_of(file) - at;
    Bytes head = editor::read_exact(file, at, std::clamp<int64_t>(avail, 0, kExtendedHeaderSize));
    return parse_chunk_header(head).vlblocks();
  }

  void load_frame() {
    FrameStamp before = read_frame_stamp(header_path(), sparse ? 0 : offset);
    std::unique_ptr<Frame> opened = Frame::open(path, offset);
    // Older layouts are read only: their headers, trailers and flags are not
    // what the commit engine writes, and c-blosc2 3.x could not open the result.
    if (opened->header().legacy())
      throw UnsupportedError(path.string() + ": frames of the older " +
                             frame_layout_name(opened->header().layout) +
                             " layout are read-only (c-blosc2 3.x cannot open them)");
    frame = std::move(opened);
    stamp = before;
    base_vlblocks = chunk0_vlblocks();
    unused_cache.reset();
  }

  void reset_staged() { staging.reset(base_vlblocks); }

  // Opens the sidecar when one exists (or should be created); c-blosc2 may
  // create it at any time, so this is retried before each locked operation.
  void open_sidecar(bool for_writing) {
    if (!sidecar.is_open()) sidecar.open(for_writing && options.create_lock_sidecar);
  }

  bool changed_on_disk(std::optional<uint64_t> counter) const {
    if (counter && seen_counter && *counter != *seen_counter) return true;
    return read_frame_stamp(header_path(), sparse ? 0 : offset) != stamp;
  }

  // After another writer changed the frame: reload and keep the staged edits
  // when they still apply (same chunk count and chunksize).
  void rebase(std::optional<uint64_t> counter) {
    load_frame();
    seen_counter = counter;
    staging.rebase(base_vlblocks);
  }

  void check_writable() const {
    if (::access(header_path().c_str(), W_OK) != 0 || (sparse && ::access(path.c_str(), W_OK) != 0))
      fail(path, "the frame is not writable", EROFS);
  }

  editor::PlannedCommit plan() const {
    std::vector<Vlmetalayer> layers = staging.vlmetalayers();
    if (layers.size() > size_t(kMaxMetalayers) && layers.size() > frame->vlmetalayers().size())
      fail(path, "more than 16 vlmetalayers", ENOSPC);
    return sparse ? editor::plan_sparse_commit(*frame, staging.edits(), options.sync)
                  : editor::plan_contiguous_commit(*frame, staging.edits(), options.sync);
  }
};

FrameEditor::FrameEditor(const std::filesystem::path& path, int64_t offset, EditOptions options)
    : impl_(std::make_unique<Impl>(path, offset, options)) {
  if (offset < 0) fail(path, "negative frame offset", EINVAL);
  impl_->open_sidecar(false);
  SidecarLockGuard guard(impl_->sidecar, SidecarLockGuard::Mode::shared);
  impl_->load_frame();
  impl_->seen_counter = guard.counter();
  impl_->reset_staged();
}

FrameEditor::~FrameEditor() = default;

const Frame& FrameEditor::frame() const { return *impl_->frame; }

bool FrameEditor::refresh() {
  Impl& m = *impl_;
  if (!m.staging.empty()) fail(m.path, "cannot refresh with staged edits", EBUSY);
  m.open_sidecar(false);
  SidecarLockGuard guard(m.sidecar, SidecarLockGuard::Mode::shared);
  if (!m.changed_on_disk(guard.counter())) {
    m.seen_counter = guard.counter();
    return false;
  }
  m.load_frame();
  m.seen_counter = guard.counter();
  m.reset_staged();
  return true;
}

void FrameEditor::set_vlmetalayer(const std::string& name, ByteSpan content) {
  impl_->staging.set_vlmetalayer(name, content);
}

void FrameEditor::remove_vlmetalayer(const std::string& name) { impl_->staging.remove_vlmetalayer(name); }

void FrameEditor::rename_vlmetalayer(const std::string& from, const std::string& to) {
  impl_->staging.rename_vlmetalayer(from, to);
}

void FrameEditor::set_metalayer(const std::string& name, ByteSpan content) {
  impl_->staging.set_metalayer(name, content);
}

void FrameEditor::replace_chunk(int64_t n, ByteSpan data) {
  const ChunkPut put{n, data};
  impl_->staging.put_chunks({&put, 1});
}

void FrameEditor::put_chunks(std::span<const ChunkPut> puts) { impl_->staging.put_chunks(puts); }

void FrameEditor::replace_raw_chunk(int64_t n, ByteSpan chunk) { impl_->staging.replace_raw_chunk(n, chunk); }

void FrameEditor::append_chunk(ByteSpan data) {
  const ChunkPut put{-1, data};
  impl_->staging.put_chunks({&put, 1});
}

void FrameEditor::append_raw_chunk(ByteSpan chunk) { impl_->staging.append_raw_chunk(chunk); }

void FrameEditor::truncate_chunks(int64_t nchunks) { impl_->staging.truncate_chunks(nchunks); }

bool FrameEditor::has_staged_edits() const { return !impl_->staging.empty(); }

void FrameEditor::discard_staged_edits() { impl_->reset_staged(); }

CommitPlan FrameEditor::plan_commit() const {
  if (!has_staged_edits()) return {};
  CommitPlan steps = impl_->plan().steps;
  // A plan handed out may outlive this editor: its writes own their bytes.
  for (CommitStep& step : steps)
    if (!step.borrowed.empty()) {
      step.data.assign(step.borrowed.begin(), step.borrowed.end());
      step.borrowed = {};
    }
  return steps;
}

void FrameEditor::commit() {
  Impl& m = *impl_;
  if (!has_staged_edits()) return;
  m.check_writable();
  m.open_sidecar(true);
  SidecarLockGuard guard(m.sidecar, SidecarLockGuard::Mode::exclusive);
  if (m.changed_on_disk(guard.counter())) m.rebase(guard.counter());
  m.staging.check_array_chunks();
  editor::PlannedCommit planned = m.plan();
  size_t done = 0;
  try {
    editor::StepExecutor executor;
    for (const CommitStep& step : planned.steps) {
      executor.run(step);
      ++done;
    }
    executor.finish();
  } catch (...) {
    // The old state is still what a reader sees unless the switch happened;
    // then only the in-place metalayer writes may be missing.
    bool switched = planned.switch_step != SIZE_MAX && done > planned.switch_step;
    bool metalayers_done = planned.metalayer_first_step == SIZE_MAX || done >= planned.steps.size();
    if (!switched) {
      // A temporary file the rename would have consumed (chunk files are
      // unreferenced and go with the next commit).
      int err = 0;
      try {
        throw;
      } catch (const IoError& e) {
        err = e.error_number();
      } catch (...) {
      }
      size_t ours = done + (done < planned.steps.size() && err != EEXIST ? 1 : 0);
      for (size_t i = 0; i < ours; ++i) {
        const CommitStep& step = planned.steps[i];
        if (step.kind == CommitStep::Kind::write && step.create && step.path.filename().string().front() == '.')
          ::unlink(step.path.c_str());
      }
    }
    m.staging.renew_temp_nonce();
    try {
      m.load_frame();
      if (guard.counter()) m.seen_counter = *guard.counter() + 1;
      if (switched && metalayers_done) m.reset_staged();
      else if (switched) m.staging.reset_keeping_metalayer_writes(m.base_vlblocks);
    } catch (...) {
    }
    throw;
  }
  if (m.options.sync && guard.counter()) m.sidecar.sync();
  m.load_frame();
  if (guard.counter()) m.seen_counter = *guard.counter() + 1;
  m.reset_staged();
}

int64_t FrameEditor::unused_bytes() const {
  if (!impl_->unused_cache) impl_->unused_cache = editor::count_unused_bytes(*impl_->frame);
  return *impl_->unused_cache;
}

CommitPlan FrameEditor::plan_compaction() const {
  CommitPlan plan;
  editor::generate_compaction(*impl_->frame, impl_->options.sync, impl_->compaction_nonce,
                              [&](CommitStep&& step) { plan.push_back(std::move(step)); });
  return plan;
}

void FrameEditor::compact() {
  Impl& m = *impl_;
  if (m.offset > 0) fail(m.path, "a frame embedded at an offset is never compacted", EINVAL);
  m.check_writable();
  m.open_sidecar(true);
  SidecarLockGuard guard(m.sidecar, SidecarLockGuard::Mode::exclusive);
  if (m.changed_on_disk(guard.counter())) m.rebase(guard.counter());
  if (m.sparse)
    for (const std::filesystem::path& stale : editor::stale_rewrite_dirs(m.frame_path())) editor::remove_sparse_tree(stale);
  std::optional<std::filesystem::path> temp;
  bool renamed = false;
  try {
    editor::StepExecutor executor;
    editor::generate_compaction(*m.frame, m.options.sync, m.compaction_nonce, [&](CommitStep&& step) {
      if (step.kind == CommitStep::Kind::write && step.create) temp = step.path;
      executor.run(step);
      if (step.kind == CommitStep::Kind::rename) renamed = true;
    });
    executor.finish();
  } catch (...) {
    if (temp && !renamed) ::unlink(temp->c_str());
    m.compaction_nonce = editor::random_nonce();
    throw;
  }
  m.compaction_nonce = editor::random_nonce();
  if (m.options.sync && guard.counter()) m.sidecar.sync();
  m.load_frame();
  if (guard.counter()) m.seen_counter = *guard.counter() + 1;
}

std::optional<LayerNameRefusal> refuse_layer_name(std::string_view name) {
  if (name.empty()) return LayerNameRefusal{EINVAL, "a vlmetalayer name cannot be empty"};
  if (name.size() > size_t(kMaxMetalayerNameLen))
    return LayerNameRefusal{ENAMETOOLONG, "vlmetalayer names are at most " + std::to_string(kMaxMetalayerNameLen) +
                                              " bytes ('" + std::string(name) + "' has " +
                                              std::to_string(name.size()) + ")"};
  // c-blosc2 takes any bytes, but python-blosc2 decodes every name as UTF-8: a
  // name that is not leaves a frame whose vlmeta it cannot list.
  if (!valid_utf8(name))
    return LayerNameRefusal{EINVAL, "a vlmetalayer name must be UTF-8 text (python-blosc2 reads names as such)"};
  return std::nullopt;
}

CompressParams FrameEditor::compress_params() const { return impl_->staging.compress_params(); }

std::filesystem::path FrameEditor::rewrite_temp_path() const {
  const Impl& m = *impl_;
  if (m.offset > 0) fail(m.path, "a frame embedded at an offset is never rewritten whole", EOPNOTSUPP);
  const std::filesystem::path frame_path = m.frame_path();
  std::filesystem::path dir = frame_path.parent_path();
  if (dir.empty()) dir = ".";
  if (m.sparse) {
    // Checked once: a directory whose file system cannot swap directories keeps
    // the commit of chunk files (FrameEditor's callers fall back to it).
    if (!m.exchange_error) m.exchange_error = editor::probe_directory_exchange(frame_path);
    if (*m.exchange_error != 0)
      fail(dir, std::string("cannot swap a new sparse frame in beside the old one (renameat2 RENAME_EXCHANGE: ") +
                    std::strerror(*m.exchange_error) + ")",
           EOPNOTSUPP);
  }
  // The compaction's temporary name: a crash leaves it for the next compaction to remove.
  return editor::temp_name(dir, frame_path.filename().string(), editor::kRewriteTempTag, editor::random_nonce());
}

RetiredTree& RetiredTree::operator=(RetiredTree&& other) noexcept {
  if (this != &other) {
    remove();
    dir_ = std::exchange(other.dir_, {});
  }
  return *this;
}

void RetiredTree::remove() noexcept {
  if (dir_.empty()) return;
  try {
    editor::remove_sparse_tree(dir_);
  } catch (...) {  // only a failed allocation: the next compaction or rewrite removes the tree
  }
  dir_.clear();
}

RetiredTree FrameEditor::install_rewrite(const std::filesystem::path& temp,
                                         const std::function<FrameWriter&(const Frame& current)>& complete) {
  Impl& m = *impl_;
  bool installed = false;
  RetiredTree retired;
  const auto remove_temp = [&] {
    if (m.sparse) editor::remove_sparse_tree(temp);
    else ::unlink(temp.c_str());
  };
  try {
    if (m.offset > 0) fail(m.path, "a frame embedded at an offset is never rewritten whole", EOPNOTSUPP);
    m.check_writable();
    m.reset_staged();
    // A new sparse frame's chunk files are complete: made durable, with the
    // frame's ownership, before the lock is taken, so that others wait less.
    if (m.sparse) editor::settle_sparse_tree(temp, m.frame_path(), m.options.sync);
    // A sparse frame's sidecar is made if missing: it is carried into the new
    // directory, and one that c-blosc2 created in the old directory during the
    // exchange would be left behind with its holders.
    if (m.sparse) m.sidecar.open(true);
    else m.open_sidecar(true);
    SidecarLockGuard guard(m.sidecar, SidecarLockGuard::Mode::exclusive);
    if (m.changed_on_disk(guard.counter())) m.rebase(guard.counter());
    const std::filesystem::path frame_path = m.frame_path();
    std::filesystem::path dir = frame_path.parent_path();
    if (dir.empty()) dir = ".";
    complete(*m.frame).close();  // fsyncs the new frame (a sparse one's chunks.b2frame)
    editor::StepExecutor executor;
    if (m.sparse) {
      // The lock sidecar lives inside the directory: the new one gets the same
      // file (a second link), so the exchange does not swap the lock that
      // other writers hold or wait on, and its counter goes on.
      const std::filesystem::path lock = LockSidecar::path_for(frame_path, true);
      if (::link(lock.c_str(), LockSidecar::path_for(temp, true).c_str()) == 0) {
        if (m.options.sync) executor.run({CommitStep::Kind::fsync_dir, temp});
      } else if (errno != ENOENT) {
        throw_errno(lock.string() + ": link into the new frame");
      }
      for (const std::filesystem::path& stale : editor::stale_rewrite_dirs(frame_path))
        if (stale != temp) editor::remove_sparse_tree(stale);
      editor::exchange_directories(temp, frame_path, m.options.sync);
      installed = true;
      retired = RetiredTree(temp);  // the old frame now
    } else {
      const UniqueFd fd(::open(temp.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd.ok()) throw_errno("cannot reopen " + temp.string());
      apply_ownership(fd.get(), ownership_of(m.path), temp);
      executor.run({CommitStep::Kind::rename, temp, m.path});
      installed = true;
      if (m.options.sync) executor.run({CommitStep::Kind::fsync_dir, dir});
    }
    executor.finish();
    if (m.options.sync && guard.counter()) m.sidecar.sync();
    m.load_frame();
    m.reset_staged();
    if (guard.counter()) m.seen_counter = *guard.counter() + 1;
  } catch (...) {
    if (!installed) remove_temp();
    throw;
  }
  return retired;
}

bool FrameEditor::compaction_due() const {
  const Impl& m = *impl_;
  if (m.offset > 0) return false;
  int64_t unused = unused_bytes();
  int64_t total;
  if (m.sparse) {
    total = editor::file_size_of(m.header_path());
    for (const auto& [id, size] : editor::chunk_files_on_disk(m.path)) total += size;
  } else {
    total = editor::file_size_of(m.path);
  }
  return unused > m.options.compact_min_bytes && double(unused) > m.options.compact_fraction * double(total);
}

}  // namespace blosc2fs
