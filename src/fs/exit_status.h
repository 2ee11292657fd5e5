// The exit statuses of blosc2fs (documented in main.cc and the README).
#pragma once

namespace blosc2fs {

enum ExitStatus : int {
  kExitOk = 0,
  kExitUsage = 1,          // bad command line or option
  kExitFrameMissing = 2,   // FRAME does not exist or cannot be opened
  kExitFrameInvalid = 3,   // FRAME is not a Blosc2 frame, or corrupt beyond its header and index
  kExitMountpoint = 4,     // MOUNTPOINT missing, not a directory, not accessible, or where the mount would cover the dataset or lie inside it
  kExitFuse = 5,           // the FUSE mount failed (/dev/fuse, permissions, fusermount3)
  kExitInternal = 6,       // anything else (out of memory, a bug)
  kExitUnreachable = 7,    // a URL's server did not answer usably (network, 5xx): a retry may work
};

}  // namespace blosc2fs
