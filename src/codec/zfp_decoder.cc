// zfp's lossy decoding, written from zfp's description of its algorithm: per block
// of 4^d values a nonzero flag, a shared exponent, bit planes of negabinary
// coefficients sent by group tests, a reordering by sequency, an inverse lifting
// transform and a scaling back to floating point.
//
// Where libzfp's behaviour is a choice rather than the algorithm (what a fixed
// rate does when it runs out mid-plane, integer wrap-around on hostile input) this
// file does what libzfp 1.0.0 does, because c-blosc2 decodes with libzfp and our
// reads must equal its bit for bit. zfp_decoder_test compares the two.
#include "zfp_decoder.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace blosc2fs {

ZfpMode zfp_accuracy_mode(double tolerance) {
  ZfpMode m;
  if (tolerance > 0) {
    // The largest power of two not above the tolerance, as frexp tells it.
    int e = 0;
    std::frexp(tolerance, &e);
    m.minexp = e - 1;
  }
  return m;
}

ZfpMode zfp_precision_mode(uint32_t precision) {
  ZfpMode m;
  m.maxprec = precision == 0 ? kZfpMaxPrec : std::min(precision, kZfpMaxPrec);
  return m;
}

ZfpMode zfp_rate_mode(double bits_per_value, bool doubles, int ndim) {
  ZfpMode m;
  const uint32_t values = 1u << (2 * ndim);
  // The same double arithmetic as zfp, so that rounding lands on the same bit count;
  // and room for at least the nonzero flag and the exponent.
  uint32_t bits = uint32_t(std::floor(values * bits_per_value + 0.5));
  bits = std::max(bits, doubles ? 1u + 11u : 1u + 8u);
  m.minbits = m.maxbits = bits;
  return m;
}

namespace {

// Reads the stream's bits from the lowest of each byte up, which is zfp's order
// for any word size on a little-endian machine. Keeps at least 56 of them in a
// 64-bit buffer after refill(); bits past the stream's end are zeros.
class BitReader {
 public:
  explicit BitReader(ByteSpan s) : data_(s.data()), size_(s.size()) {}

  void refill() {
    uint64_t w;
    if (next_ + 8 <= size_) [[likely]] {
      std::memcpy(&w, data_ + next_, 8);
      if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    } else {
      w = tail();
    }
    // Bits of w beyond the whole bytes taken are the stream's next bits too, so
    // the next refill ORs the same values onto them.
    buf_ |= w << avail_;
    const unsigned bytes = (63 - avail_) >> 3;
    next_ += bytes;
    avail_ += bytes * 8;
  }
  // The buffered bits (at least 56 valid after refill), next bit lowest.
  uint64_t peek() const { return buf_; }
  void consume(unsigned n) {
    buf_ >>= n;
    avail_ -= n;
  }
  // Up to 56 bits.
  uint64_t read(unsigned n) {
    refill();
    const uint64_t v = buf_ & low_bits(n);
    consume(n);
    return v;
  }
  uint64_t position() const { return uint64_t(next_) * 8 - avail_; }
  void skip(uint64_t n) {
    const uint64_t to = position() + n;
    next_ = size_t(to >> 3);
    buf_ = 0;
    avail_ = 0;
    refill();
    consume(unsigned(to & 7));
  }

  static uint64_t low_bits(unsigned n) { return (uint64_t(1) << n) - 1; }  // n < 64

 private:
  uint64_t tail() const {
    uint64_t w = 0;
    for (size_t i = 0; i < 8 && next_ < size_ && i < size_ - next_; ++i) w |= uint64_t(data_[next_ + i]) << (8 * i);
    return w;
  }

