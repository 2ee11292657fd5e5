#include "byteranges.h"

#include <cctype>
#include <charconv>
#include <stdexcept>

namespace blosc2fs {

namespace {

// A part's headers end within this many bytes (Starlette's are about 100).
constexpr size_t kMaxPartHeaders = 1024;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_number(std::string_view s, int64_t& v) {
  if (s.empty() || s.size() > 18) return false;  // no overflow, no sign
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v >= 0;
}

// RFC 2046 bchars, without the space (allowed inside but never trailing; no
// server needs it, so refused).
bool boundary_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("'()+_,-./:=?").find(c) != std::string_view::npos;
}

std::runtime_error bad(const std::string& why) { return std::runtime_error("multipart/byteranges answer: " + why); }

}  // namespace

std::optional<ContentRange> parse_content_range(std::string_view text) {
  ContentRange r;
  if (!text.starts_with("bytes ")) return std::nullopt;
  const std::string_view rest = text.substr(6);
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view range = rest.substr(0, slash), total = rest.substr(slash + 1);
  if (total != "*" && !parse_number(total, r.total)) return std::nullopt;
  if (range == "*") return r;
  const size_t dash = range.find('-');
  if (dash == std::string_view::npos || !parse_number(range.substr(0, dash), r.first) ||
      !parse_number(range.substr(dash + 1), r.last) || r.last < r.first)
    return std::nullopt;
  if (r.total >= 0 && r.last >= r.total) return std::nullopt;
  return r;
}

std::optional<std::string> byteranges_boundary(std::string_view content_type) {
  const size_t semicolon = content_type.find(';');
  if (lower(trim(content_type.substr(0, semicolon))) != "multipart/byteranges" || semicolon == std::string_view::npos)
    return std::nullopt;
  std::optional<std::string> boundary;
  std::string_view params = content_type.substr(semicolon + 1);
  while (!params.empty()) {
    const size_t next = params.find(';');
    const std::string_view param = trim(params.substr(0, next));
    params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    if (lower(trim(param.substr(0, eq))) != "boundary") continue;
    if (boundary) return std::nullopt;  // two boundaries: which one?
    std::string_view value = trim(param.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (value.empty() || value.size() > 70) return std::nullopt;
    for (char c : value)
      if (!boundary_char(c)) return std::nullopt;
    boundary = std::string(value);
  }
  return boundary;
}

std::vector<BytePart> parse_byteranges(std::string_view content_type, ByteSpan body, size_t max_parts) {
  const std::optional<std::string> boundary = byteranges_boundary(content_type);
  if (!boundary) throw bad("Content-Type is not multipart/byteranges with a valid boundary");
  const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  const std::string delimiter = "--" + *boundary;
  size_t at = 0;
  // The first delimiter opens the body (a CRLF before it is allowed: RFC 2046
  // counts it as part of the delimiter); no preamble.
  if (text.substr(at, 2) == "\r\n") at += 2;
  if (text.substr(at, delimiter.size()) != delimiter) throw bad("the body does not start with its boundary");
  at += delimiter.size();
  std::vector<BytePart> parts;
  int64_t total = -1;
  for (;;) {
    if (text.substr(at, 2) == "--") {  // the closing delimiter
      at += 2;
      if (text.substr(at) != "" && text.substr(at) != "\r\n") throw bad("bytes after the closing boundary");
      break;
    }
    if (text.substr(at, 2) != "\r\n") throw bad("a boundary not followed by CRLF");
    at += 2;
    if (parts.size() >= max_parts) throw bad("more than " + std::to_string(max_parts) + " parts");
    // The part's headers, up to an empty line.
    const size_t headers_end = text.find("\r\n\r\n", at);
    if (headers_end == std::string_view::npos || headers_end - at > kMaxPartHeaders)
      throw bad("a part's headers do not end within " + std::to_string(kMaxPartHeaders) + " bytes");
    std::optional<ContentRange> range;
    std::string_view headers = text.substr(at, headers_end - at);
    while (!headers.empty()) {
      const size_t eol = headers.find("\r\n");
      const std::string_view line = headers.substr(0, eol);
      headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) throw bad("a part's header line has no name");
      for (char c : line)
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') throw bad("a control character in a part's headers");
      const std::string name = lower(line.substr(0, colon));
      if (name == "content-range") {
        if (range) throw bad("a part with two Content-Range headers");
        range = parse_content_range(trim(line.substr(colon + 1)));
        if (!range || range->first < 0 || range->total < 0)
          throw bad("a part's Content-Range is not \"bytes A-B/TOTAL\"");
      } else if (name == "content-encoding") {
        const std::string value = lower(trim(line.substr(colon + 1)));
        if (value != "identity") throw bad("a part is encoded");
      }
    }
    if (!range) throw bad("a part without Content-Range");
    if (total >= 0 && range->total != total) throw bad("parts state different sizes of the object");
    total = range->total;
    at = headers_end + 4;
    const int64_t length = range->last - range->first + 1;
    if (int64_t(text.size() - at) < length) throw bad("a part is cut short");
    parts.push_back(BytePart{range->first, range->last, range->total, at});
    at += size_t(length);
    // Each part's bytes end with CRLF and the next delimiter.
    if (text.substr(at, 2 + delimiter.size()) != "\r\n" + delimiter)
      throw bad("a part's bytes are not followed by the boundary (a wrong length)");
    at += 2 + delimiter.size();
  }
  if (parts.empty()) throw bad("no parts");
  return parts;
}

}  // namespace blosc2fs
