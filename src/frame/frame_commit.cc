// Executing commit plans, the on-disk facts the planners need, and the plan of a
// contiguous-frame commit: append everything new after frame_len, fsync, switch
// the 87-byte fixed header, fsync (docs/commit-protocol.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <utility>

#include "error.h"
#include "file.h"
#include "frame_editor_internal.h"
#include "frame_writer.h"
#include "unique_fd.h"

namespace blosc2fs {

namespace editor {

namespace {

// A large write goes in pieces, each handed to the disk as soon as it is in the
// page cache (sync_file_range does not wait): the disk writes the first pieces
// while the next are copied, and the commit's fsync waits for the last only.
constexpr size_t kWritebackPiece = size_t(4) << 20;

void write_all(int fd, ByteSpan data, int64_t offset, const std::filesystem::path& path) {
  size_t done = 0;
  const bool in_pieces = data.size() >= 4 * kWritebackPiece;
  while (done < data.size()) {
    const size_t want = in_pieces ? std::min(kWritebackPiece, data.size() - done) : data.size() - done;
    ssize_t put = ::pwrite(fd, data.data() + done, want, off_t(offset + int64_t(done)));
    if (put < 0) {
      if (errno == EINTR) continue;
      throw_errno(path.string() + ": write of " + std::to_string(data.size()) + " bytes at " + std::to_string(offset));
    }
    if (put == 0) throw IoError(path.string() + ": write made no progress", EIO);
    if (in_pieces) start_writeback(fd, offset + int64_t(done), int64_t(put));
    done += size_t(put);
  }
}

void fsync_path(const std::filesystem::path& path, bool directory) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0)));
  if (!fd.ok()) throw_errno(path.string() + ": open for fsync");
  const int rc = ::fsync(fd.get());
  const int err = errno;
  // Some file systems cannot sync directories; nothing more can be done there.
  if (rc != 0 && !(directory && (err == EINVAL || err == EROFS))) {
    errno = err;
    throw_errno(path.string() + ": fsync");
  }
}

}  // namespace

StepExecutor::~StepExecutor() { drop_cached(); }

void StepExecutor::drop_cached() {
  if (cached_fd_ >= 0) ::close(cached_fd_);
  cached_fd_ = -1;
  cached_path_.clear();
}

void StepExecutor::finish() {
  if (cached_fd_ >= 0) {
    int rc = ::close(cached_fd_);
    cached_fd_ = -1;
    std::filesystem::path path = std::move(cached_path_);
    cached_path_.clear();
    if (rc != 0) throw_errno(path.string() + ": close");
  }
}

int StepExecutor::file_for(const std::filesystem::path& path, bool create, const FileOwnership& owner) {
  if (!create && cached_fd_ >= 0 && cached_path_ == path) return cached_fd_;
  drop_cached();
  int flags = O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
  int fd = ::open(path.c_str(), flags, mode_t(owner.mode));
  if (fd < 0) throw_errno(path.string() + (create ? ": create" : ": open for writing"));
  // The owner, group and permissions of the file being replaced (the umask
  // must not narrow them, nor a mount run by root take the frame over).
  if (create) {
    try {
      apply_ownership(fd, owner, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  cached_fd_ = fd;
  cached_path_ = path;
  return fd;
}

void StepExecutor::run(const CommitStep& step) {
  using Kind = CommitStep::Kind;
  switch (step.kind) {
    case Kind::write:
      write_all(file_for(step.path, step.create, step.owner), step.payload(), step.offset, step.path);
      break;
    case Kind::fsync:
      if (cached_fd_ >= 0 && cached_path_ == step.path) {
        if (::fsync(cached_fd_) != 0) throw_errno(step.path.string() + ": fsync");
      } else {
        fsync_path(step.path, false);
      }
      break;
    case Kind::truncate:
      if (::truncate(step.path.c_str(), off_t(step.offset)) != 0) throw_errno(step.path.string() + ": truncate");
      break;
    case Kind::rename:
      if (cached_path_ == step.path || cached_path_ == step.target) finish();
      if (::rename(step.path.c_str(), step.target.c_str()) != 0)
        throw_errno(step.path.string() + ": rename to " + step.target.string());
      break;
    case Kind::unlink:
      if (cached_path_ == step.path) finish();
      if (::unlink(step.path.c_str()) != 0 && errno != ENOENT) throw_errno(step.path.string() + ": unlink");
      break;
    case Kind::fsync_dir:
      fsync_path(step.path, true);
      break;
  }
}

std::filesystem::path header_file(const Frame& frame) {
  return frame.sparse() ? frame.path() / "chunks.b2frame" : frame.path();
}

int64_t file_size_of(const std::filesystem::path& file) {
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) throw_errno(file.string() + ": stat");
  return int64_t(st.st_size);
}

Bytes read_exact(const std::filesystem::path& file, int64_t offset, int64_t len) {
  if (offset < 0 || len < 0) throw FormatError(file.string() + ": negative read range");
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) throw_errno(file.string() + ": open");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || st.st_size < offset || st.st_size - offset < len) {
    throw FormatError(file.string() + ": " + std::to_string(len) + " bytes at " + std::to_string(offset) +
                      " lie past the end of the file");
  }
  Bytes out(static_cast<size_t>(len));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t got = ::pread(fd.get(), out.data() + done, out.size() - done, off_t(offset + int64_t(done)));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      errno = got < 0 ? errno : EIO;
      throw_errno(file.string() + ": read at " + std::to_string(offset));
    }
    done += size_t(got);
  }
  return out;
}

