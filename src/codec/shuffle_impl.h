// Internal entry points of the shuffle kernels, so tests and benchmarks can compare
// every instruction-set path directly instead of relying on the run-time dispatch.
// Every ShuffleFn has the full semantics of its counterpart in shuffle.h (tails,
// leftovers) for any typesize; a SIMD kernel falls back to scalar code for the
// typesizes and remainders it has no vector path for. src and dst must not overlap.
//
// Nothing here is inline: the AVX2 kernels live in a file compiled with -mavx2, and
// an inline function shared with it could be emitted once with AVX2 instructions
// and then picked by the linker for the code that runs on any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blosc2fs::shuffle_detail {

using ShuffleFn = void (*)(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

struct ShuffleKernels {
  const char* name;
  ShuffleFn shuffle;
  ShuffleFn unshuffle;
  ShuffleFn bitshuffle;
  ShuffleFn bitunshuffle;
};

// The plain reference implementations; every other path must match them bit for bit.
void shuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void unshuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitshuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitunshuffle_scalar(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

void shuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void unshuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitshuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitunshuffle_sse2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);

void shuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void unshuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitshuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
void bitunshuffle_avx2(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
// bitunshuffle_avx2 with the bit transpose done by GFNI; only when gfni_supported().
// The avx2 kernel set uses it when the CPU has GFNI.
void bitunshuffle_avx2_gfni(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
// The same kernel with GFNI's one instruction computed in software (any AVX2 CPU): the
// tests' check of the kernel's loads, shuffles and stores where the CPU has no GFNI.
void bitunshuffle_avx2_gfni_model(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize);
bool gfni_supported();

// unshuffle_streams() per instruction set; see shuffle.h.
using StreamsUnshuffleFn = void (*)(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize);
void unshuffle_streams_scalar(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize);
void unshuffle_streams_sse2(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize);
void unshuffle_streams_avx2(const uint8_t* const* streams, uint8_t* dst, size_t n, size_t typesize);
// The unshuffle_streams() kernel that goes with a kernel set.
StreamsUnshuffleFn streams_unshuffle_for(const ShuffleKernels& kernels);

// The kernel sets; sse2/avx2 return nullptr when this CPU cannot run them.
const ShuffleKernels& scalar_kernels();
const ShuffleKernels* sse2_kernels();
const ShuffleKernels* avx2_kernels();

// Building blocks shared by the SIMD kernels (compiled without -mavx2).

// Byte shuffle of items [begin, end) of a block of n items: stream k starts at k * n.
void shuffle_items_scalar(const uint8_t* src, uint8_t* dst, size_t n, size_t typesize, size_t begin,
                          size_t end);
void unshuffle_items_scalar(const uint8_t* src, uint8_t* dst, size_t n, size_t typesize, size_t begin,
                            size_t end);
// The same with stream k at streams[k].
void unshuffle_stream_items_scalar(const uint8_t* const* streams, uint8_t* dst, size_t typesize, size_t begin,
                                   size_t end);

// One byte stream <-> its eight bit planes, `groups` groups of eight items:
// plane k is at plane0 + k * plane_stride and holds one byte per group.
using BytesToPlanesFn = void (*)(const uint8_t* bytes, uint8_t* plane0, size_t plane_stride, size_t groups);
using PlanesToBytesFn = void (*)(const uint8_t* plane0, size_t plane_stride, uint8_t* bytes, size_t groups);
void bytes_to_planes_scalar(const uint8_t* bytes, uint8_t* plane0, size_t plane_stride, size_t groups);
void planes_to_bytes_scalar(const uint8_t* plane0, size_t plane_stride, uint8_t* bytes, size_t groups);

// Bit shuffle as "byte shuffle, then each byte stream to its eight planes", a slice of
// items at a time through a small buffer; the inverse likewise.
void bitshuffle_by_streams(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize, ShuffleFn shuffle_fn,
                           BytesToPlanesFn to_planes);
void bitunshuffle_by_streams(const uint8_t* src, uint8_t* dst, size_t size, size_t typesize,
                             ShuffleFn unshuffle_fn, PlanesToBytesFn to_bytes);

}  // namespace blosc2fs::shuffle_detail