  const uint8_t* data_;
  size_t size_;
  size_t next_ = 0;  // the next byte to load
  uint64_t buf_ = 0;
  unsigned avail_ = 0;
};

// zfp's order of a block's coefficients, lowest sequency first: index i of the
// stream goes to position perm[i] of the block (x + 4y + 16z + 64w). Found by
// decoding one-coefficient streams with libzfp; ZfpDecoder.CoefficientOrder
// checks them again.
constexpr uint8_t kPerm1[4] = {0, 1, 2, 3};
constexpr uint8_t kPerm2[16] = {0, 1, 4, 5, 2, 8, 6, 9, 3, 12, 10, 7, 13, 11, 14, 15};
constexpr uint8_t kPerm3[64] = {0,  1,  4,  16, 20, 17, 5,  2,  8,  32, 21, 6,  18, 24, 9,  33,
                                36, 3,  12, 48, 22, 25, 37, 40, 34, 10, 7,  19, 28, 13, 49, 52,
                                41, 38, 26, 23, 29, 53, 11, 35, 44, 14, 50, 56, 42, 27, 39, 45,
                                30, 54, 57, 60, 51, 15, 43, 46, 58, 61, 55, 31, 62, 59, 47, 63};
constexpr uint8_t kPerm4[256] = {
    0,   1,   4,   16,  64,  5,   80,  17,  68,  65,  20,  2,   8,   32,  128, 84,  81,  69,  21,  6,   18,  66,
    24,  72,  9,   96,  33,  36,  129, 132, 144, 3,   12,  48,  192, 85,  82,  70,  22,  73,  25,  88,  37,  100,
    97,  148, 145, 133, 10,  160, 34,  136, 130, 40,  7,   19,  67,  28,  76,  13,  112, 49,  52,  193, 196, 208,
    86,  89,  101, 149, 161, 137, 41,  134, 38,  164, 26,  152, 146, 104, 98,  74,  83,  71,  23,  77,  29,  92,
    53,  116, 113, 212, 209, 197, 11,  35,  131, 44,  140, 14,  176, 50,  56,  194, 200, 224, 90,  165, 102, 153,
    150, 105, 168, 162, 138, 42,  87,  93,  117, 213, 27,  75,  99,  39,  135, 147, 108, 45,  141, 156, 30,  78,
    177, 180, 54,  114, 120, 57,  198, 210, 216, 201, 225, 228, 15,  240, 51,  204, 195, 60,  169, 166, 154, 106,
    91,  103, 151, 109, 157, 94,  181, 118, 121, 214, 217, 229, 163, 139, 43,  142, 46,  172, 58,  184, 178, 232,
    226, 202, 241, 205, 61,  199, 55,  244, 31,  220, 211, 124, 115, 79,  170, 167, 155, 107, 158, 110, 173, 122,
    185, 182, 233, 230, 218, 95,  245, 119, 221, 215, 125, 242, 206, 62,  203, 59,  248, 47,  236, 227, 188, 179,
    143, 171, 174, 186, 234, 246, 222, 126, 219, 123, 249, 111, 237, 231, 189, 183, 159, 252, 243, 207, 63,  175,
    250, 187, 238, 235, 190, 253, 247, 223, 127, 254, 251, 239, 191, 255};

template <int D>
constexpr const uint8_t* perm() {
  if constexpr (D == 1) return kPerm1;
  else if constexpr (D == 2) return kPerm2;
  else if constexpr (D == 3) return kPerm3;
  else return kPerm4;
}

template <typename T>
struct Traits;
template <>
struct Traits<float> {
  using UInt = uint32_t;
  using Int = int32_t;
  static constexpr unsigned kExponentBits = 8;
};
template <>
struct Traits<double> {
  using UInt = uint64_t;
  using Int = int64_t;
  static constexpr unsigned kExponentBits = 11;
};

// The zeros before the next one-bit among the next `limit` bits, consuming them
// and that one-bit; `limit` when there is none (then only `limit` bits go).
inline unsigned scan_for_one(BitReader& r, unsigned limit) {
  unsigned skipped = 0;
  for (;;) {
    r.refill();
    const unsigned chunk = std::min(limit - skipped, 56u);
    // A sentinel bit at `chunk` stops the count there.
    const unsigned t = unsigned(std::countr_zero(r.peek() | (uint64_t(1) << chunk)));
    if (t < chunk) {
      r.consume(t + 1);
      return skipped + t;
    }
    r.consume(chunk);
    skipped += chunk;
    if (skipped == limit) return skipped;
  }
}

// One bit plane's bits, coefficient i at bit i of word i / 64.
template <int S>
struct Plane {
  static constexpr int kWords = (S + 63) / 64;
  uint64_t w[kWords];
  void set(unsigned i) { w[i / 64] |= uint64_t(1) << (i % 64); }
};

// The first `count` coefficients' bits of a plane, sent as they are.
template <int S>
inline void read_verbatim(BitReader& r, Plane<S>& x, unsigned count) {
  if constexpr (S <= 32) {
    x.w[0] = r.read(count);
  } else {
    for (int k = 0; k < Plane<S>::kWords; ++k) {
      const unsigned in_word = std::min(count, 64u);
      count -= in_word;
      const unsigned low = std::min(in_word, 32u);
      uint64_t v = r.read(low);
      if (in_word > 32) v |= r.read(in_word - 32) << 32;
      x.w[k] = v;
    }
  }
}

// The decoded planes as a bit matrix: byte g of plane k holds coefficients 8g to
// 8g + 7. Each run of 16 planes is stored backwards (the first plane last), so
// that SSE2's movemask, which gathers the top bits of 16 bytes, reads one
// coefficient's 16 bits in the order of their weight.
template <typename UInt, int S>
struct PlaneMatrix {
  static constexpr int kIntPrec = int(sizeof(UInt) * 8);
  static constexpr int kGroups = (S + 7) / 8;
  alignas(16) uint8_t bytes[kGroups][kIntPrec];

