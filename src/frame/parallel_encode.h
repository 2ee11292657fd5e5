// Compressing several chunks at once, one per core. Writing a frame spends
// its time in encode_chunk, and the chunks of one batch are independent.
#pragma once

#include <exception>
#include <functional>
#include <span>
#include <vector>

#include "bytes.h"

namespace blosc2fs {

struct EncodedChunk {
  Bytes stored;
  std::exception_ptr error;  // what `encode` threw for this input
};

// encode(inputs[i]) for every i, on up to `threads` threads (0: one per core);
// results in input order. `encode` must be safe to call from several threads.
std::vector<EncodedChunk> encode_in_parallel(std::span<const ByteSpan> inputs,
                                             const std::function<Bytes(ByteSpan)>& encode, unsigned threads = 0);

}  // namespace blosc2fs