Bytes read_header_bytes(const Frame& frame) {
  const FrameHeader& h = frame.header();
  if (h.header_len < kFrameHeaderMinLen || h.header_len > h.frame_len)
    throw FormatError(frame.path().string() + ": header_len " + std::to_string(h.header_len) + " out of range");
  return read_exact(header_file(frame), frame.sparse() ? 0 : frame.file_offset(), h.header_len);
}

std::vector<MetalayerSlot> locate_metalayers(ByteSpan header) {
  ByteReader r(header, "metalayer map");
  r.seek(kFrameHeaderMinLen);
  r.expect(0x93, "fixarray(3) opening the metalayer section");
  r.expect(0xCD, "uint16 idx_size");
  r.be16();
  r.expect(0xDE, "map16 of metalayer names");
  uint16_t n = r.be16();
  std::vector<MetalayerSlot> slots;
  for (uint16_t i = 0; i < n; ++i) {
    uint8_t marker = r.u8();
    if ((marker & 0xE0) != 0xA0) r.fail("expected a fixstr metalayer name");
    ByteSpan name = r.take(marker & 0x1F);
    r.expect(0xD2, "int32 metalayer offset");
    int64_t at = int32_t(r.be32());
    if (at < 0 || at + 5 > int64_t(header.size()) || header[size_t(at)] != 0xC6)
      r.fail("metalayer offset " + std::to_string(at) + " does not point at a bin32 value");
    int64_t len = load_be32(header.data() + at + 1);
    if (len > int64_t(header.size()) - at - 5) r.fail("metalayer content runs past the header");
    slots.push_back({std::string(name.begin(), name.end()), at + 5, len});
  }
  return slots;
}

void patch_fixed_header(Bytes& header, const FrameHeader& fixed) {
  if (header.size() < size_t(kFrameHeaderMinLen) || header[15] != 0xCF || header[24] != 0xA4 || header[29] != 0xD3 ||
      header[38] != 0xD3 || header[57] != 0xD2 || (header[68] != 0xC2 && header[68] != 0xC3))
    throw UnsupportedError("fixed header: unexpected msgpack layout; refusing to rewrite it in place");
  uint8_t* p = header.data();
  store_be64(p + 16, uint64_t(fixed.frame_len));
  p[25] = fixed.general_flags;
  store_be64(p + 30, uint64_t(fixed.nbytes));
  store_be64(p + 39, uint64_t(fixed.cbytes));
  store_be32(p + 58, uint32_t(fixed.chunksize));
  p[68] = fixed.has_vlmetalayers ? 0xC3 : 0xC2;
}

int64_t index_chunk_cbytes(const Frame& frame) {
  const FrameHeader& h = frame.header();
  if (h.nbytes == 0) return 0;
  int64_t pos = frame.sparse() ? h.header_len : h.header_len + h.cbytes;
  int64_t avail = h.frame_len - frame.trailer_len() - pos;
  if (avail < kBlosc1HeaderSize) throw FormatError(frame.path().string() + ": no room for the index chunk");
  int64_t base = frame.sparse() ? 0 : frame.file_offset();
  Bytes head = read_exact(header_file(frame), base + pos, std::min<int64_t>(avail, kExtendedHeaderSize));
  ChunkHeader ch = parse_chunk_header(head);
  if (ch.cbytes > avail) throw FormatError(frame.path().string() + ": index chunk runs into the trailer");
  return ch.cbytes;
}


