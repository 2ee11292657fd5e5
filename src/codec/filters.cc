// Delta, bytedelta and precision truncation (see format-notes §5.6).
//
// The loops work on 64-bit words or SSE2 vectors, not bytes: byte loops over two
// buffers that may alias are not vectorized at -O2, and the prefix XOR/sum of the
// decoders is a serial chain unless a word's lanes are combined at once.
#include "filters.h"

#include <bit>
#include <cstring>

#include "bytes.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace blosc2fs {
namespace {

static_assert(std::endian::native == std::endian::little, "the word tricks below number bytes from the low end");

// XOR is bytewise, so a word of W bytes only matters for which trailing bytes are
// left alone and for the stride of the reference block's running XOR.
size_t delta_word_size(size_t typesize) {
  if (typesize == 1 || typesize == 2 || typesize == 4 || typesize == 8) return typesize;
  if (typesize != 0 && typesize % 8 == 0) return 8;
  return 1;
}

void xor_into(uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t size) {
  size_t p = 0;
  for (; p + 8 <= size; p += 8) store_le64(dst + p, load_le64(a + p) ^ load_le64(b + p));
  for (; p < size; ++p) dst[p] = a[p] ^ b[p];
}

// x[p] ^= x[p - word] for every p >= word: a running XOR per byte lane of the word.
// Each 64-bit chunk gets its own prefix XOR by shifts; the carry into the next chunk
// is the top lane of the output repeated, and since repeating is linear in XOR, the
// carry chain is a single XOR per chunk: carry ^= repeated top lane of the local prefix.
template <size_t Word>
void running_xor(uint8_t* data, size_t size) {
  constexpr unsigned kTop = 64 - 8 * Word;
  constexpr uint64_t kSplat = Word == 1   ? 0x0101010101010101ULL
                              : Word == 2 ? 0x0001000100010001ULL
                              : Word == 4 ? 0x0000000100000001ULL
                                          : 1;
  uint64_t carry = 0;
  size_t p = 0;
  for (; p + 8 <= size; p += 8) {
    uint64_t local = load_le64(data + p);
    if constexpr (Word == 1) local ^= local << 8;
    if constexpr (Word <= 2) local ^= local << 16;
    if constexpr (Word <= 4) local ^= local << 32;
    store_le64(data + p, local ^ carry);
    carry ^= (local >> kTop) * kSplat;
  }
  for (p = p < Word ? Word : p; p < size; ++p) data[p] ^= data[p - Word];
}

void running_xor(uint8_t* data, size_t size, size_t word) {
  switch (word) {
    case 1: return running_xor<1>(data, size);
    case 2: return running_xor<2>(data, size);
    case 4: return running_xor<4>(data, size);
    default: return running_xor<8>(data, size);
  }
}

}  // namespace

void delta_encode(const uint8_t* reference, const uint8_t* src, uint8_t* dst, size_t size, size_t typesize,
                  bool is_reference) {
  const size_t word = delta_word_size(typesize);
  const size_t body = size / word * word;
  if (is_reference) {
    const size_t head = body < word ? body : word;
    if (head != 0) std::memcpy(dst, src, head);
    if (body > head) xor_into(dst + head, src + head, src, body - head);
  } else {
    xor_into(dst, src, reference, body);
  }
  if (size > body) std::memcpy(dst + body, src + body, size - body);
}

void delta_decode(const uint8_t* reference, uint8_t* data, size_t size, size_t typesize, bool is_reference) {
  const size_t word = delta_word_size(typesize);
  const size_t body = size / word * word;
  if (is_reference) {
    running_xor(data, body, word);
  } else {
    xor_into(data, data, reference, body);
  }
}

namespace {

void byte_differences(const uint8_t* in, uint8_t* out, size_t count) {
  if (count == 0) return;
  out[0] = in[0];
  size_t j = 1;
#if defined(__SSE2__)
  for (; j + 16 <= count; j += 16) {
    const __m128i now = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j));
    const __m128i before = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j - 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm_sub_epi8(now, before));
  }
#endif
  for (; j < count; ++j) out[j] = static_cast<uint8_t>(in[j] - in[j - 1]);
}

