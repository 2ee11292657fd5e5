// blosc2fs: mount a Blosc2 frame as a directory of files.
//
// Exit statuses (for the README and for scripts around mount/systemd):
//   0  success: mounted and later unmounted cleanly; or -h, -V, --info, --thumbnail done
//   1  usage: bad command line, unknown or invalid -o option
//   2  FRAME is missing or cannot be opened (or created, with -o create)
//   3  FRAME is not a Blosc2 frame, or is corrupt beyond its header and index
//   4  MOUNTPOINT is unusable: missing, not a directory, not accessible, or the
//      dataset itself, a directory holding it, or a place inside a directory dataset
//      (--thumbnail: OUTPUT cannot be written)
//   5  the FUSE mount failed (/dev/fuse missing, no permission, fusermount3)
//   6  internal error (out of memory, the FUSE loop failed, a bug)
//   7  a URL's server could not be reached or kept failing: a retry may work
// Every failure prints one line on stderr: "blosc2fs: cannot mount FRAME: why".
//
// The cache statistics of a running mount: the hidden file MNT/.blosc2fs-cache.

#include <malloc.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "exit_status.h"
#include "log.h"
#include "mount.h"
#include "options.h"

int main(int argc, char** argv) {
  using namespace blosc2fs;
  // Buffers of a MiB and more (chunks, fetched extents) straight from mmap
  // and back at free. glibc otherwise raises this threshold after the first
  // such free and serves them from per-thread arenas, which keep what is
  // freed: 16 readers on 16 FUSE workers peaked at 440-484 MB against 188
  // (cache_size 256M, bench/remote.py). The hot buffers are pooled above malloc.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  Options options;
  try {
    options = parse_command_line(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "blosc2fs: %s (see blosc2fs -h)\n", e.what());
    return kExitUsage;
  }
  try {
    return run(options);
  } catch (const std::bad_alloc&) {
    write_to_stderr("blosc2fs: out of memory\n");
  } catch (const std::exception& e) {
    write_to_stderr(std::string("blosc2fs: internal error: ") + e.what() + "\n");
  }
  return kExitInternal;
}
