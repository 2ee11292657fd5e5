// A place on a server as a SourceDirectory: names below a URL prefix; an S3
// prefix is listed with ListObjectsV2, a web server's directory by its index
// page (web_index.h).
#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "remote_object.h"
#include "retried_request.h"
#include "s3_listing.h"
#include "web_index.h"

namespace blosc2fs {

namespace {

// A listing stops here: a larger prefix is refused, not listed forever.
constexpr size_t kMaxListedKeys = 1'000'000;
constexpr int kMaxListingPages = 2'000;
// Each page is at most 1,000 keys of at most 1,024 bytes, plus XML.
constexpr size_t kMaxPageBytes = size_t(4) << 20;
// A web server's tree is walked one index page per directory: so deep and so
// many pages at most (a symbolic link looping on the server ends here too).
constexpr int kMaxIndexDepth = 64;
constexpr size_t kMaxIndexPages = 10'000;

class RemoteDirectory final : public SourceDirectory {
 public:
  RemoteDirectory(std::shared_ptr<RemoteClient> client, RemoteUrl url)
      : client_(std::move(client)), url_(url.as_directory()) {}

  std::shared_ptr<const ByteSource> open(const std::string& relative) const override {
    if (!is_safe_relative_name(relative))
      throw IoError(url_.display() + ": \"" + relative + "\" is not a name inside it", EINVAL);
    // A sparse frame's chunk files have no trailer worth a second request.
    return RemoteObject::open(client_, url_.child(relative), !relative.ends_with(".chunk"));
  }

  std::vector<std::string> list() const override {
    if (!url_.s3()) return walk_web_indexes();
    std::set<std::string> names;
    std::string token;
    for (int page = 0;; ++page) {
      if (page >= kMaxListingPages) throw FormatError(url_.display() + ": the listing goes on past 2,000 pages");
      const S3ListingPage got = list_page(url_.key, false, token);
      for (const std::string& key : got.keys) {
        if (!key.starts_with(url_.key)) continue;
        std::string relative = key.substr(url_.key.size());
        if (!is_safe_relative_name(relative)) {
          spdlog::debug("{}: key '{}' is not a name inside it: skipped", url_.display(), key.substr(0, 200));
          continue;
        }
        names.insert(std::move(relative));
        if (names.size() > kMaxListedKeys)
          throw FormatError(url_.display() + ": more than 1,000,000 objects under it");
      }
      if (!got.truncated) break;
      token = got.continuation;
    }
    return {names.begin(), names.end()};
  }

  std::vector<ListedEntry> list_entries(const std::string& relative) const override {
    if (!relative.empty() && !is_safe_relative_name(relative))
      throw IoError(url_.display() + ": \"" + relative + "\" is not a name inside it", EINVAL);
    if (url_.s3()) return list_s3_level(relative);
    return web_index_entries(relative);
  }

  std::shared_ptr<const SourceDirectory> subdirectory(const std::string& relative) const override {
    if (!is_safe_relative_name(relative))
      throw IoError(url_.display() + ": \"" + relative + "\" is not a name inside it", EINVAL);
    return std::make_shared<RemoteDirectory>(client_, url_.child(relative).as_directory());
  }

  std::string name() const override { return url_.display(); }
  bool remote() const override { return true; }

 private:
  // One directory of a web server: its index page (GET of the directory's
  // URL, ending in '/'), parsed. A server that refuses an index (403) cannot
  // be listed; 404 is no such directory.
  std::vector<ListedEntry> web_index_entries(const std::string& relative) const {
    const RemoteUrl directory = relative.empty() ? url_ : url_.child(relative).as_directory();
    const std::string shown = directory.display();
    HttpRequest request;
    request.url = directory.request;
    request.max_body = kMaxIndexPageBytes;
    request.judged_statuses = {403, 404};
    std::vector<ListedEntry> entries;
    perform_with_retries(*client_, request, shown + " (directory index)", [&](const HttpAnswer& a) -> Outcome {
      if (a.status == 403)
        throw UnsupportedError(shown + ": cannot be listed: the web server refuses a directory index there "
                                       "(HTTP 403; nginx lists directories with autoindex on)");
      if (a.status == 404) return {Verdict::fail, ENOENT, "no such directory (HTTP 404)"};
      if (a.status != 200) return {Verdict::fail, EIO, "unexpected HTTP " + std::to_string(a.status)};
      if (a.body_overflow) throw FormatError(shown + ": a directory index page over 64 MiB: refused");
      if (!a.content_encoding.empty() && a.content_encoding != "identity")
        return {Verdict::fail, EIO, "the index page is encoded (" + a.content_encoding + "), which was not asked"};
      entries = parse_web_index(std::string_view(reinterpret_cast<const char*>(a.body.data()), a.body.size()),
                                shown, a.content_type);
      return {};
    });
    return entries;
  }

