// The ZFP codecs (plugin-codecs.md §3): our own decoder (zfp_decoder.h), libzfp's
// encoder.
//
// A block is one zfp bitstream without zfp's header, so the mode is rebuilt the
// way c-blosc2's zfp plugin sets it: accuracy 10^(int8)meta, precision meta plus
// 5/7/9/11 by dimensions (at most 64), rate meta percent of the item's bits.
// The field is the b2nd block shape in C order: zfp's x, its fastest axis, is the
// block's last dimension.
//
// libzfp checks no bound while it writes a bitstream. Rather than hand
// zfp_compress a buffer of zfp_stream_maximum_size() (which, for a hostile block
// shape of 1s, can be hundreds of times the block), the field is coded one zfp
// block at a time, in zfp_compress's own order and with the same block calls, so
// the bits are the same, into a buffer with room for one more zfp block past the
// limit, and the position is checked after every block. Our decoder reads zeros
// past a stream's end and says when a block ended there.
#include "zfp_codec.h"

#include <zfp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "error.h"
#include "zfp_decoder.h"

namespace blosc2fs {

namespace {

constexpr int kMaxZfpDims = 4;
constexpr size_t kZfpBlockEdge = 4;     // a zfp block is 4 items along every axis
constexpr int32_t kMinEncodedDim = 4;   // c-blosc2's writer refuses smaller block dimensions
constexpr unsigned kMaxRatePercent = 100;  // above it c-blosc2's writer stores raw or crashes
// c-blosc2's bundled zfp uses 64-bit stream words, so its streams end on a multiple
// of 8 bytes, and its decoder reads 8 bytes at a time. Debian's libzfp is built with
// 8-bit words (stream_word_bits == 8): the same bits, but a stream may end on any
// byte. Encoded streams are padded with zero bits to the writer's word.
constexpr size_t kWriterWordBytes = 8;

using Axes = std::array<size_t, kMaxZfpDims>;        // x, y, z, w
using Strides = std::array<ptrdiff_t, kMaxZfpDims>;  // in items

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

bool is_zfp_codec(uint8_t codec_id) {
  return codec_id == kCodecZfpAccuracy || codec_id == kCodecZfpPrecision || codec_id == kCodecZfpRate;
}

std::string mode_name(uint8_t codec_id) {
  switch (codec_id) {
    case kCodecZfpAccuracy: return "zfp_acc";
    case kCodecZfpPrecision: return "zfp_prec";
    case kCodecZfpRate: return "zfp_rate";
    default: return "zfp (codec " + str(codec_id) + ")";
  }
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

// The block as zfp sees it.
struct FieldLayout {
  zfp_type type = zfp_type_none;
  int ndim = 0;
  Axes size{1, 1, 1, 1};
  Strides stride{};
  size_t bytes = 0;  // prod(blockshape) * typesize
};

// Checks the geometry against a block buffer of `capacity` bytes.
FieldLayout layout_block(uint8_t codec_id, const BlockGeometry& g, size_t capacity) {
  const std::string what = mode_name(codec_id);
  if (!is_zfp_codec(codec_id)) throw UnsupportedError(what + ": not a zfp mode");
  if (g.typesize != 4 && g.typesize != 8)
    throw UnsupportedError(what + ": typesize " + str(g.typesize) + " (zfp takes 4-byte floats or 8-byte doubles)");
  if (g.ndim == 0) throw FormatError(what + ": the frame has no b2nd block shape, which zfp needs");
  if (g.ndim < 0 || g.ndim > kMaxBlockDims)
    throw FormatError(what + ": a block shape of " + str(g.ndim) + " dimensions");
  if (g.ndim > kMaxZfpDims)
    throw UnsupportedError(what + ": a block of " + str(g.ndim) + " dimensions (zfp takes 1 to 4)");
  FieldLayout f;
  f.type = g.typesize == 4 ? zfp_type_float : zfp_type_double;
  f.ndim = g.ndim;
  uint64_t bytes = uint64_t(g.typesize);
  for (int d = 0; d < g.ndim; ++d) {
    const int32_t dim = g.blockshape[size_t(d)];
    if (dim < 1) throw FormatError(what + ": block dimension " + str(d) + " is " + str(dim));
    if (bytes > capacity / uint64_t(dim))
      throw FormatError(what + ": the block shape needs more than the block's " + str(int64_t(capacity)) + " bytes");
    bytes *= uint64_t(dim);
    f.size[size_t(g.ndim - 1 - d)] = size_t(dim);
  }
  f.bytes = size_t(bytes);
  ptrdiff_t stride = 1;
  for (size_t axis = 0; axis < kMaxZfpDims; ++axis) {
    f.stride[axis] = stride;
    stride *= ptrdiff_t(f.size[axis]);
  }
  return f;
}

ZfpField make_field(void* data, zfp_type type, int ndim, const Axes& n) {
  zfp_field* f = nullptr;
  switch (ndim) {
    case 1: f = zfp_field_1d(data, type, n[0]); break;
    case 2: f = zfp_field_2d(data, type, n[0], n[1]); break;
    case 3: f = zfp_field_3d(data, type, n[0], n[1], n[2]); break;
    default: f = zfp_field_4d(data, type, n[0], n[1], n[2], n[3]); break;
  }
  if (!f) throw std::bad_alloc();
  return ZfpField(f);
}

// c-blosc2's precision for meta 0: 5, 7, 9 or 11 bits by dimensions.
constexpr unsigned kPrecisionBase[kMaxZfpDims + 1] = {0, 5, 7, 9, 11};

ZfpStream make_stream(uint8_t codec_id, uint8_t meta, const FieldLayout& f) {
  ZfpStream zfp(zfp_stream_open(nullptr));
  if (!zfp) throw std::bad_alloc();
  switch (codec_id) {
    case kCodecZfpAccuracy:
      zfp_stream_set_accuracy(zfp.get(), std::pow(10.0, double(int8_t(meta))));
      break;
    case kCodecZfpPrecision:
      zfp_stream_set_precision(zfp.get(), std::min<unsigned>(meta + kPrecisionBase[f.ndim], ZFP_MAX_PREC));
      break;
    default: {
      const double item_bits = f.type == zfp_type_float ? 32.0 : 64.0;
      zfp_stream_set_rate(zfp.get(), (double(meta) / 100.0) * item_bits, f.type, unsigned(f.ndim), zfp_false);
      break;
    }
  }
  return zfp;
}

// The same mode for our decoder (zfp_decoder.h), from the same numbers.
ZfpMode decoder_mode(uint8_t codec_id, uint8_t meta, const FieldLayout& f) {
  const bool doubles = f.type == zfp_type_double;
  switch (codec_id) {
    case kCodecZfpAccuracy: return zfp_accuracy_mode(std::pow(10.0, double(int8_t(meta))));
    case kCodecZfpPrecision:
      return zfp_precision_mode(std::min<uint32_t>(meta + kPrecisionBase[f.ndim], kZfpMaxPrec));
    default: return zfp_rate_mode((double(meta) / 100.0) * (doubles ? 64.0 : 32.0), doubles, f.ndim);
  }
}

// The most bits one zfp block of this field can take in this mode, by zfp's own bound.
uint64_t max_block_bits(zfp_stream* zfp, const FieldLayout& f) {
  Axes one_block;
  one_block.fill(kZfpBlockEdge);
  ZfpField block = make_field(nullptr, f.type, f.ndim, one_block);
  return uint64_t(zfp_stream_maximum_size(zfp, block.get())) * 8;
}

// A zeroed buffer of at least `bits` plus one spare word, aligned for any stream
// word size libzfp may be built with (8 to 64 bits).
std::vector<uint64_t> stream_words(uint64_t bits) { return std::vector<uint64_t>(size_t((bits + 63) / 64 + 1), 0); }

Bitstream open_bits(std::vector<uint64_t>& words) {
  Bitstream bits(stream_open(words.data(), words.size() * sizeof(uint64_t)));
  if (!bits) throw std::bad_alloc();
  return bits;
}

// Visits the zfp blocks in the order zfp_compress and zfp_decompress take them
// (x fastest, then y, z, w) with the first item and the extent inside the field;
// stops early when visit returns false.
template <typename Visit>
bool for_each_block(const FieldLayout& f, Visit&& visit) {
  const size_t e = kZfpBlockEdge;
  for (size_t w = 0; w < f.size[3]; w += e)
    for (size_t z = 0; z < f.size[2]; z += e)
      for (size_t y = 0; y < f.size[1]; y += e)
        for (size_t x = 0; x < f.size[0]; x += e) {
          const Axes extent{std::min(e, f.size[0] - x), std::min(e, f.size[1] - y), std::min(e, f.size[2] - z),
                            std::min(e, f.size[3] - w)};
          const size_t first = x * size_t(f.stride[0]) + y * size_t(f.stride[1]) + z * size_t(f.stride[2]) +
                               w * size_t(f.stride[3]);
          if (!visit(first, extent)) return false;
        }
  return true;
}

// zfp's partial-block calls also code whole blocks with the same bits (the padding
// of a partial block leaves a whole one as it is), so one call per dimension does.
template <typename T>
void encode_block(zfp_stream* z, const T* p, int ndim, const Axes& n, const Strides& s) {
  constexpr bool kFloat = std::is_same_v<T, float>;
  switch (ndim) {
    case 1:
      if constexpr (kFloat) zfp_encode_partial_block_strided_float_1(z, p, n[0], s[0]);
      else zfp_encode_partial_block_strided_double_1(z, p, n[0], s[0]);
      break;
    case 2:
      if constexpr (kFloat) zfp_encode_partial_block_strided_float_2(z, p, n[0], n[1], s[0], s[1]);
      else zfp_encode_partial_block_strided_double_2(z, p, n[0], n[1], s[0], s[1]);
      break;
    case 3:
      if constexpr (kFloat) zfp_encode_partial_block_strided_float_3(z, p, n[0], n[1], n[2], s[0], s[1], s[2]);
      else zfp_encode_partial_block_strided_double_3(z, p, n[0], n[1], n[2], s[0], s[1], s[2]);
      break;
    default:
      if constexpr (kFloat)
        zfp_encode_partial_block_strided_float_4(z, p, n[0], n[1], n[2], n[3], s[0], s[1], s[2], s[3]);
      else
        zfp_encode_partial_block_strided_double_4(z, p, n[0], n[1], n[2], n[3], s[0], s[1], s[2], s[3]);
      break;
  }
}

// Encodes `items`; false as soon as the stream passes `limit_bits`.
template <typename T>
bool encode_items(zfp_stream* zfp, const FieldLayout& f, uint64_t limit_bits, const T* items) {
  bitstream* bits = zfp_stream_bit_stream(zfp);
  return for_each_block(f, [&](size_t first, const Axes& extent) {
    encode_block(zfp, items + first, f.ndim, extent, f.stride);
    return stream_wtell(bits) <= limit_bits;
  });
}

template <typename T>
bool encode_field(zfp_stream* zfp, const FieldLayout& f, uint64_t limit_bits, const uint8_t* in) {
  if (reinterpret_cast<uintptr_t>(in) % alignof(T) == 0)
    return encode_items(zfp, f, limit_bits, reinterpret_cast<const T*>(in));
  std::vector<T> aligned(f.bytes / sizeof(T));
  std::memcpy(aligned.data(), in, f.bytes);
  return encode_items(zfp, f, limit_bits, aligned.data());
}

}  // namespace

void zfp_decode(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry& geometry) {
  const FieldLayout field = layout_block(codec_id, geometry, out.size());
  ZfpFieldShape shape;
  shape.doubles = field.type == zfp_type_double;
  shape.ndim = field.ndim;
  std::copy(field.size.begin(), field.size.end(), shape.size.begin());
  if (!zfp_decode_field(decoder_mode(codec_id, meta, field), shape, in, out.data()))
    throw FormatError(mode_name(codec_id) + ": the stream of " + str(int64_t(in.size())) +
                      " bytes ends before the block's data does");
  // c-blosc2 reports the whole block decoded and leaves bytes past the field as
  // they were; zeros make them deterministic.
  std::memset(out.data() + field.bytes, 0, out.size() - field.bytes);
}

size_t zfp_encode(uint8_t codec_id, uint8_t meta, ByteSpan in, MutableByteSpan out, const BlockGeometry& geometry) {
  if (!is_zfp_codec(codec_id) || (codec_id == kCodecZfpRate && meta > kMaxRatePercent)) return 0;
  FieldLayout field;
  try {
    field = layout_block(codec_id, geometry, in.size());
  } catch (const FormatError&) {
    return 0;  // a geometry c-blosc2's writer fails on: stored raw
  }
  if (field.bytes != in.size()) return 0;
  for (int d = 0; d < field.ndim; ++d)
    if (geometry.blockshape[size_t(d)] < kMinEncodedDim) return 0;
  // The largest stream worth keeping: smaller than the input, and fitting in out.
  const size_t limit = std::min(in.size() - 1, out.size());
  ZfpStream zfp = make_stream(codec_id, meta, field);
  const uint64_t limit_bits = uint64_t(limit) * 8;
  std::vector<uint64_t> words = stream_words(limit_bits + max_block_bits(zfp.get(), field));
  Bitstream bits = open_bits(words);
  zfp_stream_set_bit_stream(zfp.get(), bits.get());
  zfp_stream_rewind(zfp.get());
  const bool fits = field.type == zfp_type_float ? encode_field<float>(zfp.get(), field, limit_bits, in.data())
                                                 : encode_field<double>(zfp.get(), field, limit_bits, in.data());
  if (!fits) return 0;
  stream_flush(bits.get());
  const size_t n = round_up(stream_size(bits.get()), kWriterWordBytes);
  if (n == 0 || n > limit) return 0;
  std::memcpy(out.data(), words.data(), n);
  return n;
}

}  // namespace blosc2fs
