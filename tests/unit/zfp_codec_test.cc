// ZFP codecs: known answers from python-blosc2 4.14.1 chunks, the per-block coder
// against libzfp's own whole-field calls, and hostile geometry and streams.
#include <gtest/gtest.h>
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "zfp_codec.h"

namespace blosc2fs {
namespace {

using Buffer = std::vector<uint8_t>;
using Shape = std::vector<int32_t>;

// Streams written by python-blosc2 4.14.1 (codec_meta as given, filters=[],
// NEVER_SPLIT, chunk == block == the array), with python-blosc2's decoded bytes
// (the larger ones as FNV-1a hashes). The writer's input is kat_input().
// acc_f4_1d: ZFP_ACC meta 254, f4, block (10,), 40 bytes -> stream 24
constexpr uint8_t k_acc_f4_1d_stream[] = {
    0x01, 0x79, 0xc1, 0x02, 0x00, 0x08, 0x48, 0xde, 0xe9, 0x2e, 0x14, 0x80, 0x80, 0x89, 0xa0, 0x82,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
constexpr uint8_t k_acc_f4_1d_decoded[] = {
    0x00, 0x00, 0xe0, 0xbf, 0x00, 0x00, 0x60, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x60, 0x3f,
    0x00, 0x00, 0xe0, 0x3f, 0x00, 0x00, 0x80, 0xbf, 0x00, 0x00, 0x00, 0xbe, 0x00, 0x00, 0x40, 0x3f,
    0x00, 0x00, 0xd0, 0x3f, 0x00, 0x00, 0x90, 0xbf};

// prec_f8_2d: ZFP_PREC meta 10, f8, block (4, 6), 192 bytes -> stream 72
constexpr uint8_t k_prec_f8_2d_stream[] = {
    0x01, 0x28, 0x00, 0x10, 0x42, 0x10, 0x6e, 0x00, 0x3d, 0x19, 0xd3, 0xde, 0x1c, 0xf0, 0x7f, 0x4f,
    0x92, 0xdf, 0xce, 0xa1, 0xc3, 0xb8, 0x33, 0x26, 0x02, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x40, 0x00, 0x0a, 0x00, 0x04, 0x05, 0x44, 0x05, 0x40, 0x00, 0x14, 0x04, 0x54, 0x04, 0x10,
    0x01, 0x04, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
constexpr uint8_t k_prec_f8_2d_decoded[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfc, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xec, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xec, 0x3f,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfc, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe8, 0x3f,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfa, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf2, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd0, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe4, 0x3f,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf4, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd8, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf6, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf6, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd8, 0x3f,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf4, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe4, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd0, 0x3f};

// rate_f4_3d: ZFP_RATE meta 25, f4, block (4, 4, 5), 320 bytes -> stream 128
constexpr uint8_t k_rate_f4_3d_stream[] = {
    0x01, 0x11, 0x00, 0x00, 0x00, 0x80, 0x01, 0xf0, 0x00, 0x70, 0x32, 0x4c, 0x30, 0xc2, 0x9f, 0xe1,
    0x19, 0xf6, 0x64, 0xf3, 0xf0, 0x84, 0x71, 0x43, 0x72, 0x0e, 0x11, 0xff, 0x9c, 0x07, 0xc6, 0xfc,
    0x0f, 0x92, 0x72, 0x98, 0x1c, 0xfc, 0xb7, 0x5f, 0xbe, 0x83, 0x71, 0x03, 0x73, 0x7c, 0x4e, 0x80,
    0x31, 0xe2, 0x90, 0x67, 0x9c, 0x7b, 0xf8, 0xff, 0x33, 0x62, 0x91, 0x04, 0x8c, 0x7b, 0x88, 0xbc,
    0x01, 0x09, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x00, 0x00, 0x04, 0xa0, 0x80,
    0x11, 0x46, 0x48, 0x80, 0x04, 0x10, 0x00, 0xd2, 0x00, 0x09, 0x90, 0x00, 0x08, 0x00, 0x02, 0x00,
    0x00, 0x02, 0x40, 0xc0, 0x00, 0x23, 0x24, 0x40, 0x02, 0x88, 0x18, 0x68, 0x04, 0x00, 0x40, 0x40,
    0x01, 0x03, 0x81, 0x90, 0x00, 0x00, 0x08, 0x00, 0x80, 0x01, 0x00, 0x20, 0x01, 0x71, 0x80, 0x04};
constexpr uint64_t k_rate_f4_3d_decoded_fnv1a = 0xed801e98759ed88bull;

// rate_f4_4d: ZFP_RATE meta 1, f4, block (4, 4, 4, 5), 1280 bytes -> stream 24
constexpr uint8_t k_rate_f4_4d_stream[] = {
    0x01, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x24, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
constexpr uint64_t k_rate_f4_4d_decoded_fnv1a = 0x181ea059b8554125ull;

// acc_f8_3d_meta0: ZFP_ACC meta 0, f8, block (5, 4, 4), 640 bytes -> stream 80
constexpr uint8_t k_acc_f8_3d_meta0_stream[] = {
    0x01, 0x48, 0xc0, 0x30, 0x00, 0x30, 0x00, 0x00, 0x40, 0x82, 0x10, 0x12, 0x08, 0x00, 0x00, 0x90,
    0x08, 0x81, 0xc6, 0x40, 0x02, 0x19, 0x00, 0x4a, 0xdf, 0xf6, 0x90, 0x0f, 0x07, 0x03, 0x1c, 0x18,
    0xb0, 0x1f, 0x10, 0x7c, 0xe2, 0x9d, 0x98, 0x2a, 0x7c, 0xc2, 0x59, 0x02, 0x21, 0x85, 0x47, 0x13,
    0xf9, 0xc7, 0x01, 0x3c, 0xdd, 0x00, 0x78, 0x00, 0x0a, 0x08, 0x30, 0x80, 0x04, 0x00, 0x24, 0x08,
    0x80, 0x42, 0x00, 0x05, 0x00, 0x28, 0x10, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00};
constexpr uint64_t k_acc_f8_3d_meta0_decoded_fnv1a = 0xbaca8fcf9cda1b36ull;

// prec_f4_4d: ZFP_PREC meta 0, f4, block (4, 4, 4, 4), 1024 bytes -> stream 240
constexpr uint8_t k_prec_f4_4d_stream[] = {
    0x01, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x20, 0x80, 0x00, 0x00, 0x84, 0x04, 0x00, 0x20, 0x00, 0x04,
    0x00, 0x02, 0x00, 0x00, 0x81, 0x8c, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x02,
    0x10, 0x40, 0x20, 0x80, 0xd8, 0xc2, 0x8c, 0x90, 0x00, 0x60, 0x88, 0x80, 0x44, 0x42, 0x04, 0x85,
    0x21, 0xa2, 0x02, 0x00, 0x13, 0x22, 0x80, 0x08, 0x84, 0x40, 0xb0, 0xb1, 0x81, 0x41, 0x20, 0x08,
    0x2a, 0x80, 0x38, 0x0b, 0x0c, 0xc1, 0x13, 0x49, 0x1b, 0x13, 0x34, 0x29, 0x88, 0xbd, 0xd4, 0x51,
    0x78, 0x2c, 0x2c, 0x82, 0x44, 0x80, 0x83, 0x10, 0x1a, 0x8a, 0x03, 0xf9, 0x18, 0x98, 0x07, 0x26,
    0x6c, 0x9d, 0x2b, 0x4e, 0x5a, 0x3b, 0x55, 0x07, 0x11, 0xe4, 0xc7, 0xb6, 0x7e, 0x3a, 0xc0, 0x2e,
    0x01, 0x62, 0xe7, 0x90, 0x18, 0x66, 0x68, 0x23, 0x66, 0x23, 0x33, 0xea, 0xc5, 0xbc, 0xca, 0xbc,
    0x07, 0xd5, 0xa7, 0xd9, 0xfc, 0x6a, 0xb8, 0x68, 0xe7, 0x78, 0xfb, 0xe3, 0xfa, 0x31, 0xde, 0xef,
    0x66, 0x18, 0x99, 0xb2, 0xc1, 0x2e, 0x76, 0x14, 0x6d, 0xa5, 0x4b, 0x8a, 0xec, 0x4f, 0xe2, 0xb2,
    0x60, 0x76, 0xf4, 0x4c, 0x47, 0xf4, 0x9a, 0xb6, 0xe4, 0x5b, 0xb5, 0x2d, 0x07, 0x12, 0xf2, 0x9f,
    0x88, 0x10, 0xa2, 0xfb, 0xfb, 0xbb, 0x30, 0x1c, 0x7d, 0x2f, 0x0f, 0x6f, 0xb9, 0x39, 0x25, 0x20,
    0x9c, 0x21, 0xae, 0x74, 0xda, 0x02, 0xef, 0x69, 0xae, 0xa5, 0xc4, 0xf7, 0xf7, 0xf4, 0x04, 0x5a,
    0x34, 0x9c, 0x0d, 0xb5, 0x14, 0x77, 0xf3, 0x31, 0x8a, 0x7c, 0xda, 0xef, 0x22, 0x1b, 0x01, 0x00};
constexpr uint64_t k_prec_f4_4d_decoded_fnv1a = 0x00e5dac60d2d22e4ull;

BlockGeometry geometry(int32_t typesize, const Shape& shape) {
  BlockGeometry g;
  g.typesize = typesize;
  g.ndim = int32_t(shape.size());
  for (size_t i = 0; i < shape.size() && i < g.blockshape.size(); ++i) g.blockshape[i] = shape[i];
  return g;
}

size_t items_of(const Shape& shape) {
  size_t n = 1;
  for (int32_t d : shape) n *= size_t(d);
  return n;
}

uint64_t fnv1a(const Buffer& b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t x : b) h = (h ^ x) * 0x100000001b3ull;
  return h;
}

template <typename T>
Buffer to_bytes(const std::vector<T>& v) {
  Buffer b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The known-answer arrays: ((i*7) % 29 - 14) / 8, exact in float and double.
Buffer kat_input(int32_t typesize, size_t items) {
  std::vector<double> v(items);
  for (size_t i = 0; i < items; ++i) v[i] = double(int(i * 7 % 29) - 14) * 0.125;
  if (typesize == 8) return to_bytes(v);
  return to_bytes(std::vector<float>(v.begin(), v.end()));
}

// Smooth data with some noise, as zfp is meant for.
Buffer smooth_input(int32_t typesize, size_t items, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<double> v(items);
  for (size_t i = 0; i < items; ++i) v[i] = 50 * std::sin(double(i) * 0.05) + double(i % 7) + noise(rng);
  if (typesize == 8) return to_bytes(v);
  return to_bytes(std::vector<float>(v.begin(), v.end()));
}

std::vector<double> as_doubles(const Buffer& b, int32_t typesize) {
  std::vector<double> v(b.size() / size_t(typesize));
  for (size_t i = 0; i < v.size(); ++i) {
    if (typesize == 8) {
      std::memcpy(&v[i], b.data() + i * 8, 8);
    } else {
      float f;
      std::memcpy(&f, b.data() + i * 4, 4);
      v[i] = f;
    }
  }
  return v;
}

double max_error(const Buffer& a, const Buffer& b, int32_t typesize) {
  const std::vector<double> x = as_doubles(a, typesize), y = as_doubles(b, typesize);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

Buffer decode(uint8_t codec, uint8_t meta, const Buffer& stream, const BlockGeometry& g, size_t out_size) {
  Buffer out(out_size, 0xAB);
  zfp_decode(codec, meta, stream, out, g);
  return out;
}

Buffer encode(uint8_t codec, uint8_t meta, const Buffer& in, const BlockGeometry& g) {
  Buffer out(in.size());
  out.resize(zfp_encode(codec, meta, in, out, g));
  return out;
}

// libzfp's whole-field zfp_compress/zfp_decompress, set up as c-blosc2's plugin
// does: the reference the per-block coder must match bit for bit.
struct ZfpHandles {
  zfp_stream* zfp = nullptr;
  zfp_field* field = nullptr;
  bitstream* bits = nullptr;
  ~ZfpHandles() {
    if (bits) stream_close(bits);
    if (field) zfp_field_free(field);
    if (zfp) zfp_stream_close(zfp);
  }
};

void setup_reference(ZfpHandles& h, uint8_t codec, uint8_t meta, const BlockGeometry& g, void* data) {
  const zfp_type type = g.typesize == 4 ? zfp_type_float : zfp_type_double;
  const auto& b = g.blockshape;
  h.zfp = zfp_stream_open(nullptr);
  if (codec == kCodecZfpAccuracy) zfp_stream_set_accuracy(h.zfp, std::pow(10.0, double(int8_t(meta))));
  if (codec == kCodecZfpPrecision)
    zfp_stream_set_precision(h.zfp, std::min(meta + unsigned(3 + 2 * g.ndim), unsigned(ZFP_MAX_PREC)));
  if (codec == kCodecZfpRate)
    zfp_stream_set_rate(h.zfp, meta / 100.0 * g.typesize * 8, type, unsigned(g.ndim), zfp_false);
  switch (g.ndim) {
    case 1: h.field = zfp_field_1d(data, type, size_t(b[0])); break;
    case 2: h.field = zfp_field_2d(data, type, size_t(b[1]), size_t(b[0])); break;
    case 3: h.field = zfp_field_3d(data, type, size_t(b[2]), size_t(b[1]), size_t(b[0])); break;
    default: h.field = zfp_field_4d(data, type, size_t(b[3]), size_t(b[2]), size_t(b[1]), size_t(b[0])); break;
  }
}

Buffer reference_compress(uint8_t codec, uint8_t meta, Buffer in, const BlockGeometry& g) {
  ZfpHandles h;
  setup_reference(h, codec, meta, g, in.data());
  Buffer out(zfp_stream_maximum_size(h.zfp, h.field) + 8, 0);
  h.bits = stream_open(out.data(), out.size());
  zfp_stream_set_bit_stream(h.zfp, h.bits);
  zfp_stream_rewind(h.zfp);
  const size_t n = zfp_compress(h.zfp, h.field);
  out.resize((n + 7) / 8 * 8);  // c-blosc2's bundled zfp writes 64-bit words
  return out;
}

Buffer reference_decompress(uint8_t codec, uint8_t meta, const Buffer& stream, const BlockGeometry& g) {
  Buffer out(items_of(Shape(g.blockshape.begin(), g.blockshape.begin() + g.ndim)) * size_t(g.typesize));
  ZfpHandles h;
  setup_reference(h, codec, meta, g, out.data());
  Buffer padded(std::max(stream.size(), zfp_stream_maximum_size(h.zfp, h.field)) + 8, 0);
  std::copy(stream.begin(), stream.end(), padded.begin());
  h.bits = stream_open(padded.data(), padded.size());
  zfp_stream_set_bit_stream(h.zfp, h.bits);
  zfp_stream_rewind(h.zfp);
  EXPECT_NE(zfp_decompress(h.zfp, h.field), 0u);
  return out;
}

template <typename Error>
void expect_decode_error(uint8_t codec, uint8_t meta, const Buffer& stream, const BlockGeometry& g, size_t out_size,
                         const std::string& why) {
  try {
    decode(codec, meta, stream, g, out_size);
    ADD_FAILURE() << why << ": no error";
  } catch (const Error& e) {
    if constexpr (!std::is_same_v<Error, UnsupportedError>) {
      EXPECT_EQ(dynamic_cast<const UnsupportedError*>(&e), nullptr) << why << ": " << e.what();
    }
    EXPECT_NE(std::string(e.what()).find("zfp"), std::string::npos) << e.what();
  }
}

struct KnownAnswer {
  const char* name;
  uint8_t codec;
  uint8_t meta;
  int32_t typesize;
  Shape shape;
  Buffer stream;
  Buffer decoded;  // empty: compare decoded_fnv1a
  uint64_t decoded_fnv1a;
};

template <size_t N>
Buffer bytes(const uint8_t (&a)[N]) {
  return Buffer(a, a + N);
}

std::vector<KnownAnswer> known_answers() {
  return {
      {"acc_f4_1d", kCodecZfpAccuracy, 254, 4, {10}, bytes(k_acc_f4_1d_stream), bytes(k_acc_f4_1d_decoded), 0},
      {"prec_f8_2d", kCodecZfpPrecision, 10, 8, {4, 6}, bytes(k_prec_f8_2d_stream), bytes(k_prec_f8_2d_decoded), 0},
      {"rate_f4_3d", kCodecZfpRate, 25, 4, {4, 4, 5}, bytes(k_rate_f4_3d_stream), {}, k_rate_f4_3d_decoded_fnv1a},
      {"rate_f4_4d", kCodecZfpRate, 1, 4, {4, 4, 4, 5}, bytes(k_rate_f4_4d_stream), {}, k_rate_f4_4d_decoded_fnv1a},
      {"acc_f8_3d_meta0", kCodecZfpAccuracy, 0, 8, {5, 4, 4}, bytes(k_acc_f8_3d_meta0_stream), {},
       k_acc_f8_3d_meta0_decoded_fnv1a},
      {"prec_f4_4d", kCodecZfpPrecision, 0, 4, {4, 4, 4, 4}, bytes(k_prec_f4_4d_stream), {},
       k_prec_f4_4d_decoded_fnv1a},
  };
}

TEST(ZfpCodec, DecodesPythonBlosc2StreamsBitExact) {
  for (const KnownAnswer& k : known_answers()) {
    const BlockGeometry g = geometry(k.typesize, k.shape);
    const Buffer out = decode(k.codec, k.meta, k.stream, g, items_of(k.shape) * size_t(k.typesize));
    if (!k.decoded.empty())
      EXPECT_EQ(out, k.decoded) << k.name;
    else
      EXPECT_EQ(fnv1a(out), k.decoded_fnv1a) << k.name;
  }
}

TEST(ZfpCodec, EncodesTheStreamsPythonBlosc2Wrote) {
  for (const KnownAnswer& k : known_answers()) {
    const Buffer in = kat_input(k.typesize, items_of(k.shape));
    EXPECT_EQ(encode(k.codec, k.meta, in, geometry(k.typesize, k.shape)), k.stream) << k.name;
  }
}

struct Mode {
  uint8_t codec;
  uint8_t meta;
};
const Mode kModes[] = {{kCodecZfpAccuracy, 253}, {kCodecZfpAccuracy, 0},   {kCodecZfpAccuracy, 128},
                       {kCodecZfpPrecision, 20}, {kCodecZfpPrecision, 0}, {kCodecZfpPrecision, 255},
                       {kCodecZfpRate, 50},      {kCodecZfpRate, 1},      {kCodecZfpRate, 100}};

// Every zfp block shape: whole and partial blocks along each axis.
const Shape kShapes[] = {{4},          {17},         {64},         {4, 4},        {5, 9},       {12, 7},
                         {4, 4, 4},    {5, 6, 7},    {9, 4, 13},   {4, 4, 4, 4},  {5, 4, 6, 7}, {8, 5, 4, 9},
                         {1},          {3},          {2, 3},       {1, 7, 2},     {3, 1, 2, 5}};

TEST(ZfpCodec, MatchesLibzfpWholeFieldCalls) {
  uint32_t seed = 1;
  int same_streams = 0;
  for (const Shape& shape : kShapes)
    for (int32_t typesize : {4, 8})
      for (const Mode& m : kModes) {
        const BlockGeometry g = geometry(typesize, shape);
        const Buffer in = smooth_input(typesize, items_of(shape), seed++);
        const Buffer reference = reference_compress(m.codec, m.meta, in, g);
        const std::string what = "shape of " + std::to_string(shape.size()) + " dims, typesize " +
                                 std::to_string(typesize) + ", codec " + std::to_string(m.codec) + " meta " +
                                 std::to_string(m.meta) + ", first dim " + std::to_string(shape[0]);
        const bool encodable = std::all_of(shape.begin(), shape.end(), [](int32_t d) { return d >= 4; });
        if (encodable) {
          const Buffer ours = encode(m.codec, m.meta, in, g);
          if (reference.size() < in.size()) {
            EXPECT_EQ(ours, reference) << what;
            same_streams += ours == reference;
          } else {
            EXPECT_TRUE(ours.empty()) << what;
          }
        }
        EXPECT_EQ(decode(m.codec, m.meta, reference, g, in.size()), reference_decompress(m.codec, m.meta, reference, g))
            << what;
      }
  EXPECT_GT(same_streams, 100);
}

TEST(ZfpCodec, RoundTripsEveryModeTypeAndRank) {
  const Shape shapes[] = {{100}, {12, 10}, {8, 4, 8}, {4, 8, 4, 5}};
  for (const Shape& shape : shapes)
    for (int32_t typesize : {4, 8}) {
      const BlockGeometry g = geometry(typesize, shape);
      const Buffer in = smooth_input(typesize, items_of(shape), 7);
      for (const Mode& m : {Mode{kCodecZfpAccuracy, 254}, Mode{kCodecZfpPrecision, 10}, Mode{kCodecZfpRate, 50}}) {
        const Buffer stream = encode(m.codec, m.meta, in, g);
        ASSERT_FALSE(stream.empty()) << int(m.codec) << " typesize " << typesize << " rank " << shape.size();
        EXPECT_LT(stream.size(), in.size());
        EXPECT_EQ(stream.size() % 8, 0u);
        const double bound = m.codec == kCodecZfpAccuracy ? 1e-2 : m.codec == kCodecZfpPrecision ? 0.05 : 0.5;
        EXPECT_LE(max_error(decode(m.codec, m.meta, stream, g, in.size()), in, typesize), bound)
            << int(m.codec) << " typesize " << typesize << " rank " << shape.size();
      }
    }
  // A fine tolerance on doubles, and a fixed rate giving a fixed size: 50 % of 64 bits.
  const BlockGeometry g = geometry(8, {16, 16});
  const Buffer in = smooth_input(8, 256, 8);
  const Buffer fine = encode(kCodecZfpAccuracy, uint8_t(-6), in, g);
  ASSERT_FALSE(fine.empty());
  EXPECT_LE(max_error(decode(kCodecZfpAccuracy, uint8_t(-6), fine, g, in.size()), in, 8), 1e-6);
  EXPECT_EQ(encode(kCodecZfpRate, 50, in, g).size(), in.size() / 2);
}

TEST(ZfpCodec, ZeroesTheBlockPastTheField) {
  const KnownAnswer k = known_answers()[0];
  const Buffer out = decode(k.codec, k.meta, k.stream, geometry(4, k.shape), k.decoded.size() + 13);
  EXPECT_TRUE(std::equal(k.decoded.begin(), k.decoded.end(), out.begin()));
  EXPECT_TRUE(std::all_of(out.begin() + ptrdiff_t(k.decoded.size()), out.end(), [](uint8_t b) { return b == 0; }));
}

TEST(ZfpCodec, UnalignedBuffers) {
  const KnownAnswer k = known_answers()[1];  // doubles
  const BlockGeometry g = geometry(k.typesize, k.shape);
  Buffer stream(3, 0);
  stream.insert(stream.end(), k.stream.begin(), k.stream.end());
  Buffer out(k.decoded.size() + 1);
  zfp_decode(k.codec, k.meta, ByteSpan(stream).subspan(3), MutableByteSpan(out).subspan(1), g);
  EXPECT_TRUE(std::equal(k.decoded.begin(), k.decoded.end(), out.begin() + 1));

  const Buffer in = kat_input(k.typesize, items_of(k.shape));
  Buffer shifted(5, 0);
  shifted.insert(shifted.end(), in.begin(), in.end());
  Buffer encoded(in.size());
  const size_t n = zfp_encode(k.codec, k.meta, ByteSpan(shifted).subspan(5), encoded, g);
  encoded.resize(n);
  EXPECT_EQ(encoded, k.stream);
}

TEST(ZfpCodec, EncoderLeavesToRawWhatTheWriterWouldNotCompress) {
  const Shape shape{8, 8};
  const BlockGeometry g = geometry(4, shape);
  const Buffer in = smooth_input(4, 64, 3);
  ASSERT_FALSE(encode(kCodecZfpAccuracy, 253, in, g).empty());
  Buffer out(in.size());
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, ByteSpan(in).first(in.size() - 4), out, g), 0u) << "not one block";
  Buffer longer = in;
  longer.resize(in.size() + 4);
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, longer, out, g), 0u) << "not one block";
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, ByteSpan(in).first(8 * 3 * 4), out, geometry(4, {8, 3})), 0u)
      << "a dimension below 4";
  EXPECT_NE(zfp_encode(kCodecZfpAccuracy, 253, in, out, geometry(4, {16, 4})), 0u) << "16 x 4 is fine";
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, out, geometry(4, {})), 0u) << "no block shape";
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, out, geometry(4, {4, 4, 1, 1, 4})), 0u) << "5 dimensions";
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, out, geometry(2, {16, 8})), 0u) << "typesize 2";
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, out, geometry(1, {16, 16})), 0u) << "typesize 1";
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, out, geometry(0, shape)), 0u) << "typesize unknown";
  EXPECT_EQ(zfp_encode(32, 4, in, out, g), 0u) << "not a zfp codec";
  EXPECT_NE(zfp_encode(kCodecZfpRate, 90, in, out, g), 0u);
  EXPECT_EQ(zfp_encode(kCodecZfpRate, 100, in, out, g), 0u) << "32 bits an item and more do not shrink floats";
  EXPECT_EQ(zfp_encode(kCodecZfpRate, 101, in, out, g), 0u) << "rate above 100%";
  EXPECT_EQ(zfp_encode(kCodecZfpRate, 255, in, out, g), 0u) << "rate above 100%";
  const size_t n = zfp_encode(kCodecZfpAccuracy, 253, in, out, g);
  ASSERT_GT(n, 8u);
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, MutableByteSpan(out).first(n - 1), g), 0u) << "out too small";
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, MutableByteSpan(out).first(n), g), n);
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 253, in, MutableByteSpan(out).first(0), g), 0u);

  // At full precision the padding of partial zfp blocks (5 items coded as 8) makes
  // the stream larger than the block: how the writer's raw blocks arise.
  const BlockGeometry five_by_five = geometry(4, {5, 5});
  const Buffer small = smooth_input(4, 25, 4);
  EXPECT_EQ(zfp_encode(kCodecZfpPrecision, 255, small, out, five_by_five), 0u);
  EXPECT_EQ(zfp_encode(kCodecZfpAccuracy, 128, small, out, five_by_five), 0u);
  EXPECT_NE(zfp_encode(kCodecZfpAccuracy, 255, small, out, five_by_five), 0u);
}

