// JPEG 2000 plugin codecs (36, 37, 39, 40): images coded here by OpenJPEG's own
// encoder (lossless 5/3, JP2 files and raw codestreams) checked against each
// plugin's block layout, the float frame, real plugin blocks as known answers,
// and hostile headers, boxes and frames.
#include <gtest/gtest.h>
// pkg-config's include directory is private to the codec library: name the header
// by its path under /usr/include.
#include <openjpeg-2.5/openjpeg.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "jpeg2000.h"

namespace blosc2fs {
namespace {

using Buffer = std::vector<uint8_t>;

struct TestImage {
  uint32_t width = 0, height = 0;
  std::vector<int> precision;                // bits, per component
  bool is_signed = false;
  std::vector<std::vector<int32_t>> planes;  // width*height samples per component
  int components() const { return int(planes.size()); }
};

TestImage make_image(uint32_t width, uint32_t height, std::vector<int> precision, bool is_signed = false,
                     uint32_t seed = 1) {
  TestImage img{width, height, precision, is_signed, {}};
  std::mt19937 rng(seed);
  for (int bits : precision) {
    const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0;
    std::uniform_int_distribution<int64_t> any(lo, lo + (int64_t(1) << bits) - 1);
    std::vector<int32_t> plane(size_t(width) * height);
    for (auto& v : plane) v = int32_t(any(rng));
    img.planes.push_back(std::move(plane));
  }
  return img;
}

struct EncodeOptions {
  OPJ_CODEC_FORMAT format = OPJ_CODEC_J2K;
  uint32_t x0 = 0, y0 = 0;          // image offset on the reference grid
  uint32_t tile_width = 0, tile_height = 0;  // 0: one tile
  uint32_t subsampling = 1;         // of the last component
};

// OpenJPEG writes through callbacks into a growable buffer (JP2 seeks back).
struct MemoryOutput {
  Buffer bytes;
  size_t position = 0;
};

OPJ_SIZE_T write_output(void* data, OPJ_SIZE_T n, void* user) {
  auto* out = static_cast<MemoryOutput*>(user);
  if (out->bytes.size() < out->position + n) out->bytes.resize(out->position + n);
  std::memcpy(out->bytes.data() + out->position, data, n);
  out->position += n;
  return n;
}
OPJ_OFF_T skip_output(OPJ_OFF_T n, void* user) {
  auto* out = static_cast<MemoryOutput*>(user);
  out->position += size_t(n);
  if (out->bytes.size() < out->position) out->bytes.resize(out->position);
  return n;
}
OPJ_BOOL seek_output(OPJ_OFF_T to, void* user) {
  static_cast<MemoryOutput*>(user)->position = size_t(to);
  return OPJ_TRUE;
}

// Lossless (reversible 5/3, one layer) JPEG 2000 of `img`, by OpenJPEG.
Buffer encode(const TestImage& img, const EncodeOptions& opt = {}) {
  const int nc = img.components();
  std::vector<opj_image_cmptparm_t> parms(img.planes.size());
  for (int c = 0; c < nc; ++c) {
    auto& p = parms[size_t(c)];
    std::memset(&p, 0, sizeof p);
    p.dx = p.dy = c == nc - 1 ? opt.subsampling : 1;
    p.w = img.width;
    p.h = img.height;
    p.x0 = opt.x0;
    p.y0 = opt.y0;
    p.prec = OPJ_UINT32(img.precision[size_t(c)]);
    p.sgnd = img.is_signed;
  }
  std::unique_ptr<opj_image_t, void (*)(opj_image_t*)> image(
      opj_image_create(OPJ_UINT32(nc), parms.data(), nc == 3 ? OPJ_CLRSPC_SRGB : OPJ_CLRSPC_GRAY), opj_image_destroy);
  EXPECT_TRUE(image);
  image->x0 = opt.x0;
  image->y0 = opt.y0;
  image->x1 = opt.x0 + img.width * opt.subsampling;
  image->y1 = opt.y0 + img.height * opt.subsampling;
  for (int c = 0; c < nc; ++c) std::copy(img.planes[size_t(c)].begin(), img.planes[size_t(c)].end(), image->comps[c].data);

  opj_cparameters_t params;
  opj_set_default_encoder_parameters(&params);
  params.tcp_numlayers = 1;
  params.tcp_rates[0] = 0;
  params.cp_disto_alloc = 1;
  // The colour transform needs three like components.
  params.tcp_mct = nc == 3 && opt.subsampling == 1 &&
                   std::equal(img.precision.begin() + 1, img.precision.end(), img.precision.begin());
  const uint32_t smallest = std::min({img.width, img.height, opt.tile_width ? opt.tile_width : img.width,
                                      opt.tile_height ? opt.tile_height : img.height});
  params.numresolution = 1;
  while (params.numresolution < 4 && (uint32_t(1) << params.numresolution) <= smallest) ++params.numresolution;
  if (opt.tile_width) {
    params.tile_size_on = OPJ_TRUE;
    params.cp_tdx = int(opt.tile_width);
    params.cp_tdy = int(opt.tile_height);
    params.cp_tx0 = int(opt.x0);
    params.cp_ty0 = int(opt.y0);
  }
  std::unique_ptr<opj_codec_t, void (*)(opj_codec_t*)> codec(opj_create_compress(opt.format), opj_destroy_codec);
  EXPECT_TRUE(opj_setup_encoder(codec.get(), &params, image.get()));
  MemoryOutput out;
  std::unique_ptr<opj_stream_t, void (*)(opj_stream_t*)> stream(opj_stream_create(1 << 16, OPJ_FALSE),
                                                               opj_stream_destroy);
  opj_stream_set_user_data(stream.get(), &out, nullptr);
  opj_stream_set_write_function(stream.get(), write_output);
  opj_stream_set_skip_function(stream.get(), skip_output);
  opj_stream_set_seek_function(stream.get(), seek_output);
  const bool ok = opj_start_compress(codec.get(), image.get(), stream.get()) && opj_encode(codec.get(), stream.get()) &&
                  opj_end_compress(codec.get(), stream.get());
  EXPECT_TRUE(ok);
  return out.bytes;
}

// The block a plugin fills: pixel-interleaved, `isz(c)` low bytes per sample.
template <typename SampleBytes>
Buffer interleaved(const TestImage& img, size_t block_size, SampleBytes isz) {
  Buffer out(block_size, 0);
  const size_t pixels = size_t(img.width) * img.height, nc = size_t(img.components());
  for (size_t c = 0; c < nc; ++c)
    for (size_t p = 0; p < pixels; ++p)
      for (size_t k = 0; k < isz(c); ++k) out[(p * nc + c) * isz(c) + k] = uint8_t(uint32_t(img.planes[c][p]) >> (8 * k));
  return out;
}

Buffer planar_int32(const TestImage& img) {
  Buffer out;
  for (const auto& plane : img.planes)
    for (int32_t v : plane)
      for (int k = 0; k < 4; ++k) out.push_back(uint8_t(uint32_t(v) >> (8 * k)));
  return out;
}

Buffer by_component_layout(const TestImage& img, size_t block_size) {  // J2K, Grok
  return interleaved(img, block_size, [&](size_t c) { return size_t(img.precision[c] / 8); });
}
Buffer common_layout(const TestImage& img, size_t block_size) {  // HTJ2K
  const int max_bits = *std::max_element(img.precision.begin(), img.precision.end());
  return interleaved(img, block_size, [&](size_t) { return size_t(max_bits <= 8 ? 1 : 2); });
}

Buffer decode(uint8_t codec, const Buffer& in, size_t out_size) {
  Buffer out(out_size, 0xAA);  // not zero: the decoder must clear what the image leaves
  jpeg2000_decode(codec, in, out);
  return out;
}

TEST(Jpeg2000, EveryPluginLayoutOfJp2AndCodestreams) {
  for (OPJ_CODEC_FORMAT format : {OPJ_CODEC_J2K, OPJ_CODEC_JP2})
    for (int nc : {1, 3})
      for (int bits : {8, 16}) {
        SCOPED_TRACE(std::string(format == OPJ_CODEC_JP2 ? "JP2 " : "J2K ") + std::to_string(nc) + " x " +
                     std::to_string(bits) + " bits");
        const TestImage img = make_image(13, 7, std::vector<int>(size_t(nc), bits), false, uint32_t(nc * bits));
        const Buffer stream = encode(img, {.format = format});
        ASSERT_EQ(stream[0], format == OPJ_CODEC_JP2 ? 0x00 : 0xFF);
        const size_t block = size_t(13 * 7 * nc * bits / 8);
        EXPECT_EQ(decode(kCodecJ2k, stream, block), by_component_layout(img, block));
        EXPECT_EQ(decode(kCodecGrok, stream, block), by_component_layout(img, block));
        EXPECT_EQ(decode(kCodecHtj2k, stream, block), common_layout(img, block));
        EXPECT_EQ(decode(kCodecOpenHtj2k, stream, size_t(13 * 7 * nc * 4)), planar_int32(img));
      }
}

TEST(Jpeg2000, PrecisionsBetweenBytesFollowEachPlugin) {
  // 12 bits: J2K and Grok keep prec/8 = 1 low byte, HTJ2K 2 bytes.
  const TestImage img = make_image(9, 5, {12});
  const Buffer stream = encode(img);
  EXPECT_EQ(decode(kCodecJ2k, stream, 45), by_component_layout(img, 45));
  EXPECT_EQ(decode(kCodecHtj2k, stream, 90), common_layout(img, 90));
  // Mixed 8 and 16 bits: HTJ2K gives every component 2 bytes.
  const TestImage mixed = make_image(6, 4, {8, 16, 8});
  EXPECT_EQ(decode(kCodecHtj2k, encode(mixed), 144), common_layout(mixed, 144));
  // Under 8 bits J2K keeps no byte of the sample (prec/8 = 0): all zero.
  EXPECT_EQ(decode(kCodecJ2k, encode(make_image(4, 4, {4})), 16), Buffer(16, 0));
}

TEST(Jpeg2000, SignedSamplesGiveTheirLowBytes) {
  const TestImage img = make_image(8, 6, {16, 16, 16}, true);
  const Buffer stream = encode(img, {.format = OPJ_CODEC_JP2});
  EXPECT_EQ(decode(kCodecJ2k, stream, 288), by_component_layout(img, 288));
  EXPECT_EQ(decode(kCodecOpenHtj2k, stream, 576), planar_int32(img));
}

TEST(Jpeg2000, ImageSmallerThanTheBlockLeavesZeros) {
  // J2K, Grok and HTJ2K return the whole block, zero past the image.
  const TestImage img = make_image(5, 3, {8});
  const Buffer stream = encode(img);
  EXPECT_EQ(decode(kCodecJ2k, stream, 40), by_component_layout(img, 40));
  EXPECT_EQ(decode(kCodecHtj2k, stream, 40), common_layout(img, 40));
  // OpenHTJ2K returns the bytes it wrote, and c-blosc2 wants the whole block.
  EXPECT_THROW(decode(kCodecOpenHtj2k, stream, 64), FormatError);
}

TEST(Jpeg2000, TilesAndImageOffsets) {
  const TestImage img = make_image(40, 24, {8, 8, 8});
  const Buffer tiled = encode(img, {.format = OPJ_CODEC_JP2, .tile_width = 16, .tile_height = 10});
  EXPECT_EQ(decode(kCodecJ2k, tiled, 2880), by_component_layout(img, 2880));
  // Many tiles are taken while they average 64 pixels: 256 tiles of 8 x 8.
  const TestImage big = make_image(128, 128, {8});
  const Buffer small_tiles = encode(big, {.tile_width = 8, .tile_height = 8});
  EXPECT_EQ(decode(kCodecHtj2k, small_tiles, 16384), common_layout(big, 16384));
  // Samples start at (x0, y0) of the reference grid: the image is what follows.
  const TestImage moved = make_image(11, 6, {16});
  EXPECT_EQ(decode(kCodecJ2k, encode(moved, {.x0 = 7, .y0 = 3}), 132), by_component_layout(moved, 132));
}

// --- the float frame of J2K and HTJ2K ---

struct FloatFrame {
  uint8_t quant_bits = 16;
  uint16_t flags = 0;
  double scale_min = -2.5, scale_max = 7.25;
  uint16_t version = 1, header = 64;
  uint8_t nan_policy = 0;
};

Buffer float_frame(const FloatFrame& f, const Buffer& payload, uint64_t declared_payload) {
  Buffer out(64, 0);
  std::memcpy(out.data(), "B2JPF32", 8);
  out[8] = uint8_t(f.version), out[9] = uint8_t(f.version >> 8);
  out[10] = uint8_t(f.header), out[11] = uint8_t(f.header >> 8);
  out[12] = f.quant_bits;
  out[13] = f.nan_policy;
  out[14] = uint8_t(f.flags), out[15] = uint8_t(f.flags >> 8);
  store_le64(out.data() + 16, declared_payload);
  std::memcpy(out.data() + 24, &f.scale_min, 8);
  std::memcpy(out.data() + 32, &f.scale_max, 8);
  std::memcpy(out.data() + 40, &f.scale_min, 8);
  std::memcpy(out.data() + 48, &f.scale_max, 8);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}
Buffer float_frame(const FloatFrame& f, const Buffer& payload) { return float_frame(f, payload, payload.size()); }

// What the plugin computes: scale_min + q * ((scale_max - scale_min) / qmax) in double.
Buffer dequantised(const FloatFrame& f, const std::vector<int32_t>& q) {
  const double qmax = f.quant_bits == 8 ? 255.0 : 65535.0;
  Buffer out(q.size() * 4);
  for (size_t i = 0; i < q.size(); ++i) {
    const float v = float(f.scale_min + double(q[i]) * ((f.scale_max - f.scale_min) / qmax));
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  return out;
}

TEST(Jpeg2000FloatFrame, QuantisedSamplesScaleBack) {
  for (uint8_t codec : {kCodecJ2k, kCodecHtj2k})
    for (uint8_t bits : {8, 16})
      for (OPJ_CODEC_FORMAT format : {OPJ_CODEC_J2K, OPJ_CODEC_JP2}) {
        SCOPED_TRACE(std::to_string(codec) + " " + std::to_string(bits));
        const TestImage img = make_image(12, 10, {bits}, false, bits);
        FloatFrame f;
        f.quant_bits = bits;
        EXPECT_EQ(decode(codec, float_frame(f, encode(img, {.format = format})), 480), dequantised(f, img.planes[0]));
      }
}

TEST(Jpeg2000FloatFrame, PayloadMayBeShorterThanTheRest) {
  // payload_nbytes says where the image ends; trailing bytes are not read.
  const TestImage img = make_image(8, 8, {8});
  FloatFrame f;
  f.quant_bits = 8;
  Buffer frame = float_frame(f, encode(img));
  frame.insert(frame.end(), {1, 2, 3, 4});
  store_le64(frame.data() + 16, frame.size() - 64 - 4);
  EXPECT_EQ(decode(kCodecJ2k, frame, 256), dequantised(f, img.planes[0]));
}

TEST(Jpeg2000FloatFrame, ConstantBlockIsScaleMin) {
  FloatFrame f;
  f.flags = 4;
  f.scale_min = 0.1;  // (float)0.1, not 0.1 rounded any other way
  const float expected = float(0.1);
  for (uint8_t codec : {kCodecJ2k, kCodecHtj2k}) {
    const Buffer out = decode(codec, float_frame(f, {}), 40);
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(std::memcmp(out.data() + 4 * i, &expected, 4), 0);
  }
}

TEST(Jpeg2000FloatFrame, HostileFrames) {
  const Buffer inner = encode(make_image(4, 4, {16}));
  FloatFrame ok;
  EXPECT_NO_THROW(decode(kCodecJ2k, float_frame(ok, inner), 64));
  // payload_nbytes past the end, by one and by nearly 2^64
  EXPECT_THROW(decode(kCodecJ2k, float_frame(ok, inner, inner.size() + 1), 64), FormatError);
  EXPECT_THROW(decode(kCodecJ2k, float_frame(ok, inner, ~uint64_t(0)), 64), FormatError);
  EXPECT_THROW(decode(kCodecJ2k, float_frame(ok, inner, ~uint64_t(0) - 63), 64), FormatError);
  // a payload cut short of its image
  EXPECT_THROW(decode(kCodecJ2k, float_frame(ok, inner, inner.size() / 2), 64), FormatError);
  // a header cut short
  Buffer cut = float_frame(ok, inner);
  cut.resize(40);
  EXPECT_THROW(decode(kCodecJ2k, cut, 64), FormatError);
  FloatFrame f = ok;
  f.quant_bits = 12;
  EXPECT_THROW(decode(kCodecJ2k, float_frame(f, inner), 64), FormatError);
  f = ok, f.version = 2;
  EXPECT_THROW(decode(kCodecJ2k, float_frame(f, inner), 64), UnsupportedError);
  f = ok, f.header = 80;
  EXPECT_THROW(decode(kCodecJ2k, float_frame(f, inner), 64), UnsupportedError);
  f = ok, f.nan_policy = 1;
  EXPECT_THROW(decode(kCodecHtj2k, float_frame(f, inner), 64), UnsupportedError);
  // blocks that are not whole float32 items
  EXPECT_THROW(decode(kCodecJ2k, float_frame(ok, inner), 63), FormatError);
  // an inner image larger than the quantised block: 4x4 16-bit samples, 8 floats
  EXPECT_THROW(decode(kCodecJ2k, float_frame(ok, inner), 32), FormatError);
  // OpenHTJ2K and Grok have no float frame: not a codestream
  EXPECT_THROW(decode(kCodecOpenHtj2k, float_frame(ok, inner), 64), FormatError);
  EXPECT_THROW(decode(kCodecGrok, float_frame(ok, inner), 64), FormatError);
}

// --- known answers: blocks written by the plugins (python-blosc2 4.14.1) ---

// blosc2-j2k 0.4.0, Grok backend, JP2 file, lossless: uint8 (32, 24) array of
// (2*row + 3*col) % 256, num_resolutions=3. 280 bytes -> 768.
constexpr uint8_t kJ2kGrey[] = {
    0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20, 0x0d, 0x0a, 0x87, 0x0a, 0x00, 0x00, 0x00, 0x14,
    0x66, 0x74, 0x79, 0x70, 0x6a, 0x70, 0x32, 0x20, 0x00, 0x00, 0x00, 0x00, 0x6a, 0x70, 0x32, 0x20,
    0x00, 0x00, 0x00, 0x2d, 0x6a, 0x70, 0x32, 0x68, 0x00, 0x00, 0x00, 0x16, 0x69, 0x68, 0x64, 0x72,
    0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x18, 0x00, 0x01, 0x07, 0x07, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x0f, 0x63, 0x6f, 0x6c, 0x72, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00,
    0xcb, 0x6a, 0x70, 0x32, 0x63, 0xff, 0x4f, 0xff, 0x51, 0x00, 0x29, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x18, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x18, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x07,
    0x01, 0x01, 0xff, 0x52, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x04, 0x04, 0x00, 0x01,
    0xff, 0x5c, 0x00, 0x0a, 0x40, 0x40, 0x48, 0x48, 0x50, 0x48, 0x48, 0x50, 0xff, 0x64, 0x00, 0x22,
    0x00, 0x01, 0x43, 0x72, 0x65, 0x61, 0x74, 0x65, 0x64, 0x20, 0x62, 0x79, 0x20, 0x47, 0x72, 0x6f,
    0x6b, 0x20, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x20, 0x31, 0x31, 0x2e, 0x30, 0x2e, 0x30,
    0xff, 0x90, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x56, 0x00, 0x01, 0xff, 0x93, 0xdf, 0x81,
    0x40, 0x12, 0x26, 0x58, 0xb9, 0x52, 0xb5, 0xb8, 0xeb, 0x38, 0x35, 0x33, 0x78, 0x35, 0x19, 0xf4,
    0x47, 0x30, 0xf8, 0xc1, 0x46, 0xf7, 0xd5, 0x0a, 0x19, 0x1d, 0x7b, 0x3c, 0x00, 0xa8, 0x10, 0xc4,
    0x0f, 0xd5, 0x59, 0x2b, 0x81, 0xd6, 0x6c, 0xd1, 0x9f, 0xc0, 0x7c, 0x22, 0x40, 0x7c, 0x22, 0x00,
    0x2c, 0x5a, 0xff, 0x3f, 0x33, 0x63, 0x9f, 0x7f, 0xc0, 0x3a, 0x24, 0x03, 0xa2, 0x00, 0x4b, 0x26,
    0x04, 0x4f, 0x90, 0xe6, 0x2a, 0x3f, 0xff, 0xd9,
};

// blosc2-htj2k 0.4.2, OpenHTJ2K backend, raw Part-15 codestream, lossless:
// uint8 (32, 24, 3) array of that grey, it upside down, and 255 - it. 386 bytes -> 2304.
constexpr uint8_t kHtj2kRgb[] = {
    0xff, 0x4f, 0xff, 0x51, 0x00, 0x2f, 0x40, 0x00, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x20,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x20,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x07, 0x01, 0x01, 0x07, 0x01, 0x01,
    0x07, 0x01, 0x01, 0xff, 0x50, 0x00, 0x08, 0x00, 0x02, 0x00, 0x00, 0x00, 0x04, 0xff, 0x52, 0x00,
    0x0c, 0x00, 0x00, 0x00, 0x01, 0x01, 0x04, 0x04, 0x04, 0x40, 0x01, 0xff, 0x5c, 0x00, 0x10, 0x20,
    0x50, 0x58, 0x58, 0x60, 0x58, 0x58, 0x60, 0x58, 0x58, 0x58, 0x50, 0x50, 0x58, 0xff, 0x64, 0x00,
    0x17, 0x00, 0x01, 0x4f, 0x70, 0x65, 0x6e, 0x48, 0x54, 0x4a, 0x32, 0x4b, 0x20, 0x76, 0x65, 0x72,
    0x73, 0x69, 0x6f, 0x6e, 0x20, 0x30, 0xff, 0x90, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0a,
    0x00, 0x01, 0xff, 0x93, 0xc0, 0x13, 0x80, 0xc1, 0xb2, 0x89, 0x00, 0x21, 0x94, 0x00, 0xc0, 0x15,
    0x00, 0x84, 0x09, 0x6d, 0x6d, 0x00, 0x61, 0x94, 0x00, 0xc0, 0x13, 0x80, 0x3b, 0xb5, 0x53, 0x00,
    0x40, 0xb4, 0x00, 0xc0, 0x08, 0xe0, 0x04, 0xa0, 0x01, 0x13, 0x00, 0x31, 0xfe, 0x33, 0x53, 0x00,
    0xc0, 0x09, 0x00, 0xf6, 0x2b, 0x73, 0x00, 0xa0, 0x04, 0xc0, 0x48, 0xe4, 0x00, 0x23, 0x54, 0x00,
    0xc0, 0x09, 0xe0, 0x04, 0x80, 0x4c, 0xf2, 0x81, 0x7e, 0x4b, 0x75, 0x00, 0xca, 0x8c, 0xb4, 0x00,
    0xc0, 0x0a, 0x80, 0x75, 0xad, 0xf5, 0x97, 0xe0, 0x0b, 0x75, 0x00, 0xa0, 0x05, 0x40, 0xa2, 0x10,
    0xc0, 0x00, 0x00, 0x8c, 0xb6, 0x00, 0xc0, 0x0a, 0x98, 0x01, 0x30, 0x00, 0x00, 0xde, 0x29, 0xe9,
    0xe9, 0xe2, 0x77, 0x00, 0xfc, 0x07, 0xdf, 0xec, 0xb6, 0x00, 0xc0, 0x0a, 0xb0, 0x99, 0x99, 0x99,
    0x99, 0xde, 0xa7, 0xa7, 0xa7, 0xc2, 0x77, 0x00, 0xa0, 0x05, 0x58, 0x10, 0x00, 0x00, 0xfe, 0xfc,
    0x0c, 0xf7, 0xc9, 0xec, 0xb7, 0x00, 0xc0, 0x17, 0x69, 0x00, 0x55, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x27, 0x00, 0x06, 0xa7, 0x00, 0x06, 0xa7, 0x00, 0x06, 0xa7, 0x00, 0x06,
    0xa7, 0x00, 0x06, 0xa7, 0x00, 0x06, 0xa7, 0x00, 0x06, 0xab, 0x15, 0x2a, 0x54, 0xad, 0xbc, 0x01,
    0xff, 0x7f, 0xff, 0x72, 0xba, 0xeb, 0xae, 0xba, 0x98, 0x00, 0xc0, 0x16, 0x90, 0xdb, 0xb6, 0x6d,
    0xdb, 0xb6, 0x6d, 0xf3, 0xfe, 0xa7, 0xa7, 0xa7, 0xa7, 0xa7, 0xa7, 0xa7, 0x42, 0x7c, 0x00, 0xa0,
    0x0a, 0xe0, 0x56, 0x55, 0x55, 0xff, 0x72, 0x81, 0x5e, 0xfd, 0xd7, 0xbf, 0x75, 0xec, 0xbb, 0x00,
    0xff, 0xd9,
};

// blosc2-j2k 0.4.0, Grok backend, float_mode="uint8", num_resolutions=3: float32
// (32, 32) array of (row + col) * 0.25 - 1 (scale -1 .. 14.5). 443 bytes -> 4096;
// python-blosc2 reads bytes of FNV-1a 64 hash 0xda98ef24a74103c5.
constexpr uint8_t kJ2kFloat8[] = {
    0x42, 0x32, 0x4a, 0x50, 0x46, 0x33, 0x32, 0x00, 0x01, 0x00, 0x40, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x7b, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2d, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0xbf,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2d, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20, 0x0d, 0x0a, 0x87, 0x0a, 0x00, 0x00, 0x00, 0x14,
    0x66, 0x74, 0x79, 0x70, 0x6a, 0x70, 0x32, 0x20, 0x00, 0x00, 0x00, 0x00, 0x6a, 0x70, 0x32, 0x20,
    0x00, 0x00, 0x00, 0x2d, 0x6a, 0x70, 0x32, 0x68, 0x00, 0x00, 0x00, 0x16, 0x69, 0x68, 0x64, 0x72,
    0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x20, 0x00, 0x01, 0x07, 0x07, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x0f, 0x63, 0x6f, 0x6c, 0x72, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x01,
    0x2e, 0x6a, 0x70, 0x32, 0x63, 0xff, 0x4f, 0xff, 0x51, 0x00, 0x29, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x20, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x20, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x07,
    0x01, 0x01, 0xff, 0x52, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x04, 0x04, 0x00, 0x01,
    0xff, 0x5c, 0x00, 0x0a, 0x40, 0x40, 0x48, 0x48, 0x50, 0x48, 0x48, 0x50, 0xff, 0x64, 0x00, 0x22,
    0x00, 0x01, 0x43, 0x72, 0x65, 0x61, 0x74, 0x65, 0x64, 0x20, 0x62, 0x79, 0x20, 0x47, 0x72, 0x6f,
    0x6b, 0x20, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x20, 0x31, 0x31, 0x2e, 0x30, 0x2e, 0x30,
    0xff, 0x90, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb9, 0x00, 0x01, 0xff, 0x93, 0xdf, 0x81,
    0xb8, 0x12, 0x2b, 0x65, 0xc5, 0x1f, 0x2f, 0x80, 0x15, 0xb9, 0xa1, 0x7c, 0x48, 0xb1, 0x09, 0x26,
    0x42, 0xf1, 0x6a, 0xbf, 0x31, 0xb7, 0xf5, 0x3a, 0x57, 0xb5, 0xc0, 0x82, 0x61, 0x77, 0x6f, 0x9d,
    0xb1, 0xba, 0x15, 0x5c, 0x35, 0xcd, 0x60, 0x20, 0xd4, 0xe6, 0xfe, 0xa5, 0x2d, 0x87, 0x41, 0x03,
    0x9f, 0x0e, 0x6e, 0xfb, 0xec, 0xdd, 0x4a, 0x7f, 0xc0, 0xf9, 0x06, 0x40, 0xf9, 0x06, 0x40, 0x0a,
    0x80, 0x36, 0xa1, 0x99, 0xe4, 0xca, 0x87, 0x80, 0x42, 0x50, 0x79, 0x3f, 0x03, 0x3d, 0xa6, 0x34,
    0x0e, 0xe0, 0x8e, 0x4d, 0x30, 0xac, 0xfd, 0xe8, 0xdf, 0x1f, 0x51, 0x03, 0xf6, 0x7c, 0x5c, 0x16,
    0x07, 0xc0, 0x7c, 0x2c, 0x40, 0x7c, 0x2d, 0x40, 0x0a, 0xd0, 0x5f, 0xa7, 0xc7, 0x86, 0x38, 0xdd,
    0xbb, 0x27, 0x53, 0x35, 0x6a, 0x4d, 0xb1, 0xbd, 0xa2, 0x47, 0x8b, 0x4f, 0x0e, 0x1b, 0xfd, 0x65,
    0x2c, 0xbf, 0x9d, 0xac, 0x29, 0x3e, 0xf7, 0x9d, 0xfd, 0xcd, 0xa2, 0xc8, 0xfb, 0xb1, 0x97, 0xa0,
    0xfc, 0xd9, 0xc7, 0xd5, 0x57, 0x03, 0x3a, 0xa9, 0x77, 0x10, 0x88, 0x13, 0x24, 0x6e, 0x44, 0x39,
    0x8d, 0x5e, 0xe6, 0x11, 0x5d, 0xa6, 0xd7, 0xa9, 0xc2, 0xff, 0xd9,
};

uint64_t fnv1a(const Buffer& bytes) {
  uint64_t h = 0xcbf29ce484222325;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3;
  return h;
}

TEST(Jpeg2000KnownAnswers, BlocksWrittenByThePlugins) {
  TestImage grey = make_image(24, 32, {8});
  for (uint32_t r = 0; r < 32; ++r)
    for (uint32_t c = 0; c < 24; ++c) grey.planes[0][r * 24 + c] = int32_t((2 * r + 3 * c) % 256);
  const Buffer j2k(std::begin(kJ2kGrey), std::end(kJ2kGrey));
  EXPECT_EQ(decode(kCodecJ2k, j2k, 768), by_component_layout(grey, 768));

  TestImage rgb = make_image(24, 32, {8, 8, 8});
  for (uint32_t r = 0; r < 32; ++r)
    for (uint32_t c = 0; c < 24; ++c) {
      rgb.planes[0][r * 24 + c] = grey.planes[0][r * 24 + c];
      rgb.planes[1][r * 24 + c] = grey.planes[0][(31 - r) * 24 + c];
      rgb.planes[2][r * 24 + c] = 255 - grey.planes[0][r * 24 + c];
    }
  const Buffer htj2k(std::begin(kHtj2kRgb), std::end(kHtj2kRgb));
  EXPECT_EQ(decode(kCodecHtj2k, htj2k, 2304), common_layout(rgb, 2304));

  const Buffer floats = decode(kCodecJ2k, Buffer(std::begin(kJ2kFloat8), std::end(kJ2kFloat8)), 4096);
  EXPECT_EQ(fnv1a(floats), 0xda98ef24a74103c5u);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) {
      float v;
      std::memcpy(&v, floats.data() + 4 * (r * 32 + c), 4);
      EXPECT_NEAR(v, (r + c) * 0.25 - 1, 15.5 / 255 / 2 + 1e-6);
    }
}

// --- hostile input ---

// SOC, then a SIZ marker segment with these fields, then `rest`.
struct SizFields {
  uint32_t width = 16, height = 16, x0 = 0, y0 = 0, tile_width = 16, tile_height = 16, tile_x0 = 0, tile_y0 = 0;
  uint16_t components = 1;
  uint8_t ssiz = 7, dx = 1, dy = 1;
  int length_delta = 0;
};

Buffer siz_codestream(const SizFields& f, const Buffer& rest = {0xFF, 0xD9}) {
  Buffer b = {0xFF, 0x4F, 0xFF, 0x51};
  auto be16 = [&](uint32_t v) { b.push_back(uint8_t(v >> 8)), b.push_back(uint8_t(v)); };
  auto be32 = [&](uint32_t v) { be16(v >> 16), be16(v & 0xFFFF); };
  be16(uint32_t(38 + 3 * f.components + f.length_delta));
  be16(0);
  for (uint32_t v : {f.width, f.height, f.x0, f.y0, f.tile_width, f.tile_height, f.tile_x0, f.tile_y0}) be32(v);
  be16(f.components);
  for (int c = 0; c < f.components; ++c) b.insert(b.end(), {f.ssiz, f.dx, f.dy});
  b.insert(b.end(), rest.begin(), rest.end());
  return b;
}

template <typename Error>
void expect_error(uint8_t codec, const Buffer& in, size_t out_size, const char* why) {
  SCOPED_TRACE(why);
  Buffer out(out_size);
  try {
    jpeg2000_decode(codec, in, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_GT(std::strlen(e.what()), 10u);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error: " << e.what();
  }
}

TEST(Jpeg2000Hostile, SizChecksComeBeforeOpenJpeg) {
  SizFields f;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 255, "16 x 16 into 255 bytes");
  f.width = f.height = 0xFFFFFFFF;
  f.tile_width = f.tile_height = 0xFFFFFFFF;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 1 << 20, "4G x 4G image");
  f.components = 3;
  expect_error<FormatError>(kCodecOpenHtj2k, siz_codestream(f), 1 << 20, "4G x 4G x 3 image");
  // 65,535 tiles of 1 x 1: OpenJPEG 2.5.0 alone fills 640 MB reading this header.
  f = {};
  f.width = 255, f.height = 257, f.tile_width = f.tile_height = 1;
  expect_error<UnsupportedError>(kCodecJ2k, siz_codestream(f), 65535, "65,535 tiles");
  f.width = f.height = 64, f.components = 16;
  f.tile_width = f.tile_height = 16;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 64 * 64, "16 components in a 1-component block");
  f.width = f.height = 128, f.components = 17, f.tile_width = f.tile_height = 8;
  expect_error<UnsupportedError>(kCodecJ2k, siz_codestream(f), 128 * 128 * 17, "256 tiles of 17 components");
  f.width = f.height = 64, f.components = 1, f.tile_width = f.tile_height = 4;
  expect_error<UnsupportedError>(kCodecJ2k, siz_codestream(f), 64 * 64, "256 tiles of 16 pixels");
  f.width = f.height = 0xFFFFFFFF, f.tile_width = f.tile_height = 1;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 1 << 20, "2^64 tiles");
  f = {};
  f.components = 0;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 256, "no component");
  f.components = 16384;
  expect_error<UnsupportedError>(kCodecOpenHtj2k, siz_codestream(f), 16 * 16 * 4 * 16384, "16,384 components");
  f.components = 16385;
  expect_error<FormatError>(kCodecOpenHtj2k, siz_codestream(f), 16 * 16 * 4 * 16385, "16,385 components");
  f = {};
  f.ssiz = 31;  // 32 bits
  expect_error<UnsupportedError>(kCodecOpenHtj2k, siz_codestream(f), 1024, "32-bit samples");
  f.ssiz = 0x80 | 37;  // signed 38 bits: the most the standard has
  expect_error<UnsupportedError>(kCodecOpenHtj2k, siz_codestream(f), 1024, "38-bit samples");
  f.ssiz = 0x7F;
  expect_error<FormatError>(kCodecOpenHtj2k, siz_codestream(f), 1024, "128-bit samples");
  f = {};
  f.dx = 0;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 256, "subsampling 0");
  f.dx = 2;
  expect_error<UnsupportedError>(kCodecJ2k, siz_codestream(f), 256, "subsampled");
  f = {};
  f.x0 = 16;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 256, "empty image");
  f = {};
  f.tile_width = 0;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 256, "tiles of width 0");
  f = {};
  f.x0 = 8, f.tile_x0 = 9;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 256, "tile grid after the image");
  f = {};
  f.length_delta = 3;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 256, "SIZ longer than its components");
  f.length_delta = -3;
  expect_error<FormatError>(kCodecJ2k, siz_codestream(f), 256, "SIZ shorter than its components");
  // A well-formed SIZ, then nothing OpenJPEG can use.
  expect_error<FormatError>(kCodecJ2k, siz_codestream({}), 256, "no COD, no tiles");
  expect_error<FormatError>(kCodecJ2k, siz_codestream({}, {}), 256, "SIZ then the end");
}

