// The contents of the files a committed frame shows: their exact sizes and
// their bytes. Decompressed chunks come through the chunk cache; the generated
// texts (frame.json, index.tsv) are made once, on first use, and kept.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "b2nd.h"
#include "chunk_cache.h"
#include "chunk_overlay.h"
#include "frame_chunk_loader.h"
#include "frame.h"
#include "index_tsv_file.h"
#include "kind.h"
#include "node.h"
#include "paged_text.h"
#include "preview_file.h"
#include "thread_safety.h"
#include "zarr_files.h"

namespace blosc2fs {

// A metalayer or vlmetalayer shown as a file.
struct LayerFile {
  std::string name;
  Bytes content;                 // meta: as stored; vlmeta: decompressed
  int64_t size = 0;              // what stat reports
  std::string error;             // vlmeta content could not be decompressed: reads fail with this
  std::optional<std::string> attrs_text;  // JSON + "\n" when the content is one msgpack value
};

// What a read of bytes [offset, offset + len) of an N-d array needs of each
// chunk (NdLayout::chunk_ranges), when its chunks are big enough (1 MiB or
// more) that decoding only those blocks pays: the kernel's read-around of a
// memory map's fault then decodes a neighbour chunk's edge, not all of it.
// None for smaller chunks, which are decoded whole.
std::vector<NdLayout::ChunkRange> array_read_ranges(const NdLayout& layout, int64_t offset, int64_t len);
// Chunk n for such a read: its blocks in `ranges` decoded, or all of them.
std::shared_ptr<const CachedChunk> chunk_for_ranges(ChunkCache& cache, const std::vector<NdLayout::ChunkRange>& ranges,
                                                    int64_t n);

// One committed state of the frame as files: the metalayers, vlmetalayers and
// their JSON views, array.npy, the generated texts, and the committed chunks
// through the chunk cache. Immutable once built, except the texts, which are
// made on first use.
class FrameFiles : public ChunkSource {
 public:
  // Reads the metalayers, decompresses the vlmetalayers and sets up array.npy.
  // Layers whose names cannot be file names are left out with a warning.
  // `frame_json_fields` replace (or follow) frame.json's own fields; so do the
  // fields `live_fields` returns (a remote mount's counters), asked anew each
  // time renew_frame_json() is called (at each open of frame.json).
  FrameFiles(std::shared_ptr<const Frame> frame, ChunkCache& cache, Json frame_json_fields = Json::object(),
             std::function<Json()> live_fields = {});
  ~FrameFiles() override;
  FrameFiles(const FrameFiles&) = delete;
  FrameFiles& operator=(const FrameFiles&) = delete;

  const Frame& frame() const { return *frame_; }
  const std::shared_ptr<const Frame>& frame_ptr() const { return frame_; }
  ChunkCache& cache() const { return cache_; }

  const std::vector<LayerFile>& metas() const { return metas_; }
  const std::vector<LayerFile>& vlmetas() const { return vlmetas_; }
  const LayerFile* find_meta(std::string_view name) const;
  const LayerFile* find_vlmeta(std::string_view name) const;
  // What python-blosc2 saved (docs/kinds.md).
  const FrameKind& kind() const { return kind_; }
  const std::shared_ptr<const ProxyState>& proxy() const { return proxy_; }
  // Older layouts: the usermeta blob, decompressed (nullptr when the frame has none).
  const LayerFile* usermeta() const { return usermeta_ ? &*usermeta_ : nullptr; }
  bool has_array() const { return layout_.has_value() || tensor_; }
  // The Zarr view of the N-d array (zarr_files.h); nullptr when it has none.
  const ZarrFiles* zarr() const { return zarr_.get(); }
  int64_t array_size() const;
  size_t read_array(int64_t offset, MutableByteSpan out);
  // array.npy of a b2nd/caterva array (not of a tensor): its layout and header,
  // for writes through it (array_npy.cc); nullptr / empty otherwise.
  const NdLayout* array_layout() const { return layout_ ? &*layout_ : nullptr; }
  const std::string& npy_header_text() const { return npy_header_; }