TEST(ZfpCodec, RejectsGeometryZfpCannotTake) {
  const KnownAnswer k = known_answers()[0];
  const size_t size = k.decoded.size();
  for (int32_t typesize : {0, 1, 2, 3, 5, 16, -4})
    expect_decode_error<UnsupportedError>(k.codec, k.meta, k.stream, geometry(typesize, {10}), size * 4,
                                          "typesize " + std::to_string(typesize));
  expect_decode_error<FormatError>(k.codec, k.meta, k.stream, geometry(4, {}), size, "no block shape");
  expect_decode_error<UnsupportedError>(k.codec, k.meta, k.stream, geometry(4, {1, 1, 1, 1, 10}), size, "ndim 5");
  expect_decode_error<UnsupportedError>(k.codec, k.meta, k.stream, geometry(4, {1, 1, 1, 1, 1, 1, 1, 10}), size,
                                        "ndim 8");
  BlockGeometry bad = geometry(4, {10});
  for (int32_t ndim : {-1, 9, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}) {
    bad.ndim = ndim;
    expect_decode_error<FormatError>(k.codec, k.meta, k.stream, bad, size, "ndim " + std::to_string(ndim));
  }
  for (int32_t dim : {0, -1, std::numeric_limits<int32_t>::min()})
    expect_decode_error<FormatError>(k.codec, k.meta, k.stream, geometry(4, {4, dim}), size,
                                     "dimension " + std::to_string(dim));
  expect_decode_error<FormatError>(k.codec, k.meta, k.stream, geometry(4, {11}), size, "block larger than out");
  expect_decode_error<FormatError>(k.codec, k.meta, k.stream, geometry(4, {10}), size - 1, "block larger than out");
  const int32_t huge = std::numeric_limits<int32_t>::max();
  expect_decode_error<FormatError>(k.codec, k.meta, k.stream, geometry(8, {huge, huge, huge, huge}), size,
                                   "product overflowing 64 bits");
  expect_decode_error<UnsupportedError>(32, k.meta, k.stream, geometry(4, {10}), size, "codec 32");
  expect_decode_error<UnsupportedError>(36, k.meta, k.stream, geometry(4, {10}), size, "codec 36");
}

