// CollectionTree: the source's listings (the top at construction, each
// directory on first need, again when its version changes) and the refresh of
// open datasets.
#include "collection_tree.h"
#include "collection_tree_internal.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <set>

#include <spdlog/spdlog.h>

#include "fs_error.h"
#include "read_pieces.h"
#include "store_tree.h"
#include "tree_access.h"
#include "zarr_meta.h"

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

CollectionTree::CollectionTree(std::shared_ptr<CollectionSource> source, Settings settings)
    : source_(std::move(source)), settings_(std::move(settings)) {
  settings_.max_open = std::max<size_t>(settings_.max_open, 1);
  if (source_->remote()) settings_.writable = false;
  ::clock_gettime(CLOCK_REALTIME, &mount_time_);
  dirs_.push_back(Dir{});
  dir_index_[""] = 0;
  round_at_ = std::chrono::steady_clock::now();
  // The mount refuses to start without its top level, with the source's own
  // error as it is (its type, errno and the one line naming the place).
  const std::string version = source_->version("");  // before the listing, as list_now takes it
  std::vector<CollectionEntry> top = source_->list("");
  std::lock_guard lock(mutex_);
  dirs_[0].version = version;
  apply_listing(0, std::move(top), nullptr);
  ++listings_;
  listed_at_text_ = utc_now();
}

size_t CollectionTree::dir_for(const std::string& path) {
  auto it = dir_index_.find(path);
  if (it != dir_index_.end()) return it->second;
  const size_t d = dirs_.size();
  Dir dir;
  dir.path = path;
  dirs_.push_back(std::move(dir));
  dir_index_[path] = d;
  return d;
}

void CollectionTree::list_now(size_t d, KernelNotes* notes, bool if_changed) {
  std::string path, was;
  {
    std::lock_guard lock(mutex_);
    path = dirs_[d].path;
    was = dirs_[d].version;
  }
  // Taken before the listing: a change while it is read shows at the next refresh.
  const std::string version = source_->version(path);
  if (if_changed && !version.empty() && version == was) {
    std::lock_guard lock(mutex_);
    dirs_[d].listed_at = std::chrono::steady_clock::now();
    return;
  }
  std::vector<CollectionEntry> entries;
  try {
    entries = source_->list(path);
  } catch (const std::exception& e) {
    const std::string why = source_->name() + (path.empty() ? "" : "/" + path) + ": cannot be listed: " + e.what();
    std::lock_guard lock(mutex_);
    Dir& dir = dirs_[d];
    if (dir.failure != why) spdlog::error("{}", why);
    dir.failure = why;
    // A directory listed before keeps its listing until the next try.
    dir.listed_at = std::chrono::steady_clock::now();
    if (!dir.fetched && d != 0) {
      const IoError* io = dynamic_cast<const IoError*>(&e);
      throw FsError{io && io->error_number() == ENOENT ? ENOENT : EIO};
    }
    return;
  }
  std::lock_guard lock(mutex_);
  dirs_[d].failure.clear();
  dirs_[d].version = version;
  apply_listing(d, std::move(entries), notes);
  ++listings_;
  listed_at_text_ = utc_now();
}

void CollectionTree::ensure_listed(size_t d) {
  {
    std::lock_guard lock(mutex_);
    if (dirs_[d].fetched) return;
  }
  list_now(d, nullptr);
}

void CollectionTree::apply_listing(size_t d, std::vector<CollectionEntry> entries, KernelNotes* notes) {
  std::set<std::string> before;
  const bool was_fetched = dirs_[d].fetched;
  for (const Child& c : dirs_[d].children) before.insert(c.name);
  const std::string dir_path = dirs_[d].path;
  std::map<std::string, Child> children;
  const std::string reserved = source_->description_name();
  for (CollectionEntry& e : entries) {
    // Sources check names; a second check costs nothing and keeps every name inside the mount.
    if (!single_name(e.name)) continue;
    if ((d == 0 && e.name == reserved) || e.name == kZarrGroupName) {
      spdlog::warn("{}: {} is not shown: the mount's own {} takes its name", source_->name(), join(dir_path, e.name),
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
  if (!notes || !was_fetched) return;
  std::set<std::string> now;
  for (const Child& c : dir.children) now.insert(c.name);
  if (now == before) return;
  notes->inodes.push_back(dir_ino(d));  // its listing
  for (const std::string& name : before)
    if (!now.count(name)) notes->entries.emplace_back(dir_ino(d), name);
  for (const std::string& name : now)
    if (!before.count(name)) notes->entries.emplace_back(dir_ino(d), name);  // a remembered "no such name"
}

void CollectionTree::maybe_refresh(KernelNotes& notes) {
  // Open local datasets follow what other programs do to their files, looked
  // at as often as a Volume looks at its own (every request asks).
  const auto now = std::chrono::steady_clock::now();
  bool children_due = false;
  if (!source_->remote()) {
    std::lock_guard lock(mutex_);
    children_due = now - children_refreshed_at_ >= settings_.leaf_options.refresh_interval;
    if (children_due) children_refreshed_at_ = now;
  }
  if (children_due) {
    std::vector<std::pair<size_t, std::shared_ptr<MountTree>>> open;
    {
      std::lock_guard lock(mutex_);
      for (size_t s : lru_) open.emplace_back(s, items_[s]->tree);
      for (size_t s : open_stores_) open.emplace_back(s, items_[s]->tree);
    }
    for (auto& [slot, tree] : open) {
      KernelNotes own;
      try {
        tree->maybe_refresh(own);
      } catch (const std::exception& e) {
        spdlog::debug("{}: refresh: {}", source_->name(), e.what());
      }
      translate(slot, own);
      notes.inodes.insert(notes.inodes.end(), own.inodes.begin(), own.inodes.end());
      notes.attributes.insert(notes.attributes.end(), own.attributes.begin(), own.attributes.end());
      notes.entries.insert(notes.entries.end(), own.entries.begin(), own.entries.end());
    }
  }
  std::unique_lock round(refresh_mutex_, std::try_to_lock);
  if (!round.owns_lock()) return;  // another thread is listing
  std::vector<size_t> due;
  {
    std::lock_guard lock(mutex_);
    if (std::chrono::steady_clock::now() - round_at_ < settings_.list_ttl) return;
    round_at_ = std::chrono::steady_clock::now();
    for (size_t d = 0; d < dirs_.size(); ++d)
      if (dirs_[d].fetched && dirs_[d].present) due.push_back(d);
  }
  source_->relist();
  for (size_t d : due) {
    try {
      list_now(d, &notes, true);
    } catch (const FsError&) {
    }
  }
}

}  // namespace blosc2fs
