// The Zarr view of one committed state of an N-d array (docs/zarr.md): the
// metadata texts (zarr.json; zarr2/.zarray, zarr2/.zattrs) made from the b2nd
// metadata and attrs/ by src/frame/zarr_meta, and the chunk files' bytes made
// from the decoded b2nd chunks. The Volume places the files: their names,
// listings, sizes, reads and writes are ZarrNames' and ZarrView's
// (src/volume/zarr_view.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2nd.h"
#include "frame.h"
#include "zarr_meta.h"

namespace blosc2fs {

struct LayerFile;

class ZarrFiles {
 public:
  // The view of `frame`'s array, or nullptr (one debug line) when it has none:
  // a dtype with no Zarr v3 core data type, or too many chunks to number.
  static std::unique_ptr<ZarrFiles> make(std::shared_ptr<const Frame> frame, const NdMeta& meta,
                                         const std::vector<LayerFile>& vlmetas);

  const ZarrArrayPlan& plan() const { return plan_; }
  bool zero_d() const { return plan_.grid.empty(); }
  int ndim() const { return int(plan_.grid.size()); }
  const std::string& array_json() const { return array_json_; }
  const std::string& zarray() const { return zarray_; }
  const std::string& zattrs() const { return zattrs_; }
  // How many directories level k of c/ holds: the product of the first k grid extents.
  int64_t dirs_at_level(int k) const;

  // Chunk n is stored as "no bytes, all zeros" (a special index entry of zeros or
  // uninitialized): its shard index says every inner chunk is the fill value, so a
  // Zarr reader asks for none of its bytes.
  bool reads_as_fill(int64_t n) const;

  // Bytes [offset, offset + out.size()) of a chunk's plain Zarr file (C order over
  // the chunk shape) from its decoded b2nd chunk `decoded` (blocks in C order over
  // the block grid): NdLayout::read over the chunk seen as a one-chunk array.
  void relayout(ByteSpan decoded, int64_t offset, MutableByteSpan out) const;
  // The decoded b2nd chunk (blocks in C order over the block grid) that a
  // written v3 chunk file stands for, or nullopt with *why set: a shard is
  // taken apart by its index (every inner chunk uncompressed, one block long,
  // inside the file, or "empty": zeros), a plain chunk re-laid out into block
  // order (NdLayout::write, as array.npy writes are). zarr_writes.cc.
  std::optional<Bytes> decoded_chunk_of(ByteSpan written, std::string* why) const;
  // The decoded chunk's size the layout needs.
  int64_t decoded_chunk_bytes() const { return chunk_layout_ ? chunk_layout_->chunk_bytes() : 0; }

 private:
  ZarrFiles() = default;
  std::shared_ptr<const Frame> frame_;
  ZarrArrayPlan plan_;
  std::string array_json_, zarray_, zattrs_;
  std::optional<NdLayout> chunk_layout_;
};

}  // namespace blosc2fs
