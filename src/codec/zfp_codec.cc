// The ZFP codecs through libzfp (plugin-codecs.md §3).
//
// A block is one zfp bitstream without zfp's header, so the mode is rebuilt the
// way c-blosc2's zfp plugin sets it: accuracy 10^(int8)meta, precision meta plus
// 5/7/9/11 by dimensions (at most 64), rate meta percent of the item's bits.
// The field is the b2nd block shape in C order: zfp's x, its fastest dimension,
// is the block's last one.
//
// libzfp reads its bitstream a 64-bit word at a time and checks no bound: a stream
// shorter than the field needs would be read past its end. Every stream is
// therefore copied into a word-aligned buffer of zfp_stream_maximum_size() for
// the field (the most zfp can read for it), zero-filled past the stream.
#include "zfp_codec.h"

#include <zfp.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace blosc2fs {

namespace {

constexpr int kMaxZfpDims = 4;
constexpr int kMinEncodedBlockDim = 4;  // c-blosc2's writer refuses smaller blocks

std::string str(int64_t v) { return std::to_string(v); }

const char* mode_name(uint8_t codec_id) {
  return codec_id == kCodecZfpAccuracy ? "zfp_acc" : codec_id == kCodecZfpPrecision ? "zfp_prec" : "zfp_rate";
}

struct StreamCloser {
  void operator()(zfp_stream* s) const { zfp_stream_close(s); }
};
struct FieldFreer {
  void operator()(zfp_field* f) const { zfp_field_free(f); }
};
struct BitstreamCloser {
  void operator()(bitstream* b) const { stream_close(b); }
};
using ZfpStream = std::unique_ptr<zfp_stream, StreamCloser>;
using ZfpField = std::unique_ptr<zfp_field, FieldFreer>;
using Bitstream = std::unique_ptr<bitstream, BitstreamCloser>;

// What zfp needs to know of a block, validated against a buffer of `capacity`
// bytes that must hold the whole field.
struct ZfpBlock {
  zfp_type type = zfp_type_none;
  int ndim = 0;
  size_t dims[kMaxZfpDims] = {};  // b2nd order: dims[0] is the slowest
  size_t bytes = 0;               // prod(dims) * typesize
};

ZfpBlock describe_block(uint8_t codec_id, const BlockGeometry& g, size_t capacity) {
  const std::string what = mode_name(codec_id);
  if (g.typesize != 4 && g.typesize != 8)
    throw UnsupportedError(what + ": typesize " + str(g.typesize) + " (zfp takes 4-byte floats or 8-byte doubles)");
  if (g.ndim == 0) throw FormatError(what + ": the frame has no b2nd block shape, which zfp needs");
  if (g.ndim < 1 || g.ndim > kMaxZfpDims)
    throw UnsupportedError(what + ": a block of " + str(g.ndim) + " dimensions (zfp takes 1 to 4)");
  ZfpBlock b;
  b.type = g.typesize == 4 ? zfp_type_float : zfp_type_double;
  b.ndim = g.ndim;
  uint64_t bytes = uint64_t(g.typesize);
  for (int d = 0; d < g.ndim; ++d) {
    const int32_t dim = g.blockshape[size_t(d)];
    if (dim < 1) throw FormatError(what + ": block dimension " + str(d) + " is " + str(dim));
    if (bytes > capacity / uint64_t(dim))
      throw FormatError(what + ": the block shape needs more than the block's " + str(int64_t(capacity)) + " bytes");
    bytes *= uint64_t(dim);
    b.dims[d] = size_t(dim);
  }
  b.bytes = size_t(bytes);
  return b;
}

ZfpField make_field(void* data, const ZfpBlock& b) {
  zfp_field* f = nullptr;
  switch (b.ndim) {
    case 1: f = zfp_field_1d(data, b.type, b.dims[0]); break;
    case 2: f = zfp_field_2d(data, b.type, b.dims[1], b.dims[0]); break;
    case 3: f = zfp_field_3d(data, b.type, b.dims[2], b.dims[1], b.dims[0]); break;
    default: f = zfp_field_4d(data, b.type, b.dims[3], b.dims[2], b.dims[1], b.dims[0]); break;
  }
  if (!f) throw std::bad_alloc();
  return ZfpField(f);
}

ZfpStream make_stream(uint8_t codec_id, uint8_t meta, const ZfpBlock& b) {
  ZfpStream zfp(zfp_stream_open(nullptr));
  if (!zfp) throw std::bad_alloc();
  static constexpr unsigned kPrecisionBase[kMaxZfpDims + 1] = {0, 5, 7, 9, 11};
  switch (codec_id) {
    case kCodecZfpAccuracy:
      zfp_stream_set_accuracy(zfp.get(), std::pow(10.0, double(int8_t(meta))));
      break;
    case kCodecZfpPrecision:
      zfp_stream_set_precision(zfp.get(), std::min<unsigned>(meta + kPrecisionBase[b.ndim], ZFP_MAX_PREC));
      break;
    default: {
      const double bits_per_item = (double(meta) / 100.0) * double(b.type == zfp_type_float ? 4 : 8) * 8;
      zfp_stream_set_rate(zfp.get(), bits_per_item, b.type, unsigned(b.ndim), zfp_false);
      break;
    }
  }
  return zfp;
}

// A word-aligned buffer per thread, for the padded copy of a stream and for the
// encoder's output.
std::vector<uint64_t>& thread_words(size_t bytes) {
  thread_local std::vector<uint64_t> words;
  const size_t n = (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t) + 1;
  if (words.size() < n) {
    words.clear();
    words.shrink_to_fit();
    words.resize(n);
  }
  return words;
}

void trim_thread_words() {
  constexpr size_t kKeepWords = (size_t(16) << 20) / sizeof(uint64_t);
  std::vector<uint64_t>& words = thread_words(0);
  if (words.size() > kKeepWords) std::vector<uint64_t>().swap(words);
}

}  // namespace

