// The directory of a zip archive (a python-blosc2 `.b2z` store): where each member's
// bytes lie in the file, so that a member frame is read in place at its offset,
// never extracted. Every field is untrusted: members that cannot be served safely
// are skipped with a reason, and an archive whose directory cannot be read at all
// raises FormatError.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "byte_source.h"

namespace blosc2fs {

struct ZipMember {
  std::string name;
  int64_t header_offset = 0;  // the local file header
  int64_t data_offset = 0;    // header_offset + 30 + the local header's name and extra lengths
  int64_t stored_size = 0;    // bytes at data_offset (the compressed size)
  int64_t size = 0;           // uncompressed size
  uint16_t method = 0;        // 0 = stored; only stored members hold a frame at data_offset
  bool stored() const { return method == 0; }
  bool deflated() const { return method == 8; }
};

struct ZipDirectory {
  std::vector<ZipMember> members;    // in central-directory order, each name once
  std::vector<std::string> skipped;  // one line per member left out: its name and why
};

// Largest central directory read (bytes); a bigger one is refused, not allocated.
inline constexpr int64_t kMaxZipCentralDirectory = int64_t(256) << 20;

// Whether the file's first bytes are a zip local header or an empty archive's end record.
bool looks_like_zip(const ByteSource& file);
// Reads the central directory and checks each member against its local header.
// Skipped: encrypted members, names that could escape or are not file names
// (see store_key.h), directory entries, duplicates (the last one is kept, as
// Python's zipfile does), members whose local header disagrees with the central
// directory, that run past the directory's start, or that overlap another member.
// Throws FormatError when there is no end-of-central-directory record, the archive
// spans several disks, or the directory lies outside the file.
ZipDirectory read_zip_directory(const ByteSource& file);

}  // namespace blosc2fs
