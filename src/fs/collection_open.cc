#include "collection_open.h"

#include <unistd.h>

#include <algorithm>
#include <system_error>

#include <spdlog/spdlog.h>

#include "caterva2.h"
#include "caterva2_collection.h"
#include "dataset_opener.h"
#include "exit_status.h"
#include "offload.h"
#include "remote_object.h"
#include "remote_url.h"

namespace blosc2fs {

namespace fs = std::filesystem;

namespace {

size_t max_open_of(const Options& o) { return std::max<size_t>(o.max_open.value_or(kDefaultMaxOpen), 1); }

// The Volumes of a collection's datasets: each open one gets an equal share of the cache.
VolumeOptions leaf_options(const Options& o, uint64_t cache_budget, bool remote) {
  VolumeOptions vo;
  vo.access = AccessOverrides{o.uid, o.gid, o.umask};
  vo.more_stats = io_uring_stats;
  if (remote) vo.fixed_access = FrameAccess{::getuid(), ::getgid(), 0444, 0};
  vo.cache_budget = std::max<uint64_t>(cache_budget / max_open_of(o), 1);
  vo.preferred_chunksize = o.create.chunksize;
  return vo;
}

}  // namespace

CollectionMount open_caterva2(const Options& options, uint64_t cache_budget) {
  Caterva2Url url;
  std::optional<Caterva2Login> login;
  std::shared_ptr<RemoteClient> client;
  try {
    url = parse_caterva2_url(options.frame.string());
    if (!options.remote.caterva2_login_file.empty())
      login = read_caterva2_login_file(options.remote.caterva2_login_file);
    client = std::make_shared<RemoteClient>(remote_options(options.remote));
  } catch (const std::exception& e) {
    throw RemoteOpenError{kExitUsage, e.what()};
  }
  auto fail = [&](const IoError& e) -> RemoteOpenError {
    client->shutdown();
    return remote_open_error(e);
  };
  CollectionMount mount;
  std::shared_ptr<Caterva2Session> session;
  try {
    session = std::make_shared<Caterva2Session>(client, url, login);
  } catch (const IoError& e) {
    throw fail(e);
  }
  if (login) {
    // Reads refused with a cookie the server no longer takes log in again;
    // the client outlives the session, so it holds it weakly.
    client->set_reauthenticate([weak = std::weak_ptr<Caterva2Session>(session)] {
      std::shared_ptr<Caterva2Session> s = weak.lock();
      return s && s->log_in_again();
    });
  }
  const std::function<Json()> counters = [client] { return counters_json(*client); };
  if (!url.path.empty() &&
      (caterva2_kind(url.path) == DatasetKind::frame || caterva2_kind(url.path) == DatasetKind::store)) {
    // One dataset: mounted as a remote frame or store is (mount.cc).
    try {
      std::shared_ptr<const RemoteObject> object = session->open("");
      mount.origin.url = url.display();
      mount.origin.source.file = object;
      const std::string shown = url.display();
      mount.origin.source_json = [object, shown, counters] {
        Json source = Json::object();
        source["url"] = shown;
        source["identity"] = object->identity().text();
        source["counters"] = counters();
        Json fields = Json::object();
        fields["source"] = std::move(source);
        return fields;
      };
    } catch (const IoError& e) {
      throw fail(e);
    }
  } else {
    std::vector<std::string> listing;
    try {
      listing = session->list();
    } catch (const IoError& e) {
      throw fail(e);
    }
    CollectionTree::Settings settings;
    settings.list_ttl = std::chrono::seconds(options.remote.list_ttl.value_or(kDefaultRemoteListTtl));
    settings.max_open = max_open_of(options);
    settings.leaf_options = leaf_options(options, cache_budget, true);
    settings.counters = counters;
    try {
      mount.tree = std::make_unique<CollectionTree>(caterva2_collection(session, std::move(listing), counters),
                                                    std::move(settings));
    } catch (const IoError& e) {
      throw fail(e);
    }
    mount.origin.url = url.display();
  }
  mount.origin.shutdown = [client, session] {
    session->shutdown();
    client->shutdown();
  };
  mount.origin.before_fork = [client, session] {
    session->before_fork();
    client->suspend();
  };
  mount.origin.after_fork = [client, session] {
    client->resume();
    session->after_fork();
  };
  return mount;
}

bool is_local_collection(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return false;
  if (fs::exists(path / std::string(kSparseFrameMarker), ec)) return false;
  return !is_local_store(path);
}

std::unique_ptr<CollectionTree> open_local_collection(const Options& o, const fs::path& path, uint64_t cache_budget) {
  CollectionTree::Settings settings;
  settings.list_ttl = std::chrono::seconds(o.remote.list_ttl.value_or(kDefaultLocalListTtl));
  settings.max_open = max_open_of(o);
  settings.writable = o.read_only != true;
  settings.leaf_options = leaf_options(o, cache_budget, false);
  return std::make_unique<CollectionTree>(local_collection(path), std::move(settings));
}

CollectionMount open_remote_collection(const Options& o, uint64_t cache_budget) {
  RemoteUrl url;
  std::shared_ptr<RemoteClient> client;
  try {
    url = parse_remote_url(o.frame.string(), o.remote.s3_endpoint, o.remote.s3_region);
    client = std::make_shared<RemoteClient>(remote_options(o.remote));
  } catch (const std::exception& e) {
    throw RemoteOpenError{kExitUsage, e.what()};
  }
  CollectionMount mount;
  const std::function<Json()> counters = [client] { return counters_json(*client); };
  CollectionTree::Settings settings;
  settings.list_ttl = std::chrono::seconds(o.remote.list_ttl.value_or(kDefaultRemoteListTtl));
  settings.max_open = max_open_of(o);
  settings.leaf_options = leaf_options(o, cache_budget, true);
  settings.counters = counters;
  try {
    std::shared_ptr<const SourceDirectory> place = open_remote_directory(client, url.as_directory());
    mount.tree = std::make_unique<CollectionTree>(
        remote_collection(place, url.s3() ? "S3 prefix" : "web index", counters), std::move(settings));
  } catch (const IoError& e) {
    client->shutdown();
    throw remote_open_error(e);
  } catch (const std::exception& e) {  // UnsupportedError (no index), FormatError (over a bound)
    client->shutdown();
    throw RemoteOpenError{kExitFrameMissing, e.what()};
  }
  mount.origin.url = url.display();
  mount.origin.shutdown = [client] { client->shutdown(); };
  mount.origin.before_fork = [client] { client->suspend(); };
  mount.origin.after_fork = [client] { client->resume(); };
  return mount;
}

}  // namespace blosc2fs
