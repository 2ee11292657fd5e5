#include "frame_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <spdlog/spdlog.h>

#include "chunk_codec.h"
#include "chunk_format.h"
#include "frame_json.h"
#include "frame_nd.h"
#include "inodes.h"
#include "msgpack.h"
#include "partial_chunk.h"
#include "read_pieces.h"

namespace blosc2fs {

namespace {

// items.jsonl pages: few chunks each, since one chunk can hold many or large items.
constexpr int64_t kItemChunksPerPage = 16;

std::shared_ptr<const ProxyState> proxy_of(const FrameKind& kind) {
  return kind.proxy ? std::make_shared<const ProxyState>(*kind.proxy) : nullptr;
}

}  // namespace

FrameFiles::FrameFiles(std::shared_ptr<const Frame> frame, ChunkCache& cache, Json frame_json_fields,
                       std::function<Json()> live_fields)
    : frame_(std::move(frame)),
      cache_(cache),
      nchunks_(frame_->nchunks()),
      kind_(detect_frame_kind(*frame_)),
      proxy_(proxy_of(kind_)),
      frame_json_fields_(std::move(frame_json_fields)),
      live_fields_(std::move(live_fields)),
      index_tsv_(frame_, proxy_) {
  load_layers();
  load_usermeta();
  if (kind_.no_array) spdlog::info("no array.npy: this frame is a {} carrier, its chunks hold no data", kind_.name);
  else if (kind_.tensor) load_tensor();
  else load_array();
  if (kind_.items != ItemsLayout::none) {
    std::shared_ptr<const Frame> f = frame_;
    const ItemsLayout layout = kind_.items;
    items_.emplace("items.jsonl", std::string(), nchunks_, kItemChunksPerPage,
                   [f, layout](int64_t first, int64_t count) { return items_jsonl_rows(*f, layout, first, count); });
  }
}

void FrameFiles::load_usermeta() {
  const Bytes& stored = frame_->stored_usermeta();
  if (stored.empty()) return;
  LayerFile file;
  file.name = "usermeta";
  try {
    file.content = *frame_->usermeta();
    file.size = int64_t(file.content.size());
  } catch (const FormatError& e) {
    // Listed with the size its header claims; reads fail with EIO and this line.
    file.error = e.what();
    spdlog::warn("{}", file.error);
    try {
      file.size = parse_chunk_header(stored).nbytes;
    } catch (const FormatError&) {
      file.size = 0;
    }
  }
  usermeta_ = std::move(file);
}

FrameFiles::~FrameFiles() = default;

void FrameFiles::load_layers() {
  std::set<std::string> seen;
  for (const Metalayer& m : frame_->metalayers()) {
    if (!usable_file_name(m.name) || !seen.insert(m.name).second) {
      spdlog::warn("metalayer '{}' cannot be shown as meta/{}: not a usable or unique file name", m.name, m.name);
      continue;
    }
    LayerFile file;
    file.name = m.name;
    file.content = m.content;
    file.size = int64_t(m.content.size());
    metas_.push_back(std::move(file));
  }
  seen.clear();
  for (const Vlmetalayer& layer : frame_->vlmetalayers()) {
    if (!usable_file_name(layer.name) || !seen.insert(layer.name).second) {
      spdlog::warn("vlmetalayer '{}' cannot be shown as vlmeta/{}: not a usable or unique file name", layer.name,
                   layer.name);
      continue;
    }
    LayerFile file;
    file.name = layer.name;
    try {
      file.content = frame_->vlmetalayer_content(layer);
      file.size = int64_t(file.content.size());
    } catch (const FormatError& e) {
      file.error = "vlmetalayer " + layer.name + ": " + e.what();
      spdlog::warn("{}", file.error);
      try {
        file.size = parse_chunk_header(layer.stored).nbytes;
      } catch (const FormatError&) {
        file.size = 0;
      }
      vlmetas_.push_back(std::move(file));
      continue;
    }
    try {
      if (std::optional<Json> value = msgpack_to_json(file.content)) file.attrs_text = value->dump() + "\n";
    } catch (const std::exception& e) {
      // Not representable as JSON text (e.g. a str that is not UTF-8): vlmeta/ only.
      spdlog::debug("vlmetalayer {} has no JSON view: {}", layer.name, e.what());
    }
    vlmetas_.push_back(std::move(file));
  }
}

void FrameFiles::load_array() {
  const Metalayer* meta = frame_nd_metalayer(*frame_);
  if (!meta) return;
  try {
    const FrameHeader& h = frame_->header();
    NdMeta nd = frame_nd_meta(*frame_, *meta);
    layout_.emplace(nd, h.typesize, nchunks_, h.chunksize);
    bool mismatch = false;
    std::string descr = npy_descr(nd, h.typesize, &mismatch);
    if (mismatch)
      spdlog::info("array.npy: dtype '{}' does not match typesize {}; the header says {}", nd.dtype.value_or(""),
                   h.typesize, descr);
    npy_header_ = npy_header(descr, nd.shape);
    zarr_ = ZarrFiles::make(frame_, nd, vlmetas_);
    if (std::optional<PreviewPlan> plan =
            plan_preview(nd.shape, nd.dtype ? preview_dtype(*nd.dtype, h.typesize) : std::nullopt))
      preview_ = std::make_unique<PreviewFile>(std::move(*plan), *layout_, cache_);
  } catch (const FormatError& e) {
    preview_.reset();
    layout_.reset();
    zarr_.reset();
    spdlog::warn("array.npy left out: the {} metalayer does not describe this frame: {}", meta->name, e.what());
  }
}

void FrameFiles::load_tensor() {
  const TensorView& t = *kind_.tensor;
  npy_header_ = npy_header(t.npy_descr, t.shape);
  tensor_ = true;
}

std::string FrameFiles::render_frame_json() {
  if (frame_json_fields_.empty() && !live_fields_) return frame_json_text(*frame_, &kind_);
  Json j = frame_to_json(*frame_, &kind_);
  for (auto it = frame_json_fields_.begin(); it != frame_json_fields_.end(); ++it) j[it.key()] = *it;
  if (live_fields_) {
    const Json live = live_fields_();
    for (auto it = live.begin(); it != live.end(); ++it) j[it.key()] = *it;
  }
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::shared_ptr<const std::string> FrameFiles::frame_json() {
  MutexLock lock(text_mutex_);
  if (!frame_json_) frame_json_ = std::make_shared<const std::string>(render_frame_json());
  return frame_json_;
}

void FrameFiles::renew_frame_json() {
  if (!live_fields_) return;
  MutexLock lock(text_mutex_);
  frame_json_ = std::make_shared<const std::string>(render_frame_json());
}

int64_t FrameFiles::chunk_size_for_stat(int64_t n) const {
  try {
    return frame_->chunk_nbytes(n);
  } catch (const std::runtime_error&) {  // FormatError, IoError
    // An unreadable chunk header must not hide the file: guess from the frame's chunksize.
    const FrameHeader& h = frame_->header();
    if (h.chunksize <= 0) return 0;
    if (n == nchunks_ - 1) {
      int64_t rest = h.nbytes - n * int64_t(h.chunksize);
      if (rest > 0 && rest <= h.chunksize) return rest;
    }
    return h.chunksize;
  }
}

int64_t FrameFiles::raw_size_for_stat(int64_t n) const {
  try {
    if (frame_->index_entry(n).special != Special::none) return kExtendedHeaderSize;
    return frame_->chunk_info(n).cbytes;
  } catch (const std::runtime_error&) {  // FormatError, IoError: still listed, size unknown
    return 0;
  }
}

const LayerFile* FrameFiles::find_meta(std::string_view name) const {
  for (const LayerFile& f : metas_)
    if (f.name == name) return &f;
  return nullptr;
}

const LayerFile* FrameFiles::find_vlmeta(std::string_view name) const {
  for (const LayerFile& f : vlmetas_)
    if (f.name == name) return &f;
  return nullptr;
}

int64_t FrameFiles::array_size() const {
  if (tensor_) return int64_t(npy_header_.size()) + frame_->header().nbytes;
  return layout_ ? int64_t(npy_header_.size()) + layout_->array_bytes() : 0;
}

int64_t FrameFiles::preview_size() const { return preview_ ? preview_->size() : 0; }

std::shared_ptr<const Bytes> FrameFiles::preview(bool* drawn) {
  if (drawn) *drawn = false;
  return preview_ ? preview_->png(drawn) : nullptr;
}

void FrameFiles::keep_preview_of(const FrameFiles& before) {
  if (!preview_ || !before.preview_ || before.metas_.size() != metas_.size()) return;
  for (size_t i = 0; i < metas_.size(); ++i)
    if (metas_[i].name != before.metas_[i].name || metas_[i].content != before.metas_[i].content) return;
  preview_->keep_drawing_of(*before.preview_);
}

int64_t FrameFiles::chunk_offset(int64_t n) const {
  if (n >= nchunks_) return frame_->header().nbytes;
  return frame_->chunk_data_offset(n);
}

PooledBuffer FrameFiles::load(int64_t n, BufferPool& pool) {
  std::shared_ptr<const CachedChunk> chunk = cache_.get(n);
  ByteSpan bytes = chunk->data();
  const int64_t expected = chunk_size(n);
  if (int64_t(bytes.size()) != expected)
    throw FormatError(chunk_label(n) + "holds " + std::to_string(bytes.size()) + " bytes where the frame says " +
                      std::to_string(expected));
  PooledBuffer copy = pool.take(bytes.size());
  if (!bytes.empty()) std::memcpy(copy.data(), bytes.data(), bytes.size());
  return copy;
}

// The bytes of a pack_tensor SChunk's data are the array in C order.
size_t FrameFiles::read_tensor_bytes(int64_t offset, MutableByteSpan out) {
  size_t done = 0;
  // The chunk holding `offset`: the last whose data starts at or before it.
  int64_t lo = 0, hi = nchunks_ - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (chunk_offset(mid) <= offset) lo = mid;
    else hi = mid - 1;
  }
  for (int64_t n = lo; n < nchunks_ && done < out.size(); ++n) {
    const int64_t from = offset + int64_t(done) - chunk_offset(n);
    const int64_t size = chunk_size(n);
    if (from < 0 || from >= size) continue;
    const size_t copied = cache_.read(n, from, out.subspan(done, size_t(std::min<int64_t>(size - from, int64_t(out.size() - done)))));
    if (copied == 0) break;
    done += copied;
  }
  return done;
}

std::vector<NdLayout::ChunkRange> array_read_ranges(const NdLayout& layout, int64_t offset, int64_t len) {
  // Below this, a read of small chunks spends more finding ranges than the whole decodes cost.
  constexpr int64_t kBlockwiseChunkBytes = int64_t(1) << 20;
  if (layout.chunk_bytes() < kBlockwiseChunkBytes) return {};
  return layout.chunk_ranges(offset, len);
}

std::shared_ptr<const CachedChunk> chunk_for_ranges(ChunkCache& cache, const std::vector<NdLayout::ChunkRange>& ranges,
                                                    int64_t n) {
  const auto r = std::lower_bound(ranges.begin(), ranges.end(), n,
                                  [](const NdLayout::ChunkRange& range, int64_t chunk) { return range.chunk < chunk; });
  if (r == ranges.end() || r->chunk != n) return cache.get(n);
  return cache.get_range(n, r->first, r->end - r->first);
}

size_t FrameFiles::read_array(int64_t offset, MutableByteSpan out) {
  if (tensor_ && offset >= 0) {
    const int64_t header_len = int64_t(npy_header_.size());
    const int64_t total = array_size();
    if (offset >= total) return 0;
    const size_t want = size_t(std::min<int64_t>(int64_t(out.size()), total - offset));
    size_t done = 0;
    if (offset < header_len) done = copy_from(as_bytes(npy_header_), offset, out.first(want));
    if (done == want) return done;
    const size_t body = read_tensor_bytes(offset + int64_t(done) - header_len, out.subspan(done, want - done));
    if (done + body != want) throw FormatError("array.npy: the chunks hold fewer bytes than the frame says");
    return want;
  }
  if (!layout_ || offset < 0) return 0;
  const int64_t header_len = int64_t(npy_header_.size());
  const int64_t total = header_len + layout_->array_bytes();
  if (offset >= total) return 0;
  const size_t want = size_t(std::min<int64_t>(int64_t(out.size()), total - offset));
  size_t done = 0;
  if (offset < header_len) done = copy_from(as_bytes(npy_header_), offset, out.first(want));
  if (done == want) return done;
  const int64_t array_offset = offset + int64_t(done) - header_len;
  const int64_t expected = layout_->chunk_bytes();
  std::vector<std::shared_ptr<const CachedChunk>> pinned;  // alive until read() has copied
  const std::vector<NdLayout::ChunkRange> ranges = array_read_ranges(*layout_, array_offset, int64_t(want - done));
  layout_->read(array_offset, out.subspan(done, want - done), [&](int64_t n) -> ByteSpan {
    std::shared_ptr<const CachedChunk> chunk = chunk_for_ranges(cache_, ranges, n);
    if (int64_t(chunk->data().size()) != expected)
      throw FormatError(chunk_label(n) + "holds " + std::to_string(chunk->data().size()) +
                        " bytes, the array layout needs " + std::to_string(expected));
    pinned.push_back(chunk);
    return chunk->data();
  });
  return want;
}

}  // namespace blosc2fs
