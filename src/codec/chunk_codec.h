// Decoding and encoding whole Blosc chunks, and random access to single blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "block_geometry.h"
#include "bytes.h"
#include "chunk_format.h"

namespace blosc2fs {

// What a frame's writer did that its chunks' headers do not record
// (legacy-layouts.md "Chunks: bitshuffle leftovers changed inside chunk format 4").
struct DecodeRules {
  // c-blosc2 up to 2.0.0-beta.4 (like Blosc1) stored a bitshuffled block whose
  // item count is not a multiple of 8 without any shuffle; the chunk format
  // version (4) did not change with the new rule.
  bool old_bitshuffle_leftovers = false;
  // Each block's streams must end before the next block's bytes begin (the
  // next larger block start, else cbytes): a chunk fetched block by block has
  // only those bytes of a block. A chunk whose streams run on past that point
  // (c-blosc2 reads them) fails with FormatError, and is decoded whole then.
  bool bound_blocks = false;
  // What the plugin codecs and filters read from the frame (its typesize and the
  // b2nd block shape); empty for a chunk outside a frame.
  BlockGeometry geometry;
};

// A parsed, validated view of one stored chunk: decode all of it, one block, or
// a byte range touching only the blocks it needs. The view does not own `chunk`;
// it must outlive the view. All methods are const and thread-safe.
class ChunkView {
 public:
  // Validates the header and the block-start table against chunk.size()
  // (which must be >= cbytes; bytes past cbytes are ignored).
  // Throws FormatError / UnsupportedError.
  // `rules` come from the frame holding the chunk (Frame::decode_rules).
  explicit ChunkView(ByteSpan chunk, DecodeRules rules = {});

  const ChunkHeader& header() const { return header_; }
  int32_t nbytes() const { return header_.nbytes; }
  int32_t nblocks() const { return nblocks_; }
  // Uncompressed offset and size of block j (VL-block chunks: sizes vary).
  int64_t block_offset(int32_t j) const;
  int32_t block_size(int32_t j) const;
  // True when block j > 0 can only be decoded after block 0 (delta filter).
  bool needs_reference_block() const;
  // The stored bytes [first, second) that decoding block j reads past the
  // header and tables: from its start to the next larger block start, else
  // cbytes (VL blocks: its own bytes; special and memcpyed chunks: all of them).
  std::pair<int64_t, int64_t> block_stored_extent(int32_t j) const;

  // Decodes the whole chunk into out (out.size() must equal nbytes()).
  // Uninit special chunks leave `out` untouched.
  void decode(MutableByteSpan out) const;
  std::vector<uint8_t> decode() const;

  // Decodes block j into out (out.size() == block_size(j)). For delta chunks pass
  // the fully decoded block 0 as `reference` when j > 0.
  void decode_block(int32_t j, MutableByteSpan out, ByteSpan reference = {}) const;

  // Decodes bytes [offset, offset + out.size()) of the chunk, decoding only the
  // blocks that range touches (plus block 0 when the delta filter needs it).
  void decode_range(int64_t offset, MutableByteSpan out) const;

 private:
  struct Impl;
  ByteSpan chunk_;
  ChunkHeader header_;
  int32_t nblocks_ = 0;
  std::shared_ptr<const Impl> impl_;  // bstarts, dictionary state
};

// One-call convenience: decode a whole chunk.
std::vector<uint8_t> decode_chunk(ByteSpan chunk);

struct CompressParams {
  Codec codec = Codec::blosclz;
  int clevel = 5;                    // 0..9; 0 stores memcpyed
  int32_t typesize = 8;              // 1.. ; > 255 is stored as 1 in the chunk header
  int32_t blocksize = 0;             // 0 = automatic
  std::array<uint8_t, kMaxFilters> filters{0, 0, 0, 0, 0, kFilterShuffle};
  std::array<uint8_t, kMaxFilters> filters_meta{};
  SplitMode splitmode = SplitMode::forward_compat;
  uint8_t compcode_meta = 0;
  // The frame's typesize and b2nd block shape: the plugin codecs (ndlz, zfp) and
  // filters (ndcell, ndmean) need them, as c-blosc2's do.
  BlockGeometry geometry;
  // Emit a special chunk (zeros, or repeated value) when the whole input is one
  // repeated item, as c-blosc2 does; off gives a regular chunk always.
  bool detect_specials = true;
};

// Encodes `src` as one chunk (format version 5, 32-byte header) that c-blosc2
// decodes. Throws FormatError on bad params (e.g. blocksize out of range).
// `threads` > 1: the blocks of a large chunk are compressed on that many
// threads; the bytes are the same, but for a chunk that barely compresses,
// whose last streams one thread squeezes into the room left, and for blosclz,
// whose matches depend on the streams a thread compressed before.
std::vector<uint8_t> encode_chunk(ByteSpan src, const CompressParams& params, unsigned threads = 1);

// A special chunk of `nbytes` bytes: zeros, nan (typesize 4 or 8), uninit, or a
// repeated `value` (value.size() == typesize).
std::vector<uint8_t> make_special_chunk(Special kind, int32_t nbytes, int32_t typesize, ByteSpan value = {});

// The automatic blocksize encode_chunk uses for these params and nbytes (ignores
// params.blocksize): 64-256 KB by clevel for blosclz/lz4, twice that for lz4hc, zlib
// and zstd (1 MB at clevel 9), capped at nbytes and rounded down to whole items.
// The split-stream policy and the codec level mapping are described in chunk_encoder.cc
// and stream_codecs.cc.
int32_t automatic_blocksize(const CompressParams& params, int32_t nbytes);

}  // namespace blosc2fs
