// What an inode of the mount is: a kind plus, for the families of files,
// which member: chunks/N and raw/N.chunk by number, layers and editor scratch
// files by name.
#pragma once

#include <cstdint>
#include <string>

namespace blosc2fs {

// Every kind of entry a mount shows, in every tree (a frame, a store, a
// collection): the rows of docs/operations.md's table of outcomes, which
// tests/tools/node_kinds prints so that a kind added here cannot be left out
// of the table or of the operation matrix test.
#define BLOSC2FS_NODE_KINDS(X)                                                                        \
  X(root)            /* the top of a frame's tree (a mount, a store leaf, a collection's dataset) */ \
  X(chunks_dir)                                                                                    \
  X(raw_dir)                                                                                       \
  X(meta_dir)                                                                                      \
  X(vlmeta_dir)                                                                                    \
  X(attrs_dir)                                                                                     \
  X(frame_json)                                                                                    \
  X(index_tsv)                                                                                     \
  X(data)                                                                                          \
  X(array_npy)                                                                                     \
  X(cache_stats)     /* .blosc2fs-cache */                                                         \
  X(items_jsonl)     /* the items of an ObjectArray, BatchArray or ListArray (docs/kinds.md) */    \
  X(usermeta)        /* older layouts' usermeta blob, decompressed (read-only) */                  \
  X(preview_png)     /* the N-d array drawn (src/preview/), made on first open */                  \
  X(chunk)           /* chunks/N: index = N */                                                     \
  X(raw_chunk)       /* raw/N.chunk: index = N */                                                  \
  X(meta)            /* meta/NAME */                                                               \
  X(vlmeta)          /* vlmeta/NAME */                                                             \
  X(attrs)           /* attrs/NAME: the JSON view of vlmetalayer NAME */                           \
  X(scratch)         /* an editor's scratch file, in memory only: name, in directory `dir` */      \
  /* The Zarr view of an N-d array (zarr_files.h, docs/zarr.md): */                                \
  X(zarr_json)       /* zarr.json: the v3 array metadata */                                        \
  X(zarr_dir)        /* c/ (level 0) and c/I/... (level k: index = C-order number of k coords) */  \
  X(zarr_chunk)      /* c/I/J/...: index = the chunk number (a 0-d array's chunk: the file `c`) */ \
  X(zarr2_dir)       /* zarr2/: the v2 view, for GDAL */                                           \
  X(zarray)          /* zarr2/.zarray */                                                           \
  X(zattrs)          /* zarr2/.zattrs */                                                           \
  X(zarr2_chunk)     /* zarr2/I.J...: index = the chunk number */                                  \
  /* A store's own tree (store_tree.h): */                                                          \
  X(store_json)      /* store.json */                                                              \
  X(store_group)     /* the store's top and each group of keys */                                  \
  X(table_csv)       /* a CTable's live rows */                                                    \
  X(table_schema)    /* a CTable's schema.json */                                                  \
  X(group_zarr_json) /* the zarr.json of a store's group or a collection's directory */           \
  /* A collection's own tree (collection_tree.h): */                                                \
  X(collection_json) /* collection.json (a Caterva2 root: server.json) */                          \
  X(collection_dir)  /* the place's top and its folders */                                         \
  X(plain_file)      /* a file that is not a dataset: its stored bytes */                          \
  X(symlink)         /* a symlink, shown as it is */

enum class NodeKind : uint8_t {
#define BLOSC2FS_NODE_KIND_ENUM(name) name,
  BLOSC2FS_NODE_KINDS(BLOSC2FS_NODE_KIND_ENUM)
#undef BLOSC2FS_NODE_KIND_ENUM
};

inline constexpr NodeKind kNodeKinds[] = {
#define BLOSC2FS_NODE_KIND_VALUE(name) NodeKind::name,
    BLOSC2FS_NODE_KINDS(BLOSC2FS_NODE_KIND_VALUE)
#undef BLOSC2FS_NODE_KIND_VALUE
};

// The kind's name as the table of outcomes names it ("chunks_dir").
constexpr const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define BLOSC2FS_NODE_KIND_NAME(name) \
  case NodeKind::name:                \
    return #name;
    BLOSC2FS_NODE_KINDS(BLOSC2FS_NODE_KIND_NAME)
#undef BLOSC2FS_NODE_KIND_NAME
  }
  return "?";
}

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
    case NodeKind::store_group:
    case NodeKind::collection_dir:
      return true;
    default:
      return false;
  }
}

// Files whose bytes a write can change.
inline bool is_writable_file(NodeKind kind) {
  switch (kind) {
    case NodeKind::data:
    case NodeKind::array_npy:  // of a b2nd/caterva array (array_npy.cc refuses the others)
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
