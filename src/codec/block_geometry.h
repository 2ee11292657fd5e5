// What the plugin codecs and filters read from the frame around a chunk rather
// than from the chunk itself: c-blosc2 hands them the super-chunk, and they take
// its typesize and the block shape of its "b2nd" metalayer (plugin-codecs.md §0).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace blosc2fs {

inline constexpr int kMaxBlockDims = 8;  // b2nd's limit

struct BlockGeometry {
  int32_t typesize = 0;  // the frame's typesize; 0: not known (a chunk outside a frame)
  int32_t ndim = 0;      // dimensions of the b2nd block shape; 0: the frame has no b2nd metalayer
  std::array<int32_t, kMaxBlockDims> blockshape{};

  // prod(blockshape), or -1 without a block shape or when a dimension is < 1.
  int64_t block_items() const {
    if (ndim <= 0 || ndim > kMaxBlockDims) return -1;
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) {
      if (blockshape[size_t(i)] < 1) return -1;
      n *= blockshape[size_t(i)];
      if (n > (int64_t(1) << 40)) return -1;
    }
    return n;
  }
};

}  // namespace blosc2fs
