// One mount's connection to remote data: a libcurl multi handle driven by one
// thread (connection reuse, several requests in flight), the credentials, the
// counters, the shared range cache and the optional disk cache. FUSE threads
// submit requests and wait; shutdown() ends every request at once, so an
// unmount never waits on the network.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "body_pool.h"
#include "bytes.h"
#include "credentials.h"
#include "disk_cache.h"
#include "range_cache.h"

namespace blosc2fs {

struct RemoteOptions {
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds idle_timeout{30};  // without a byte: the attempt fails
  unsigned max_attempts = 10;
  std::chrono::milliseconds backoff_base{200}, backoff_cap{5000};
  std::chrono::seconds read_deadline{120};  // one read, every attempt included
  std::filesystem::path ca_file;
  std::filesystem::path http_header_file;
  unsigned max_in_flight = 16;
  uint64_t prefetch_bytes = uint64_t(64) << 20;  // the range cache and what is fetched ahead
  std::filesystem::path cache_dir;               // empty: no disk cache
  uint64_t cache_dir_size = uint64_t(1) << 30;
};

struct RemoteCounters {
  uint64_t requests = 0;      // HTTP requests sent, every attempt
  uint64_t bytes = 0;         // body bytes received
  uint64_t retries = 0;
  uint64_t failures = 0;      // reads that failed after every attempt
  uint64_t cache_hits = 0;    // reads served from memory without a request
  uint64_t disk_cache_hits = 0;
  uint64_t prefetches = 0;    // extents fetched ahead of a reader
};

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  bool sign_s3 = false;               // S3: signed with SigV4 when the client has keys
  std::string s3_region;
  size_t max_body = 0;                // a longer body ends the transfer (body_overflow)
  std::chrono::milliseconds timeout{0};  // the whole attempt; 0: read_deadline
  std::string post_fields;               // non-empty: a POST of this form body (a login)
  // Where a successful body goes when it fits (its capacity; taken from the
  // body pool when the request is made, so that a buffer an eviction just gave
  // back is the one this request fills); empty: one from the body pool.
  Bytes receive_buffer;
  // Statuses the caller's judge decides rather than the transport (a
  // directory index's 403 and 404 say the place cannot be listed).
  std::vector<long> judged_statuses;
};

struct HttpAnswer {
  int curl_code = 0;          // CURLcode; 0: a complete HTTP exchange
  std::string curl_error;
  long status = 0;
  std::string content_range, content_encoding, etag, last_modified, retry_after, content_type;
  std::vector<std::string> set_cookies;  // each Set-Cookie value (a login's answer)
  Bytes body;
  bool body_overflow = false;
  bool aborted = false;  // ended by shutdown()
  // A redirect was followed to a URL whose path ends in '/': what was asked
  // for is a web server's directory (its index answered), not an object.
  bool redirected_to_directory = false;
};

class RemoteClient {
 public:
  // Reads the credentials and the header file. Throws std::runtime_error with
  // a one-line reason (a header file others may read, a missing profile).
  explicit RemoteClient(RemoteOptions options);
  ~RemoteClient();
  RemoteClient(const RemoteClient&) = delete;
  RemoteClient& operator=(const RemoteClient&) = delete;

  // One attempt, waiting for its end (bounded by the transfer's timeouts and
  // by shutdown()).
  HttpAnswer perform(HttpRequest request);
  // One attempt; `done` runs on the transport's thread when it ends (keep it short).
  void perform_async(HttpRequest request, std::function<void(HttpAnswer&&)> done);
  // Sleeps `pause`, or less when shut down; false when shut down.
  bool backoff_sleep(std::chrono::milliseconds pause);
  // The pause before attempt `attempt` (1-based retries): full jitter, capped.
  std::chrono::milliseconds backoff(unsigned attempt);

  // Around fork(2) (fuse_daemonize): the transport's thread does not survive
  // a fork, so it is stopped before (nothing may be in flight) and started
  // again in the child, keeping the connections.
  void suspend();
  void resume();

  // Ends every request in flight (their answers say aborted) and refuses new ones.
  void shutdown();
  bool stopped() const { return stopped_.load(); }

  // Headers sent with every later web request besides the header file's (a
  // session cookie), replaced as a whole when the session logs in again.
  void set_session_headers(std::vector<std::string> headers);

  // Whether one request may ask for several ranges (multipart/byteranges):
  // on only for servers known to answer them (Caterva2; never S3, which
  // refuses them), off again when a server answers otherwise.
  void enable_multi_range() { multi_range_ = true; }
  void disable_multi_range() { multi_range_ = false; }
  bool multi_range() const { return multi_range_.load(); }
  // Logs in again after a 401/403 of a web request (a session cookie that
  // expired or was revoked): true when it did, so the request is worth another
  // attempt. Set by a session that logs in (Caterva2); never for S3.
  void set_reauthenticate(std::function<bool()> reauthenticate);
  bool reauthenticate();

  const RemoteOptions& options() const { return options_; }
  RangeCache& range_cache() { return range_cache_; }
  // Where received bodies' buffers come from and go back to: make extents with adopt().
  BodyPool& body_pool() { return *body_pool_; }
  DiskCache* disk_cache() { return disk_cache_.get(); }

  RemoteCounters counters() const;
  void count_retry() { ++retries_; }
  void count_failure() { ++failures_; }
  void count_cache_hit() { ++cache_hits_; }
  void count_disk_cache_hit() { ++disk_cache_hits_; }
  void count_prefetch() { ++prefetches_; }

 private:
  struct Transfer;
  struct Loop;
  void run();

  const RemoteOptions options_;
  std::optional<S3Keys> s3_keys_;
  std::vector<std::string> extra_headers_;
  mutable std::mutex session_mutex_;
  std::vector<std::string> session_headers_;  // guarded by session_mutex_
  RangeCache range_cache_;
  std::shared_ptr<BodyPool> body_pool_;
  std::unique_ptr<DiskCache> disk_cache_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> multi_range_{false};
  std::function<bool()> reauthenticate_;  // guarded by session_mutex_
  std::atomic<uint64_t> requests_{0}, bytes_{0}, retries_{0}, failures_{0}, cache_hits_{0}, disk_cache_hits_{0},
      prefetches_{0};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_wake_;
  std::unique_ptr<Loop> loop_;
};

}  // namespace blosc2fs
