#include "remote_object.h"

#include "byteranges.h"
#include "error.h"
#include "retried_request.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>

namespace blosc2fs {

namespace {

// The first request of an object fetches this much: a frame's header, a
// small frame whole, the start of a zip.
constexpr int64_t kOpenBytes = 64 << 10;
// A read of a disk-cache block's head at least this long goes in place, the
// block's tail to memory; a shorter one (a chunk header, a small random
// read) reads the whole block into memory, where the reads after it find it.
constexpr size_t kMinSplitRead = 64 << 10;
// A multipart answer's headers and boundaries on top of the bytes asked for.
constexpr int64_t kMultipartOverhead = 4096;
// A read that misses fetches at least this much.
constexpr int64_t kMinFetch = 64 << 10;

bool identity_encoding(const std::string& e) { return e.empty() || e == "identity"; }

}  // namespace

std::string ObjectIdentity::text() const {
  if (!etag.empty()) return "etag " + etag + ", size " + str(size);
  if (!last_modified.empty()) return "last-modified " + last_modified + ", size " + str(size);
  return "size " + str(size);
}

RemoteObject::RemoteObject(std::shared_ptr<RemoteClient> client, RemoteUrl url)
    : client_(std::move(client)), url_(std::move(url)), cache_id_(client_->range_cache().new_object()) {}

RemoteObject::~RemoteObject() { client_->range_cache().forget_object(cache_id_); }

bool RemoteObject::open_head_and_tail() {
  HttpRequest request;
  request.url = url_.request;
  request.headers.push_back("Range: bytes=0-" + str(kOpenBytes - 1) + ",-" + str(kOpenBytes));
  request.max_body = size_t(2 * kOpenBytes + kMultipartOverhead);
  std::string fall_back;                           // why the server's answer calls for single ranges
  std::vector<std::pair<int64_t, Bytes>> pieces;   // (offset, bytes) to cache
  int64_t total = -1;
  bool head_only = false;
  HttpAnswer answer = perform_with_retries(*client_, request, name(), [&](const HttpAnswer& a) -> Outcome {
    pieces.clear();
    head_only = false;
    if (a.status == 200) {
      // Never the whole body: it is cut at the bound anyway, and single ranges are asked next.
      fall_back = "HTTP 200";
      return {};
    }
    if (a.status == 416) {
      auto r = parse_content_range(a.content_range);
      if (r && r->total == 0) {
        total = 0;
        return {};
      }
      fall_back = "HTTP 416";
      return {};
    }
    if (a.status != 206) return {Verdict::fail, EIO, "unexpected HTTP " + str(a.status)};
    if (!identity_encoding(a.content_encoding))
      return {Verdict::fail, EIO, "the answer is encoded (" + a.content_encoding + "), not the object's bytes"};
    if (a.body_overflow) {
      // Longer than the two ranges and their headers (the whole object as one range?): never taken.
      fall_back = "an answer longer than the two ranges asked for";
      return {};
    }
    if (byteranges_boundary(a.content_type)) {
      std::vector<BytePart> parts;
      try {
        parts = parse_byteranges(a.content_type, a.body, 2);
      } catch (const std::runtime_error& e) {
        return {Verdict::retry, EIO, e.what()};
      }
      const int64_t t = parts.front().total;
      if (t < 1) return {Verdict::fail, EIO, "a multipart answer for an empty object"};
      const int64_t head_last = std::min(kOpenBytes, t) - 1, tail_first = std::max<int64_t>(0, t - kOpenBytes);
      bool has_head = false;
      for (const BytePart& p : parts) {
        const bool head = p.first == 0 && p.last == head_last;
        const bool tail = p.first == tail_first && p.last == t - 1;
        // Overlapping ranges may come back merged into one: then the whole object.
        const bool merged = tail_first <= head_last + 1 && p.first == 0 && p.last == t - 1;
        if (!head && !tail && !merged)
          return {Verdict::fail, EIO,
                  "a part holds bytes " + str(p.first) + "-" + str(p.last) + "/" + str(t) + ", not a range asked for"};
        for (const auto& [offset, bytes] : pieces)
          if (offset == p.first) return {Verdict::fail, EIO, "two parts hold the same range"};
        has_head = has_head || p.first == 0;
        const auto from = a.body.begin() + std::ptrdiff_t(p.offset);
        pieces.emplace_back(p.first, Bytes(from, from + std::ptrdiff_t(p.last - p.first + 1)));
      }
      if (!has_head) return {Verdict::fail, EIO, "no part holds the object's first bytes"};
      total = t;
      return {};
    }
    // One range: both merged (a small object), or only the first one (a server
    // that serves one range per request), or something else: single ranges then.
    auto r = parse_content_range(a.content_range);
    if (!r || r->total < 1 || r->first != 0) {
      fall_back = "one range, Content-Range '" + a.content_range + "'";
      return {};
    }
    if (r->last != r->total - 1 && r->last != std::min(kOpenBytes, r->total) - 1) {
      fall_back = "one range, Content-Range '" + a.content_range + "'";
      return {};
    }
    if (int64_t(a.body.size()) != r->last + 1)
      return {Verdict::retry, EIO,
              "the answer was cut short (" + str(int64_t(a.body.size())) + " of " + str(r->last + 1) + " bytes)"};
    head_only = r->last != r->total - 1;
    pieces.emplace_back(0, a.body);
    total = r->total;
    return {};
  });
  if (total < 0 || head_only) {
    if (client_->multi_range()) {
      client_->disable_multi_range();
      spdlog::info("{}: the server does not answer several ranges in one request ({}): one range per request from "
                   "now on",
                   name(), head_only ? "it sent only the first" : fall_back);
    }
    if (total < 0) return false;
  }
  pin_identity(total, answer);
  for (auto& [offset, bytes] : pieces)
    client_->range_cache().insert(cache_id_, offset, std::make_shared<const Bytes>(std::move(bytes)));
  if (head_only) read_tail();
  return true;
}

void RemoteObject::pin_identity(int64_t size, const HttpAnswer& answer) {
  identity_.size = size;
  identity_.etag = answer.etag;
  identity_.last_modified = answer.last_modified;
  if (identity_.etag.empty() && identity_.last_modified.empty())
    spdlog::warn("{}: the server gives neither ETag nor Last-Modified: a change of the object that keeps its size "
                 "cannot be noticed",
                 name());
}

void RemoteObject::read_tail() {
  if (size() <= kOpenBytes) return;
  const int64_t tail = std::max(kOpenBytes, size() - kOpenBytes);
  will_read(tail, size() - tail);
}

int64_t RemoteObject::held_until(int64_t offset) const {
  int64_t start = 0;
  while (auto held = client_->range_cache().peek(cache_id_, offset, &start)) offset = start + int64_t(held->size());
  return offset;
}

std::shared_ptr<const RemoteObject> RemoteObject::open(std::shared_ptr<RemoteClient> client, RemoteUrl url,
                                                       bool with_tail) {
  std::shared_ptr<RemoteObject> object(new RemoteObject(client, std::move(url)));
  // Head and tail in one request where the server is known to answer that (never S3).
  if (with_tail && client->multi_range() && !object->url_.s3() && object->open_head_and_tail()) return object;
  HttpRequest request;
  request.url = object->url_.request;
  request.sign_s3 = object->url_.s3();
  request.s3_region = object->url_.region;
  request.headers.push_back("Range: bytes=0-" + str(kOpenBytes - 1));
  request.max_body = size_t(kOpenBytes);
  ContentRange range;
  bool empty = false;
  HttpAnswer answer =
      perform_with_retries(*client, request, object->name(), [&](const HttpAnswer& a) -> Outcome {
        if (a.redirected_to_directory)
          return {Verdict::fail, EISDIR, "a directory (the server redirects it to its URL ending in '/')"};
        if (a.status == 200)
          throw RangesIgnored(object->name() + ": the server ignores Range requests (HTTP 200 to a range "
                                               "request): blosc2fs reads remote data by ranges");
        if (a.status == 416) {
          // An empty object has no byte 0: "bytes */0".
          auto r = parse_content_range(a.content_range);
          if (r && r->total == 0) {
            empty = true;
            return {};
          }
          return {Verdict::fail, EIO, "HTTP 416 to a request for its first bytes"};
        }
        if (a.status != 206) return {Verdict::fail, EIO, "unexpected HTTP " + str(a.status)};
        if (!identity_encoding(a.content_encoding))
          return {Verdict::fail, EIO, "the answer is encoded (" + a.content_encoding + "), not the object's bytes"};
        auto r = parse_content_range(a.content_range);
        if (!r || r->total < 1 || r->first != 0 || r->last != std::min(kOpenBytes, r->total) - 1)
          return {Verdict::fail, EIO, "Content-Range '" + a.content_range + "' is not the range asked for"};
        if (int64_t(a.body.size()) != r->last + 1)
          return {Verdict::retry, EIO, "the answer was cut short (" + str(int64_t(a.body.size())) + " of " +
                                           str(r->last + 1) + " bytes)"};
        range = *r;
        return {};
      });
  object->pin_identity(empty ? 0 : range.total, answer);
  if (!empty)
    client->range_cache().insert(object->cache_id_, 0, client->body_pool().adopt(std::move(answer.body)));
  if (with_tail) object->read_tail();
  return object;
}

std::vector<std::string> RemoteObject::pinning_headers() const {
  if (!identity_.etag.empty()) return {"If-Match: " + identity_.etag};
  if (!identity_.last_modified.empty()) return {"If-Unmodified-Since: " + identity_.last_modified};
  return {};
}

HttpRequest RemoteObject::range_request(int64_t start, int64_t end) const {
  HttpRequest request;
  request.url = url_.request;
  request.sign_s3 = url_.s3();
  request.s3_region = url_.region;
  request.headers = pinning_headers();
  request.headers.push_back("Range: bytes=" + str(start) + "-" + str(end - 1));
  request.max_body = size_t(end - start);
  return request;
}

void RemoteObject::changed(const std::string& why) const {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    if (!changed_) {
      changed_ = true;
      changed_why_ = why;
      first = true;
    }
  }
  if (first)
    spdlog::error("{}: changed on the server since the mount ({}; it was {}): its reads fail with EIO", name(), why,
                  identity_.text());
  throw IoError(name() + ": changed on the server since the mount (" + why + ")", EIO);
}