TEST(ZfpCodec, ShortAndEmptyStreams) {
  for (const KnownAnswer& k : known_answers()) {
    const BlockGeometry g = geometry(k.typesize, k.shape);
    const size_t size = items_of(k.shape) * size_t(k.typesize);
    expect_decode_error<FormatError>(k.codec, k.meta, {}, g, size, std::string(k.name) + " empty");
    // Below the byte holding the stream's last bit the decoder refuses, from there
    // on the cut only lost zero padding (the writer pads to 8 bytes).
    const Buffer whole = decode(k.codec, k.meta, k.stream, g, size);
    size_t needed = k.stream.size();
    while (needed > 0) {
      try {
        decode(k.codec, k.meta, Buffer(k.stream.begin(), k.stream.begin() + ptrdiff_t(needed - 1)), g, size);
        --needed;
      } catch (const FormatError&) {
        break;
      }
    }
    EXPECT_GT(needed + 8, k.stream.size()) << k.name;
    for (size_t n = 0; n < k.stream.size(); ++n) {
      const Buffer cut(k.stream.begin(), k.stream.begin() + ptrdiff_t(n));
      if (n < needed)
        expect_decode_error<FormatError>(k.codec, k.meta, cut, g, size, std::string(k.name) + " cut");
      else
        EXPECT_EQ(decode(k.codec, k.meta, cut, g, size), whole) << k.name << " cut to " << n;
    }
    // Trailing bytes past the stream are ignored, as c-blosc2 does.
    Buffer longer = k.stream;
    longer.resize(longer.size() + 100, 0xFF);
    EXPECT_EQ(decode(k.codec, k.meta, longer, g, size), whole) << k.name;
  }
}

