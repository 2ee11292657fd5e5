// Running blosc2fs: --info, and mounting (open the frame, check the mount
// point, fuse_session_new -> fuse_session_mount -> fuse_daemonize -> loop).
#pragma once

#include <string>

#include "options.h"

namespace blosc2fs {

// Does what the options ask and returns the process exit status (exit_status.h).
// Failures print one line "blosc2fs: cannot mount FRAME: why" on stderr.
int run(const Options& options);

}  // namespace blosc2fs