std::string RemoteObject::check_answer(const HttpAnswer& a, int64_t start, int64_t end) const {
  if (a.status == 412) return "changed: HTTP 412 to If-Match";
  if (a.status == 200) return "the server ignored the Range request (HTTP 200)";
  if (a.status != 206) return "unexpected HTTP " + str(a.status);
  if (!identity_encoding(a.content_encoding)) return "the answer is encoded (" + a.content_encoding + ")";
  if (!identity_.etag.empty() && a.etag != identity_.etag) return "changed: ETag " + a.etag;
  auto r = parse_content_range(a.content_range);
  if (!r || r->total != identity_.size) return "changed: Content-Range '" + a.content_range + "'";
  if (r->first != start || r->last != end - 1)
    return "Content-Range '" + a.content_range + "' for bytes " + str(start) + "-" + str(end - 1);
  if (a.body_overflow) return "the answer is longer than the range asked for";
  return {};
}

RemoteObject::Extent RemoteObject::fetch(int64_t start, int64_t end) const {
  const std::string what = name() + " bytes " + str(start) + "-" + str(end - 1);
  HttpAnswer answer;
  try {
    answer = perform_with_retries(*client_, range_request(start, end), what, [&](const HttpAnswer& a) {
      const std::string wrong = check_answer(a, start, end);
      if (wrong.starts_with("changed")) changed(wrong.substr(9));
      if (!wrong.empty()) return Outcome{Verdict::fail, EIO, wrong};
      if (int64_t(a.body.size()) != end - start)
        return Outcome{Verdict::retry, EIO, "the answer was cut short (" + str(int64_t(a.body.size())) + " of " +
                                                str(end - start) + " bytes)"};
      return Outcome{};
    });
  } catch (const IoError& e) {
    // Found at open, gone now: removed under the mount, an EIO like a change.
    if (e.error_number() == ENOENT) changed("removed: HTTP 404");
    throw;
  }
  return client_->body_pool().adopt(std::move(answer.body));
}