// Garbage of every length at the meta extremes: an error or some floats, never a
// read or write outside the buffers (ASan sees our side; valgrind showed libzfp's).
TEST(ZfpCodec, GarbageStreamsAtMetaExtremes) {
  std::mt19937 rng(11);
  const Shape shapes[] = {{7}, {4, 5}, {1, 1}, {3, 5, 1}, {5, 4, 4, 6}, {1, 1, 1, 9}};
  int decoded = 0, refused = 0;
  for (uint8_t codec : {kCodecZfpAccuracy, kCodecZfpPrecision, kCodecZfpRate})
    for (int meta : {0, 1, 100, 101, 127, 128, 200, 254, 255})
      for (const Shape& shape : shapes)
        for (int32_t typesize : {4, 8})
          for (size_t length : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(33), size_t(300), size_t(5000)}) {
            Buffer stream(length);
            for (uint8_t& b : stream) b = uint8_t(rng());
            const BlockGeometry g = geometry(typesize, shape);
            Buffer out(items_of(shape) * size_t(typesize));
            try {
              zfp_decode(codec, uint8_t(meta), stream, out, g);
              ++decoded;
            } catch (const FormatError&) {
              ++refused;
            }
          }
  EXPECT_GT(decoded, 0);
  EXPECT_GT(refused, 0);
}

