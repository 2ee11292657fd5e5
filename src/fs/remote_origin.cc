#include "remote_origin.h"

#include <optional>
#include <stdexcept>

#include "exit_status.h"
#include "remote_object.h"

namespace blosc2fs {

RemoteOptions remote_options(const RemoteMountOptions& m) {
  RemoteOptions r;
  if (m.connect_timeout) r.connect_timeout = std::chrono::seconds(*m.connect_timeout);
  if (m.timeout) r.idle_timeout = std::chrono::seconds(*m.timeout);
  if (m.retries) r.max_attempts = std::max(1u, *m.retries);
  r.ca_file = m.ca_file;
  r.http_header_file = m.http_header_file;
  if (m.prefetch) r.prefetch_bytes = *m.prefetch;
  r.cache_dir = m.cache_dir;
  if (m.cache_dir_size) r.cache_dir_size = *m.cache_dir_size;
  return r;
}

Json counters_json(const RemoteClient& client) {
  const RemoteCounters c = client.counters();
  Json j = Json::object();
  j["requests"] = c.requests;
  j["bytes_fetched"] = c.bytes;
  j["retries"] = c.retries;
  j["failures"] = c.failures;
  j["cache_hits"] = c.cache_hits;
  j["disk_cache_hits"] = c.disk_cache_hits;
  j["prefetches"] = c.prefetches;
  return j;
}

namespace {


}  // namespace

RemoteOpenError remote_open_error(const IoError& e) {
  if (dynamic_cast<const RangesIgnored*>(&e)) return {kExitFrameInvalid, e.what(), e.error_number()};
  switch (e.error_number()) {
    case ENOENT:
    case EACCES:
    case EINVAL:
      return {kExitFrameMissing, e.what(), e.error_number()};
    default:
      return {kExitUnreachable, e.what(), e.error_number()};
  }
}

RemoteOrigin open_remote_origin(const Options& options) {
  RemoteUrl url;
  try {
    url = parse_remote_url(options.frame.string(), options.remote.s3_endpoint, options.remote.s3_region);
  } catch (const std::invalid_argument& e) {
    throw RemoteOpenError{kExitUsage, e.what()};
  }
  std::shared_ptr<RemoteClient> client;
  try {
    client = std::make_shared<RemoteClient>(remote_options(options.remote));
  } catch (const std::exception& e) {
    throw RemoteOpenError{kExitUsage, e.what()};
  }
  RemoteOrigin origin;
  origin.url = url.display();
  Json identity;
  std::optional<IoError> object_error;
  try {
    if (!url.names_directory()) {
      try {
        auto object = RemoteObject::open(client, url);
        identity = object->identity().text();
        origin.source.file = object;
      } catch (const IoError& e) {
        // No object there: the place below it may hold a sparse frame or a
        // .b2d. (A web server answers a directory's URL with a redirect to
        // its index, which it may refuse, 403, or send: EISDIR.)
        if ((e.error_number() != ENOENT && e.error_number() != EACCES && e.error_number() != EISDIR) ||
            dynamic_cast<const RangesIgnored*>(&e))
          throw;
        object_error = e;
      }
    }
    if (!origin.source.file) try {
      auto directory = open_remote_directory(client, url);
      // A directory of ours holds chunks.b2frame or embed.b2e: one of them must be there.
      bool found = false;
      for (const char* marker : {"chunks.b2frame", "embed.b2e"}) {
        try {
          directory->open(marker);
          found = true;
          break;
        } catch (const IoError& e) {
          if (e.error_number() != ENOENT) throw;
        }
      }
      if (!found) {
        if (object_error && object_error->error_number() == EACCES) throw *object_error;
        throw IoError(url.display() + ": no such object, and no sparse frame (chunks.b2frame) or .b2d store "
                                      "(embed.b2e) below it",
                      ENOENT);
      }
      origin.source.directory = directory;
      identity = "a directory: each object pinned when opened";
    } catch (const IoError& e) {
      // Refused there too: what the URL itself got says more.
      if (object_error && e.error_number() == EACCES) throw *object_error;
      throw;
    }
  } catch (const IoError& e) {
    client->shutdown();
    throw remote_open_error(e);
  }
  const std::string shown = origin.url;
  origin.source_json = [client, shown, identity] {
    Json source = Json::object();
    source["url"] = shown;
    source["identity"] = identity;
    source["counters"] = counters_json(*client);
    Json fields = Json::object();
    fields["source"] = std::move(source);
    return fields;
  };
  origin.shutdown = [client] { client->shutdown(); };
  origin.before_fork = [client] { client->suspend(); };
  origin.after_fork = [client] { client->resume(); };
  return origin;
}

}  // namespace blosc2fs
