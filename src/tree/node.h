// What an inode of the mount is: a kind plus, for the families of files,
// which member: chunks/N and raw/N.chunk by number, layers and editor scratch
// files by name.
#pragma once

#include <cstdint>
#include <string>

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
  cache_stats,  // .blosc2fs-cache
  items_jsonl,  // items.jsonl: the items of an ObjectArray, BatchArray or ListArray (docs/kinds.md)
  usermeta,     // older layouts' usermeta blob, decompressed (read-only)
  preview_png,  // preview.png: the N-d array drawn (src/preview/), made on first open
  chunk,        // chunks/N: index = N
  raw_chunk,    // raw/N.chunk: index = N
  meta,         // meta/NAME
  vlmeta,       // vlmeta/NAME
  attrs,        // attrs/NAME: the JSON view of vlmetalayer NAME
  scratch,      // an editor's scratch file, in memory only: name, in directory `dir`
  plain_file,   // a collection's file that is not a dataset: its stored bytes (collection_tree.h)
  symlink,      // a collection's symlink, shown as it is
  // The Zarr view of an N-d array (zarr_files.h, docs/zarr.md):
  zarr_json,    // zarr.json: the v3 array metadata
  zarr_dir,     // c/ (level 0) and c/I/... (level k: index = the C-order number of the first k coordinates)
  zarr_chunk,   // c/I/J/...: index = the chunk number (a 0-d array's one chunk is the file `c`)
  zarr2_dir,    // zarr2/: the v2 view, for GDAL
  zarray,       // zarr2/.zarray
  zattrs,       // zarr2/.zattrs
  zarr2_chunk,  // zarr2/I.J...: index = the chunk number
};

struct Node {
  NodeKind kind = NodeKind::root;
  int64_t index = 0;
  std::string name;
  NodeKind dir = NodeKind::root;  // scratch files: the directory holding them
  int32_t level = 0;              // zarr_dir: how many chunk coordinates its path fixes
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
    case NodeKind::zarr_dir:
    case NodeKind::zarr2_dir:
      return true;
    default:
      return false;
  }
}

// Files whose bytes a write can change.
inline bool is_writable_file(NodeKind kind) {
  switch (kind) {
    case NodeKind::data:
    case NodeKind::array_npy:  // of a b2nd/caterva array (volume_npy.cc refuses the others)
    case NodeKind::chunk:
    case NodeKind::raw_chunk:
    case NodeKind::meta:
    case NodeKind::vlmeta:
    case NodeKind::attrs:
    case NodeKind::scratch:
      return true;
    default:
      return false;
  }
}

// Layer files: one whole buffer per file while being written.
inline bool is_layer(NodeKind kind) {
  return kind == NodeKind::meta || kind == NodeKind::vlmeta || kind == NodeKind::attrs;
}

}  // namespace blosc2fs
