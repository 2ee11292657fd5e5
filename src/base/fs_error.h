// An errno that is the answer to a request (ENOENT, EROFS, EINVAL, ...), not a
// failure of the daemon; the FUSE layer replies with it and logs nothing more.
#pragma once

namespace blosc2fs {

struct FsError {
  int error;
};

}  // namespace blosc2fs
