// Volume: array.npy written as an array (docs/writing.md, "array.npy"). A byte
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
#include "volume.h"

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

// Whether the held file is a .npy header followed by exactly the items it announces.
bool npy_file_whole(const NpyReplacement& r) {
  Bytes head(size_t(std::min<int64_t>(r.size, 12)));
  if (r.spool.read_at(0, head) != head.size() || head.size() < 10) return false;
  const size_t len_field = head[6] == 1 ? 2 : 4;
  if (head.size() < 8 + len_field) return false;
  uint64_t dict_len = 0;
  for (size_t i = 0; i < len_field; ++i) dict_len |= uint64_t(head[8 + i]) << (8 * i);
  if (dict_len > (uint64_t(1) << 24) || int64_t(8 + len_field + dict_len) > r.size) return false;
  head.resize(8 + len_field + size_t(dict_len));
  if (r.spool.read_at(0, head) != head.size()) return false;
  std::string why;
  std::optional<NpyFileHeader> h = parse_npy_file_header(head, &why);
  if (!h) return false;
  int64_t items = 1;
  for (int64_t d : h->shape) {
    if (d < 0 || (d > 0 && items > INT64_MAX / 4 / d)) return false;
    items *= d;
  }
  if (items > INT64_MAX / 4 / h->dtype.itemsize) return false;
  return r.size == h->header_len + items * h->dtype.itemsize;
}

}  // namespace

bool Volume::replacing_array() const { return npy_replacement_ != nullptr; }

// A frame that holds nothing yet (-o create's empty frame) becomes an array
// when a .npy is copied to array.npy.
bool Volume::array_creatable() const {
  if (!editor_ || files_->array_layout()) return false;
  const Frame& frame = *files_->frame_ptr();
  return !frame.sparse() && frame.nchunks() == 0 && frame.metalayers().empty() && overlay_.clean() &&
         overlay_.count() == 0;
}

int64_t Volume::array_npy_size() const {
  return npy_replacement_ ? npy_replacement_->size : files_->array_size();
}

bool Volume::overlay_batch_due() const {
  const uint64_t held = overlay_.materialized_bytes();
  const uint64_t limit =
      std::min(options_.batch_bytes, std::max(options_.cache_budget / 2, options_.batch_min_bytes));
  return (overlay_.materialized_chunks() > options_.batch_chunks && held >= options_.batch_min_bytes) ||
         held >= limit;
}

