#include "caterva2_collection.h"

#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

namespace blosc2fs {

namespace {

// server.json asks api/info of at most this many paths (a request each):
// every path of a smaller listing, else only the files that are not Blosc2.
constexpr size_t kMaxInfos = 1000;

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

class Caterva2Collection final : public CollectionSource {
 public:
  Caterva2Collection(std::shared_ptr<Caterva2Session> session, std::vector<std::string> listing,
                     std::function<Json()> counters)
      : session_(std::move(session)), counters_(std::move(counters)), listing_(std::move(listing)) {}

  std::string name() const override { return session_->url().display(); }
  bool remote() const override { return true; }
  const char* type() const override { return "Caterva2"; }
  std::string description_name() const override { return "server.json"; }

  void relist() const override {
    std::lock_guard lock(mutex_);
    stale_ = true;
  }

  std::vector<CollectionEntry> list(const std::string& dir) const override {
    const std::vector<std::string> listing = current_listing();
    const std::string prefix = dir.empty() ? "" : dir + "/";
    std::map<std::string, CollectionEntry> found;
    for (const std::string& path : listing) {
      if (!path.starts_with(prefix) || path.size() == prefix.size()) continue;
      const std::string rest = path.substr(prefix.size());
      const DatasetKind kind = caterva2_kind(path);
      const size_t slash = rest.find('/');
      CollectionEntry e;
      e.name = rest.substr(0, slash);
      if (slash == std::string::npos) {
        if (kind == DatasetKind::other) continue;  // in server.json only
        e.type = CollectionEntry::Type::dataset;
        e.kind = kind;
      } else if ((kind == DatasetKind::sparse_frame || kind == DatasetKind::store_directory) &&
                 parent_of(path) == prefix + e.name) {
        // The directory holding the marker is the dataset.
        e.type = CollectionEntry::Type::dataset;
        e.kind = kind;
      } else {
        e.type = CollectionEntry::Type::directory;
      }
      auto [it, made] = found.try_emplace(e.name, e);
      if (!made && it->second.type != e.type) {
        spdlog::warn("{}: {} is not shown as a dataset: a directory has its name", name(), prefix + e.name);
        it->second = CollectionEntry{e.name, CollectionEntry::Type::directory, DatasetKind::other, -1, {}};
      }
    }
    std::vector<CollectionEntry> out;
    out.reserve(found.size());
    for (auto& [n, e] : found) out.push_back(std::move(e));
    return out;
  }

  std::shared_ptr<const ByteSource> open_file(const std::string& path) const override {
    throw IoError(name() + "/" + path + ": Caterva2 does not serve this file's bytes", EIO);
  }

  OpenedDataset open_dataset(const std::string& path, DatasetKind kind, VolumeOptions vo, size_t max_open,
                             bool) const override {
    std::shared_ptr<const ByteSource> object;
    std::shared_ptr<const SourceDirectory> directory;
    if (kind == DatasetKind::sparse_frame || kind == DatasetKind::store_directory)
      directory = open_caterva2_directory(session_, path);
    else
      object = session_->open(path);
    return open_listed_remote_dataset(object, directory, name() + "/" + path, std::move(vo), max_open, counters_);
  }

  Json describe() const override {
    const std::vector<std::string> listing = current_listing();
    Json j = Json::object();
    const Caterva2Url& url = session_->url();
    j["url"] = url.display();
    j["server"] = url.server;
    j["root"] = url.root;
    j["directory"] = url.path;
    j["logged_in"] = session_->logged_in();
    const bool all = listing.size() <= kMaxInfos;
    auto wanted = [&](const std::string& path) {
      // cat2-server's api/info replaces a file whose suffix it does not serve
      // natively (README.md, a sparse frame's chunks.b2frame, a .b2d's
      // embed.b2e) with a compressed .b2 copy on its disk: a read-only mount
      // never asks about those.
      if (!caterva2_serves_natively(path)) return false;
      return all || caterva2_kind(path) == DatasetKind::other;
    };
    // The answers not asked yet, asked several at a time (not under the lock: a
    // listing of a thousand paths takes a moment, and another open of
    // server.json may ask the same again, which costs requests, not correctness).
    std::vector<std::string> ask;
    {
      std::lock_guard lock(json_mutex_);
      for (const std::string& path : listing)
        if (wanted(path) && !infos_.count(path) && ask.size() < kMaxInfos) ask.push_back(path);
    }
    std::vector<nlohmann::json> answers = session_->infos(ask);
    Json entries = Json::array();
    size_t datasets = 0, stores = 0, others = 0;
    std::lock_guard lock(json_mutex_);
    for (size_t i = 0; i < ask.size(); ++i) infos_.emplace(ask[i], Json::parse(answers[i].dump()));
    for (const std::string& path : listing) {
      const DatasetKind kind = caterva2_kind(path);
      (kind == DatasetKind::frame || kind == DatasetKind::sparse_frame ? datasets
       : kind == DatasetKind::store || kind == DatasetKind::store_directory ? stores
                                                                             : others)++;
      Json e = Json::object();
      e["path"] = path;
      e["kind"] = caterva2_kind_name(path);
      e["tree"] = kind != DatasetKind::other;  // whether it shows as a directory
      if (kind == DatasetKind::sparse_frame || kind == DatasetKind::store_directory) e["shown_as"] = parent_of(path);
      if (auto it = infos_.find(path); it != infos_.end()) e["info"] = it->second;
      else if (!caterva2_serves_natively(path))
        e["info_not_asked"] = "cat2-server replaces such a file with a compressed .b2 copy when asked about it";
      entries.push_back(std::move(e));
    }
    j["counts"] = Json{{"frames", datasets}, {"stores", stores}, {"other_files", others}};
    j["entries"] = std::move(entries);
    if (!all) j["info_note"] = "api/info is asked only for files that are not Blosc2 in listings of more than 1000 paths";
    return j;
  }

 private:
  // The listing of this refresh round: fetched once after relist(). A listing
  // that fails keeps the last one (and the tree says so in its log).
  std::vector<std::string> current_listing() const {
    std::lock_guard fetch(fetch_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (!stale_) return listing_;
    }
    std::vector<std::string> fresh = session_->list();  // throws: the tree keeps the old listing
    std::lock_guard lock(mutex_);
    listing_ = std::move(fresh);
    stale_ = false;
    std::lock_guard json(json_mutex_);
    infos_.clear();
    return listing_;
  }

  const std::shared_ptr<Caterva2Session> session_;
  const std::function<Json()> counters_;
  mutable std::mutex fetch_mutex_;  // one api/list at a time
  mutable std::mutex mutex_;
  mutable std::vector<std::string> listing_;
  mutable bool stale_ = false;
  mutable std::mutex json_mutex_;
  mutable std::map<std::string, Json> infos_;  // api/info answers of this listing
};

}  // namespace

std::shared_ptr<CollectionSource> caterva2_collection(std::shared_ptr<Caterva2Session> session,
                                                      std::vector<std::string> listing, std::function<Json()> counters) {
  return std::make_shared<Caterva2Collection>(std::move(session), std::move(listing), std::move(counters));
}

}  // namespace blosc2fs
