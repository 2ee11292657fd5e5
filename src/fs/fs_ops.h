// The FUSE low-level operations over a MountTree. Every operation runs inside one
// wrapper that turns exceptions into errno replies (the only place that does):
//   FsError -> its errno (the answer to the request, no log line)
//   FormatError / UnsupportedError -> EIO, with one log line naming the file
//   IoError -> its errno;  std::bad_alloc -> ENOMEM
//   anything else (std::out_of_range of a decoder too) -> EIO, with one log line:
//   a fault is never answered as a missing file (only a lookup says ENOENT)
// Extended attributes are not supported (ENOSYS, so the kernel stops asking).
#pragma once

#include <fuse_lowlevel.h>

#include "notifier.h"
#include "read_ahead.h"
#include "mount_tree.h"

namespace blosc2fs {

struct Offload;

// The session's userdata.
struct FsContext {
  MountTree& volume;  // one frame's Volume, or a store's tree of them
  KernelNotifier& notifier;
  ReadAheadSetter& read_ahead;
  // Entry and attribute timeouts: long, because every change the mount makes
  // or notices is followed by an invalidation of what it affects.
  double timeout = 86400.0;
  // Nothing under the mount ever changes while it is mounted (a .b2z or .b2e
  // store): the kernel may then list directories without opening them and keep
  // every listing (FUSE_CAP_NO_OPENDIR_SUPPORT), which halves the requests of a
  // listing of thousands of small directories. Set by op_init when granted.
  bool unchanging = false;
  bool no_opendir = false;
  // Which thread answers which request (offload.h); null: the receiving one, always.
  Offload* offload = nullptr;
};

const fuse_lowlevel_ops& lowlevel_operations();

}  // namespace blosc2fs