void Volume::write_array(OpenFile& file, int64_t offset, ByteSpan data, KernelNotes& notes) {
  std::lock_guard commit(commit_mutex_);
  std::optional<int64_t> filling;
  bool batch_due;
  {
    std::unique_lock lock(state_mutex_);
    if (npy_replacement_) {  // a whole new file: spooled until close
      NpyReplacement& r = *npy_replacement_;
      file.outcome = r.outcome;
      try {
        r.spool.write_at(offset, data);
      } catch (const IoError& e) {
        spdlog::warn("{}: the new content cannot be held: {}", kArrayNpy, e.what());
        throw FsError{e.error_number() ? e.error_number() : EIO};
      }
      r.size = std::max(r.size, offset + int64_t(data.size()));
      return;
    }
    const NdLayout* layout = files_->array_layout();
    if (!layout) {
      spdlog::warn("{}: write refused: only the array.npy of a b2nd or caterva array takes writes", kArrayNpy);
      throw FsError{EACCES};
    }
    const std::string& header = files_->npy_header_text();
    const int64_t header_len = int64_t(header.size());
    const int64_t total = header_len + layout->array_bytes();
    const int64_t end = offset + int64_t(data.size());
    if (end > total) {
      spdlog::warn("{}: write refused: bytes {}..{} lie past the end of the {}-byte file; an array keeps its shape "
                   "in place (replace the whole file to resize it)",
                   kArrayNpy, offset, end, total);
      throw FsError{EINVAL};
    }
    if (offset < header_len) {
      const size_t n = size_t(std::min(end, header_len) - offset);
      if (std::memcmp(header.data() + offset, data.data(), n) != 0) {
        spdlog::warn("{}: write refused: the .npy header (bytes 0..{}) can only be rewritten with the bytes it holds; "
                     "another dtype or shape needs the whole file replaced",
                     kArrayNpy, header_len);
        throw FsError{EINVAL};
      }
    }
    file.outcome = overlay_outcome_;
    if (end > header_len) {
      const int64_t from = std::max(offset, header_len);
      const ByteSpan body = data.subspan(size_t(from - offset));
      // A chunk not staged yet is changed in a copy and staged only when a byte
      // differs: the kernel writes a memory map back by whole pages, which also
      // cover items nobody changed, and those chunks must keep their stored bytes.
      std::map<int64_t, std::pair<Bytes, std::shared_ptr<const CachedChunk>>> copies;
      try {
        layout->write(from - header_len, body, [&](int64_t n) -> MutableByteSpan {
          filling = n;
          bool zeros = false;
          if (overlay_.held_bytes(n, &zeros)) {
            MutableByteSpan chunk = overlay_.chunk_for_write(*files_, n);
            if (int64_t(chunk.size()) != layout->chunk_bytes()) {
              spdlog::warn("{}: write refused: chunk {} holds {} bytes (changed through data or chunks/), the "
                           "array needs {}",
                           kArrayNpy, n, chunk.size(), layout->chunk_bytes());
              throw FsError{EINVAL};
            }
            return chunk;
          }
          std::shared_ptr<const CachedChunk> chunk = cache_.get(n);
          if (int64_t(chunk->data().size()) != layout->chunk_bytes()) {
            spdlog::warn("{}: write refused: chunk {} holds {} bytes, the array needs {}", kArrayNpy, n,
                         chunk->data().size(), layout->chunk_bytes());
            throw FsError{EINVAL};
          }
          auto& [copy, original] = copies[n];
          original = chunk;
          copy.assign(chunk->data().begin(), chunk->data().end());
          return copy;
        });
      } catch (const std::out_of_range&) {
        throw FsError{EINVAL};  // checked above; kept for a layout that disagrees
      }
      for (auto& [n, changed] : copies) {
        auto& [copy, original] = changed;
        if (!std::equal(copy.begin(), copy.end(), original->data().begin())) overlay_.set_chunk(n, std::move(copy));
      }
    }
    batch_due = overlay_batch_due();
  }
  // A long write commits what it has finished, so memory stays bounded.
  if (batch_due) {
    commit_chunks(filling, kArrayNpy, notes);
    maybe_compact(notes, false);
  }
}

// Reads of array.npy see the staged chunks (read your writes); the other views
// (data, chunks/N) already do.
size_t Volume::read_array_locked(int64_t offset, MutableByteSpan out) {
  if (npy_replacement_) {
    if (offset >= npy_replacement_->size) return 0;
    const size_t want = size_t(std::min<int64_t>(int64_t(out.size()), npy_replacement_->size - offset));
    const size_t got = npy_replacement_->spool.read_at(offset, out.first(want));
    std::memset(out.data() + got, 0, want - got);  // a hole left by a write past the end
    return want;
  }
  const NdLayout* layout = files_->array_layout();
  if (!layout || overlay_.clean()) return files_->read_array(offset, out);
  const std::string& header = files_->npy_header_text();
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
  std::vector<std::shared_ptr<const CachedChunk>> pinned;  // alive until read() has copied
  Bytes zeros;
  layout->read(offset + int64_t(done) - header_len, out.subspan(done, want - done), [&](int64_t n) -> ByteSpan {
    bool held_zeros = false;
    if (std::optional<ByteSpan> held = overlay_.held_bytes(n, &held_zeros)) {
      if (!held_zeros) return *held;
      zeros.assign(size_t(layout->chunk_bytes()), 0);
      return zeros;
    }
    std::shared_ptr<const CachedChunk> chunk = cache_.get(n);
    pinned.push_back(chunk);
    return chunk->data();
  });
  return want;
}

