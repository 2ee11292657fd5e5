// SSE2 shuffle kernels (SSE2 is part of every x86-64, so no flag and no CPU check).
//
// Byte shuffles are transposes of a (streams x items) byte matrix. One "perfect
// shuffle" round (unpacklo/hi of vector m with vector m + V/2) rotates the bits of
// the byte index left by one, so a transpose of 2^a x 2^b bytes is b or a rounds.
#include <cstring>

#include "shuffle_impl.h"

#if defined(__x86_64__)
#include <emmintrin.h>

namespace blosc2fs::shuffle_detail {
namespace {

// Everything below is forced inline and unrolled: the vectors must stay in registers.
#define B2FS_INLINE inline __attribute__((always_inline))

template <size_t V, int Rounds>
B2FS_INLINE void perfect_shuffle(__m128i (&x)[V]) {
  if constexpr (Rounds > 0) {
    __m128i y[V];
#pragma GCC unroll 16
    for (size_t m = 0; m < V / 2; ++m) {
      y[2 * m] = _mm_unpacklo_epi8(x[m], x[m + V / 2]);
      y[2 * m + 1] = _mm_unpackhi_epi8(x[m], x[m + V / 2]);
    }
#pragma GCC unroll 16
    for (size_t v = 0; v < V; ++v) x[v] = y[v];
    perfect_shuffle<V, Rounds - 1>(x);
  }
}

constexpr int log2_of(size_t v) { return v <= 1 ? 0 : 1 + log2_of(v / 2); }

B2FS_INLINE __m128i load(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
B2FS_INLINE void store(uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

// 16 items per step: T vectors of 16 item-major bytes -> 4 rounds -> T streams.
template <size_t T>
void shuffle_typed(const uint8_t* src, uint8_t* dst, size_t n) {
  const size_t vec_items = n / 16 * 16;
  for (size_t i = 0; i < vec_items; i += 16) {
    __m128i x[T];
#pragma GCC unroll 16
    for (size_t v = 0; v < T; ++v) x[v] = load(src + i * T + 16 * v);
    perfect_shuffle<T, 4>(x);
#pragma GCC unroll 16
    for (size_t k = 0; k < T; ++k) store(dst + k * n + i, x[k]);
  }
  shuffle_items_scalar(src, dst, n, T, vec_items, n);
}

// Stream k at streams[k]: the plain layout is streams[k] = src + k * n.
template <size_t T>
void unshuffle_typed(const uint8_t* const* streams, uint8_t* dst, size_t n) {
  const uint8_t* in[T];
#pragma GCC unroll 16
  for (size_t k = 0; k < T; ++k) in[k] = streams[k];
  const size_t vec_items = n / 16 * 16;
  for (size_t i = 0; i < vec_items; i += 16) {
    __m128i x[T];
#pragma GCC unroll 16
    for (size_t k = 0; k < T; ++k) x[k] = load(in[k] + i);
    perfect_shuffle<T, log2_of(T)>(x);
#pragma GCC unroll 16
    for (size_t v = 0; v < T; ++v) store(dst + i * T + 16 * v, x[v]);
  }
  unshuffle_stream_items_scalar(in, dst, T, vec_items, n);
}

// Returns false for the typesizes without a vector path.
bool unshuffle_streams_vector(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize) {
  switch (typesize) {
    case 2: unshuffle_typed<2>(streams, dst, n); return true;
    case 4: unshuffle_typed<4>(streams, dst, n); return true;
    case 8: unshuffle_typed<8>(streams, dst, n); return true;
    case 16: unshuffle_typed<16>(streams, dst, n); return true;
    default: return false;
  }
}

// The 8x8 bit transpose of transpose_bits_8x8, on both 64-bit lanes at once.
template <int Shift>
B2FS_INLINE __m128i delta_swap(__m128i x, __m128i mask) {
  const __m128i t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64(x, Shift)), mask);
  return _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64(t, Shift)));
}

B2FS_INLINE __m128i transpose_bits(__m128i x) {
  x = delta_swap<7>(x, _mm_set1_epi64x(0x00AA00AA00AA00AALL));
  x = delta_swap<14>(x, _mm_set1_epi64x(0x0000CCCC0000CCCCLL));
  return delta_swap<28>(x, _mm_set1_epi64x(0x00000000F0F0F0F0LL));
}

// 16 groups per step: a stream's 128 bytes, bit-transposed per group, then the
// (group, plane) byte matrix transposed into 8 plane rows of 16 (4 rounds).
void bytes_to_planes_sse2(const uint8_t* bytes, uint8_t* plane0, size_t plane_stride, size_t groups) {
  const size_t vec_groups = groups / 16 * 16;
  for (size_t g = 0; g < vec_groups; g += 16) {
    __m128i x[8];
#pragma GCC unroll 16
    for (size_t v = 0; v < 8; ++v) x[v] = transpose_bits(load(bytes + 8 * g + 16 * v));
    perfect_shuffle<8, 4>(x);
#pragma GCC unroll 16
    for (size_t k = 0; k < 8; ++k) store(plane0 + k * plane_stride + g, x[k]);
  }
  bytes_to_planes_scalar(bytes + 8 * vec_groups, plane0 + vec_groups, plane_stride, groups - vec_groups);
}

void planes_to_bytes_sse2(const uint8_t* plane0, size_t plane_stride, uint8_t* bytes, size_t groups) {
  const size_t vec_groups = groups / 16 * 16;
  for (size_t g = 0; g < vec_groups; g += 16) {
    __m128i x[8];
#pragma GCC unroll 16
    for (size_t k = 0; k < 8; ++k) x[k] = load(plane0 + k * plane_stride + g);
    perfect_shuffle<8, 3>(x);
#pragma GCC unroll 16
    for (size_t v = 0; v < 8; ++v) store(bytes + 8 * g + 16 * v, transpose_bits(x[v]));
  }
  planes_to_bytes_scalar(plane0 + vec_groups, plane_stride, bytes + 8 * vec_groups, groups - vec_groups);
}

}  // namespace

void shuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  const size_t n = typesize == 0 ? 0 : size / typesize;
  switch (typesize) {
    case 2: shuffle_typed<2>(src, dst, n); break;
    case 4: shuffle_typed<4>(src, dst, n); break;
    case 8: shuffle_typed<8>(src, dst, n); break;
    case 16: shuffle_typed<16>(src, dst, n); break;
    default: return shuffle_scalar(src, dst, size, typesize);
  }
  if (size > n * typesize) std::memcpy(dst + n * typesize, src + n * typesize, size - n * typesize);
}

void unshuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  const size_t n = typesize == 0 ? 0 : size / typesize;
  const uint8_t* streams[16];
  for (size_t k = 0; k < typesize && k < 16; ++k) streams[k] = src + k * n;
  if (typesize > 16 || !unshuffle_streams_vector(streams, dst, n, typesize))
    return unshuffle_scalar(src, dst, size, typesize);
  if (size > n * typesize) std::memcpy(dst + n * typesize, src + n * typesize, size - n * typesize);
}

void unshuffle_streams_sse2(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize) {
  if (!unshuffle_streams_vector(streams, dst, n, typesize)) unshuffle_streams_scalar(streams, dst, n, typesize);
}

void bitshuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  bitshuffle_by_streams(src, dst, size, typesize, shuffle_sse2, bytes_to_planes_sse2);
}

void bitunshuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  bitunshuffle_by_streams(src, dst, size, typesize, unshuffle_sse2, planes_to_bytes_sse2);
}

}  // namespace blosc2fs::shuffle_detail
#undef B2FS_INLINE
#endif
