// The names of a Volume's tree that the frame does not fix: the inode numbers
// given to layer names (in order of first sight, moving with a name when it is
// renamed, as the kernel expects), editors' scratch files (in memory only),
// drafts of the files being written whole (layers, raw chunks), real names an
// editor moved aside onto a scratch name (hidden until written anew or
// removed), and the writable files open on each inode.
// Not thread-safe: the Volume's state lock guards it (volume.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bytes.h"
#include "inodes.h"
#include "json_prefix.h"
#include "mount_tree.h"

namespace blosc2fs {

// The numbers the kernel knows a Volume's files by, kept while a store's leaf is
// closed (store_tree.h) so that the Volume opened again for it answers to the
// same ones: the numbers given to layer names and the kernel's references
// (commits tell the kernel only about inodes it holds).
struct InodeMemory {
  std::vector<std::pair<Node, uint64_t>> layers;  // meta/, vlmeta/, attrs/ names and their numbers
  uint64_t next_named = kNamedBase;
  std::unordered_map<uint64_t, uint64_t> lookups;
};

// A layer file (meta/, vlmeta/, attrs/) or raw/N.chunk being written: held
// whole until its commit.
struct Draft {
  Bytes content;
  bool dirty = false;
  bool created = false;    // the name is not in the frame yet
  bool poisoned = false;   // a write to attrs/ was refused: nothing may be stored
  JsonPrefixChecker json;
  size_t json_checked = 0;
  uint64_t version = 0;
  std::shared_ptr<CommitOutcome> outcome = std::make_shared<CommitOutcome>();
};

// An editor's scratch file, in memory only.
struct Scratch {
  Node node;                          // kind scratch: dir + name
  Bytes content;
  std::optional<std::string> origin;  // a real name moved here (hidden until re-created or removed)
};

// The directory a node's name lives in, and the name ("chunks", "00000003").
NodeKind directory_of(const Node& node);
std::string file_name_of(const Node& node);

class NameTable {
 public:
  using Key = std::pair<NodeKind, std::string>;  // (directory kind, name)

  // --- inode numbers ---
  // The number of a node: computed from what it is, or given to its name.
  std::optional<uint64_t> known_ino(const Node& node) const;
  // The same, given now when the name has none yet.
  uint64_t ino(const Node& node);
  uint64_t next_number() { return next_named_++; }
  // The number a name has (a layer's, a scratch file's).
  std::optional<uint64_t> find(NodeKind dir, const std::string& name) const;
  // What a given number stands for; nullptr when none.
  const Node* named(uint64_t ino) const;
  // `name` is `ino`, which stands for `node`.
  void bind(NodeKind dir, const std::string& name, uint64_t ino, const Node& node);
  void unbind(NodeKind dir, const std::string& name) { by_name_.erase({dir, name}); }
  // What number `ino` stands for from now on (an alias of a renamed file), or nothing.
  void set_named(uint64_t ino, const Node& node) { named_[ino] = node; }
  void erase_named(uint64_t ino) { named_.erase(ino); }
  // The names given in directory `dir`, in name order.
  std::vector<std::pair<std::string, uint64_t>> names_in(NodeKind dir) const;
  // Forgets a name and everything it held (scratch content, draft).
  void drop(NodeKind dir, const std::string& name);
  // The numbers given to layers, and the counter, for a Volume opened again; and back.
  InodeMemory layers() const;
  void restore(const InodeMemory& memory);

  // --- scratch files ---
  // A scratch file `name` in `dir` (replacing one of that name): number `ino`,
  // or a new one. `origin`: the real name moved onto it.
  uint64_t add_scratch(NodeKind dir, const std::string& name, Bytes content, std::optional<std::string> origin,
                       std::optional<uint64_t> ino = std::nullopt);
  Scratch* scratch(uint64_t ino);
  const Scratch* scratch(uint64_t ino) const;
  // The scratch file at `name`, or nothing.
  std::optional<uint64_t> scratch_named(NodeKind dir, const std::string& name) const;
  void erase_scratch(uint64_t ino) { scratch_.erase(ino); }
  // Scratch file `ino` is called `to` in `dir` now.
  void move_scratch(uint64_t ino, NodeKind dir, const std::string& to);
  const std::map<uint64_t, Scratch>& scratches() const { return scratch_; }

  // --- drafts ---
  Draft* draft(uint64_t ino);
  const Draft* draft(uint64_t ino) const;
  Draft& put_draft(uint64_t ino, Draft draft) { return drafts_[ino] = std::move(draft); }
  void erase_draft(uint64_t ino) { drafts_.erase(ino); }
  const std::map<uint64_t, Draft>& drafts() const { return drafts_; }
  // Whether `name` in `dir` is a layer created and not in the frame yet.
  bool created(NodeKind dir, const std::string& name) const;

  // --- real names moved aside ---
  bool hidden(NodeKind dir, const std::string& name) const { return hidden_.count({dir, name}) > 0; }
  void hide(NodeKind dir, const std::string& name) { hidden_.insert({dir, name}); }
  void unhide(NodeKind dir, const std::string& name) { hidden_.erase({dir, name}); }
  // A real name that was moved onto a scratch name is back: its removal is off
  // (the scratch file keeps its copy).
  void cancel_removal(NodeKind dir, const std::string& name);

  // --- writable files open ---
  void add_writer(uint64_t ino);
  // One writer of `ino` closed (`flushed`: as its last flush left it); whether it was the last.
  bool remove_writer(uint64_t ino, bool flushed);
  bool has_writers(uint64_t ino) const { return writers_.count(ino) > 0; }
  // A writer flushed, or wrote again after a flush.
  void writer_flushed(uint64_t ino);
  void writer_resumed(uint64_t ino);
  // Whether a writer of `ino` may still write before its next flush.
  bool has_unflushed_writers(uint64_t ino) const;
  std::vector<uint64_t> written() const;  // inodes open for writing

  // Whether nothing is held but names given to layers: no scratch file, draft,
  // hidden name, writer, or alias of a renamed file.
  bool only_layer_names() const;

 private:
  std::map<uint64_t, Node> named_;   // named inodes (layers, scratch files, aliases of renamed files)
  std::map<Key, uint64_t> by_name_;  // layers and scratch files
  uint64_t next_named_ = kNamedBase;
  std::map<uint64_t, Scratch> scratch_;
  std::map<uint64_t, Draft> drafts_;
  struct Writers {
    int open = 0;       // writable files open
    int unflushed = 0;  // of those, the ones not flushed since they opened or last wrote
  };
  std::map<uint64_t, Writers> writers_;
  std::set<Key> hidden_;             // real names moved onto scratch names
};

}  // namespace blosc2fs