  void clear() { std::memset(bytes, 0, sizeof(bytes)); }
  // Plane `index` counts from the most significant, 0.
  void put(unsigned index, const Plane<S>& x) {
    const unsigned at = (index & ~15u) + 15 - (index & 15);
    for (int g = 0; g < kGroups; ++g) bytes[g][at] = uint8_t(x.w[g / 8] >> (8 * (g % 8)));
  }
  // Transposes into coefficients: bit k of plane `index` is bit (kIntPrec - 1 -
  // index) of coefficient k.
  void get(UInt* coeff) const {
    for (int g = 0; g < kGroups; ++g) {
      UInt out[8] = {};
#if defined(__SSE2__)
      for (int c = 0; c < kIntPrec / 16; ++c) {
        __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(bytes[g] + 16 * c));
        const int shift = kIntPrec - 16 - 16 * c;
        // Each byte's top bit first: coefficient 7 of the group, then, doubling
        // every byte, 6 down to 0.
        for (int j = 7; j >= 0; --j) {
          out[j] |= UInt(unsigned(_mm_movemask_epi8(v))) << shift;
          v = _mm_add_epi8(v, v);
        }
      }
#else
      for (int k = 0; k < kIntPrec; ++k) {
        const unsigned from = (unsigned(k) & ~15u) + 15 - (unsigned(k) & 15);
        for (int j = 0; j < 8; ++j) out[j] |= UInt((bytes[g][from] >> j) & 1) << (kIntPrec - 1 - k);
      }
#endif
      for (int j = 0; j < 8 && 8 * g + j < S; ++j) coeff[8 * g + j] = out[j];
    }
  }
};

