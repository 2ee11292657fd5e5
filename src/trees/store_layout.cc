#include "store_layout.h"

#include <algorithm>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "error.h"
#include "fs_error.h"
#include "inodes.h"
#include "store_key.h"
#include "zarr_meta.h"

namespace blosc2fs {

namespace {

// What a key component shows as when a name of the mount's own or another key's takes it.
constexpr const char* kTakenNameSuffix = ".key";

// Names the mount shows in a leaf's directory: its single-frame tree.
bool name_of_leaf_tree(std::string_view name) {
  for (const FixedFile& f : kRootChildren)
    if (name == f.name) return true;
  return false;
}

// Names the mount shows in a group's directory: store.json (the root), a table's
// files, a TreeStore group's attrs/.
bool name_of_group_tree(std::string_view name, bool root, bool tree) {
  return (root && name == "store.json") || name == "zarr.json" || name == "table.csv" || name == "schema.json" || (tree && name == "attrs");
}

}  // namespace

const StoreLayout::Child* find_store_child(const std::vector<StoreLayout::Child>& children, std::string_view name) {
  auto it = std::lower_bound(children.begin(), children.end(), name,
                             [](const StoreLayout::Child& c, std::string_view n) { return c.name < n; });
  return it != children.end() && it->name == name ? &*it : nullptr;
}

StoreLayout::StoreLayout(const Store& store) : store_(store) {
  if (store_.leaves().size() > store_numbers::kMaxLeaves)
    throw FormatError(store_.path().string() + ": " + std::to_string(store_.leaves().size()) +
                      " keys, more than the " + std::to_string(store_numbers::kMaxLeaves) + " a mount can number");
  // The groups, from the keys' components (keys are sorted, so "/a" comes before "/a/b").
  // A container is a directory keys are shown in: a group's, or a leaf's when keys lie under it.
  const bool tree = store_.tree();
  struct Container {
    std::map<std::string, Child> by_key;  // key component -> the child (Child::name: the name shown)
    std::set<std::string> shown;
    bool leaf = false, root = false;
  };
  std::vector<Container> containers(1);
  containers[0].root = true;
  std::vector<size_t> group_container{0};  // group -> container
  std::map<size_t, size_t> leaf_container;  // leaf -> container, made when a key lies under it
  groups_.push_back(Group{"/", {}, {}, std::nullopt});
  // The name a key component shows as in container c: itself, or with ".key" appended
  // while a name of the mount's own or an earlier key's takes it.
  auto free_name = [&](size_t c, const std::string& name) -> std::optional<std::string> {
    std::string shown = name;
    for (int i = 0; i < 4; ++i, shown += kTakenNameSuffix) {
      const bool reserved = containers[c].leaf ? name_of_leaf_tree(shown)
                                               : name_of_group_tree(shown, containers[c].root, tree);
      if (!reserved && !containers[c].shown.count(shown) && shown.size() <= kMaxKeyComponent) return shown;
    }
    return std::nullopt;
  };
  auto container_of = [&](const Child& child) -> size_t {
    if (!child.leaf) return group_container[child.index];
    auto [it, made] = leaf_container.try_emplace(child.index, containers.size());
    if (made) {
      containers.emplace_back();
      containers.back().leaf = true;
    }
    return it->second;
  };
  for (const StoreLeaf& leaf : store_.leaves()) {
    std::vector<std::string> parts = key_components(leaf.key);
    size_t c = 0, group = 0;
    bool in_group = true, usable = true;
    std::string prefix;
    for (size_t i = 0; i + 1 < parts.size() && usable; ++i) {
      prefix += "/" + parts[i];
      auto it = containers[c].by_key.find(parts[i]);
      if (it == containers[c].by_key.end()) {
        std::optional<std::string> shown = free_name(c, parts[i]);
        if (!shown) {
          usable = false;
          break;
        }
        groups_.push_back(Group{prefix, {}, {}, std::nullopt});
        group_container.push_back(containers.size());
        containers.emplace_back();
        containers[c].shown.insert(*shown);
        it = containers[c].by_key.emplace(parts[i], Child{*shown, false, groups_.size() - 1}).first;
      }
      const Child child = it->second;
      c = container_of(child);
      in_group = !child.leaf;
      group = child.index;
    }
    // A TreeStore group's attribute carrier: the group's attrs/, not a directory of its own.
    if (usable && tree && in_group && parts.back() == kAttrsCarrierName && !groups_[group].attrs_leaf) {
      groups_[group].attrs_leaf = leaves_.size();
      Leaf l;
      l.store_leaf = &leaf;
      leaves_.push_back(std::move(l));
      continue;
    }
    std::optional<std::string> shown;
    if (usable && !containers[c].by_key.count(parts.back())) shown = free_name(c, parts.back());
    if (!shown) {
      spdlog::warn("{}: key {} is not shown: its name is taken by other keys or the mount's own files",
                   store_.path().string(), leaf.key);
      continue;
    }
    if (*shown != parts.back())
      spdlog::info("{}: key {} is shown as '{}': '{}' is taken there", store_.path().string(), leaf.key, *shown,
                   parts.back());
    containers[c].shown.insert(*shown);
    containers[c].by_key.emplace(parts.back(), Child{*shown, true, leaves_.size()});
    Leaf l;
    l.store_leaf = &leaf;
    leaves_.push_back(std::move(l));
  }
  auto sorted_children = [&](size_t c) {
    std::vector<Child> out;
    for (auto& [key, child] : containers[c].by_key) out.push_back(child);
    std::sort(out.begin(), out.end(), [](const Child& x, const Child& y) { return x.name < y.name; });
    return out;
  };
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].children = sorted_children(group_container[g]);
  for (auto& [l, c] : leaf_container) leaves_[l].children = sorted_children(c);
  groups_[0].files.push_back(TreeFile{"store.json", store_numbers::kStoreJsonIno, 0, false});
  add_tables();
  for (size_t g = 0; g < groups_.size(); ++g) {
    TreeFile f{"zarr.json", store_numbers::kFileBase + files_.size(), 0, false, g};
    files_.push_back(f);
    groups_[g].files.push_back(f);
  }
  for (const std::string& line : store_.skipped()) spdlog::warn("{}: skipped {}", store_.path().string(), line);
}