// Prefix sum mod 256; in may equal out.
void byte_prefix_sums(const uint8_t* in, uint8_t* out, size_t count) {
  uint8_t sum = 0;
  size_t j = 0;
#if defined(__SSE2__)
  __m128i carry = _mm_setzero_si128();  // the running sum in every byte
  for (; j + 16 <= count; j += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j));
    v = _mm_add_epi8(v, _mm_slli_si128(v, 1));
    v = _mm_add_epi8(v, _mm_slli_si128(v, 2));
    v = _mm_add_epi8(v, _mm_slli_si128(v, 4));
    v = _mm_add_epi8(v, _mm_slli_si128(v, 8));
    v = _mm_add_epi8(v, carry);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), v);
    // Byte 15 to all sixteen: pair it up, spread the pair over the high half, then
    // that dword over the vector.
    carry = _mm_shuffle_epi32(_mm_shufflehi_epi16(_mm_unpackhi_epi8(v, v), 0xFF), 0xFF);
  }
  if (j != 0) sum = out[j - 1];
#endif
  for (; j < count; ++j) {
    sum = static_cast<uint8_t>(sum + in[j]);
    out[j] = sum;
  }
}

}  // namespace

void bytedelta_encode(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  if (typesize == 0) typesize = 1;
  const size_t channel = size / typesize;
  for (size_t c = 0; c < typesize; ++c) byte_differences(src + c * channel, dst + c * channel, channel);
  const size_t done = channel * typesize;
  if (size > done) std::memcpy(dst + done, src + done, size - done);
}

void bytedelta_decode(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  if (typesize == 0) typesize = 1;
  const size_t channel = size / typesize;
  for (size_t c = 0; c < typesize; ++c) byte_prefix_sums(src + c * channel, dst + c * channel, channel);
  const size_t done = channel * typesize;
  if (size > done) std::memmove(dst + done, src + done, size - done);
}

namespace {

template <typename Word>
void mask_words(const uint8_t* src, uint8_t* dst, size_t count, Word mask) {
  for (size_t i = 0; i < count; ++i) {
    Word w;
    std::memcpy(&w, src + i * sizeof(Word), sizeof(Word));
    w &= mask;
    std::memcpy(dst + i * sizeof(Word), &w, sizeof(Word));
  }
}

}  // namespace

bool trunc_prec(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize, int prec_bits) {
  if (typesize != 4 && typesize != 8) return false;
  const int mantissa = typesize == 4 ? 23 : 52;
  if (prec_bits > mantissa || prec_bits < -mantissa) return false;
  // Keeping no mantissa bit at all could turn a NaN into an infinity.
  const int zeroed = prec_bits >= 0 ? mantissa - prec_bits : -prec_bits;
  if (zeroed >= mantissa) return false;
  const size_t count = size / typesize;
  if (typesize == 4) {
    mask_words<uint32_t>(src, dst, count, ~((uint32_t{1} << zeroed) - 1));
  } else {
    mask_words<uint64_t>(src, dst, count, ~((uint64_t{1} << zeroed) - 1));
  }
  const size_t done = count * typesize;
  if (size > done) std::memmove(dst + done, src + done, size - done);
  return true;
}

bool int_trunc(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize, int bits) {
  if (typesize != 1 && typesize != 2 && typesize != 4 && typesize != 8) return false;
  const int width = int(8 * typesize);
  const int zeroed = bits >= 0 ? width - bits : -bits;
  if (zeroed < 0 || zeroed >= width) return false;
  const size_t count = size / typesize;
  const uint64_t keep = ~((uint64_t{1} << zeroed) - 1);
  switch (typesize) {
    case 1: mask_words<uint8_t>(src, dst, count, uint8_t(keep)); break;
    case 2: mask_words<uint16_t>(src, dst, count, uint16_t(keep)); break;
    case 4: mask_words<uint32_t>(src, dst, count, uint32_t(keep)); break;
    default: mask_words<uint64_t>(src, dst, count, keep); break;
  }
  const size_t done = count * typesize;
  if (size > done) std::memmove(dst + done, src + done, size - done);
  return true;
}

}  // namespace blosc2fs
