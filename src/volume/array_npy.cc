// ArrayNpy: array.npy written as an array (docs/writing.md, "array.npy"). A byte
// past the .npy header is a byte of an item in C order; NdLayout maps it to its
// chunk and its place there, and the chunk is staged in the one ChunkOverlay that
// chunks/N and data share, so it commits as they do: at close, fsync and unmount
// at the latest, in bounded batches for long writes.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <random>

#include <spdlog/spdlog.h>

#include "b2nd_partition.h"
#include "chunk_codec.h"
#include "frame_nd.h"
#include "parallel_encode.h"
#include "fs_error.h"
#include "npy_replacement.h"
#include "npy_stream.h"
#include "array_npy.h"

namespace blosc2fs {

namespace {

constexpr const char* kArrayNpy = "array.npy";
// The C-order bytes read from the spool at a time while the new chunks are made.
constexpr int64_t kSpoolPiece = int64_t(8) << 20;

// Every item of `bytes` (items of `descr`, a simple numeric kind) in the other byte order.
void swap_items(MutableByteSpan bytes, const std::string& descr, int64_t itemsize) {
  const int64_t unit = descr.size() > 1 && descr[1] == 'c' ? itemsize / 2 : itemsize;
  for (size_t at = 0; at + size_t(unit) <= bytes.size(); at += size_t(unit))
    std::reverse(bytes.begin() + long(at), bytes.begin() + long(at) + unit);
}

// The .npy header at the start of the held file: nullopt while its bytes have
// not all arrived (`*complete` false) or when they are not a .npy header (`*why`).
std::optional<NpyFileHeader> read_npy_head(const File& spool, int64_t size, bool* complete, std::string* why) {
  *complete = false;
  Bytes head(size_t(std::min<int64_t>(size, 12)));
  if (spool.read_at(0, head) != head.size() || head.size() < 10) return std::nullopt;
  const size_t len_field = head[6] >= 2 ? 4 : 2;
  if (head.size() < 8 + len_field) return std::nullopt;
  uint64_t dict_len = 0;
  for (size_t i = 0; i < len_field; ++i) dict_len |= uint64_t(head[8 + i]) << (8 * i);
  dict_len = std::min<uint64_t>(dict_len, 1 << 24);
  if (int64_t(8 + len_field + dict_len) > size) return std::nullopt;
  head.resize(8 + len_field + size_t(dict_len));
  if (spool.read_at(0, head) != head.size()) return std::nullopt;
  *complete = true;
  return parse_npy_file_header(head, why);
}

// Whether the held file is a .npy header followed by exactly the items it announces.
bool npy_file_whole(const NpyReplacement& r) {
  bool complete = false;
  std::string why;
  std::optional<NpyFileHeader> h = read_npy_head(r.spool, r.size, &complete, &why);
  if (!h) return false;
  int64_t items = 1;
  for (int64_t d : h->shape) {
    if (d < 0 || (d > 0 && items > INT64_MAX / 4 / d)) return false;
    items *= d;
  }
  if (items > INT64_MAX / 4 / h->dtype.itemsize) return false;
  return r.size == h->header_len + items * h->dtype.itemsize;
}

// Why a new content cannot become the array (logged by the caller, or not at all
// when only the stream gives up and the close says it).
struct NpyRefusal {
  std::string why;
};

// What a replacement makes of the frame: the array's new metadata and layout.
struct ReplacementPlan {
  const Metalayer* nd_layer = nullptr;  // the frame's; null for a new array
  bool new_array = false;
  NdMeta meta, old_meta;
  int32_t typesize = 0;
  bool swap = false;
  int64_t items = 0, nchunks = 0, body = 0;
  std::optional<NdLayout> layout;
  bool reshaped = false;
};

// `codec`: what the frame's new chunks get (a new array's block size depends on it).
ReplacementPlan plan_replacement(const NpyFileHeader& in, const Frame& frame, const VolumeOptions& options,
                                 const CompressParams& codec) {
  auto refuse = [](std::string why) { throw NpyRefusal{std::move(why)}; };
  ReplacementPlan p;
  p.nd_layer = frame_nd_metalayer(frame);
  p.new_array = p.nd_layer == nullptr;
  if (in.fortran_order) refuse("the new .npy is in Fortran order; save it in C order (np.ascontiguousarray)");
  NdMeta& meta = p.meta;
  p.typesize = frame.header().typesize;
  if (p.new_array) {
    if (frame.nchunks() != 0 || !frame.metalayers().empty())
      refuse("the frame is not an N-d array (only an empty frame becomes one)");
    if (in.shape.size() > size_t(kMaxBlockDims))
      refuse("the new array has " + std::to_string(in.shape.size()) + " dimensions, b2nd at most " +
             std::to_string(kMaxBlockDims));
    if (in.dtype.itemsize > INT32_MAX) refuse("the new items are too large");
    p.typesize = int32_t(in.dtype.itemsize);
    NdPartition part;
    try {
      part = b2nd_partition(in.shape, p.typesize, options.new_array_chunkshape, options.new_array_blockshape,
                            host_cache_sizes(),
                            python_blosc2_block_hint(codec, p.typesize));
    } catch (const FormatError& e) {
      refuse(std::string("no chunk and block shape for it: ") + e.what());
    }
    meta.ndim = int(in.shape.size());
    meta.shape = in.shape;
    for (size_t k = 0; k < in.shape.size(); ++k) {
      meta.chunkshape.push_back(int32_t(part.chunkshape[k]));
      meta.blockshape.push_back(int32_t(part.blockshape[k]));
    }
    meta.dtype = in.dtype.descr;
    p.old_meta = meta;
  } else {
    p.old_meta = frame_nd_meta(frame, *p.nd_layer);
    const std::string descr = npy_descr(p.old_meta, p.typesize, nullptr);
    if (int(in.shape.size()) != p.old_meta.ndim)
      refuse("the new array has " + std::to_string(in.shape.size()) + " dimensions, the array " +
             std::to_string(p.old_meta.ndim));
    if (in.dtype.descr != descr) {
      std::optional<std::string> other = npy_descr_swapped(in.dtype.descr);
      if (!other || *other != descr) refuse("the new dtype " + in.dtype.descr + " is not the array's " + descr);
      p.swap = true;
    }
    meta = p.old_meta;
    meta.shape = in.shape;
  }
  int64_t items = 1, nchunks = 1;
  for (int i = 0; i < meta.ndim; ++i) {
    const int64_t dim = meta.shape[size_t(i)], cs = meta.chunkshape[size_t(i)];
    if (dim < 0 || (dim > 0 && items > (INT64_MAX / 4) / dim)) refuse("the new shape is too large");
    items *= dim;
    nchunks = cs > 0 ? nchunks * ((dim + cs - 1) / cs) : 0;
  }
  if (items == 0) nchunks = 0;
  if (items > INT64_MAX / 4 / p.typesize) refuse("the new shape is too large");
  p.items = items;
  p.nchunks = nchunks;
  p.body = items * p.typesize;
  try {
    p.layout.emplace(meta, p.typesize, nchunks, p.new_array ? 0 : frame.header().chunksize);
  } catch (const FormatError& e) {
    refuse(std::string("the new shape does not fit the array's chunks: ") + e.what());
  }
  p.reshaped = meta.shape != p.old_meta.shape;
  return p;
}

// The new contiguous frame of a replacement: the frame's codec settings, the
// array's block size and geometry, its metalayers with the new shape.
FrameParams rewrite_params(const ReplacementPlan& p, const Frame& frame, const CompressParams& base) {
  FrameParams params;
  params.sparse = frame.sparse();
  params.cparams = base;
  params.cparams.typesize = p.typesize;
  params.cparams.blocksize = int32_t(p.layout->block_items() * p.typesize);
  params.cparams.geometry = BlockGeometry{};
  params.cparams.geometry.typesize = p.typesize;
  params.cparams.geometry.ndim = p.meta.ndim;
  for (int k = 0; k < p.meta.ndim; ++k) params.cparams.geometry.blockshape[size_t(k)] = p.meta.blockshape[size_t(k)];
  params.chunksize = int32_t(p.layout->chunk_bytes());
  const Bytes nd_content = serialize_b2nd_meta(p.meta);
  if (p.new_array) params.metalayers.push_back({"b2nd", nd_content});
  for (const Metalayer& m : frame.metalayers())
    params.metalayers.push_back(p.nd_layer && m.name == p.nd_layer->name ? Metalayer{m.name, nd_content} : m);
  return params;
}

// Adds [from, to) to a set of disjoint ranges, merging what touches it.
void add_range(std::map<int64_t, int64_t>& ranges, int64_t from, int64_t to) {
  auto it = ranges.upper_bound(from);
  if (it != ranges.begin() && std::prev(it)->second >= from) --it;
  while (it != ranges.end() && it->first <= to) {
    from = std::min(from, it->first);
    to = std::max(to, it->second);
    it = ranges.erase(it);
  }
  ranges.emplace(from, to);
}

}  // namespace

ArrayNpy::ArrayNpy(VolumeState& state, CommitPipeline& commits) : state_(state), commits_(commits) {}

void ArrayNpy::write(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  MutexLock commit(commits_.mutex());
  std::optional<int64_t> filling;
  bool batch_due;
  {
    WriterLock lock(state_.mutex);
    if (state_.npy_replacement) {  // a whole new file: made into the new frame as it arrives, or held until close
      NpyReplacement& r = *state_.npy_replacement;
      file.outcome = r.outcome;
      const int64_t end = offset + int64_t(data.size());
      // Behind what the stream took, the header included (the stream was made for that header).
      if (r.stream && offset < r.header_len + r.stream->received()) unstream(r);
      // In order: straight into the new frame. Bytes past the array's end (the
      // close refuses such a file) are held, as bytes out of order are.
      const int64_t array_end = r.stream ? r.header_len + r.stream->array_bytes() : 0;
      const size_t taken = r.stream && offset == r.header_len + r.stream->received()
                               ? size_t(std::clamp<int64_t>(array_end - offset, 0, int64_t(data.size())))
                               : 0;
      if (taken < data.size()) {
        try {
          r.spool.write_at(offset + int64_t(taken), data.subspan(taken));
        } catch (const IoError& e) {
          spdlog::warn("{}: the new content cannot be held: {}", kArrayNpy, e.what());
          throw FsError{e.error_number() ? e.error_number() : EIO};
        }
        add_range(r.spooled, offset + int64_t(taken), end);
      }
      r.size = std::max(r.size, end);
      if (!r.stream && !r.stream_decided) start_stream(r);
      if (!r.stream) return;
      // The stream is the commit mutex's (held): readers, who take only the state
      // lock, need not wait while rows are compressed.
      lock.unlock();
      if (taken > 0) r.stream->feed(data.first(taken));
      take_spooled(r);
      return;
    }
    const NdLayout* layout = state_.files->array_layout();
    if (!layout) {
      spdlog::warn("{}: write refused: only the array.npy of a b2nd or caterva array takes writes", kArrayNpy);
      throw FsError{EACCES};
    }
    const std::string& header = state_.files->npy_header_text();
    const int64_t header_len = int64_t(header.size());
    const int64_t total = header_len + layout->array_bytes();
    const int64_t end = offset + int64_t(data.size());
    if (end > total) {
      spdlog::warn("{}: write refused: bytes {}..{} lie past the end of the {}-byte file; an array keeps its shape "
                   "in place (replace the whole file to resize it)",
                   kArrayNpy, offset, end, total);
      state_.npy_pages_stale = true;
      throw FsError{EINVAL};
    }
    if (offset < header_len) {
      const size_t n = size_t(std::min(end, header_len) - offset);
      if (std::memcmp(header.data() + offset, data.data(), n) != 0) {
        spdlog::warn("{}: write refused: the .npy header (bytes 0..{}) can only be rewritten with the bytes it holds; "
                     "another dtype or shape needs the whole file replaced",
                     kArrayNpy, header_len);
        state_.npy_pages_stale = true;
        throw FsError{EINVAL};
      }
    }
    file.outcome = state_.overlay_outcome;
    if (end > header_len) {
      const int64_t from = std::max(offset, header_len);
      const ByteSpan body = data.subspan(size_t(from - offset));
      // A chunk is held by region (chunk_overlay.h): the bytes written go into
      // its buffer and the committed chunk is not decoded for them. The kernel
      // writes a memory map back by whole pages, which also cover items nobody
      // changed, and chunks those touch must keep their stored bytes: a chunk
      // not held yet whose decoded bytes the cache has (the page was read in
      // before it was written) is held only once a byte differs, and a chunk
      // held by region that is not written whole is dropped at the commit if
      // none did.
      ChunkOverlay::Held* target = nullptr;  // where the runs of chunk last_n go, once it is held
      const bool through_pages = !file.direct_io;  // a commit leaves the kernel's pages of array.npy
      int64_t last_n = -1;
      try {
        layout->for_each_run(from - header_len, int64_t(body.size()),
                             [&](int64_t n, int64_t at, int64_t in, int64_t len) REQUIRES(state_.mutex) {
          const ByteSpan bytes = body.subspan(size_t(in), size_t(len));
          if (n != last_n) {
            last_n = n;
            filling = n;
            target = nullptr;
            const ChunkOverlay::Held* held = state_.overlay.held(n);
            const int64_t size = held ? held->size : state_.files->chunk_size(n);
            if (size != layout->chunk_bytes()) {
              spdlog::warn("{}: write refused: chunk {} holds {} bytes{}, the array needs {}", kArrayNpy, n, size,
                           held ? " (changed through data or chunks/)" : "", layout->chunk_bytes());
              state_.npy_pages_stale = true;
              throw FsError{EINVAL};
            }
            if (held)
              target = &state_.overlay.hold_region(*state_.files, n, layout->chunk_item_bytes(n), true, through_pages);
          }
          if (!target && state_.cache.holds(n)) {
            std::shared_ptr<const void> keep;
            const ByteSpan stored = state_.files->view(n, at, size_t(len), keep);
            if (stored.size() == bytes.size() && std::equal(bytes.begin(), bytes.end(), stored.begin())) return;
          }
          if (!target)
            target = &state_.overlay.hold_region(*state_.files, n, layout->chunk_item_bytes(n), true, through_pages);
          target->put(at, bytes);
        });
      } catch (const std::out_of_range&) {
        throw FsError{EINVAL};  // checked above; kept for a layout that disagrees
      }
    }
    batch_due = state_.overlay_batch_due();
  }
  // A long write commits what it has finished, so memory stays bounded.
  if (batch_due) {
    commits_.commit_chunks(filling, kArrayNpy, notes);
    commits_.maybe_compact(notes, false);
  }
}

// Once the header has arrived: a replacement whose header makes an array is
// made while the rest arrives (npy_stream.h), a sparse frame's too where its
// directory can be swapped for a new one. Anything else (another byte order, a
// header the close will refuse, a sparse frame that cannot be swapped) stays
// in the spool, as every byte did before.
void ArrayNpy::start_stream(NpyReplacement& r) {
  bool complete = false;
  std::string why;
  std::optional<NpyFileHeader> in = read_npy_head(r.spool, r.size, &complete, &why);
  if (!complete) return;  // more header to come
  r.stream_decided = true;
  const std::shared_ptr<const Frame> frame = state_.files->frame_ptr();
  if (!in || !commits_.editor()) return;
  try {
    const CompressParams codec = commits_.editor()->compress_params();
    ReplacementPlan plan = plan_replacement(*in, *frame, state_.options, codec);
    if (plan.swap) return;
    const FrameParams params = rewrite_params(plan, *frame, codec);
    r.stream = std::make_unique<NpyRowStream>(*plan.layout, commits_.editor()->rewrite_temp_path(), params);
    r.stream_metalayers = params.metalayers;
    r.header_len = in->header_len;
    streaming_ = true;
  } catch (const NpyRefusal&) {
    // The close refuses it and says why.
  } catch (const std::exception& e) {
    spdlog::debug("{}: the new content is held until close: {}", kArrayNpy, e.what());
    r.stream.reset();
  }
}

// Spooled bytes the stream has reached are fed to it from the spool.
void ArrayNpy::take_spooled(NpyReplacement& r) {
  Bytes piece;
  while (!r.spooled.empty()) {
    const int64_t at = r.header_len + r.stream->received();
    auto it = r.spooled.begin();
    if (it->second <= at) {
      r.spooled.erase(it);
      continue;
    }
    if (it->first > at) return;
    const int64_t to = std::min(it->second, r.header_len + r.stream->array_bytes());
    if (to <= at) return;  // bytes past the array: the close refuses the file
    piece.resize(size_t(std::min(kSpoolPiece, to - at)));
    r.spool.read_exact(at, piece, "the new array.npy");
    r.stream->feed(piece);
  }
}

// A write behind what the stream took, a read of it or a truncation into it:
// those bytes go back to the spool, which holds the new content from now on.
void ArrayNpy::unstream(NpyReplacement& r) {
  std::unique_ptr<NpyRowStream> stream = std::move(r.stream);
  streaming_ = false;
  try {
    stream->recover([&](int64_t at, ByteSpan bytes) { r.spool.write_at(r.header_len + at, bytes); });
  } catch (const std::exception& e) {
    spdlog::warn("{}: the new content written so far cannot be recovered: {}", kArrayNpy, e.what());
    throw FsError{EIO};
  }
  add_range(r.spooled, r.header_len, r.header_len + stream->received());
}

UniqueMutexLock ArrayNpy::settle_read(int64_t offset, size_t size) {
  if (!streaming_) return {};
  UniqueMutexLock commit(commits_.mutex());
  WriterLock lock(state_.mutex);
  if (!state_.npy_replacement || !state_.npy_replacement->stream) return {};
  NpyReplacement& r = *state_.npy_replacement;
  if (offset < r.header_len + r.stream->received() && offset + int64_t(size) > r.header_len) unstream(r);
  return commit;
}

bool ArrayNpy::gather_views(int64_t offset, size_t size, ReadPieces& out) {
  state_.mutex.assert_held_shared();
  const NdLayout* layout = state_.files->array_layout();
  if (state_.npy_replacement || !layout || offset < 0) return false;
  const std::string& header = state_.files->npy_header_text();
  const int64_t header_len = int64_t(header.size());
  const int64_t total = header_len + layout->array_bytes();
  const int64_t end = offset + int64_t(std::min<uint64_t>(size, uint64_t(std::max<int64_t>(total - offset, 0))));
  const int64_t body = std::max(offset, header_len);
  if (end <= body) return false;  // the header alone: a copy as cheap
  // The read's runs (an item row of a block each) joined where they follow
  // each other within a chunk.
  struct Run {
    int64_t chunk, at, len;
  };
  std::vector<Run> runs;
  const size_t max_runs = ReadPieces::kReplyPieces - (offset < header_len ? 1 : 0);
  bool too_many = false;
  layout->for_each_run(body - header_len, end - body, [&](int64_t n, int64_t at, int64_t, int64_t len) {
    if (too_many) return;
    if (!runs.empty() && runs.back().chunk == n && runs.back().at + runs.back().len == at) {
      runs.back().len += len;
    } else if (runs.size() == max_runs) {
      too_many = true;
    } else {
      runs.push_back({n, at, len});
    }
  });
  if (too_many) return false;
  // Held bytes may change once the lock is released: those are copied.
  for (const Run& r : runs)
    if (state_.overlay.held(r.chunk)) return false;
  const std::vector<NdLayout::ChunkRange> ranges = array_read_ranges(*layout, body - header_len, end - body);
  const int64_t need = layout->chunk_bytes();
  std::vector<std::shared_ptr<const CachedChunk>> pinned;
  for (const Run& r : runs) {
    if (!pinned.empty() && runs[pinned.size() - 1].chunk == r.chunk) {
      pinned.push_back(pinned.back());
      continue;
    }
    pinned.push_back(chunk_for_ranges(state_.cache, ranges, r.chunk));
    if (int64_t(pinned.back()->data().size()) != need)
      throw FormatError("chunk " + std::to_string(r.chunk) + " holds " + std::to_string(pinned.back()->data().size()) +
                        " bytes, the array needs " + std::to_string(need));
  }
  if (offset < header_len) {
    const MutableByteSpan head = out.add_copy(size_t(header_len - offset));
    std::memcpy(head.data(), header.data() + offset, head.size());
  }
  for (size_t k = 0; k < runs.size(); ++k) {
    const ByteSpan bytes = pinned[k]->data().subspan(size_t(runs[k].at), size_t(runs[k].len));
    out.add_view(bytes, std::move(pinned[k]));
  }
  return true;
}

// Reads of array.npy see the staged chunks (read your writes); the other views
// (data, chunks/N) already do.
size_t ArrayNpy::read_locked(int64_t offset, MutableByteSpan out) {
  state_.mutex.assert_held_shared();
  if (state_.npy_replacement) {
    if (offset >= state_.npy_replacement->size) return 0;
    const size_t want = size_t(std::min<int64_t>(int64_t(out.size()), state_.npy_replacement->size - offset));
    const size_t got = state_.npy_replacement->spool.read_at(offset, out.first(want));
    std::memset(out.data() + got, 0, want - got);  // a hole left by a write past the end
    return want;
  }
  const NdLayout* layout = state_.files->array_layout();
  if (!layout || state_.overlay.clean()) return state_.files->read_array(offset, out);
  const std::string& header = state_.files->npy_header_text();
  const int64_t header_len = int64_t(header.size());
  const int64_t total = header_len + layout->array_bytes();
  if (offset < 0 || offset >= total) return 0;
  const size_t want = size_t(std::min<int64_t>(int64_t(out.size()), total - offset));
  size_t done = 0;
  if (offset < header_len) {
    done = size_t(std::min<int64_t>(int64_t(want), header_len - offset));
    std::memcpy(out.data(), header.data() + offset, done);
  }
  if (done == want) return done;
  // Run by run: a chunk held by region gives its written bytes and the
  // committed chunk's for the rest (ChunkOverlay::read_chunk).
  std::shared_ptr<const CachedChunk> pinned;  // the committed chunk of the last runs
  const ChunkOverlay::Held* held = nullptr;
  int64_t last_n = -1;
  const int64_t need = layout->chunk_bytes();
  const std::vector<NdLayout::ChunkRange> ranges = array_read_ranges(*layout, offset + int64_t(done) - header_len, int64_t(want - done));
  layout->for_each_run(offset + int64_t(done) - header_len, int64_t(want - done),
                       [&](int64_t n, int64_t at, int64_t in, int64_t len) REQUIRES_SHARED(state_.mutex) {
    const MutableByteSpan piece = out.subspan(done + size_t(in), size_t(len));
    if (n != last_n) {
      last_n = n;
      held = state_.overlay.held(n);
      pinned = held ? nullptr : chunk_for_ranges(state_.cache, ranges, n);
      const int64_t size = held ? held->size : int64_t(pinned->data().size());
      if (size != need)
        throw FormatError("chunk " + std::to_string(n) + " holds " + std::to_string(size) + " bytes, the array needs " +
                          std::to_string(need));
    }
    if (!held) std::memcpy(piece.data(), pinned->data().data() + at, piece.size());
    else if (held->zeros) std::memset(piece.data(), 0, piece.size());
    else if (held->whole()) std::memcpy(piece.data(), held->bytes.data() + at, piece.size());
    else if (state_.overlay.read_chunk(*state_.files, n, at, piece) != piece.size())
      throw FormatError("chunk " + std::to_string(n) + ": shorter than the frame says");
  });
  return want;
}

void ArrayNpy::truncate(int64_t size) {
  state_.mutex.assert_held();
  commits_.mutex().assert_held();
  if (state_.npy_replacement) {
    NpyReplacement& r = *state_.npy_replacement;
    // cp of a sparse .npy writes its data and makes a trailing hole by growing
    // the file: zeros up to at most the size its header gives, which the close
    // reads from the spool with the rest.
    const int64_t grows_to = r.stream ? r.header_len + r.stream->array_bytes() : r.size;
    if (size < 0 || size > std::max(r.size, grows_to)) {
      spdlog::warn("{}: truncate to {} bytes refused while a new array.npy is written{}", kArrayNpy, size,
                   r.stream ? " (its header gives " + std::to_string(grows_to) + ")" : "");
      throw FsError{EINVAL};
    }
    if (size > r.size) {
      try {
        r.spool.truncate(size);
      } catch (const IoError& e) {
        spdlog::warn("{}: the new content cannot be held: {}", kArrayNpy, e.what());
        throw FsError{e.error_number() ? e.error_number() : EIO};
      }
      r.size = size;
      return;
    }
    if (r.stream && size < r.header_len + r.stream->received()) unstream(r);
    r.spool.truncate(size);
    r.size = size;
    for (auto it = r.spooled.lower_bound(size); it != r.spooled.end();) it = r.spooled.erase(it);
    if (!r.spooled.empty() && std::prev(r.spooled.end())->second > size) std::prev(r.spooled.end())->second = size;
    if (size < 12 && !r.stream) r.stream_decided = false;  // a new header may come
    return;
  }
  if (size == 0) {
    if (!state_.files->array_layout() && !state_.array_creatable()) {
      spdlog::warn("{}: cannot be replaced: only the array.npy of a b2nd or caterva array takes writes", kArrayNpy);
      throw FsError{EACCES};
    }
    if (!state_.overlay.clean()) {
      spdlog::warn("{}: cannot be replaced while writes to data, chunks/ or array.npy wait for their commit",
                   kArrayNpy);
      throw FsError{EBUSY};
    }
    auto r = std::make_unique<NpyReplacement>();
    // Beside the frame, where its commits write too (a sparse frame: its own directory).
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::is_directory(state_.path, ec) ? state_.path
                                      : state_.path.parent_path().empty()           ? "."
                                                                              : state_.path.parent_path();
    std::mt19937_64 rng(std::random_device{}());
    for (int attempt = 0; !r->spool.is_open(); ++attempt) {
      const std::filesystem::path name =
          dir / ("." + state_.path.filename().string() + ".npy-" + std::to_string(rng() % 1000000000));
      try {
        r->spool = File::create_new(name, true);
        ::unlink(name.c_str());
      } catch (const IoError& e) {
        if (e.error_number() == EEXIST && attempt < 16) continue;
        spdlog::warn("{}: cannot be replaced: no room for the new content beside the frame: {}", kArrayNpy,
                     e.what());
        throw FsError{e.error_number() ? e.error_number() : EIO};
      }
    }
    state_.npy_replacement = std::move(r);
    return;
  }
  const int64_t current = state_.files->array_size();
  if (size == current && state_.files->array_layout()) return;  // nothing changes
  spdlog::warn("{}: truncate to {} bytes refused: an array keeps its size in place (0 starts a replacement)",
               kArrayNpy, size);
  throw FsError{EINVAL};
}

void ArrayNpy::finish_replacement(KernelNotes& notes, bool when_whole) {
  commits_.mutex().assert_held();
  std::unique_ptr<NpyReplacement> r;
  std::shared_ptr<const Frame> frame;
  {
    WriterLock lock(state_.mutex);
    if (when_whole && state_.npy_replacement && !npy_file_whole(*state_.npy_replacement)) return;
    r = std::move(state_.npy_replacement);
    streaming_ = false;
    frame = state_.files->frame_ptr();
    if (!r) state_.note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
  }
  if (!r) return;
  // Back to the old frame's array: the pages of what was written go.
  const auto show_old_array = [&] {
    WriterLock lock(state_.mutex);
    state_.note_inode(notes, fixed_file(NodeKind::array_npy)->ino);
  };
  try {
    RetiredTree old_tree = replace_from(*r, *frame, notes);  // its install tells of the new array
    remove_when_released(std::move(frame), std::move(old_tree), notes);
  } catch (const FsError& e) {
    r->outcome->error = e.error;
    show_old_array();
    throw;
  } catch (const std::exception& e) {
    r->outcome->error = EIO;
    show_old_array();
    commits_.fail(kArrayNpy, EIO, std::string(e.what()) + "; the array is unchanged");
  }
}

void ArrayNpy::remove_when_released(std::shared_ptr<const Frame>&& frame, RetiredTree tree, KernelNotes& notes) {
  // Nobody can take another reference to a frame only this holds (no weak
  // pointer to it exists), so nothing reads it or its tree any more.
  if (frame.use_count() == 1) {
    struct Retired {
      RetiredTree tree;  // removed after the frame is closed (members go in reverse order)
      std::shared_ptr<const Frame> frame;
    };
    notes.release_after_reply.push_back(std::make_shared<const Retired>(Retired{std::move(tree), std::move(frame)}));
    remove_released_trees();
    return;
  }
  std::weak_ptr<const Frame> reader = frame;
  frame.reset();
  if (!tree.empty()) {
    MutexLock lock(retired_mutex_);
    retired_trees_.emplace_back(std::move(reader), std::move(tree));
  }
  remove_released_trees();
}

void ArrayNpy::remove_released_trees() {
  std::vector<RetiredTree> released;
  {
    MutexLock lock(retired_mutex_);
    for (auto it = retired_trees_.begin(); it != retired_trees_.end();) {
      if (!it->first.expired()) {
        ++it;
        continue;
      }
      released.push_back(std::move(it->second));
      it = retired_trees_.erase(it);
    }
  }
  // Removed here, out of the lock, as `released` goes.
}

RetiredTree ArrayNpy::replace_from(NpyReplacement& replacement, const Frame& frame, KernelNotes& notes) {
  const File& spool = replacement.spool;
  const int64_t size = replacement.size;
  const std::string what = kArrayNpy;
  auto refuse = [&](const std::string& why) { commits_.fail(what, EINVAL, why + "; the array is unchanged"); };
  std::string why;
  bool complete = false;
  std::optional<NpyFileHeader> in = read_npy_head(spool, size, &complete, &why);
  if (!in) refuse("the new content is not a .npy file: " + (complete ? why : std::string("its header is incomplete")));
  ReplacementPlan plan;
  CompressParams codec;
  try {
    if (commits_.editor()) codec = commits_.editor()->compress_params();
  } catch (const std::exception&) {
    // The commit says why it cannot compress; the plan needs only a codec to size blocks.
  }
  try {
    plan = plan_replacement(*in, frame, state_.options, codec);
  } catch (const NpyRefusal& r) {
    refuse(r.why);
  }
  const NdMeta& meta = plan.meta;
  const int32_t typesize = plan.typesize;
  const int64_t body = plan.body, nchunks = plan.nchunks, items = plan.items;
  if (size != in->header_len + body)
    refuse("the new .npy holds " + std::to_string(size) + " bytes, its header says " +
           std::to_string(in->header_len + body) + " (an incomplete copy?)");
  const NdLayout& layout = *plan.layout;
  const bool swap = plan.swap;
  ChunkChanges changes;
  changes.all = true;
  // Vlmetalayers as the frame holds them when the new one is installed; the
  // metalayers (fixed in the new frame's header) must not have changed meanwhile.
  auto complete_frame = [&](FrameWriter& writer, const std::vector<Metalayer>& given,
                            const Frame& current) -> FrameWriter& {
    std::vector<Metalayer> now;
    for (const Metalayer& m : current.metalayers())
      if (!plan.nd_layer || m.name != plan.nd_layer->name) now.push_back(m);
    std::vector<Metalayer> before;
    for (const Metalayer& m : given)
      if (m.name != (plan.nd_layer ? plan.nd_layer->name : std::string("b2nd"))) before.push_back(m);
    const auto same = [](const Metalayer& a, const Metalayer& b) { return a.name == b.name && a.content == b.content; };
    if (!std::equal(now.begin(), now.end(), before.begin(), before.end(), same)) {
      spdlog::warn("{}: another program changed the frame's metalayers while the new array.npy was written", what);
      throw FsError{EBUSY};
    }
    for (const Vlmetalayer& v : current.vlmetalayers()) writer.set_vlmetalayer(v.name, current.vlmetalayer_content(v));
    return writer;
  };
  RetiredTree retired;
  if (replacement.stream) {
    // Made while the bytes arrived: what came out of order is in the spool.
    NpyRowStream& stream = *replacement.stream;
    Bytes piece;
    for (int64_t at = in->header_len + stream.received(); at < size; at += kSpoolPiece) {
      piece.resize(size_t(std::min(kSpoolPiece, size - at)));
      spool.read_exact(at, piece, "the new array.npy");
      stream.feed(piece);
    }
    commits_.run_commit(what, [&](FrameEditor& editor) {
      FrameWriter& writer = stream.finish();
      retired = editor.install_rewrite(stream.temp(), [&](const Frame& current) -> FrameWriter& {
        return complete_frame(writer, replacement.stream_metalayers, current);
      });
    });
  } else {
    // Written anew beside the old frame and swapped in (a contiguous frame
    // renamed over it, a sparse frame's directory exchanged with it), from the
    // spool (the stream could not take the bytes): memory stays a few rows of
    // chunks, and a crash leaves the old array or the new one.
    const auto for_each_slab = [&](const std::function<void(std::vector<Bytes>&)>& take) {
      if (nchunks == 0) return;
      const int nd = meta.ndim;
      const int64_t row_chunks = nd == 0 ? 1 : nchunks / layout.chunks_per_dim()[0];
      const int64_t row_items = nd == 0 ? 1 : items / std::max<int64_t>(1, meta.shape[0]);
      const int64_t rows_per_slab = nd == 0 ? 1 : meta.chunkshape[0];
      const int64_t slabs = nd == 0 ? 1 : layout.chunks_per_dim()[0];
      bool ragged = false;
      for (int k = 1; k < nd; ++k) ragged = ragged || meta.shape[size_t(k)] % meta.chunkshape[size_t(k)] != 0;
      std::vector<Bytes> chunks(static_cast<size_t>(row_chunks));
      Bytes piece;
      for (int64_t slab = 0; slab < slabs; ++slab) {
        const bool last = slab == slabs - 1 && nd > 0 && meta.shape[0] % meta.chunkshape[0] != 0;
        if (slab > 0 && (ragged || last))
          for (Bytes& c : chunks) std::fill(c.begin(), c.end(), uint8_t(0));
        const int64_t from = slab * rows_per_slab * row_items * typesize;
        const int64_t to = std::min(body, (slab + 1) * rows_per_slab * row_items * typesize);
        for (int64_t at = from; at < to; at += kSpoolPiece) {
          piece.resize(size_t(std::min(kSpoolPiece, to - at)));
          spool.read_exact(in->header_len + at, piece, "the new array.npy");
          if (swap) swap_items(piece, in->dtype.descr, typesize);
          layout.write(at, piece, [&](int64_t n) -> MutableByteSpan {
            Bytes& c = chunks.at(size_t(n - slab * row_chunks));
            if (c.empty()) c.assign(size_t(layout.chunk_bytes()), 0);  // padding stays 0
            return c;
          });
        }
        take(chunks);
      }
    };
    commits_.run_commit(what, [&](FrameEditor& editor) {
      std::filesystem::path temp;
      try {
        temp = editor.rewrite_temp_path();
      } catch (const IoError& e) {
        if (!frame.sparse() || e.error_number() != EOPNOTSUPP) throw;
        // A sparse frame whose directory cannot be swapped: one commit of its
        // chunk files, the compressed chunks held until then.
        if (plan.new_array)
          throw IoError(std::string(e.what()) + ", and a new array needs a new frame header", EOPNOTSUPP);
        spdlog::info("{}: {}; the new chunks are held in memory until one commit of the sparse frame", what,
                     e.what());
        if (plan.reshaped) editor.set_metalayer(plan.nd_layer->name, serialize_b2nd_meta(meta));
        editor.truncate_chunks(0);
        for_each_slab([&](std::vector<Bytes>& chunks) {
          std::vector<FrameEditor::ChunkPut> puts;
          for (const Bytes& c : chunks) puts.push_back({-1, c});
          editor.put_chunks(puts);
        });
        return;
      }
      const FrameParams params = rewrite_params(plan, frame, editor.compress_params());
      std::optional<NpyRowStream> stream;
      stream.emplace(layout, temp, params);
      Bytes piece;
      for (int64_t at = 0; at < body; at += kSpoolPiece) {
        piece.resize(size_t(std::min(kSpoolPiece, body - at)));
        spool.read_exact(in->header_len + at, piece, "the new array.npy");
        if (swap) swap_items(piece, in->dtype.descr, typesize);
        stream->feed(piece);
      }
      FrameWriter& writer = stream->finish();
      retired = editor.install_rewrite(temp, [&](const Frame& current) -> FrameWriter& {
        return complete_frame(writer, params.metalayers, current);
      });
    });
  }
  replacement.stream.reset();
  if (!swap) {
    Bytes head(size_t(in->header_len));
    spool.read_exact(0, head, "the new array.npy");
    changes.npy_written_header = std::string(as_text(head));
  }
  commits_.install(changes, notes);
  spdlog::info("{}: {}: shape ({}){}", what, plan.new_array ? "a new array" : "replaced", [&] {
    std::string t;
    for (int64_t d : meta.shape) t += (t.empty() ? "" : ", ") + std::to_string(d);
    return t;
  }(), swap ? ", byte order converted" : "");
  return retired;
}

}  // namespace blosc2fs
