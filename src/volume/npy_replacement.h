// A whole new array.npy being written (cp, np.save, shutil.copyfile: they
// truncate to 0, then write): the bytes become the array at close
// (array_npy.cc); those that do not arrive in order wait in an unlinked file
// beside the frame.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "file.h"
#include "npy_stream.h"
#include "frame.h"
#include "mount_tree.h"

namespace blosc2fs {

struct NpyReplacement {
  File spool;         // read-write, already unlinked: nothing stays behind a crash
  int64_t size = 0;   // what array.npy shows meanwhile
  std::shared_ptr<CommitOutcome> outcome = std::make_shared<CommitOutcome>();
  // Bytes written in order past the header go straight into the new frame
  // (npy_stream.h); the spool holds the header and what came out of order.
  std::unique_ptr<NpyRowStream> stream;
  bool stream_decided = false;                // the header came: a stream was started or cannot be
  int64_t header_len = 0;                     // of the stream's .npy
  std::vector<Metalayer> stream_metalayers;   // what the new frame's header holds
  std::map<int64_t, int64_t> spooled;         // [from, to) ranges the spool holds, past the stream's position
};

}  // namespace blosc2fs
