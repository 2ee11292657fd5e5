#include "dataset_picture.h"

#include <string>
#include <utility>
#include <vector>

#include "chunk_cache.h"
#include "error.h"
#include "frame_chunk_loader.h"
#include "frame_nd.h"

namespace blosc2fs {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

DatasetPicture::DatasetPicture(const DatasetContent& content, int64_t size, size_t max_leaves) {
  if (content.store()) {
    planned_ = first_array_leaf(*content.store(), size, max_leaves);
    return;
  }
  std::string why;
  std::optional<Planned> planned = plan(content.frame(), size, why);
  if (!planned) throw NoPicture(why);
  planned_ = std::move(*planned);
}

// The frame's array planned at `size`, or why there is no picture of it
// (preview.png's rules: numeric N-d arrays with elements).
std::optional<DatasetPicture::Planned> DatasetPicture::plan(std::shared_ptr<const Frame> frame, int64_t size,
                                                            std::string& why) {
  const FrameKind kind = detect_frame_kind(*frame);
  if (kind.no_array || kind.tensor) {
    why = "a " + kind.name + " holds no N-d array a picture is drawn of";
    return std::nullopt;
  }
  const Metalayer* meta = frame_nd_metalayer(*frame);
  if (!meta) {
    why = "not an N-d array (no b2nd metalayer): a " + kind.name + " has no picture";
    return std::nullopt;
  }
  const FrameHeader& h = frame->header();
  Planned d;
  NdMeta nd = frame_nd_meta(*frame, *meta);
  d.layout.emplace(nd, h.typesize, frame->nchunks(), h.chunksize);
  std::optional<PreviewPlan> plan =
      plan_preview(nd.shape, nd.dtype ? preview_dtype(*nd.dtype, h.typesize) : std::nullopt, size);
  if (!plan) {
    const std::string dtype = nd.dtype.value_or("none");
    bool empty = nd.shape.empty();
    for (int64_t s : nd.shape) empty = empty || s == 0;
    why = nd.shape.empty() ? "a 0-d array has no picture"
          : empty          ? "an array without elements (shape " + shape_text(nd.shape) + ") has no picture"
                           : "an array of dtype " + dtype + " has no picture (only bool, integers and floats)";
    return std::nullopt;
  }
  d.plan = std::move(*plan);
  d.frame = std::move(frame);
  if (kind.proxy) d.proxy = std::make_shared<const ProxyState>(*kind.proxy);
  return d;
}

DatasetPicture::Planned DatasetPicture::first_array_leaf(const Store& store, int64_t size, size_t max_leaves) {
  size_t looked = 0;
  for (const StoreLeaf& leaf : store.leaves()) {
    if (looked++ == max_leaves) break;
    try {
      std::string why;
      if (std::optional<Planned> d = plan(store.open_leaf(leaf), size, why)) return std::move(*d);
    } catch (const FormatError&) {  // UnsupportedError too: a remote reference, a leaf that is no frame
    } catch (const IoError&) {
    }
  }
  if (store.leaves().empty()) throw NoPicture("a store without keys has no picture");
  throw NoPicture(looked > max_leaves
                      ? "none of the store's first " + std::to_string(max_leaves) + " keys is a numeric N-d array"
                      : "none of the store's keys is a numeric N-d array");
}

Bytes DatasetPicture::draw_png(uint64_t cache_budget) const {
  FrameChunkLoader loader;
  loader.set_frame(planned_.frame, planned_.proxy);
  ChunkCache cache(loader, cache_budget);
  auto view = [&](int64_t n, int64_t offset, int64_t length, std::shared_ptr<const void>& keep) {
    return cache.view(n, offset, size_t(length), keep);
  };
  auto chunk_done = [&](int64_t n) { cache.release(n); };
  return encode_png(render_preview(planned_.plan, *planned_.layout, view, chunk_done));
}

}  // namespace blosc2fs
