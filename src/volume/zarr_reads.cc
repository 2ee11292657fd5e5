// The Zarr view's names under c/ and zarr2/, their listings, sizes and paths
// (ZarrNames), and the bytes of their files (ZarrView::gather).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "frame_files.h"
#include "fs_error.h"
#include "read_pieces.h"
#include "zarr_view.h"
#include "zarr_files.h"

namespace blosc2fs {

bool ZarrNames::is_kind(NodeKind kind) {
  switch (kind) {
    case NodeKind::zarr_json:
    case NodeKind::zarr_dir:
    case NodeKind::zarr_chunk:
    case NodeKind::zarr2_dir:
    case NodeKind::zarray:
    case NodeKind::zattrs:
    case NodeKind::zarr2_chunk:
      return true;
    default:
      return false;
  }
}

bool ZarrNames::exists(const Node& node) const {
  const ZarrFiles* z = zarr_;
  if (!z) return false;
  switch (node.kind) {
    case NodeKind::zarr_dir:
      return !z->zero_d() && node.level >= 0 && node.level < z->ndim() && node.index >= 0 &&
             node.index < z->dirs_at_level(node.level) && (node.level == 0 || z->plan().nchunks > 0);
    case NodeKind::zarr_chunk:
    case NodeKind::zarr2_chunk:
      return node.index >= 0 && node.index < z->plan().nchunks;
    default:
      return true;
  }
}

std::optional<Node> ZarrNames::lookup(const Node& dir, std::string_view name) const {
  const ZarrFiles* z = zarr_;
  if (!z) return std::nullopt;
  if (dir.kind == NodeKind::root) {  // only "c" of a 0-d array: a file, its one chunk
    if (name == "c" && z->zero_d()) return Node{NodeKind::zarr_chunk, 0};
    return std::nullopt;
  }
  if (dir.kind == NodeKind::zarr2_dir) {
    for (const FixedFile& f : kZarr2Children)
      if (name == f.name) return Node{f.kind};
    std::vector<std::string_view> parts;
    if (!z->zero_d()) {
      for (size_t start = 0;;) {
        const size_t dot = name.find('.', start);
        parts.push_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) break;
        start = dot + 1;
      }
    } else if (name != "0") {
      return std::nullopt;
    }
    std::optional<int64_t> n = z->zero_d() ? std::optional<int64_t>(0) : zarr_chunk_of(z->plan(), parts);
    if (!n) return std::nullopt;
    return Node{NodeKind::zarr2_chunk, *n};
  }
  if (dir.kind != NodeKind::zarr_dir || !exists(dir)) return std::nullopt;
  std::optional<int64_t> i = parse_chunk_coordinate(name);
  if (!i || *i >= z->plan().grid[size_t(dir.level)]) return std::nullopt;
  const int64_t index = dir.index * z->plan().grid[size_t(dir.level)] + *i;
  if (dir.level + 1 == z->ndim()) return Node{NodeKind::zarr_chunk, index};
  Node child{NodeKind::zarr_dir, index};
  child.level = dir.level + 1;
  return child;
}

std::optional<DirEntry> ZarrNames::entry(const Node& dir, int64_t cookie) const {
  const ZarrFiles* z = zarr_;
  if (!z || cookie < 0 || !exists(dir)) return std::nullopt;
  // Made from the cookie alone: a listing of a grid of a billion chunks holds
  // nothing, and each page costs what it shows.
  if (dir.kind == NodeKind::zarr2_dir) {
    if (cookie < int64_t(std::size(kZarr2Children))) {
      const FixedFile& f = kZarr2Children[cookie];
      return DirEntry{f.name, f.ino, false, cookie + 1};
    }
    const int64_t n = cookie - int64_t(std::size(kZarr2Children));
    if (n >= z->plan().nchunks) return std::nullopt;
    return DirEntry{zarr_v2_key(z->plan(), n), kZarr2ChunkBase + uint64_t(n), false, cookie + 1};
  }
  if (dir.level >= z->ndim() || (z->plan().nchunks == 0) || cookie >= z->plan().grid[size_t(dir.level)])
    return std::nullopt;
  const int64_t index = dir.index * z->plan().grid[size_t(dir.level)] + cookie;
  Node child{dir.level + 1 == z->ndim() ? NodeKind::zarr_chunk : NodeKind::zarr_dir, index};
  if (child.kind == NodeKind::zarr_dir) child.level = dir.level + 1;
  return DirEntry{std::to_string(cookie), *computed_inode(child), child.kind == NodeKind::zarr_dir, cookie + 1};
}

int64_t ZarrNames::size(const Node& node) const {
  const ZarrFiles* z = zarr_;
  if (!z) return 0;
  switch (node.kind) {
    case NodeKind::zarr_json: return int64_t(z->array_json().size());
    case NodeKind::zarray: return int64_t(z->zarray().size());
    case NodeKind::zattrs: return int64_t(z->zattrs().size());
    case NodeKind::zarr_chunk: return z->plan().v3_chunk_bytes();
    case NodeKind::zarr2_chunk: return z->plan().plain_chunk_bytes();
    default: return 0;
  }
}

bool ZarrNames::read_exactly(const Node& node) const {
  return node.kind == NodeKind::zarr_chunk && zarr_ && zarr_->plan().sharded;
}

