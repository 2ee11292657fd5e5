#include "collection_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "collection_tree_internal.h"
#include "error.h"
#include "file.h"
#include "frame.h"
#include "remote_object.h"
#include "store.h"
#include "store_tree.h"
#include "tree_access.h"

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

using collection_tree_detail::join;

// frame.json's and store.json's "source" of a remote dataset: where it is,
// what was pinned, the mount's counters as they are now.
std::function<Json()> source_fields(std::string shown, std::function<std::string()> identity,
                                    std::function<Json()> counters) {
  return [shown = std::move(shown), identity = std::move(identity), counters = std::move(counters)] {
    Json source = Json::object();
    source["url"] = shown;
    source["identity"] = identity();
    if (counters) source["counters"] = counters();
    Json fields = Json::object();
    fields["source"] = std::move(source);
    return fields;
  };
}

class LocalCollection final : public CollectionSource {
 public:
  explicit LocalCollection(fs::path root) : root_(std::move(root)), place_(open_local_directory(root_)) {}

  std::string name() const override { return root_.string(); }
  bool remote() const override { return false; }
  const char* type() const override { return "local directory"; }

  std::vector<CollectionEntry> list(const std::string& dir) const override {
    std::vector<CollectionEntry> out;
    for (const ListedEntry& listed : place_->list_entries(dir)) {
      const std::string path = join(dir, listed.name);
      CollectionEntry e;
      e.name = listed.name;
      e.size = listed.size;
      switch (listed.type) {
        case ListedEntry::Type::symlink:
          e.type = CollectionEntry::Type::symlink;
          e.link_target = listed.link_target;
          break;
        case ListedEntry::Type::directory:
          e.kind = dataset_kind_of_directory([&](std::string_view marker) { return regular(path, marker); });
          e.type = e.kind == DatasetKind::other ? CollectionEntry::Type::directory : CollectionEntry::Type::dataset;
          break;
        case ListedEntry::Type::file:
          e.kind = dataset_kind_of_file(listed.name);
          if (e.kind == DatasetKind::other && sniffed_frame(path, listed.size)) e.kind = DatasetKind::frame;
          e.type = e.kind == DatasetKind::other ? CollectionEntry::Type::file : CollectionEntry::Type::dataset;
          break;
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  std::shared_ptr<const ByteSource> open_file(const std::string& path) const override {
    return open_local_file_beneath(root_, path);
  }

  OpenedDataset open_dataset(const std::string& path, DatasetKind kind, VolumeOptions vo, size_t max_open,
                             bool writable) const override {
    const fs::path full = root_ / path;
    check_no_link_on_the_way(path, kind == DatasetKind::sparse_frame || kind == DatasetKind::store_directory);
    if ((kind == DatasetKind::store || kind == DatasetKind::store_directory) && !detect_store(full))
      throw FormatError(full.string() + ": not a python-blosc2 store");
    // As a mount of the dataset alone opens it.
    return open_local_dataset(full, writable, std::move(vo), max_open);
  }

  std::string version(const std::string& dir) const override {
    std::optional<struct stat> st = local_stat(dir);
    if (!st || !S_ISDIR(st->st_mode)) return {};
    return std::to_string(st->st_ino) + ":" + std::to_string(st->st_mtim.tv_sec) + "." +
           std::to_string(st->st_mtim.tv_nsec) + ":" + std::to_string(st->st_ctim.tv_sec) + "." +
           std::to_string(st->st_ctim.tv_nsec);
  }

  std::optional<struct stat> local_stat(const std::string& path) const override {
    struct stat st;
    const fs::path full = path.empty() ? root_ : root_ / path;
    if (::lstat(full.c_str(), &st) != 0) return std::nullopt;
    return st;
  }

 private:
  bool regular(const std::string& dir, std::string_view marker) const {
    struct stat st;
    return ::lstat((root_ / dir / std::string(marker)).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }

  // The daemon never follows a link: a directory of the path swapped for a
  // symlink after it was listed makes the open fail (ELOOP), not serve a file elsewhere.
  void check_no_link_on_the_way(const std::string& path, bool directory) const {
    std::string so_far;
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      so_far = join(so_far, path.substr(start, end - start));
      struct stat st;
      if (::lstat((root_ / so_far).c_str(), &st) != 0) throw_errno("cannot open " + (root_ / so_far).string());
      const bool last = end == path.size();
      if (S_ISLNK(st.st_mode))
        throw IoError((root_ / so_far).string() + ": a symlink now: not followed", ELOOP);
      if ((!last || directory) && !S_ISDIR(st.st_mode))
        throw IoError((root_ / so_far).string() + ": not a directory any more", ENOTDIR);
      if (last && !directory && !S_ISREG(st.st_mode))
        throw IoError((root_ / so_far).string() + ": not a regular file any more", EINVAL);
      start = end + 1;
    }
  }

  // Whether a file whose name says nothing begins as a frame does. The
  // answer is kept while the file keeps its size (a relisting reads no file twice).
  bool sniffed_frame(const std::string& path, int64_t size) const {
    if (size < int64_t(kFrameHeaderSniff)) return false;
    {
      std::lock_guard lock(sniffed_mutex_);
      auto it = sniffed_.find(path);
      if (it != sniffed_.end() && it->second.first == size) return it->second.second;
    }
    bool frame = false;
    try {
      File file = File::open_read_beneath(root_, path);
      uint8_t head[kFrameHeaderSniff];
      frame = file.read_at(0, MutableByteSpan(head, sizeof head)) == sizeof head && looks_like_frame_header(head);
    } catch (const std::exception& e) {
      spdlog::debug("{}/{}: not sniffed: {}", root_.string(), path, e.what());
    }
    std::lock_guard lock(sniffed_mutex_);
    if (sniffed_.size() > 1'000'000) sniffed_.clear();
    sniffed_[path] = {size, frame};
    return frame;
  }

  const fs::path root_;
  const std::shared_ptr<const SourceDirectory> place_;
  mutable std::mutex sniffed_mutex_;
  mutable std::map<std::string, std::pair<int64_t, bool>> sniffed_;
};

class RemoteCollection final : public CollectionSource {
 public:
  RemoteCollection(std::shared_ptr<const SourceDirectory> place, const char* type, std::function<Json()> counters)
      : place_(std::move(place)), type_(type), counters_(std::move(counters)) {}

  std::string name() const override { return place_->name(); }
  bool remote() const override { return true; }
  const char* type() const override { return type_; }

  std::vector<CollectionEntry> list(const std::string& dir) const override {
    std::vector<CollectionEntry> out;
    for (const ListedEntry& listed : place_->list_entries(dir)) {
      CollectionEntry e;
      e.name = listed.name;
      e.size = listed.size;
      switch (listed.type) {
        case ListedEntry::Type::symlink:
          continue;  // remote places have none; never followed
        case ListedEntry::Type::directory:
          e.kind = dataset_kind_of_directory_name(listed.name);
          break;
        case ListedEntry::Type::file:
          e.kind = dataset_kind_of_file(listed.name);
          break;
      }
      if (e.kind != DatasetKind::other) e.type = CollectionEntry::Type::dataset;
      else e.type = listed.type == ListedEntry::Type::directory ? CollectionEntry::Type::directory
                                                                : CollectionEntry::Type::file;
      out.push_back(std::move(e));
    }
    return out;
  }

  std::shared_ptr<const ByteSource> open_file(const std::string& path) const override { return place_->open(path); }

  OpenedDataset open_dataset(const std::string& path, DatasetKind kind, VolumeOptions vo, size_t max_open,
                             bool) const override {
    std::shared_ptr<const ByteSource> object;
    std::shared_ptr<const SourceDirectory> directory;
    if (kind == DatasetKind::sparse_frame || kind == DatasetKind::store_directory) directory = place_->subdirectory(path);
    else object = place_->open(path);
    return open_listed_remote_dataset(object, directory, join(place_->name(), path), std::move(vo), max_open,
                                      counters_);
  }

 private:
  const std::shared_ptr<const SourceDirectory> place_;
  const char* const type_;
  const std::function<Json()> counters_;
};

}  // namespace

OpenedDataset open_listed_remote_dataset(std::shared_ptr<const ByteSource> object,
                                         std::shared_ptr<const SourceDirectory> directory, const std::string& shown,
                                         VolumeOptions vo, size_t max_open, const std::function<Json()>& counters) {
  if (directory) {
    vo.live_json_fields = source_fields(
        shown, [] { return std::string("a directory: each object pinned when opened"); }, counters);
  } else {
    auto remote = std::dynamic_pointer_cast<const RemoteObject>(object);
    vo.live_json_fields = source_fields(
        shown, [remote] { return remote ? remote->identity().text() : std::string(); }, counters);
  }
  return open_remote_dataset(StoreSource{std::move(object), std::move(directory)}, shown, std::move(vo), max_open);
}

std::shared_ptr<CollectionSource> local_collection(const fs::path& root) {
  return std::make_shared<LocalCollection>(root);
}

std::shared_ptr<CollectionSource> remote_collection(std::shared_ptr<const SourceDirectory> place, const char* type,
                                                    std::function<Json()> counters) {
  return std::make_shared<RemoteCollection>(std::move(place), type, std::move(counters));
}

}  // namespace blosc2fs
