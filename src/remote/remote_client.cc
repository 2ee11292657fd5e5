#include "remote_client.h"

#include <curl/curl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <random>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "thread_name.h"

namespace blosc2fs {

namespace {

// An error answer's body is kept only this far, for its message.
constexpr size_t kErrorBodyCap = 4096;
// Receive buffers kept for reuse at most (a quarter of -o prefetch= when less).
constexpr uint64_t kMaxPooledBodies = uint64_t(16) << 20;
// libcurl's receive buffer per transfer.
constexpr size_t kReceiveBuffer = size_t(64) << 10;
// Each connection's socket receive buffer, set before it connects: the whole
// window from the start instead of the kernel growing it. Measured on a
// loopback read of a 386 MB frame: the daemon's CPU 0.40-0.44 s with the
// kernel's autotuning, 0.34-0.40 s with this (its cap is 6 MiB by default).
constexpr int kSocketReceiveBuffer = 4 << 20;

int on_socket(void*, curl_socket_t fd, curlsocktype) {
  const int size = kSocketReceiveBuffer;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);  // a hint: a refusal changes nothing
  return CURL_SOCKOPT_OK;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

// curl_global_init once per process, before any thread uses libcurl.
struct CurlGlobal {
  CurlGlobal() {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("libcurl cannot start");
  }
};

void ensure_curl_global() { static CurlGlobal global; }

}  // namespace

struct RemoteClient::Transfer {
  HttpRequest request;
  HttpAnswer answer;
  std::function<void(HttpAnswer&&)> done;
  BodyPool* pool = nullptr;  // where a successful body's buffer comes from
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  // When a byte last moved (or the transfer started), and how many had then.
  std::chrono::steady_clock::time_point last_progress;
  curl_off_t moved = -1;
  std::chrono::seconds idle_limit{30};
  bool stalled = false;

  ~Transfer() {
    if (headers) curl_slist_free_all(headers);
    if (easy) curl_easy_cleanup(easy);
  }