// Decodes the negabinary coefficients of one block, at most `maxbits` bits and
// `maxprec` planes (zfp's decode_ints). kBudget says whether maxbits can run out
// before the planes do; without it the bit count is not kept. Returns the bits read.
template <typename UInt, int S, bool kBudget>
uint32_t decode_coefficients(BitReader& r, uint32_t maxbits, uint32_t maxprec, UInt* coeff) {
  constexpr unsigned kIntPrec = sizeof(UInt) * 8;
  const unsigned planes = std::min<unsigned>(maxprec, kIntPrec);
  const uint64_t start = r.position();
  PlaneMatrix<UInt, S> matrix;
  matrix.clear();
  uint32_t bits = maxbits;
  unsigned n = 0;  // coefficients found significant so far: their bits come verbatim
  unsigned done = 0;
  for (; done < planes; ++done) {
    if constexpr (kBudget)
      if (bits == 0) break;
    Plane<S> x{};
    unsigned verbatim = n;
    if constexpr (kBudget) {
      verbatim = std::min<uint32_t>(n, bits);
      bits -= verbatim;
    }
    read_verbatim(r, x, verbatim);
    // Group tests: a one says another coefficient becomes significant in this
    // plane, the position of it coming as a run of zeros ended by a one (implied
    // for the last coefficient). A zero ends the plane.
    while (n < unsigned(S)) {
      if constexpr (kBudget) {
        if (bits == 0) break;
        --bits;
      }
      r.refill();
      const uint64_t ahead = r.peek();
      if (!(ahead & 1)) {
        r.consume(1);
        break;
      }
      unsigned limit = unsigned(S) - 1 - n;
      if constexpr (kBudget) limit = std::min<uint32_t>(limit, bits);
      unsigned zeros;
      if (limit <= 55) {
        zeros = unsigned(std::countr_zero((ahead >> 1) | (uint64_t(1) << limit)));
        r.consume(1 + zeros + (zeros < limit));
      } else {
        r.consume(1);
        zeros = scan_for_one(r, limit);
      }
      if constexpr (kBudget) bits -= zeros + (zeros < limit);
      // libzfp sets the bit where the run stopped even when maxbits cut it short.
      n += zeros;
      x.set(n);
      ++n;
    }
    matrix.put(done, x);
  }
  matrix.get(coeff);
  return uint32_t(r.position() - start);
}

// Right shift of the signed value, on its two's complement bits.
template <typename UInt>
inline UInt asr1(UInt v) {
  using Int = std::make_signed_t<UInt>;
  return UInt(Int(v) >> 1);
}

// zfp's inverse lifting step on four values `s` apart. Unsigned arithmetic wraps
// the way libzfp's signed arithmetic does in practice on hostile input.
template <typename UInt>
inline void inverse_lift(UInt* p, ptrdiff_t s) {
  UInt x = p[0], y = p[s], z = p[2 * s], w = p[3 * s];
  y += asr1(w);
  w -= asr1(y);
  y += w;
  w <<= 1;
  w -= y;
  z += x;
  x <<= 1;
  x -= z;
  y += z;
  z <<= 1;
  z -= y;
  w += x;
  x <<= 1;
  x -= w;
  p[0] = x;
  p[s] = y;
  p[2 * s] = z;
  p[3 * s] = w;
}

// The inverse transform along each axis, the slowest first (zfp's order: the
// steps round, so the order matters).
template <typename UInt, int D>
void inverse_transform(UInt* p) {
  constexpr int S = 1 << (2 * D);
  for (int axis = D - 1; axis >= 0; --axis) {
    const int stride = 1 << (2 * axis);
    for (int high = 0; high < S; high += 4 * stride)
      for (int low = 0; low < stride; ++low) inverse_lift(p + high + low, stride);
  }
}