TEST(Jpeg2000Hostile, ComponentsMustMatchTheBlock) {
  const Buffer rgb = encode(make_image(8, 8, {8, 8, 8}));
  expect_error<FormatError>(kCodecJ2k, rgb, 64, "3 components into a 1-component block");
  expect_error<FormatError>(kCodecHtj2k, rgb, 191, "one byte short");
  expect_error<FormatError>(kCodecOpenHtj2k, rgb, 8 * 8 * 4, "OpenHTJ2K: 3 planes into 1");
  expect_error<FormatError>(kCodecOpenHtj2k, rgb, 8 * 8 * 4 * 3 + 4, "OpenHTJ2K: a block larger than 3 planes");
  const Buffer deep = encode(make_image(8, 8, {16}));
  expect_error<FormatError>(kCodecJ2k, deep, 64, "16-bit samples into an 8-bit block");
  expect_error<FormatError>(kCodecJ2k, deep, 0, "an empty block");
}

TEST(Jpeg2000Hostile, TruncatedStreamsFail) {
  for (OPJ_CODEC_FORMAT format : {OPJ_CODEC_J2K, OPJ_CODEC_JP2}) {
    const TestImage img = make_image(10, 6, {8, 8, 8});
    const Buffer whole = encode(img, {.format = format});
    for (size_t n = 0; n < whole.size(); ++n) {
      SCOPED_TRACE(std::to_string(n) + " of " + std::to_string(whole.size()) + " bytes");
      Buffer out(180);
      const Buffer cut(whole.begin(), whole.begin() + std::ptrdiff_t(n));
      EXPECT_THROW(jpeg2000_decode(kCodecJ2k, cut, out), FormatError);
    }
  }
}