  static size_t on_header(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const std::string_view line(data, size * count);
    if (line.starts_with("HTTP/")) {
      // A new response (after a redirect or a 100): what came before is not its.
      t->answer = HttpAnswer{};
      const size_t space = line.find(' ');
      if (space != std::string_view::npos) t->answer.status = std::strtol(std::string(line.substr(space + 1, 3)).c_str(), nullptr, 10);
      return size * count;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * count;
    const std::string name = lower(std::string(line.substr(0, colon)));
    const std::string value = trim(line.substr(colon + 1));
    if (name == "content-range") t->answer.content_range = value;
    else if (name == "content-encoding") t->answer.content_encoding = value;
    else if (name == "etag") t->answer.etag = value;
    else if (name == "last-modified") t->answer.last_modified = value;
    else if (name == "retry-after") t->answer.retry_after = value;
    else if (name == "content-type") t->answer.content_type = value;
    else if (name == "set-cookie" && t->answer.set_cookies.size() < 16) t->answer.set_cookies.push_back(value);
    return size * count;
  }

  // Called by libcurl at least once a second while the transfer runs: a
  // transfer without a byte for idle_limit ends (then retried as a timeout).
  static int on_progress(void* self, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
    auto* t = static_cast<Transfer*>(self);
    const auto now = std::chrono::steady_clock::now();
    if (dlnow + ulnow != t->moved) {
      t->moved = dlnow + ulnow;
      t->last_progress = now;
      return 0;
    }
    if (now - t->last_progress < t->idle_limit) return 0;
    t->stalled = true;
    return 1;
  }

  static size_t on_body(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const size_t n = size * count;
    const bool success = t->answer.status >= 200 && t->answer.status < 300;
    const size_t cap = success ? t->request.max_body : kErrorBodyCap;
    Bytes& body = t->answer.body;
    if (body.size() + n > cap) {
      if (!success) return n;  // the message's start is enough
      t->answer.body_overflow = true;
      return 0;  // ends the transfer: never more than was asked
    }
    if (body.capacity() == 0 && success) {
      // Sized once, from Content-Length within what was asked for: a growing
      // vector would copy the body again at every doubling.
      curl_off_t length = -1;
      if (curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK && length > 0) {
        const size_t wanted = size_t(std::min<uint64_t>(uint64_t(length), cap));
        if (t->request.receive_buffer.capacity() >= wanted) {
          body = std::move(t->request.receive_buffer);
          body.clear();
        } else {
          body = t->pool->take(wanted);
        }
      }
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(data);  // a memcpy, not a char-by-char conversion
    body.insert(body.end(), bytes, bytes + n);
    return n;
  }
};

struct RemoteClient::Loop {
  CURLM* multi = nullptr;
  std::mutex mutex;
  std::deque<std::unique_ptr<Transfer>> queued;  // submitted, not yet in `multi`
  std::vector<std::unique_ptr<Transfer>> active;
  bool stopping = false;
  bool suspending = false;  // the thread returns, leaving transfers where they are
  std::thread thread;
};

RemoteClient::RemoteClient(RemoteOptions options)
    : options_(std::move(options)),
      range_cache_(std::max<uint64_t>(options_.prefetch_bytes, uint64_t(4) << 20)),
      body_pool_(BodyPool::create(std::min(options_.prefetch_bytes / 4, kMaxPooledBodies))) {
  ensure_curl_global();
  s3_keys_ = find_s3_keys();
  if (!options_.http_header_file.empty()) extra_headers_ = read_header_file(options_.http_header_file);
  if (!options_.cache_dir.empty()) {
    try {
      disk_cache_ = std::make_unique<DiskCache>(options_.cache_dir, options_.cache_dir_size);
    } catch (const std::exception& e) {
      throw std::runtime_error(e.what());
    }
  }
  loop_ = std::make_unique<Loop>();
  loop_->multi = curl_multi_init();
  if (!loop_->multi) throw std::runtime_error("libcurl: cannot make a multi handle");
  curl_multi_setopt(loop_->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, long(std::max(1u, options_.max_in_flight)));
  curl_multi_setopt(loop_->multi, CURLMOPT_MAX_HOST_CONNECTIONS, long(std::max(1u, options_.max_in_flight)));
  // Keep that many idle connections for reuse (curl's default depends on the handles added).
  curl_multi_setopt(loop_->multi, CURLMOPT_MAXCONNECTS, long(std::max(1u, options_.max_in_flight)));
  loop_->thread = std::thread([this] { run(); });
}

RemoteClient::~RemoteClient() {
  shutdown();
  if (loop_->thread.joinable()) loop_->thread.join();
  curl_multi_cleanup(loop_->multi);
}

void RemoteClient::suspend() {
  {
    std::lock_guard lock(loop_->mutex);
    loop_->suspending = true;
  }
  curl_multi_wakeup(loop_->multi);
  if (loop_->thread.joinable()) loop_->thread.join();
}

void RemoteClient::resume() {
  {
    std::lock_guard lock(loop_->mutex);
    loop_->suspending = false;
  }
  if (!loop_->thread.joinable()) loop_->thread = std::thread([this] { run(); });
}

void RemoteClient::shutdown() {
  stopped_ = true;
  {
    std::lock_guard lock(loop_->mutex);
    loop_->stopping = true;
  }
  curl_multi_wakeup(loop_->multi);
  std::lock_guard lock(sleep_mutex_);
  sleep_wake_.notify_all();
}

RemoteCounters RemoteClient::counters() const {
  return RemoteCounters{requests_.load(), bytes_.load(),           retries_.load(),   failures_.load(),
                        cache_hits_.load(), disk_cache_hits_.load(), prefetches_.load()};
}

std::chrono::milliseconds RemoteClient::backoff(unsigned attempt) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  const int64_t ceiling = std::min<int64_t>(options_.backoff_cap.count(),
                                            options_.backoff_base.count() << std::min(attempt, 20u));
  return std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(ceiling, 1))(random));
}

bool RemoteClient::backoff_sleep(std::chrono::milliseconds pause) {
  std::unique_lock lock(sleep_mutex_);
  sleep_wake_.wait_for(lock, pause, [this] { return stopped_.load(); });
  return !stopped_.load();
}

