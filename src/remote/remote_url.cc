#include "remote_url.h"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace blosc2fs {

namespace {

bool unreserved(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }

// "scheme://authority/rest": the authority checked, the rest kept as given.
struct Parts {
  std::string scheme, authority, rest;
};

Parts split(const std::string& url) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos) throw std::invalid_argument("not a URL: " + url);
  Parts p;
  p.scheme = url.substr(0, colon);
  const size_t start = colon + 3;
  const size_t slash = url.find_first_of("/?#", start);
  p.authority = url.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
  p.rest = slash == std::string::npos ? "" : url.substr(slash);
  if (p.authority.empty()) throw std::invalid_argument("no host in " + p.scheme + "://" + p.rest);
  if (p.authority.find('@') != std::string::npos)
    throw std::invalid_argument("a user name or password in the URL would show in the process list and "
                                "mount table: use ~/.netrc, -o http_header_file= or the AWS variables");
  for (unsigned char c : p.authority)
    if (std::iscntrl(c) || c == ' ') throw std::invalid_argument("a control character or space in the URL's host");
  return p;
}

bool valid_bucket(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (unsigned char c : bucket)
    if (!(std::islower(c) || std::isdigit(c) || c == '-' || c == '.' || c == '_')) return false;
  return true;
}

std::string default_region() {
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"})
    if (const char* v = std::getenv(name); v && *v) return v;
  return "us-east-1";
}

// An S3 URL for `key` under the endpoint or AWS host of `u`.
std::string s3_request(const RemoteUrl& u, const std::string& key) {
  const std::string encoded = percent_encode(key, true);
  if (u.path_style) return u.endpoint + "/" + u.bucket + "/" + encoded;
  return "https://" + u.bucket + ".s3." + u.region + ".amazonaws.com/" + encoded;
}

}  // namespace

std::string percent_encode(const std::string& text, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out += char(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::optional<std::string> percent_decode(std::string_view text, PlusSign plus) {
  const auto hex_value = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+' && plus == PlusSign::space) {
      out += ' ';
    } else if (text[i] != '%') {
      out += text[i];
    } else {
      const int hi = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
      const int lo = hi >= 0 ? hex_value(text[i + 2]) : -1;
      if (lo < 0) return std::nullopt;
      out += char(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

RemoteUrl parse_remote_url(const std::string& argument, const std::string& s3_endpoint,
                           const std::string& s3_region) {
  for (unsigned char c : argument)
    if (std::iscntrl(c)) throw std::invalid_argument("a control character in the URL");
  const Parts p = split(argument);
  RemoteUrl u;
  if (p.scheme == "http" || p.scheme == "https") {
    if (!s3_endpoint.empty()) throw std::invalid_argument("s3_endpoint= is for s3:// URLs");
    u.scheme = RemoteUrl::Scheme::http;
    u.request = p.scheme + "://" + p.authority + (p.rest.empty() || p.rest[0] != '/' ? "/" + p.rest : p.rest);
    if (const size_t hash = u.request.find('#'); hash != std::string::npos) u.request.resize(hash);
    return u;
  }
  if (p.scheme != "s3") throw std::invalid_argument("unknown URL scheme '" + p.scheme + "' (http, https, s3)");
  u.scheme = RemoteUrl::Scheme::s3;
  u.bucket = p.authority;
  if (!valid_bucket(u.bucket)) throw std::invalid_argument("'" + u.bucket + "' is not an S3 bucket name");
  if (p.rest.find_first_of("?#") != std::string::npos)
    throw std::invalid_argument("an s3:// URL has no query or fragment");
  u.key = p.rest.empty() ? "" : p.rest.substr(1);
  u.region = s3_region.empty() ? default_region() : s3_region;
  if (!s3_endpoint.empty()) {
    const Parts e = split(s3_endpoint);
    if (e.scheme != "http" && e.scheme != "https")
      throw std::invalid_argument("s3_endpoint= must be an http:// or https:// URL");
    std::string base = e.rest;
    while (!base.empty() && base.back() == '/') base.pop_back();
    if (base.find_first_of("?#") != std::string::npos) throw std::invalid_argument("s3_endpoint= has no query");
    u.endpoint = e.scheme + "://" + e.authority + base;
    u.path_style = true;
  }
  u.request = s3_request(u, u.key);
  return u;
}

std::string RemoteUrl::display() const {
  if (s3()) return "s3://" + bucket + "/" + key;
  std::string shown = request;
  if (const size_t q = shown.find('?'); q != std::string::npos) shown.resize(q);
  return shown;
}

bool RemoteUrl::names_directory() const {
  if (s3()) return key.empty() || key.back() == '/';
  std::string path = request;
  if (const size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  return path.back() == '/';
}

RemoteUrl RemoteUrl::as_directory() const {
  RemoteUrl d = *this;
  if (names_directory()) return d;
  if (s3()) {
    d.key += '/';
    d.request = s3_request(d, d.key);
    return d;
  }
  const size_t q = d.request.find('?');
  if (q == std::string::npos) d.request += '/';
  else d.request = d.request.substr(0, q) + "/" + d.request.substr(q);
  return d;
}

RemoteUrl RemoteUrl::child(const std::string& relative) const {
  RemoteUrl c = as_directory();
  if (s3()) {
    c.key += relative;
    c.request = s3_request(c, c.key);
    return c;
  }
  // A query belongs to the place's own URL, not to the names below it.
  if (const size_t q = c.request.find('?'); q != std::string::npos) c.request.resize(q);
  c.request += percent_encode(relative, true);
  return c;
}

}  // namespace blosc2fs
