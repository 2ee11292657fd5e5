// AVX2 shuffle kernels (this file alone is compiled with -mavx2; shuffle.cc only
// calls in after __builtin_cpu_supports("avx2")). Same perfect-shuffle networks as
// shuffle_sse2.cc, run on both 128-bit lanes at once: lane 0 works on the first half
// of a step's items and lane 1 on the second; the halves are split and joined with
// 128-bit loads and stores.
// Keep everything here in the unnamed namespace and free of shared inline code (see
// shuffle_impl.h).
#include <cstring>

#include "shuffle_impl.h"

#if defined(__AVX2__)
#include <immintrin.h>

namespace blosc2fs::shuffle_detail {
namespace {

// Everything below is forced inline and unrolled: the vectors must stay in registers.
#define B2FS_INLINE inline __attribute__((always_inline))

template <size_t V, int Rounds>
B2FS_INLINE void perfect_shuffle(__m256i (&x)[V]) {
  if constexpr (Rounds > 0) {
    __m256i y[V];
#pragma GCC unroll 16
    for (size_t m = 0; m < V / 2; ++m) {
      y[2 * m] = _mm256_unpacklo_epi8(x[m], x[m + V / 2]);
      y[2 * m + 1] = _mm256_unpackhi_epi8(x[m], x[m + V / 2]);
    }
#pragma GCC unroll 16
    for (size_t v = 0; v < V; ++v) x[v] = y[v];
    perfect_shuffle<V, Rounds - 1>(x);
  }
}

constexpr int log2_of(size_t v) { return v <= 1 ? 0 : 1 + log2_of(v / 2); }

B2FS_INLINE __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
B2FS_INLINE void store(uint8_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// Vectors holding bytes [16v, 16v+16) of two 16*V-byte halves at p and p + 16*V.
// 128-bit loads and inserts keep this off the shuffle port and never split a line
// more than a plain 16-byte access would.
template <size_t V>
B2FS_INLINE void split_halves(const uint8_t* p, __m256i (&x)[V]) {
#pragma GCC unroll 16
  for (size_t v = 0; v < V; ++v) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * v));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * V + 16 * v));
    x[v] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
  }
}

// The inverse of split_halves: lane 0 of every vector, then lane 1 of every vector.
template <size_t V>
B2FS_INLINE void join_halves(const __m256i (&x)[V], uint8_t* p) {
#pragma GCC unroll 16
  for (size_t v = 0; v < V; ++v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16 * v), _mm256_castsi256_si128(x[v]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16 * V + 16 * v), _mm256_extracti128_si256(x[v], 1));
  }
}

template <size_t T>
void shuffle_typed(const uint8_t* src, uint8_t* dst, size_t n) {
  const size_t vec_items = n / 32 * 32;
  for (size_t i = 0; i < vec_items; i += 32) {
    __m256i x[T];
    split_halves(src + i * T, x);
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
  const size_t vec_items = n / 32 * 32;
  for (size_t i = 0; i < vec_items; i += 32) {
    __m256i x[T];
#pragma GCC unroll 16
    for (size_t k = 0; k < T; ++k) x[k] = load(in[k] + i);
    perfect_shuffle<T, log2_of(T)>(x);
    join_halves(x, dst + i * T);
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

template <int Shift>
B2FS_INLINE __m256i delta_swap(__m256i x, __m256i mask) {
  const __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, Shift)), mask);
  return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, Shift)));
}

B2FS_INLINE __m256i transpose_bits(__m256i x) {
  x = delta_swap<7>(x, _mm256_set1_epi64x(0x00AA00AA00AA00AALL));
  x = delta_swap<14>(x, _mm256_set1_epi64x(0x0000CCCC0000CCCCLL));
  return delta_swap<28>(x, _mm256_set1_epi64x(0x00000000F0F0F0F0LL));
}

void bytes_to_planes_avx2(const uint8_t* bytes, uint8_t* plane0, size_t plane_stride, size_t groups) {
  const size_t vec_groups = groups / 32 * 32;
  for (size_t g = 0; g < vec_groups; g += 32) {
    __m256i x[8];
    split_halves(bytes + 8 * g, x);
#pragma GCC unroll 16
    for (size_t v = 0; v < 8; ++v) x[v] = transpose_bits(x[v]);
    perfect_shuffle<8, 4>(x);
#pragma GCC unroll 16
    for (size_t k = 0; k < 8; ++k) store(plane0 + k * plane_stride + g, x[k]);
  }
  bytes_to_planes_scalar(bytes + 8 * vec_groups, plane0 + vec_groups, plane_stride, groups - vec_groups);
}