std::vector<Vlmetalayer> apply_vlmeta_ops(std::vector<Vlmetalayer> layers, const std::vector<VlmetaOp>& ops) {
  auto find = [&](const std::string& name) {
    return std::find_if(layers.begin(), layers.end(), [&](const Vlmetalayer& l) { return l.name == name; });
  };
  for (const VlmetaOp& op : ops) {
    auto it = find(op.name);
    switch (op.kind) {
      case VlmetaOp::Kind::set:
        if (it != layers.end()) it->stored = op.stored;
        else layers.push_back({op.name, op.stored});
        break;
      case VlmetaOp::Kind::remove:
        if (it != layers.end()) layers.erase(it);
        break;
      case VlmetaOp::Kind::rename: {
        if (it == layers.end() || op.name == op.to) break;
        it->name = op.to;
        auto same = std::find_if(layers.begin(), layers.end(),
                                 [&](const Vlmetalayer& l) { return l.name == op.to && &l != &*it; });
        if (same != layers.end()) layers.erase(same);
        break;
      }
    }
  }
  return layers;
}


FrameHeader next_fixed_header(const Frame& frame, const StagedEdits& edits, size_t nvlmetalayers) {
  FrameHeader h = frame.header();
  if (edits.chunks_dirty) {
    int64_t base = frame.nchunks();
    int64_t nbytes = h.nbytes;
    for (int64_t n = edits.nchunks; n < base; ++n) nbytes -= frame.chunk_nbytes(n);
    for (const auto& [n, chunk] : edits.chunks) {
      if (n < base) nbytes -= frame.chunk_nbytes(n);
      nbytes += chunk.nbytes;
    }
    h.nbytes = nbytes;
    h.chunksize = edits.header_chunksize();
  }
  h.general_flags = frame_general_flags(edits.header_chunksize(), edits.vlblocks);
  h.has_vlmetalayers = nvlmetalayers > 0;
  return h;
}

std::vector<int64_t> next_index(const Frame& frame, const StagedEdits& edits,
                                const std::function<int64_t(int64_t, const StagedChunk&)>& place) {
  std::vector<int64_t> index(size_t(edits.nchunks));
  const int32_t typesize = frame.header().typesize;
  auto stored_special = [&](int64_t n, Special kind, int32_t nbytes) {
    StagedChunk c;
    c.stored = repeat_value_chunk(kind, nbytes, typesize);
    c.nbytes = nbytes;
    return place(n, c);
  };
  auto edit = edits.chunks.begin();
  for (int64_t n = 0; n < edits.nchunks; ++n) {
    if (edit != edits.chunks.end() && edit->first == n) {
      const StagedChunk& c = edit->second;
      if (!c.stored.empty()) index[size_t(n)] = place(n, c);
      else if (edits.needs_stored_chunk(n)) index[size_t(n)] = stored_special(n, c.entry_special, c.nbytes);
      else index[size_t(n)] = special_index_entry(c.entry_special);
      ++edit;
    } else {
      const IndexEntry e = frame.index_entry(n);
      if (e.raw < 0 && e.special != Special::none && edits.needs_stored_chunk(n))
        index[size_t(n)] = stored_special(n, e.special, frame.chunk_nbytes(n));
      else
        index[size_t(n)] = e.raw;
    }
  }
  return index;
}

Bytes repeat_value_chunk(Special kind, int32_t nbytes, int32_t typesize) {
  if (kind == Special::nan) {
    if ((typesize != 4 && typesize != 8) || nbytes % typesize != 0)
      throw FormatError("a NaN chunk needs typesize 4 or 8 and a whole number of items");
    Bytes value(size_t(typesize), 0);
    if (typesize == 4) store_le32(value.data(), 0x7FC00000u);
    else store_le64(value.data(), 0x7FF8000000000000ull);
    return make_special_chunk(Special::value, nbytes, typesize, value);
  }
  const int32_t vts = typesize >= 1 && typesize <= 255 && nbytes % typesize == 0 ? typesize : 1;
  return make_special_chunk(Special::value, nbytes, vts, Bytes(size_t(vts), 0));
}

