// blosc2fs --thumbnail FRAME OUTPUT SIZE: the freedesktop thumbnailer
// (packaging/blosc2.thumbnailer). FRAME is opened as a mount opens it (a file,
// a sparse frame, a store, a URL) without FUSE; its array (a store's first
// array leaf in key order) is drawn by preview.png's rules (src/preview) with a
// long side of at most SIZE pixels, reading only the blocks the picture needs,
// and written to OUTPUT. File managers run this on every file they show, so
// it is bounded: a wall-clock deadline and an address-space limit
// (docs/preview.md, "Thumbnails").
#pragma once

#include <chrono>
#include <cstdint>

#include "options.h"

namespace blosc2fs {

// A thumbnail not written by then is given up (exit status 6, one line).
inline constexpr std::chrono::seconds kThumbnailDeadline{4};
// RLIMIT_AS of the thumbnailing process (lowered to it, never raised).
inline constexpr uint64_t kThumbnailAddressSpace = uint64_t(1) << 30;
// Leaves of a store looked at for its first array.
inline constexpr size_t kThumbnailMaxLeaves = 64;

// Returns the exit status (exit_status.h); every failure prints one line
// "blosc2fs: cannot draw a thumbnail of FRAME: why" and leaves OUTPUT alone.
int run_thumbnail(const Options& options);

}  // namespace blosc2fs
