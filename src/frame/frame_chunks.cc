// Chunk access through the index: stored chunks, special index entries, chunk
// sizes and data offsets (format-notes §1.4, §2, bug B2).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "chunk_codec.h"
#include "error.h"
#include "frame_impl.h"

namespace blosc2fs {

namespace {

std::string hex_entry(int64_t raw) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llX", static_cast<unsigned long long>(raw));
  return text;
}

}  // namespace

std::string Frame::Impl::chunk_context(int64_t n) const { return "chunk " + str(n) + " of " + path.string() + ": "; }

void Frame::Impl::check_chunk_number(int64_t n) const {
  if (n < 0 || n >= nchunks)
    throw std::out_of_range("chunk " + str(n) + " of " + path.string() + ": the frame has " + str(nchunks) +
                            " chunks");
}

int32_t Frame::Impl::fixed_chunk_nbytes(int64_t n) const {
  const int32_t rest = int32_t(header.nbytes % header.chunksize);
  if (rest == 0 || n != short_chunk_index()) return header.chunksize;
  return rest;
}

int32_t Frame::Impl::stored_nbytes_or_unknown(int64_t n) const {
  if (raw_entry(n) < 0) return -1;
  try {
    return stored_chunk_header(n).nbytes;
  } catch (const FormatError&) {
  } catch (const IoError&) {
  }
  return -1;
}

// nchunks = ceil(nbytes / chunksize), so when chunksize does not divide nbytes
// exactly one chunk holds the remainder. c-blosc2 sizes a special index entry
// by position (the last one gets the remainder), so a special or unreadable
// last chunk is taken as the short one without looking further; likewise a
// uniform index (every chunk the same entry, possibly millions). Otherwise the
// short chunk is the first stored chunk whose header says fewer bytes, or,
// when no header does, the one chunk whose size no header tells.
void Frame::Impl::locate_short_chunk() const {
  short_chunk = -1;
  if (nchunks == 0 || header.nbytes % header.chunksize == 0) return;
  const int64_t last = nchunks - 1;
  short_chunk = last;
  if (index_uniform) return;
  const int32_t last_size = stored_nbytes_or_unknown(last);
  if (last_size < 0 || last_size < header.chunksize) return;
  int64_t unknown = 0, unknown_at = -1;
  for (int64_t n = 0; n < last; ++n) {
    const int32_t size = stored_nbytes_or_unknown(n);
    if (size >= 0 && size < header.chunksize) {
      short_chunk = n;
      return;
    }
    if (size < 0) {
      ++unknown;
      unknown_at = n;
    }
  }
  if (unknown == 1) short_chunk = unknown_at;
}

Frame::Impl::Location Frame::Impl::locate(int64_t entry, bool whole) const {
  Location loc;
  if (!header.sparse()) {
    loc.source = file;
    loc.pos = offset + header.header_len + entry;
    loc.available = header.cbytes - entry;
    // Over a network every read costs a round trip: the chunk header and its
    // body then come from one request that covers the whole stored extent.
    if (whole && file->remote()) file->will_read(loc.pos, stored_extent(entry));
  } else {
    loc.source = chunk_dir->open(sframe_chunk_filename(entry));
    loc.available = loc.source->size();
    if (whole && loc.source->remote()) loc.source->will_read(0, loc.available);
  }
  return loc;
}

int64_t Frame::Impl::stored_extent(int64_t entry) const {
  std::call_once(extents_once, [this] {
    if (index_uniform) {
      if (uniform_entry >= 0) sorted_offsets.push_back(uniform_entry);
    } else {
      for (int64_t e : index)
        if (e >= 0) sorted_offsets.push_back(e);
    }
    std::sort(sorted_offsets.begin(), sorted_offsets.end());
    sorted_offsets.erase(std::unique(sorted_offsets.begin(), sorted_offsets.end()), sorted_offsets.end());
  });
  auto next = std::upper_bound(sorted_offsets.begin(), sorted_offsets.end(), entry);
  const int64_t end = next == sorted_offsets.end() ? header.cbytes : *next;
  return std::max<int64_t>(end - entry, 0);
}

