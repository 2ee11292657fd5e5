#include "caterva2.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "error.h"
#include "retried_request.h"
#include "thread_name.h"

namespace blosc2fs {

namespace {

// Bounds on what the server may send: a listing of a million paths is about
// 50 MB of JSON; a dataset's description is a few kilobytes.
constexpr size_t kMaxListBody = size_t(64) << 20;
constexpr size_t kMaxListEntries = 1'000'000;
constexpr size_t kMaxPathLength = 4096;
constexpr size_t kMaxInfoBody = size_t(4) << 20;
constexpr size_t kMaxLoginBody = 64 << 10;
// The cookie is renewed when half its life is gone, never more often than this.
constexpr std::chrono::seconds kMinRenewal{30};
constexpr std::chrono::seconds kRenewalRetry{60};

constexpr std::string_view kPrefix = "caterva2+";
constexpr const char* kCookieName = "c2subauth";

bool ends_with_lower(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

// Whether a path component names a container whose members api/list also lists.
bool container_name(std::string_view name) {
  return ends_with_lower(name, ".b2z") || ends_with_lower(name, ".h5") || ends_with_lower(name, ".hdf5");
}

// Percent-encodes a path, keeping '/' and '@' (a root's first character, which
// RFC 3986 allows in a path segment).
std::string encode_path(const std::string& path) {
  std::string out = percent_encode(path, true);
  for (size_t at = out.find("%40"); at != std::string::npos; at = out.find("%40", at + 1)) out.replace(at, 3, "@");
  return out;
}

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

bool retryable(const HttpAnswer& a) { return (a.curl_code != 0 && !a.body_overflow) || a.status == 429 || a.status >= 500; }

// urlpath names a file on the server's disk: not ours to show.
void drop_server_paths(nlohmann::json& j, int depth = 0) {
  if (depth > 8) return;
  if (j.is_object()) {
    j.erase("urlpath");
    for (auto& [k, v] : j.items()) drop_server_paths(v, depth + 1);
  } else if (j.is_array()) {
    for (auto& v : j) drop_server_paths(v, depth + 1);
  }
}

}  // namespace

std::string Caterva2Url::display() const {
  const std::string scheme = server.starts_with("https://") ? "caterva2+https://" : "caterva2+http://";
  return scheme + server.substr(server.find("://") + 3) + "/" + join(root, path);
}

std::string Caterva2Url::server_path(const std::string& relative) const { return join(join(root, path), relative); }

std::string Caterva2Url::api(std::string_view endpoint, const std::string& relative) const {
  return server + "/api/" + std::string(endpoint) + "/" + encode_path(server_path(relative));
}

bool is_caterva2_url(const std::string& argument) {
  return argument.starts_with("caterva2+http://") || argument.starts_with("caterva2+https://");
}

Caterva2Url parse_caterva2_url(const std::string& argument) {
  if (!is_caterva2_url(argument)) throw std::invalid_argument("not a caterva2+http:// or caterva2+https:// URL");
  for (unsigned char c : argument)
    if (std::iscntrl(c) || c == ' ') throw std::invalid_argument("a control character or space in the URL");
  const std::string rest = argument.substr(kPrefix.size());
  const size_t colon = rest.find("://");
  const std::string scheme = rest.substr(0, colon);
  const size_t start = colon + 3;
  const size_t slash = rest.find_first_of("/?#", start);
  const std::string authority = rest.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
  if (authority.empty()) throw std::invalid_argument("no host in the URL");
  if (authority.find('@') != std::string::npos)
    throw std::invalid_argument("a user name or password in the URL would show in the process list and mount "
                                "table: use -o caterva2_login_file=FILE");
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (path.find_first_of("?#") != std::string::npos)
    throw std::invalid_argument("a caterva2+ URL has no query or fragment");
  while (path.starts_with("/")) path.erase(0, 1);
  while (path.ends_with("/")) path.pop_back();
  if (path.empty()) throw std::invalid_argument("no root in the URL (e.g. caterva2+http://host/@public)");
  if (path.find('%') != std::string::npos)
    throw std::invalid_argument("give the URL's path unencoded (no '%')");
  if (!is_safe_relative_name(path)) throw std::invalid_argument("the URL's path has empty, '.' or '..' parts");
  Caterva2Url u;
  u.server = scheme + "://" + authority;
  const size_t root_end = path.find('/');
  u.root = path.substr(0, root_end);
  u.path = root_end == std::string::npos ? "" : path.substr(root_end + 1);
  return u;
}

namespace {
constexpr std::string_view kSparseIndex = kSparseFrameMarker;
constexpr std::string_view kEmbedStore = kStoreDirectoryMarker;

}  // namespace

DatasetKind caterva2_kind(std::string_view path) {
  const DatasetKind kind = dataset_kind_of_listed_path(path);
  if (kind == DatasetKind::frame || kind == DatasetKind::store) return caterva2_serves_natively(path) ? kind : DatasetKind::other;
  return kind;
}

bool caterva2_serves_natively(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  const std::string_view suffix = name.substr(dot);
  for (std::string_view native : {".b2nd", ".b2frame", ".b2z", ".b2", ".h5", ".hdf5"})
    if (suffix == native) return true;
  return false;
}

const char* caterva2_kind_name(std::string_view path) { return dataset_kind_name(caterva2_kind(path), path); }

Caterva2Login read_caterva2_login_file(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    throw std::runtime_error("caterva2_login_file " + file.string() + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("caterva2_login_file " + file.string() + " is not a file");
  if (st.st_mode & 077)
    throw std::runtime_error("caterva2_login_file " + file.string() +
                             " may be read by others (it holds a password): chmod 600 it");
  if (st.st_size > 64 << 10) throw std::runtime_error("caterva2_login_file " + file.string() + " is too long");
  std::ifstream in(file);
  if (!in) throw std::runtime_error("caterva2_login_file " + file.string() + ": cannot read it");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line) && lines.size() < 3) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  auto bad = [](const std::string& s) {
    return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::iscntrl(c); });
  };
  // The lines are never quoted: the second is the password.
  if (lines.size() != 2 || bad(lines[0]) || bad(lines[1]))
    throw std::runtime_error("caterva2_login_file " + file.string() +
                             " must hold two lines: the user (e-mail) and the password");
  return Caterva2Login{lines[0], lines[1]};
}