  // The size stat shows for chunks/N and raw/N.chunk (a guess when the
  // chunk's header is unreadable, so the file is still listed).
  int64_t chunk_size_for_stat(int64_t n) const;
  int64_t raw_size_for_stat(int64_t n) const;
  size_t read_raw(int64_t n, int64_t offset, MutableByteSpan out) { return cache_.read_stored(n, offset, out); }

  // Throw FormatError when the frame cannot be described.
  std::shared_ptr<const std::string> frame_json() EXCLUDES(text_mutex_);
  // Makes frame.json anew when it has live fields.
  void renew_frame_json() EXCLUDES(text_mutex_);
  bool frame_json_is_live() const { return bool(live_fields_); }
  IndexTsvFile& index_tsv() { return index_tsv_; }
  // items.jsonl of an ObjectArray, BatchArray or ListArray stored with msgpack.
  bool has_items() const { return items_.has_value(); }
  PagedText& items() { return *items_; }

  // preview.png (src/preview/): planned from the metadata when the frame is
  // built; drawn on first use through the chunk cache and kept with this
  // state of the frame (a commit builds new FrameFiles, drawn anew).
  bool has_preview() const { return preview_ != nullptr; }
  // The PNG's size once drawn; before, the largest it can be: stat never draws.
  int64_t preview_size() const;
  // The PNG (nullptr without a preview), drawn now when it was not yet;
  // `drawn` says whether this call drew it. Throws FormatError / IoError.
  std::shared_ptr<const Bytes> preview(bool* drawn = nullptr);
  // Takes over the drawing of `before`, a former state of the same frame whose
  // chunks this state did not change (a commit of layers only), when the
  // metalayers are the same too.
  void keep_preview_of(const FrameFiles& before);

  // ChunkSource: the committed chunks.
  int64_t nchunks() const override { return nchunks_; }
  int64_t chunk_size(int64_t n) const override { return frame_->chunk_nbytes(n); }
  int64_t chunk_offset(int64_t n) const override;
  ByteSpan view(int64_t n, int64_t offset, size_t len, std::shared_ptr<const void>& keep) override {
    return cache_.view(n, offset, len, keep);
  }
  ByteSpan view_exact(int64_t n, int64_t offset, size_t len, std::shared_ptr<const void>& keep) override {
    return cache_.view(n, offset, len, keep, ChunkCache::Decode::exactly);
  }
  void drop_decoded(int64_t n) override { cache_.release(n); }
  PooledBuffer take_decoded(int64_t n) override { return cache_.take_decoded(n); }
  PooledBuffer load(int64_t n, BufferPool& pool) override;

 private:
  void load_layers();
  void load_usermeta();
  void load_array();
  void load_tensor();
  size_t read_tensor_bytes(int64_t offset, MutableByteSpan out);

  std::shared_ptr<const Frame> frame_;
  ChunkCache& cache_;
  int64_t nchunks_ = 0;
  std::vector<LayerFile> metas_;
  std::vector<LayerFile> vlmetas_;
  const FrameKind kind_;
  const std::shared_ptr<const ProxyState> proxy_;
  std::optional<LayerFile> usermeta_;
  std::optional<NdLayout> layout_;
  std::unique_ptr<ZarrFiles> zarr_;
  bool tensor_ = false;  // array.npy is npy_header_ + the data of a pack_tensor SChunk
  std::string npy_header_;

  Mutex text_mutex_;
  std::shared_ptr<const std::string> frame_json_ GUARDED_BY(text_mutex_);
  const Json frame_json_fields_;
  const std::function<Json()> live_fields_;
  std::string render_frame_json();
  IndexTsvFile index_tsv_;
  std::optional<PagedText> items_;

  std::unique_ptr<PreviewFile> preview_;  // planned with layout_, which it reads
};

}  // namespace blosc2fs
