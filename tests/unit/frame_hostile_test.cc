// Truncated and corrupted frames: opening and reading everything either works
// or throws FormatError / IoError. Never a crash, hang or unbounded allocation
// (run under -DBLOSC2FS_SANITIZE=ON too).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>

#include "b2nd.h"
#include "exercise_frame.h"
#include "fixtures.h"
#include "frame.h"
#include "frame_json.h"

namespace blosc2fs {
namespace {

using testing::frame_path;
using testing::TempDir;
using testing::write_file;

struct Outcome {
  int opened = 0;
  int rejected = 0;
};

std::vector<std::string> cframe_names() {
  std::vector<std::string> names;
  for (const std::string& name : testing::fixture_frame_names())
    if (std::filesystem::is_regular_file(frame_path(name))) names.push_back(name);
  return names;
}

TEST(Hostile, TruncatedCframes) {
  TempDir dir;
  auto path = dir.path() / "t.b2frame";
  int opened = 0, cases = 0;
  for (const std::string& name : cframe_names()) {
    Bytes bytes = testing::read_file(frame_path(name));
    std::set<size_t> lengths;
    for (size_t len = 0; len < std::min<size_t>(bytes.size(), 200); ++len) lengths.insert(len);
    for (size_t back = 1; back < std::min<size_t>(bytes.size(), 120); ++back) lengths.insert(bytes.size() - back);
    std::mt19937 rng(uint32_t(bytes.size()));
    for (int i = 0; i < 30; ++i) lengths.insert(rng() % bytes.size());
    for (size_t len : lengths) {
      Bytes cut(bytes.begin(), bytes.begin() + ptrdiff_t(len));
      write_file(path, cut);
      opened += testing::exercise_frame(path);
      ++cases;
      // The same cut with frame_len claiming it, so the checks past the
      // file-size test (trailer, index, chunks) see the damage.
      if (len >= 24) {
        store_be64(cut.data() + 16, len);
        write_file(path, cut);
        opened += testing::exercise_frame(path);
        ++cases;
      }
    }
    // Bytes cut out of the middle, trailer kept and frame_len patched: the
    // index and chunks then point at the wrong places.
    for (int i = 0; i < 40 && bytes.size() > 200; ++i) {
      size_t from = 87 + rng() % (bytes.size() - 150);
      size_t count = 1 + rng() % std::min<size_t>(bytes.size() - 60 - from, i % 2 ? 8 : 4096);
      Bytes cut = bytes;
      cut.erase(cut.begin() + ptrdiff_t(from), cut.begin() + ptrdiff_t(from + count));
      store_be64(cut.data() + 16, cut.size());
      const uint64_t header_len = load_be32(bytes.data() + 11), cbytes = load_be64(bytes.data() + 39);
      if (from >= header_len && from + count <= header_len + cbytes) store_be64(cut.data() + 39, cbytes - count);
      write_file(path, cut);
      opened += testing::exercise_frame(path);
      ++cases;
    }
    // Trailing junk is accepted, as in c-blosc2.
    Bytes longer = bytes;
    longer.insert(longer.end(), 100, 0xEE);
    write_file(path, longer);
    EXPECT_TRUE(testing::exercise_frame(path)) << name;
  }
  std::printf("%d truncation cases, %d opened\n", cases, opened);
  EXPECT_GT(cases, 10000);
}

TEST(Hostile, CorruptedCframes) {
  TempDir dir;
  auto path = dir.path() / "c.b2frame";
  int opened = 0, cases = 0;
  std::mt19937 rng(12345);
  for (const std::string& name : cframe_names()) {
    const Bytes original = testing::read_file(frame_path(name));
    auto reference = Frame::open(frame_path(name));
    const size_t header_len = size_t(reference->header().header_len);
    const size_t tail_start = size_t(reference->header().header_len + reference->header().cbytes);
    for (int i = 0; i < 120; ++i) {
      Bytes bytes = original;
      // Mostly the structures: header, index and trailer; sometimes chunk data.
      size_t pos;
      switch (i % 4) {
        case 0: pos = rng() % header_len; break;
        case 1: pos = tail_start + rng() % (bytes.size() - tail_start); break;
        case 2: pos = header_len + rng() % (bytes.size() - header_len); break;
        default: pos = rng() % bytes.size(); break;
      }
      int how = int(rng() % 4);
      int count = 1 + int(rng() % 4);
      for (int k = 0; k < count && pos + size_t(k) < bytes.size(); ++k) {
        uint8_t& b = bytes[pos + size_t(k)];
        b = how == 0 ? uint8_t(b ^ (1u << (rng() % 8))) : how == 1 ? 0xFF : how == 2 ? 0x00 : uint8_t(rng());
      }
      write_file(path, bytes);
      opened += testing::exercise_frame(path);
      ++cases;
    }
  }
  std::printf("%d corruption cases, %d opened\n", cases, opened);
  EXPECT_GT(cases, 3000);
}

TEST(Hostile, CorruptedSframes) {
  int cases = 0;
  std::mt19937 rng(777);
  for (std::string name : {"sframe-zstd-f4.b2frame", "sframe-mutated-i4.b2frame", "b2nd-4d-i2-sframe.b2nd"}) {
    for (int i = 0; i < 80; ++i) {
      TempDir dir;
      auto path = dir.path() / "s";
      std::filesystem::copy(frame_path(name), path);
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(path)) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      const auto& victim = (i % 2) ? path / "chunks.b2frame" : files[rng() % files.size()];
      std::filesystem::permissions(victim, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
      Bytes bytes = testing::read_file(victim);
      if (i % 3 == 0) {
        bytes.resize(rng() % (bytes.size() + 1));
      } else if (!bytes.empty()) {
        for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] = uint8_t(rng());
      }
      write_file(victim, bytes);
      testing::exercise_frame(path);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 240);
}

TEST(Hostile, HandCraftedHeaders) {
  TempDir dir;
  auto path = dir.path() / "h.b2frame";
  const Bytes original = testing::read_file(frame_path("frame_simple-zstd.b2frame"));
  auto put = [&](size_t at, std::initializer_list<uint8_t> v) {
    Bytes b = original;
    std::copy(v.begin(), v.end(), b.begin() + ptrdiff_t(at));
    write_file(path, b);
    return testing::exercise_frame(path);
  };
  EXPECT_FALSE(put(11, {0x7F, 0xFF, 0xFF, 0xFF}));                          // header_len huge
  EXPECT_FALSE(put(11, {0xFF, 0xFF, 0xFF, 0xFF}));                          // header_len negative
  EXPECT_FALSE(put(16, {0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));  // frame_len huge
  EXPECT_FALSE(put(16, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));  // frame_len negative
  EXPECT_FALSE(put(25, {0x14}));                                            // version 4
  EXPECT_FALSE(put(26, {0x01}));                                            // sparse type in a file
  EXPECT_FALSE(put(30, {0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));  // nbytes huge
  EXPECT_FALSE(put(48, {0, 0, 0, 0}));                                      // typesize 0
  EXPECT_FALSE(put(58, {0xFF, 0xFF, 0xFF, 0xFF}));                          // chunksize -1 with data
  EXPECT_FALSE(put(58, {0, 0, 0, 1}));                                      // chunksize 1: index mismatch
  EXPECT_FALSE(put(70, {7}));                                               // 7 filters
  EXPECT_FALSE(put(2, {'x'}));                                              // magic
  EXPECT_TRUE(put(62, {0xD1, 0x7F, 0x7F}));                                 // nthreads: informational
}

// A 1,446-byte frame the fuzzer made: variable chunks, 2,097,156 index entries,
// their headers unreadable. Sizes used to be scanned for every chunk, one
// exception each (over 10 s under ASan); the scan now stops at the second
// unknown size and later chunks report their own header's error.
TEST(Hostile, MillionsOfUnreadableVariableChunks) {
  auto frame = Frame::open(testing::hostile_frame_path("varchunks-2097156-unreadable-chunks.b2frame"));
  ASSERT_EQ(frame->nchunks(), 2097156);
  ASSERT_EQ(frame->header().chunksize, 0);
  EXPECT_GE(frame->largest_chunk_nbytes(), 0);
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(2), frame->nchunks() - 1}) {
    try {
      const int32_t size = frame->chunk_nbytes(n);
      EXPECT_GE(size, 0);
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("chunk " + std::to_string(n) + " of"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(frame->chunk_data_offset(frame->nchunks() - 1), FormatError);
  EXPECT_NO_THROW(index_tsv_rows(*frame, frame->nchunks() - 10, 10));
}

}  // namespace
}  // namespace blosc2fs
