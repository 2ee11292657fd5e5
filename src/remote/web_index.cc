#include "web_index.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "error.h"
#include "html_links.h"
#include "remote_url.h"

namespace blosc2fs {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

// "scheme://authority": lower case, without the scheme's default port, so
// that http://Host:80/ and http://host/ are one origin.
std::string origin_of(std::string_view scheme, std::string_view authority) {
  std::string s = lower(scheme), a = lower(authority);
  const std::string default_port = s == "http" ? ":80" : s == "https" ? ":443" : "";
  if (!default_port.empty() && a.ends_with(default_port)) a.resize(a.size() - default_port.size());
  if (a.ends_with(':')) a.pop_back();
  return s + "://" + a;
}

// The page's URL as links are resolved against it: its origin, and the
// decoded name parts of the directory it lists.
struct PageUrl {
  std::string origin;
  std::string directory_path;       // "/a/b/", as requested (encoded)
  std::vector<std::string> parts;  // {"a", "b"}, decoded
};

PageUrl parse_page_url(const std::string& url) {
  PageUrl page;
  const size_t colon = url.find("://");
  if (colon == std::string::npos) throw FormatError(url + ": not a URL to resolve an index's links against");
  const size_t path_start = url.find_first_of("/?#", colon + 3);
  page.origin = origin_of(std::string_view(url).substr(0, colon),
                          std::string_view(url).substr(colon + 3, path_start == std::string::npos
                                                                      ? std::string::npos
                                                                      : path_start - colon - 3));
  std::string path = path_start == std::string::npos || url[path_start] != '/' ? "/" : url.substr(path_start);
  path.resize(std::min(path.size(), path.find_first_of("?#")));
  path.resize(path.rfind('/') + 1);  // the directory: what follows the last '/' is not part of it
  page.directory_path = path;
  const auto raw = split_path(std::string_view(path).substr(1));
  for (size_t i = 0; i + 1 < raw.size(); ++i) {
    auto decoded = percent_decode(raw[i], PlusSign::kept);
    page.parts.push_back(decoded ? *decoded : std::string(raw[i]));
  }
  return page;
}

bool is_url_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// The entry a link names, when its href resolved against the page lies
// directly below the page's directory: "name" (a file) or "name/" (a
// directory). Links elsewhere (parents, other paths or hosts, queries,
// fragments, other schemes) and names that are not one safe part are nothing.
std::optional<ListedEntry> entry_of_link(std::string_view href, const PageUrl& page) {
  while (!href.empty() && is_url_space(href.front())) href.remove_prefix(1);
  while (!href.empty() && is_url_space(href.back())) href.remove_suffix(1);
  if (href.empty()) return std::nullopt;
  for (unsigned char c : href)
    if (c < 0x20 || c == 0x7f) return std::nullopt;
  // A query (Apache's sort links "?C=N;O=D") or a fragment names no entry.
  if (href.find_first_of("?#") != std::string_view::npos) return std::nullopt;
  std::string path;
  // "scheme:": only the page's own scheme and origin, with an absolute path.
  size_t scheme_end = 0;
  while (scheme_end < href.size() &&
         (std::isalpha(static_cast<unsigned char>(href[scheme_end])) ||
          (scheme_end > 0 && (std::isdigit(static_cast<unsigned char>(href[scheme_end])) ||
                              href[scheme_end] == '+' || href[scheme_end] == '-' || href[scheme_end] == '.'))))
    ++scheme_end;
  std::string_view rest = href;
  std::string_view scheme;
  if (scheme_end > 0 && scheme_end < href.size() && href[scheme_end] == ':') {
    scheme = href.substr(0, scheme_end);
    rest = href.substr(scheme_end + 1);
    if (!rest.starts_with("//")) return std::nullopt;  // mailto:, javascript:, data:, "http:name"
  }
  if (rest.starts_with("//")) {
    const size_t end = rest.find('/', 2);
    const std::string_view authority = rest.substr(2, end == std::string_view::npos ? std::string_view::npos : end - 2);
    const std::string_view page_scheme = std::string_view(page.origin).substr(0, page.origin.find(':'));
    if (origin_of(scheme.empty() ? page_scheme : scheme, authority) != page.origin) return std::nullopt;
    path = end == std::string_view::npos ? "/" : std::string(rest.substr(end));
  } else if (rest.starts_with('/')) {
    path = rest;
  } else {
    path = page.directory_path + std::string(rest);
  }
  // RFC 3986's remove_dot_segments on the encoded parts, then each part
  // decoded once: an encoded '/', NUL, "." or ".." is no name of ours.
  const auto raw = split_path(std::string_view(path).substr(1));
  std::vector<std::string> parts;
  for (size_t i = 0; i < raw.size(); ++i) {
    const bool last = i + 1 == raw.size();
    if (raw[i] == "." || raw[i] == "..") {
      if (raw[i] == ".." && !parts.empty()) parts.pop_back();
      if (last) parts.emplace_back();
      continue;
    }
    auto decoded = percent_decode(raw[i], PlusSign::kept);
    if (!decoded || decoded->find_first_of(std::string_view("/\0", 2)) != std::string::npos || *decoded == "." ||
        *decoded == "..")
      return std::nullopt;
    parts.push_back(std::move(*decoded));
  }
  const size_t n = page.parts.size();
  const bool file = parts.size() == n + 1;
  const bool directory = parts.size() == n + 2 && parts.back().empty();
  if (!file && !directory) return std::nullopt;
  if (!std::equal(page.parts.begin(), page.parts.end(), parts.begin())) return std::nullopt;
  ListedEntry entry;
  entry.name = std::move(parts[n]);
  if (!is_safe_relative_name(entry.name)) return std::nullopt;
  entry.type = directory ? ListedEntry::Type::directory : ListedEntry::Type::file;
  return entry;
}

// Names seen so far; a name listed twice is a directory when either says so.
class Entries {
 public:
  explicit Entries(const std::string& url) : url_(url) {}

