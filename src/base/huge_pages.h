// Large buffers backed by 2 MiB pages where the kernel offers them.
//
// A chunk-sized buffer is fresh memory to the daemon (malloc hands out new
// mappings above 32 MiB, and a freshly mounted daemon has nothing to reuse),
// and its first touch costs a page fault per 4 KiB: 16,384 for a 64 MiB chunk,
// 1.5-2 us each on a VM, about a third of a memory map's slab write through
// the mount, measured. Transparent huge pages asked for with madvise take 32
// faults instead. Where they are off ("never") or missing, this does nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blosc2fs {

// Buffers smaller than this keep 4 KiB pages: a 2 MiB page would round a small
// buffer's memory up by as much as the buffer itself.
inline constexpr size_t kHugePageBufferMin = size_t(4) << 20;
inline constexpr size_t kHugePageSize = size_t(2) << 20;

// Asks for huge pages in the 2 MiB-aligned part of [data, data + size) that
// is not yet touched (memory malloc gave, which may start anywhere). Best
// effort: a refusal (EINVAL on a kernel without THP) changes nothing but speed.
void advise_huge_pages(void* data, size_t size) noexcept;

// `size` bytes (at least kHugePageBufferMin) of fresh memory mapped for this
// buffer alone, starting on a 2 MiB boundary and asked to be huge pages:
// malloc would reuse memory of its heap, already in 4 KiB pages, for sizes up
// to its threshold. Not initialised. nullptr when there is no memory.
uint8_t* map_huge_buffer(size_t size) noexcept;
// Gives back what map_huge_buffer(size) returned.
void unmap_huge_buffer(uint8_t* data, size_t size) noexcept;

}  // namespace blosc2fs
