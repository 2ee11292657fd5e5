#include "huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

namespace blosc2fs {

namespace {
size_t whole_pages(size_t size) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}
}  // namespace

void advise_huge_pages(void* data, size_t size) noexcept {
  if (!data || size < kHugePageBufferMin) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePageSize - 1) & ~uintptr_t(kHugePageSize - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) & ~uintptr_t(kHugePageSize - 1);
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

uint8_t* map_huge_buffer(size_t size) noexcept {
  const size_t length = whole_pages(size);
  // Mapped one huge page longer, then cut to the 2 MiB boundary inside.
  void* raw = ::mmap(nullptr, length + kHugePageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageSize - 1) & ~uintptr_t(kHugePageSize - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t tail = aligned + length, mapped_end = start + length + kHugePageSize;
  if (mapped_end > tail) ::munmap(reinterpret_cast<void*>(tail), mapped_end - tail);
  (void)::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<uint8_t*>(aligned);
}

void unmap_huge_buffer(uint8_t* data, size_t size) noexcept {
  if (data) ::munmap(data, whole_pages(size));
}

}  // namespace blosc2fs
