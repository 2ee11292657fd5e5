// Shared by the fuzz targets: reading an input as a script of operations,
// reporting a broken invariant, a scratch directory per process.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "b2nd.h"
#include "bytes.h"
#include "error.h"
#include "file.h"
#include "frame.h"
#include "frame_nd.h"
#include "frame_writer.h"

namespace blosc2fs::fuzz {

// The input a byte at a time; zeros once it has run out.
class Script {
 public:
  Script(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// A broken invariant: one line on stderr, then abort, so that libFuzzer keeps the input.
[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, why.c_str());
  std::abort();
}

// Bytes to write: zeros (seed 0) and one repeated byte (seed 1) become special
// chunks; other seeds give data that compresses some.
inline Bytes script_data(size_t size, uint8_t seed) {
  Bytes out(size);
  for (size_t i = 0; i < size; ++i)
    out[i] = seed == 0 ? 0 : seed == 1 ? 7 : uint8_t(seed * 31 + (i / 3) * (seed | 1) + (i % 5 == 0 ? i : 0));
  return out;
}

// This process's own directory for one input's files: emptied for each input
// (fresh_scratch_dir), removed at exit.
// Turns a frame written with variable chunks into one of a fixed chunksize
// (header chunksize and version), the way c-blosc2's reorder leaves a frame
// whose short chunk is not the last.
inline void set_fixed_chunksize(const std::filesystem::path& frame, bool sparse, int32_t chunksize) {
  const File file = File::open_read_write(sparse ? frame / "chunks.b2frame" : frame);
  const uint8_t flags = frame_general_flags(chunksize, false);
  uint8_t size[4];
  store_be32(size, uint32_t(chunksize));
  file.write_at(25, ByteSpan(&flags, 1));
  file.write_at(58, ByteSpan(size, 4));
}

inline const std::filesystem::path& scratch_dir_path() {
  // Never destroyed: the exit handler runs after the destructors of statics.
  static const std::filesystem::path* const dir = [] {
    auto* path = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                           (std::string("blosc2fs-") + program_invocation_short_name + "-" +
                                            std::to_string(getpid())));
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir_path(), ignored);
    });
    return path;
  }();
  return *dir;
}

inline const std::filesystem::path& fresh_scratch_dir() {
  const std::filesystem::path& dir = scratch_dir_path();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Writes the b2nd array `items` (C order, `typesize`-byte items) as a frame of
// `params` (whose metalayers hold meta's b2nd layer), chunk by chunk.
inline void write_nd_frame(const std::filesystem::path& path, const FrameParams& params, const NdMeta& meta,
                           int32_t typesize, int64_t nchunks, ByteSpan items) {
  FrameWriter writer(path, params);
  NdLayout layout(meta, typesize, nchunks, params.chunksize);
  std::vector<Bytes> chunks(static_cast<size_t>(nchunks), Bytes(size_t(params.chunksize), 0));
  layout.write(0, items, [&](int64_t n) -> MutableByteSpan { return chunks[size_t(n)]; });
  for (const Bytes& c : chunks) writer.append(c);
  writer.close();
}

// The b2nd array of the frame at `path` read afresh through NdLayout: its
// items in C order, and its shape in *shape. A frame that does not read back
// fails the input.
inline Bytes nd_items_of(const std::filesystem::path& path, std::vector<int64_t>* shape = nullptr) {
  try {
    auto frame = Frame::open(path);
    const Metalayer* meta = frame_nd_metalayer(*frame);
    if (!meta) fail("the frame lost its b2nd metalayer");
    NdMeta nd = frame_nd_meta(*frame, *meta);
    if (shape) *shape = nd.shape;
    NdLayout layout(nd, frame->header().typesize, frame->nchunks(), frame->header().chunksize);
    int64_t items = 1;
    for (int64_t d : nd.shape) items *= d;
    std::vector<Bytes> chunks(static_cast<size_t>(frame->nchunks()));
    Bytes got(static_cast<size_t>(items * frame->header().typesize));
    layout.read(0, got, [&](int64_t n) -> ByteSpan {
      chunks[size_t(n)] = frame->read_chunk(n);
      return chunks[size_t(n)];
    });
    return got;
  } catch (const FormatError& e) {
    fail(std::string("the frame does not read back: ") + e.what());
  } catch (const IoError& e) {
    fail(std::string("the frame does not read back: ") + e.what());
  }
}

}  // namespace blosc2fs::fuzz
