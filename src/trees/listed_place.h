// A collection's place as last listed: its directories and its entries (items:
// datasets, files, symlinks), each numbered once and for good (one that
// vanishes is marked, never reused), and what each listing changed for the
// kernel. No lock of its own: the collection's tree guards it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "byte_source.h"
#include "collection_source.h"
#include "mount_tree.h"

namespace blosc2fs {

class ListedPlace {
 public:
  static constexpr size_t kMaxItems = size_t(1) << 31;

  struct Child {
    std::string name;
    bool directory = false;
    size_t index = 0;  // a directory's or an item's
  };
  struct Dir {
    std::string path;             // "" the top, "a/b"
    std::vector<Child> children;  // by name
    bool present = true;          // in its parent's latest listing
    bool fetched = false;         // listed at least once
    std::chrono::steady_clock::time_point listed_at{};
    std::string failure;          // why its latest listing failed
    std::string version;          // the source's version of it when it was listed
  };
  struct Item {
    std::string path;
    CollectionEntry entry;
    bool present = true;
    std::string failure;  // a dataset: why it cannot be opened (logged once)
    // A file: its bytes while open (or once its size was asked), and its open handles.
    std::shared_ptr<const ByteSource> bytes;
    uint64_t open_files = 0;
    bool is_dataset() const { return entry.type == CollectionEntry::Type::dataset; }
    bool is_store() const { return entry.kind == DatasetKind::store || entry.kind == DatasetKind::store_directory; }
  };

  // `source_name`: what log lines call the place; `description_name`: the top's
  // own file, which no entry of the top may take.
  ListedPlace(std::string source_name, std::string description_name);

  // A listing of directory d, taken at `version`, made into its children; the
  // entries that went away are marked. `notes`, when given and d was listed
  // before: the names that came and went, for the kernel.
  void apply(size_t d, std::string version, std::vector<CollectionEntry> entries, KernelNotes* notes);
  // The directory of a number of ours, when it is one and present.
  std::optional<size_t> dir_index(uint64_t ino) const;
  Dir& dir(size_t d) { return dirs_[d]; }
  const Dir& dir(size_t d) const { return dirs_[d]; }
  size_t dir_count() const { return dirs_.size(); }
  Item& item(size_t slot) const { return *items_[slot]; }
  size_t item_count() const { return items_.size(); }
  uint64_t listings() const { return listings_; }
  const std::string& listed_at_text() const { return listed_at_text_; }

 private:
  size_t dir_for(const std::string& path);

  const std::string source_name_;
  const std::string description_name_;
  std::vector<Dir> dirs_;
  std::map<std::string, size_t> dir_index_;
  std::vector<std::unique_ptr<Item>> items_;
  std::map<std::string, size_t> item_index_;
  std::string listed_at_text_;
  uint64_t listings_ = 0;
};

}  // namespace blosc2fs
