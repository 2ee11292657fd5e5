// Creating a new frame and appending to it (used for demo, benchmark and test
// frames, and by `-o create`). Safe editing of existing frames lives elsewhere.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bytes.h"
#include "chunk_codec.h"
#include "frame.h"

namespace blosc2fs {

// How c-blosc2 stores these structures; the writer and the commit engine share them.
// The index chunk of `entries` (format-notes §2); empty when there are none.
Bytes encode_index_chunk(const std::vector<int64_t>& entries);
// A vlmetalayer's content as a stored chunk (c-blosc2 defaults, python-blosc2's typesize 1).
Bytes encode_vlmeta_chunk(ByteSpan content);
// general_flags: version 2, or 3 with bits 6/7 for variable chunks or VL-blocks (§1.5).
uint8_t frame_general_flags(int32_t chunksize, bool vlblocks);

struct FrameParams {
  CompressParams cparams;  // codec, clevel, typesize, blocksize, filters, splitmode
  int32_t chunksize = 0;   // uncompressed bytes per chunk; the last may be shorter
  bool sparse = false;     // a directory with chunks.b2frame and NNNNNNNN.chunk files
  std::vector<Metalayer> metalayers;  // fixed at creation (their size can't change later)
};

// Writes a new frame. Chunks are written as they come; close() writes the index,
// header and trailer. A frame that was not closed is not valid.
class FrameWriter {
 public:
  // Fails (IoError EEXIST) if `path` exists.
  FrameWriter(const std::filesystem::path& path, const FrameParams& params);
  ~FrameWriter();  // closes if not closed; errors are logged, not thrown
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  // Compresses and appends data as one chunk. All chunks but the last must be
  // chunksize bytes (a frame of variable chunks: params.chunksize == 0).
  void append(ByteSpan data);
  // Appends an already compressed chunk as is (validated).
  void append_raw(ByteSpan chunk);
  // Appends a chunk that encode_chunk just made from `nbytes` bytes: stored as
  // is, without append_raw's decoding of every block (our own encoder's output).
  void append_encoded(Bytes chunk, int32_t nbytes);
  // Compresses the bytes and cuts them into chunks of chunksize.
  void append_data(ByteSpan data);
  // Adds or replaces a vlmetalayer (content stored compressed, as c-blosc2 does).
  void set_vlmetalayer(const std::string& name, ByteSpan content);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace blosc2fs
