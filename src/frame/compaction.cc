// Reclaiming what commits leave behind. A contiguous frame is copied cleanly
// (header, live chunks in logical order, index, trailer) to a temporary file in
// its directory, synced and renamed over the frame; a sparse frame just loses
// the chunk files its index does not reference.
#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "error.h"
#include "frame_editor_internal.h"
#include "frame_writer.h"

namespace blosc2fs::editor {

namespace {

constexpr const char* kCompactTag = "compact";

std::set<int64_t> referenced_chunk_files(const Frame& frame) {
  std::set<int64_t> ids;
  for (int64_t n = 0; n < frame.nchunks(); ++n) {
    IndexEntry e = frame.index_entry(n);
    if (e.special == Special::none && e.raw >= 0) ids.insert(e.raw);
  }
  return ids;
}

std::filesystem::path directory_of(const std::filesystem::path& file) {
  std::filesystem::path dir = file.parent_path();
  return dir.empty() ? std::filesystem::path(".") : dir;
}

// Temporary files of interrupted compactions and data-less rewrites of `file`.
std::vector<std::filesystem::path> stale_frame_temps(const std::filesystem::path& file) {
  std::vector<std::filesystem::path> temps;
  const std::string stem = "." + file.filename().string() + ".";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory_of(file), ec)) {
    std::string name = entry.path().filename().string();
    for (const char* tag : {kCompactTag, kCommitTempTag})
      if (name.rfind(stem + tag + "-", 0) == 0) temps.push_back(entry.path());
  }
  return temps;
}

// Bytes of the chunk region that live index entries cover (overlaps counted once).
int64_t live_chunk_bytes(const Frame& frame) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (int64_t n = 0; n < frame.nchunks(); ++n) {
    IndexEntry e = frame.index_entry(n);
    if (e.special != Special::none || e.raw < 0) continue;
    spans.emplace_back(e.raw, e.raw + frame.chunk_info(n).cbytes);
  }
  std::sort(spans.begin(), spans.end());
  int64_t total = 0, covered_to = INT64_MIN;
  for (const auto& [begin, end] : spans) {
    int64_t from = std::max(begin, covered_to);
    if (end > from) total += end - from;
    covered_to = std::max(covered_to, end);
  }
  return total;
}

}  // namespace

void generate_compaction(const Frame& frame, bool sync, uint64_t temp_nonce,
                         const std::function<void(CommitStep&&)>& sink) {
  using Kind = CommitStep::Kind;
  if (frame.file_offset() > 0)
    throw IoError(frame.path().string() + ": a frame embedded at an offset is never compacted", EINVAL);

  if (frame.sparse()) {
    const std::filesystem::path dir = frame.path();
    std::set<int64_t> live = referenced_chunk_files(frame);
    bool any = false;
    for (const auto& [id, size] : chunk_files_on_disk(dir)) {
      if (live.count(id)) continue;
      sink({Kind::unlink, dir / chunk_file_name(id)});
      any = true;
    }
    for (const auto& temp : stale_commit_temps(dir)) {
      sink({Kind::unlink, temp});
      any = true;
    }
    if (any && sync) sink({Kind::fsync_dir, dir});
    return;
  }

  const std::filesystem::path file = frame.path();
  const std::filesystem::path dir = directory_of(file);
  const FileOwnership owner = ownership_of(file);
  for (const auto& temp : stale_frame_temps(file)) sink({Kind::unlink, temp});

  const FrameHeader& fh = frame.header();
  const int64_t H = fh.header_len;
  std::filesystem::path temp = temp_name(dir, file.filename().string(), kCompactTag, temp_nonce);
  bool created = false;
  auto write = [&](int64_t at, Bytes data) {
    CommitStep step{Kind::write, temp, {}, at, std::move(data)};
    step.create = !created;
    step.owner = owner;
    created = true;
    sink(std::move(step));
  };

  // Chunks in logical order, one write each, so memory stays at one chunk.
  std::vector<int64_t> index(size_t(frame.nchunks()));
  int64_t pos = 0;
  for (int64_t n = 0; n < frame.nchunks(); ++n) {
    IndexEntry e = frame.index_entry(n);
    if (e.special != Special::none) {
      index[size_t(n)] = e.raw;
      continue;
    }
    Bytes chunk = frame.read_raw_chunk(n);
    index[size_t(n)] = pos;
    int64_t len = int64_t(chunk.size());
    write(H + pos, std::move(chunk));
    pos += len;
  }
  Bytes header = read_header_bytes(frame);
  Bytes tail = fh.nbytes > 0 ? encode_index_chunk(index) : Bytes{};
  Bytes trailer = serialize_frame_trailer(frame.vlmetalayers());
  tail.insert(tail.end(), trailer.begin(), trailer.end());
  FrameHeader next = fh;
  next.cbytes = pos;
  next.frame_len = H + pos + int64_t(tail.size());
  next.has_vlmetalayers = !frame.vlmetalayers().empty();
  patch_fixed_header(header, next);
  write(H + pos, std::move(tail));
  write(0, std::move(header));
  if (sync) sink({Kind::fsync, temp});
  sink({Kind::rename, temp, file});
  if (sync) sink({Kind::fsync_dir, dir});
}

int64_t count_unused_bytes(const Frame& frame) {
  const FrameHeader& fh = frame.header();
  if (frame.sparse()) {
    std::set<int64_t> live = referenced_chunk_files(frame);
    int64_t unused = 0;
    for (const auto& [id, size] : chunk_files_on_disk(frame.path()))
      if (!live.count(id)) unused += size;
    for (const auto& temp : stale_commit_temps(frame.path())) {
      std::error_code ec;
      uintmax_t size = std::filesystem::file_size(temp, ec);
      if (!ec) unused += int64_t(size);
    }
    int64_t header_file_size = file_size_of(header_file(frame));
    return unused + std::max<int64_t>(0, header_file_size - fh.frame_len);
  }
  // An embedded frame owns only its own extent; a standalone one the whole file.
  int64_t extent = frame.file_offset() > 0 ? fh.frame_len : file_size_of(frame.path());
  int64_t used = fh.header_len + live_chunk_bytes(frame) + index_chunk_cbytes(frame) + frame.trailer_len();
  return std::max<int64_t>(0, extent - used);
}

}  // namespace blosc2fs::editor
