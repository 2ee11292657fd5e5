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

// encode(inputs[i], t) for every i, on up to `threads` threads (0: one per
// core); results in input order. `encode` must be safe to call from several
// threads. t: the threads encode may use for one input (encode_chunk's), the
// cores left over when there are fewer inputs than cores (one 64 MiB chunk).
std::vector<EncodedChunk> encode_in_parallel(std::span<const ByteSpan> inputs,
                                             const std::function<Bytes(ByteSpan, unsigned)>& encode,
                                             unsigned threads = 0);

}  // namespace blosc2fs