void RemoteObject::store_on_disk(DiskCache& disk, int64_t start, const Bytes& bytes) const {
  // Only whole blocks at their own place: a run fetched from the middle of a
  // block (past what memory held) would otherwise be kept as that block.
  const int64_t b = DiskCache::kBlockSize;
  const int64_t end = start + int64_t(bytes.size());
  for (int64_t p = (start + b - 1) / b * b; p < end; p += b) {
    const int64_t q = std::min(p + b, size());
    if (q > end) break;
    disk.store(disk_key(), p / b, ByteSpan(bytes.data() + (p - start), size_t(q - p)));
  }
}

std::string RemoteObject::disk_key() const { return url_.display() + "\n" + identity_.text(); }

RemoteObject::Extent RemoteObject::extent_at(int64_t offset, int64_t want, int64_t* start, bool fetch,
                                             bool exact) const {
  RangeCache& cache = client_->range_cache();
  for (;;) {
    std::shared_ptr<std::promise<Extent>> promise;
    int64_t fetch_start = 0, fetch_end = 0;
    {
      std::unique_lock lock(mutex_);
      if (changed_) {
        lock.unlock();
        throw IoError(name() + ": changed on the server since the mount (" + changed_why_ + ")", EIO);
      }
      if (Extent hit = cache.find(cache_id_, offset, start)) {
        client_->count_cache_hit();
        return hit;
      }
      auto it = in_flight_.upper_bound(offset);
      if (it != in_flight_.begin() && std::prev(it)->second.first > offset) {
        const int64_t at = std::prev(it)->first;
        std::shared_future<Extent> pending = std::prev(it)->second.second;
        lock.unlock();
        Extent got = pending.get();  // a failed prefetch gives null: fetch it ourselves
        if (got) {
          *start = at;
          return got;
        }
        continue;
      }
      if (!fetch) return nullptr;
      fetch_start = offset;
      fetch_end = std::min(size(), offset + (exact ? std::max<int64_t>(want, 1) : std::max(want, kMinFetch)));
      if (DiskCache* disk = client_->disk_cache()) {
        // Whole disk-cache blocks, so that a remount finds them; blocks the
        // disk holds are read from there, not fetched again.
        const int64_t b = DiskCache::kBlockSize;
        fetch_start = offset / b * b;
        fetch_end = missing_run_end(*disk, fetch_start, std::min(size(), (fetch_end + b - 1) / b * b));
      }
      // Never across an extent already in flight.
      if (it != in_flight_.end()) fetch_end = std::min(fetch_end, it->first);
      if (in_flight_.count(fetch_start)) fetch_start = offset;
      promise = std::make_shared<std::promise<Extent>>();
      in_flight_[fetch_start] = {fetch_end, promise->get_future().share()};
    }
    Extent got;
    try {
      got = fetch_blocks(fetch_start, fetch_end);
    } catch (...) {
      promise->set_value(nullptr);
      std::lock_guard lock(mutex_);
      in_flight_.erase(fetch_start);
      throw;
    }
    cache.insert(cache_id_, fetch_start, got);
    promise->set_value(got);
    {
      std::lock_guard lock(mutex_);
      in_flight_.erase(fetch_start);
    }
    *start = fetch_start;
    return got;
  }
}

