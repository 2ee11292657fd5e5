#include "chunk_overlay.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fs_error.h"

namespace blosc2fs {

ChunkOverlay::~ChunkOverlay() {
  if (materialized_bytes_) cache_.unpin_bytes(materialized_bytes_);
}

void ChunkOverlay::charge(int64_t delta_bytes, int delta_chunks) {
  materialized_chunks_ = size_t(int64_t(materialized_chunks_) + delta_chunks);
  if (delta_bytes > 0) {
    materialized_bytes_ += uint64_t(delta_bytes);
    cache_.pin_bytes(uint64_t(delta_bytes));
  } else if (delta_bytes < 0) {
    materialized_bytes_ -= uint64_t(-delta_bytes);
    cache_.unpin_bytes(uint64_t(-delta_bytes));
  }
}

void ChunkOverlay::erase_held(std::map<int64_t, Held>::iterator it) {
  if (!it->second.zeros) charge(-int64_t(it->second.bytes.size()), -1);
  held_.erase(it);
}

// The held bytes made `size` long: the bytes kept, zeros after them.
void ChunkOverlay::resize_bytes(Held& h, int64_t size) {
  PooledBuffer bytes = cache_.pool().take(size_t(size));
  const size_t kept = std::min(h.bytes.size(), size_t(size));
  if (kept) std::memcpy(bytes.data(), h.bytes.data(), kept);
  std::memset(bytes.data() + kept, 0, bytes.size() - kept);
  h.bytes = std::move(bytes);
  h.size = size;
}

void ChunkOverlay::reset(const ChunkSource& source, Limits limits) {
  while (!held_.empty()) erase_held(held_.begin());
  limits_ = limits;
  base_count_ = keep_ = count_ = source.nchunks();
}

void ChunkOverlay::rebase(const ChunkSource& source, Limits limits) {
  limits_ = limits;
  base_count_ = source.nchunks();
  keep_ = std::min(keep_, base_count_);
}

int64_t ChunkOverlay::chunk_size(const ChunkSource& src, int64_t n) const {
  auto it = held_.find(n);
  if (it != held_.end()) return it->second.size;
  return n < keep_ ? src.chunk_size(n) : 0;
}

int64_t ChunkOverlay::offset(const ChunkSource& src, int64_t n) const {
  const int64_t below_keep = std::min(n, keep_);
  int64_t at = src.chunk_offset(below_keep);
  for (auto it = held_.begin(); it != held_.end() && it->first < below_keep; ++it)
    at += it->second.size - src.chunk_size(it->first);
  for (auto it = held_.lower_bound(keep_); it != held_.end() && it->first < n; ++it) at += it->second.size;
  return at;
}

// The chunk holding byte `at` of data: the last one starting at or before it
// (so empty chunks are skipped). `at` must be below the data size.
int64_t ChunkOverlay::locate(const ChunkSource& src, int64_t at) const {
  int64_t lo = 0, hi = count_ - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (offset(src, mid) <= at) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

void ChunkOverlay::gather_chunk(ChunkSource& src, int64_t n, int64_t offset, size_t len, ReadPieces& out) const {
  auto it = held_.find(n);
  if (it == held_.end()) {
    if (n >= keep_) return;
    std::shared_ptr<const void> keep;
    ByteSpan bytes = src.view(n, offset, len, keep);
    out.add_view(bytes, std::move(keep));
    return;
  }
  // Held bytes change with the next write: copied.
  const Held& h = it->second;
  if (offset < 0 || offset >= h.size) return;
  const int64_t end = std::min<int64_t>(offset + int64_t(len), h.size);
  auto copy_held = [&](int64_t at, int64_t n) {
    MutableByteSpan copy = out.add_copy(size_t(n));
    if (h.zeros) std::memset(copy.data(), 0, copy.size());
    else std::memcpy(copy.data(), h.bytes.data() + at, copy.size());
  };
  if (h.whole()) return copy_held(offset, end - offset);
  h.written->split(offset, end, [&](int64_t at, int64_t n, bool written) {
    if (written) return copy_held(at, n);
    std::shared_ptr<const void> keep;
    ByteSpan bytes = src.view(it->first, at, size_t(n), keep);
    if (int64_t(bytes.size()) != n) throw FormatError("chunk " + std::to_string(it->first) + ": shorter than the frame says");
    out.add_view(bytes, std::move(keep));
  });
}

void ChunkOverlay::gather_data(ChunkSource& src, int64_t at, size_t len, ReadPieces& out) const {
  const int64_t total = data_size(src);
  if (at < 0 || at >= total || len == 0) return;
  const size_t want = size_t(std::min<int64_t>(int64_t(len), total - at));
  size_t done = 0;
  for (int64_t n = locate(src, at); done < want && n < count_; ++n) {
    const int64_t start = offset(src, n);
    const int64_t within = at + int64_t(done) - start;
    const int64_t size = chunk_size(src, n);
    if (within >= size) continue;
    const size_t piece = size_t(std::min<int64_t>(int64_t(want - done), size - within));
    const size_t before = out.size();
    gather_chunk(src, n, within, piece, out);
    if (out.size() - before != piece) throw FormatError("chunk " + std::to_string(n) + ": shorter than the frame says");
    done += piece;
  }
}

size_t ChunkOverlay::read_chunk(ChunkSource& src, int64_t n, int64_t offset, MutableByteSpan out) const {
  ReadPieces pieces;
  gather_chunk(src, n, offset, out.size(), pieces);
  return pieces.copy_to(out);
}

size_t ChunkOverlay::read_data(ChunkSource& src, int64_t at, MutableByteSpan out) const {
  ReadPieces pieces;
  gather_data(src, at, out.size(), pieces);
  return pieces.copy_to(out);
}

ChunkOverlay::Held& ChunkOverlay::hold(ChunkSource& src, int64_t n) {
  auto it = held_.find(n);
  if (it == held_.end()) {
    if (n >= keep_) throw FsError{EINVAL};  // cannot happen: [keep, count) is always held
    Held h;
    h.bytes = src.load(n, cache_.pool());
    h.size = int64_t(h.bytes.size());
    it = held_.emplace(n, std::move(h)).first;
    charge(it->second.size, 1);
  } else if (it->second.zeros) {
    it->second.bytes = cache_.pool().take(size_t(it->second.size));
    std::memset(it->second.bytes.data(), 0, it->second.bytes.size());
    it->second.zeros = false;
    charge(it->second.size, 1);
  } else if (it->second.written) {
    if (!it->second.whole()) fill_gaps(src, n, it->second);
    it->second.written.reset();
    it->second.only_if_changed = false;  // written through data or chunks/: kept
  }
  it->second.written_through_pages = false;
  return it->second;
}

void ChunkOverlay::Held::put(int64_t at, ByteSpan data) {
  if (data.empty()) return;
  if (only_if_changed && !written && !differs) differs = std::memcmp(bytes.data() + at, data.data(), data.size()) != 0;
  std::memcpy(bytes.data() + at, data.data(), data.size());
  if (written) written->add(at, at + int64_t(data.size()));
}

// Only the committed bytes the commit needs are decoded (the blocks they lie
// in): the gaps, and the written bytes of a chunk kept only if changed, a
// megabyte at a time until one differs. With every reachable byte written,
// the gaps are what writes cannot reach (an array's padding), and the chunk
// counts as changed.
bool ChunkOverlay::fill_gaps(ChunkSource& src, int64_t n, Held& h) const {
  constexpr int64_t kCompareStep = int64_t(1) << 20;
  bool changed = !h.only_if_changed || h.written->covered() >= h.reachable;
  auto committed = [&](int64_t at, int64_t len, std::shared_ptr<const void>& keep) {
    const ByteSpan bytes = src.view_exact(n, at, size_t(len), keep);
    if (int64_t(bytes.size()) != len) throw FormatError("chunk " + std::to_string(n) + ": shorter than the frame says");
    return bytes;
  };
  h.written->split(0, h.size, [&](int64_t at, int64_t len, bool written) {
    std::shared_ptr<const void> keep;
    if (!written) {
      std::memcpy(h.bytes.data() + at, committed(at, len, keep).data(), size_t(len));
      return;
    }
    for (int64_t k = 0; k < len && !changed; k += kCompareStep) {
      const int64_t step = std::min(kCompareStep, len - k);
      changed = std::memcmp(h.bytes.data() + at + k, committed(at + k, step, keep).data(), size_t(step)) != 0;
    }
  });
  return changed;
}

ChunkOverlay::Held& ChunkOverlay::hold_region(ChunkSource& src, int64_t n, int64_t reachable, bool only_if_changed,
                                              bool through_pages) {
  if (n < 0 || n >= count_) throw FsError{EINVAL};
  auto it = held_.find(n);
  if (it != held_.end()) {
    Held& h = it->second.zeros ? hold(src, n) : it->second;
    h.written_through_pages = h.written_through_pages && through_pages;
    return h;
  }
  if (n >= keep_) throw FsError{EINVAL};  // cannot happen: [keep, count) is always held
  Held h;
  h.size = src.chunk_size(n);
  h.bytes = src.take_decoded(n);
  if (h.bytes.size() != size_t(h.size)) {
    // Left as it comes: a byte no write supplies is filled from the committed
    // chunk before anything reads it from here.
    h.bytes = cache_.pool().take(size_t(h.size));
    h.written.emplace();
  }
  h.reachable = std::min(reachable, h.size);
  h.only_if_changed = only_if_changed;
  h.written_through_pages = through_pages;
  it = held_.emplace(n, std::move(h)).first;
  charge(it->second.size, 1);
  return it->second;
}

const ChunkOverlay::Held* ChunkOverlay::held(int64_t n) const {
  auto it = held_.find(n);
  return it == held_.end() ? nullptr : &it->second;
}

int64_t ChunkOverlay::complete(ChunkSource& src, std::optional<int64_t> skip) {
  int64_t decoded = 0;
  for (auto it = held_.begin(); it != held_.end();) {
    Held& h = it->second;
    if (skip && it->first == *skip) {
      ++it;
      continue;
    }
    if (!h.written) {
      // Held whole from the start: only a chunk that took the committed bytes
      // and that no write changed is dropped (the committed chunk shows again).
      if (h.only_if_changed && !h.differs) erase_held(it++);
      else ++it;
      continue;
    }
    if (!h.whole()) {
      ++decoded;
      if (!fill_gaps(src, it->first, h)) {  // nothing changed: the committed chunk shows again
        erase_held(it++);
        continue;
      }
    }
    h.written.reset();
    h.only_if_changed = false;  // decided: changed
    // Every byte is held now: the committed chunk's decoded bytes (a memory
    // map's reads brought them in) leave the cache before the compression
    // that follows needs the memory.
    src.drop_decoded(it->first);
    ++it;
  }
  return decoded;
}

void ChunkOverlay::write_chunk(ChunkSource& src, int64_t n, int64_t at, ByteSpan data) {
  if (n < 0 || n >= count_ || at < 0) throw FsError{EINVAL};
  const int64_t end = at + int64_t(data.size());
  if (end > limits_.max_chunk) throw FsError{EFBIG};
  auto it = held_.find(n);
  if (n < keep_ && (it == held_.end() ? end <= src.chunk_size(n) : it->second.written && end <= it->second.size)) {
    // In place within a committed chunk: held by region, not loaded.
    Held& h = it == held_.end() ? hold_region(src, n, src.chunk_size(n), false) : it->second;
    h.written_through_pages = false;
    h.put(at, data);
    return;
  }
  Held& h = hold(src, n);
  if (end > h.size) {
    charge(end - h.size, 0);
    resize_bytes(h, end);
  }
  if (!data.empty()) std::memcpy(h.bytes.data() + at, data.data(), data.size());
}

void ChunkOverlay::resize_chunk(ChunkSource& src, int64_t n, int64_t size) {
  if (n < 0 || n >= count_ || size < 0) throw FsError{EINVAL};
  if (size > limits_.max_chunk) throw FsError{EFBIG};
  if (size == 0 && !held_.count(n)) {
    held_.emplace(n, Held{});  // no need to load what is thrown away
    charge(0, 1);
    return;
  }
  if (size == chunk_size(src, n) && (held_.count(n) || n < keep_)) return;
  Held& h = hold(src, n);
  charge(size - h.size, 0);
  resize_bytes(h, size);
}

void ChunkOverlay::set_chunk(int64_t n, ByteSpan bytes) {
  if (n < 0 || n >= count_) throw FsError{EINVAL};
  if (int64_t(bytes.size()) > limits_.max_chunk) throw FsError{EFBIG};
  auto it = held_.find(n);
  if (it != held_.end()) erase_held(it);
  Held h;
  h.size = int64_t(bytes.size());
  h.bytes = cache_.pool().take(bytes.size());
  if (!bytes.empty()) std::memcpy(h.bytes.data(), bytes.data(), bytes.size());
  charge(h.size, 1);
  held_.emplace(n, std::move(h));
}

void ChunkOverlay::append_chunk() {
  if (limits_.fixed_count) throw FsError{EPERM};
  held_.emplace(count_, Held{});
  charge(0, 1);
  ++count_;
}

void ChunkOverlay::truncate_count(int64_t count) {
  if (count < 0 || count > count_) throw FsError{EINVAL};
  if (limits_.fixed_count && count != count_) throw FsError{EPERM};
  while (!held_.empty() && std::prev(held_.end())->first >= count) erase_held(std::prev(held_.end()));
  count_ = count;
  keep_ = std::min(keep_, count);
}

void ChunkOverlay::extend_zeros(ChunkSource& src, int64_t bytes) {
  if (bytes <= 0) return;
  // Each new chunk is an entry here until the commit: a truncate -s 1T of a
  // frame of 4 KB chunks would take tens of GB before it could be stored.
  const int64_t last_room = count_ > 0 ? std::max<int64_t>(0, limits_.grow_to - chunk_size(src, count_ - 1)) : 0;
  const int64_t beyond = bytes - std::min(bytes, last_room);
  if (limits_.grow_to > 0 && (beyond + limits_.grow_to - 1) / limits_.grow_to > kMaxChunksAddedAtOnce)
    throw FsError{EFBIG};
  if (count_ > 0) {
    const int64_t last = count_ - 1;
    const int64_t size = chunk_size(src, last);
    const int64_t room = std::max<int64_t>(0, limits_.grow_to - size);
    const int64_t take = std::min(room, bytes);
    if (take > 0) {
      resize_chunk(src, last, size + take);
      bytes -= take;
    }
  }
  while (bytes > 0) {
    const int64_t take = std::min(bytes, limits_.grow_to);
    Held h;
    h.size = take;
    h.zeros = true;
    held_.emplace(count_++, std::move(h));
    bytes -= take;
  }
}

void ChunkOverlay::write_data(ChunkSource& src, int64_t at, ByteSpan data) {
  if (at < 0) throw FsError{EINVAL};
  int64_t size = data_size(src);
  if (limits_.fixed_count && (at > size || int64_t(data.size()) > size - at)) throw FsError{EFBIG};
  if (at > size) {
    extend_zeros(src, at - size);
    size = at;
  }
  size_t done = 0;
  while (done < data.size()) {
    const int64_t pos = at + int64_t(done);
    const size_t rest = data.size() - done;
    if (pos >= size) {  // appending: fill the last chunk, then add chunks
      int64_t last = count_ - 1;
      int64_t last_size = last >= 0 ? chunk_size(src, last) : 0;
      if (last < 0 || last_size >= limits_.grow_to) {
        append_chunk();
        last = count_ - 1;
        last_size = 0;
      }
      const size_t take = size_t(std::min<int64_t>(int64_t(rest), limits_.grow_to - last_size));
      write_chunk(src, last, last_size, data.subspan(done, take));
      done += take;
      size += int64_t(take);
      continue;
    }
    const int64_t n = locate(src, pos);
    const int64_t within = pos - offset(src, n);
    const int64_t chunk = chunk_size(src, n);
    if (within >= chunk) throw FormatError("data: inconsistent chunk offsets");
    const size_t take = size_t(std::min<int64_t>(int64_t(rest), chunk - within));
    write_chunk(src, n, within, data.subspan(done, take));
    done += take;
  }
}

void ChunkOverlay::resize_data(ChunkSource& src, int64_t size) {
  if (size < 0) throw FsError{EINVAL};
  const int64_t current = data_size(src);
  if (limits_.fixed_count && size != current) throw FsError{EINVAL};
  if (size >= current) return extend_zeros(src, size - current);
  if (size == 0) return truncate_count(0);
  const int64_t n = locate(src, size - 1);
  truncate_count(n + 1);
  const int64_t within = size - offset(src, n);
  if (within < chunk_size(src, n)) resize_chunk(src, n, within);
}

ChunkOverlay::Batch ChunkOverlay::batch(std::optional<int64_t> skip) const {
  Batch b;
  if (keep_ < base_count_) b.truncate_to = keep_;
  // A chunk is appended only after every chunk before it has its final size: not
  // after the one being filled, nor after the frame's last chunk while that one
  // is being filled (it may still be short, and only the last chunk may be).
  int64_t append_end = count_;
  if (skip && *skip >= keep_ - 1) append_end = std::max(*skip, keep_);
  for (const auto& [n, h] : held_) {
    if (skip && n == *skip) continue;
    if (n < keep_) b.replace.emplace_back(n, &h);
    else if (n < append_end) b.append.emplace_back(n, &h);
  }
  b.nchunks_after = std::max(keep_, append_end);
  return b;
}

void ChunkOverlay::committed(const Batch& b, int64_t committed) {
  for (const auto* list : {&b.replace, &b.append})
    for (const auto& [n, held] : *list) {
      auto it = held_.find(n);
      if (it != held_.end()) erase_held(it);
    }
  base_count_ = committed;
  keep_ = std::min(committed, count_);
}

void ChunkOverlay::discard() {
  while (!held_.empty()) erase_held(held_.begin());
  keep_ = count_ = base_count_;
}

}  // namespace blosc2fs
