#include "tree.h"

#include <array>
#include <cstdio>

namespace blosc2fs {

namespace {

struct FixedNode {
  uint64_t ino;
  NodeKind kind;
  const char* name;  // name in its parent (root children only)
};

// Root children in listing order; array.npy is listed only when the frame has one.
constexpr std::array<FixedNode, 9> kRootChildren{{
    {2, NodeKind::frame_json, "frame.json"},
    {3, NodeKind::index_tsv, "index.tsv"},
    {4, NodeKind::data, "data"},
    {5, NodeKind::array_npy, "array.npy"},
    {6, NodeKind::chunks_dir, "chunks"},
    {7, NodeKind::raw_dir, "raw"},
    {8, NodeKind::meta_dir, "meta"},
    {9, NodeKind::vlmeta_dir, "vlmeta"},
    {10, NodeKind::attrs_dir, "attrs"},
}};

constexpr std::string_view kRawSuffix = ".chunk";
constexpr mode_t kDirMode = 0555;   // read-only for now: writing comes with the write issue
constexpr mode_t kFileMode = 0444;
constexpr blksize_t kPreferredIoSize = 1 << 20;

const FixedNode* fixed_of(NodeKind kind) {
  for (const FixedNode& f : kRootChildren)
    if (f.kind == kind) return &f;
  return nullptr;
}

}  // namespace

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

Tree::Tree(FrameFiles& files, Ownership owner, int64_t mtime_ns)
    : files_(files), owner_(owner), mtime_ns_(mtime_ns) {
  if (files_.nchunks() > kMaxChunksShown)
    throw FormatError("the frame claims " + std::to_string(files_.nchunks()) + " chunks, more than can be shown");
  if (int64_t(files_.vlmetas().size()) > kMaxNamedShown || int64_t(files_.metas().size()) > kMaxNamedShown)
    throw FormatError("the frame has more metalayers than can be shown");
}

uint64_t Tree::inode(Node node) {
  switch (node.kind) {
    case NodeKind::root: return 1;
    case NodeKind::meta: return kMetaBase + uint64_t(node.index);
    case NodeKind::vlmeta: return kVlmetaBase + uint64_t(node.index);
    case NodeKind::attrs: return kAttrsBase + uint64_t(node.index);
    case NodeKind::chunk: return kChunkBase + uint64_t(node.index);
    case NodeKind::raw_chunk: return kRawBase + uint64_t(node.index);
    default: return fixed_of(node.kind)->ino;
  }
}

bool Tree::exists(Node node) const {
  const auto& vl = files_.vlmetas();
  switch (node.kind) {
    case NodeKind::array_npy: return files_.has_array();
    case NodeKind::chunk:
    case NodeKind::raw_chunk: return node.index >= 0 && node.index < files_.nchunks();
    case NodeKind::meta: return node.index >= 0 && node.index < int64_t(files_.metas().size());
    case NodeKind::vlmeta: return node.index >= 0 && node.index < int64_t(vl.size());
    case NodeKind::attrs:
      return node.index >= 0 && node.index < int64_t(vl.size()) && vl[size_t(node.index)].attrs_text.has_value();
    default: return true;
  }
}

std::optional<Node> Tree::node(uint64_t ino) const {
  Node node;
  if (ino == 1) {
    node = {NodeKind::root, 0};
  } else if (ino < kMetaBase) {
    bool found = false;
    for (const FixedNode& f : kRootChildren)
      if (f.ino == ino) node = {f.kind, 0}, found = true;
    if (!found) return std::nullopt;
  } else if (ino < kVlmetaBase) {
    node = {NodeKind::meta, int64_t(ino - kMetaBase)};
  } else if (ino < kAttrsBase) {
    node = {NodeKind::vlmeta, int64_t(ino - kVlmetaBase)};
  } else if (ino < kAttrsBase + uint64_t(kMaxNamedShown)) {
    node = {NodeKind::attrs, int64_t(ino - kAttrsBase)};
  } else if (ino >= kChunkBase && ino < kRawBase) {
    node = {NodeKind::chunk, int64_t(ino - kChunkBase)};
  } else if (ino >= kRawBase && ino < kRawBase + uint64_t(kMaxChunksShown)) {
    node = {NodeKind::raw_chunk, int64_t(ino - kRawBase)};
  } else {
    return std::nullopt;
  }
  if (!exists(node)) return std::nullopt;
  return node;
}

std::optional<Node> Tree::lookup(Node parent, std::string_view name) const {
  auto by_name = [&](const std::vector<LayerFile>& layers, NodeKind kind) -> std::optional<Node> {
    for (size_t i = 0; i < layers.size(); ++i)
      if (layers[i].name == name) {
        Node node{kind, int64_t(i)};
        if (exists(node)) return node;
      }
    return std::nullopt;
  };
  switch (parent.kind) {
    case NodeKind::root:
      for (const FixedNode& f : kRootChildren)
        if (name == f.name && exists({f.kind, 0})) return Node{f.kind, 0};
      return std::nullopt;
    case NodeKind::chunks_dir:
      if (auto n = parse_chunk_file_name(name); n && *n < files_.nchunks()) return Node{NodeKind::chunk, *n};
      return std::nullopt;
    case NodeKind::raw_dir: {
      if (name.size() <= kRawSuffix.size() || !name.ends_with(kRawSuffix)) return std::nullopt;
      auto n = parse_chunk_file_name(name.substr(0, name.size() - kRawSuffix.size()));
      if (n && *n < files_.nchunks()) return Node{NodeKind::raw_chunk, *n};
      return std::nullopt;
    }
    case NodeKind::meta_dir: return by_name(files_.metas(), NodeKind::meta);
    case NodeKind::vlmeta_dir: return by_name(files_.vlmetas(), NodeKind::vlmeta);
    case NodeKind::attrs_dir: return by_name(files_.vlmetas(), NodeKind::attrs);
    default: return std::nullopt;
  }
}

std::optional<DirEntry> Tree::entry(Node dir, int64_t i) const {
  if (i < 0) return std::nullopt;
  switch (dir.kind) {
    case NodeKind::root: {
      int64_t k = 0;
      for (const FixedNode& f : kRootChildren) {
        if (!exists({f.kind, 0})) continue;
        if (k++ == i) return DirEntry{f.name, {f.kind, 0}, i + 1};
      }
      return std::nullopt;
    }
    case NodeKind::chunks_dir:
      if (i >= files_.nchunks()) return std::nullopt;
      return DirEntry{chunk_file_name(i), {NodeKind::chunk, i}, i + 1};
    case NodeKind::raw_dir:
      if (i >= files_.nchunks()) return std::nullopt;
      return DirEntry{chunk_file_name(i) + std::string(kRawSuffix), {NodeKind::raw_chunk, i}, i + 1};
    case NodeKind::meta_dir:
      if (i >= int64_t(files_.metas().size())) return std::nullopt;
      return DirEntry{files_.metas()[size_t(i)].name, {NodeKind::meta, i}, i + 1};
    case NodeKind::vlmeta_dir:
      if (i >= int64_t(files_.vlmetas().size())) return std::nullopt;
      return DirEntry{files_.vlmetas()[size_t(i)].name, {NodeKind::vlmeta, i}, i + 1};
    case NodeKind::attrs_dir: {
      // Positions are vlmeta positions; layers without a JSON view are skipped.
      const auto& vl = files_.vlmetas();
      for (int64_t k = i; k < int64_t(vl.size()); ++k)
        if (vl[size_t(k)].attrs_text) return DirEntry{vl[size_t(k)].name, {NodeKind::attrs, k}, k + 1};
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

Node Tree::parent(Node node) const {
  switch (node.kind) {
    case NodeKind::chunk: return {NodeKind::chunks_dir, 0};
    case NodeKind::raw_chunk: return {NodeKind::raw_dir, 0};
    case NodeKind::meta: return {NodeKind::meta_dir, 0};
    case NodeKind::vlmeta: return {NodeKind::vlmeta_dir, 0};
    case NodeKind::attrs: return {NodeKind::attrs_dir, 0};
    default: return {NodeKind::root, 0};
  }
}

struct stat Tree::attributes(Node node) const {
  struct stat st {};
  st.st_ino = inode(node);
  st.st_uid = owner_.uid;
  st.st_gid = owner_.gid;
  if (is_directory(node.kind)) {
    st.st_mode = S_IFDIR | (kDirMode & ~owner_.umask);
    st.st_nlink = node.kind == NodeKind::root ? 7 : 2;  // root: ".", its name, 5 subdirectories' ".."
  } else {
    st.st_mode = S_IFREG | (kFileMode & ~owner_.umask);
    st.st_nlink = 1;
    st.st_size = files_.size(node);
  }
  st.st_blksize = kPreferredIoSize;
  st.st_blocks = (st.st_size + 511) / 512;
  struct timespec t {};
  t.tv_sec = time_t(mtime_ns_ / 1000000000);
  t.tv_nsec = long(mtime_ns_ % 1000000000);
  st.st_atim = st.st_mtim = st.st_ctim = t;
  return st;
}

std::string Tree::path(Node node) const {
  auto layer_name = [](const std::vector<LayerFile>& layers, int64_t i) {
    return i >= 0 && i < int64_t(layers.size()) ? layers[size_t(i)].name : "?";
  };
  switch (node.kind) {
    case NodeKind::root: return "/";
    case NodeKind::chunk: return "chunks/" + chunk_file_name(node.index);
    case NodeKind::raw_chunk: return "raw/" + chunk_file_name(node.index) + std::string(kRawSuffix);
    case NodeKind::meta: return "meta/" + layer_name(files_.metas(), node.index);
    case NodeKind::vlmeta: return "vlmeta/" + layer_name(files_.vlmetas(), node.index);
    case NodeKind::attrs: return "attrs/" + layer_name(files_.vlmetas(), node.index);
    default: return fixed_of(node.kind)->name;
  }
}

}  // namespace blosc2fs
