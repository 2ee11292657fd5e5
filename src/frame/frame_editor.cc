// FrameEditor: staging edits against a loaded Frame, checking them against the
// format's rules when they are staged, and committing them under c-blosc2's
// .b2lock protocol with the crash-safe plans of frame_commit.cc / sparse_commit.cc.
#include "frame_editor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "b2nd.h"
#include "codec_registry.h"
#include "dynamic_plugins.h"
#include "error.h"
#include "frame_editor_internal.h"
#include "frame_lock.h"
#include "frame_nd.h"
#include "frame_writer.h"
#include "parallel_encode.h"
#include "unique_fd.h"

namespace blosc2fs {

using editor::StagedChunk;
using editor::VlmetaOp;

namespace {


bool all_zero(ByteSpan data) {
  return std::all_of(data.begin(), data.end(), [](uint8_t b) { return b == 0; });
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int err) {
  throw IoError(path.string() + ": " + what, err);
}

// python-blosc2 opens an N-d array only when it has exactly the chunks its
// shape needs, each of the array's chunk size: a commit to an array that has
// them (read from the metalayer as the commit would leave it) keeps them.
void check_array_chunks(const Frame& frame, const editor::StagedEdits& staged, const std::filesystem::path& path) {
  const Metalayer* nd = frame_nd_metalayer(frame);
  if (!nd) return;
  const FrameHeader& h = frame.header();
  NdMeta meta;
  try {
    meta = frame_nd_meta(frame, *nd);
    (void)NdLayout(meta, h.typesize, frame.nchunks(), h.chunksize);
  } catch (const FormatError&) {
    return;  // not an array python-blosc2 opens now: nothing to keep
  }
  const auto rewritten = staged.metalayer_writes.find(nd->name);
  if (!staged.chunks_dirty && rewritten == staged.metalayer_writes.end()) return;
  const std::string why = "an N-d array keeps the chunks its shape needs (python-blosc2 opens it only then): ";
  try {
    if (rewritten != staged.metalayer_writes.end()) {
      std::optional<std::string> dtype = meta.dtype;
      meta = parse_nd_meta(rewritten->second, nd->name == "caterva");
      if (!meta.dtype) meta.dtype = dtype;
    }
    const NdLayout after(meta, h.typesize, staged.nchunks, h.chunksize);
    for (const auto& [n, chunk] : staged.chunks)
      if (chunk.nbytes != after.chunk_bytes())
        fail(path, why + "chunk " + std::to_string(n) + " would hold " + std::to_string(chunk.nbytes) +
                       " bytes, not " + std::to_string(after.chunk_bytes()), EINVAL);
  } catch (const FormatError& e) {
    fail(path, why + e.what(), EINVAL);
  }
}

}  // namespace

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
  editor::StagedEdits staged;
  int64_t staged_base_nchunks = 0;
  int32_t staged_base_chunksize = 0;
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

  void reset_staged() {
    staged = {};
    staged.nchunks = frame->nchunks();
    staged.chunksize = frame->header().chunksize;
    staged.vlblocks = base_vlblocks;
    staged.temp_nonce = editor::random_nonce();
    staged_base_nchunks = staged.nchunks;
    staged_base_chunksize = staged.chunksize;
  }

  // Opens the sidecar when one exists (or should be created); c-blosc2 may
  // create it at any time, so this is retried before each locked operation.
  void open_sidecar(bool for_writing) {
    if (!sidecar.is_open()) sidecar.open(for_writing && options.create_lock_sidecar);
  }

  bool changed_on_disk(std::optional<uint64_t> counter) const {
    if (counter && seen_counter && *counter != *seen_counter) return true;
    return read_frame_stamp(header_path(), sparse ? 0 : offset) != stamp;
  }

  // ---- staging ----

  std::vector<Vlmetalayer> staged_vlmetalayers() const {
    return editor::apply_vlmeta_ops(frame->vlmetalayers(), staged.vlmeta_ops);
  }
  bool has_staged_vlmeta(const std::string& name) const {
    auto layers = staged_vlmetalayers();
    return std::any_of(layers.begin(), layers.end(), [&](const Vlmetalayer& l) { return l.name == name; });
  }
  void check_vlmeta_name(const std::string& name) const {
    if (name.empty()) fail(path, "vlmetalayer name is empty", EINVAL);
    if (name.size() > size_t(kMaxMetalayerNameLen))
      fail(path, "vlmetalayer name '" + name + "' is longer than 31 bytes", ENAMETOOLONG);
  }

