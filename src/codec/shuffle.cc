// Scalar shuffle kernels, the pieces the SIMD kernels share, and the run-time dispatch.
#include "shuffle.h"

#include <bit>
#include <cstdlib>
#include <cstring>

#include "shuffle_impl.h"

namespace blosc2fs {
namespace shuffle_detail {
namespace {

static_assert(std::endian::native == std::endian::little, "8 bytes are moved through a uint64, byte j at bits 8j");

// 8x8 bit-matrix transpose by delta swaps: byte j of x is row j; bit k of byte j
// moves to bit j of byte k. It is its own inverse.
uint64_t transpose_bits_8x8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
  x = x ^ t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
  x = x ^ t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
  x = x ^ t ^ (t << 28);
  return x;
}

void copy_tail(const uint8_t* src, uint8_t* dst, size_t done, size_t size) {
  if (size > done) std::memcpy(dst + done, src + done, size - done);
}

}  // namespace

void shuffle_items_scalar(const uint8_t* src, uint8_t* dst, size_t n, size_t typesize, size_t begin,
                          size_t end) {
  if (begin >= end) return;  // src/dst may be null for empty buffers
  for (size_t k = 0; k < typesize; ++k) {
    uint8_t* out = dst + k * n;
    const uint8_t* in = src + k;
    for (size_t i = begin; i < end; ++i) out[i] = in[i * typesize];
  }
}

void unshuffle_items_scalar(const uint8_t* src, uint8_t* dst, size_t n, size_t typesize, size_t begin,
                            size_t end) {
  if (begin >= end) return;  // src/dst may be null for empty buffers
  for (size_t k = 0; k < typesize; ++k) {
    const uint8_t* in = src + k * n;
    uint8_t* out = dst + k;
    for (size_t i = begin; i < end; ++i) out[i * typesize] = in[i];
  }
}

void unshuffle_stream_items_scalar(const uint8_t* const* streams, uint8_t* dst, size_t typesize, size_t begin,
                                   size_t end) {
  if (begin >= end) return;
  for (size_t k = 0; k < typesize; ++k) {
    const uint8_t* in = streams[k];
    uint8_t* out = dst + k;
    for (size_t i = begin; i < end; ++i) out[i * typesize] = in[i];
  }
}

void unshuffle_streams_scalar(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize) {
  if (typesize == 1) {
    if (n > 0) std::memcpy(dst, streams[0], n);
    return;
  }
  unshuffle_stream_items_scalar(streams, dst, typesize, 0, n);
}

void shuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  if (typesize <= 1 || size < typesize) return copy_tail(src, dst, 0, size);
  const size_t n = size / typesize;
  shuffle_items_scalar(src, dst, n, typesize, 0, n);
  copy_tail(src, dst, n * typesize, size);
}

void unshuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  if (typesize <= 1 || size < typesize) return copy_tail(src, dst, 0, size);
  const size_t n = size / typesize;
  unshuffle_items_scalar(src, dst, n, typesize, 0, n);
  copy_tail(src, dst, n * typesize, size);
}

void bytes_to_planes_scalar(const uint8_t* bytes, uint8_t* plane0, size_t plane_stride, size_t groups) {
  for (size_t g = 0; g < groups; ++g) {
    uint64_t x;
    std::memcpy(&x, bytes + 8 * g, 8);
    x = transpose_bits_8x8(x);
    for (size_t k = 0; k < 8; ++k) plane0[k * plane_stride + g] = static_cast<uint8_t>(x >> (8 * k));
  }
}

void planes_to_bytes_scalar(const uint8_t* plane0, size_t plane_stride, uint8_t* bytes, size_t groups) {
  for (size_t g = 0; g < groups; ++g) {
    uint64_t x = 0;
    for (size_t k = 0; k < 8; ++k) x |= uint64_t{plane0[k * plane_stride + g]} << (8 * k);
    x = transpose_bits_8x8(x);
    std::memcpy(bytes + 8 * g, &x, 8);
  }
}

// The reference: plane (b, k), b-major, holds bit k of byte b of every item, LSB first.
void bitshuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  if (typesize == 0) typesize = 1;
  const size_t plane = size / typesize / 8;
  for (size_t b = 0; b < typesize; ++b) {
    uint8_t* out = dst + b * 8 * plane;
    for (size_t g = 0; g < plane; ++g) {
      const uint8_t* in = src + g * 8 * typesize + b;
      uint64_t x = 0;
      for (size_t j = 0; j < 8; ++j) x |= uint64_t{in[j * typesize]} << (8 * j);
      x = transpose_bits_8x8(x);
      for (size_t k = 0; k < 8; ++k) out[k * plane + g] = static_cast<uint8_t>(x >> (8 * k));
    }
  }
  copy_tail(src, dst, plane * 8 * typesize, size);
}

void bitunshuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  if (typesize == 0) typesize = 1;
  const size_t plane = size / typesize / 8;
  for (size_t b = 0; b < typesize; ++b) {
    const uint8_t* in = src + b * 8 * plane;
    for (size_t g = 0; g < plane; ++g) {
      uint64_t x = 0;
      for (size_t k = 0; k < 8; ++k) x |= uint64_t{in[k * plane + g]} << (8 * k);
      x = transpose_bits_8x8(x);
      uint8_t* out = dst + g * 8 * typesize + b;
      for (size_t j = 0; j < 8; ++j) out[j * typesize] = static_cast<uint8_t>(x >> (8 * j));
    }
  }
  copy_tail(src, dst, plane * 8 * typesize, size);
}