RemoteObject::Extent RemoteObject::fetch_blocks(int64_t start, int64_t end) const {
  Extent fetched = fetch(start, end);
  if (DiskCache* disk = client_->disk_cache()) store_on_disk(*disk, start, *fetched);
  return fetched;
}

int64_t RemoteObject::missing_run_end(const DiskCache& disk, int64_t start, int64_t end) const {
  const int64_t b = DiskCache::kBlockSize;
  for (int64_t p = start / b * b + b; p < end; p += b)
    if (disk.has(disk_key(), p / b)) return p;
  return end;
}

void RemoteObject::check_unchanged() const {
  std::lock_guard lock(mutex_);
  if (changed_) throw IoError(name() + ": changed on the server since the mount (" + changed_why_ + ")", EIO);
}

size_t RemoteObject::read_from_disk(DiskCache& disk, int64_t at, MutableByteSpan out, Extent* extent,
                                    int64_t* start) const {
  const int64_t b = DiskCache::kBlockSize;
  const int64_t block = at / b, block_start = block * b, block_end = std::min(size(), block_start + b);
  const size_t block_size = size_t(block_end - block_start);
  const size_t head = size_t(at - block_start), tail = size_t(block_end - at);
  if (head == 0 && out.size() >= block_size) {
    if (!disk.read(disk_key(), block, out.first(block_size))) return 0;
    client_->count_disk_cache_hit();
    return block_size;
  }
  if (head == 0 && out.size() >= kMinSplitRead) {
    // A reader ending inside the block (a chunk's last bytes) takes its part
    // in place; the rest stays in memory for the next chunk's reader. Its
    // buffer is a whole block's, so that it comes back to the pool (which
    // keeps buffers of a block and more) instead of costing fresh pages again.
    Bytes rest = client_->body_pool().take(block_size);
    rest.resize(block_size - out.size());
    if (!disk.read(disk_key(), block, out, rest)) return 0;
    client_->count_disk_cache_hit();
    client_->range_cache().insert_until_read(cache_id_, at + int64_t(out.size()),
                                             client_->body_pool().adopt(std::move(rest)));
    return out.size();
  }
  if (head > 0 && out.size() >= tail) {
    // A reader starting inside the block and reading past its end (its
    // head, which the checksum covers, was wanted before and left memory).
    thread_local Bytes skipped;
    skipped.resize(head);
    if (!disk.read(disk_key(), block, skipped, out.first(tail))) return 0;
    client_->count_disk_cache_hit();
    return tail;
  }
  Bytes bytes = client_->body_pool().take(block_size);
  bytes.resize(block_size);
  if (!disk.read(disk_key(), block, bytes)) return 0;
  client_->count_disk_cache_hit();
  *extent = client_->body_pool().adopt(std::move(bytes));
  client_->range_cache().insert_until_read(cache_id_, block_start, *extent);
  *start = block_start;
  return 0;
}

