// The chunk and block shapes of a new b2nd array: python-blosc2 4.14.1's rule
// (docs/writing.md, "New arrays"), so that an array made through the mount is
// laid out as `blosc2.asarray(x)` would lay it out on the same machine.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace blosc2fs {

// The data cache sizes the rule depends on, as python-blosc2 finds them on
// Linux (/sys/devices/system/cpu/cpu0/cache/index{0,2,3}/size; its defaults
// where a file is missing).
struct CacheSizes {
  int64_t l1_data = 32 * 1024;
  int64_t l2 = 256 * 1024;
  int64_t l3 = 1024 * 1024;
  bool x86_64 = false;  // python-blosc2 sizes blocks from L2 there, from L1 elsewhere
};
CacheSizes host_cache_sizes();

struct NdPartition {
  std::vector<int64_t> chunkshape;
  std::vector<int64_t> blockshape;
};

// The chunk and block shapes for an array of `shape` and items of `itemsize`
// bytes, either given (then checked: one per dimension, blocks within chunks,
// none 0 in a dimension that is not) or chosen as python-blosc2's
// compute_chunks_blocks chooses them for its default codecs (not the ZFP/NDLZ
// ones, which ask the compressor). Throws FormatError with the reason.
NdPartition b2nd_partition(const std::vector<int64_t>& shape, int64_t itemsize,
                           const std::optional<std::vector<int64_t>>& chunkshape,
                           const std::optional<std::vector<int64_t>>& blockshape, const CacheSizes& caches);

}  // namespace blosc2fs
