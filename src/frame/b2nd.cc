// The b2nd / caterva metalayer and the chunk/block layout of N-d arrays
// (format-notes §7, seeds 000 and 003).
#include "b2nd.h"
#include "error.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace blosc2fs {

namespace {

// a * b, or nullopt-like -1 when it exceeds `limit` (all inputs non-negative).
int64_t mul_capped(int64_t a, int64_t b, int64_t limit) {
  if (a == 0 || b == 0) return 0;
  if (a > limit / b) return -1;
  return a * b;
}

}  // namespace

NdMeta parse_nd_meta(ByteSpan content, bool caterva) {
  ByteReader in(content, caterva ? "caterva metalayer" : "b2nd metalayer");
  NdMeta meta;
  meta.legacy_caterva = caterva;
  // Positionally, like c-blosc2's b2nd_deserialize_meta: the array and integer markers
  // are skipped, not checked. A 16-d array's markers are 0x90 + 16 = 0xA0, which msgpack
  // reads as an empty fixstr, so a generic msgpack parser cannot read it. The 5-element
  // caterva form (no dtype_format, no dtype) also appears under the name "b2nd".
  in.u8();
  meta.version = in.u8();
  meta.ndim = in.u8();
  if (meta.ndim > kMaxDims) in.fail(str(meta.ndim) + " dimensions, more than " + str(kMaxDims));
  in.u8();
  for (int i = 0; i < meta.ndim; ++i) {
    in.u8();
    meta.shape.push_back(int64_t(in.be64()));
  }
  in.u8();
  for (int i = 0; i < meta.ndim; ++i) {
    in.u8();
    meta.chunkshape.push_back(int32_t(in.be32()));
  }
  in.u8();
  for (int i = 0; i < meta.ndim; ++i) {
    in.u8();
    meta.blockshape.push_back(int32_t(in.be32()));
  }
  if (caterva) return meta;
  if (in.remaining() == 0) return meta;
  meta.dtype_format = in.u8();
  if (in.remaining() == 0) return meta;
  in.expect(0xDB, "a str32 (DB) dtype");
  uint32_t len = in.be32();
  if (len > in.remaining()) in.fail("dtype of " + str(len) + " bytes does not fit");
  ByteSpan text = in.take(len);
  meta.dtype = std::string(text.begin(), text.end());
  return meta;
}

Bytes serialize_b2nd_meta(const NdMeta& meta) {
  if (meta.ndim < 0 || meta.ndim > kMaxDims || size_t(meta.ndim) != meta.shape.size() ||
      meta.shape.size() != meta.chunkshape.size() || meta.shape.size() != meta.blockshape.size())
    throw FormatError("b2nd metalayer: inconsistent or too many (> 16) dimensions");
  if (meta.version < 0 || meta.version > 127 || meta.dtype_format < 0 || meta.dtype_format > 127)
    throw FormatError("b2nd metalayer: version and dtype_format must be 0..127");
  Bytes out;
  const bool with_dtype = !meta.legacy_caterva && meta.dtype.has_value();
  out.push_back(uint8_t(0x90 | (meta.legacy_caterva ? 5 : with_dtype ? 7 : 6)));
  out.push_back(uint8_t(meta.version));
  out.push_back(uint8_t(meta.ndim));
  // c-blosc2 writes 0x90 + ndim even for 16 dimensions (0xA0, not msgpack); so do we.
  out.push_back(uint8_t(0x90 + meta.ndim));
  for (int64_t v : meta.shape) {
    out.push_back(0xD3);
    append_be64(out, uint64_t(v));
  }
  for (const auto* dims : {&meta.chunkshape, &meta.blockshape}) {
    out.push_back(uint8_t(0x90 + meta.ndim));
    for (int32_t v : *dims) {
      out.push_back(0xD2);
      append_be32(out, uint32_t(v));
    }
  }
  if (meta.legacy_caterva) return out;
  out.push_back(uint8_t(meta.dtype_format));
  if (with_dtype) {
    if (meta.dtype->size() > size_t(INT32_MAX)) throw FormatError("b2nd metalayer: dtype too long");
    out.push_back(0xDB);
    append_be32(out, uint32_t(meta.dtype->size()));
    out.insert(out.end(), meta.dtype->begin(), meta.dtype->end());
  }
  return out;
}

