// Hostile-input tests: everything a mount would read of a frame, failures allowed
// as errors, never as crashes.
#pragma once

#include <filesystem>

namespace blosc2fs::testing {

// Opens the frame and reads what the mount would (index, chunks, raw chunks,
// vlmetalayers, usermeta, frame.json, index.tsv, an array's first MiB); false
// when it does not open. Checks that what reads has the size the frame says.
bool exercise_frame(const std::filesystem::path& path);

}  // namespace blosc2fs::testing
