// A dataset's array as a picture without a mount (--thumbnail, the desktop's
// thumbnailer): preview.png's rules (src/preview) at a size the caller chooses,
// reading only the blocks the picture needs (docs/preview.md, "Thumbnails").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>

#include "b2nd.h"
#include "bytes.h"
#include "dataset_opener.h"
#include "kind.h"
#include "preview.h"

namespace blosc2fs {

// Why a dataset has no picture (a schunk, a 0-d array, a store without
// arrays, ...): one line.
class NoPicture : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DatasetPicture {
 public:
  // The array of `content` planned with a long side of at most `size` pixels:
  // a frame's, or a store's first numeric N-d array leaf in key order (store.json's
  // order) among its first `max_leaves` keys. Throws NoPicture, or FormatError /
  // IoError when the frame's metadata cannot be read.
  DatasetPicture(const DatasetContent& content, int64_t size, size_t max_leaves);

  // The PNG, drawn through a chunk cache of `cache_budget` bytes that each
  // chunk leaves once its last needed block is drawn. Throws FormatError /
  // IoError when the array cannot be read.
  Bytes draw_png(uint64_t cache_budget) const;

 private:
  struct Planned {
    std::shared_ptr<const Frame> frame;
    std::shared_ptr<const ProxyState> proxy;
    PreviewPlan plan;
    std::optional<NdLayout> layout;
  };
  static std::optional<Planned> plan(std::shared_ptr<const Frame> frame, int64_t size, std::string& why);
  static Planned first_array_leaf(const Store& store, int64_t size, size_t max_leaves);

  Planned planned_;
};

}  // namespace blosc2fs