  int32_t staged_chunk_nbytes(int64_t n) const {
    auto it = staged.chunks.find(n);
    return it != staged.chunks.end() ? it->second.nbytes : frame->chunk_nbytes(n);
  }

  CompressParams frame_compress_params() const {
    const FrameHeader& h = frame->header();
    const CodecInfo* codec = frame_codec(h);
    if (codec && codec->runtime_plugin && !codec->encodable()) {
      report_missing_plugin(*codec);
      fail(path, "the frame's codec " + frame_codec_name(h) + " is loaded at run time and no plugin is loaded (" +
                     plugin_install_hint(*codec) + "), so chunks cannot be rewritten (metadata edits still work)",
           EOPNOTSUPP);
    }
    if (!codec || !codec->encodable())
      fail(path, "the frame's codec " + frame_codec_name(h) +
                     " cannot be encoded here, so chunks cannot be rewritten (metadata edits still work)",
           EOPNOTSUPP);
    CompressParams p;
    p.codec = Codec(codec->id);
    p.geometry = frame->decode_rules().geometry;
    p.clevel = h.clevel();
    p.typesize = h.typesize;
    p.blocksize = h.blocksize;
    p.filters = h.filters;
    p.filters_meta = h.filters_meta;
    p.splitmode = h.splitmode();
    p.compcode_meta = h.compcode_meta;
    return p;
  }

  // Checks the size rules of format-notes §3.1 for putting a chunk of `nbytes`
  // at logical position n (n == staged.nchunks: append) and returns the
  // chunksize the frame has afterwards.
  int32_t check_chunk_size(int64_t n, int64_t nbytes) const {
    const int64_t count = staged.nchunks;
    const int32_t cs = staged.chunksize;
    const bool append = n == count;
    if (n < 0 || n > count)
      fail(path, "chunk " + std::to_string(n) + " does not exist (" + std::to_string(count) + " chunks)", EINVAL);
    if (nbytes <= 0 || nbytes > int64_t(INT32_MAX) - 64)
      fail(path, "chunk " + std::to_string(n) + ": size " + std::to_string(nbytes) + " is not allowed", EINVAL);
    if (cs == 0) return 0;
    if (cs < 0) {
      if (count > 0) fail(path, "chunksize is unset but the frame has chunks", EINVAL);
      return int32_t(nbytes);
    }
    if (nbytes > cs)
      fail(path, "chunk " + std::to_string(n) + ": " + std::to_string(nbytes) + " bytes exceed the chunksize " +
                     std::to_string(cs), EINVAL);
    const bool last = n == count - 1 || append;
    // The frame's one short chunk keeps any size up to chunksize wherever it
    // sits (c-blosc2's reorder and insert move it from the end).
    if (!last && nbytes != cs && n != frame->short_chunk())
      fail(path, "chunk " + std::to_string(n) + ": only the last chunk (or the one chunk already shorter) may be "
                     "shorter than the chunksize " + std::to_string(cs), EINVAL);
    if (append && count > 0 && staged_chunk_nbytes(count - 1) != cs)
      fail(path, "cannot append: the last chunk is shorter than the chunksize " + std::to_string(cs), EINVAL);
    return cs;
  }

  // After each chunk edit: how many chunks end up shorter than the fixed
  // chunksize, given that the committed chunks are all full but the frame's
  // short chunk. One: the frame keeps its chunksize, wherever that chunk sits.
  // Two (a truncation or an append behind a short chunk that is not the last):
  // the frame becomes variable, as c-blosc2's insert and update make it.
  void settle_short_chunks() {
    staged.becomes_variable = false;
    staged.short_chunk = -1;
    const int32_t cs = staged.chunksize;
    if (cs <= 0) return;
    int64_t shorts = 0, first_short = -1;
    const int64_t committed_short = frame->header().chunksize == cs ? frame->short_chunk() : -1;
    if (committed_short >= 0 && committed_short < staged.nchunks && !staged.chunks.count(committed_short)) {
      shorts = 1;
      first_short = committed_short;
    }
    for (const auto& [n, chunk] : staged.chunks) {
      if (chunk.nbytes >= cs) continue;
      ++shorts;
      if (first_short < 0 || n < first_short) first_short = n;
    }
    if (shorts >= 2) staged.becomes_variable = true;
    else staged.short_chunk = first_short;
  }

