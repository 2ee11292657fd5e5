// Changing an existing frame crash-safely (docs/commit-protocol.md): staged edits
// become one commit whose every intermediate on-disk state is a valid frame
// holding either the old or the new state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bytes.h"
#include "chunk_codec.h"
#include "file.h"
#include "frame.h"
#include "frame_writer.h"

namespace blosc2fs {

// One step of a commit, as the disk sees it. A commit is planned as a list of
// steps and then executed in order; tests replay every prefix of the list (and a
// torn version of each write) to simulate power loss at any instant.
struct CommitStep {
  enum class Kind { write, fsync, truncate, rename, unlink, fsync_dir };
  Kind kind = Kind::write;
  std::filesystem::path path;     // file written / synced / truncated / renamed from / unlinked
  std::filesystem::path target;   // rename target
  int64_t offset = 0;             // write offset, or truncate length
  Bytes data;                     // write payload, unless `borrowed`
  // Or a write payload the editor's staged edits keep (a big chunk, written
  // from where it was encoded instead of copied into the plan): valid while
  // they are unchanged. Only FrameEditor::commit() runs such a plan.
  ByteSpan borrowed;
  bool create = false;            // write: create the file (O_CREAT|O_EXCL)
  FileOwnership owner;            // write with create: owner, group and permission bits of the new file

  ByteSpan payload() const { return borrowed.empty() ? ByteSpan(data) : borrowed; }
};
using CommitPlan = std::vector<CommitStep>;
// Runs the steps in order with pwrite/fsync/ftruncate/rename/unlink. Throws IoError.
void execute_commit_plan(const CommitPlan& plan);

struct EditOptions {
  // Take c-blosc2's .b2lock sidecar (flock LOCK_EX, bump the counter at offset 8)
  // around commits: always when the sidecar exists; create it when true.
  bool create_lock_sidecar = false;
  bool sync = true;  // fsync at the protocol's points (tests may turn it off for speed)
  // Compact (rewrite to a temporary file and rename) when unused bytes exceed both.
  double compact_fraction = 0.5;
  int64_t compact_min_bytes = 64 << 20;
};

// The old tree of a sparse frame that FrameEditor::install_rewrite() swapped
// out, now at a temporary name beside the frame. A reader that opened the old
// frame goes on reading its chunk files from there (it holds the directory, not
// its name), so the tree is removed when this is destroyed: at once where the
// caller drops it, after those readers where it keeps it until they let go
// (Volume). Removing never throws; a tree left by a crash goes at the next
// compaction or rewrite.
class RetiredTree {
 public:
  RetiredTree() = default;
  explicit RetiredTree(std::filesystem::path dir) : dir_(std::move(dir)) {}
  RetiredTree(RetiredTree&& other) noexcept : dir_(std::exchange(other.dir_, {})) {}
  RetiredTree& operator=(RetiredTree&& other) noexcept;
  RetiredTree(const RetiredTree&) = delete;
  RetiredTree& operator=(const RetiredTree&) = delete;
  ~RetiredTree() { remove(); }
  bool empty() const { return dir_.empty(); }
  const std::filesystem::path& path() const { return dir_; }

 private:
  void remove() noexcept;
  std::filesystem::path dir_;
};

// Why `name` cannot name a new vlmetalayer, with the errno that says so
// (ENAMETOOLONG past 31 bytes; EINVAL: empty, or not UTF-8 text, which c-blosc2
// takes but python-blosc2 cannot list); nullopt when it can.
struct LayerNameRefusal {
  int error = 0;
  std::string why;
};
std::optional<LayerNameRefusal> refuse_layer_name(std::string_view name);

class FrameEditor {
 public:
  // Opens FRAME for editing (offset > 0: embedded frame; never truncated or compacted).
  explicit FrameEditor(const std::filesystem::path& path, int64_t offset = 0, EditOptions options = {});
  ~FrameEditor();

  // The committed state (reloaded after each commit and by refresh()).
  const Frame& frame() const;
  // Reloads when another process changed the frame (lock counter, frame_len, size
  // or mtime). Returns true when it did. Staged edits must be empty.
  bool refresh();

