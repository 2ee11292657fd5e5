// The byte-source seam: local files and directories, windows, memory, and
// frames and stores read through them exactly as from their paths.
#include "byte_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "error.h"
#include "fixtures.h"
#include "frame.h"
#include "store.h"

namespace blosc2fs {
namespace {

namespace fs = std::filesystem;
using testing::fixture_frame_names;
using testing::frame_path;
using testing::read_file;
using testing::TempDir;

TEST(ByteSource, SafeRelativeNames) {
  for (const char* good : {"a", "chunks.b2frame", "a/b.b2nd", "x/y/z", "..a", "a.."})
    EXPECT_TRUE(is_safe_relative_name(good)) << good;
  for (const char* bad : {"", "/a", "a/", "a//b", ".", "..", "../a", "a/../b", "a/./b", "a/.."})
    EXPECT_FALSE(is_safe_relative_name(bad)) << bad;
  EXPECT_FALSE(is_safe_relative_name(std::string("a\0b", 3)));
}

TEST(ByteSource, MemoryAndWindowsReadOnlyTheirBytes) {
  auto whole = memory_source(Bytes{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "ten");
  EXPECT_EQ(whole->size(), 10);
  EXPECT_EQ(whole->read_bytes(7, 3), (Bytes{7, 8, 9}));
  EXPECT_THROW(whole->read_bytes(8, 3), FormatError);
  uint8_t buffer[4];
  EXPECT_EQ(whole->read_at(8, buffer), 2u);
  EXPECT_EQ(whole->read_at(10, buffer), 0u);
  EXPECT_EQ(whole->read_at(-1, buffer), 0u);

  auto window = slice_source(whole, 3, 4);
  EXPECT_EQ(window->size(), 4);
  EXPECT_EQ(window->name(), "ten");
  EXPECT_EQ(window->read_bytes(0, 4), (Bytes{3, 4, 5, 6}));
  EXPECT_EQ(window->read_at(2, buffer), 2u);  // stops at the window's end, not the source's
  EXPECT_THROW(window->read_bytes(1, 4), FormatError);
  EXPECT_THROW(slice_source(whole, 8, 3), FormatError);
  EXPECT_THROW(slice_source(whole, -1, 2), FormatError);
  EXPECT_THROW(slice_source(whole, 2, -1), FormatError);
}

TEST(ByteSource, LocalDirectoriesOpenAndListOnlyNamesInside) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "d" / "sub");
  for (const char* name : {"d/a.b2nd", "d/sub/b.b2nd", "outside"}) {
    Bytes bytes{1, 2, 3};
    FILE* f = std::fopen((tmp.path() / name).c_str(), "wb");
    ASSERT_TRUE(f);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  auto dir = open_local_directory(tmp.path() / "d");
  EXPECT_EQ(dir->list(), (std::vector<std::string>{"a.b2nd", "sub/b.b2nd"}));
  EXPECT_EQ(dir->open("sub/b.b2nd")->size(), 3);
  EXPECT_EQ(dir->subdirectory("sub")->list(), (std::vector<std::string>{"b.b2nd"}));
  try {
    dir->open("missing");
    FAIL() << "opened a missing file";
  } catch (const IoError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
  }
  EXPECT_THROW(dir->open("../outside"), IoError);
  EXPECT_THROW(dir->open("/etc/passwd"), IoError);
  EXPECT_THROW(dir->subdirectory(".."), IoError);
  EXPECT_THROW(open_local_directory(tmp.path() / "outside"), IoError);
}

// Every chunk, decoded, and every vlmetalayer of a frame.
std::vector<Bytes> contents(const Frame& frame) {
  std::vector<Bytes> out;
  for (int64_t n = 0; n < frame.nchunks(); ++n) {
    try {
      out.push_back(frame.read_chunk(n));
    } catch (const FormatError&) {
      out.push_back(Bytes{0xEE});  // unreadable either way: the same marker
    }
  }
  for (const Vlmetalayer& v : frame.vlmetalayers()) out.push_back(v.stored);
  return out;
}

TEST(ByteSource, EveryFixtureFrameReadsTheSameFromMemoryAtAnOffsetAsFromItsPath) {
  size_t contiguous = 0, sparse = 0;
  for (const std::string& name : fixture_frame_names()) {
    SCOPED_TRACE(name);
    const fs::path path = frame_path(name);
    std::unique_ptr<Frame> by_path;
    try {
      by_path = Frame::open(path);
    } catch (const FormatError&) {
      continue;  // the fixtures that are refused are refused by the other tests
    }
    std::unique_ptr<Frame> by_source;
    if (fs::is_directory(path)) {
      by_source = Frame::open_sparse(open_local_directory(path));
      ++sparse;
    } else {
      Bytes padded(5, 0xAB);
      Bytes bytes = read_file(path);
      padded.insert(padded.end(), bytes.begin(), bytes.end());
      by_source = Frame::open(memory_source(std::move(padded), name), 5);
      ++contiguous;
    }
    EXPECT_EQ(by_source->nchunks(), by_path->nchunks());
    EXPECT_EQ(by_source->metalayers().size(), by_path->metalayers().size());
    EXPECT_EQ(contents(*by_source), contents(*by_path));
  }
  EXPECT_GT(contiguous, 10u);
  EXPECT_GT(sparse, 1u);
}

// A source that says it is remote and records what it is asked.
class RecordingSource final : public ByteSource {
 public:
  explicit RecordingSource(Bytes bytes) : bytes_(memory_source(std::move(bytes), "recorded")) {}
  int64_t size() const override { return bytes_->size(); }
  size_t read_at(int64_t offset, MutableByteSpan out) const override {
    std::lock_guard lock(mutex_);
    reads.emplace_back(offset, int64_t(out.size()));
    return bytes_->read_at(offset, out);
  }
  std::string name() const override { return "recorded"; }
  void will_read(int64_t offset, int64_t length) const override {
    std::lock_guard lock(mutex_);
    announced.emplace_back(offset, length);
  }
  bool remote() const override { return true; }

  mutable std::vector<std::pair<int64_t, int64_t>> reads, announced;

 private:
  std::shared_ptr<const ByteSource> bytes_;
  mutable std::mutex mutex_;
};

TEST(ByteSource, ARemoteFrameAnnouncesEachChunkExtentBeforeReadingInIt) {
  auto source = std::make_shared<RecordingSource>(read_file(frame_path("codec-zstd-shuffle-f4.b2frame")));
  auto frame = Frame::open(source);
  ASSERT_GT(frame->nchunks(), 1);
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    source->announced.clear();
    source->reads.clear();
    const Bytes raw = frame->read_raw_chunk(n);
    ASSERT_EQ(source->announced.size(), 1u);
    const auto [start, length] = source->announced[0];
    EXPECT_GE(length, int64_t(raw.size()));
    // Every read of the chunk lies inside what was announced: one request serves it.
    for (const auto& [offset, size] : source->reads) {
      EXPECT_GE(offset, start);
      EXPECT_LE(offset + size, start + length);
    }
  }
}

}  // namespace
}  // namespace blosc2fs
