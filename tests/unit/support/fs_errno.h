// The errno a file-system call of a tree answers, for tests that call trees
// without FUSE.
#pragma once

#include "fs_error.h"

namespace blosc2fs::testing {

// The errno of `action`'s FsError, 0 when it succeeds.
template <class F>
int errno_of(F&& action) {
  try {
    action();
  } catch (const FsError& e) {
    return e.error;
  }
  return 0;
}

}  // namespace blosc2fs::testing