  // Staged edits; nothing reaches the disk before commit(). Every rule is
  // checked when the edit is staged and reported as IoError with an errno:
  // ENOENT (no such layer), ENAMETOOLONG (name over 31 bytes), EINVAL (empty
  // name, bad size, invalid chunk), ENOSPC (a 17th vlmetalayer: c-blosc2's
  // writer refuses more than 16), EOPNOTSUPP (can't compress for this frame).
  void set_vlmetalayer(const std::string& name, ByteSpan content);  // create or overwrite
  void remove_vlmetalayer(const std::string& name);
  void rename_vlmetalayer(const std::string& from, const std::string& to);  // replaces `to`
  // Same length only (EINVAL); b2nd/caterva contents must still parse (EINVAL).
  // Contiguous frames: written in place after the commit's other changes are
  // durable, so the one state a power loss can mix: a torn write of a metalayer
  // spanning disk sectors, or a crash between it and the rest of the commit.
  // Sparse frames: part of the atomic rename of chunks.b2frame.
  void set_metalayer(const std::string& name, ByteSpan content);
  // Chunk edits by logical number. replace/append compress with the frame's own
  // parameters; *_raw store a caller-provided chunk after validating it.
  void replace_chunk(int64_t n, ByteSpan data);
  void replace_raw_chunk(int64_t n, ByteSpan chunk);
  void append_chunk(ByteSpan data);
  // Several replace_chunk (n >= 0) and append_chunk (n < 0) in order,
  // compressed on every core; stops at the first that fails.
  struct ChunkPut {
    int64_t n;
    ByteSpan data;
  };
  void put_chunks(std::span<const ChunkPut> puts);
  void append_raw_chunk(ByteSpan chunk);
  void truncate_chunks(int64_t nchunks);  // drop chunks from the end
  bool has_staged_edits() const;
  void discard_staged_edits();

  // The steps commit() would run for the staged edits (empty when nothing is
  // staged), each write owning its bytes (commit() borrows big chunks' bytes
  // from the staged edits instead).
  CommitPlan plan_commit() const;
  // Plans, executes under the lock, reloads. On failure the frame is unchanged
  // (as the old state on disk) and the staged edits are kept; throws. A frame
  // changed by another writer meanwhile is reloaded first; staged chunk edits
  // then fail with ESTALE unless the chunk count and chunksize are unchanged.
  // EROFS: the frame is not writable, or an embedded frame would overwrite
  // what follows it. A contiguous frame left without data is rewritten whole
  // (temporary file + rename; c-blosc2 reads its trailer right after the header).
  void commit();

  // Bytes in the file that no live structure references (left by earlier commits).
  int64_t unused_bytes() const;
  CommitPlan plan_compaction() const;
  void compact();  // rewrite cleanly: temp file, fsync, rename, fsync dir
  bool compaction_due() const;

  // The parameters chunks written anew get: the frame's codec, level, filters,
  // typesize and blocksize. EOPNOTSUPP (as a commit) when the codec cannot be encoded here.
  CompressParams compress_params() const;
  // Replaces the whole frame (a standalone one; EOPNOTSUPP for an embedded frame)
  // by a new one, in two steps, so that it can be written while its content still
  // arrives (array.npy replaced by cp): a FrameWriter on rewrite_temp_path()
  // (FrameParams::sparse as the frame is), filled without the lock; then
  // install_rewrite(), under the lock, calls `complete` with the frame as it is
  // now (another program may have changed it meanwhile), which returns the
  // writer to close. A contiguous frame: fsync, rename over the frame and fsync
  // of the directory, as compact() does. A sparse frame: a complete directory
  // beside the old one; every file and the directory are fsynced, the .b2lock
  // sidecar (created if missing) is linked into it (the same file: the lock others hold or wait on
  // stays the frame's), the two directories are exchanged in one step
  // (renameat2 RENAME_EXCHANGE), the parent fsynced, and the old tree, now at
  // the temporary name, returned (RetiredTree: removed when the caller drops
  // it; empty for a contiguous frame). Killed at any instant, the disk holds the old
  // frame or the new one (a stray temporary file or directory goes at the next
  // compaction or rewrite). rewrite_temp_path() of a
  // sparse frame is EOPNOTSUPP where the directory's file system cannot exchange
  // directories (or the parent is not writable): probed once, with two empty
  // directories. Staged edits are dropped; on failure (of `complete` too) the
  // frame is unchanged, the temporary file or tree is removed and this throws.
  std::filesystem::path rewrite_temp_path() const;
  RetiredTree install_rewrite(const std::filesystem::path& temp,
                              const std::function<FrameWriter&(const Frame& current)>& complete);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace blosc2fs