TEST(Jpeg2000Hostile, Jp2BoxesAreChecked) {
  const Buffer jp2 = encode(make_image(8, 8, {8}), {.format = OPJ_CODEC_JP2});
  EXPECT_NO_THROW(decode(kCodecJ2k, jp2, 64));
  // The file's boxes: signature, ftyp, jp2h, then jp2c (its length at `at`).
  size_t at = 0;
  while (at + 8 <= jp2.size() && std::memcmp(jp2.data() + at + 4, "jp2c", 4) != 0) at += load_be32(jp2.data() + at);
  ASSERT_LT(at + 8, jp2.size());
  Buffer bad = jp2;
  store_be32(bad.data() + at, uint32_t(jp2.size() - at + 1));
  expect_error<FormatError>(kCodecJ2k, bad, 64, "jp2c box past the end");
  bad = jp2;
  store_be32(bad.data() + at, 7);
  expect_error<FormatError>(kCodecJ2k, bad, 64, "box of 7 bytes");
  bad = jp2;
  std::memcpy(bad.data() + at + 4, "xxxx", 4);
  expect_error<FormatError>(kCodecJ2k, bad, 64, "no jp2c box");
  bad = jp2;
  store_be32(bad.data() + at, 1);  // a 64-bit length follows: 2^63
  store_be64(bad.data() + at + 8, uint64_t(1) << 63);
  expect_error<FormatError>(kCodecJ2k, bad, 64, "XL box past the end");
  // A palette inside jp2h: length 8 + 3 + 2 entries x 1 channel.
  const size_t jp2h = 12 + load_be32(jp2.data() + 12);
  ASSERT_EQ(std::memcmp(jp2.data() + jp2h + 4, "jp2h", 4), 0);
  const Buffer pclr = {0, 0, 0, 13, 'p', 'c', 'l', 'r', 0, 2, 1, 7, 10, 20};
  bad = jp2;
  bad.insert(bad.begin() + std::ptrdiff_t(jp2h + 8), pclr.begin(), pclr.end());
  store_be32(bad.data() + jp2h, load_be32(bad.data() + jp2h) + uint32_t(pclr.size()));
  expect_error<UnsupportedError>(kCodecJ2k, bad, 64, "palette");
}