  // Stores zeros/NaN/uninit chunks the way c-blosc2 reads back everywhere:
  // special index entries with a fixed chunksize, repeat-value chunks with a
  // variable one (never a physical zeros/nan/uninit chunk, bug B3). Zeros that
  // are not a whole number of the frame's items become an ordinary chunk:
  // c-blosc2 3.3.5 cannot open a frame whose first chunk is a special entry
  // or a repeat-value chunk of such a size, nor decode one elsewhere
  // (python-blosc2's own `append_data(bytes(122))` at typesize 4 leaves a
  // frame it cannot open; the model test found the mount doing the same).
  StagedChunk finalize(Bytes stored, int32_t nbytes, int32_t chunksize_after) const {
    StagedChunk c;
    c.nbytes = nbytes;
    ChunkHeader h = parse_chunk_header(stored);
    Special kind = h.special();
    if (kind == Special::none || kind == Special::value) {
      c.stored = std::move(stored);
      return c;
    }
    const int32_t ts = frame->header().typesize;
    const bool whole_items = ts > 0 && nbytes % ts == 0;
    if (!whole_items && kind != Special::nan) {
      CompressParams params = frame_compress_params();
      params.detect_specials = false;
      c.stored = encode_chunk(Bytes(size_t(nbytes), 0), params);
      return c;
    }
    if (chunksize_after > 0 && (kind != Special::nan || (h.typesize == ts && (ts == 4 || ts == 8)))) {
      c.entry_special = kind;
      return c;
    }
    try {
      c.stored = editor::repeat_value_chunk(kind, nbytes, kind == Special::nan ? h.typesize : ts);
    } catch (const FormatError&) {
      fail(path, "NaN chunk with an unusable typesize", EINVAL);
    }
    return c;
  }

  // Whether logical chunks other than n exist after putting one at n.
  bool has_other_chunks(int64_t n) const {
    return n == staged.nchunks ? staged.nchunks > 0 : staged.nchunks > 1;
  }

  void stage_chunk(int64_t n, StagedChunk chunk, int32_t chunksize_after, bool vlblocks) {
    if (!has_other_chunks(n)) staged.vlblocks = vlblocks;  // the only chunk decides the frame's kind
    if (n == staged.nchunks) ++staged.nchunks;
    staged.chunksize = chunksize_after;
    staged.chunks[n] = std::move(chunk);
    staged.chunks_dirty = true;
  }

  // Compresses the chunks on every core, then stages them in order, each
  // checked as a single put would be (n < 0: append).
  void put_data(std::span<const FrameEditor::ChunkPut> puts) {
    std::vector<ByteSpan> inputs;
    for (const FrameEditor::ChunkPut& p : puts) inputs.push_back(p.data);
    std::exception_ptr params_error;
    CompressParams params;
    try {
      params = frame_compress_params();
    } catch (...) {
      params_error = std::current_exception();
    }
    const int32_t typesize = std::max(1, frame->header().typesize);
    std::vector<EncodedChunk> encoded = encode_in_parallel(inputs, [&](ByteSpan data) {
      if (all_zero(data)) return make_special_chunk(Special::zeros, int32_t(data.size()), typesize);
      if (params_error) std::rethrow_exception(params_error);
      return encode_chunk(data, params);
    });
    struct Settle {  // also when a put fails: those before it stay staged
      Impl& impl;
      ~Settle() { impl.settle_short_chunks(); }
    } settle{*this};
    for (size_t i = 0; i < puts.size(); ++i) {
      const int64_t n = puts[i].n < 0 ? staged.nchunks : puts[i].n;
      if (puts[i].n >= staged.nchunks) fail(path, "chunk " + std::to_string(n) + " does not exist", EINVAL);
      const int32_t cs_after = check_chunk_size(n, int64_t(inputs[i].size()));
      if (has_other_chunks(n) && staged.vlblocks)
        fail(path, "chunk " + std::to_string(n) + ": VL-block chunks cannot be compressed here; write raw chunks",
             EOPNOTSUPP);
      if (encoded[i].error) {
        try {
          std::rethrow_exception(encoded[i].error);
        } catch (const UnsupportedError& e) {
          fail(path, std::string("chunk ") + std::to_string(n) + ": " + e.what(), EOPNOTSUPP);
        } catch (const FormatError& e) {
          fail(path, std::string("chunk ") + std::to_string(n) + ": " + e.what(), EINVAL);
        }
      }
      const int32_t nbytes = int32_t(inputs[i].size());
      stage_chunk(n, finalize(std::move(encoded[i].stored), nbytes, cs_after), cs_after, false);
    }
  }

