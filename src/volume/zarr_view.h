// The Volume's part of the Zarr view (zarr_files.h, docs/zarr.md): the names
// under c/ and zarr2/ (ZarrNames, made from the array's grid), the bytes of
// their files and the writes a Zarr writer makes through them (ZarrView).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "file_edits.h"
#include "node.h"
#include "read_pieces.h"
#include "volume_commit.h"
#include "volume_state.h"

namespace blosc2fs {

class ZarrFiles;

// The Zarr view's names, listings, sizes and paths, of the ZarrFiles shown
// now (null: the frame is not an array). Made under the state lock, used under it.
class ZarrNames {
 public:
  explicit ZarrNames(const ZarrFiles* zarr) : zarr_(zarr) {}

  static bool is_kind(NodeKind kind);
  bool exists(const Node& node) const;
  std::optional<Node> lookup(const Node& dir, std::string_view name) const;
  std::optional<DirEntry> entry(const Node& dir, int64_t cookie) const;
  int64_t size(const Node& node) const;
  std::string path(const Node& node) const;
  // A shard is read without the page cache: the kernel's readahead would turn a
  // reader's request for one inner chunk into a read of the rest of the shard,
  // decoding every block of it.
  bool read_exactly(const Node& node) const;
  // A shard's st_blksize divides its inner chunk's size (a power of two, at
  // most 1 MiB): buffered readers (Python's) size their reads by it, and a
  // read of one inner chunk must not become a read of the blocks after it.
  blksize_t io_size(const Node& node) const;

 private:
  const ZarrFiles* zarr_;
};

// The bytes of the Zarr view's files and its writes. A Zarr writer's temporary
// files (`<key>.<hex>.partial`) are scratch files, in c/... directories named
// by their path; renamed onto a chunk file they replace that chunk, onto
// zarr.json they change the attributes.
class ZarrView {
 public:
  ZarrView(VolumeState& state, CommitPipeline& commits, FileEdits& edits);

  // The public calls need the locks their comments name, asserted inside
  // (volume_state.h says why).
  void gather(const Node& node, int64_t offset, size_t size, ReadPieces& out);  // state lock shared
  static bool is_scratch_name(std::string_view name);
  std::optional<uint64_t> scratch(const Node& dir, std::string_view name) const;  // state lock
  uint64_t create(const Node& dir, const std::string& name, int flags);           // exclusive + commit
  // Whether a rename or unlink in `dir` is the Zarr view's to make.
  bool owns(const Node& dir, std::string_view name) const;  // state lock
  void rename(const Node& dir, const std::string& from, const std::string& to, unsigned flags,
              KernelNotes& notes);                                              // commit
  void unlink(const Node& dir, const std::string& name, KernelNotes& notes);    // commit

 private:
  ZarrNames zarr_names() const REQUIRES_SHARED(state_.mutex);
  std::string scratch_key(const Node& dir, std::string_view name) const REQUIRES_SHARED(state_.mutex);
  void commit_chunk(uint64_t scratch_ino, const Node& dir, int64_t n, const std::string& to, KernelNotes& notes)
      REQUIRES(commits_.mutex());
  void commit_attributes(uint64_t scratch_ino, KernelNotes& notes) REQUIRES(commits_.mutex());

  VolumeState& state_;
  CommitPipeline& commits_;
  FileEdits& edits_;
};

}  // namespace blosc2fs