Caterva2Session::Caterva2Session(std::shared_ptr<RemoteClient> client, Caterva2Url url,
                                 std::optional<Caterva2Login> login)
    : client_(std::move(client)), url_(std::move(url)), login_(std::move(login)) {
  // Caterva2 serves stored datasets with Starlette's FileResponse, which
  // answers several ranges as multipart/byteranges.
  client_->enable_multi_range();
  if (login_) {
    log_in();
    start_renewal();
  }
}

Caterva2Session::~Caterva2Session() { stop_renewal(); }

void Caterva2Session::log_in() {
  HttpRequest request;
  request.url = url_.server + "/auth/jwt/login";
  request.post_fields = "username=" + percent_encode(login_->user, false) +
                        "&password=" + percent_encode(login_->password, false);
  request.headers.push_back("Content-Type: application/x-www-form-urlencoded");
  request.max_body = kMaxLoginBody;
  request.timeout = std::chrono::milliseconds(client_->options().read_deadline);
  const std::string what = url_.server + "/auth/jwt/login";
  // Its own loop, not perform_with_retries: a refusal here is a wrong login,
  // never a cookie to renew by logging in again.
  const unsigned attempts = std::max(1u, client_->options().max_attempts);
  for (unsigned attempt = 1;; ++attempt) {
    HttpAnswer a = client_->perform(request);
    if (a.aborted) throw IoError(what + ": the mount is shutting down", EIO);
    if (a.curl_code == 0 && a.status >= 200 && a.status < 300) {
      for (const std::string& cookie : a.set_cookies) {
        const std::string pair = cookie.substr(0, cookie.find(';'));
        const size_t eq = pair.find('=');
        if (eq == std::string::npos || pair.substr(0, eq) != kCookieName) continue;
        const std::string token = pair.substr(eq + 1);
        const bool clean = !token.empty() && token.size() < 8192 &&
                           std::all_of(token.begin(), token.end(), [](unsigned char c) {
                             return std::isgraph(c) && c != ';' && c != ',' && c != '"' && c != '\\';
                           });
        if (!clean) break;
        // Max-Age, when given, says how long the token lasts.
        std::chrono::seconds lifetime{12 * 3600};
        if (const size_t m = cookie.find("Max-Age="); m != std::string::npos) {
          const long seconds = std::strtol(cookie.c_str() + m + 8, nullptr, 10);
          if (seconds > 0) lifetime = std::chrono::seconds(std::min<long>(seconds, 30L * 24 * 3600));
        }
        client_->set_session_headers({std::string("Cookie: ") + kCookieName + "=" + token});
        std::lock_guard lock(renew_mutex_);
        cookie_lifetime_ = lifetime;
        logged_in_at_ = std::chrono::steady_clock::now();
        ++logins_;
        spdlog::info("{}: logged in as {}", url_.server, login_->user);
        return;
      }
      throw IoError(what + ": the answer holds no " + kCookieName + " cookie (is login enabled on the server?)", EIO);
    }
    if (a.curl_code == 0 && (a.status == 400 || a.status == 401 || a.status == 403))
      throw IoError(what + ": the server refused the login of " + login_->user + " (HTTP " + str(a.status) + ")",
                    EACCES);
    if (a.curl_code == 0 && a.status == 404)
      throw IoError(what + ": no login there (HTTP 404): the server has login=false?", EACCES);
    const std::string why = a.curl_code ? a.curl_error : "HTTP " + str(a.status);
    if (!retryable(a) || attempt >= attempts) throw IoError(what + ": " + why, EIO);
    client_->count_retry();
    if (!client_->backoff_sleep(client_->backoff(attempt))) throw IoError(what + ": the mount is shutting down", EIO);
  }
}