blksize_t ZarrNames::io_size(const Node& node) const {
  constexpr int64_t kMost = 1 << 20;
  const ZarrFiles* z = zarr_;
  if (node.kind != NodeKind::zarr_chunk || !z || !z->plan().sharded) return blksize_t(kMost);
  // The kernel rounds st_blksize down to a power of two, and Python's
  // buffered read of n bytes reads whole buffers directly, then fills one more
  // buffer for the rest: a read of an inner chunk stays that read, and decodes
  // no block after it, only when the buffer divides the inner chunk's size.
  const int64_t inner = z->plan().inner_bytes();
  const int64_t dividing = inner > 0 ? inner & -inner : kMost;  // its largest power-of-two divisor
  return blksize_t(std::min(dividing, kMost));
}

std::string ZarrNames::path(const Node& node) const {
  const ZarrFiles* z = zarr_;
  switch (node.kind) {
    case NodeKind::zarray:
    case NodeKind::zattrs: return "zarr2/" + std::string(fixed_file(node.kind)->name);
    case NodeKind::zarr2_chunk: return z ? "zarr2/" + zarr_v2_key(z->plan(), node.index) : "zarr2/?";
    case NodeKind::zarr_dir:
    case NodeKind::zarr_chunk: {
      if (!z || z->zero_d()) return "c";
      const int levels = node.kind == NodeKind::zarr_chunk ? z->ndim() : node.level;
      std::vector<int64_t> coords(static_cast<size_t>(levels));
      int64_t rest = node.index;
      for (int i = levels - 1; i >= 0; --i) {
        coords[size_t(i)] = rest % z->plan().grid[size_t(i)];
        rest /= z->plan().grid[size_t(i)];
      }
      std::string path = "c";
      for (int64_t c : coords) path += "/" + std::to_string(c);
      return path;
    }
    default: return fixed_file(node.kind)->name;
  }
}

void ZarrView::gather(const Node& node, int64_t offset, size_t size, ReadPieces& out) {
  state_.mutex.assert_held_shared();
  const ZarrFiles* z = state_.files->zarr();
  if (!z) throw FsError{ENOENT};
  auto copy_text = [&](const std::string& text) {
    if (offset >= int64_t(text.size())) return;
    MutableByteSpan copy = out.add_copy(size_t(std::min<int64_t>(int64_t(size), int64_t(text.size()) - offset)));
    copy_from(as_bytes(text), offset, copy);
  };
  switch (node.kind) {
    case NodeKind::zarr_json: return copy_text(z->array_json());
    case NodeKind::zarray: return copy_text(z->zarray());
    case NodeKind::zattrs: return copy_text(z->zattrs());
    case NodeKind::zarr_chunk:
    case NodeKind::zarr2_chunk: break;
    default: throw FsError{EISDIR};
  }
  const ZarrArrayPlan& plan = z->plan();
  const int64_t n = node.index;
  const int64_t file_size = zarr_names().size(node);
  if (offset >= file_size || size == 0) return;
  size = size_t(std::min<int64_t>(int64_t(size), file_size - offset));
  const int64_t decoded_size = state_.overlay.chunk_size(*state_.files, n);
  if (decoded_size != z->decoded_chunk_bytes())
    throw FormatError(zarr_names().path(node) + ": chunk " + std::to_string(n) + " holds " + std::to_string(decoded_size) +
                      " bytes, the array's chunks " + std::to_string(z->decoded_chunk_bytes()));
  // A shard: the decoded chunk as it is (only the blocks asked for are
  // decoded), then its index.
  if (node.kind == NodeKind::zarr_chunk && plan.sharded) {
    const bool fill = !state_.overlay.holds(n) && z->reads_as_fill(n);
    const int64_t data_bytes = plan.shard_data_bytes();
    if (offset < data_bytes) {
      const size_t len = size_t(std::min<int64_t>(int64_t(size), data_bytes - offset));
      if (fill) std::memset(out.add_copy(len).data(), 0, len);
      else state_.overlay.gather_chunk(*state_.files, n, offset, len, out);
      offset += int64_t(len);
      size -= len;
    }
    if (size > 0) copy_shard_index(plan, fill, offset - data_bytes, out.add_copy(size));
    return;
  }
  // A plain chunk: zeros for a chunk stored as zeros (nothing decoded), the
  // decoded chunk when it is in C order already, else its blocks re-laid out
  // (NdLayout::read) from the decoded chunk.
  if (!state_.overlay.holds(n) && z->reads_as_fill(n)) {
    std::memset(out.add_copy(size).data(), 0, size);
    return;
  }
  if (plan.chunk_in_c_order) return state_.overlay.gather_chunk(*state_.files, n, offset, size, out);
  MutableByteSpan copy = out.add_copy(size);
  if (state_.overlay.holds(n)) {
    Bytes whole(static_cast<size_t>(decoded_size));
    state_.overlay.read_chunk(*state_.files, n, 0, whole);
    z->relayout(whole, offset, copy);
    return;
  }
  std::shared_ptr<const CachedChunk> chunk = state_.files->cache().get(n);
  z->relayout(chunk->data(), offset, copy);
  // Read to its end, the file is in the page cache now: its decoded chunk
  // goes back to the buffer pool, so that the next chunk is decoded into
  // memory already touched rather than fresh pages (a quarter of the daemon's
  // time in a cold read of small chunks).
  if (offset + int64_t(size) >= file_size) state_.files->cache().invalidate(n);
}

}  // namespace blosc2fs
