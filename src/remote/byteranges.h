// An HTTP answer that holds several ranges of one object (RFC 9110 §14.6,
// Content-Type multipart/byteranges), taken apart strictly: the answer comes
// from the network, so anything that is not exactly parts of the object is
// refused rather than guessed at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bytes.h"

namespace blosc2fs {

// "bytes A-B/TOTAL" (TOTAL may be "*": then -1; A-B may be "*": then -1 both).
struct ContentRange {
  int64_t first = -1, last = -1, total = -1;
};
std::optional<ContentRange> parse_content_range(std::string_view text);

// The boundary of a "multipart/byteranges; boundary=..." Content-Type, or
// nullopt when the type is another or the boundary is not one RFC 2046 allows.
std::optional<std::string> byteranges_boundary(std::string_view content_type);

struct BytePart {
  int64_t first = 0, last = 0;  // inclusive, as in Content-Range
  int64_t total = 0;            // the object's size the part states
  size_t offset = 0;            // where its bytes start in the body
};

// The parts of a multipart/byteranges body, in the order sent. Each part must
// have exactly one Content-Range "bytes A-B/TOTAL" with a known TOTAL, the
// same TOTAL in every part, exactly B-A+1 bytes, and at most `max_parts`
// parts; nothing but a CRLF may follow the closing delimiter. Throws
// std::runtime_error saying what is wrong (never quoting the body).
std::vector<BytePart> parse_byteranges(std::string_view content_type, ByteSpan body, size_t max_parts);

}  // namespace blosc2fs
