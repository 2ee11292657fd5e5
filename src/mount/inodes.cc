#include "inodes.h"

#include <cctype>
#include <cstdio>

namespace blosc2fs {

std::string chunk_file_name(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08lld", static_cast<long long>(n));
  return buf;
}

std::optional<int64_t> parse_chunk_file_name(std::string_view name) {
  if (name.size() < 8 || name.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (chunk_file_name(n) != name) return std::nullopt;  // only the canonical spelling
  return n;
}

std::optional<int64_t> parse_raw_file_name(std::string_view name) {
  if (name.size() <= kRawSuffix.size() || !name.ends_with(kRawSuffix)) return std::nullopt;
  return parse_chunk_file_name(name.substr(0, name.size() - kRawSuffix.size()));
}

bool is_scratch_name(std::string_view name) {
  if (name.empty()) return false;
  if (name.front() == '.' || name.back() == '~' || name == "4913") return true;
  if (name.size() >= 2 && name.front() == '#' && name.back() == '#') return true;
  if (name.size() == 9 && name.starts_with("sed")) {
    for (char c : name.substr(3))
      if (!std::isalnum(static_cast<unsigned char>(c))) return false;
    return true;
  }
  return false;
}

bool usable_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name.size() <= 255;
}

const FixedFile* fixed_file(NodeKind kind) {
  for (const FixedFile& f : kRootChildren)
    if (f.kind == kind) return &f;
  for (const FixedFile& f : kZarr2Children)
    if (f.kind == kind) return &f;
  return nullptr;
}

std::string path_in(NodeKind dir, std::string_view name) {
  const FixedFile* d = dir == NodeKind::root ? nullptr : fixed_file(dir);
  return d ? std::string(d->name) + "/" + std::string(name) : std::string(name);
}

std::optional<uint64_t> computed_inode(const Node& node) {
  switch (node.kind) {
    case NodeKind::root: return kRootIno;
    case NodeKind::chunk: return kChunkBase + uint64_t(node.index);
    case NodeKind::raw_chunk: return kRawBase + uint64_t(node.index);
    case NodeKind::zarr_chunk: return kZarrChunkBase + uint64_t(node.index);
    case NodeKind::zarr2_chunk: return kZarr2ChunkBase + uint64_t(node.index);
    case NodeKind::zarr_dir:
      if (node.level == 0) return fixed_file(node.kind)->ino;
      return kZarrDirBase + (uint64_t(node.index) << 4 | uint64_t(node.level));
    case NodeKind::meta:
    case NodeKind::vlmeta:
    case NodeKind::attrs:
    case NodeKind::scratch: return std::nullopt;
    default: return fixed_file(node.kind)->ino;
  }
}

std::optional<Node> computed_node(uint64_t ino) {
  if (ino == kRootIno) return Node{NodeKind::root};
  if (ino < kNamedBase) {
    for (const FixedFile& f : kRootChildren)
      if (f.ino == ino) return Node{f.kind};
    for (const FixedFile& f : kZarr2Children)
      if (f.ino == ino) return Node{f.kind};
    return std::nullopt;
  }
  if (ino >= kChunkBase && ino < kChunkBase + uint64_t(kMaxChunksShown))
    return Node{NodeKind::chunk, int64_t(ino - kChunkBase)};
  if (ino >= kRawBase && ino < kRawBase + uint64_t(kMaxChunksShown))
    return Node{NodeKind::raw_chunk, int64_t(ino - kRawBase)};
  if (ino >= kZarrChunkBase && ino < kZarrChunkBase + uint64_t(kMaxZarrChunks))
    return Node{NodeKind::zarr_chunk, int64_t(ino - kZarrChunkBase)};
  if (ino >= kZarr2ChunkBase && ino < kZarr2ChunkBase + uint64_t(kMaxZarrChunks))
    return Node{NodeKind::zarr2_chunk, int64_t(ino - kZarr2ChunkBase)};
  if (ino >= kZarrDirBase && ino < kZarrDirBase + (uint64_t(kMaxZarrChunks) << 4) && ((ino - kZarrDirBase) & 15) != 0) {
    Node node{NodeKind::zarr_dir, int64_t((ino - kZarrDirBase) >> 4)};
    node.level = int32_t((ino - kZarrDirBase) & 15);
    return node;
  }
  return std::nullopt;
}

}  // namespace blosc2fs
