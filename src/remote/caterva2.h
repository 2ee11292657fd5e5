// A Caterva2 server (caterva2+http(s)://HOST[:PORT]/ROOT[/PATH]) as blosc2fs
// reads it: the URL, the login (a file holding user and password; the JWT
// cookie `c2subauth` it gets, renewed before it expires), the listing
// (api/list), the description of one path (api/info), and each dataset's
// stored bytes as a RemoteObject over api/fetch (ranges, ETag pinned).
// Every answer is untrusted: sizes bounded, every field checked.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataset_kind.h"
#include "remote_client.h"
#include "remote_object.h"

namespace blosc2fs {

struct Caterva2Url {
  std::string server;  // "http://host:port", no trailing '/'
  std::string root;    // "@public", "@personal", "@shared" or a provider's root
  std::string path;    // below the root, '/'-separated, no leading or trailing '/'; may be empty
  // caterva2+http://host:port/ROOT/PATH: for messages, logs and JSON.
  std::string display() const;
  // server/api/ENDPOINT/ROOT/PATH/relative, each segment percent-encoded.
  std::string api(std::string_view endpoint, const std::string& relative = {}) const;
  // root/path/relative as the server names it.
  std::string server_path(const std::string& relative = {}) const;
};

// Whether ARGUMENT is a caterva2+http:// or caterva2+https:// URL.
bool is_caterva2_url(const std::string& argument);
// Throws std::invalid_argument with a one-line reason: no host, a user name
// or password in it, a query or fragment, no root, an unsafe path.
Caterva2Url parse_caterva2_url(const std::string& argument);

// What a listed path is (dataset_kind_of_listed_path: a frame, a store, the
// index of a sparse frame D/chunks.b2frame, the embedded store D/embed.b2e of
// a .b2d directory), except that a file cat2-server does not serve as it is
// (a .b2e, README.md, ...) is other: it is never fetched.
DatasetKind caterva2_kind(std::string_view path);
// "b2nd", "b2frame", "b2z", "sparse_frame", "b2d", "hdf5", "file"
const char* caterva2_kind_name(std::string_view path);
// Whether cat2-server serves the file as it is (.b2nd, .b2frame, .b2z, .b2,
// .h5, .hdf5, as it spells them): any other file it converts to a .b2 SChunk
// on its disk at the first api/info or api/fetch naming it.
bool caterva2_serves_natively(std::string_view path);

struct Caterva2Login {
  std::string user, password;
};
// FILE's first line is the user (an e-mail address), its second the password.
// Throws std::runtime_error when FILE may be read by group or others, or is
// not two non-empty lines. The password is never quoted in a message.
Caterva2Login read_caterva2_login_file(const std::filesystem::path& file);

// One mount's conversation with the server. Logged in when constructed (with
// a login), the cookie renewed by a thread of its own before it expires.
class Caterva2Session {
 public:
  // Throws IoError: EACCES for a wrong login, EIO for a server that does not answer.
  Caterva2Session(std::shared_ptr<RemoteClient> client, Caterva2Url url, std::optional<Caterva2Login> login);
  ~Caterva2Session();
  Caterva2Session(const Caterva2Session&) = delete;
  Caterva2Session& operator=(const Caterva2Session&) = delete;

  const Caterva2Url& url() const { return url_; }
  const std::shared_ptr<RemoteClient>& client() const { return client_; }
  bool logged_in() const { return login_.has_value(); }

  // Every path below the URL's directory, relative to it, sorted, each a safe
  // relative name (others are left out with a log line); paths inside a .b2z
  // or .h5 are left out too (the container is listed), and so are those
  // inside a directory holding chunks.b2frame or embed.b2e, but that file
  // (the directory is one sparse frame or .b2d store). Throws IoError
  // (EACCES: refused, e.g. @personal without a login; ENOENT; EIO).
  std::vector<std::string> list() const;
  // Every path below `relative`, relative to it, sorted, as the server lists
  // them (nothing left out but unsafe names). Throws IoError.
  std::vector<std::string> list_below(const std::string& relative) const;
  // api/info of `relative` (below the URL's directory), checked to be a JSON
  // object; the server's own file path (urlpath) removed. Throws IoError.
  nlohmann::json info(const std::string& relative) const;
  // api/info of each of `relatives`, at most kInfosInFlight requests at once;
  // each answer checked as info() checks it, or {"error": why}. Those that
  // fail in flight (a refused cookie, a failure worth retrying) are asked
  // again one by one through info().
  static constexpr size_t kInfosInFlight = 16;
  std::vector<nlohmann::json> infos(const std::vector<std::string>& relatives) const;
  // The dataset's stored bytes (api/fetch), its ETag pinned. Throws IoError, RangesIgnored.
  std::shared_ptr<const RemoteObject> open(const std::string& relative, bool with_tail = true) const;

  // After a 401/403: logs in again, unless another caller did while this one
  // waited (a burst of refused reads logs in once). True when there is a fresh cookie to try.
  // Throws IoError as the login does.
  bool log_in_again();

  // Around fuse_daemonize's fork: the renewal thread stops and starts again.
  void before_fork();
  void after_fork();
  // Ends the renewal thread (the unmount).
  void shutdown();

 private:
  // POST /auth/jwt/login; sets the cookie the client sends. Throws IoError.
  void log_in();
  void renew_loop(std::stop_token stop);
  void start_renewal();
  void stop_renewal();
  // GET `url` with bounded retries; the body (at most `max_body` bytes) of a 200.
  Bytes get(const std::string& url, size_t max_body, const std::string& what) const;

  const std::shared_ptr<RemoteClient> client_;
  const Caterva2Url url_;
  const std::optional<Caterva2Login> login_;
  std::mutex relogin_mutex_;  // one login again at a time
  std::atomic<uint64_t> logins_{0};
  std::mutex renew_mutex_;
  std::condition_variable_any renew_wake_;
  std::chrono::seconds cookie_lifetime_{12 * 3600};
  std::chrono::steady_clock::time_point logged_in_at_{};
  std::jthread renewal_;
};

// A directory on the server (a sparse frame's, a .b2d store's) as a
// SourceDirectory: list() from api/list, open(name) a RemoteObject over
// api/fetch of that path.
std::shared_ptr<const SourceDirectory> open_caterva2_directory(std::shared_ptr<const Caterva2Session> session,
                                                               std::string relative);

}  // namespace blosc2fs