NdLayout::NdLayout(const NdMeta& meta, int32_t typesize, int64_t frame_nchunks, int32_t frame_chunksize) {
  const std::string context = "N-d layout: ";
  const int nd = meta.ndim;
  if (nd < 0 || nd > kMaxDims || meta.shape.size() != size_t(nd) || meta.chunkshape.size() != size_t(nd) ||
      meta.blockshape.size() != size_t(nd))
    throw FormatError(context + "inconsistent number of dimensions");
  if (typesize <= 0) throw FormatError(context + "typesize " + str(typesize) + " is not positive");
  typesize_ = typesize;
  const int64_t kLimit = INT64_MAX / 2;
  nitems_ = 1;
  for (int i = 0; i < nd; ++i) {
    if (meta.shape[i] < 0) throw FormatError(context + "negative shape in dimension " + str(i));
    nitems_ = mul_capped(nitems_, meta.shape[i], kLimit);
    if (nitems_ < 0) throw FormatError(context + "the array has too many items");
  }
  if (mul_capped(nitems_, typesize, kLimit) < 0) throw FormatError(context + "the array is too large");
  shape_.assign(meta.shape.begin(), meta.shape.end());
  chunkshape_.assign(meta.chunkshape.begin(), meta.chunkshape.end());
  blockshape_.assign(meta.blockshape.begin(), meta.blockshape.end());
  extchunkshape_.assign(size_t(nd), 0);
  chunks_per_dim_.assign(size_t(nd), 0);
  blocks_per_dim_.assign(size_t(nd), 0);

  nchunks_ = nitems_ == 0 ? 0 : 1;
  chunk_items_ = 1;
  block_items_ = 1;
  for (int i = 0; i < nd; ++i) {
    int64_t cs = chunkshape_[i], bs = blockshape_[i];
    // An empty dimension may come with zero chunk and block shapes.
    if (cs <= 0 || bs <= 0) {
      if (nitems_ == 0 && cs >= 0 && bs >= 0) {
        chunk_items_ = 0;
        continue;
      }
      throw FormatError(context + "chunk and block shapes must be positive (dimension " + str(i) + ")");
    }
    extchunkshape_[i] = (cs + bs - 1) / bs * bs;
    blocks_per_dim_[i] = extchunkshape_[i] / bs;
    chunks_per_dim_[i] = (shape_[i] + cs - 1) / cs;
    chunk_items_ = mul_capped(chunk_items_, extchunkshape_[i], INT32_MAX);
    block_items_ = mul_capped(block_items_, bs, INT32_MAX);
    if (chunk_items_ < 0 || block_items_ < 0 || mul_capped(chunk_items_, typesize, INT32_MAX) < 0)
      throw FormatError(context + "a chunk would exceed 2 GiB");
    if (nchunks_ > 0) nchunks_ = mul_capped(nchunks_, chunks_per_dim_[i], kLimit);
    if (nchunks_ < 0) throw FormatError(context + "too many chunks");
  }
  if (nchunks_ != frame_nchunks)
    throw FormatError(context + "shape and chunkshape give " + str(nchunks_) + " chunks, the frame has " +
                      str(frame_nchunks));
  if (nchunks_ > 0 && frame_chunksize > 0 && chunk_bytes() != frame_chunksize)
    throw FormatError(context + "chunks of " + str(chunk_bytes()) + " bytes expected, the frame's chunksize is " +
                      str(frame_chunksize));
}

int64_t NdLayout::nitems() const { return nitems_; }
int64_t NdLayout::array_bytes() const { return nitems_ * typesize_; }
int64_t NdLayout::nchunks() const { return nchunks_; }
int64_t NdLayout::chunk_bytes() const { return chunk_items_ * typesize_; }

// Calls emit(chunk, byte offset in the chunk, byte offset in the range, length)
// for each contiguous piece of [offset, offset + len): a run along the last
// dimension that stays inside one block.
template <class Emit>
void NdLayout::walk(int64_t offset, int64_t len, Emit&& emit) const {
  if (offset < 0 || len < 0 || offset > array_bytes() || len > array_bytes() - offset)
    throw std::out_of_range("N-d array: byte range " + str(offset) + "+" + str(len) + " is outside the " +
                            str(array_bytes()) + "-byte array");
  if (len == 0) return;
  const int64_t ts = typesize_;
  const int nd = int(shape_.size());
  const int64_t end = offset + len;
  if (nd == 0) {
    emit(0, offset, 0, len);
    return;
  }
  int64_t item = offset / ts;
  const int64_t end_item = (end + ts - 1) / ts;
  std::vector<int64_t> g(static_cast<size_t>(nd));
  for (int64_t rest = item, i = nd - 1; i >= 0; --i) {
    g[size_t(i)] = rest % shape_[size_t(i)];
    rest /= shape_[size_t(i)];
  }
  const size_t last = size_t(nd - 1);
  const int64_t cs = chunkshape_[last], bs = blockshape_[last];
  while (item < end_item) {
    // The leading dimensions' share of the position, the same along a row:
    // only the last dimension's is worked out per run (a whole-chunk re-layout
    // of small blocks is mostly runs).
    int64_t row_chunk = 0, row_block = 0, row_in_block = 0;
    for (size_t i = 0; i < last; ++i) {
      int64_t in_chunk = g[i] % chunkshape_[i];
      row_chunk = row_chunk * chunks_per_dim_[i] + g[i] / chunkshape_[i];
      row_block = row_block * blocks_per_dim_[i] + in_chunk / blockshape_[i];
      row_in_block = row_in_block * blockshape_[i] + in_chunk % blockshape_[i];
    }
    while (item < end_item && g[last] < shape_[last]) {
      const int64_t in_chunk = g[last] % cs;
      const int64_t chunk = row_chunk * chunks_per_dim_[last] + g[last] / cs;
      const int64_t block = row_block * blocks_per_dim_[last] + in_chunk / bs;
      const int64_t in_block = row_in_block * bs + in_chunk % bs;
      const int64_t block_end = std::min((in_chunk / bs + 1) * bs, cs);
      const int64_t run = std::min({block_end - in_chunk, shape_[last] - g[last], end_item - item});
      const int64_t lo = std::max(item * ts, offset), hi = std::min((item + run) * ts, end);
      emit(chunk, (block * block_items_ + in_block) * ts + (lo - item * ts), lo - offset, hi - lo);
      item += run;
      g[last] += run;
    }
    for (size_t i = last; i > 0 && g[i] == shape_[i]; --i) {
      g[i] = 0;
      ++g[i - 1];
    }
  }
}