void Volume::truncate_array(int64_t size) {
  if (npy_replacement_) {
    if (size < 0 || size > npy_replacement_->size) {  // cp and np.save never grow a file by truncation
      spdlog::warn("{}: truncate to {} bytes refused while a new array.npy is written", kArrayNpy, size);
      throw FsError{EINVAL};
    }
    npy_replacement_->spool.truncate(size);
    npy_replacement_->size = size;
    return;
  }
  if (size == 0) {
    if (!files_->array_layout() && !array_creatable()) {
      spdlog::warn("{}: cannot be replaced: only the array.npy of a b2nd or caterva array takes writes", kArrayNpy);
      throw FsError{EACCES};
    }
    if (!overlay_.clean()) {
      spdlog::warn("{}: cannot be replaced while writes to data, chunks/ or array.npy wait for their commit",
                   kArrayNpy);
      throw FsError{EBUSY};
    }
    auto r = std::make_unique<NpyReplacement>();
    // Beside the frame, where its commits write too (a sparse frame: its own directory).
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::is_directory(path_, ec) ? path_
                                      : path_.parent_path().empty()           ? "."
                                                                              : path_.parent_path();
    std::mt19937_64 rng(std::random_device{}());
    for (int attempt = 0; !r->spool.is_open(); ++attempt) {
      const std::filesystem::path name =
          dir / ("." + path_.filename().string() + ".npy-" + std::to_string(rng() % 1000000000));
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
    npy_replacement_ = std::move(r);
    return;
  }
  const int64_t current = files_->array_size();
  if (size == current && files_->array_layout()) return;  // nothing changes
  spdlog::warn("{}: truncate to {} bytes refused: an array keeps its size in place (0 starts a replacement)",
               kArrayNpy, size);
  throw FsError{EINVAL};
}

void Volume::finish_array_replacement(KernelNotes& notes, bool when_whole) {
  std::unique_ptr<NpyReplacement> r;
  std::shared_ptr<const Frame> frame;
  {
    std::unique_lock lock(state_mutex_);
    if (when_whole && npy_replacement_ && !npy_file_whole(*npy_replacement_)) return;
    r = std::move(npy_replacement_);
    frame = files_->frame_ptr();
    note_inode(notes, fixed_file(NodeKind::array_npy)->ino);  // back to the frame's array, old or new
  }
  if (!r) return;
  try {
    replace_array_from(*r, *frame, notes);
  } catch (const FsError& e) {
    r->outcome->error = e.error;
    throw;
  } catch (const std::exception& e) {
    r->outcome->error = EIO;
    fail(kArrayNpy, EIO, std::string(e.what()) + "; the array is unchanged");
  }
}

void Volume::replace_array_from(NpyReplacement& replacement, const Frame& frame, KernelNotes& notes) {
  const File& spool = replacement.spool;
  const int64_t size = replacement.size;
  const std::string what = kArrayNpy;
  auto refuse = [&](const std::string& why) { fail(what, EINVAL, why + "; the array is unchanged"); };
  // The header: its length from the first bytes, then the whole of it.
  Bytes head(size_t(std::min<int64_t>(size, 12)));
  spool.read_exact(0, head, "the new array.npy");
  std::string why;
  if (head.size() >= 12 && head[6] >= 2) head.resize(12);
  else head.resize(std::min<size_t>(head.size(), 10));
  const uint64_t dict_len = head.size() < 10 ? 0
                            : head.size() == 12 ? uint64_t(head[8]) | uint64_t(head[9]) << 8 |
                                                      uint64_t(head[10]) << 16 | uint64_t(head[11]) << 24
                                                : uint64_t(head[8]) | uint64_t(head[9]) << 8;
  const int64_t want_head =
      std::min<int64_t>(size, int64_t(head.size()) + int64_t(std::min<uint64_t>(dict_len, 1 << 24)));
  head.resize(size_t(want_head));
  spool.read_exact(0, head, "the new array.npy");
  std::optional<NpyFileHeader> in = parse_npy_file_header(head, &why);
  if (!in) refuse("the new content is not a .npy file: " + why);

  const Metalayer* nd_layer = frame_nd_metalayer(frame);
  const bool new_array = nd_layer == nullptr;
  if (in->fortran_order) refuse("the new .npy is in Fortran order; save it in C order (np.ascontiguousarray)");
  NdMeta meta, old_meta;
  int32_t typesize = frame.header().typesize;
  bool swap = false;
  if (new_array) {
    if (frame.nchunks() != 0 || !frame.metalayers().empty() || frame.sparse())
      refuse("the frame is not an N-d array (only an empty contiguous frame becomes one)");
    if (in->shape.size() > size_t(kMaxBlockDims))
      refuse("the new array has " + std::to_string(in->shape.size()) + " dimensions, b2nd at most " +
             std::to_string(kMaxBlockDims));
    if (in->dtype.itemsize > INT32_MAX) refuse("the new items are too large");
    typesize = int32_t(in->dtype.itemsize);
    NdPartition part;
    try {
      part = b2nd_partition(in->shape, typesize, options_.new_array_chunkshape, options_.new_array_blockshape,
                            host_cache_sizes());
    } catch (const FormatError& e) {
      refuse(std::string("no chunk and block shape for it: ") + e.what());
    }
    meta.ndim = int(in->shape.size());
    meta.shape = in->shape;
    for (size_t k = 0; k < in->shape.size(); ++k) {
      meta.chunkshape.push_back(int32_t(part.chunkshape[k]));
      meta.blockshape.push_back(int32_t(part.blockshape[k]));
    }
    meta.dtype = in->dtype.descr;
    old_meta = meta;
  } else {
    old_meta = frame_nd_meta(frame, *nd_layer);
    const std::string descr = npy_descr(old_meta, typesize, nullptr);
    if (int(in->shape.size()) != old_meta.ndim)
      refuse("the new array has " + std::to_string(in->shape.size()) + " dimensions, the array " +
             std::to_string(old_meta.ndim));
    if (in->dtype.descr != descr) {
      std::optional<std::string> other = npy_descr_swapped(in->dtype.descr);
      if (!other || *other != descr) refuse("the new dtype " + in->dtype.descr + " is not the array's " + descr);
      swap = true;
    }
    meta = old_meta;
    meta.shape = in->shape;
  }
  int64_t items = 1, nchunks = 1;
  for (int i = 0; i < meta.ndim; ++i) {
    const int64_t dim = meta.shape[size_t(i)], cs = meta.chunkshape[size_t(i)];
    if (dim < 0 || (dim > 0 && items > (INT64_MAX / 4) / dim)) refuse("the new shape is too large");
    items *= dim;
    nchunks = cs > 0 ? nchunks * ((dim + cs - 1) / cs) : 0;
  }
  if (items == 0) nchunks = 0;
  if (items > INT64_MAX / 4 / typesize) refuse("the new shape is too large");
  const int64_t body = items * typesize;
  if (size != in->header_len + body)
    refuse("the new .npy holds " + std::to_string(size) + " bytes, its header says " +
           std::to_string(in->header_len + body) + " (an incomplete copy?)");
  std::optional<NdLayout> layout;
  try {
    layout.emplace(meta, typesize, nchunks, new_array ? 0 : frame.header().chunksize);
  } catch (const FormatError& e) {
    refuse(std::string("the new shape does not fit the array's chunks: ") + e.what());
  }
  const bool reshaped = meta.shape != old_meta.shape;
  ChunkChanges changes;
  changes.all = true;
  // Slab by slab along the first axis: one row of chunks is made from its
  // C-order bytes, handed on (compressed on every core) and dropped.
  const auto for_each_slab = [&](const std::function<void(std::vector<Bytes>&)>& take) {
    if (nchunks == 0) return;
    const int nd = meta.ndim;
    const int64_t row_chunks = nd == 0 ? 1 : nchunks / layout->chunks_per_dim()[0];
    const int64_t row_items = nd == 0 ? 1 : items / std::max<int64_t>(1, meta.shape[0]);
    const int64_t rows_per_slab = nd == 0 ? 1 : meta.chunkshape[0];
    const int64_t slabs = nd == 0 ? 1 : layout->chunks_per_dim()[0];
    // The row's chunk buffers are reused (no fresh pages to fault in per row);
    // padding is never written, so they are zeroed again only where a row holds
    // chunks at the array's edge, whose padding earlier rows' chunks filled.
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
        layout->write(at, piece, [&](int64_t n) -> MutableByteSpan {
          Bytes& c = chunks.at(size_t(n - slab * row_chunks));
          if (c.empty()) c.assign(size_t(layout->chunk_bytes()), 0);  // padding stays 0
          return c;
        });
      }
      take(chunks);
    }
  };
  if (frame.sparse()) {
    run_commit(what, [&](FrameEditor& editor) {
      if (reshaped) editor.set_metalayer(nd_layer->name, serialize_b2nd_meta(meta));
      editor.truncate_chunks(0);
      for_each_slab([&](std::vector<Bytes>& chunks) {
        std::vector<FrameEditor::ChunkPut> puts;
        for (const Bytes& c : chunks) puts.push_back({-1, c});
        editor.put_chunks(puts);
      });
    });
  } else {
    // A contiguous frame is written anew beside the old one and renamed over it:
    // memory stays one slab, and a crash leaves the old array or the new one.
    // (run_commit: the store's lock and the errors; rewrite() stages nothing for its commit.)
    run_commit(what, [&](FrameEditor& editor) {
      FrameParams params;
      params.cparams = editor.compress_params();
      params.cparams.typesize = typesize;
      params.cparams.blocksize = int32_t(layout->block_items() * typesize);
      params.cparams.geometry = BlockGeometry{};
      params.cparams.geometry.typesize = typesize;
      params.cparams.geometry.ndim = meta.ndim;
      for (int k = 0; k < meta.ndim; ++k) params.cparams.geometry.blockshape[size_t(k)] = meta.blockshape[size_t(k)];
      params.chunksize = int32_t(layout->chunk_bytes());
      const Bytes nd_content = serialize_b2nd_meta(meta);
      if (new_array) params.metalayers.push_back({"b2nd", nd_content});
      for (const Metalayer& m : frame.metalayers())
        params.metalayers.push_back(nd_layer && m.name == nd_layer->name ? Metalayer{m.name, nd_content} : m);
      const CompressParams cparams = params.cparams;
      editor.rewrite(params, [&](FrameWriter& writer) {
        for (const Vlmetalayer& v : frame.vlmetalayers()) writer.set_vlmetalayer(v.name, frame.vlmetalayer_content(v));
        for_each_slab([&](std::vector<Bytes>& chunks) {
          std::vector<ByteSpan> inputs(chunks.begin(), chunks.end());
          std::vector<EncodedChunk> encoded =
              encode_in_parallel(inputs, [&](ByteSpan raw) { return encode_chunk(raw, cparams); });
          for (EncodedChunk& e : encoded) {
            if (e.error) std::rethrow_exception(e.error);
            writer.append_raw(e.stored);
          }
        });
      });
    });
  }
  install(changes, notes);
  spdlog::info("{}: {}: shape ({}){}", what, new_array ? "a new array" : "replaced", [&] {
    std::string t;
    for (int64_t d : meta.shape) t += (t.empty() ? "" : ", ") + std::to_string(d);
    return t;
  }(), swap ? ", byte order converted" : "");
}

}  // namespace blosc2fs
