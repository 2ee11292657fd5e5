// Feeds arbitrary bytes to the chunk decoder: whole-chunk, per-block and range
// decoding; and to the decoder of a chunk loaded in part (partial_chunk.h),
// which must decode every chunk the whole decoder decodes, to the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "chunk_codec.h"
#include "error.h"
#include "partial_chunk.h"

namespace {
// Special chunks may legitimately claim gigabytes; the fuzzer only exercises sizes
// it can afford to allocate.
constexpr int32_t kMaxFuzzNbytes = 64 << 20;
constexpr int32_t kMaxBlocks = 64;

using blosc2fs::Bytes;
using blosc2fs::ByteSpan;

// Brings stored bytes from the fuzz input into the decoder's buffer, as a
// file would (clamped as SourceChunkFiller clamps).
class InputFiller final : public blosc2fs::StoredChunkFiller {
 public:
  InputFiller(ByteSpan input, Bytes& buffer) : input_(input), buffer_(buffer) {}
  void fill(int64_t from, int64_t to) override {
    from = std::clamp<int64_t>(from, 0, int64_t(input_.size()));
    to = std::clamp<int64_t>(to, from, int64_t(input_.size()));
    std::memcpy(buffer_.data() + from, input_.data() + from, size_t(to - from));
  }

 private:
  ByteSpan input_;
  Bytes& buffer_;
};

// What load_partial_chunk has in the buffer when it hands the chunk to its
// decoder: the header, the block table and everything before the first block.
// nullopt where it loads the chunk whole instead.
std::optional<Bytes> prefix_as_loaded(ByteSpan input, const blosc2fs::ChunkHeader& h) {
  using namespace blosc2fs;
  if (h.cbytes != int64_t(input.size()) || !loadable_in_part(h)) return std::nullopt;
  Bytes buffer(input.size(), 0xAA);
  std::memcpy(buffer.data(), input.data(), size_t(partial_chunk_head(h)));
  std::memcpy(buffer.data(), input.data(), size_t(partial_chunk_prefix(h, buffer.data())));
  return buffer;
}

// Each block through the partial decoder, from the last to the first (a
// reader's blocks come in any order), compared with `whole` where that decoded.
void decode_in_part(ByteSpan input, const std::optional<Bytes>& whole) {
  using namespace blosc2fs;
  const ChunkHeader h = parse_chunk_header(input);
  std::optional<Bytes> buffer = prefix_as_loaded(input, h);
  if (!buffer || h.nblocks() > kMaxBlocks || h.nbytes > kMaxFuzzNbytes) return;
  auto filler = std::make_shared<InputFiller>(input, *buffer);
  std::unique_ptr<ChunkDecoder> decoder;
  try {
    decoder = partial_chunk_decoder(*buffer, DecodeRules{}, filler, "fuzz: ");
    Bytes reference;
    if (decoder->needs_reference_block()) {
      reference.resize(size_t(decoder->block_size(0)));
      decoder->decode_block(0, reference, {});
    }
    decoder->prepare_blocks(decoder->nblocks() / 2, decoder->nblocks() - 1);
    for (int32_t j = decoder->nblocks() - 1; j >= 0; --j) {
      Bytes block(size_t(decoder->block_size(j)));
      decoder->decode_block(j, block, reference);
      if (whole && (decoder->block_offset(j) + int64_t(block.size()) > int64_t(whole->size()) ||
                    std::memcmp(block.data(), whole->data() + decoder->block_offset(j), block.size()) != 0))
        std::abort();  // decoded in part to other bytes than whole
    }
  } catch (const FormatError&) {
    if (whole) std::abort();  // a chunk the whole decoder reads, refused in part
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blosc2fs;
  std::optional<Bytes> whole;
  try {
    ChunkView view(ByteSpan(data, size));
    if (view.nbytes() > kMaxFuzzNbytes) return 0;
    whole.emplace(size_t(view.nbytes()));
    try {
      view.decode(*whole);
    } catch (const FormatError&) {
      whole.reset();
    }
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
  try {
    decode_in_part(ByteSpan(data, size), whole);
  } catch (const FormatError&) {  // the header itself
  }
  return 0;
}
