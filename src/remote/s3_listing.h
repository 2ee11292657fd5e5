// One page of an S3 ListObjectsV2 answer, parsed with expat, and one level of
// a prefix folded from such pages.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "byte_source.h"

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

// A directory of an S3 prefix holds at most this many entries.
inline constexpr size_t kMaxS3LevelEntries = 1'000'000;

// One level of an S3 prefix, folded from the pages of a ListObjectsV2 listing
// with delimiter '/'. Objects directly below `prefix` are files (a zero-byte
// "directory marker" ending in '/' is a directory), common prefixes are
// directories; a name that is both is the directory. Keys and prefixes whose
// rest is not one safe name part ('..', '.', an empty part as in "a//b" or a
// leading '/', a NUL, a '/' decoded from %2F) are left out and counted: the
// listing is untrusted, and a server may hold keys no file name can be.
class S3LevelListing {
 public:
  // `prefix` is the level's key prefix ("" or ending in '/'); `place` names
  // the level in messages.
  S3LevelListing(std::string prefix, std::string place, size_t max_entries = kMaxS3LevelEntries);
  // Throws FormatError naming the place and the bound when the level holds
  // more than max_entries entries.
  void add(const S3ListingPage& page);
  // The entries so far, sorted by name.
  std::vector<ListedEntry> entries() const;
  // How many keys and prefixes were left out.
  size_t skipped() const { return skipped_; }

 private:
  std::string prefix_, place_;
  size_t max_entries_;
  std::map<std::string, ListedEntry> found_;
  size_t skipped_ = 0;
};

}  // namespace blosc2fs