void zfp_decode(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry& geometry) {
  const ZfpBlock block = describe_block(codec_id, geometry, out.size());
  ZfpField field = make_field(out.data(), block);
  ZfpStream zfp = make_stream(codec_id, meta, block);
  const size_t readable = std::max(zfp_stream_maximum_size(zfp.get(), field.get()), in.size());
  std::vector<uint64_t>& words = thread_words(readable);
  std::memcpy(words.data(), in.data(), in.size());
  std::memset(reinterpret_cast<uint8_t*>(words.data()) + in.size(), 0, words.size() * sizeof(uint64_t) - in.size());
  Bitstream bits(stream_open(words.data(), words.size() * sizeof(uint64_t)));
  if (!bits) throw std::bad_alloc();
  zfp_stream_set_bit_stream(zfp.get(), bits.get());
  zfp_stream_rewind(zfp.get());
  const size_t consumed = zfp_decompress(zfp.get(), field.get());
  trim_thread_words();
  if (consumed == 0) throw FormatError(std::string(mode_name(codec_id)) + ": zfp cannot decode the stream");
  // zfp counts whole 64-bit words; a stream from zfp_compress is a whole number of them.
  if (consumed > (in.size() + 7) / 8 * 8)
    throw FormatError(std::string(mode_name(codec_id)) + ": the stream of " + str(int64_t(in.size())) +
                      " bytes ends before the block does (zfp read " + str(int64_t(consumed)) + ")");
  // c-blosc2 reports the whole block decoded; bytes past the field are not written by zfp.
  std::memset(out.data() + block.bytes, 0, out.size() - block.bytes);
}

size_t zfp_encode(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry& geometry) {
  ZfpBlock block;
  try {
    block = describe_block(codec_id, geometry, in.size());
  } catch (const FormatError&) {
    return 0;  // c-blosc2's writer stores what zfp cannot take raw, or fails: never a bad stream
  }
  if (block.bytes != in.size()) return 0;
  for (int d = 0; d < block.ndim; ++d)
    if (block.dims[d] < size_t(kMinEncodedBlockDim)) return 0;
  if (codec_id == kCodecZfpRate && meta > 100) return 0;
  ZfpField field = make_field(const_cast<uint8_t*>(in.data()), block);
  ZfpStream zfp = make_stream(codec_id, meta, block);
  const size_t capacity = zfp_stream_maximum_size(zfp.get(), field.get());
  std::vector<uint64_t>& words = thread_words(capacity);
  Bitstream bits(stream_open(words.data(), words.size() * sizeof(uint64_t)));
  if (!bits) throw std::bad_alloc();
  zfp_stream_set_bit_stream(zfp.get(), bits.get());
  zfp_stream_rewind(zfp.get());
  const size_t n = zfp_compress(zfp.get(), field.get());
  if (n == 0 || n >= in.size() || n > out.size()) {
    trim_thread_words();
    return 0;
  }
  std::memcpy(out.data(), words.data(), n);
  trim_thread_words();
  return n;
}

}  // namespace blosc2fs
