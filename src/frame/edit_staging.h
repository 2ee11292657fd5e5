// The edits staged on a loaded frame before a commit, each checked against the
// format's rules when it is staged (the errnos FrameEditor's staging documents),
// and the check of an N-d array's chunks a commit makes. Nothing here touches
// the disk. Private to src/frame.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bytes.h"
#include "chunk_codec.h"
#include "frame.h"
#include "frame_editor.h"
#include "frame_editor_internal.h"

namespace blosc2fs::editor {

class EditStaging {
 public:
  // `path`: the frame's, for messages. `frame`: the editor's loaded frame,
  // replaced at each load; the edits apply to whichever it holds.
  EditStaging(std::filesystem::path path, const std::unique_ptr<Frame>& frame);

  // Nothing staged. `vlblocks`: whether the loaded frame's chunks are VL-block chunks.
  void reset(bool vlblocks);
  // Nothing staged but the metalayer writes, which a commit that switched to
  // its new state left undone.
  void reset_keeping_metalayer_writes(bool vlblocks);
  // After another writer changed the frame (now loaded): keeps the staged edits
  // when they still apply (same chunk count and chunksize), else ESTALE.
  void rebase(bool vlblocks);
  // New names for the commit's temporary files (after a failed commit).
  void renew_temp_nonce() { staged_.temp_nonce = random_nonce(); }

  const StagedEdits& edits() const { return staged_; }
  bool empty() const { return staged_.empty(); }
  // The vlmetalayers after the staged edits.
  std::vector<Vlmetalayer> vlmetalayers() const;

  void set_vlmetalayer(const std::string& name, ByteSpan content);
  void remove_vlmetalayer(const std::string& name);
  void rename_vlmetalayer(const std::string& from, const std::string& to);
  void set_metalayer(const std::string& name, ByteSpan content);
  // Compressed on every core, then staged in order, each checked as a single
  // put would be (n < 0: append); those before a failing one stay staged.
  void put_chunks(std::span<const FrameEditor::ChunkPut> puts);
  void replace_raw_chunk(int64_t n, ByteSpan chunk);
  void append_raw_chunk(ByteSpan chunk) { put_raw(staged_.nchunks, chunk); }
  void truncate_chunks(int64_t nchunks);

  // The parameters chunks written anew get (EOPNOTSUPP when the codec cannot be encoded here).
  CompressParams compress_params() const;
  // python-blosc2 opens an N-d array only when it has exactly the chunks its
  // shape needs, each of the array's chunk size: a commit to an array that has
  // them (read from the metalayer as the commit would leave it) keeps them (EINVAL).
  void check_array_chunks() const;

 private:
  const Frame& frame() const { return *frame_; }
  bool has_vlmetalayer(const std::string& name) const;
  void check_vlmeta_name(const std::string& name) const;
  int32_t chunk_nbytes(int64_t n) const;
  int32_t check_chunk_size(int64_t n, int64_t nbytes) const;
  void settle_short_chunks();
  StagedChunk finalize(Bytes stored, int32_t nbytes, int32_t chunksize_after) const;
  bool has_other_chunks(int64_t n) const;
  void stage_chunk(int64_t n, StagedChunk chunk, int32_t chunksize_after, bool vlblocks);
  void put_raw(int64_t n, ByteSpan chunk);

  const std::filesystem::path path_;
  const std::unique_ptr<Frame>& frame_;
  StagedEdits staged_;
  int64_t base_nchunks_ = 0;    // the frame's chunk count when staging began
  int32_t base_chunksize_ = 0;  // and its chunksize
};

}  // namespace blosc2fs::editor
