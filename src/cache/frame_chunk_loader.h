// The chunk cache's loader for the frame a mount shows: chunks read from the
// frame and decoded (a whole chunk, or block by block for a small read of a
// big remote one), checked against what the frame says of them.
#pragma once

#include <memory>
#include <mutex>

#include "chunk_cache.h"
#include "frame.h"
#include "kind.h"

namespace blosc2fs {

// "chunk N: ", how a message about chunk N begins.
inline std::string chunk_label(int64_t n) { return "chunk " + std::to_string(n) + ": "; }

// Feeds the chunk cache from the frame the mount currently shows; the Volume
// switches it to the new frame after each commit (under its exclusive lock).
class FrameChunkLoader : public ChunkLoader {
 public:
  // `proxy`: a proxy cache's fetched chunks; the others decode as EIO (docs/kinds.md).
  void set_frame(std::shared_ptr<const Frame> frame, std::shared_ptr<const ProxyState> proxy = nullptr);
  PooledBuffer load(int64_t n, BufferPool& pool) override;
  std::unique_ptr<ChunkDecoder> decoder(int64_t n, ByteSpan stored) override;
  // A big chunk of remote data is loaded block by block for a small read (partial_chunk.h).
  LoadedChunk load_for(int64_t n, BufferPool& pool, const ChunkWish& wish) override;
  std::unique_ptr<ChunkDecoder> partial_decoder(int64_t n, ByteSpan stored,
                                                std::shared_ptr<StoredChunkFiller> filler) override;

 private:
  std::shared_ptr<const Frame> current() const;
  // The checks every decoder of chunk n passes first and last.
  void check_decodable(int64_t n);
  void check_decoded_size(const Frame& frame, int64_t n, const ChunkDecoder& decoder);
  mutable std::mutex mutex_;
  std::shared_ptr<const Frame> frame_;
  std::shared_ptr<const ProxyState> proxy_;
};

}  // namespace blosc2fs
