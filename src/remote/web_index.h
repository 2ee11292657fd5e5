// A web server's directory index page read as a listing: the HTML that nginx
// (autoindex), Apache (mod_autoindex), lighttpd (mod_dirlisting), Caddy
// (file_server browse) and python's http.server send, read by our own
// tokenizer of HTML's tags (html_links.h), and the JSON of nginx's autoindex_format json and Caddy's
// browse. Pure: bytes and the page's URL in, entries out; the page is
// untrusted, so only links to names directly below the page's directory count.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "byte_source.h"

namespace blosc2fs {

// Bounds of one index page: a longer page or more entries is refused.
inline constexpr size_t kMaxIndexPageBytes = size_t(64) << 20;
inline constexpr size_t kMaxIndexEntries = 1'000'000;

enum class WebIndexFormat { html, json };

// JSON when the answer's Content-Type says application/json or the body
// starts with '[' (after white space); HTML otherwise.
WebIndexFormat web_index_format(std::string_view body, std::string_view content_type);

// The entries of the directory index `body`, fetched from `page_url` (the
// directory's URL as requested, ending in '/'), sorted by name. A name listed
// twice counts once, as a directory when either says so. Sizes are never
// taken from the page (-1). Throws FormatError naming `page_url` when the page
// is over a bound or is JSON that is not a directory index.
std::vector<ListedEntry> parse_web_index(std::string_view body, const std::string& page_url,
                                         std::string_view content_type = {});

}  // namespace blosc2fs