ChunkHeader Frame::Impl::read_header_at(const Location& loc) {
  if (loc.available < kBlosc1HeaderSize)
    throw FormatError("only " + str(loc.available) + " bytes where the chunk should be");
  Bytes head = loc.file().read_bytes(loc.pos, size_t(std::min<int64_t>(loc.available, kExtendedHeaderSize)),
                                     "chunk header");
  ChunkHeader h = parse_chunk_header(head);
  if (h.cbytes > loc.available)
    throw FormatError("the chunk's " + str(h.cbytes) + " bytes exceed the " + str(loc.available) +
                      " bytes available for it");
  return h;
}

static void check_stored_entry(int64_t raw) {
  if (raw < 0 && decode_index_entry(raw).special == Special::none)
    throw FormatError("index entry " + hex_entry(raw) + " is negative but encodes no known special value");
}

ChunkHeader Frame::Impl::stored_chunk_header(int64_t n) const {
  int64_t e = raw_entry(n);
  check_stored_entry(e);
  return read_header_at(locate(e, false));
}

// Bug B2: c-blosc2 writes special entries even with variable chunks; one
// such chunk's size still follows from the total.
static int32_t inferred_size(int64_t total, int64_t known_sum) {
  const int64_t inferred = total - known_sum;
  return inferred > 0 && inferred <= INT32_MAX ? int32_t(inferred) : -1;
}