namespace {

// The staging buffer of the stream-wise bit shuffle: small enough for the stack and
// L1, large enough that the per-slice calls cost nothing.
constexpr size_t kSliceBytes = 32768;
// Beyond this the slices would be too thin to pay; such typesizes are exotic anyway.
constexpr size_t kMaxSlicedTypesize = 1024;

size_t slice_items(size_t typesize) {
  const size_t fit = kSliceBytes / typesize;
  return fit >= 256 ? fit / 256 * 256 : fit / 8 * 8;
}

}  // namespace

void bitshuffle_by_streams(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize, ShuffleFn shuffle_fn,
                           BytesToPlanesFn to_planes) {
  if (typesize == 0) typesize = 1;
  if (typesize > kMaxSlicedTypesize) return bitshuffle_scalar(src, dst, size, typesize);
  const size_t plane = size / typesize / 8;
  const size_t items = plane * 8;
  if (typesize == 1) {
    to_planes(src, dst, plane, plane);
  } else {
    alignas(64) uint8_t slice[kSliceBytes];
    const size_t step = slice_items(typesize);
    for (size_t first = 0; first < items; first += step) {
      const size_t count = items - first < step ? items - first : step;
      shuffle_fn(src + first * typesize, slice, count * typesize, typesize);
      for (size_t b = 0; b < typesize; ++b) {
        to_planes(slice + b * count, dst + b * 8 * plane + first / 8, plane, count / 8);
      }
    }
  }
  copy_tail(src, dst, items * typesize, size);
}

void bitunshuffle_by_streams(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize,
                             ShuffleFn unshuffle_fn, PlanesToBytesFn to_bytes) {
  if (typesize == 0) typesize = 1;
  if (typesize > kMaxSlicedTypesize) return bitunshuffle_scalar(src, dst, size, typesize);
  const size_t plane = size / typesize / 8;
  const size_t items = plane * 8;
  if (typesize == 1) {
    to_bytes(src, plane, dst, plane);
  } else {
    alignas(64) uint8_t slice[kSliceBytes];
    const size_t step = slice_items(typesize);
    for (size_t first = 0; first < items; first += step) {
      const size_t count = items - first < step ? items - first : step;
      for (size_t b = 0; b < typesize; ++b) {
        to_bytes(src + b * 8 * plane + first / 8, plane, slice + b * count, count / 8);
      }
      unshuffle_fn(slice, dst + first * typesize, count * typesize, typesize);
    }
  }
  copy_tail(src, dst, items * typesize, size);
}

const ShuffleKernels& scalar_kernels() {
  static const ShuffleKernels kernels{"scalar", shuffle_scalar, unshuffle_scalar, bitshuffle_scalar,
                                      bitunshuffle_scalar};
  return kernels;
}

StreamsUnshuffleFn streams_unshuffle_for(const ShuffleKernels& kernels) {
  if (&kernels == avx2_kernels()) return unshuffle_streams_avx2;
  if (&kernels == sse2_kernels()) return unshuffle_streams_sse2;
  return unshuffle_streams_scalar;
}

#if defined(__x86_64__)
const ShuffleKernels* sse2_kernels() {
  static const ShuffleKernels kernels{"sse2", shuffle_sse2, unshuffle_sse2, bitshuffle_sse2, bitunshuffle_sse2};
  return &kernels;
}

bool gfni_supported() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("gfni"); }

const ShuffleKernels* avx2_kernels() {
  static const ShuffleKernels kernels{"avx2", shuffle_avx2, unshuffle_avx2, bitshuffle_avx2,
                                      gfni_supported() ? bitunshuffle_avx2_gfni : bitunshuffle_avx2};
  return __builtin_cpu_supports("avx2") ? &kernels : nullptr;
}
#else
bool gfni_supported() { return false; }
const ShuffleKernels* sse2_kernels() { return nullptr; }
const ShuffleKernels* avx2_kernels() { return nullptr; }
void unshuffle_streams_sse2(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize) {
  unshuffle_streams_scalar(streams, dst, n, typesize);
}
void unshuffle_streams_avx2(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize) {
  unshuffle_streams_scalar(streams, dst, n, typesize);
}
#endif

namespace {

bool simd_disabled() {
  const char* value = std::getenv("BLOSC2FS_NO_SIMD");
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

const ShuffleKernels& pick_kernels() {
  if (simd_disabled()) return scalar_kernels();
  if (const ShuffleKernels* k = avx2_kernels()) return *k;
  if (const ShuffleKernels* k = sse2_kernels()) return *k;
  return scalar_kernels();
}

const ShuffleKernels& kernels() {
  static const ShuffleKernels& chosen = pick_kernels();
  return chosen;
}

}  // namespace
}  // namespace shuffle_detail

void shuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  shuffle_detail::kernels().shuffle(src, dst, size, typesize);
}
void unshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  shuffle_detail::kernels().unshuffle(src, dst, size, typesize);
}
void bitshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  shuffle_detail::kernels().bitshuffle(src, dst, size, typesize);
}
void bitunshuffle(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize) {
  shuffle_detail::kernels().bitunshuffle(src, dst, size, typesize);
}
void unshuffle_streams(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize) {
  static const shuffle_detail::StreamsUnshuffleFn fn = shuffle_detail::streams_unshuffle_for(shuffle_detail::kernels());
  fn(streams, dst, n, typesize);
}
const char* shuffle_implementation() { return shuffle_detail::kernels().name; }

}  // namespace blosc2fs
