// What an inode of the mount is: a kind plus, for the families of files
// (chunks, raw chunks, named layers), a position in that family.
#pragma once

#include <cstdint>

namespace blosc2fs {

enum class NodeKind : uint8_t {
  root,
  chunks_dir,
  raw_dir,
  meta_dir,
  vlmeta_dir,
  attrs_dir,
  frame_json,
  index_tsv,
  data,
  array_npy,
  chunk,      // chunks/N: index = N
  raw_chunk,  // raw/N.chunk: index = N
  meta,       // meta/NAME: index = position in FrameFiles' metalayer list
  vlmeta,     // vlmeta/NAME: index = position in FrameFiles' vlmetalayer list
  attrs,      // attrs/NAME: index = the vlmeta position it views
};

struct Node {
  NodeKind kind = NodeKind::root;
  int64_t index = 0;
  bool operator==(const Node&) const = default;
};

inline bool is_directory(NodeKind kind) {
  switch (kind) {
    case NodeKind::root:
    case NodeKind::chunks_dir:
    case NodeKind::raw_dir:
    case NodeKind::meta_dir:
    case NodeKind::vlmeta_dir:
    case NodeKind::attrs_dir:
      return true;
    default:
      return false;
  }
}

}  // namespace blosc2fs
