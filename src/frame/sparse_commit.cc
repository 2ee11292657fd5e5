// The plan of a sparse-frame commit: new or changed chunks go to chunk files
// with numbers nothing references, then a new chunks.b2frame replaces the old
// one by rename, then the files the new index no longer uses are removed.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "error.h"
#include "frame_editor_internal.h"
#include "frame_writer.h"

namespace blosc2fs::editor {

namespace {

constexpr const char* kSparseHeaderName = "chunks.b2frame";

bool parse_chunk_file_name(const std::string& name, int64_t* id) {
  if (name.size() != 14 || name.compare(8, 6, ".chunk") != 0) return false;
  int64_t value = 0;
  for (int i = 0; i < 8; ++i) {
    char c = name[size_t(i)];
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return false;  // c-blosc2 writes uppercase hex only
    value = value * 16 + digit;
  }
  *id = value;
  return true;
}

// Chunk-file numbers the frame's index references.
std::set<int64_t> live_chunk_ids(const Frame& frame) {
  std::set<int64_t> ids;
  for (int64_t n = 0; n < frame.nchunks(); ++n) {
    IndexEntry e = frame.index_entry(n);
    if (e.special == Special::none && e.raw >= 0) ids.insert(e.raw);
  }
  return ids;
}

int64_t stored_cbytes(const Frame& frame, int64_t n) {
  if (frame.index_entry(n).special != Special::none) return 0;
  try {
    return frame.chunk_info(n).cbytes;
  } catch (const std::exception&) {
    return 0;  // a missing or broken chunk file counted nothing
  }
}

}  // namespace

std::string chunk_file_name(int64_t id) {
  char name[32];
  std::snprintf(name, sizeof name, "%08llX.chunk", static_cast<unsigned long long>(id));
  return name;
}

std::map<int64_t, int64_t> chunk_files_on_disk(const std::filesystem::path& dir) {
  std::map<int64_t, int64_t> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    int64_t id;
    if (!parse_chunk_file_name(entry.path().filename().string(), &id)) continue;
    std::error_code size_ec;
    uintmax_t size = entry.is_regular_file(size_ec) ? entry.file_size(size_ec) : 0;
    files[id] = size_ec ? 0 : int64_t(size);
  }
  if (ec) throw IoError(dir.string() + ": list chunk files: " + ec.message(), ec.value());
  return files;
}

std::vector<std::filesystem::path> stale_commit_temps(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> temps;
  const std::string prefix = std::string(".") + kSparseHeaderName + "." + kCommitTempTag + "-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) temps.push_back(entry.path());
  }
  return temps;
}

PlannedCommit plan_sparse_commit(const Frame& frame, const StagedEdits& edits, bool sync) {
  using Kind = CommitStep::Kind;
  PlannedCommit out;
  if (edits.empty()) return out;
  const std::filesystem::path dir = frame.path();
  const std::filesystem::path header_path = dir / kSparseHeaderName;
  const FrameHeader& fh = frame.header();
  const int64_t base = frame.nchunks();

  // 1. New chunk files, under the smallest numbers that neither the live index
  // nor a file on disk uses (low numbers keep c-blosc2's reopen check, B4, happy).
  const std::set<int64_t> old_live = live_chunk_ids(frame);
  const std::map<int64_t, int64_t> on_disk = chunk_files_on_disk(dir);
  int64_t next_id = 0;
  // Chunk files belong to whoever owns chunks.b2frame, readable by whoever
  // may read it; never executable.
  FileOwnership chunk_owner = ownership_of(header_path);
  chunk_owner.mode &= 0666;
  int64_t cbytes = fh.cbytes;
  for (int64_t n = edits.nchunks; n < base; ++n) cbytes -= stored_cbytes(frame, n);
  for (const auto& [n, chunk] : edits.chunks)
    if (n < base) cbytes -= stored_cbytes(frame, n);
  std::vector<int64_t> index = next_index(frame, edits, [&](int64_t, const StagedChunk& c) {
    cbytes += int64_t(c.stored.size());
    while (old_live.count(next_id) || on_disk.count(next_id)) ++next_id;
    if (next_id > int64_t(UINT32_MAX))
      throw IoError(dir.string() + ": no free chunk-file number below 2^32", ENOSPC);
    int64_t id = next_id++;
    CommitStep write{Kind::write, dir / chunk_file_name(id), {}, 0, c.stored};
    write.create = true;
    write.owner = chunk_owner;
    out.steps.push_back(std::move(write));
    if (sync) out.steps.push_back({Kind::fsync, dir / chunk_file_name(id)});
    return id;
  });
  if (sync && !out.steps.empty()) out.steps.push_back({Kind::fsync_dir, dir});

  // 2. The new chunks.b2frame: header (metalayer edits applied in the copy, so
  // they switch atomically too), index, trailer; written aside, then renamed.
  Bytes header = read_header_bytes(frame);
  apply_metalayer_writes(header, edits, dir);
  std::vector<Vlmetalayer> vls = apply_vlmeta_ops(frame.vlmetalayers(), edits.vlmeta_ops);
  Bytes trailer = serialize_frame_trailer(vls);
  FrameHeader next = next_fixed_header(frame, edits, vls.size());
  Bytes index_chunk = next.nbytes > 0 ? encode_index_chunk(index) : Bytes{};
  next.cbytes = std::max<int64_t>(cbytes, 0);
  next.frame_len = int64_t(header.size() + index_chunk.size() + trailer.size());
  patch_fixed_header(header, next);
  header.insert(header.end(), index_chunk.begin(), index_chunk.end());
  header.insert(header.end(), trailer.begin(), trailer.end());

  std::filesystem::path temp = temp_name(dir, kSparseHeaderName, kCommitTempTag, edits.temp_nonce);
  CommitStep write{Kind::write, temp, {}, 0, std::move(header)};
  write.create = true;
  write.owner = ownership_of(header_path);
  out.steps.push_back(std::move(write));
  if (sync) out.steps.push_back({Kind::fsync, temp});
  out.switch_step = out.steps.size();
  out.steps.push_back({Kind::rename, temp, header_path});
  if (sync) out.steps.push_back({Kind::fsync_dir, dir});

  // 3. Chunk files nothing references any more, including leftovers of
  // interrupted commits (c-blosc2 also leaves empty files behind on updates).
  std::set<int64_t> new_live;
  for (int64_t raw : index)
    if (raw >= 0) new_live.insert(raw);
  std::set<int64_t> doomed;
  for (int64_t id : old_live)
    if (!new_live.count(id)) doomed.insert(id);
  for (const auto& [id, size] : on_disk)
    if (!new_live.count(id)) doomed.insert(id);
  size_t before = out.steps.size();
  for (int64_t id : doomed) out.steps.push_back({Kind::unlink, dir / chunk_file_name(id)});
  for (const auto& temp_file : stale_commit_temps(dir)) out.steps.push_back({Kind::unlink, temp_file});
  if (sync && out.steps.size() > before) out.steps.push_back({Kind::fsync_dir, dir});
  return out;
}

}  // namespace blosc2fs::editor
