// One object on a web server or in an S3 bucket as a ByteSource: its identity
// pinned at open, every answer checked, reads served from the mount's range
// cache (and disk cache), misses fetched with retries, extents announced by
// the frame code fetched in one request, prefetch in the background.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "byte_source.h"
#include "error.h"
#include "remote_client.h"
#include "remote_url.h"

namespace blosc2fs {

// A server that answers a range request with the whole object (HTTP 200):
// blosc2fs needs ranges. The mount is refused (exit status 3).
class RangesIgnored : public IoError {
 public:
  explicit RangesIgnored(const std::string& what) : IoError(what, EPROTO) {}
};

// What pins an object's version: its ETag, else its Last-Modified, and its size.
struct ObjectIdentity {
  std::string etag, last_modified;
  int64_t size = 0;
  std::string text() const;  // "etag \"...\"", "last-modified ..., size N" or "size N"
};

class RemoteObject final : public ByteSource, public std::enable_shared_from_this<RemoteObject> {
 public:
  // Fetches the object's first 64 KiB, its size and identity: one request;
  // with `with_tail`, also its last 64 KiB (a frame's index and trailer, a
  // zip's central directory): in the same request where the client allows
  // several ranges in one (Caterva2), else a second one.
  // Throws RangesIgnored, IoError (ENOENT: no such object; EACCES: refused;
  // EIO: unreachable or failing after every attempt), std::invalid_argument.
  static std::shared_ptr<const RemoteObject> open(std::shared_ptr<RemoteClient> client, RemoteUrl url,
                                                  bool with_tail = true);
  ~RemoteObject() override;

  int64_t size() const override { return identity_.size; }
  size_t read_at(int64_t offset, MutableByteSpan out) const override;
  bool held(int64_t offset, int64_t length) const override;
  // A fetched extent holding the whole range: in memory, in flight, or (with
  // `fetch`) fetched now. With a disk cache only one in memory: the disk's
  // blocks are read straight into the reader's buffer.
  HeldBytes view_at(int64_t offset, size_t length, bool fetch) const override;
  std::string name() const override { return url_.display(); }
  void will_read(int64_t offset, int64_t length) const override;
  void will_read_only(int64_t offset, int64_t length) const override;
  bool prefetch(int64_t offset, int64_t length) const override;
  bool remote() const override { return true; }

  const RemoteUrl& url() const { return url_; }
  const ObjectIdentity& identity() const { return identity_; }

 private:
  RemoteObject(std::shared_ptr<RemoteClient> client, RemoteUrl url);
  using Extent = std::shared_ptr<const Bytes>;
  // Opens with the first and last 64 KiB in one request (two ranges, a
  // multipart/byteranges answer). False when the server answered otherwise
  // (then the client asks one range per request from now on).
  bool open_head_and_tail();
  // The identity an opening answer gives: its size, ETag and Last-Modified.
  void pin_identity(int64_t size, const HttpAnswer& answer);
  // The last 64 KiB (a frame's index and trailer, a zip's directory), when past the first.
  void read_tail();
  // Where the run of extents memory holds from `offset` ends (`offset` when none).
  int64_t held_until(int64_t offset) const;
  // [start, end) fetched with retries and every check; throws IoError.
  Extent fetch(int64_t start, int64_t end) const;
  // fetch(), then kept on disk when the mount has a disk cache.
  Extent fetch_blocks(int64_t start, int64_t end) const;
  // Cached, in flight, or fetched now: the extent holding `offset`, reading up to `want`.
  // Without `fetch`: only one held or in flight (null when neither). A miss
  // fetches at least kMinFetch bytes, or with `exact` only `want`.
  Extent extent_at(int64_t offset, int64_t want, int64_t* start, bool fetch = true, bool exact = false) const;
  // With a disk cache: where a fetch of the blocks from `start` (aligned) should
  // end, before `end`: at the first block after `start` the disk holds.
  int64_t missing_run_end(const DiskCache& disk, int64_t start, int64_t end) const;
  // The disk cache's block holding `at`, read by the calling thread: what
  // `out` wants of it goes straight there (the count returned), a tail it
  // does not want into memory for the next reader; a small part of one is
  // read whole into memory, where its neighbours' readers find it (*extent,
  // *start set, 0 returned). 0 and no extent: not on disk.
  size_t read_from_disk(DiskCache& disk, int64_t at, MutableByteSpan out, Extent* extent, int64_t* start) const;
  // Throws when the object changed on the server.
  void check_unchanged() const;
  // The request headers that pin the identity.
  std::vector<std::string> pinning_headers() const;
  HttpRequest range_request(int64_t start, int64_t end) const;
  // Why `answer` is not [start, end) of this version of the object; empty when it is.
  std::string check_answer(const HttpAnswer& answer, int64_t start, int64_t end) const;
  // Marks the object changed (every later read fails) and throws.
  [[noreturn]] void changed(const std::string& why) const;
  std::string disk_key() const;
  // Keeps the whole, aligned disk-cache blocks inside [start, start + bytes.size()).
  void store_on_disk(DiskCache& disk, int64_t start, const Bytes& bytes) const;

  const std::shared_ptr<RemoteClient> client_;
  const RemoteUrl url_;
  ObjectIdentity identity_;
  uint64_t cache_id_ = 0;
  mutable std::mutex mutex_;
  mutable std::map<int64_t, std::pair<int64_t, std::shared_future<Extent>>> in_flight_;  // start -> (end, result)
  mutable bool changed_ = false;
  mutable std::string changed_why_;
};

// Joins `relative` below `url` and opens it.
std::shared_ptr<const RemoteObject> open_remote_object(std::shared_ptr<RemoteClient> client, const RemoteUrl& url);

// A place on a server: a URL prefix of a web server (objects opened by name) or
// a prefix of an S3 bucket (also listed, ListObjectsV2).
std::shared_ptr<const SourceDirectory> open_remote_directory(std::shared_ptr<RemoteClient> client, RemoteUrl url);

}  // namespace blosc2fs