// A block shape of 1s makes every item its own zfp block: a short stream must
// fail early, without memory in proportion to zfp's worst case.
TEST(ZfpCodec, ShapesOfOnesWithAShortStream) {
  const BlockGeometry g = geometry(4, {1 << 18, 1, 1, 1});
  Buffer out(size_t(1) << 20);
  Buffer stream(64, 0xFF);
  EXPECT_THROW(zfp_decode(kCodecZfpPrecision, 255, stream, out, g), FormatError);
  EXPECT_THROW(zfp_decode(kCodecZfpRate, 255, stream, out, g), FormatError);
  stream.assign(64, 0);  // all-zero zfp blocks take one bit each in these modes
  EXPECT_THROW(zfp_decode(kCodecZfpAccuracy, 253, stream, out, g), FormatError);
}

TEST(ZfpCodec, ConcurrentDecodesAgree) {
  const std::vector<KnownAnswer> answers = known_answers();
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (size_t t = 0; t < failures.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round)
        for (const KnownAnswer& k : answers) {
          Buffer out(items_of(k.shape) * size_t(k.typesize));
          zfp_decode(k.codec, k.meta, k.stream, out, geometry(k.typesize, k.shape));
          const bool same = k.decoded.empty() ? fnv1a(out) == k.decoded_fnv1a : out == k.decoded;
          if (!same) ++failures[t];
        }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace blosc2fs
