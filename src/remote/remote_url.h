// The URLs blosc2fs mounts: http://, https:// and s3://bucket/key, and how a
// request URL, a display form and the URLs of names below one are made.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace blosc2fs {

struct RemoteUrl {
  enum class Scheme { http, s3 };
  Scheme scheme = Scheme::http;
  // The URL requests go to (http(s)://...), its path percent-encoded; for S3,
  // path-style below the endpoint or virtual-hosted on AWS.
  std::string request;
  // S3 only: the bucket, the key (not encoded), and the endpoint's base.
  std::string bucket, key, endpoint;
  bool path_style = false;
  std::string region;  // S3: the region requests are signed for

  bool s3() const { return scheme == Scheme::s3; }
  // For messages, logs and JSON: no query string (a presigned URL's signature)
  // and never credentials (URLs carrying them are refused).
  std::string display() const;
  // Whether the URL names a place rather than an object (it ends in '/').
  bool names_directory() const;
  // The URL of `relative` (a safe relative name) below this one taken as a
  // directory; each path segment percent-encoded.
  RemoteUrl child(const std::string& relative) const;
  // The same place as a directory (a '/' appended when missing).
  RemoteUrl as_directory() const;
};

// Parses ARGUMENT. `s3_endpoint` (e.g. http://127.0.0.1:8333) selects
// path-style addressing of a non-AWS store; `s3_region` may be empty (then
// AWS_REGION, AWS_DEFAULT_REGION, else us-east-1). Throws UsageError-like
// std::invalid_argument with a one-line reason: unknown scheme, no host, a
// user name or password in the URL, a bucket name that is not one.
RemoteUrl parse_remote_url(const std::string& argument, const std::string& s3_endpoint = {},
                           const std::string& s3_region = {});

// Percent-encodes every byte but unreserved ones (RFC 3986) and, when
// `keep_slash`, '/'.
std::string percent_encode(const std::string& text, bool keep_slash);

// What a '+' means where text is percent-decoded: itself in a URL's path, a space in
// a form (S3 listings encode keys so).
enum class PlusSign { kept, space };
// %XX escapes decoded once; nothing when an escape is malformed.
std::optional<std::string> percent_decode(std::string_view text, PlusSign plus);

}  // namespace blosc2fs
