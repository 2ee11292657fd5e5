// The chunk and block shapes of a new b2nd array: python-blosc2 4.14.1's rule
// (docs/writing.md, "New arrays"), so that an array made through the mount is
// laid out as `blosc2.asarray(x)` would lay it out on the same machine.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "chunk_format.h"

namespace blosc2fs {

// The data cache sizes the rule depends on, as python-blosc2 finds them on
// Linux: /sys/devices/system/cpu/cpu0/cache/index{0,2,3}/size; where a file is
// missing, `lscpu --json`'s "L1d cache:", "L2 cache:", "L3 cache:" divided by
// their instances; its defaults where neither says.
struct CacheSizes {
  int64_t l1_data = 32 * 1024;
  int64_t l2 = 256 * 1024;
  int64_t l3 = 1024 * 1024;
  bool x86_64 = false;  // python-blosc2 sizes blocks from L2 there, from L1 elsewhere
};
CacheSizes host_cache_sizes();  // read once per process, as python-blosc2 does at import
// The size of cache `level` (0: L1 data, 2, 3) in `lscpu --json` output: "SIZE
// UNIT (N instances)" divided by N; nullopt where python-blosc2 finds none.
std::optional<int64_t> lscpu_cache_size(std::string_view json, int level);

// The block size python-blosc2 starts from before its cache minimum: 32 KiB,
// or, for the ZFP and NDLZ codecs and where `filters` (the filter ids of the
// pipeline) hold NDMEAN or NDCELL, what c-blosc2's tuner answers for 8 MB of
// items of that codec, level and split mode, with the filters other than
// shuffle and bitshuffle taken out (measured on python-blosc2 4.14.1).
int64_t python_blosc2_block_hint(Codec codec, int clevel, SplitMode split, int64_t itemsize,
                                 std::span<const uint8_t> filters = {});

struct NdPartition {
  std::vector<int64_t> chunkshape;
  std::vector<int64_t> blockshape;
};

// The chunk and block shapes for an array of `shape` and items of `itemsize`
// bytes, either given (then checked: one per dimension, blocks within chunks,
// none 0 in a dimension that is not) or chosen as python-blosc2's
// compute_chunks_blocks chooses them, from `block_hint` (python_blosc2_block_hint).
// Throws FormatError with the reason.
NdPartition b2nd_partition(const std::vector<int64_t>& shape, int64_t itemsize,
                           const std::optional<std::vector<int64_t>>& chunkshape,
                           const std::optional<std::vector<int64_t>>& blockshape, const CacheSizes& caches,
                           int64_t block_hint = 32 * 1024);

}  // namespace blosc2fs
