// The Zarr view of a b2nd array (docs/zarr.md): its metadata documents (v3
// zarr.json, v2 .zarray/.zattrs, group zarr.json), the chunk grid, and the
// index of a shard whose inner chunks are the b2nd blocks. Made from the b2nd
// metadata and the array's attributes alone: no FUSE, no chunk bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "b2nd.h"
#include "bytes.h"
#include "msgpack.h"

namespace blosc2fs {

// A chunk is served as a shard of its blocks only when it decodes to at least
// this many bytes; smaller chunks are plain chunk files (docs/zarr.md, "Shards
// or plain chunks"). Below it a reader of part of a chunk loses little by
// decoding the whole chunk (a 256 KB chunk decodes in well under a millisecond),
// while zarr-python's sharding codec costs about 0.25 ms per inner chunk: a
// 2,000 x 2,000 float32 array of 256 x 256 chunks and 64 x 64 blocks read whole
// through zarr-python took 0.29 s sharded, 0.072 s plain (python-blosc2: 0.036 s).
inline constexpr int64_t kMinShardBytes = int64_t(1) << 20;

// A shard's inner chunk is a b2nd block, or, when the chunk is in C order
// already (blocks that are whole rows of it), a run of consecutive blocks of
// at most this many bytes: the same contiguous bytes, fewer inner chunks. A
// shard of 4 MiB in 256 KiB blocks read whole through zarr-python costs its
// sharding codec 16 inner chunks at about 0.25 ms each; in 1 MiB runs, 4
// (docs/zarr.md, "Inner chunks"). A reader of a few elements still decodes
// at most this much.
inline constexpr int64_t kMaxInnerRunBytes = int64_t(1) << 20;

// How a b2nd array is seen as a Zarr array.
struct ZarrArrayPlan {
  std::vector<int64_t> shape;
  // The Zarr chunk shape: the b2nd chunk shape (1 for a dimension whose chunk
  // shape is 0, which only an empty array has).
  std::vector<int64_t> chunk_shape;
  std::vector<int64_t> block_shape;  // the b2nd blocks
  // A shard's inner chunk (sharded only): the block, or a run of blocks
  // along the one axis a whole-row block splits (kMaxInnerRunBytes).
  std::vector<int64_t> inner_shape;
  std::vector<int64_t> grid;          // chunks per dimension
  int64_t nchunks = 0;
  int32_t itemsize = 0;
  std::string data_type;              // v3 core name: "float32", "bool", ...
  std::string npy_descr;              // v2 dtype: "<f4", "|b1", ">i8"
  std::optional<std::string> endian;  // "little" / "big"; none for 1-byte types
  // Every chunk dimension is a multiple of the block's and the chunk decodes to
  // at least kMinShardBytes: a v3 chunk file is the decoded b2nd chunk as it is
  // (a shard of blocks) plus its index.
  bool sharded = false;
  // The decoded chunk is already its C order over the chunk shape (c-blosc2's
  // fast path: blocks that are whole rows of the chunk), so the plain chunk
  // file needs no re-layout.
  bool chunk_in_c_order = false;
  int64_t chunk_items = 0;            // product of chunk_shape
  int64_t inner_items = 0;            // product of inner_shape
  int64_t ninner = 0;                 // inner chunks in a shard (sharded only)
  std::vector<std::string> dimension_names;

  int64_t plain_chunk_bytes() const { return chunk_items * itemsize; }
  int64_t inner_bytes() const { return inner_items * itemsize; }
  int64_t shard_data_bytes() const { return ninner * inner_bytes(); }
  int64_t shard_index_bytes() const { return ninner * 16; }
  // The size of a v3 chunk file: a shard with its index, or the plain chunk.
  int64_t v3_chunk_bytes() const { return sharded ? shard_data_bytes() + shard_index_bytes() : plain_chunk_bytes(); }
};

// The Zarr plan of an array with b2nd metadata `meta` and item size
// `typesize`, or nullopt (with *why set) when its dtype has no Zarr v3 core
// data type (strings, datetimes, structured and void types, a dtype that
// disagrees with the typesize). `attrs` are the array's attributes (attrs/):
// "dims", a list of one distinct name per dimension (xarray-blosc2's
// convention), gives the dimension names; otherwise dimension i of length n
// is "dim{i}_{n}", so that arrays of unrelated shapes never give one name two
// sizes.
//
// `inner`: runs of blocks as above, or one block per inner chunk, for remote
// data, where a reader's bytes cost more than zarr-python's time per inner
// chunk: a 100 x 100 slice of the 8,000^2 bench array moved two 400 KB blocks
// in runs, where python-blosc2 moves one (docs/zarr.md).
enum class InnerChunks { runs, blocks };
std::optional<ZarrArrayPlan> plan_zarr_array(const NdMeta& meta, int32_t typesize, const Json& attrs,
                                             std::string* why = nullptr, InnerChunks inner = InnerChunks::runs);

// zarr.json of the array, v3; and the v2 view's .zarray and .zattrs.
std::string zarr_v3_array_json(const ZarrArrayPlan& plan, const Json& attrs);
std::string zarr_v2_zarray(const ZarrArrayPlan& plan);
std::string zarr_v2_zattrs(const ZarrArrayPlan& plan, const Json& attrs);
// A frame's vlmetalayers as one JSON object (what attrs/ shows, name by name);
// layers that are not one msgpack value with a JSON form are left out.
class Frame;
Json frame_attributes(const Frame& frame);

// zarr.json of a group.
std::string zarr_group_json(const Json& attrs);

// The attributes of `written`, a zarr.json a Zarr writer wrote over the array's
// `current` one, when they are all it changes (zarr-python rewrites the whole
// zarr.json for `arr.attrs[k] = v`); nullopt with *why set otherwise. Fields
// are compared as JSON values, not as text: key order, 0 against 0.0, an empty
// "configuration" or "storage_transformers" against none are no change.
std::optional<Json> zarr_attributes_only_change(const std::string& current, std::string_view written,
                                                std::string* why);

// Bytes [offset, offset + out.size()) of a shard's index (clipped to it):
// inner chunk i at (i * inner_bytes, inner_bytes), little-endian uint64 pairs, or
// every entry "empty" (2^64 - 1 twice: the inner chunk is the fill value)
// when `empty`. Returns the count copied.
size_t copy_shard_index(const ZarrArrayPlan& plan, bool empty, int64_t offset, MutableByteSpan out);

// A chunk coordinate as a Zarr key spells it: decimal digits only (no sign),
// no leading zero but in "0" itself, at most 18 digits; nullopt otherwise.
// c/I/J and zarr2/I.J both name chunks by it, so that a chunk has one name.
std::optional<int64_t> parse_chunk_coordinate(std::string_view text);
// The chunk number (C order over the grid, as b2nd numbers them) of the
// coordinates `parts` (parse_chunk_coordinate), or nullopt when a part is
// not one or is out of the grid.
std::optional<int64_t> zarr_chunk_of(const ZarrArrayPlan& plan, const std::vector<std::string_view>& parts);
// The v2 key of chunk n: "I.J.K" ("0" for a 0-d array).
std::string zarr_v2_key(const ZarrArrayPlan& plan, int64_t n);

}  // namespace blosc2fs
