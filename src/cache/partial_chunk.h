// Big chunks loaded block by block: a small read of a chunk of 1 MiB or more
// stored fetches its header and tables, then only the blocks it touches,
// instead of the whole chunk (docs/remote.md). From a local file only reads of
// a block or more (sub-arrays: Zarr inner chunks) load so.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "chunk_cache.h"
#include "frame.h"

namespace blosc2fs {

// Chunks stored smaller than this are fetched whole: one request either way.
inline constexpr int64_t kPartialChunkMinBytes = int64_t(1) << 20;

// Chunk n of `frame` loaded in part for `wish`, or nullopt when it should be
// loaded whole: a small chunk, a read of half of it or more (a quarter over
// a network), a read of a
// local chunk inside one block or of its stored bytes, a remote chunk held
// whole already (fetched ahead, in a disk cache),
// or a chunk that is not made of regular blocks (special, memcpyed, VL blocks).
std::optional<LoadedChunk> load_partial_chunk(std::shared_ptr<const Frame> frame, int64_t n, BufferPool& pool,
                                              const ChunkWish& wish);

// Whether a chunk with header `h` is made to be loaded in part: two or more
// regular blocks (not special, memcpyed, VL blocks or lazy) and a block-start
// table within its bytes.
bool loadable_in_part(const ChunkHeader& h);
// What load_partial_chunk loads before any block: the first
// partial_chunk_head(h) bytes (the header, the block-start table and the
// dictionary's size field), then, read from those, the first
// partial_chunk_prefix(h, stored) bytes (everything before the first block's
// bytes: the dictionary). Both at most h.cbytes.
int64_t partial_chunk_head(const ChunkHeader& h);
int64_t partial_chunk_prefix(const ChunkHeader& h, const uint8_t* stored);

// The decoder of a chunk load_partial_chunk made: fetches each block's bytes
// before decoding it. A block whose streams run past its bytes (a chunk
// c-blosc2 still reads) is decoded after the whole chunk is fetched.
// `label` prefixes its errors ("chunk 7: ").
std::unique_ptr<ChunkDecoder> partial_chunk_decoder(ByteSpan stored, DecodeRules rules,
                                                    std::shared_ptr<StoredChunkFiller> filler, std::string label);

}  // namespace blosc2fs
