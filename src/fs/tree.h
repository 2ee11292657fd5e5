// The names of the mount: which inode is which file, what a directory lists,
// and what stat says. Inode numbers are computed from the node, never
// allocated, so a frame of a million chunks costs no memory here:
//
//   1 root   2 frame.json   3 index.tsv   4 data   5 array.npy
//   6 chunks/   7 raw/   8 meta/   9 vlmeta/   10 attrs/
//   kMetaBase + i     meta/NAME     (i: position in FrameFiles::metas())
//   kVlmetaBase + i   vlmeta/NAME   (i: position in FrameFiles::vlmetas())
//   kAttrsBase + i    attrs/NAME    (the JSON view of vlmeta i)
//   kChunkBase + n    chunks/N
//   kRawBase + n      raw/N.chunk
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "frame_files.h"
#include "node.h"

namespace blosc2fs {

inline constexpr uint64_t kMetaBase = uint64_t(1) << 20;
inline constexpr uint64_t kVlmetaBase = uint64_t(2) << 20;
inline constexpr uint64_t kAttrsBase = uint64_t(3) << 20;
inline constexpr uint64_t kChunkBase = uint64_t(1) << 40;
inline constexpr uint64_t kRawBase = uint64_t(2) << 40;
inline constexpr int64_t kMaxChunksShown = int64_t(1) << 40;
inline constexpr int64_t kMaxNamedShown = int64_t(1) << 20;

// Who owns the files and which mode bits they get (-o uid=, gid=, umask=).
struct Ownership {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t umask = 0;
};

struct DirEntry {
  std::string name;
  Node node;
  int64_t next = 0;  // the position to ask for after this entry
};

// "00000042": decimal, zero-padded to 8 digits, more when needed.
std::string chunk_file_name(int64_t n);
// Parses a canonical chunk file name; nullopt for anything else ("42", "000000042").
std::optional<int64_t> parse_chunk_file_name(std::string_view name);

class Tree {
 public:
  // Throws FormatError when the frame has more chunks than inode numbers allow.
  Tree(FrameFiles& files, Ownership owner, int64_t mtime_ns);

  static uint64_t inode(Node node);
  // The node of an inode number, if it names something in this tree.
  std::optional<Node> node(uint64_t ino) const;

  std::optional<Node> lookup(Node parent, std::string_view name) const;
  // The first entry of a directory at position i or later ("." and ".."
  // excluded); nullopt past the end. Positions are stable readdir cookies.
  std::optional<DirEntry> entry(Node dir, int64_t i) const;
  Node parent(Node node) const;

  // stat of a node. Throws FormatError only when the size cannot be known.
  struct stat attributes(Node node) const;
  // "chunks/00000003", for log lines.
  std::string path(Node node) const;

  FrameFiles& files() const { return files_; }

 private:
  bool exists(Node node) const;
  FrameFiles& files_;
  Ownership owner_;
  int64_t mtime_ns_;
};

}  // namespace blosc2fs
