// A whole new array.npy being written (cp, np.save, shutil.copyfile: they
// truncate to 0, then write): the bytes go to an unlinked file beside the frame
// and become the array at close (volume_npy.cc).
#pragma once

#include <cstdint>
#include <memory>

#include "file.h"
#include "volume.h"

namespace blosc2fs {

struct NpyReplacement {
  File spool;         // read-write, already unlinked: nothing stays behind a crash
  int64_t size = 0;   // what array.npy shows meanwhile
  std::shared_ptr<CommitOutcome> outcome = std::make_shared<CommitOutcome>();
};

}  // namespace blosc2fs
