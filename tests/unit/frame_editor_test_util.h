// Helpers shared by frame_editor_test and power_loss_test: writable copies of
// fixture frames and the decoded content of a frame, for old/new comparisons.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bytes.h"
#include "fixtures.h"
#include "error.h"
#include "frame.h"

namespace blosc2fs::testing {

inline void make_writable(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  fs::permissions(path, fs::perms::owner_write | fs::perms::owner_read, fs::perm_options::add);
  if (fs::is_directory(path)) {
    fs::permissions(path, fs::perms::owner_exec, fs::perm_options::add);
    for (const auto& entry : fs::directory_iterator(path)) make_writable(entry.path());
  }
}

// Copies a frame (file or sparse directory) to dst (replacing it) and makes it writable.
inline std::filesystem::path copy_frame(const std::filesystem::path& src, const std::filesystem::path& dst) {
  namespace fs = std::filesystem;
  fs::remove_all(dst);
  fs::create_directories(dst.parent_path());
  fs::copy(src, dst, fs::copy_options::recursive);
  make_writable(dst);
  return dst;
}

// Everything a reader sees in a frame, decoded.
struct FrameContent {
  int32_t chunksize = 0;
  int32_t typesize = 0;
  int64_t nbytes = 0;
  std::vector<Bytes> chunks;
  std::map<std::string, Bytes> metalayers;
  std::map<std::string, Bytes> vlmetalayers;
  bool operator==(const FrameContent&) const = default;
};

// Opens the frame and decodes every chunk and vlmetalayer (throws on any failure).
inline FrameContent read_content(const std::filesystem::path& path, int64_t offset = 0) {
  auto frame = Frame::open(path, offset);
  FrameContent c;
  c.chunksize = frame->header().chunksize;
  c.typesize = frame->header().typesize;
  c.nbytes = frame->header().nbytes;
  for (int64_t n = 0; n < frame->nchunks(); ++n) c.chunks.push_back(frame->read_chunk(n));
  for (const auto& m : frame->metalayers()) c.metalayers[m.name] = m.content;
  for (const auto& v : frame->vlmetalayers()) c.vlmetalayers[v.name] = frame->vlmetalayer_content(v);
  return c;
}

inline std::string describe(const FrameContent& c) {
  std::string s = "chunksize " + std::to_string(c.chunksize) + ", nbytes " + std::to_string(c.nbytes) + ", " +
                  std::to_string(c.chunks.size()) + " chunks, metalayers [";
  for (const auto& [name, content] : c.metalayers) s += name + ":" + std::to_string(content.size()) + " ";
  s += "], vlmetalayers [";
  for (const auto& [name, content] : c.vlmetalayers) s += name + ":" + std::to_string(content.size()) + " ";
  return s + "]";
}

inline Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Deterministic data that compresses somewhat (a slow ramp plus noise).
inline Bytes make_data(size_t n, uint32_t seed) {
  Bytes out(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = uint8_t((i / 64 + seed) ^ ((x >> 28) & 3));
  }
  return out;
}

// Incompressible data.
inline Bytes random_data(size_t n, uint32_t seed) {
  Bytes out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    out[i] = uint8_t(x >> 24);
  }
  return out;
}

// The errno of the IoError `fn` throws, or -1 when it throws none (or another type).
inline int errno_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const IoError& e) {
    return e.error_number();
  } catch (...) {
    return -2;
  }
  return -1;
}

inline std::filesystem::path copy_fixture(const TempDir& tmp, const std::string& name) {
  return copy_frame(frame_path(name), tmp.path() / name);
}

inline void expect_content(const std::filesystem::path& path, const FrameContent& expected) {
  FrameContent got = read_content(path);
  EXPECT_EQ(got, expected) << "got " << describe(got) << "\nwant " << describe(expected);
}

inline int64_t size_of(const std::filesystem::path& p) { return int64_t(std::filesystem::file_size(p)); }

}  // namespace blosc2fs::testing