bool Caterva2Session::log_in_again() {
  if (!login_) return false;
  const uint64_t seen = logins_.load();
  std::lock_guard one_at_a_time(relogin_mutex_);
  // A login that ended while this caller waited: its cookie is the fresh one.
  if (logins_.load() != seen) return true;
  spdlog::info("{}: the server refused the session cookie: logging in again", url_.server);
  log_in();
  return true;
}

void Caterva2Session::start_renewal() {
  if (!login_ || renewal_.joinable()) return;
  renewal_ = std::jthread([this](std::stop_token stop) {
    name_this_thread("b2fs-c2-login");
    renew_loop(stop);
  });
}

void Caterva2Session::stop_renewal() {
  if (!renewal_.joinable()) return;
  renewal_.request_stop();
  renew_wake_.notify_all();
  renewal_.join();
  renewal_ = std::jthread();
}

void Caterva2Session::renew_loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::chrono::steady_clock::time_point due;
    {
      std::unique_lock lock(renew_mutex_);
      due = logged_in_at_ + std::max<std::chrono::seconds>(cookie_lifetime_ / 2, kMinRenewal);
      renew_wake_.wait_until(lock, stop, due, [] { return false; });
    }
    if (stop.stop_requested()) return;
    try {
      log_in();
    } catch (const std::exception& e) {
      spdlog::warn("{}: logging in again failed ({}); trying again in {} s", url_.server, e.what(),
                   kRenewalRetry.count());
      std::unique_lock lock(renew_mutex_);
      logged_in_at_ = std::chrono::steady_clock::now() - std::max<std::chrono::seconds>(cookie_lifetime_ / 2, kMinRenewal) +
                      kRenewalRetry;
    }
  }
}

void Caterva2Session::before_fork() { stop_renewal(); }
void Caterva2Session::after_fork() { start_renewal(); }
void Caterva2Session::shutdown() { stop_renewal(); }

Bytes Caterva2Session::get(const std::string& url, size_t max_body, const std::string& what) const {
  HttpRequest request;
  request.url = url;
  request.max_body = max_body;
  try {
    // A refused cookie logs in again there (the client's reauthenticate hook).
    HttpAnswer a = perform_with_retries(*client_, request, what, [&](const HttpAnswer& a) -> Outcome {
      if (a.status != 200) return {Verdict::fail, EIO, "unexpected HTTP " + str(a.status)};
      if (a.body_overflow) return {Verdict::fail, EIO, "the answer is longer than " + str(int64_t(max_body)) + " bytes"};
      if (!a.content_encoding.empty() && a.content_encoding != "identity")
        return {Verdict::fail, EIO, "the answer is encoded (" + a.content_encoding + ")"};
      return {};
    });
    return std::move(a.body);
  } catch (const IoError& e) {
    if (e.error_number() == EACCES && !login_)
      throw IoError(std::string(e.what()) + ": this root needs a login (-o caterva2_login_file=FILE)", EACCES);
    if (e.error_number() == ENOENT) throw IoError(what + ": no such path (HTTP 404)", ENOENT);
    throw;
  }
}