void Frame::Impl::compute_uniform_sizes() const {
  if (uniform_entry >= 0) {
    try {
      uniform_nbytes = stored_chunk_header(0).nbytes;
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
  }
  if (uniform_nbytes < 0 && nchunks == 1) uniform_nbytes = inferred_size(header.nbytes, 0);
  largest_nbytes = std::max(uniform_nbytes, 0);
}

void Frame::Impl::compute_sizes() const {
  if (index_uniform) return compute_uniform_sizes();
  // Once two sizes are unknown none can be inferred and no later data offset
  // is known, so the scan stops there and later sizes are read when asked
  // for: a frame of millions of unreadable chunks costs two failed headers.
  int64_t known_sum = 0, unknown = 0, last_unknown = -1;
  for (int64_t n = 0; n < nchunks && unknown < 2; ++n) {
    int32_t size = -1;
    if (raw_entry(n) >= 0) {
      try {
        size = stored_chunk_header(n).nbytes;
      } catch (const FormatError&) {
      } catch (const IoError&) {
      }
    }
    sizes.push_back(size);
    if (size < 0) {
      ++unknown;
      last_unknown = n;
    } else {
      known_sum += size;
    }
  }
  if (unknown == 1) sizes[size_t(last_unknown)] = inferred_size(header.nbytes, known_sum);
  for (int32_t size : sizes) largest_nbytes = std::max(largest_nbytes, size);
  starts.push_back(0);
  for (int32_t size : sizes) {
    if (size < 0) break;
    starts.push_back(starts.back() + size);
  }
}

int32_t Frame::Impl::nbytes_of(int64_t n) const {
  if (fixed_chunksize()) return fixed_chunk_nbytes(n);
  ensure_sizes();
  int32_t size = -1;
  if (index_uniform) {
    size = uniform_nbytes;
  } else if (n < int64_t(sizes.size())) {
    size = sizes[size_t(n)];
  } else if (raw_entry(n) >= 0) {
    return stored_chunk_header(n).nbytes;  // past the scan: its own header tells, or says what is wrong
  }
  if (size < 0)
    throw FormatError("size unknown: in this variable-chunksize frame it can be inferred only when a single chunk "
                      "has neither a readable header nor a known size");
  return size;
}

int64_t Frame::Impl::data_offset_of(int64_t n) const {
  if (fixed_chunksize()) {
    const int64_t cs = header.chunksize;
    const int64_t short_at = short_chunk_index();
    if (short_at < 0 || n <= short_at) return std::min(n * cs, header.nbytes);
    return std::min((n - 1) * cs + header.nbytes % cs, header.nbytes);
  }
  ensure_sizes();
  int64_t start = -1;
  if (index_uniform)
    start = n == 0 ? 0 : uniform_nbytes < 0 ? -1 : n * uniform_nbytes;
  else if (n < int64_t(starts.size()))
    start = starts[size_t(n)];
  if (start < 0) throw FormatError("data offset unknown: an earlier chunk has an unknown size");
  return start;
}

size_t Frame::Impl::raw_chunk_into(int64_t n, const Frame::ChunkBufferFn& buffer_for,
                                   HeldBytes* view) const {
  int64_t e = raw_entry(n);
  check_stored_entry(e);
  if (e < 0) {
    const Bytes special = make_special_chunk(decode_index_entry(e).special, nbytes_of(n), header.typesize);
    std::memcpy(buffer_for(special.size()), special.data(), special.size());
    return special.size();
  }
  if (file->remote()) note_remote_read(n);
  Location loc = locate(e);
  ChunkHeader h = read_header_at(loc);
  const size_t cbytes = size_t(h.cbytes);
  if (view && (*view = loc.file().view_at(loc.pos, cbytes, true))) return cbytes;
  loc.file().read_exact(loc.pos, MutableByteSpan(buffer_for(cbytes), cbytes), "chunk");
  return cbytes;
}

Bytes Frame::Impl::raw_chunk(int64_t n) const {
  Bytes out;
  raw_chunk_into(n, [&out](size_t cbytes) {
    out.resize(cbytes);
    return out.data();
  });
  return out;
}

Bytes Frame::Impl::decoded_chunk(int64_t n) const {
  Bytes raw = raw_chunk(n);
  return decode_viewed(n, ChunkView(raw, decode_rules));
}

// A chunk's own header may claim up to 2 GiB; only the frame's checked sizes
// may size the buffer it decodes into.
Bytes Frame::Impl::decode_viewed(int64_t n, const ChunkView& view) const {
  if (fixed_chunksize() && view.nbytes() != fixed_chunk_nbytes(n))
    throw FormatError("holds " + str(view.nbytes()) + " bytes where the frame's chunksize implies " +
                      str(fixed_chunk_nbytes(n)));
  if (!fixed_chunksize() && view.nbytes() != nbytes_of(n))
    throw FormatError("holds " + str(view.nbytes()) + " bytes where the frame's index implies " + str(nbytes_of(n)));
  if (view.nbytes() > header.nbytes)
    throw FormatError("claims " + str(view.nbytes()) + " bytes, more than the whole frame's " + str(header.nbytes));
  Bytes out(size_t(view.nbytes()));
  view.decode(out);
  return out;
}

ChunkInfo Frame::Impl::info(int64_t n) const {
  ChunkInfo info;
  info.entry = decode_index_entry(raw_entry(n));
  if (info.entry.raw < 0) {
    check_stored_entry(info.entry.raw);
    info.nbytes = nbytes_of(n);
    info.cbytes = 0;
    info.blocksize = info.nbytes;
    info.special = info.entry.special;
    info.codec = "-";
    info.filters = "-";
    return info;
  }
  ChunkHeader h = stored_chunk_header(n);
  info.nbytes = h.nbytes;
  info.cbytes = h.cbytes;
  info.blocksize = h.blocksize;
  info.special = h.special();
  info.codec = h.codec_label();
  info.filters = h.filters_label();
  return info;
}

void Frame::Impl::note_remote_read(int64_t n) const {
  // Kernel readahead and several FUSE threads may take chunks a little out
  // of order; a reader jumping further is not sequential.
  const int64_t last = last_read_chunk.exchange(n);
  if (n > last && n <= last + 2) prefetch_after(n);
}

void Frame::Impl::prefetch_after(int64_t n) const {
  constexpr int64_t kSequentialWindow = 32;
  const int64_t first = n + 1, end = first + kSequentialWindow;
  // A reader that finds another moving the window leaves it to that one.
  std::unique_lock lock(prefetch_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const int64_t until = prefetched_until.load();
  // A reader ahead of the last window, or far behind it (a seek back), starts a new one.
  const int64_t from = first > until || first + 2 * kSequentialWindow < until ? first : until;
  if (from >= end) return;
  // Chunks the budget refused are asked for again by the next window.
  prefetched_until = Frame::prefetch_window(*this, from, end - from);
}

int64_t Frame::prefetch_window(const Impl& f, int64_t first, int64_t count) {
  const int64_t end = first + std::max<int64_t>(count, 0);
  // A sparse frame's chunk files are objects of their own, opened (one
  // request each) by whoever reads them.
  if (!f.file->remote() || f.header.sparse()) return end;
  // Chunks stored one after another go in one request up to this much: each
  // request costs the server more than its bytes do (a Python one; SeaweedFS
  // spent 0.46 CPU-s serving a 386 MB frame in 8 MiB runs, 0.37 in 16 MiB ones,
  // 0.28 as one GET, on a machine of two cores that the reader shares).
  constexpr int64_t kMaxRun = int64_t(16) << 20;
  try {
    int64_t run_first = -1, run_start = 0, run_end = 0;
    auto flush = [&] { return run_first < 0 || f.file->prefetch(run_start, run_end - run_start); };
    for (int64_t n = std::max<int64_t>(first, 0); n < std::min(f.nchunks, end); ++n) {
      const int64_t e = f.raw_entry(n);
      if (e < 0) continue;
      const int64_t start = f.offset + f.header.header_len + e, length = f.stored_extent(e);
      if (run_first >= 0 && start == run_end && run_end + length - run_start <= kMaxRun) {
        run_end += length;
        continue;
      }
      if (!flush()) return run_first;
      run_first = n;
      run_start = start;
      run_end = start + length;
    }
    if (!flush()) return run_first;
  } catch (const std::exception&) {
    // A hint: whoever reads the chunk meets the error.
  }
  return end;
}

bool Frame::index_is_uniform() const { return impl_->index_uniform; }

int64_t Frame::short_chunk() const { return impl_->fixed_chunksize() ? impl_->short_chunk_index() : -1; }

int32_t Frame::largest_chunk_nbytes() const {
  if (impl_->fixed_chunksize()) return impl_->header.chunksize;
  if (impl_->nchunks == 0) return 0;
  impl_->ensure_sizes();
  return impl_->largest_nbytes;
}

int32_t Frame::chunk_nbytes(int64_t n) const {
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&] { return impl_->nbytes_of(n); });
}

