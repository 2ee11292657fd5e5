// FrameChunkLoader: the chunk cache's loader for the frame a mount shows.
#include "frame_chunk_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "chunk_codec.h"
#include "chunk_format.h"
#include "partial_chunk.h"

namespace blosc2fs {

namespace {

// Regular chunks decode block by block; special and memcpyed chunks have no
// blocks of their own, so they are cut into pieces decoded by range.
class ViewDecoder : public ChunkDecoder {
 public:
  ViewDecoder(ByteSpan stored, DecodeRules rules) : view_(stored, rules) {
    const ChunkHeader& h = view_.header();
    nbytes_ = view_.nbytes();
    by_range_ = h.special() != Special::none || h.memcpyed() || view_.nblocks() <= 0;
    uninit_ = h.special() == Special::uninit;
    if (by_range_) pieces_ = int32_t((nbytes_ + kPiece - 1) / kPiece);
  }
  int64_t nbytes() const override { return nbytes_; }
  int32_t nblocks() const override { return by_range_ ? pieces_ : view_.nblocks(); }
  int64_t block_offset(int32_t j) const override { return by_range_ ? int64_t(j) * kPiece : view_.block_offset(j); }
  int32_t block_size(int32_t j) const override {
    return by_range_ ? int32_t(std::min<int64_t>(kPiece, nbytes_ - int64_t(j) * kPiece)) : view_.block_size(j);
  }
  bool needs_reference_block() const override { return !by_range_ && view_.needs_reference_block(); }
  void decode_block(int32_t j, MutableByteSpan out, ByteSpan reference) const override {
    with_error_context(label_, [&] {
      if (uninit_) std::memset(out.data(), 0, out.size());  // the cache's buffers are recycled
      else if (by_range_) view_.decode_range(block_offset(j), out);
      else view_.decode_block(j, out, reference);
    });
  }
  void set_label(std::string label) { label_ = std::move(label); }

 private:
  static constexpr int64_t kPiece = 1 << 20;
  ChunkView view_;
  int64_t nbytes_ = 0;
  bool by_range_ = false;
  bool uninit_ = false;  // reads as zeros (README)
  int32_t pieces_ = 0;
  std::string label_;
};

}  // namespace

void FrameChunkLoader::set_frame(std::shared_ptr<const Frame> frame, std::shared_ptr<const ProxyState> proxy) {
  std::lock_guard lock(mutex_);
  frame_ = std::move(frame);
  proxy_ = std::move(proxy);
}

std::shared_ptr<const Frame> FrameChunkLoader::current() const {
  std::lock_guard lock(mutex_);
  if (!frame_) throw FormatError("no frame loaded");
  return frame_;
}

PooledBuffer FrameChunkLoader::load(int64_t n, BufferPool& pool) {
  try {
    PooledBuffer stored;
    // A remote frame's chunk inside one fetched extent is decoded from there.
    HeldBytes viewed = current()->read_raw_chunk_viewed(n, [&](size_t cbytes) {  // its errors name the chunk already
      stored = pool.take(cbytes);
      return stored.data();
    });
    if (viewed) return PooledBuffer::borrow(std::move(viewed));
    return stored;
  } catch (const IoError& e) {
    // A sparse frame's chunk file that is gone: the frame is damaged, not the request.
    if (e.error_number() == ENOENT) throw FormatError(e.what());
    throw;
  }
}

void FrameChunkLoader::check_decodable(int64_t n) {
  std::lock_guard lock(mutex_);
  // A proxy cache's chunks that were never fetched hold zeros or nothing, not
  // the remote data: chunks/N, data and array.npy fail there (raw/ is the
  // stored chunk and stays readable).
  if (proxy_ && !proxy_->fetched(n))
    throw IoError(chunk_label(n) + "not data: this proxy cache never fetched it from " + proxy_->source, EIO);
}

void FrameChunkLoader::check_decoded_size(const Frame& frame, int64_t n, const ChunkDecoder& decoder) {
  // The frame's size for this chunk is what stat and data offsets use.
  const int32_t expected = frame.chunk_nbytes(n);
  if (decoder.nbytes() != expected)
    throw FormatError("holds " + std::to_string(decoder.nbytes()) + " bytes where the frame says " +
                      std::to_string(expected));
}

std::unique_ptr<ChunkDecoder> FrameChunkLoader::decoder(int64_t n, ByteSpan stored) {
  check_decodable(n);
  return with_error_context(chunk_label(n), [&]() -> std::unique_ptr<ChunkDecoder> {
    std::shared_ptr<const Frame> frame = current();
    auto decoder = std::make_unique<ViewDecoder>(stored, frame->decode_rules());
    decoder->set_label(chunk_label(n));
    check_decoded_size(*frame, n, *decoder);
    return decoder;
  });
}

LoadedChunk FrameChunkLoader::load_for(int64_t n, BufferPool& pool, const ChunkWish& wish) {
  try {
    if (std::optional<LoadedChunk> part = load_partial_chunk(current(), n, pool, wish)) return std::move(*part);
  } catch (const IoError& e) {
    if (e.error_number() == ENOENT) throw FormatError(e.what());
    throw;
  }
  return {load(n, pool), nullptr};
}

std::unique_ptr<ChunkDecoder> FrameChunkLoader::partial_decoder(int64_t n, ByteSpan stored,
                                                                std::shared_ptr<StoredChunkFiller> filler) {
  check_decodable(n);
  return with_error_context(chunk_label(n), [&] {
    std::shared_ptr<const Frame> frame = current();
    auto decoder = partial_chunk_decoder(stored, frame->decode_rules(), std::move(filler), chunk_label(n));
    check_decoded_size(*frame, n, *decoder);
    return decoder;
  });
}

}  // namespace blosc2fs