  void put_raw(int64_t n, ByteSpan chunk) {
    ChunkHeader h;
    int32_t cs_after = 0;
    try {
      h = parse_chunk_header(chunk);
      if (int64_t(h.cbytes) != int64_t(chunk.size()))
        fail(path, "raw chunk " + std::to_string(n) + ": cbytes " + std::to_string(h.cbytes) + " but " +
                       std::to_string(chunk.size()) + " bytes were given", EINVAL);
      if (h.lazy()) fail(path, "raw chunk " + std::to_string(n) + " is a lazy chunk", EINVAL);
      // Before decoding: a 32-byte chunk can claim 2 GB that the frame would refuse anyway.
      cs_after = check_chunk_size(n, h.nbytes);
      (void)ChunkView(chunk, frame->decode_rules()).decode();
    } catch (const FormatError& e) {
      fail(path, "raw chunk " + std::to_string(n) + " does not decode: " + e.what(), EINVAL);
    }
    if (has_other_chunks(n) && h.vlblocks() != staged.vlblocks)
      fail(path, std::string("raw chunk ") + std::to_string(n) +
                     (h.vlblocks() ? " has VL blocks but the frame's chunks do not" : " lacks the frame's VL blocks"),
           EINVAL);
    stage_chunk(n, finalize(Bytes(chunk.begin(), chunk.end()), h.nbytes, cs_after), cs_after, h.vlblocks());
    settle_short_chunks();
  }

  // After another writer changed the frame: reload and keep the staged edits
  // when they still apply (same chunk count and chunksize).
  void rebase(std::optional<uint64_t> counter) {
    load_frame();
    seen_counter = counter;
    if (staged.chunks_dirty &&
        (frame->nchunks() != staged_base_nchunks || frame->header().chunksize != staged_base_chunksize))
      fail(path, "changed by another writer since the chunk edits were staged", ESTALE);
    if (staged.chunks_dirty) settle_short_chunks();  // the short chunk may have moved
    if (!staged.chunks_dirty) {
      staged.nchunks = frame->nchunks();
      staged.chunksize = frame->header().chunksize;
      staged.vlblocks = base_vlblocks;
    }
  }

  void check_writable() const {
    if (::access(header_path().c_str(), W_OK) != 0 || (sparse && ::access(path.c_str(), W_OK) != 0))
      fail(path, "the frame is not writable", EROFS);
  }

