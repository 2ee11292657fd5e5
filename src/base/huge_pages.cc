#include "huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace blosc2fs {

void advise_huge_pages(void* data, size_t size) noexcept {
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  if (!data || size < kHugePageBufferMin) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) & ~(kHugePage - 1);
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace blosc2fs