  // Every object below a web server's directory, its index pages walked.
  std::vector<std::string> walk_web_indexes() const {
    std::vector<std::string> names;
    std::vector<std::pair<std::string, int>> pending{{"", 0}};  // (directory, depth)
    size_t pages = 0, seen = 0;
    while (!pending.empty()) {
      const auto [directory, depth] = std::move(pending.back());
      pending.pop_back();
      if (++pages > kMaxIndexPages)
        throw FormatError(url_.display() + ": more than 10,000 directories below it: not listed");
      std::vector<ListedEntry> entries;
      try {
        entries = web_index_entries(directory);
      } catch (const IoError& e) {
        // Listed by its parent, gone since (or linked by an index, never there).
        if (directory.empty() || e.error_number() != ENOENT) throw;
        spdlog::debug("{}: {}: skipped", url_.display(), e.what());
        continue;
      }
      for (ListedEntry& entry : entries) {
        if (++seen > kMaxListedKeys) throw FormatError(url_.display() + ": more than 1,000,000 objects under it");
        std::string relative = directory.empty() ? std::move(entry.name) : directory + "/" + entry.name;
        if (entry.type != ListedEntry::Type::directory) {
          names.push_back(std::move(relative));
        } else if (depth + 1 >= kMaxIndexDepth) {
          throw FormatError(url_.display() + ": directories nested more than 64 deep below it (\"" +
                            relative.substr(0, 200) + "\"): not listed");
        } else {
          pending.emplace_back(std::move(relative), depth + 1);
        }
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // One level of an S3 prefix: ListObjectsV2 with delimiter '/', paged,
  // folded by S3LevelListing (which leaves out keys that are no safe name).
  std::vector<ListedEntry> list_s3_level(const std::string& relative) const {
    std::string prefix = url_.key;
    if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
    if (!relative.empty()) prefix += relative + "/";
    const std::string place = relative.empty() ? url_.display() : url_.child(relative).as_directory().display();
    S3LevelListing level(prefix, place);
    std::string token;
    for (int page = 0;; ++page) {
      if (page >= kMaxListingPages) throw FormatError(place + ": the listing goes on past 2,000 pages");
      const S3ListingPage got = list_page(prefix, true, token);
      level.add(got);
      if (!got.truncated) break;
      token = got.continuation;
    }
    if (level.skipped())
      spdlog::warn("{}: {} keys left out (names that cannot be file names: '..', '.', empty parts)", place,
                   level.skipped());
    return level.entries();
  }

  // The bucket's URL (path-style or virtual-hosted) with the listing query,
  // its parameters sorted and encoded as SigV4's canonical form wants them.
  S3ListingPage list_page(const std::string& prefix, bool delimited, const std::string& token) const {
    RemoteUrl bucket = url_;
    bucket.key.clear();
    std::string base = bucket.child("x").request;
    base.resize(base.size() - 1);  // the bucket's root, ending in '/'
    std::string query;
    if (!token.empty()) query += "continuation-token=" + percent_encode(token, false) + "&";
    // Keys may hold bytes XML 1.0 cannot carry (control characters): asked
    // for encoded, the answer can always be parsed.
    if (delimited) query += "delimiter=%2F&";
    query += "encoding-type=url&list-type=2&prefix=" + percent_encode(prefix, false);
    HttpRequest request;
    request.url = base + "?" + query;
    request.sign_s3 = true;
    request.s3_region = url_.region;
    request.max_body = kMaxPageBytes;
    const std::string what = url_.display() + " (listing)";
    S3ListingPage page;
    try {
      perform_with_retries(*client_, request, what, [&](const HttpAnswer& a) -> Outcome {
        if (a.status != 200) return {Verdict::fail, EIO, "unexpected HTTP " + std::to_string(a.status)};
        if (a.body_overflow) return {Verdict::fail, EIO, "a page longer than 4 MiB"};
        try {
          page = parse_s3_listing(std::string(a.body.begin(), a.body.end()));
        } catch (const std::runtime_error& e) {
          return {Verdict::fail, EIO, e.what()};
        }
        return {};
      });
    } catch (const IoError& e) {
      if (e.error_number() == ENOENT) throw IoError(what + ": no such bucket (HTTP 404)", ENOENT);
      throw;
    }
    return page;
  }

  const std::shared_ptr<RemoteClient> client_;
  const RemoteUrl url_;
};

}  // namespace

std::shared_ptr<const SourceDirectory> open_remote_directory(std::shared_ptr<RemoteClient> client, RemoteUrl url) {
  return std::make_shared<RemoteDirectory>(std::move(client), std::move(url));
}

}  // namespace blosc2fs
