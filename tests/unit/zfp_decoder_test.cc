// Our zfp decoder against libzfp's zfp_decompress, byte for byte: fields libzfp
// encoded (every mode, both types, 1-4 dimensions, partial blocks, awkward
// values), garbage streams, cut streams, and the modes' parameters.
#include <gtest/gtest.h>
#include <zfp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "zfp_codec.h"
#include "zfp_decoder.h"

namespace blosc2fs {
namespace {

using Buffer = std::vector<uint8_t>;

struct Field {
  bool doubles;
  int ndim;
  std::array<size_t, 4> size;  // x, y, z, w
  size_t items() const { return size[0] * size[1] * size[2] * size[3]; }
  size_t bytes() const { return items() * (doubles ? 8 : 4); }
  std::string name() const {
    std::string s = doubles ? "f8 " : "f4 ";
    for (int d = 0; d < ndim; ++d) s += (d ? "x" : "") + std::to_string(size[size_t(d)]);
    return s;
  }
};

struct ZfpDecodeMode {
  uint8_t codec;
  uint8_t meta;
  std::string name() const {
    const char* m = codec == kCodecZfpAccuracy ? "acc" : codec == kCodecZfpPrecision ? "prec" : "rate";
    return std::string(m) + " " + std::to_string(meta);
  }
};

// As c-blosc2's zfp plugin sets the stream up.
void set_libzfp_mode(zfp_stream* z, const ZfpDecodeMode& m, const Field& f) {
  if (m.codec == kCodecZfpAccuracy) zfp_stream_set_accuracy(z, std::pow(10.0, double(int8_t(m.meta))));
  if (m.codec == kCodecZfpPrecision) zfp_stream_set_precision(z, std::min(m.meta + unsigned(3 + 2 * f.ndim), 64u));
  if (m.codec == kCodecZfpRate)
    zfp_stream_set_rate(z, m.meta / 100.0 * (f.doubles ? 64 : 32), f.doubles ? zfp_type_double : zfp_type_float,
                        unsigned(f.ndim), zfp_false);
}

ZfpMode our_mode(const ZfpDecodeMode& m, const Field& f) {
  if (m.codec == kCodecZfpAccuracy) return zfp_accuracy_mode(std::pow(10.0, double(int8_t(m.meta))));
  if (m.codec == kCodecZfpPrecision) return zfp_precision_mode(std::min(m.meta + unsigned(3 + 2 * f.ndim), 64u));
  return zfp_rate_mode(m.meta / 100.0 * (f.doubles ? 64 : 32), f.doubles, f.ndim);
}

struct Libzfp {
  zfp_stream* zfp = nullptr;
  zfp_field* field = nullptr;
  bitstream* bits = nullptr;
  Libzfp(const ZfpDecodeMode& m, const Field& f, void* data) {
    zfp = zfp_stream_open(nullptr);
    set_libzfp_mode(zfp, m, f);
    const zfp_type t = f.doubles ? zfp_type_double : zfp_type_float;
    const auto& n = f.size;
    switch (f.ndim) {
      case 1: field = zfp_field_1d(data, t, n[0]); break;
      case 2: field = zfp_field_2d(data, t, n[0], n[1]); break;
      case 3: field = zfp_field_3d(data, t, n[0], n[1], n[2]); break;
      default: field = zfp_field_4d(data, t, n[0], n[1], n[2], n[3]); break;
    }
  }
  ~Libzfp() {
    if (bits) stream_close(bits);
    zfp_field_free(field);
    zfp_stream_close(zfp);
  }
  size_t max_size() const { return zfp_stream_maximum_size(zfp, field); }
  void attach(Buffer& b) {
    bits = stream_open(b.data(), b.size());
    zfp_stream_set_bit_stream(zfp, bits);
    zfp_stream_rewind(zfp);
  }
};

Buffer libzfp_encode(const ZfpDecodeMode& m, const Field& f, Buffer values) {
  Libzfp z(m, f, values.data());
  Buffer out(z.max_size() + 8, 0);
  z.attach(out);
  const size_t n = zfp_compress(z.zfp, z.field);
  EXPECT_NE(n, 0u);
  out.resize((n + 7) / 8 * 8);  // as c-blosc2's 64-bit words pad it
  return out;
}

struct Decoded {
  Buffer values;
  bool complete;  // the stream held every bit the field took
};

// libzfp reads past the stream's end without a check: it gets zeros there.
Decoded libzfp_decode(const ZfpDecodeMode& m, const Field& f, const Buffer& stream) {
  Decoded d{Buffer(f.bytes(), 0), false};
  Libzfp z(m, f, d.values.data());
  Buffer padded(stream.size() + 2 * z.max_size() + 64, 0);
  std::copy(stream.begin(), stream.end(), padded.begin());
  z.attach(padded);
  zfp_decompress(z.zfp, z.field);
  d.complete = stream_rtell(z.bits) <= uint64_t(stream.size()) * 8;
  return d;
}

Decoded our_decode(const ZfpDecodeMode& m, const Field& f, const Buffer& stream) {
  Decoded d{Buffer(f.bytes() + 1, 0x5A), false};
  ZfpFieldShape shape;
  shape.doubles = f.doubles;
  shape.ndim = f.ndim;
  shape.size = f.size;
  // One byte off alignment, as blocks inside a chunk can be.
  d.complete = zfp_decode_field(our_mode(m, f), shape, stream, d.values.data() + 1);
  EXPECT_EQ(d.values[0], 0x5A);
  d.values.erase(d.values.begin());
  return d;
}

// Compares where both decoders finish; values only when both read whole streams
// (what a short stream leaves in out is not part of the contract).
void expect_same_decode(const ZfpDecodeMode& m, const Field& f, const Buffer& stream, const std::string& what) {
  const Decoded ref = libzfp_decode(m, f, stream);
  const Decoded ours = our_decode(m, f, stream);
  ASSERT_EQ(ours.complete, ref.complete) << what;
  if (ref.complete && ours.values != ref.values) {
    const auto diff = std::mismatch(ours.values.begin(), ours.values.end(), ref.values.begin());
    FAIL() << what << ": first difference at byte " << (diff.first - ours.values.begin());
  }
}

enum class Data { kSmooth, kRandomBits, kZeros, kTiny, kSpecials, kHuge, kMixed, kSteps };
constexpr Data kAllData[] = {Data::kSmooth, Data::kRandomBits, Data::kZeros, Data::kTiny,
                             Data::kSpecials, Data::kHuge, Data::kMixed, Data::kSteps};
const char* data_name(Data d) {
  static const char* names[] = {"smooth", "random bits", "zeros", "tiny", "inf/nan", "huge", "mixed", "steps"};
  return names[int(d)];
}

template <typename T>
Buffer make_values(Data kind, size_t items, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<T> v(items);
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T denorm = std::numeric_limits<T>::denorm_min(), big = std::numeric_limits<T>::max();
  for (size_t i = 0; i < items; ++i) {
    const double t = double(i);
    switch (kind) {
      case Data::kSmooth: v[i] = T(30 * std::sin(t * 0.07) + 5 * std::cos(t * 0.011) + 0.01 * unit(rng)); break;
      case Data::kRandomBits: {
        const uint64_t r = rng();
        std::memcpy(&v[i], &r, sizeof(T));
        break;
      }
      case Data::kZeros: v[i] = (i % 3 == 0) ? T(-0.0) : T(0); break;
      case Data::kTiny: v[i] = T(denorm * T(double(rng() % 1000))) * (i % 2 ? T(1) : T(-1)); break;
      case Data::kSpecials: {
        const T specials[] = {inf, -inf, nan, T(1), T(-2.5), T(0), big, -big};
        v[i] = (rng() % 4 == 0) ? specials[rng() % 8] : T(unit(rng) * 100);
        break;
      }
      case Data::kHuge: v[i] = T(big * T(unit(rng))); break;
      case Data::kMixed: {
        const T scales[] = {T(1e-30), T(1), T(1e30), T(0), denorm, big / T(4)};
        v[i] = T(scales[(i / 7) % 6] * T(unit(rng)));
        break;
      }
      case Data::kSteps: v[i] = T(double(int64_t(i / 5) % 9 - 4) * 0.25); break;
    }
  }
  Buffer b(items * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Buffer make_values(Data kind, const Field& f, uint32_t seed) {
  return f.doubles ? make_values<double>(kind, f.items(), seed) : make_values<float>(kind, f.items(), seed);
}

std::vector<Field> fields() {
  const std::vector<std::pair<int, std::array<size_t, 4>>> shapes = {
      {1, {4, 1, 1, 1}},   {1, {1, 1, 1, 1}},    {1, {3, 1, 1, 1}},   {1, {37, 1, 1, 1}},  {1, {256, 1, 1, 1}},
      {2, {4, 4, 1, 1}},   {2, {5, 9, 1, 1}},    {2, {17, 6, 1, 1}},  {2, {1, 3, 1, 1}},   {2, {32, 16, 1, 1}},
      {3, {4, 4, 4, 1}},   {3, {5, 6, 7, 1}},    {3, {9, 2, 13, 1}},  {3, {16, 8, 8, 1}},  {4, {4, 4, 4, 4}},
      {4, {5, 4, 6, 7}},   {4, {3, 1, 2, 5}},    {4, {8, 5, 4, 9}}};
  std::vector<Field> out;
  for (bool doubles : {false, true})
    for (const auto& [ndim, size] : shapes) out.push_back(Field{doubles, ndim, size});
  return out;
}

std::vector<ZfpDecodeMode> modes() {
  std::vector<ZfpDecodeMode> out;
  for (int meta : {255, 254, 253, 252, 251, 250, 0, 1, 3, 20, 127, 128, 200, 240})
    out.push_back({kCodecZfpAccuracy, uint8_t(meta)});
  for (int meta : {0, 1, 2, 5, 10, 16, 20, 25, 30, 40, 50, 53, 60, 255})
    out.push_back({kCodecZfpPrecision, uint8_t(meta)});
  for (int meta : {1, 2, 5, 10, 13, 25, 33, 50, 64, 75, 90, 100, 150, 255})
    out.push_back({kCodecZfpRate, uint8_t(meta)});
  return out;
}

TEST(ZfpDecoder, ModesMatchLibzfp) {
  for (uint8_t codec : {kCodecZfpAccuracy, kCodecZfpPrecision, kCodecZfpRate})
    for (int meta = 0; meta < 256; ++meta)
      for (bool doubles : {false, true})
        for (int ndim = 1; ndim <= 4; ++ndim) {
          const ZfpDecodeMode m{codec, uint8_t(meta)};
          const Field f{doubles, ndim, {4, 4, 4, 4}};
          zfp_stream* z = zfp_stream_open(nullptr);
          set_libzfp_mode(z, m, f);
          unsigned minbits = 0, maxbits = 0, maxprec = 0;
          int minexp = 0;
          zfp_stream_params(z, &minbits, &maxbits, &maxprec, &minexp);
          zfp_stream_close(z);
          const ZfpMode ours = our_mode(m, f);
          EXPECT_EQ(ours.minbits, minbits) << m.name() << " " << f.name();
          EXPECT_EQ(ours.maxbits, maxbits) << m.name() << " " << f.name();
          EXPECT_EQ(ours.maxprec, maxprec) << m.name() << " " << f.name();
          EXPECT_EQ(ours.minexp, minexp) << m.name() << " " << f.name();
        }
}

// A stream of one nonzero coefficient, the i-th in zfp's order, at bit plane
// `plane` of 32: checks the order of coefficients, the transform and the scaling.
Buffer one_coefficient_stream(int ndim, int i, int plane, unsigned exponent) {
  const int size = 1 << (2 * ndim);
  Buffer b;
  size_t pos = 0;
  auto bit = [&](bool v) {
    if (pos / 8 >= b.size()) b.push_back(0);
    if (v) b[pos / 8] |= uint8_t(1u << (pos % 8));
    ++pos;
  };
  bit(true);
  for (int k = 0; k < 8; ++k) bit((exponent >> k) & 1);
  for (int k = 31; k > plane; --k) bit(false);
  bit(true);
  for (int z = 0; z < i; ++z) bit(false);
  if (i < size - 1) bit(true);
  if (i + 1 < size) bit(false);
  for (int k = plane - 1; k >= 0; --k) {
    for (int z = 0; z <= i; ++z) bit(false);
    if (i + 1 < size) bit(false);
  }
  return b;
}

TEST(ZfpDecoder, CoefficientOrderTransformAndScale) {
  for (int ndim = 1; ndim <= 4; ++ndim)
    for (int i = 0; i < (1 << (2 * ndim)); ++i)
      for (int plane : {0, 4, 17, 30, 31})
        for (unsigned exponent : {0u, 1u, 100u, 127u, 200u, 255u}) {
          const Field f{false, ndim, {4, ndim > 1 ? 4u : 1u, ndim > 2 ? 4u : 1u, ndim > 3 ? 4u : 1u}};
          const ZfpDecodeMode m{kCodecZfpPrecision, 255};
          expect_same_decode(m, f, one_coefficient_stream(ndim, i, plane, exponent),
                             "coefficient " + std::to_string(i) + " plane " + std::to_string(plane) + " exponent " +
                                 std::to_string(exponent) + " " + f.name());
        }
}

TEST(ZfpDecoder, MatchesLibzfpOnEncodedFields) {
  uint32_t seed = 1;
  size_t compared = 0;
  for (const Field& f : fields())
    for (Data data : kAllData) {
      const Buffer values = make_values(data, f, seed++);
      for (const ZfpDecodeMode& m : modes()) {
        const Buffer stream = libzfp_encode(m, f, values);
        const std::string what = f.name() + ", " + data_name(data) + ", " + m.name();
        expect_same_decode(m, f, stream, what);
        if (::testing::Test::HasFatalFailure()) return;
        ++compared;
      }
    }
  EXPECT_GT(compared, 5000u);
}

// Larger fields in the benchmark's shapes (2-D floats) and every rank, so that
// many blocks of every kind follow each other in one stream.
TEST(ZfpDecoder, MatchesLibzfpOnLargerFields) {
  const Field big[] = {{false, 2, {1024, 16, 1, 1}}, {true, 2, {130, 33, 1, 1}}, {false, 3, {30, 17, 9, 1}},
                       {true, 3, {16, 16, 16, 1}},    {false, 1, {5000, 1, 1, 1}}, {true, 4, {9, 8, 7, 6}}};
  for (const Field& f : big)
    for (Data data : {Data::kSmooth, Data::kMixed, Data::kRandomBits})
      for (const ZfpDecodeMode& m : {ZfpDecodeMode{kCodecZfpAccuracy, 253}, ZfpDecodeMode{kCodecZfpAccuracy, 250}, ZfpDecodeMode{kCodecZfpPrecision, 16},
                            ZfpDecodeMode{kCodecZfpPrecision, 60}, ZfpDecodeMode{kCodecZfpRate, 50}, ZfpDecodeMode{kCodecZfpRate, 7}})
        expect_same_decode(m, f, libzfp_encode(m, f, make_values(data, f, 99)),
                           f.name() + ", " + data_name(data) + ", " + m.name());
}

// Garbage decodes as libzfp decodes it: same values, wrapping arithmetic, fixed
// rates running out in the middle of a plane, and the same verdict on length.
TEST(ZfpDecoder, MatchesLibzfpOnGarbage) {
  std::mt19937 rng(7);
  for (const Field& f : fields())
    for (const ZfpDecodeMode& m : modes())
      for (size_t length : {size_t(0), size_t(3), size_t(40), size_t(700), size_t(6000)}) {
        Buffer stream(length);
        // Some streams of mostly ones: long runs, every coefficient significant early.
        const bool ones = rng() % 3 == 0;
        for (uint8_t& b : stream) b = ones ? uint8_t(rng() | rng() | rng()) : uint8_t(rng());
        expect_same_decode(m, f, stream, f.name() + ", " + m.name() + ", garbage of " + std::to_string(length));
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// Every cut of a stream: refused exactly when libzfp would read past the cut,
// the same values otherwise; no read outside the stream (the sanitizer build).
TEST(ZfpDecoder, CutStreams) {
  const Field cut_fields[] = {{false, 2, {9, 6, 1, 1}}, {true, 3, {5, 4, 6, 1}}, {false, 4, {4, 5, 4, 4}},
                              {true, 1, {23, 1, 1, 1}}};
  for (const Field& f : cut_fields)
    for (const ZfpDecodeMode& m : {ZfpDecodeMode{kCodecZfpAccuracy, 252}, ZfpDecodeMode{kCodecZfpPrecision, 30}, ZfpDecodeMode{kCodecZfpRate, 40}}) {
      const Buffer stream = libzfp_encode(m, f, make_values(Data::kSmooth, f, 5));
      for (size_t n = 0; n <= stream.size(); ++n) {
        // Exactly n bytes on the heap, so that ASan sees a read past them.
        const Buffer cut(stream.begin(), stream.begin() + ptrdiff_t(n));
        expect_same_decode(m, f, cut, f.name() + ", " + m.name() + ", cut to " + std::to_string(n));
      }
    }
}

// Through zfp_decode: a stream cut short is a FormatError, never a crash.
TEST(ZfpDecoder, CodecReportsShortStreams) {
  BlockGeometry g;
  g.typesize = 4;
  g.ndim = 2;
  g.blockshape[0] = 16;
  g.blockshape[1] = 64;
  const Field f{false, 2, {64, 16, 1, 1}};
  const ZfpDecodeMode m{kCodecZfpAccuracy, 253};
  const Buffer stream = libzfp_encode(m, f, make_values(Data::kSmooth, f, 3));
  Buffer out(f.bytes());
  EXPECT_NO_THROW(zfp_decode(m.codec, m.meta, stream, out, g));
  EXPECT_EQ(out, libzfp_decode(m, f, stream).values);
  for (size_t n : {size_t(0), size_t(1), stream.size() / 2, stream.size() - 9}) {
    const Buffer cut(stream.begin(), stream.begin() + ptrdiff_t(n));
    EXPECT_THROW(zfp_decode(m.codec, m.meta, cut, out, g), FormatError) << n;
  }
}

}  // namespace
}  // namespace blosc2fs
