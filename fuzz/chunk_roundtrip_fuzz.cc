// Encodes arbitrary bytes with parameters taken from the input's first bytes
// (codec, level, typesize, filter pipeline, split mode, blocksize), then checks
// that our decoder gives back exactly those bytes: whole, per range and per block.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "chunk_codec.h"
#include "error.h"

namespace {
using namespace blosc2fs;

constexpr size_t kParamBytes = 8;
constexpr SplitMode kSplitModes[] = {SplitMode::always, SplitMode::never, SplitMode::automatic,
                                     SplitMode::forward_compat};
// Lossless pipelines only: a round trip must give the input back.
constexpr uint8_t kPipelines[][2] = {{kFilterNone, kFilterNone},     {kFilterNone, kFilterShuffle},
                                     {kFilterNone, kFilterBitshuffle}, {kFilterDelta, kFilterShuffle},
                                     {kFilterShuffle, kFilterBytedelta}, {kFilterNone, kFilterDelta},
                                     {kFilterBitshuffle, kFilterShuffle}};

[[noreturn]] void mismatch() { std::abort(); }

CompressParams params_from(const uint8_t* p) {
  CompressParams params;
  params.codec = kCodecs[p[0] % std::size(kCodecs)];
  params.clevel = p[1] % 10;
  // Mostly small item sizes, now and then one past the 255 the header can hold.
  params.typesize = p[2] < 250 ? 1 + p[2] % 16 : 256 + p[2];
  const auto& pipeline = kPipelines[p[3] % std::size(kPipelines)];
  params.filters = {0, 0, 0, 0, pipeline[0], pipeline[1]};
  params.splitmode = kSplitModes[p[4] % std::size(kSplitModes)];
  // 0 = automatic; otherwise a small blocksize, so that chunks have many blocks.
  const int32_t blocksize = int32_t(p[5] | (p[6] & 0x3f) << 8);
  params.blocksize = (p[6] & 0x80) ? blocksize : 0;
  params.detect_specials = p[7] & 1;
  return params;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kParamBytes) return 0;
  const CompressParams params = params_from(data);
  const ByteSpan src(data + kParamBytes, size - kParamBytes);
  std::vector<uint8_t> chunk;
  try {
    chunk = encode_chunk(src, params);
  } catch (const FormatError&) {
    return 0;  // parameters the encoder refuses, with a message
  }
  const ChunkView view{ByteSpan(chunk.data(), chunk.size())};
  if (size_t(view.nbytes()) != src.size()) mismatch();
  std::vector<uint8_t> whole(src.size());
  view.decode(whole);
  if (!std::equal(whole.begin(), whole.end(), src.begin())) mismatch();
  if (src.size() > 2) {
    const int64_t offset = int64_t(src.size() / 3);
    std::vector<uint8_t> part(src.size() / 2);
    view.decode_range(offset, part);
    if (std::memcmp(part.data(), src.data() + offset, part.size()) != 0) mismatch();
  }
  std::vector<uint8_t> block0;
  for (int32_t j = 0; j < view.nblocks() && j < 64; ++j) {
    std::vector<uint8_t> block(size_t(view.block_size(j)));
    view.decode_block(j, block, block0);
    if (std::memcmp(block.data(), src.data() + view.block_offset(j), block.size()) != 0) mismatch();
    if (j == 0) block0 = block;
  }
  return 0;
}