void RemoteClient::perform_async(HttpRequest request, std::function<void(HttpAnswer&&)> done) {
  auto t = std::make_unique<Transfer>();
  t->pool = body_pool_.get();
  t->request = std::move(request);
  t->done = std::move(done);
  t->easy = curl_easy_init();
  if (!t->easy) {
    HttpAnswer failed;
    failed.curl_code = CURLE_OUT_OF_MEMORY;
    failed.curl_error = "libcurl: cannot make a handle";
    t->done(std::move(failed));
    return;
  }
  CURL* e = t->easy;
  const HttpRequest& r = t->request;
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, long(options_.connect_timeout.count() * 1000));
  t->idle_limit = options_.idle_timeout;
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &Transfer::on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, t.get());
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  const auto whole = r.timeout.count() > 0 ? r.timeout : std::chrono::milliseconds(options_.read_deadline);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, long(whole.count()));
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  // Fewer, larger reads from the socket (curl's default is 16 KiB).
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, long(kReceiveBuffer));
  curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, &on_socket);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_USERAGENT, "blosc2fs/" BLOSC2FS_REMOTE_VERSION);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options_.ca_file.c_str());
  // No transparent decoding: the bytes must be the object's own.
  curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  t->headers = curl_slist_append(t->headers, "Accept-Encoding: identity");
  // The header file's lines (a token for a web server) never go to S3.
  if (!r.sign_s3)
    for (const std::string& h : extra_headers_) t->headers = curl_slist_append(t->headers, h.c_str());
  if (!r.sign_s3) {
    std::lock_guard lock(session_mutex_);
    for (const std::string& h : session_headers_) t->headers = curl_slist_append(t->headers, h.c_str());
  }
  for (const std::string& h : r.headers) t->headers = curl_slist_append(t->headers, h.c_str());
  if (!r.post_fields.empty()) curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, r.post_fields.c_str());
  if (r.sign_s3 && s3_keys_) {
    const std::string sigv4 = "aws:amz:" + r.s3_region + ":s3";
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(e, CURLOPT_USERNAME, s3_keys_->access_key.c_str());
    curl_easy_setopt(e, CURLOPT_PASSWORD, s3_keys_->secret_key.c_str());
    // AWS S3 refuses a signed request without this header, which libcurl 7.88
    // neither sends nor signs by itself; given here, libcurl signs with it.
    t->headers = curl_slist_append(t->headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!s3_keys_->session_token.empty())
      t->headers = curl_slist_append(t->headers, ("x-amz-security-token: " + s3_keys_->session_token).c_str());
  } else if (!r.sign_s3) {
    // Logins for web servers: ~/.netrc, when the user keeps one. Redirects
    // are followed (a web server may send http to https), but never for S3
    // (signed for one host) nor with a header file: libcurl would send its
    // lines, a token, to wherever the redirect points.
    curl_easy_setopt(e, CURLOPT_NETRC, long(CURL_NETRC_OPTIONAL));
    if (extra_headers_.empty()) {
      curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
      curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    }
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  {
    std::lock_guard lock(loop_->mutex);
    if (!loop_->stopping) {
      loop_->queued.push_back(std::move(t));
    }
  }
  if (t) {  // shut down: refused at once
    HttpAnswer refused;
    refused.aborted = true;
    refused.curl_code = CURLE_ABORTED_BY_CALLBACK;
    refused.curl_error = "the mount is shutting down";
    t->done(std::move(refused));
    return;
  }
  ++requests_;
  curl_multi_wakeup(loop_->multi);
}

void RemoteClient::set_session_headers(std::vector<std::string> headers) {
  std::lock_guard lock(session_mutex_);
  session_headers_ = std::move(headers);
}

void RemoteClient::set_reauthenticate(std::function<bool()> reauthenticate) {
  std::lock_guard lock(session_mutex_);
  reauthenticate_ = std::move(reauthenticate);
}

