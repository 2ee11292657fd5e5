// Hostile-input tests: everything a mount would read of a frame, failures allowed
// as errors, never as crashes.
#pragma once

#include <filesystem>

#include "bytes.h"

namespace blosc2fs::testing {

// Opens the frame and reads what the mount would (index, chunks, raw chunks,
// vlmetalayers, usermeta, frame.json, index.tsv, an array's first MiB); false
// when it does not open. Checks that what reads has the size the frame says.
bool exercise_frame(const std::filesystem::path& path);

// Writes `data` as the whole file, overwriting in place and then truncating:
// truncating to zero before rewriting makes ext4 flush on close, which slows
// thousands of hostile copies to a crawl.
void write_file(const std::filesystem::path& path, ByteSpan data);

}  // namespace blosc2fs::testing