  // False when the page lists more than kMaxIndexEntries names.
  bool add(ListedEntry entry) {
    auto [it, inserted] = by_name_.try_emplace(std::move(entry.name), entry.type);
    if (!inserted && entry.type == ListedEntry::Type::directory) it->second = entry.type;
    return by_name_.size() <= kMaxIndexEntries;
  }

  [[noreturn]] void refuse_count() const {
    throw FormatError(url_ + ": a directory index of more than 1,000,000 entries: refused");
  }

  std::vector<ListedEntry> take() {
    std::vector<ListedEntry> out;
    out.reserve(by_name_.size());
    for (auto it = by_name_.begin(); it != by_name_.end(); it = by_name_.erase(it))
      out.push_back(ListedEntry{it->first, it->second, -1, {}});
    return out;
  }

 private:
  const std::string& url_;
  std::map<std::string, ListedEntry::Type> by_name_;
};

// --- HTML: the hrefs of its <a> start tags (html_links.cc) ---

void parse_html(std::string_view body, const PageUrl& page, Entries& entries) {
  bool too_many = false;
  for_each_anchor_href(body, [&](std::optional<std::string> href) {
    if (!href) return true;  // a reference we cannot read as a browser would: not a name of ours
    if (auto entry = entry_of_link(*href, page)) {
      if (!entries.add(std::move(*entry))) {
        too_many = true;
        return false;
      }
    }
    return true;
  });
  if (too_many) entries.refuse_count();
}

// --- JSON: nginx's autoindex_format json, Caddy's browse JSON ---

// A top-level array of flat objects; nginx gives "name" and "type"
// ("directory", "file", "other"), Caddy "name" (a directory's ending in '/')
// and "is_dir". Anything else is not an index.
class IndexJson {
 public:
  using Json = nlohmann::json;
  explicit IndexJson(Entries& entries) : entries_(entries) {}

