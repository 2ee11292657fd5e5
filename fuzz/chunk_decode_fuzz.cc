// Feeds arbitrary bytes to the chunk decoder: whole-chunk, per-block and range decoding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "chunk_codec.h"
#include "error.h"

namespace {
// Special chunks may legitimately claim gigabytes; the fuzzer only exercises sizes
// it can afford to allocate.
constexpr int32_t kMaxFuzzNbytes = 64 << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blosc2fs;
  try {
    ChunkView view(ByteSpan(data, size));
    if (view.nbytes() > kMaxFuzzNbytes) return 0;
    std::vector<uint8_t> whole(size_t(view.nbytes()));
    view.decode(whole);
    std::vector<uint8_t> block0;
    if (view.nblocks() > 0) {
      block0.resize(size_t(view.block_size(0)));
      view.decode_block(0, block0);
    }
    for (int32_t j = 1; j < view.nblocks() && j < 64; ++j) {
      std::vector<uint8_t> block(size_t(view.block_size(j)));
      view.decode_block(j, block, block0);
    }
    if (view.nbytes() > 2) {
      std::vector<uint8_t> part(size_t(view.nbytes() / 2));
      view.decode_range(view.nbytes() / 3, part);
    }
  } catch (const FormatError&) {
  }
  return 0;
}
