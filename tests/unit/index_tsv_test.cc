// index.tsv made a page of rows at a time: every way of reading it gives the
// same bytes as the text made whole.
#include "index_tsv_file.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "fixtures.h"
#include "frame.h"
#include "frame_json.h"
#include "frame_writer.h"

namespace blosc2fs {
namespace {

using testing::TempDir;

// A frame of `nchunks` small chunks, every third one all zeros (a special entry).
std::shared_ptr<const Frame> frame_of(const std::filesystem::path& path, int64_t nchunks) {
  FrameParams p;
  p.cparams.codec = Codec::lz4;
  p.cparams.typesize = 4;
  p.chunksize = 64;
  {
    FrameWriter w(path, p);
    Bytes chunk(64);
    for (int64_t n = 0; n < nchunks; ++n) {
      for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = n % 3 == 0 ? 0 : uint8_t(n + int64_t(i) * 7);
      w.append(chunk);
    }
    w.close();
  }
  return Frame::open(path);
}

std::string read_all(IndexTsvFile& file, int64_t offset, size_t len) {
  std::string out(len, '\0');
  const size_t n = file.read(offset, MutableByteSpan(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  out.resize(n);
  return out;
}

TEST(IndexTsv, PagesReadAsTheWholeText) {
  TempDir dir;
  const int64_t nchunks = 2 * IndexTsvFile::kRowsPerPage + 123;
  auto frame = frame_of(dir.path() / "many.b2frame", nchunks);
  const std::string want = index_tsv_text(*frame);
  IndexTsvFile file(frame);
  ASSERT_EQ(file.size(), int64_t(want.size()));
  EXPECT_EQ(read_all(file, 0, want.size() + 100), want);

  // Reads that start and end on and around the page and header boundaries.
  const size_t header = index_tsv_header().size();
  const size_t page1 = want.find("\n" + std::to_string(IndexTsvFile::kRowsPerPage) + "\t") + 1;
  const size_t page2 = want.find("\n" + std::to_string(2 * IndexTsvFile::kRowsPerPage) + "\t") + 1;
  for (size_t at : {size_t(0), header, page1, page2, want.size()}) {
    for (size_t back : {0, 1, 5}) {
      const size_t offset = at >= back ? at - back : 0;
      for (size_t len : {1, 7, 4096, 1 << 20}) {
        SCOPED_TRACE("offset " + std::to_string(offset) + ", length " + std::to_string(len));
        EXPECT_EQ(read_all(file, int64_t(offset), len), want.substr(offset, len));
      }
    }
  }
  EXPECT_EQ(read_all(file, int64_t(want.size()) + 10, 10), "");

  // Random reads, so that pages leave the few kept and are made again.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    const size_t offset = rng() % want.size(), len = 1 + rng() % 300000;
    ASSERT_EQ(read_all(file, int64_t(offset), len), want.substr(offset, len)) << "offset " << offset;
  }
}

TEST(IndexTsv, FillSpecialFramesReadAsTheWholeText) {
  for (const char* name : {"fill-special-zeros-f8.b2frame", "fill-special-nan-f4.b2frame"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Frame> frame = Frame::open(testing::frame_path(name));
    ASSERT_TRUE(frame->index_is_uniform());
    const std::string want = index_tsv_text(*frame);
    IndexTsvFile file(frame);
    EXPECT_EQ(file.size(), int64_t(want.size()));
    EXPECT_EQ(read_all(file, 0, want.size() + 1), want);
    EXPECT_EQ(read_all(file, 40, 50), want.substr(40, 50));
  }
}

// Such an index is measured from its first and last rows; reading makes only
// the pages read.
TEST(IndexTsv, AUniformIndexOfMillionsOfChunksIsMeasuredWithoutMakingItsRows) {
  // Frames of 172 bytes the fuzzer made, whose repeat-value index chunk claims
  // 1,712,261 chunks (every row an error) and 213,909,509 chunks.
  for (const char* name : {"uniform-index-1712261-error-rows.b2frame", "uniform-index-213909509-chunks.b2frame"}) {
    std::shared_ptr<const Frame> frame = Frame::open(testing::hostile_frame_path(name));
    ASSERT_TRUE(frame->index_is_uniform());
    const int64_t n = frame->nchunks();
    SCOPED_TRACE(std::to_string(n) + " chunks");
    ASSERT_GT(n, 1000000);
    EXPECT_EQ(frame->largest_chunk_nbytes(), 0);

    IndexTsvFile file(frame);
    const int64_t size = file.size();
    const std::string head = index_tsv_header() + index_tsv_rows(*frame, 0, 3 * IndexTsvFile::kRowsPerPage);
    EXPECT_EQ(read_all(file, 0, head.size()), head);
    const std::string tail = index_tsv_rows(*frame, n - 5000, 5000);
    EXPECT_EQ(read_all(file, size - int64_t(tail.size()), tail.size() + 10), tail);
    // In the middle, across a page boundary or more: whole rows follow each
    // other, each one exactly the row of its chunk.
    std::string around = read_all(file, size / 2, 600000);
    around = around.substr(around.find('\n') + 1);
    around.resize(around.rfind('\n') + 1);
    int64_t rows = 0, previous = -1;
    for (size_t at = 0; at < around.size(); ++rows) {
      const size_t end = around.find('\n', at) + 1;
      const int64_t chunk = std::stoll(around.substr(at, around.find('\t', at) - at));
      if (previous >= 0) {
        ASSERT_EQ(chunk, previous + 1);
      }
      ASSERT_EQ(around.substr(at, end - at), index_tsv_rows(*frame, chunk, 1));
      previous = chunk;
      at = end;
    }
    EXPECT_GT(rows, IndexTsvFile::kRowsPerPage);
  }
}

TEST(IndexTsv, AFrameWithoutChunksIsTheHeaderRow) {
  TempDir dir;
  auto frame = frame_of(dir.path() / "empty.b2frame", 0);
  IndexTsvFile file(frame);
  EXPECT_EQ(file.size(), int64_t(index_tsv_header().size()));
  EXPECT_EQ(read_all(file, 0, 1000), index_tsv_header());
  EXPECT_EQ(read_all(file, 3, 4), index_tsv_header().substr(3, 4));
}

}  // namespace
}  // namespace blosc2fs