namespace {

void require_chunk_bytes(int64_t chunk, size_t size, int64_t need) {
  if (int64_t(size) < need)
    throw FormatError("N-d array: chunk " + str(chunk) + " holds " + str(int64_t(size)) + " bytes, the layout needs " +
                      str(need));
}

}  // namespace

void NdLayout::read(int64_t offset, MutableByteSpan out,
                    const std::function<ByteSpan(int64_t)>& chunk_data) const {
  std::unordered_map<int64_t, ByteSpan> chunks;
  const int64_t need = chunk_bytes();
  int64_t last_chunk = -1;  // runs come mostly from the chunk of the run before
  const uint8_t* last_data = nullptr;
  walk(offset, int64_t(out.size()), [&](int64_t chunk, int64_t src, int64_t dst, int64_t n) {
    if (chunk != last_chunk) {
      auto it = chunks.find(chunk);
      if (it == chunks.end()) {
        ByteSpan data = chunk_data(chunk);
        require_chunk_bytes(chunk, data.size(), need);
        it = chunks.emplace(chunk, data).first;
      }
      last_chunk = chunk;
      last_data = it->second.data();
    }
    std::memcpy(out.data() + dst, last_data + src, size_t(n));
  });
}

void NdLayout::write(int64_t offset, ByteSpan in,
                     const std::function<MutableByteSpan(int64_t)>& chunk_for_write) const {
  std::unordered_map<int64_t, MutableByteSpan> chunks;
  const int64_t need = chunk_bytes();
  walk(offset, int64_t(in.size()), [&](int64_t chunk, int64_t dst, int64_t src, int64_t n) {
    auto it = chunks.find(chunk);
    if (it == chunks.end()) {
      MutableByteSpan data = chunk_for_write(chunk);
      require_chunk_bytes(chunk, data.size(), need);
      it = chunks.emplace(chunk, data).first;
    }
    std::memcpy(it->second.data() + dst, in.data() + src, size_t(n));
  });
}

void NdLayout::for_each_run(int64_t offset, int64_t len,
                            const std::function<void(int64_t, int64_t, int64_t, int64_t)>& run) const {
  walk(offset, len, run);
}

int64_t NdLayout::chunk_item_bytes(int64_t n) const {
  if (n < 0 || n >= nchunks_) throw std::out_of_range("N-d array: no chunk " + str(n));
  int64_t items = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    const int64_t index = n % chunks_per_dim_[i];
    n /= chunks_per_dim_[i];
    items *= std::min(chunkshape_[i], shape_[i] - index * chunkshape_[i]);
  }
  return items * typesize_;
}

std::vector<int64_t> NdLayout::chunks_for_range(int64_t offset, int64_t len) const {
  std::vector<int64_t> order;
  std::unordered_set<int64_t> seen;
  walk(offset, len, [&](int64_t chunk, int64_t, int64_t, int64_t) {
    if (seen.insert(chunk).second) order.push_back(chunk);
  });
  return order;
}

std::vector<NdLayout::ChunkRange> NdLayout::chunk_ranges(int64_t offset, int64_t len) const {
  std::vector<ChunkRange> ranges;
  std::unordered_map<int64_t, size_t> index;  // a read of small chunks touches thousands
  size_t last = 0;  // runs come mostly from the chunk of the run before
  walk(offset, len, [&](int64_t chunk, int64_t at, int64_t, int64_t n) {
    if (ranges.empty() || ranges[last].chunk != chunk) {
      auto [it, added] = index.try_emplace(chunk, ranges.size());
      if (added) ranges.push_back({chunk, at, at + n});
      last = it->second;
    }
    ChunkRange& r = ranges[last];
    r.first = std::min(r.first, at);
    r.end = std::max(r.end, at + n);
  });
  std::sort(ranges.begin(), ranges.end(), [](const ChunkRange& a, const ChunkRange& b) { return a.chunk < b.chunk; });
  return ranges;
}

}  // namespace blosc2fs