size_t RemoteObject::read_at(int64_t offset, MutableByteSpan out) const {
  if (offset < 0 || offset >= size()) return 0;
  const size_t n = size_t(std::min<int64_t>(int64_t(out.size()), size() - offset));
  DiskCache* disk = client_->disk_cache();
  if (disk) check_unchanged();
  size_t done = 0;
  while (done < n) {
    int64_t start = 0;
    const int64_t at = offset + int64_t(done);
    Extent extent;
    if (disk) {
      // Memory first, then the disk cache, read by this thread (no request,
      // no copy through memory for whole blocks), then the network.
      if ((extent = client_->range_cache().find(cache_id_, at, &start))) {
        client_->count_cache_hit();
      } else if (size_t got = read_from_disk(*disk, at, out.subspan(done, n - done), &extent, &start)) {
        done += got;
        continue;
      }
    }
    if (!extent) extent = extent_at(at, int64_t(n - done), &start);
    const size_t from = size_t(at - start);
    const size_t take = std::min(n - done, extent->size() - from);
    std::memcpy(out.data() + done, extent->data() + from, take);
    if (from + take == extent->size()) client_->range_cache().read_to_end(cache_id_, start, extent.get());
    done += take;
  }
  return n;
}

bool RemoteObject::held(int64_t offset, int64_t length) const {
  const int64_t b = DiskCache::kBlockSize, end = std::min(size(), offset + std::max<int64_t>(length, 0));
  DiskCache* disk = client_->disk_cache();
  for (int64_t at = std::max<int64_t>(offset, 0); at < end;) {
    if (const int64_t memory = held_until(at); memory > at) {
      at = memory;
      continue;
    }
    if (!disk || !disk->has(disk_key(), at / b)) return false;
    at = (at / b + 1) * b;
  }
  return true;
}

HeldBytes RemoteObject::view_at(int64_t offset, size_t length, bool fetch) const {
  if (offset < 0 || length == 0 || offset > size() || int64_t(length) > size() - offset) return {};
  int64_t start = 0;
  Extent extent;
  if (client_->disk_cache()) {
    check_unchanged();
    extent = client_->range_cache().find(cache_id_, offset, &start);
    if (!extent) return {};
    client_->count_cache_hit();
  } else if (!(extent = extent_at(offset, int64_t(length), &start, fetch))) {
    return {};
  }
  // An extent ending inside the range: read_at joins it with the next.
  if (offset - start + int64_t(length) > int64_t(extent->size())) return {};
  if (offset - start + int64_t(length) == int64_t(extent->size()))
    client_->range_cache().read_to_end(cache_id_, start, extent.get());
  return {extent, ByteSpan(extent->data() + (offset - start), length), extent->capacity()};
}

