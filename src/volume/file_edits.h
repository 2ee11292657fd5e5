// Edits of the tree's files and names that are not array.npy's or the Zarr
// view's: layer files and raw chunks held whole as drafts until close, scratch
// files in memory, chunks/N and data staged in the overlay; truncation,
// creation, removal and renames of names.
#pragma once

#include <cstdint>
#include <string>

#include "array_npy.h"
#include "volume_commit.h"
#include "volume_state.h"

namespace blosc2fs {

// Locks, as each function says: "exclusive" = the state lock held exclusively;
// "commit" = the commit lock held, which every change of the overlay needs.
// Asserted inside (volume_state.h says why).
class FileEdits {
 public:
  FileEdits(VolumeState& state, CommitPipeline& commits, ArrayNpy& npy);

  void write_draft(uint64_t ino, const Node& node, int64_t offset, ByteSpan data);  // exclusive
  // chunks/N and data; a long write commits in batches. Takes the commit lock.
  void write_chunks(OpenFile& file, const Node& node, int64_t offset, ByteSpan data, KernelNotes& notes)
      EXCLUDES(commits_.mutex(), state_.mutex);
  void truncate_node(uint64_t ino, const Node& node, int64_t size);  // exclusive (+ commit for chunks)
  // The data of an N-d array opened with O_TRUNC, closed before it was written
  // whole (OpenFile::rewrite_end): its staged chunks are dropped and the close
  // is EINVAL, after one log line. Commit lock held.
  void refuse_partial_rewrite(const OpenFile& file, KernelNotes& notes);
  uint64_t create_real(NodeKind dir, const std::string& name);  // exclusive + commit
  void unlink_scratch(uint64_t ino, KernelNotes& notes);        // commit
  void unlink_real(NodeKind dir, const std::string& name, KernelNotes& notes);  // commit
  // Renames (commit): the cases file_edits.cc lists.
  void rename_scratch_onto_real(uint64_t ino, NodeKind dir, const std::string& to, KernelNotes& notes);
  void rename_real_onto_scratch(NodeKind dir, const std::string& from, const std::string& to, KernelNotes& notes);
  void rename_layer(NodeKind dir, const std::string& from, const std::string& to, KernelNotes& notes);

 private:
  Draft& draft_for(uint64_t ino, const Node& node) REQUIRES(state_.mutex);

  VolumeState& state_;
  CommitPipeline& commits_;
  ArrayNpy& npy_;
};

}  // namespace blosc2fs
