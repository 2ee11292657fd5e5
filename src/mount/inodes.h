// The names and inode numbers of the mount. Files that always exist by
// position (the root's children, chunks/N, raw/N.chunk) have inode numbers
// computed from what they are, so a frame of a million chunks costs no memory
// here; named files (layers, editor scratch files) get numbers from a counter
// that never repeats, so that a name's inode moves with it on rename, as the
// kernel expects:
//
//   1 root   2 frame.json   3 index.tsv   4 data   5 array.npy
//   6 chunks/   7 raw/   8 meta/   9 vlmeta/   10 attrs/   11 .blosc2fs-cache
//   12 items.jsonl
//   13 usermeta (frames of the older layouts that have one)
//   14 preview.png (N-d arrays of a numeric dtype)
//   15 zarr.json   16 c/   17 zarr2/   18 zarr2/.zarray   19 zarr2/.zattrs (the Zarr view, zarr_files.h)
//   kNamedBase + k   named files, k = 0, 1, 2, ... in order of first sight
//   kChunkBase + n   chunks/N
//   kRawBase + n     raw/N.chunk
//   kZarrChunkBase + n                  c/I/J/... (chunk n; the file `c` of a 0-d array)
//   kZarrDirBase + (p << 4 | k)         c/I/... fixing k >= 1 coordinates, p their C-order number
//   kZarr2ChunkBase + n                 zarr2/I.J...
// (all below 2^44, the part of a number a store leaf's Volume has, store_tree.h)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "node.h"

namespace blosc2fs {

inline constexpr uint64_t kRootIno = 1;
inline constexpr uint64_t kNamedBase = uint64_t(1) << 20;
inline constexpr uint64_t kChunkBase = uint64_t(1) << 40;
inline constexpr uint64_t kRawBase = uint64_t(2) << 40;
inline constexpr int64_t kMaxChunksShown = int64_t(1) << 40;
inline constexpr uint64_t kZarrChunkBase = uint64_t(3) << 40;
inline constexpr uint64_t kZarrDirBase = uint64_t(4) << 40;
inline constexpr uint64_t kZarr2ChunkBase = uint64_t(8) << 40;
// The Zarr view's directories number their prefix in 38 bits: arrays of more
// chunks have no Zarr view.
inline constexpr int64_t kMaxZarrChunks = int64_t(1) << 38;

inline constexpr std::string_view kRawSuffix = ".chunk";

// "00000042": decimal, zero-padded to 8 digits, more when needed.
std::string chunk_file_name(int64_t n);
// Parses a canonical chunk file name; nullopt for anything else ("42", "000000042").
std::optional<int64_t> parse_chunk_file_name(std::string_view name);
// "00000042.chunk" -> 42.
std::optional<int64_t> parse_raw_file_name(std::string_view name);

// Names editors and tools use for files that are not the file being edited:
// dot files (vim's .x.swp, .x.swx), backups ending in '~', vim's write probe
// "4913", emacs' #autosave#, and GNU sed -i's temporary "sedXXXXXX". They live
// in memory and never enter the frame.
bool is_scratch_name(std::string_view name);

// Whether `name` can be a directory entry: not empty, not "." or "..", no '/' or NUL.
bool usable_file_name(const std::string& name);

// The root's children that always sit at fixed inode numbers (2..14), in listing order.
struct FixedFile {
  uint64_t ino;
  NodeKind kind;
  const char* name;
};
inline constexpr FixedFile kRootChildren[] = {
    {2, NodeKind::frame_json, "frame.json"}, {3, NodeKind::index_tsv, "index.tsv"},
    {4, NodeKind::data, "data"},             {5, NodeKind::array_npy, "array.npy"},
    {6, NodeKind::chunks_dir, "chunks"},     {7, NodeKind::raw_dir, "raw"},
    {8, NodeKind::meta_dir, "meta"},         {9, NodeKind::vlmeta_dir, "vlmeta"},
    {10, NodeKind::attrs_dir, "attrs"},      {11, NodeKind::cache_stats, ".blosc2fs-cache"},
    {12, NodeKind::items_jsonl, "items.jsonl"},
    {13, NodeKind::usermeta, "usermeta"},
    {14, NodeKind::preview_png, "preview.png"},
    {15, NodeKind::zarr_json, "zarr.json"},
    {16, NodeKind::zarr_dir, "c"},
    {17, NodeKind::zarr2_dir, "zarr2"},
};
// zarr2/'s fixed files.
inline constexpr FixedFile kZarr2Children[] = {
    {18, NodeKind::zarray, ".zarray"},
    {19, NodeKind::zattrs, ".zattrs"},
};
const FixedFile* fixed_file(NodeKind kind);

// The computed inode of a node that has one (not layers and scratch files).
std::optional<uint64_t> computed_inode(const Node& node);
// The node a computed inode number stands for (existence not checked).
std::optional<Node> computed_node(uint64_t ino);
// The path of `name` in directory `dir` of a frame's tree, for log lines: "vlmeta/x", or "x" at the root.
std::string path_in(NodeKind dir, std::string_view name);
inline uint64_t directory_inode(NodeKind dir) { return dir == NodeKind::root ? kRootIno : fixed_file(dir)->ino; }

}  // namespace blosc2fs
