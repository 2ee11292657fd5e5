// One page of an S3 ListObjectsV2 answer, parsed with expat.
#pragma once

#include <string>
#include <vector>

namespace blosc2fs {

struct S3ListingPage {
  std::vector<std::string> keys;  // as listed (decoded when the page says they are encoded), not yet checked
  std::vector<int64_t> sizes;     // each key's <Size>, -1 when absent or not a number
  std::vector<std::string> prefixes;  // <CommonPrefixes><Prefix> of a listing with a delimiter, decoded as keys
  bool truncated = false;
  std::string continuation;  // NextContinuationToken
};

// Parses a ListBucketResult document. Throws std::runtime_error when it is not
// one (malformed XML, another root element, a truncated page without a token).
S3ListingPage parse_s3_listing(const std::string& xml);

}  // namespace blosc2fs