std::vector<std::string> Caterva2Session::list_below(const std::string& relative) const {
  const std::string what = url_.display() + (relative.empty() ? "" : "/" + relative) + " (api/list)";
  const Bytes body = get(url_.api("list", relative), kMaxListBody, what);
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_array()) throw IoError(what + ": the answer is not a JSON list", EIO);
  if (j.size() > kMaxListEntries)
    throw IoError(what + ": " + str(int64_t(j.size())) + " paths, more than " + str(int64_t(kMaxListEntries)), EIO);
  std::set<std::string> paths;
  size_t skipped = 0;
  for (const auto& item : j) {
    if (!item.is_string()) {
      ++skipped;
      continue;
    }
    std::string path = item.get<std::string>();
    const bool usable = path.size() <= kMaxPathLength && is_safe_relative_name(path) &&
                        std::none_of(path.begin(), path.end(), [](unsigned char c) { return std::iscntrl(c); });
    if (!usable) {
      ++skipped;
      continue;
    }
    paths.insert(std::move(path));
  }
  if (skipped) spdlog::warn("{}: {} listed paths left out (not strings, or unsafe names)", what, skipped);
  return {paths.begin(), paths.end()};
}

std::vector<std::string> Caterva2Session::list() const {
  const std::vector<std::string> listed = list_below("");
  // Directories that are one dataset: a sparse frame's (its index wins, as in
  // detect_store, when both markers are there) and a .b2d store's.
  std::map<std::string, std::string_view> marked;  // directory -> its marker
  for (const std::string& path : listed) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string_view name = std::string_view(path).substr(slash + 1);
    if (name == kSparseIndex) marked[path.substr(0, slash)] = kSparseIndex;
    else if (name == kEmbedStore) marked.try_emplace(path.substr(0, slash), kEmbedStore);
  }
  std::set<std::string> paths;
  for (std::string path : listed) {
    // A member of a .b2z or .h5 (the container is shown), or of a marked
    // directory (its marker is kept), whichever comes first from the top.
    size_t at = 0;
    while (true) {
      const size_t slash = path.find('/', at);
      if (slash == std::string::npos) break;
      const std::string dir = path.substr(0, slash);
      if (auto m = marked.find(dir); m != marked.end()) {
        path = dir + "/" + std::string(m->second);
        break;
      }
      if (container_name(std::string_view(path).substr(at, slash - at))) {
        path.resize(slash);
        break;
      }
      at = slash + 1;
    }
    paths.insert(std::move(path));
  }
  return {paths.begin(), paths.end()};
}

nlohmann::json Caterva2Session::info(const std::string& relative) const {
  const std::string what = url_.display() + (relative.empty() ? "" : "/" + relative) + " (api/info)";
  const Bytes body = get(url_.api("info", relative), kMaxInfoBody, what);
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw IoError(what + ": the answer is not a JSON object", EIO);
  drop_server_paths(j);
  return j;
}

