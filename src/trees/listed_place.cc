#include "listed_place.h"

#include <ctime>
#include <set>

#include <spdlog/spdlog.h>

#include "collection_numbers.h"
#include "collection_tree_internal.h"

namespace blosc2fs {

using collection_tree_detail::join;
using collection_tree_detail::kZarrGroupName;

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm {};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

bool single_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

ListedPlace::ListedPlace(std::string source_name, std::string description_name)
    : source_name_(std::move(source_name)), description_name_(std::move(description_name)) {
  dirs_.push_back(Dir{});
  dir_index_[""] = 0;
}

std::optional<size_t> ListedPlace::dir_index(uint64_t ino) const {
  if (ino == kRootIno) return 0;
  if (ino > collection_numbers::kDirBase && ino < collection_numbers::kGroupJsonBase &&
      ino - collection_numbers::kDirBase < dirs_.size()) {
    const size_t d = size_t(ino - collection_numbers::kDirBase);
    if (dirs_[d].present) return d;
  }
  return std::nullopt;
}

size_t ListedPlace::dir_for(const std::string& path) {
  auto it = dir_index_.find(path);
  if (it != dir_index_.end()) return it->second;
  const size_t d = dirs_.size();
  Dir dir;
  dir.path = path;
  dirs_.push_back(std::move(dir));
  dir_index_[path] = d;
  return d;
}

void ListedPlace::apply(size_t d, std::string version, std::vector<CollectionEntry> entries, KernelNotes* notes) {
  dirs_[d].failure.clear();
  dirs_[d].version = std::move(version);
  std::set<std::string> before;
  const bool was_fetched = dirs_[d].fetched;
  for (const Child& c : dirs_[d].children) before.insert(c.name);
  const std::string dir_path = dirs_[d].path;
  std::map<std::string, Child> children;
    for (CollectionEntry& e : entries) {
    // Sources check names; a second check costs nothing and keeps every name inside the mount.
    if (!single_name(e.name)) continue;
    if ((d == 0 && e.name == description_name_) || e.name == kZarrGroupName) {
      spdlog::warn("{}: {} is not shown: the mount's own {} takes its name", source_name_, join(dir_path, e.name),
                   e.name);
      continue;
    }
    const std::string path = join(dir_path, e.name);
    if (e.type == CollectionEntry::Type::directory) {
      const size_t sub = dir_for(path);
      dirs_[sub].present = true;
      children[e.name] = Child{e.name, true, sub};
      continue;
    }
    auto it = item_index_.find(path);
    if (it != item_index_.end()) {
      Item& old = *items_[it->second];
      const bool same = old.entry.type == e.type && old.entry.kind == e.kind && old.entry.link_target == e.link_target;
      if (!same) {
        // Another kind of entry under the same name: a new inode, the old one gone.
        old.present = false;
        item_index_.erase(it);
        it = item_index_.end();
      } else {
        // Only the size may differ (readers of the type, kind and target hold no lock).
        if (old.entry.size != e.size) {
          old.bytes.reset();  // a file that changed: its bytes fetched anew
          old.entry.size = e.size;
        }
        old.present = true;
      }
    }
    if (it == item_index_.end()) {
      if (items_.size() >= kMaxItems) continue;
      auto item = std::make_unique<Item>();
      item->path = path;
      item->entry = e;
      it = item_index_.emplace(path, items_.size()).first;
      items_.push_back(std::move(item));
    }
    children[e.name] = Child{e.name, false, it->second};
  }
  // What went away.
  for (const Child& c : dirs_[d].children) {
    if (children.count(c.name) && children[c.name].directory == c.directory && children[c.name].index == c.index)
      continue;
    if (c.directory) dirs_[c.index].present = false;
    else items_[c.index]->present = false;
  }
  Dir& dir = dirs_[d];
  dir.children.clear();
  for (auto& [name, child] : children) dir.children.push_back(child);
  dir.fetched = true;
  dir.listed_at = std::chrono::steady_clock::now();
  ++listings_;
  listed_at_text_ = utc_now();
  if (!notes || !was_fetched) return;
  std::set<std::string> now;
  for (const Child& c : dir.children) now.insert(c.name);
  if (now == before) return;
  notes->inodes.push_back(collection_numbers::dir_ino(d));  // its listing
  for (const std::string& name : before)
    if (!now.count(name)) notes->entries.emplace_back(collection_numbers::dir_ino(d), name);
  for (const std::string& name : now)
    if (!before.count(name)) notes->entries.emplace_back(collection_numbers::dir_ino(d), name);  // a remembered "no such name"
}

}  // namespace blosc2fs
