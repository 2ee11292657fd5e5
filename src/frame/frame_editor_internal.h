// Shared pieces of the frame editor: the staged-edit model, the planners of
// contiguous and sparse commits and of compaction, and bounds-checked readers of
// the few on-disk facts the Frame API does not expose (raw header bytes,
// metalayer positions, the index chunk's length). Private to src/frame.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bytes.h"
#include "error.h"
#include "frame.h"
#include "frame_editor.h"

namespace blosc2fs::editor {

// An edit or commit refused: IoError with `err`, naming the frame.
[[noreturn]] inline void fail(const std::filesystem::path& path, const std::string& what, int err) {
  throw IoError(path.string() + ": " + what, err);
}

// A chunk as a commit will store it.
struct StagedChunk {
  Bytes stored;                           // the physical chunk; empty for a special index entry
  Special entry_special = Special::none;  // zeros / nan / uninit index entry (fixed chunksize only)
  int32_t nbytes = 0;
};

struct VlmetaOp {
  enum class Kind { set, remove, rename };
  Kind kind = Kind::set;
  std::string name;
  std::string to;  // rename target
  Bytes stored;    // set: the compressed content (a complete Blosc chunk)
};

// Edits staged on top of a loaded Frame. Chunk edits are by logical number;
// logical chunk n < nchunks is chunks[n] when present, else the frame's chunk n.
struct StagedEdits {
  std::vector<VlmetaOp> vlmeta_ops;
  std::map<std::string, Bytes> metalayer_writes;  // same-length overwrites
  std::map<int64_t, StagedChunk> chunks;
  bool chunks_dirty = false;
  int64_t nchunks = 0;     // logical chunk count after the edits
  int32_t chunksize = 0;   // the fixed chunksize the edits keep to (0 variable, -1 unset)
  // Set by the editor after each chunk edit (EditStaging::settle_short_chunks):
  // two chunks end up shorter than a fixed chunksize, so the header says 0
  // (variable), as c-blosc2's own insert and update do, and every special index
  // entry is stored as a repeat-value chunk instead (bug B2).
  bool becomes_variable = false;
  // The one chunk shorter than the fixed chunksize after the edits (-1: none).
  // When it is not the last, it and the last chunk are stored physically:
  // c-blosc2 sizes special index entries by position (the last one gets the
  // remainder, others chunksize).
  int64_t short_chunk = -1;
  bool vlblocks = false;   // whether the frame's chunks are VL-block chunks after the edits
  uint64_t temp_nonce = 0; // names this commit's temporary files, so a plan is reproducible