uint64_t random_nonce() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

std::filesystem::path temp_name(const std::filesystem::path& dir, const std::string& stem, const std::string& tag,
                                uint64_t nonce) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  return dir / ("." + stem + "." + tag + "-" + hex);
}

// The slot a staged same-length metalayer write goes to; its length must still match.
const MetalayerSlot& slot_for_metalayer_write(const std::vector<MetalayerSlot>& slots, const std::string& name,
                                              size_t size, const std::filesystem::path& path) {
  auto slot = std::find_if(slots.begin(), slots.end(), [&name](const MetalayerSlot& s) { return s.name == name; });
  if (slot == slots.end() || slot->length != int64_t(size))
    throw IoError(path.string() + ": metalayer '" + name + "' changed shape since it was staged", EINVAL);
  return *slot;
}

void apply_metalayer_writes(Bytes& header, const StagedEdits& edits, const std::filesystem::path& path) {
  if (edits.metalayer_writes.empty()) return;
  std::vector<MetalayerSlot> slots = locate_metalayers(header);
  for (const auto& [name, content] : edits.metalayer_writes) {
    const MetalayerSlot& slot = slot_for_metalayer_write(slots, name, content.size(), path);
    std::copy(content.begin(), content.end(), header.begin() + slot.content_offset);
  }
}

namespace {

// A frame without data must have its trailer right after the header: c-blosc2
// looks for it there, not at frame_len, when nbytes is 0 (frame.c
// get_trailer_offset). That place is live, so the new frame (header + trailer,
// a few kilobytes) is written aside and renamed over the old one.
PlannedCommit plan_rewrite_without_data(const Frame& frame, const StagedEdits& edits, Bytes header,
                                        FrameHeader next, const Bytes& trailer, bool sync) {
  using Kind = CommitStep::Kind;
  const std::filesystem::path& file = frame.path();
  if (frame.file_offset() > 0)
    throw IoError(file.string() + ": an embedded frame without data cannot change its trailer safely", EOPNOTSUPP);
  apply_metalayer_writes(header, edits, file);
  next.cbytes = 0;
  next.frame_len = int64_t(header.size() + trailer.size());
  patch_fixed_header(header, next);
  header.insert(header.end(), trailer.begin(), trailer.end());
  std::filesystem::path dir = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  std::filesystem::path temp = temp_name(dir, file.filename().string(), kCommitTempTag, edits.temp_nonce);
  PlannedCommit out;
  CommitStep write{Kind::write, temp, {}, 0, std::move(header)};
  write.create = true;
  write.owner = ownership_of(file);
  out.steps.push_back(std::move(write));
  if (sync) out.steps.push_back({Kind::fsync, temp});
  out.switch_step = out.steps.size();
  out.steps.push_back({Kind::rename, temp, file});
  if (sync) out.steps.push_back({Kind::fsync_dir, dir});
  return out;
}

// The least stored size of a chunk a commit writes from the staged edits
// rather than through its tail: a step of its own costs a pwrite.
constexpr size_t kBorrowedWriteMin = size_t(1) << 20;

}  // namespace