StoreLayout::~StoreLayout() = default;

void StoreLayout::add_tables() {
  for (const Leaf& leaf : leaves_) {  // (marks the parts of each table it finds: no reallocation)
    const std::string& key = leaf.store_leaf->key;
    if (!key.ends_with("/_meta")) continue;
    const std::string prefix = key.substr(0, key.size() - 6);
    // The group directory of the table: the root, or the group at `prefix`.
    const std::string path = prefix.empty() ? "/" : prefix;
    auto group = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.path == path; });
    if (group == groups_.end()) continue;
    const size_t g = size_t(group - groups_.begin());
    try {
      std::shared_ptr<const Frame> meta = store_.open_leaf(*leaf.store_leaf);
      const Vlmetalayer* kind = meta->find_vlmetalayer("kind");
      std::optional<Json> value = kind ? msgpack_to_json(meta->vlmetalayer_content(*kind)) : std::nullopt;
      if (!value || *value != "ctable") continue;
    } catch (const std::exception& e) {
      spdlog::warn("{}: {}: {}", store_.path().string(), key, e.what());
      continue;
    }
    for (Leaf& part : leaves_)
      if (part.store_leaf->key.starts_with(prefix + "/")) part.table_part = true;
    std::unique_ptr<TableCsv> csv;
    try {
      csv = std::make_unique<TableCsv>(store_, prefix);
    } catch (const std::exception& e) {
      spdlog::warn("{}: table {} has no table.csv: {}", store_.path().string(), prefix.empty() ? "/" : prefix,
                   e.what());
      continue;
    }
    const size_t t = tables_.size();
    tables_.push_back(std::make_unique<TableCsvStream>(std::move(csv)));
    for (bool csv : {true, false}) {
      TreeFile f{csv ? "table.csv" : "schema.json", store_numbers::kFileBase + files_.size(), t, csv};
      files_.push_back(f);
      groups_[g].files.push_back(f);
    }
  }
}

std::string StoreLayout::group_zarr_json(size_t g) const {
  Json attrs = Json::object();
  if (const std::optional<size_t> carrier = groups_[g].attrs_leaf) {
    try {
      attrs = frame_attributes(*store_.open_leaf(*leaves_[*carrier].store_leaf));
    } catch (const std::exception& e) {
      spdlog::warn("{}: group {}: its attributes are left out of zarr.json: {}", store_.path().string(),
                   groups_[g].path, e.what());
    }
  }
  return zarr_group_json(attrs);
}

const StoreLayout::TreeFile* StoreLayout::file_of(uint64_t ino) const {
  if (ino == store_numbers::kStoreJsonIno) return &groups_[0].files[0];
  if (ino >= store_numbers::kFileBase && ino - store_numbers::kFileBase < files_.size())
    return &files_[ino - store_numbers::kFileBase];
  return nullptr;
}

uint64_t StoreLayout::child_ino(const Child& child) const {
  return child.leaf ? store_numbers::global(child.index + 1, kRootIno) : store_numbers::kGroupBase + child.index;
}

const StoreLayout::Group* StoreLayout::group_of(uint64_t ino) const {
  if (ino == kRootIno) return &groups_[0];
  if (ino >= store_numbers::kGroupBase && ino - store_numbers::kGroupBase < groups_.size())
    return &groups_[ino - store_numbers::kGroupBase];
  return nullptr;
}

const StoreLayout::Leaf& StoreLayout::leaf(uint64_t slot) const {
  if (slot == 0 || slot > leaves_.size()) throw FsError{ENOENT};
  return leaves_[slot - 1];
}

bool StoreLayout::key_child_named(uint64_t slot, uint64_t local, std::string_view name) const {
  return slot != 0 && local == kRootIno && slot <= leaves_.size() && find_store_child(leaves_[slot - 1].children, name);
}

}  // namespace blosc2fs
