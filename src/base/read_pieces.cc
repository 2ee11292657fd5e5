#include "read_pieces.h"

namespace blosc2fs {

BufferPool& ReadPieces::copy_pool() {
  // A reply buffer for each of the daemon's workers (ten by default) and a few more.
  static const std::shared_ptr<BufferPool> pool = BufferPool::create(size_t(16) << 20);
  return *pool;
}

}  // namespace blosc2fs
