#include "name_table.h"

#include <algorithm>

namespace blosc2fs {

NodeKind directory_of(const Node& node) {
  switch (node.kind) {
    case NodeKind::chunk: return NodeKind::chunks_dir;
    case NodeKind::raw_chunk: return NodeKind::raw_dir;
    case NodeKind::meta: return NodeKind::meta_dir;
    case NodeKind::vlmeta: return NodeKind::vlmeta_dir;
    case NodeKind::attrs: return NodeKind::attrs_dir;
    case NodeKind::scratch: return node.dir;
    case NodeKind::zarr_chunk: return NodeKind::zarr_dir;
    case NodeKind::zarr_dir: return node.level == 0 ? NodeKind::root : NodeKind::zarr_dir;
    case NodeKind::zarray:
    case NodeKind::zattrs:
    case NodeKind::zarr2_chunk: return NodeKind::zarr2_dir;
    default: return NodeKind::root;
  }
}

std::string file_name_of(const Node& node) {
  switch (node.kind) {
    case NodeKind::root: return "/";
    case NodeKind::chunk: return chunk_file_name(node.index);
    case NodeKind::raw_chunk: return chunk_file_name(node.index) + std::string(kRawSuffix);
    case NodeKind::meta:
    case NodeKind::vlmeta:
    case NodeKind::attrs:
    case NodeKind::scratch: return node.name;
    default: return fixed_file(node.kind)->name;
  }
}

std::optional<uint64_t> NameTable::known_ino(const Node& node) const {
  if (auto ino = computed_inode(node)) return ino;
  return find(directory_of(node), node.name);
}

uint64_t NameTable::ino(const Node& node) {
  if (auto ino = known_ino(node)) return *ino;
  const uint64_t ino = next_named_++;
  bind(directory_of(node), node.name, ino, node);
  return ino;
}

std::optional<uint64_t> NameTable::find(NodeKind dir, const std::string& name) const {
  auto it = by_name_.find({dir, name});
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

const Node* NameTable::named(uint64_t ino) const {
  auto it = named_.find(ino);
  return it == named_.end() ? nullptr : &it->second;
}

void NameTable::bind(NodeKind dir, const std::string& name, uint64_t ino, const Node& node) {
  by_name_[{dir, name}] = ino;
  named_[ino] = node;
}

std::vector<std::pair<std::string, uint64_t>> NameTable::names_in(NodeKind dir) const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (auto it = by_name_.lower_bound({dir, std::string()}); it != by_name_.end() && it->first.first == dir; ++it)
    out.emplace_back(it->first.second, it->second);
  return out;
}

void NameTable::drop(NodeKind dir, const std::string& name) {
  auto it = by_name_.find({dir, name});
  if (it == by_name_.end()) return;
  const uint64_t ino = it->second;
  by_name_.erase(it);
  named_.erase(ino);
  drafts_.erase(ino);
  scratch_.erase(ino);
}

InodeMemory NameTable::layers() const {
  InodeMemory memory;
  for (const auto& [key, ino] : by_name_)
    if (auto it = named_.find(ino); it != named_.end() && it->second.kind != NodeKind::scratch)
      memory.layers.emplace_back(it->second, ino);
  memory.next_named = next_named_;
  return memory;
}

void NameTable::restore(const InodeMemory& memory) {
  for (const auto& [node, ino] : memory.layers) bind(directory_of(node), node.name, ino, node);
  next_named_ = std::max(next_named_, memory.next_named);
}

uint64_t NameTable::add_scratch(NodeKind dir, const std::string& name, Bytes content,
                                std::optional<std::string> origin, std::optional<uint64_t> ino) {
  if (auto old = by_name_.find({dir, name}); old != by_name_.end()) {
    scratch_.erase(old->second);
    named_.erase(old->second);
    drafts_.erase(old->second);
  }
  const uint64_t id = ino ? *ino : next_named_++;
  Node node{NodeKind::scratch, 0, name, dir};
  bind(dir, name, id, node);
  drafts_.erase(id);
  scratch_[id] = Scratch{node, std::move(content), std::move(origin)};
  return id;
}

Scratch* NameTable::scratch(uint64_t ino) {
  auto it = scratch_.find(ino);
  return it == scratch_.end() ? nullptr : &it->second;
}

const Scratch* NameTable::scratch(uint64_t ino) const {
  auto it = scratch_.find(ino);
  return it == scratch_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> NameTable::scratch_named(NodeKind dir, const std::string& name) const {
  std::optional<uint64_t> ino = find(dir, name);
  if (!ino || !scratch_.count(*ino)) return std::nullopt;
  return ino;
}

void NameTable::move_scratch(uint64_t ino, NodeKind dir, const std::string& to) {
  Scratch& s = scratch_.at(ino);
  by_name_.erase({dir, s.node.name});
  s.node.name = to;
  bind(dir, to, ino, s.node);
}

Draft* NameTable::draft(uint64_t ino) {
  auto it = drafts_.find(ino);
  return it == drafts_.end() ? nullptr : &it->second;
}

const Draft* NameTable::draft(uint64_t ino) const {
  auto it = drafts_.find(ino);
  return it == drafts_.end() ? nullptr : &it->second;
}

bool NameTable::created(NodeKind dir, const std::string& name) const {
  std::optional<uint64_t> ino = find(dir, name);
  const Draft* d = ino ? draft(*ino) : nullptr;
  return d && d->created;
}

void NameTable::cancel_removal(NodeKind dir, const std::string& name) {
  hidden_.erase({dir, name});
  for (auto& [ino, s] : scratch_)
    if (s.node.dir == dir && s.origin == name) s.origin.reset();
}

void NameTable::add_writer(uint64_t ino) {
  Writers& w = writers_[ino];
  ++w.open;
  ++w.unflushed;
}

bool NameTable::remove_writer(uint64_t ino, bool flushed) {
  auto it = writers_.find(ino);
  if (it == writers_.end()) return false;
  if (!flushed && it->second.unflushed > 0) --it->second.unflushed;
  if (--it->second.open > 0) return false;
  writers_.erase(it);
  return true;
}

void NameTable::writer_flushed(uint64_t ino) {
  auto it = writers_.find(ino);
  if (it != writers_.end() && it->second.unflushed > 0) --it->second.unflushed;
}

void NameTable::writer_resumed(uint64_t ino) {
  auto it = writers_.find(ino);
  if (it != writers_.end()) ++it->second.unflushed;
}

bool NameTable::has_unflushed_writers(uint64_t ino) const {
  auto it = writers_.find(ino);
  return it != writers_.end() && it->second.unflushed > 0;
}

std::vector<uint64_t> NameTable::written() const {
  std::vector<uint64_t> out;
  for (const auto& [ino, count] : writers_) out.push_back(ino);
  return out;
}

bool NameTable::only_layer_names() const {
  // Every named inode is a layer's current name (no scratch file, no alias of a renamed one).
  return scratch_.empty() && drafts_.empty() && hidden_.empty() && writers_.empty() &&
         named_.size() == by_name_.size();
}

}  // namespace blosc2fs