int64_t Frame::chunk_data_offset(int64_t n) const {
  if (n == impl_->nchunks && n > 0) {
    // The end of the data: one past the last chunk.
    return with_error_context(impl_->chunk_context(n - 1),
                              [&] { return impl_->data_offset_of(n - 1) + impl_->nbytes_of(n - 1); });
  }
  if (n == 0 && impl_->nchunks == 0) return 0;
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&] { return impl_->data_offset_of(n); });
}

ChunkInfo Frame::chunk_info(int64_t n) const {
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&] { return impl_->info(n); });
}

Bytes Frame::read_raw_chunk(int64_t n) const {
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&] { return impl_->raw_chunk(n); });
}

size_t Frame::read_raw_chunk_into(int64_t n, const ChunkBufferFn& buffer_for) const {
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&] { return impl_->raw_chunk_into(n, buffer_for); });
}

HeldBytes Frame::read_raw_chunk_viewed(int64_t n, const ChunkBufferFn& buffer_for) const {
  impl_->check_chunk_number(n);
  HeldBytes view;
  with_error_context(impl_->chunk_context(n), [&] { return impl_->raw_chunk_into(n, buffer_for, &view); });
  return view;
}

std::optional<Frame::StoredChunkPlace> Frame::stored_chunk_place(int64_t n, int64_t min_stored) const {
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&]() -> std::optional<StoredChunkPlace> {
    const int64_t e = impl_->raw_entry(n);
    check_stored_entry(e);
    if (e < 0) return std::nullopt;
    Impl::Location loc = impl_->locate(e, false);
    // At most this much (a sparse frame's chunk is an object of its own).
    const int64_t room = impl_->header.sparse() ? loc.available : std::min(loc.available, impl_->stored_extent(e));
    if (room < min_stored) return std::nullopt;
    // The header and its block table in one small request (a table of 1,016
    // blocks fits), not the source's usual least fetch: a reader of one
    // block of a big chunk moves that block and little else.
    constexpr int64_t kHeadGuess = 4096;
    if (loc.source->remote()) loc.source->will_read_only(loc.pos, std::min(kHeadGuess, room));
    ChunkHeader h = Impl::read_header_at(loc);
    return StoredChunkPlace{loc.source, loc.pos, h};
  });
}

void Frame::note_whole_chunk_read(int64_t n) const {
  if (n >= 0 && n < impl_->nchunks && impl_->file->remote()) impl_->note_remote_read(n);
}

Bytes Frame::read_chunk(int64_t n) const {
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&] { return impl_->decoded_chunk(n); });
}

Bytes Frame::decode_chunk(int64_t n, const ChunkView& view) const {
  impl_->check_chunk_number(n);
  return with_error_context(impl_->chunk_context(n), [&] { return impl_->decode_viewed(n, view); });
}

}  // namespace blosc2fs
