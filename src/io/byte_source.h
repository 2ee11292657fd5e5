// Where the bytes of a frame or a store come from. Frames and stores read only
// through these two interfaces, so they never know whether their bytes are a
// local file, a window of one (a zip member stored in place), memory (a
// deflated member, an embedded leaf) or an object on a server (src/remote).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bytes.h"

namespace blosc2fs {

class File;

// One immutable run of bytes. Safe to read from several threads at once.
class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // The size in bytes, fixed for the source's life.
  virtual int64_t size() const = 0;
  // Reads up to out.size() bytes at `offset`, fewer only at the end; returns
  // how many. Throws IoError with the errno a reader should see (EIO for a
  // network that failed or an object that changed).
  virtual size_t read_at(int64_t offset, MutableByteSpan out) const = 0;
  // How messages name it: a path, or a URL without credentials.
  virtual std::string name() const = 0;
  // [offset, offset + length) is about to be read, in pieces: a remote source
  // fetches it in one request, and throws IoError as the read would (so the
  // read does not try again what just failed). Local sources ignore it.
  virtual void will_read(int64_t offset, int64_t length) const {
    (void)offset;
    (void)length;
  }
  // The same for a range whose neighbours are not wanted (a big chunk's
  // header, then the blocks a read needs): a remote source fetches exactly
  // it, with nothing around it. Local sources ignore it.
  virtual void will_read_only(int64_t offset, int64_t length) const {
    (void)offset;
    (void)length;
  }
  // [offset, offset + length) may be read soon (a sequential reader's next
  // chunks): a remote source fetches it in the background while its prefetch
  // budget allows. Never blocks, never throws; local sources ignore it.
  // False when the budget refused it (nothing fetched: ask again later).
  virtual bool prefetch(int64_t offset, int64_t length) const {
    (void)offset;
    (void)length;
    return true;
  }
  // Whether reads cost a round trip (frames then read whole extents at once).
  virtual bool remote() const { return false; }
  // Whether [offset, offset + length) reads without a request (a remote
  // object's memory or disk cache holds it): a reader then reads it whole
  // rather than piece by piece as it goes.
  virtual bool held(int64_t offset, int64_t length) const {
    (void)offset;
    (void)length;
    return true;
  }
  // [offset, offset + length) where the source holds them in one piece of
  // memory already (a remote object's fetched extent), without a copy. Empty
  // when they are not (then read_at copies them). With `fetch`, fetched first
  // as read_at would; without, only what memory holds or a fetch already
  // under way brings. Throws as read_at.
  virtual HeldBytes view_at(int64_t offset, size_t length, bool fetch) const {
    (void)offset;
    (void)length;
    (void)fetch;
    return {};
  }

  // Exactly out.size() bytes; a short source raises FormatError naming `what`.
  void read_exact(int64_t offset, MutableByteSpan out, const char* what = "data") const;
  Bytes read_bytes(int64_t offset, size_t n, const char* what = "data") const;
};

// One entry of one level of a place, as the place's listing names it.
struct ListedEntry {
  enum class Type : uint8_t { file, directory, symlink };
  std::string name;         // one name part: no '/', not "." or "..", no NUL
  Type type = Type::file;
  int64_t size = -1;        // when the listing says it reliably; -1 otherwise (a web index)
  std::string link_target;  // a symlink's target text, unchanged (local directories only)
  bool operator==(const ListedEntry&) const = default;
};

// A place holding named objects: a local directory, a URL prefix on a web
// server, a prefix of an S3 bucket. Names are relative, '/'-separated, and
// never contain "." or ".." parts (callers check with is_safe_relative_name).
class SourceDirectory {
 public:
  virtual ~SourceDirectory() = default;

  // The object `relative` below this place. Throws IoError (ENOENT when absent).
  virtual std::shared_ptr<const ByteSource> open(const std::string& relative) const = 0;
  // Every object below this place, recursively, as sorted relative names.
  // Throws UnsupportedError where the place cannot be listed (a web server).
  virtual std::vector<std::string> list() const = 0;
  // The entries directly below `relative` ("" for this place itself), sorted
  // by name, for a collection's tree that lists one directory at a time.
  // Entries whose names are not safe single parts are left out. Throws
  // IoError (ENOENT when there is no such directory) and UnsupportedError
  // where the place cannot be listed.
  virtual std::vector<ListedEntry> list_entries(const std::string& relative) const;
  // The place `relative` below this one (a subdirectory or sub-prefix).
  virtual std::shared_ptr<const SourceDirectory> subdirectory(const std::string& relative) const = 0;
  // How messages name it: a path, or a URL without credentials.
  virtual std::string name() const = 0;
  virtual bool remote() const { return false; }
};

// Whether `name` is a relative name that stays below its directory: non-empty
// parts separated by single '/', none "." or "..", no NUL, no leading '/'.
bool is_safe_relative_name(const std::string& name);

// A local file, opened now. Throws IoError naming the path.
std::shared_ptr<const ByteSource> open_local_file(const std::filesystem::path& path);
// A local file `relative` below `root`, opened without following a symlink on
// the way (File::open_read_beneath). Throws IoError.
std::shared_ptr<const ByteSource> open_local_file_beneath(const std::filesystem::path& root,
                                                          const std::string& relative);
// One level of a recursive listing (sorted '/'-separated relative paths):
// the entries directly below `dir` ("" the top), files and the directories
// the deeper paths imply, sorted by name.
std::vector<ListedEntry> entries_below(const std::vector<std::string>& paths, const std::string& dir);
// A directory of a local place lists at most this many entries (fifos, sockets
// and devices, never listed, do not count): a larger one is refused
// (list_entries throws IoError EFBIG naming it and the bound), not held.
inline constexpr size_t kMaxLocalDirectoryEntries = 1'000'000;
// A local directory. Throws IoError when it is not one. `max_entries` is
// the bound of each directory's listing (below it too); tests lower it.
std::shared_ptr<const SourceDirectory> open_local_directory(const std::filesystem::path& path,
                                                          size_t max_entries = kMaxLocalDirectoryEntries);
// Bytes [offset, offset + length) of `whole`; throws FormatError when they
// are not all inside it.
std::shared_ptr<const ByteSource> slice_source(std::shared_ptr<const ByteSource> whole, int64_t offset,
                                               int64_t length);
// Bytes held in memory, named `name` in messages.
std::shared_ptr<const ByteSource> memory_source(Bytes bytes, std::string name);

}  // namespace blosc2fs