std::vector<nlohmann::json> Caterva2Session::infos(const std::vector<std::string>& relatives) const {
  struct Pending {
    std::mutex mutex;
    std::condition_variable done;
    size_t in_flight = 0;
    std::vector<std::optional<nlohmann::json>> answers;
  };
  auto pending = std::make_shared<Pending>();
  pending->answers.resize(relatives.size());
  size_t next = 0;
  for (;;) {
    std::vector<size_t> batch;
    {
      std::unique_lock lock(pending->mutex);
      // Bounded: every transfer ends by its own timeouts or the unmount's shutdown().
      pending->done.wait(lock, [&] {
        return (next < relatives.size() && pending->in_flight < kInfosInFlight) || pending->in_flight == 0;
      });
      if (next == relatives.size() && pending->in_flight == 0) break;
      while (next < relatives.size() && pending->in_flight < kInfosInFlight) {
        batch.push_back(next++);
        ++pending->in_flight;
      }
    }
    for (size_t i : batch) {
      HttpRequest request;
      request.url = url_.api("info", relatives[i]);
      request.max_body = kMaxInfoBody;
      // Outside the lock: a refused request calls back at once, on this thread.
      client_->perform_async(std::move(request), [pending, i](HttpAnswer&& a) {
        std::optional<nlohmann::json> j;
        if (a.curl_code == 0 && a.status == 200 && !a.body_overflow &&
            (a.content_encoding.empty() || a.content_encoding == "identity")) {
          nlohmann::json parsed = nlohmann::json::parse(a.body.begin(), a.body.end(), nullptr, false);
          if (!parsed.is_discarded() && parsed.is_object()) {
            drop_server_paths(parsed);
            j = std::move(parsed);
          }
        }
        std::lock_guard lock(pending->mutex);
        pending->answers[i] = std::move(j);
        --pending->in_flight;
        pending->done.notify_all();
      });
    }
  }
  std::vector<nlohmann::json> out;
  out.reserve(relatives.size());
  for (size_t i = 0; i < relatives.size(); ++i) {
    if (pending->answers[i]) {
      out.push_back(std::move(*pending->answers[i]));
      continue;
    }
    try {
      out.push_back(info(relatives[i]));
    } catch (const std::exception& e) {
      out.push_back(nlohmann::json{{"error", e.what()}});
    }
  }
  return out;
}

std::shared_ptr<const RemoteObject> Caterva2Session::open(const std::string& relative, bool with_tail) const {
  RemoteUrl url = parse_remote_url(url_.api("fetch", relative));
  return RemoteObject::open(client_, std::move(url), with_tail);
}

namespace {

class Caterva2Directory final : public SourceDirectory {
 public:
  Caterva2Directory(std::shared_ptr<const Caterva2Session> session, std::string relative)
      : session_(std::move(session)), relative_(std::move(relative)) {}

  std::shared_ptr<const ByteSource> open(const std::string& name) const override {
    if (!is_safe_relative_name(name)) throw IoError(this->name() + ": \"" + name + "\" is not a name inside it", EINVAL);
    // cat2-server answers any request naming a file whose suffix it does not
    // serve (a sparse frame's .chunk files, a .b2d's embed.b2e) by rewriting
    // that file on its disk as a compressed .b2 one, which breaks the dataset
    // for every reader: such names are never sent.
    if (caterva2_kind(name) == DatasetKind::other || caterva2_kind(name) == DatasetKind::store_directory ||
        name == kEmbedStore)
      throw IoError(this->name() + "/" + name +
                        ": Caterva2 does not serve this file's bytes (api/fetch takes only .b2nd, .b2frame, .b2z), "
                        "and asking for it makes the server rewrite it",
                    EIO);
    return session_->open(join(relative_, name));
  }
  std::vector<std::string> list() const override { return session_->list_below(relative_); }
  // api/list answers every path below a directory: one level of it.
  std::vector<ListedEntry> list_entries(const std::string& relative) const override {
    if (!relative.empty() && !is_safe_relative_name(relative))
      throw IoError(this->name() + ": \"" + relative + "\" is not a name inside it", EINVAL);
    return entries_below(session_->list_below(join(relative_, relative)), "");
  }
  std::shared_ptr<const SourceDirectory> subdirectory(const std::string& name) const override {
    if (!is_safe_relative_name(name)) throw IoError(this->name() + ": \"" + name + "\" is not a name inside it", EINVAL);
    return std::make_shared<Caterva2Directory>(session_, join(relative_, name));
  }
  std::string name() const override {
    return session_->url().display() + (relative_.empty() ? "" : "/" + relative_);
  }
  bool remote() const override { return true; }

 private:
  const std::shared_ptr<const Caterva2Session> session_;
  const std::string relative_;
};

}  // namespace

std::shared_ptr<const SourceDirectory> open_caterva2_directory(std::shared_ptr<const Caterva2Session> session,
                                                               std::string relative) {
  return std::make_shared<Caterva2Directory>(std::move(session), std::move(relative));
}

}  // namespace blosc2fs
