// The FUSE low-level operations over a Volume. Every operation runs inside one
// wrapper that turns exceptions into errno replies (the only place that does):
//   FsError -> its errno (the answer to the request, no log line)
//   FormatError / UnsupportedError -> EIO, with one log line naming the file
//   IoError -> its errno;  std::bad_alloc -> ENOMEM;  std::out_of_range -> ENOENT
// Extended attributes are not supported (ENOSYS, so the kernel stops asking).
#pragma once

#include <fuse_lowlevel.h>

#include "notifier.h"
#include "read_ahead.h"
#include "volume.h"

namespace blosc2fs {

// The session's userdata.
struct FsContext {
  MountTree& volume;  // one frame's Volume, or a store's tree of them
  KernelNotifier& notifier;
  ReadAheadSetter& read_ahead;
  // Entry and attribute timeouts: long, because every change the mount makes
  // or notices is followed by an invalidation of what it affects.
  double timeout = 86400.0;
};

const fuse_lowlevel_ops& lowlevel_operations();

}  // namespace blosc2fs