void RemoteObject::will_read(int64_t offset, int64_t length) const {
  if (offset < 0 || offset >= size() || length <= 0) return;
  length = std::min(length, size() - offset);
  // The announced extent from where the cache stops: one request. Blocks the
  // disk cache holds are left there for the reader.
  DiskCache* disk = client_->disk_cache();
  int64_t at = offset;
  while (at < offset + length) {
    if (disk) {
      const int64_t b = DiskCache::kBlockSize;
      if (const int64_t held = held_until(at); held > at) {
        at = held;
        continue;
      }
      if (disk->has(disk_key(), at / b)) {
        at = (at / b + 1) * b;
        continue;
      }
    }
    int64_t start = 0;
    Extent extent = extent_at(at, offset + length - at, &start);
    at = start + int64_t(extent->size());
  }
}

void RemoteObject::will_read_only(int64_t offset, int64_t length) const {
  // A disk cache fetches whole blocks whatever is asked (will_read does).
  if (client_->disk_cache()) return will_read(offset, length);
  if (offset < 0 || offset >= size() || length <= 0) return;
  const int64_t end = offset + std::min(length, size() - offset);
  for (int64_t at = offset; at < end;) {
    int64_t start = 0;
    Extent extent = extent_at(at, end - at, &start, true, true);
    if (!extent || start + int64_t(extent->size()) <= at) return;  // the read fetches it itself
    at = start + int64_t(extent->size());
  }
}

bool RemoteObject::prefetch(int64_t offset, int64_t length) const {
  if (offset < 0 || offset >= size() || length <= 0 || client_->stopped() || client_->options().prefetch_bytes == 0)
    return true;
  int64_t end = std::min(size(), offset + length);
  DiskCache* disk = client_->disk_cache();
  if (disk) {
    // Whole blocks. Those memory or the disk holds are skipped (the reader
    // reads the disk's itself, as fast as a local file): the request starts
    // at the first block neither holds and ends before the next the disk holds.
    const int64_t b = DiskCache::kBlockSize;
    offset = offset / b * b;
    end = std::min(size(), (end + b - 1) / b * b);
    while (offset < end) {
      const int64_t block_end = std::min(end, offset + b);
      if (held_until(offset) < block_end && !disk->has(disk_key(), offset / b)) break;
      offset = block_end;
    }
    if (offset >= end) return true;
    end = missing_run_end(*disk, offset, end);
  }
  std::shared_ptr<std::promise<Extent>> promise;
  {
    std::lock_guard lock(mutex_);
    if (changed_) return true;
    // From where the memory cache stops (a chunk's header may be there already).
    offset = held_until(offset);
    if (offset >= end) return true;
    // With a disk cache, from the start of that block, so that it is kept whole.
    if (disk) offset = offset / DiskCache::kBlockSize * DiskCache::kBlockSize;
    auto it = in_flight_.upper_bound(offset);
    if (it != in_flight_.begin() && std::prev(it)->second.first > offset) return true;
    if (it != in_flight_.end()) end = std::min(end, it->first);
    if (!client_->range_cache().reserve(uint64_t(end - offset))) return false;
    promise = std::make_shared<std::promise<Extent>>();
    in_flight_[offset] = {end, promise->get_future().share()};
  }
  client_->count_prefetch();
  // The answer arrives on the transport's thread, maybe after this object is
  // gone: the callback holds what it needs, and the object only weakly.
  std::weak_ptr<const RemoteObject> self = weak_from_this();
  std::shared_ptr<RemoteClient> client = client_;
  const int64_t start = offset;
  HttpRequest request = range_request(start, end);
  request.receive_buffer = client_->body_pool().take(size_t(end - start));
  client_->perform_async(std::move(request), [self, client, promise, start, end](HttpAnswer&& a) {
    const uint64_t reserved = uint64_t(end - start);
    std::shared_ptr<const RemoteObject> object = self.lock();
    Extent got;
    if (object && transport_outcome(a).verdict == Verdict::ok && object->check_answer(a, start, end).empty() &&
        int64_t(a.body.size()) == end - start) {
      got = client->body_pool().adopt(std::move(a.body));
      if (DiskCache* disk = client->disk_cache()) object->store_on_disk(*disk, start, *got);
      client->range_cache().insert(object->cache_id_, start, got, reserved);
    } else {
      client->range_cache().release(reserved);
    }
    promise->set_value(got);
    if (object) {
      std::lock_guard lock(object->mutex_);
      object->in_flight_.erase(start);
    }
  });
  return true;
}

std::shared_ptr<const RemoteObject> open_remote_object(std::shared_ptr<RemoteClient> client, const RemoteUrl& url) {
  return RemoteObject::open(std::move(client), url);
}

}  // namespace blosc2fs
