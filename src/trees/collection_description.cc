// CollectionTree's description file (collection.json; a Caterva2 root's
// server.json): what the place is, every directory's listing with each entry's
// kind, the datasets that failed to open and why, and the mount's counters.
#include "collection_tree.h"
#include "collection_tree_internal.h"

#include <map>

#include <spdlog/spdlog.h>

#include "fs_error.h"

namespace blosc2fs {

using collection_tree_detail::join;

namespace {

const char* type_name(CollectionEntry::Type type) {
  switch (type) {
    case CollectionEntry::Type::directory: return "directory";
    case CollectionEntry::Type::dataset: return "dataset";
    case CollectionEntry::Type::file: return "file";
    case CollectionEntry::Type::symlink: return "symlink";
  }
  return "file";
}

}  // namespace

std::string CollectionTree::description() {
  Json j = source_->describe();
  if (!j.contains("entries")) {
    // Every directory, listed now when it was not yet (an explicit read of the description).
    Json entries = Json::array();
    Json failed = Json::array();
    std::map<std::string, size_t> counts;
    std::vector<size_t> pending{0};
    size_t described = 0;
    bool cut = false;
    while (!pending.empty()) {
      const size_t d = pending.back();
      pending.pop_back();
      try {
        ensure_listed(d);
      } catch (const FsError&) {
      }
      MutexLock lock(mutex_);
      const ListedPlace::Dir& dir = listed_.dir(d);
      if (!dir.failure.empty()) failed.push_back(Json{{"path", dir.path}, {"why", dir.failure}});
      for (auto it = dir.children.rbegin(); it != dir.children.rend(); ++it)
        if (it->directory) pending.push_back(it->index);
      for (const ListedPlace::Child& c : dir.children) {
        if (++described > kMaxDescribedEntries) {
          cut = true;
          break;
        }
        Json e = Json::object();
        const std::string path = join(dir.path, c.name);
        e["path"] = path;
        if (c.directory) {
          e["type"] = "directory";
          ++counts["directories"];
        } else {
          const ListedPlace::Item& item = listed_.item(c.index);
          e["type"] = type_name(item.entry.type);
          switch (item.entry.type) {
            case CollectionEntry::Type::dataset:
              e["kind"] = dataset_kind_name(item.entry.kind, path);
              ++counts[item.is_store() ? "stores" : "frames"];
              e["open"] = datasets_.is_open(c.index);
              if (!item.failure.empty()) {
                e["error"] = item.failure;
                failed.push_back(Json{{"path", path}, {"why", item.failure}});
              }
              break;
            case CollectionEntry::Type::symlink:
              e["target"] = item.entry.link_target;
              ++counts["symlinks"];
              break;
            default:
              e["kind"] = dataset_kind_name(DatasetKind::other, path);
              if (item.entry.size >= 0) e["size"] = item.entry.size;
              ++counts["other_files"];
              break;
          }
        }
        entries.push_back(std::move(e));
      }
      if (cut) break;
    }
    Json c = Json::object();
    for (const char* name : {"frames", "stores", "other_files", "symlinks", "directories"}) c[name] = counts[name];
    j["source"] = source_->name();
    j["type"] = source_->type();
    j["writable"] = settings_.writable;
    j["counts"] = std::move(c);
    j["entries"] = std::move(entries);
    if (cut) j["entries_note"] = "only the first 1000000 entries are described";
    j["failed"] = std::move(failed);
  }
  {
    MutexLock lock(mutex_);
    j["listed_at"] = listed_.listed_at_text();
    j["listings_fetched"] = listed_.listings();
    j["open_datasets"] = datasets_.open_count();
  }
  j["max_open"] = settings_.max_open;
  j["list_ttl"] = settings_.list_ttl.count();
  if (settings_.counters) j["counters"] = settings_.counters();
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace blosc2fs