TEST(Jpeg2000Hostile, GarbageAndCorruptionNeverCrash) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    Buffer junk(size_t(rng() % 300));
    for (auto& b : junk) b = uint8_t(rng());
    if (round % 2 && junk.size() >= 4) junk[0] = 0xFF, junk[1] = 0x4F, junk[2] = 0xFF, junk[3] = 0x51;
    Buffer out(256);
    for (uint8_t codec : {kCodecOpenHtj2k, kCodecGrok, kCodecJ2k, kCodecHtj2k})
      EXPECT_THROW(jpeg2000_decode(codec, junk, out), FormatError);
  }
  // Every byte of a valid codestream flipped in turn: an error or some image,
  // never a crash (JPEG 2000 has no checksum, so some flips decode).
  const Buffer whole = encode(make_image(12, 9, {8, 8, 8}));
  for (size_t i = 0; i < whole.size(); ++i) {
    Buffer bad = whole;
    bad[i] ^= uint8_t(1 + rng() % 255);
    Buffer out(324);
    try {
      jpeg2000_decode(kCodecJ2k, bad, out);
    } catch (const FormatError&) {
    }
  }
}

// Debian's OpenJPEG keeps its assert()s, and one byte changed in the HT
// code-blocks of kHtj2kRgb fails one (ht_dec.c mel_init): that block is an error,
// the process lives on, and the next block decodes.
TEST(Jpeg2000Hostile, OpenJpegAssertionIsABadBlock) {
  Buffer bad(std::begin(kHtj2kRgb), std::end(kHtj2kRgb));
  bad[339] = 0xB2;
  Buffer out(2304);
  try {
    jpeg2000_decode(kCodecHtj2k, bad, out);
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("OpenJPEG"), std::string::npos) << e.what();
  }
  const Buffer good(std::begin(kHtj2kRgb), std::end(kHtj2kRgb));
  EXPECT_NO_THROW(decode(kCodecHtj2k, good, 2304));
}

TEST(Jpeg2000, ThreadsDecodeAtOnce) {
  const TestImage img = make_image(31, 17, {8, 8, 8});
  const Buffer stream = encode(img, {.format = OPJ_CODEC_JP2});
  const Buffer want = by_component_layout(img, 31 * 17 * 3);
  std::vector<std::thread> threads;
  std::vector<int> good(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) good[size_t(t)] += decode(kCodecJ2k, stream, want.size()) == want;
    });
  for (auto& t : threads) t.join();
  for (int g : good) EXPECT_EQ(g, 20);
}

}  // namespace
}  // namespace blosc2fs
