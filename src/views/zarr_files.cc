// The Zarr view's files: ZarrFiles, one committed state of the array as Zarr.
#include "zarr_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "frame_files.h"
#include "inodes.h"

namespace blosc2fs {

std::unique_ptr<ZarrFiles> ZarrFiles::make(std::shared_ptr<const Frame> frame, const NdMeta& meta,
                                           const std::vector<LayerFile>& vlmetas) {
  Json attrs = Json::object();
  for (const LayerFile& layer : vlmetas) {
    if (!layer.attrs_text) continue;
    try {
      attrs[layer.name] = Json::parse(*layer.attrs_text);
    } catch (const std::exception&) {  // attrs_text is our own JSON: never expected
    }
  }
  std::string why;
  const InnerChunks inner = frame->source().remote() ? InnerChunks::blocks : InnerChunks::runs;
  std::optional<ZarrArrayPlan> plan = plan_zarr_array(meta, frame->header().typesize, attrs, &why, inner);
  if (!plan) {
    spdlog::debug("no Zarr view (zarr.json, c/, zarr2/): {}", why);
    return nullptr;
  }
  if (plan->nchunks > kMaxZarrChunks) {
    spdlog::info("no Zarr view: {} chunks, more than the {} it can number", plan->nchunks, kMaxZarrChunks);
    return nullptr;
  }
  std::unique_ptr<ZarrFiles> files(new ZarrFiles);
  files->frame_ = std::move(frame);
  files->array_json_ = zarr_v3_array_json(*plan, attrs);
  files->zarray_ = zarr_v2_zarray(*plan);
  files->zattrs_ = zarr_v2_zattrs(*plan, attrs);
  if (plan->nchunks > 0) {
    // The chunk as an array of its own, of one chunk: its C order is the plain Zarr chunk.
    NdMeta chunk = meta;
    chunk.shape = plan->chunk_shape;
    const int32_t typesize = files->frame_->header().typesize;
    files->chunk_layout_.emplace(chunk, typesize, 1, 0);
  }
  files->plan_ = std::move(*plan);
  return files;
}

int64_t ZarrFiles::dirs_at_level(int k) const {
  int64_t n = 1;
  for (int i = 0; i < k && i < ndim(); ++i) n *= plan_.grid[size_t(i)];
  return n;
}

bool ZarrFiles::reads_as_fill(int64_t n) const {
  try {
    const Special s = frame_->index_entry(n).special;
    return s == Special::zeros || s == Special::uninit;
  } catch (const std::exception&) {  // an unreadable index: the read reports it
    return false;
  }
}

void ZarrFiles::relayout(ByteSpan decoded, int64_t offset, MutableByteSpan out) const {
  if (!chunk_layout_) throw FormatError("Zarr view: the array has no chunks");
  chunk_layout_->read(offset, out, [&](int64_t) { return decoded; });
}

}  // namespace blosc2fs
