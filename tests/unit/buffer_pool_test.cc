// The buffer pool: reuse of released buffers, and chunk-sized buffers backed
// by 2 MiB pages where the kernel's transparent huge pages allow it.
#include "buffer_pool.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "sanitizers.h"
#ifdef BLOSC2FS_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#endif

namespace blosc2fs {
namespace {

#ifndef BLOSC2FS_ADDRESS_SANITIZER
// The kernel's THP mode: "always", "madvise" or "never" (the bracketed word),
// empty without THP.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  return line.substr(open + 1, close - open - 1);
}

// AnonHugePages, in KiB, of the mapping of /proc/self/smaps holding `p`.
int64_t anon_huge_kib_at(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stoll(line.substr(14));
  }
  return -1;
}
#endif

TEST(BufferPool, AReleasedBufferIsTakenAgainForTheSameSize) {
  auto pool = BufferPool::create(size_t(64) << 20);
  uint8_t* first;
  {
    PooledBuffer b = pool->take(3 << 20);
    first = b.data();
    std::memset(b.data(), 1, b.size());
  }
  PooledBuffer again = pool->take((3 << 20) - 100);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), size_t(3 << 20) - 100);
}

TEST(BufferPool, AChunkSizedBufferIsBackedByHugePagesWhereTheKernelOffersThem) {
#ifdef BLOSC2FS_ADDRESS_SANITIZER
  // An AddressSanitizer build takes every buffer from malloc instead, so that
  // its redzones guard them: the byte after the buffer is one.
  auto pool = BufferPool::create(0);
  PooledBuffer b = pool->take(size_t(16) << 20);
  std::memset(b.data(), 7, b.size());
  EXPECT_TRUE(__asan_address_is_poisoned(b.data() + b.size()));
  EXPECT_FALSE(__asan_address_is_poisoned(b.data() + b.size() - 1));
#else
  const std::string mode = thp_mode();
  if (mode != "always" && mode != "madvise")
    GTEST_SKIP() << "transparent huge pages are '" << mode
                 << "' here (/sys/kernel/mm/transparent_hugepage/enabled): nothing to check";
  auto pool = BufferPool::create(0);
  PooledBuffer b = pool->take(size_t(16) << 20);
  std::memset(b.data(), 7, b.size());
  // Its 2 MiB-aligned interior holds at least seven huge pages; one may be
  // refused when the kernel finds no free 2 MiB of memory at once.
  EXPECT_GE(anon_huge_kib_at(b.data() + (8 << 20)), 6 * 2048);
  EXPECT_EQ(b.data()[b.size() - 1], 7);
  // So does the next one, though the first went back to memory malloc may reuse.
  b.release();
  PooledBuffer again = pool->take(size_t(12) << 20);
  std::memset(again.data(), 9, again.size());
  EXPECT_GE(anon_huge_kib_at(again.data() + (4 << 20)), 4 * 2048);
#endif
}

}  // namespace
}  // namespace blosc2fs