  bool empty() const { return vlmeta_ops.empty() && metalayer_writes.empty() && !chunks_dirty; }
  int32_t header_chunksize() const { return becomes_variable ? 0 : chunksize; }
  // Whether chunk n must be a stored chunk rather than a special index entry.
  bool needs_stored_chunk(int64_t n) const {
    return becomes_variable || (short_chunk >= 0 && short_chunk != nchunks - 1 && (n == short_chunk || n == nchunks - 1));
  }
};

// A plan plus the step whose completion makes the new state live (the header
// switch or the rename); steps after it only tidy up or write metalayers.
struct PlannedCommit {
  CommitPlan steps;
  size_t switch_step = SIZE_MAX;
  size_t metalayer_first_step = SIZE_MAX;  // first step of the in-place metalayer writes
};

// ---- on-disk facts (frame_commit.cc) ----

// The file holding the frame's header: the frame file, or chunks.b2frame.
std::filesystem::path header_file(const Frame& frame);
// Reads exactly `len` bytes at `offset` of `file` (IoError, or FormatError when short).
Bytes read_exact(const std::filesystem::path& file, int64_t offset, int64_t len);
int64_t file_size_of(const std::filesystem::path& file);
// The header as stored: bytes [0, header_len) of the frame.
Bytes read_header_bytes(const Frame& frame);

struct MetalayerSlot {
  std::string name;
  int64_t content_offset = 0;  // from the frame start
  int64_t length = 0;
};
// Where each metalayer's content sits in `header` (header_len bytes). FormatError if malformed.
std::vector<MetalayerSlot> locate_metalayers(ByteSpan header);
// Rewrites the fields a commit changes in the fixed header (frame_len, flags,
// sizes, chunksize, has_vlmetalayers), keeping every other byte as it was.
void patch_fixed_header(Bytes& header, const FrameHeader& fixed);
// Copies the staged metalayer contents into their places in `header` (EINVAL if a layer changed shape).
void apply_metalayer_writes(Bytes& header, const StagedEdits& edits, const std::filesystem::path& path);
// Tag of the temporary files commits rename over a frame (".NAME.commit-XXXX").
inline constexpr const char* kCommitTempTag = "commit";
// Stored length of the index chunk (0 when the frame has no data, so no index).
int64_t index_chunk_cbytes(const Frame& frame);

// ---- encoding ----

// A zeros/nan/uninit chunk of nbytes as a repeat-value chunk, which c-blosc2
// reads on every path (bug B3): NaN needs typesize 4 or 8 (FormatError
// otherwise); uninit is stored as zeros, which is how it reads.
Bytes repeat_value_chunk(Special kind, int32_t nbytes, int32_t typesize);

std::vector<Vlmetalayer> apply_vlmeta_ops(std::vector<Vlmetalayer> layers, const std::vector<VlmetaOp>& ops);

// The fixed header after the edits, minus frame_len and cbytes (callers set them).
FrameHeader next_fixed_header(const Frame& frame, const StagedEdits& edits, size_t nvlmetalayers);
// Index entries after the edits; new physical chunks get entries from `place`,
// called in logical order with each staged chunk that has stored bytes and with
// each special entry that edits.needs_stored_chunk() turns into a repeat-value chunk.
std::vector<int64_t> next_index(const Frame& frame, const StagedEdits& edits,
                                const std::function<int64_t(int64_t n, const StagedChunk&)>& place);

// ---- planners ----

PlannedCommit plan_contiguous_commit(const Frame& frame, const StagedEdits& edits, bool sync);
PlannedCommit plan_sparse_commit(const Frame& frame, const StagedEdits& edits, bool sync);
// Emits the compaction's steps one by one (a cframe copy is streamed chunk by chunk).
void generate_compaction(const Frame& frame, bool sync, uint64_t temp_nonce,
                         const std::function<void(CommitStep&&)>& sink);
int64_t count_unused_bytes(const Frame& frame);

// ---- sparse frame chunk files (sparse_commit.cc) ----

std::string chunk_file_name(int64_t id);  // %08X.chunk
// Chunk-file ids present in the directory (names of exactly that form), with sizes.
std::map<int64_t, int64_t> chunk_files_on_disk(const std::filesystem::path& dir);
// Leftover temporary files of interrupted commits in a sparse frame directory.
std::vector<std::filesystem::path> stale_commit_temps(const std::filesystem::path& dir);

// ---- whole sparse frames rewritten beside the old one (sparse_rewrite.cc) ----

// Tag of the directories a sparse frame is rewritten into beside itself
// (".NAME.compact-XXXX", the name contiguous rewrites and compactions use).
inline constexpr const char* kRewriteTempTag = "compact";
// 0 when the sparse frame `frame_dir` can be swapped with a new directory
// beside it in one step (renameat2 RENAME_EXCHANGE), else the errno that says
// why not (EINVAL on file systems without it, EACCES or EROFS when the parent
// is not writable, EXDEV when the frame is a mount point of its own). Probed
// with two empty directories named as rewrites of the frame are, removed again.
int probe_directory_exchange(const std::filesystem::path& frame_dir);
// Makes the sparse frame written at `temp` durable with `frame_dir`'s
// ownership (the directory's; chunks.b2frame's for every file, never
// executable): each file and the directory fsynced.
void settle_sparse_tree(const std::filesystem::path& temp, const std::filesystem::path& frame_dir, bool sync);
// Swaps the directories `temp` and `frame_dir` (renameat2 RENAME_EXCHANGE), so
// `frame_dir` names the new frame and `temp` the old one; the parent is
// fsynced when `sync`. Throws IoError (nothing swapped).
void exchange_directories(const std::filesystem::path& temp, const std::filesystem::path& frame_dir, bool sync);
// Removes a sparse frame's tree written or left by a rewrite: its chunk files,
// chunks.b2frame, .b2lock and commit temporaries, then the directory; anything
// else inside keeps it (and is left alone). Errors are ignored: what stays goes later.
void remove_sparse_tree(const std::filesystem::path& dir);
// Directories of interrupted rewrites of the sparse frame `frame_dir` beside it.
std::vector<std::filesystem::path> stale_rewrite_dirs(const std::filesystem::path& frame_dir);

// A temporary name in `dir`: ".<stem>.<tag>-<nonce in hex>"; created with O_EXCL.
std::filesystem::path temp_name(const std::filesystem::path& dir, const std::string& stem, const std::string& tag,
                                uint64_t nonce);
uint64_t random_nonce();

// Executes steps one at a time, keeping the last written file open.
class StepExecutor {
 public:
  StepExecutor() = default;
  ~StepExecutor();
  StepExecutor(const StepExecutor&) = delete;
  StepExecutor& operator=(const StepExecutor&) = delete;
  void run(const CommitStep& step);
  void finish();  // closes the cached descriptor, reporting close errors

 private:
  int file_for(const std::filesystem::path& path, bool create, const FileOwnership& owner);
  void drop_cached();
  std::filesystem::path cached_path_;
  int cached_fd_ = -1;
};

}  // namespace blosc2fs::editor