bool RemoteClient::reauthenticate() {
  std::function<bool()> again;
  {
    std::lock_guard lock(session_mutex_);
    again = reauthenticate_;
  }
  return again && again();
}

HttpAnswer RemoteClient::perform(HttpRequest request) {
  struct Waiter {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<HttpAnswer> answer;
  };
  auto waiter = std::make_shared<Waiter>();
  perform_async(std::move(request), [waiter](HttpAnswer&& answer) {
    std::lock_guard lock(waiter->mutex);
    waiter->answer = std::move(answer);
    waiter->cv.notify_all();
  });
  std::unique_lock lock(waiter->mutex);
  // Bounded by the transfer's own timeouts and by shutdown(), which ends it.
  waiter->cv.wait(lock, [&] { return waiter->answer.has_value(); });
  return std::move(*waiter->answer);
}

void RemoteClient::run() {
  name_this_thread("b2fs-transport");
  Loop& l = *loop_;
  auto finish = [&](std::unique_ptr<Transfer> t, CURLcode code, bool aborted) {
    t->answer.curl_code = int(code);
    t->answer.aborted = aborted;
    if (code != CURLE_OK) t->answer.curl_error = t->error[0] ? t->error : curl_easy_strerror(code);
    if (t->stalled)
      t->answer.curl_error = "no byte for " + std::to_string(t->idle_limit.count()) + " s (-o timeout=)";
    if (aborted) t->answer.curl_error = "the mount is shutting down";
    long redirects = 0;
    char* final_url = nullptr;
    if (curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_COUNT, &redirects) == CURLE_OK && redirects > 0 &&
        curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &final_url) == CURLE_OK && final_url) {
      std::string_view path(final_url);
      path = path.substr(0, path.find_first_of("?#"));
      t->answer.redirected_to_directory = path.ends_with('/');
    }
    bytes_ += t->answer.body.size();
    HttpAnswer answer = std::move(t->answer);
    auto done = std::move(t->done);
    t.reset();
    done(std::move(answer));
  };
  while (true) {
    {
      std::lock_guard lock(l.mutex);
      if (l.stopping) break;
      if (l.suspending) return;
      // At most max_in_flight transfers in `multi`: curl would park the rest
      // waiting for a connection and start them only at its next timeout.
      while (!l.queued.empty() && l.active.size() < std::max<size_t>(1, options_.max_in_flight)) {
        std::unique_ptr<Transfer> t = std::move(l.queued.front());
        l.queued.pop_front();
        t->last_progress = std::chrono::steady_clock::now();  // time queued is not a stall
        curl_multi_add_handle(l.multi, t->easy);
        l.active.push_back(std::move(t));
      }
    }
    int running = 0;
    curl_multi_perform(l.multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(l.multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      const CURLcode code = msg->data.result;
      curl_multi_remove_handle(l.multi, easy);
      auto it = std::find_if(l.active.begin(), l.active.end(), [&](const auto& t) { return t->easy == easy; });
      if (it == l.active.end()) continue;
      std::unique_ptr<Transfer> t = std::move(*it);
      l.active.erase(it);
      finish(std::move(t), code, false);
    }
    // Transfers that just ended made room for queued ones: add them before waiting.
    bool room_for_queued;
    {
      std::lock_guard lock(l.mutex);
      room_for_queued = !l.queued.empty() && l.active.size() < std::max<size_t>(1, options_.max_in_flight);
    }
    if (!room_for_queued) curl_multi_poll(l.multi, nullptr, 0, 1000, nullptr);
  }
  // Shut down: every transfer ends now, answered "aborted".
  std::deque<std::unique_ptr<Transfer>> queued;
  {
    std::lock_guard lock(l.mutex);
    queued.swap(l.queued);
  }
  for (auto& t : l.active) {
    curl_multi_remove_handle(l.multi, t->easy);
    finish(std::move(t), CURLE_ABORTED_BY_CALLBACK, true);
  }
  l.active.clear();
  for (auto& t : queued) finish(std::move(t), CURLE_ABORTED_BY_CALLBACK, true);
}

}  // namespace blosc2fs