  editor::PlannedCommit plan() const {
    std::vector<Vlmetalayer> layers = staged_vlmetalayers();
    if (layers.size() > size_t(kMaxMetalayers) && layers.size() > frame->vlmetalayers().size())
      fail(path, "more than 16 vlmetalayers", ENOSPC);
    return sparse ? editor::plan_sparse_commit(*frame, staged, options.sync)
                  : editor::plan_contiguous_commit(*frame, staged, options.sync);
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
  if (!m.staged.empty()) fail(m.path, "cannot refresh with staged edits", EBUSY);
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
  Impl& m = *impl_;
  m.check_vlmeta_name(name);
  if (!m.has_staged_vlmeta(name) && m.staged_vlmetalayers().size() >= size_t(kMaxMetalayers))
    fail(m.path, "cannot add vlmetalayer '" + name + "': the frame already has 16", ENOSPC);
  Bytes stored;
  try {
    stored = encode_vlmeta_chunk(content);
  } catch (const FormatError& e) {
    fail(m.path, "vlmetalayer '" + name + "': " + e.what(), EINVAL);
  }
  m.staged.vlmeta_ops.push_back({VlmetaOp::Kind::set, name, {}, std::move(stored)});
}

void FrameEditor::remove_vlmetalayer(const std::string& name) {
  Impl& m = *impl_;
  if (!m.has_staged_vlmeta(name)) fail(m.path, "no vlmetalayer '" + name + "'", ENOENT);
  m.staged.vlmeta_ops.push_back({VlmetaOp::Kind::remove, name, {}, {}});
}

void FrameEditor::rename_vlmetalayer(const std::string& from, const std::string& to) {
  Impl& m = *impl_;
  m.check_vlmeta_name(to);
  if (!m.has_staged_vlmeta(from)) fail(m.path, "no vlmetalayer '" + from + "'", ENOENT);
  m.staged.vlmeta_ops.push_back({VlmetaOp::Kind::rename, from, to, {}});
}

void FrameEditor::set_metalayer(const std::string& name, ByteSpan content) {
  Impl& m = *impl_;
  const Metalayer* layer = m.frame->find_metalayer(name);
  if (!layer) fail(m.path, "no metalayer '" + name + "'", ENOENT);
  if (layer->content.size() != content.size())
    fail(m.path, "metalayer '" + name + "' is " + std::to_string(layer->content.size()) +
                     " bytes; it can only be overwritten with as many (" + std::to_string(content.size()) +
                     " given)", EINVAL);
  if (name == "b2nd" || name == "caterva") {
    try {
      (void)parse_nd_meta(content, name == "caterva");
    } catch (const FormatError& e) {
      fail(m.path, "metalayer '" + name + "' would no longer decode: " + e.what(), EINVAL);
    }
  }
  m.staged.metalayer_writes[name] = Bytes(content.begin(), content.end());
}

void FrameEditor::replace_chunk(int64_t n, ByteSpan data) {
  const ChunkPut put{n, data};
  impl_->put_data({&put, 1});
}

void FrameEditor::put_chunks(std::span<const ChunkPut> puts) { impl_->put_data(puts); }

void FrameEditor::replace_raw_chunk(int64_t n, ByteSpan chunk) {
  if (n >= impl_->staged.nchunks) fail(impl_->path, "chunk " + std::to_string(n) + " does not exist", EINVAL);
  impl_->put_raw(n, chunk);
}

void FrameEditor::append_chunk(ByteSpan data) {
  const ChunkPut put{-1, data};
  impl_->put_data({&put, 1});
}

void FrameEditor::append_raw_chunk(ByteSpan chunk) { impl_->put_raw(impl_->staged.nchunks, chunk); }

void FrameEditor::truncate_chunks(int64_t nchunks) {
  Impl& m = *impl_;
  if (nchunks < 0 || nchunks > m.staged.nchunks)
    fail(m.path, "cannot truncate to " + std::to_string(nchunks) + " chunks (has " +
                     std::to_string(m.staged.nchunks) + ")", EINVAL);
  if (nchunks == m.staged.nchunks) return;
  m.staged.chunks.erase(m.staged.chunks.lower_bound(nchunks), m.staged.chunks.end());
  m.staged.nchunks = nchunks;
  m.staged.chunks_dirty = true;
  m.settle_short_chunks();
}

bool FrameEditor::has_staged_edits() const { return !impl_->staged.empty(); }

void FrameEditor::discard_staged_edits() { impl_->reset_staged(); }

CommitPlan FrameEditor::plan_commit() const {
  if (!has_staged_edits()) return {};
  return impl_->plan().steps;
}

void FrameEditor::commit() {
  Impl& m = *impl_;
  if (!has_staged_edits()) return;
  m.check_writable();
  m.open_sidecar(true);
  SidecarLockGuard guard(m.sidecar, SidecarLockGuard::Mode::exclusive);
  if (m.changed_on_disk(guard.counter())) m.rebase(guard.counter());
  check_array_chunks(*m.frame, m.staged, m.path);
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
    m.staged.temp_nonce = editor::random_nonce();
    try {
      m.load_frame();
      if (guard.counter()) m.seen_counter = *guard.counter() + 1;
      if (switched) {
        auto metalayers = std::move(m.staged.metalayer_writes);
        m.reset_staged();
        if (!metalayers_done) m.staged.metalayer_writes = std::move(metalayers);
      }
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

CompressParams FrameEditor::compress_params() const { return impl_->frame_compress_params(); }

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