PlannedCommit plan_contiguous_commit(const Frame& frame, const StagedEdits& edits, bool sync) {
  using Kind = CommitStep::Kind;
  const FrameHeader& fh = frame.header();
  const std::filesystem::path& file = frame.path();
  const int64_t off = frame.file_offset();
  const int64_t H = fh.header_len, L = fh.frame_len, C = fh.cbytes, T = frame.trailer_len();
  const int64_t size = file_size_of(file);
  PlannedCommit out;
  auto fsync_file = [&] {
    if (sync) out.steps.push_back({Kind::fsync, file});
  };
  Bytes header = read_header_bytes(frame);

  if (edits.chunks_dirty || !edits.vlmeta_ops.empty()) {
    std::vector<Vlmetalayer> vls = apply_vlmeta_ops(frame.vlmetalayers(), edits.vlmeta_ops);
    Bytes trailer = serialize_frame_trailer(vls);
    FrameHeader next = next_fixed_header(frame, edits, vls.size());
    if (next.nbytes == 0) return plan_rewrite_without_data(frame, edits, std::move(header), next, trailer, sync);
    Bytes tail;
    int64_t tail_at = L;
    // Big chunks are written from the staged edits that hold them, each a
    // step of its own before the tail: copied into the tail, a 64 MiB
    // chunk's commit put its compressed bytes into fresh pages once more.
    std::vector<CommitStep> chunk_writes;
    if (edits.chunks_dirty) {
      // New payloads go after the live frame, so every live byte stays as it is.
      // The small payloads' size first, so that the tail is sized once. (The
      // chunks a special entry stores are made twice; they are small.)
      size_t payload_bytes = 0;
      next_index(frame, edits, [&](int64_t, const StagedChunk& c) {
        if (c.stored.size() < kBorrowedWriteMin) payload_bytes += c.stored.size();
        return int64_t(0);
      });
      // The index chunk holds at most 8 bytes an entry and a header.
      tail.reserve(payload_bytes + 8 * size_t(std::max<int64_t>(edits.nchunks, 0)) + 256 + trailer.size());
      int64_t pos = L;
      std::vector<int64_t> index = next_index(frame, edits, [&](int64_t, const StagedChunk& c) {
        int64_t at = pos - H;
        const bool own_step = c.stored.size() >= kBorrowedWriteMin;
        if (own_step) {
          if (!tail.empty()) chunk_writes.push_back({Kind::write, file, {}, off + tail_at, std::exchange(tail, {})});
          CommitStep write{Kind::write, file, {}, off + pos};
          write.borrowed = c.stored;
          chunk_writes.push_back(std::move(write));
        } else {
          tail.insert(tail.end(), c.stored.begin(), c.stored.end());
        }
        pos += int64_t(c.stored.size());
        if (own_step) tail_at = pos;
        return at;
      });
      Bytes index_chunk = next.nbytes > 0 ? encode_index_chunk(index) : Bytes{};
      next.cbytes = pos - H;  // the old index and trailer become orphans of the chunk region
      tail.insert(tail.end(), index_chunk.begin(), index_chunk.end());
    } else {
      // A vlmeta-only change moves just the trailer: into the gap the previous
      // trailer move left behind when it fits there, else after the frame.
      int64_t index_end = H + C + index_chunk_cbytes(frame);
      if (index_end + int64_t(trailer.size()) <= L - T) tail_at = index_end;
      next.cbytes = C;
    }
    tail.insert(tail.end(), trailer.begin(), trailer.end());
    next.frame_len = tail_at + int64_t(tail.size());
    if (off > 0 && off + L < size && next.frame_len > L)
      throw IoError(file.string() + ": embedded frame is followed by other data; it cannot grow", EROFS);
    patch_fixed_header(header, next);
    const int64_t written_end = off + tail_at + int64_t(tail.size());

    for (CommitStep& write : chunk_writes) out.steps.push_back(std::move(write));
    out.steps.push_back({Kind::write, file, {}, off + tail_at, std::move(tail)});
    fsync_file();
    out.switch_step = out.steps.size();
    out.steps.push_back({Kind::write, file, {}, off, Bytes(header.begin(), header.begin() + kFrameHeaderMinLen)});
    fsync_file();
    // Junk past the new end (the moved trailer, an earlier crash's leftovers) goes now.
    if (off == 0 && std::max(size, written_end) > next.frame_len)
      out.steps.push_back({Kind::truncate, file, {}, next.frame_len});
  }

  if (!edits.metalayer_writes.empty()) {
    // In place, after the switch: the one edit a torn write can mix (docs/writing.md, "Crash safety").
    std::vector<MetalayerSlot> slots = locate_metalayers(header);
    out.metalayer_first_step = out.steps.size();
    for (const auto& [name, content] : edits.metalayer_writes) {
      const MetalayerSlot& slot = slot_for_metalayer_write(slots, name, content.size(), file);
      out.steps.push_back({Kind::write, file, {}, off + slot.content_offset, content});
    }
    fsync_file();
  }
  return out;
}

}  // namespace editor

void execute_commit_plan(const CommitPlan& plan) {
  editor::StepExecutor executor;
  for (const CommitStep& step : plan) executor.run(step);
  executor.finish();
}

}  // namespace blosc2fs