  bool null() { return scalar(); }
  bool boolean(bool value) {
    if (depth_ == 2 && key_ == "is_dir") is_dir_ = value;
    return scalar();
  }
  bool number_integer(Json::number_integer_t) { return scalar(); }
  bool number_unsigned(Json::number_unsigned_t) { return scalar(); }
  bool number_float(Json::number_float_t, const Json::string_t&) { return scalar(); }
  bool string(Json::string_t& value) {
    if (depth_ == 2 && key_ == "name") name_ = std::move(value);
    else if (depth_ == 2 && key_ == "type") type_ = std::move(value);
    return scalar();
  }
  bool binary(Json::binary_t&) { return fail(); }
  bool start_object(size_t) {
    if (depth_ != 1) return fail();
    depth_ = 2;
    name_.reset();
    type_.reset();
    is_dir_.reset();
    return true;
  }
  bool key(Json::string_t& key) {
    key_ = std::move(key);
    return true;
  }
  bool end_object() {
    depth_ = 1;
    if (++elements_ > kMaxIndexEntries) {
      too_many_ = true;
      return false;
    }
    if (!name_) return true;
    std::optional<ListedEntry::Type> type;
    if (type_ == "directory" || is_dir_ == true) type = ListedEntry::Type::directory;
    else if (type_ == "file" || (!type_ && is_dir_ == false)) type = ListedEntry::Type::file;
    if (!type) return true;  // nginx's "other": neither a file nor a directory
    std::string name = std::move(*name_);
    if (*type == ListedEntry::Type::directory && name.ends_with('/')) name.pop_back();
    if (name.find('/') != std::string::npos || !is_safe_relative_name(name)) return true;
    if (!entries_.add(ListedEntry{std::move(name), *type, -1, {}})) {
      too_many_ = true;
      return false;
    }
    return true;
  }
  bool start_array(size_t) {
    if (depth_ != 0 || done_) return fail();
    depth_ = 1;
    return true;
  }
  bool end_array() {
    depth_ = 0;
    done_ = true;
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) {
    malformed_ = true;
    return false;
  }

  bool index() const { return done_ && !not_index_ && !malformed_; }
  bool too_many() const { return too_many_; }

 private:
  bool scalar() { return depth_ == 2 ? true : fail(); }
  bool fail() {
    not_index_ = true;
    return false;
  }

  Entries& entries_;
  int depth_ = 0;
  std::string key_;
  std::optional<std::string> name_, type_;
  std::optional<bool> is_dir_;
  size_t elements_ = 0;
  bool done_ = false, not_index_ = false, malformed_ = false, too_many_ = false;
};

void parse_json(std::string_view body, const std::string& url, Entries& entries) {
  IndexJson sax(entries);
  nlohmann::json::sax_parse(body.begin(), body.end(), &sax, nlohmann::json::input_format_t::json, true);
  if (sax.too_many()) entries.refuse_count();
  if (!sax.index())
    throw FormatError(url + ": the JSON answer is not a directory index (an array of {\"name\", \"type\"} "
                            "as nginx's autoindex_format json, or Caddy's browse JSON)");
}

}  // namespace

WebIndexFormat web_index_format(std::string_view body, std::string_view content_type) {
  const std::string type = lower(content_type.substr(0, content_type.find(';')));
  if (type.find("application/json") != std::string::npos) return WebIndexFormat::json;
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  const size_t first = body.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && body[first] == '[' ? WebIndexFormat::json : WebIndexFormat::html;
}

std::vector<ListedEntry> parse_web_index(std::string_view body, const std::string& page_url,
                                         std::string_view content_type) {
  if (body.size() > kMaxIndexPageBytes)
    throw FormatError(page_url + ": a directory index page over 64 MiB: refused");
  const PageUrl page = parse_page_url(page_url);
  Entries entries(page_url);
  if (web_index_format(body, content_type) == WebIndexFormat::json) parse_json(body, page_url, entries);
  else parse_html(body, page, entries);
  return entries.take();
}

}  // namespace blosc2fs