// Decodes one block into `block` (zfp's decode_block for floats).
template <typename T, int D>
void decode_block(BitReader& r, const ZfpMode& mode, T* block) {
  using UInt = typename Traits<T>::UInt;
  using Int = typename Traits<T>::Int;
  constexpr int S = 1 << (2 * D);
  constexpr unsigned kEBits = Traits<T>::kExponentBits;
  constexpr int kEBias = (1 << (kEBits - 1)) - 1;
  r.refill();
  if (!(r.peek() & 1)) {
    r.consume(1);
    for (int i = 0; i < S; ++i) block[i] = 0;
    if (mode.minbits > 1) r.skip(mode.minbits - 1);
    return;
  }
  const int emax = int((r.peek() >> 1) & BitReader::low_bits(kEBits)) - kEBias;
  r.consume(1 + kEBits);
  const uint32_t header = 1 + kEBits;
  // Planes below 2^minexp are not coded; 2(d + 1) more cover the transform's gain.
  const int64_t wanted = int64_t(emax) - mode.minexp + 2 * D + 2;
  const uint32_t maxprec = uint32_t(std::clamp<int64_t>(wanted, 0, mode.maxprec));
  const uint32_t minbits = mode.minbits - std::min(header, mode.minbits);
  const uint32_t maxbits = mode.maxbits - header;  // the modes give maxbits >= header
  UInt coeff[S];
  const bool budget = (uint64_t(maxprec) + 1) * S - 1 > maxbits;
  const uint32_t bits = budget ? decode_coefficients<UInt, S, true>(r, maxbits, maxprec, coeff)
                               : decode_coefficients<UInt, S, false>(r, maxbits, maxprec, coeff);
  if (bits < minbits) r.skip(minbits - bits);
  // Negabinary to two's complement, back to the block's own order.
  constexpr UInt kNegabinary = UInt(~UInt(0) / 3 * 2);  // 0xaa...a
  UInt values[S];
  const uint8_t* order = perm<D>();
  for (int i = 0; i < S; ++i) values[order[i]] = UInt((coeff[i] ^ kNegabinary) - kNegabinary);
  inverse_transform<UInt, D>(values);
  // The integers are the values in units of 2^(emax - (bits - 2)).
  const T scale = std::ldexp(T(1), emax - int(sizeof(T) * 8 - 2));
  for (int i = 0; i < S; ++i) block[i] = T(scale * T(Int(values[i])));
}

template <typename T>
inline void store(uint8_t* out, size_t index, T v) {
  std::memcpy(out + index * sizeof(T), &v, sizeof(T));
}

template <typename T, int D>
bool decode_blocks(const ZfpMode& mode, const ZfpFieldShape& f, ByteSpan stream, uint8_t* out) {
  constexpr int S = 1 << (2 * D);
  BitReader r(stream);
  const uint64_t stream_bits = uint64_t(stream.size()) * 8;
  const size_t nx = f.size[0], ny = f.size[1], nz = f.size[2], nw = f.size[3];
  const size_t sy = nx, sz = nx * ny, sw = nx * ny * nz;
  T block[S];
  for (size_t w = 0; w < nw; w += 4)
    for (size_t z = 0; z < nz; z += 4)
      for (size_t y = 0; y < ny; y += 4)
        for (size_t x = 0; x < nx; x += 4) {
          decode_block<T, D>(r, mode, block);
          if (r.position() > stream_bits) return false;
          // A block reaching past the field's edge was coded padded to 4^d
          // values; only those inside the field are kept.
          const size_t ex = std::min<size_t>(4, nx - x);
          const size_t ey = D >= 2 ? std::min<size_t>(4, ny - y) : 1;
          const size_t ez = D >= 3 ? std::min<size_t>(4, nz - z) : 1;
          const size_t ew = D >= 4 ? std::min<size_t>(4, nw - w) : 1;
          const size_t first = x + y * sy + z * sz + w * sw;
          for (size_t l = 0; l < ew; ++l)
            for (size_t k = 0; k < ez; ++k)
              for (size_t j = 0; j < ey; ++j) {
                const T* src = block + 64 * l + 16 * k + 4 * j;
                const size_t row = first + l * sw + k * sz + j * sy;
                if (ex == 4) {
                  std::memcpy(out + row * sizeof(T), src, 4 * sizeof(T));
                } else {
                  for (size_t i = 0; i < ex; ++i) store(out, row + i, src[i]);
                }
              }
        }
  return true;
}

template <typename T>
bool decode_typed(const ZfpMode& mode, const ZfpFieldShape& f, ByteSpan stream, uint8_t* out) {
  switch (f.ndim) {
    case 1: return decode_blocks<T, 1>(mode, f, stream, out);
    case 2: return decode_blocks<T, 2>(mode, f, stream, out);
    case 3: return decode_blocks<T, 3>(mode, f, stream, out);
    default: return decode_blocks<T, 4>(mode, f, stream, out);
  }
}

}  // namespace

bool zfp_decode_field(const ZfpMode& mode, const ZfpFieldShape& field, ByteSpan stream, uint8_t* out) {
  return field.doubles ? decode_typed<double>(mode, field, stream, out) : decode_typed<float>(mode, field, stream, out);
}

}  // namespace blosc2fs
