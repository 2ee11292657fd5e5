// The FUSE low-level operations over a Tree. Every operation runs inside one
// wrapper that turns exceptions into errno replies (the only place that does):
//   FormatError / UnsupportedError -> EIO, with one log line naming the file
//   IoError -> its errno;  std::bad_alloc -> ENOMEM;  std::out_of_range -> ENOENT
// Read-only for now: every operation that would change something gets EROFS.
#pragma once

#include <fuse_lowlevel.h>

#include "tree.h"

namespace blosc2fs {

// The name of the root's extended attribute holding the cache statistics.
inline constexpr const char* kCacheStatsXattr = "user.blosc2fs.cache";

// The session's userdata.
struct FsContext {
  Tree& tree;
  // Entry and attribute timeouts: the tree changes only through this process.
  double timeout = 86400.0;
};

const fuse_lowlevel_ops& lowlevel_operations();

}  // namespace blosc2fs