void planes_to_bytes_avx2(const uint8_t* plane0, size_t plane_stride, uint8_t* bytes, size_t groups) {
  const size_t vec_groups = groups / 32 * 32;
  for (size_t g = 0; g < vec_groups; g += 32) {
    __m256i x[8];
#pragma GCC unroll 16
    for (size_t k = 0; k < 8; ++k) x[k] = load(plane0 + k * plane_stride + g);
    perfect_shuffle<8, 3>(x);
#pragma GCC unroll 16
    for (size_t v = 0; v < 8; ++v) x[v] = transpose_bits(x[v]);
    join_halves(x, bytes + 8 * g);
  }
  planes_to_bytes_scalar(plane0 + vec_groups, plane_stride, bytes + 8 * vec_groups, groups - vec_groups);
}

// With GFNI one affine instruction does the 8x8 bit transpose: result bit i of byte j is
// the parity of (matrix byte 7 - i) AND (byte j of the selector), so with selector byte j
// = 1 << j and matrix byte 7 - i = plane i, byte j collects bit j of every plane: item j.
// Loading the planes in reverse order puts plane i at matrix byte 7 - i.
// Not always_inline: a function without GFNI (the kernel's body) may call it, and once the
// body is inlined into the GFNI kernel the compilers inline it there too.
struct HardwareAffine {
  __attribute__((target("avx2,gfni"))) inline __m256i operator()(__m256i select, __m256i matrix) const {
    return _mm256_gf2p8affine_epi64_epi8(select, matrix, 0);
  }
};

// GF2P8AFFINEQB with imm8 0 computed from its definition in Intel's SDM, in software: lets a
// CPU without GFNI check everything else the GFNI kernel does.
struct ModelAffine {
  B2FS_INLINE __m256i operator()(__m256i select, __m256i matrix) const {
    alignas(32) uint8_t x[32], a[32], out[32];
    store(x, select);
    store(a, matrix);
    for (size_t q = 0; q < 32; q += 8)
      for (size_t j = 0; j < 8; ++j) {
        uint8_t result = 0;
        for (size_t i = 0; i < 8; ++i)
          result |= uint8_t((__builtin_popcount(a[q + 7 - i] & x[q + j]) & 1) << i);
        out[q + j] = result;
      }
    return load(out);
  }
};

template <class Affine>
B2FS_INLINE void planes_to_bytes_affine(const uint8_t* plane0, size_t plane_stride, uint8_t* bytes, size_t groups,
                                        Affine affine) {
  const __m256i select = _mm256_set1_epi64x(0x8040201008040201LL);
  const size_t vec_groups = groups / 32 * 32;
  for (size_t g = 0; g < vec_groups; g += 32) {
    __m256i x[8];
#pragma GCC unroll 16
    for (size_t k = 0; k < 8; ++k) x[k] = load(plane0 + (7 - k) * plane_stride + g);
    perfect_shuffle<8, 3>(x);
#pragma GCC unroll 16
    for (size_t v = 0; v < 8; ++v) x[v] = affine(select, x[v]);
    join_halves(x, bytes + 8 * g);
  }
  planes_to_bytes_scalar(plane0 + vec_groups, plane_stride, bytes + 8 * vec_groups, groups - vec_groups);
}

__attribute__((target("avx2,gfni"))) void planes_to_bytes_avx2_gfni(const uint8_t* plane0, size_t plane_stride,
                                                                     uint8_t* bytes, size_t groups) {
  planes_to_bytes_affine(plane0, plane_stride, bytes, groups, HardwareAffine{});
}

void planes_to_bytes_avx2_gfni_model(const uint8_t* plane0, size_t plane_stride, uint8_t* bytes, size_t groups) {
  planes_to_bytes_affine(plane0, plane_stride, bytes, groups, ModelAffine{});
}

}  // namespace

void shuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
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

void unshuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  const size_t n = typesize == 0 ? 0 : size / typesize;
  const uint8_t* streams[16];
  for (size_t k = 0; k < typesize && k < 16; ++k) streams[k] = src + k * n;
  if (typesize > 16 || !unshuffle_streams_vector(streams, dst, n, typesize))
    return unshuffle_scalar(src, dst, size, typesize);
  if (size > n * typesize) std::memcpy(dst + n * typesize, src + n * typesize, size - n * typesize);
}

void unshuffle_streams_avx2(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize) {
  if (!unshuffle_streams_vector(streams, dst, n, typesize)) unshuffle_streams_scalar(streams, dst, n, typesize);
}

void bitshuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  bitshuffle_by_streams(src, dst, size, typesize, shuffle_avx2, bytes_to_planes_avx2);
}

void bitunshuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  bitunshuffle_by_streams(src, dst, size, typesize, unshuffle_avx2, planes_to_bytes_avx2);
}

void bitunshuffle_avx2_gfni(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  bitunshuffle_by_streams(src, dst, size, typesize, unshuffle_avx2, planes_to_bytes_avx2_gfni);
}

void bitunshuffle_avx2_gfni_model(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  bitunshuffle_by_streams(src, dst, size, typesize, unshuffle_avx2, planes_to_bytes_avx2_gfni_model);
}

}  // namespace blosc2fs::shuffle_detail
#undef B2FS_INLINE
#endif
