// Fixed-chunksize frames whose one short chunk is not the last (c-blosc2's
// reorder and insert make them): reading, and every edit keeping them frames
// that read the same way, on contiguous and sparse frames.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "chunk_codec.h"
#include "fixtures.h"
#include "frame.h"
#include "frame_editor.h"
#include "frame_editor_test_util.h"
#include "frame_json.h"
#include "frame_writer.h"

namespace blosc2fs::testing {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kChunksize = 4000;

// A frame of `sizes` chunks (distinct data) with a fixed chunksize of 4000
// wherever its short chunk sits: written with variable chunks, then its
// header's chunksize set to 4000 and its version to 2, which is the frame
// c-blosc2's reorder leaves. Returns the chunks' data.
std::vector<Bytes> make_frame(const fs::path& path, const std::vector<int32_t>& sizes, bool sparse) {
  FrameParams params;
  params.cparams.codec = Codec::lz4;
  params.cparams.clevel = 5;
  params.cparams.typesize = 4;
  params.chunksize = 0;
  params.sparse = sparse;
  std::vector<Bytes> chunks;
  {
    FrameWriter writer(path, params);
    for (size_t i = 0; i < sizes.size(); ++i) {
      chunks.push_back(make_data(size_t(sizes[i]), uint32_t(i + 1)));
      writer.append(chunks.back());
    }
    writer.close();
  }
  const fs::path header = sparse ? path / "chunks.b2frame" : path;
  Bytes bytes = read_file(header);
  bytes[25] = frame_general_flags(kChunksize, false);
  store_be32(bytes.data() + 58, uint32_t(kChunksize));
  std::ofstream(header, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return chunks;
}

int64_t total(const std::vector<Bytes>& chunks) {
  int64_t n = 0;
  for (const Bytes& c : chunks) n += int64_t(c.size());
  return n;
}

// Everything a reader gets from the frame matches `chunks`, in every view.
void expect_frame(const fs::path& path, const std::vector<Bytes>& chunks, int32_t chunksize) {
  auto frame = Frame::open(path);
  ASSERT_EQ(frame->nchunks(), int64_t(chunks.size()));
  EXPECT_EQ(frame->header().chunksize, chunksize);
  EXPECT_EQ(frame->header().version(), chunksize == 0 ? 3 : 2);
  EXPECT_EQ(frame->header().nbytes, total(chunks));
  int64_t at = 0;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    SCOPED_TRACE("chunk " + std::to_string(n));
    EXPECT_EQ(frame->chunk_data_offset(n), at);
    EXPECT_EQ(frame->chunk_nbytes(n), int32_t(chunks[size_t(n)].size()));
    EXPECT_EQ(frame->chunk_info(n).nbytes, int32_t(chunks[size_t(n)].size()));
    EXPECT_EQ(frame->read_chunk(n), chunks[size_t(n)]);
    at += int64_t(chunks[size_t(n)].size());
  }
  EXPECT_EQ(frame->chunk_data_offset(frame->nchunks()), at);
  // index.tsv: one row per chunk, its nbytes column the chunk's size.
  std::istringstream tsv(index_tsv_text(*frame));
  std::string row;
  std::getline(tsv, row);  // the header
  for (size_t n = 0; std::getline(tsv, row); ++n) {
    std::vector<std::string> cells;
    std::istringstream fields(row);
    for (std::string cell; std::getline(fields, cell, '\t');) cells.push_back(cell);
    ASSERT_EQ(cells.size(), 7u) << row;
    ASSERT_LT(n, chunks.size());
    EXPECT_EQ(cells[3], std::to_string(chunks[n].size())) << row;
  }
  if (chunksize > 0) {
    // What c-blosc2 needs to read it the same way: nchunks from nbytes, and
    // special index entries only where it sizes them right.
    EXPECT_EQ(frame->nchunks(), (frame->header().nbytes + chunksize - 1) / chunksize);
    const int64_t short_at = frame->short_chunk();
    for (int64_t n = 0; n < frame->nchunks(); ++n) {
      if (frame->index_entry(n).special == Special::none) continue;
      const bool last = n == frame->nchunks() - 1;
      EXPECT_TRUE(last ? short_at < 0 || short_at == n : n != short_at) << "special entry at chunk " << n;
    }
  } else {
    for (int64_t n = 0; n < frame->nchunks(); ++n)
      EXPECT_EQ(frame->index_entry(n).special, Special::none) << "special entry in a variable frame, chunk " << n;
  }
}

class ShortChunks : public ::testing::TestWithParam<bool> {
 protected:
  bool sparse() const { return GetParam(); }
  fs::path make(const std::vector<int32_t>& sizes, std::vector<Bytes>& chunks) {
    fs::path p = tmp_.path() / (sparse() ? "s.b2frame" : "c.b2frame");
    fs::remove_all(p);
    chunks = make_frame(p, sizes, sparse());
    return p;
  }
  TempDir tmp_;
};

TEST_P(ShortChunks, ReadAnywhere) {
  for (int64_t at : {0, 2, 4}) {
    SCOPED_TRACE("short chunk at " + std::to_string(at));
    std::vector<int32_t> sizes(5, kChunksize);
    sizes[size_t(at)] = 1000;
    std::vector<Bytes> chunks;
    fs::path p = make(sizes, chunks);
    expect_frame(p, chunks, kChunksize);
    EXPECT_EQ(Frame::open(p)->short_chunk(), at);
  }
  std::vector<Bytes> chunks;
  fs::path p = make({kChunksize, kChunksize, kChunksize}, chunks);
  EXPECT_EQ(Frame::open(p)->short_chunk(), -1);
  expect_frame(p, chunks, kChunksize);
}

TEST_P(ShortChunks, ZeroShortChunkIsStored) {
  std::vector<Bytes> chunks;
  fs::path p = make({kChunksize, 1000, kChunksize}, chunks);
  {
    FrameEditor ed(p);
    ed.replace_chunk(1, Bytes(1000, 0));
    ed.commit();
  }
  chunks[1] = Bytes(1000, 0);
  expect_frame(p, chunks, kChunksize);
  EXPECT_EQ(Frame::open(p)->short_chunk(), 1);
  // Stored as a repeat-value chunk: c-blosc2 would size a special entry there as chunksize.
  EXPECT_EQ(Frame::open(p)->index_entry(1).special, Special::none);
}

TEST_P(ShortChunks, RewritesKeepTheChunksize) {
  std::vector<Bytes> chunks;
  fs::path p = make({1000, kChunksize, kChunksize, kChunksize}, chunks);
  FrameEditor ed(p);
  chunks[0] = make_data(1000, 50);  // the short chunk, same size
  chunks[2] = make_data(kChunksize, 51);
  ed.replace_chunk(0, chunks[0]);
  ed.replace_chunk(2, chunks[2]);
  ed.commit();
  expect_frame(p, chunks, kChunksize);
  chunks[0] = make_data(300, 52);  // the short chunk, another size
  ed.replace_chunk(0, chunks[0]);
  ed.commit();
  expect_frame(p, chunks, kChunksize);
  chunks.push_back(make_data(kChunksize, 53));  // appending a full chunk
  ed.append_chunk(chunks.back());
  ed.commit();
  expect_frame(p, chunks, kChunksize);
  // A full chunk in the middle may not become short (c-blosc2 would need variable chunks).
  EXPECT_EQ(errno_of([&] { ed.replace_chunk(1, make_data(100, 1)); }), EINVAL);
  chunks.back() = Bytes(kChunksize, 0);  // zeros as the last chunk: stored, not a special entry
  ed.replace_chunk(int64_t(chunks.size()) - 1, chunks.back());
  ed.commit();
  expect_frame(p, chunks, kChunksize);
  EXPECT_EQ(ed.frame().index_entry(int64_t(chunks.size()) - 1).special, Special::none);
  chunks[0] = make_data(kChunksize, 54);  // the short chunk made full: no short chunk left
  ed.replace_chunk(0, chunks[0]);
  ed.commit();
  expect_frame(p, chunks, kChunksize);
  EXPECT_EQ(ed.frame().short_chunk(), -1);
}

TEST_P(ShortChunks, SecondShortChunkMakesTheFrameVariable) {
  std::vector<Bytes> chunks;
  // A zeros chunk in the middle (a special index entry) must become a stored chunk too.
  fs::path p = make({kChunksize, 1000, kChunksize, kChunksize}, chunks);
  chunks[2] = Bytes(kChunksize, 0);
  {
    FrameEditor ed(p);
    ed.replace_chunk(2, chunks[2]);
    ed.commit();
    EXPECT_EQ(ed.frame().index_entry(2).special, Special::zeros);
    expect_frame(p, chunks, kChunksize);
    chunks.push_back(make_data(10, 60));  // an append behind the short chunk (c-blosc2 breaks the frame here)
    ed.append_chunk(chunks.back());
    ed.commit();
  }
  expect_frame(p, chunks, 0);
  // Truncating a copy instead: the new last chunk is the second short one.
  std::vector<Bytes> again;
  p = make({kChunksize, 1000, kChunksize, kChunksize}, again);
  {
    FrameEditor ed(p);
    ed.truncate_chunks(3);
    again.resize(3);
    again[2] = make_data(2000, 61);
    ed.replace_chunk(2, again[2]);
    ed.commit();
  }
  expect_frame(p, again, 0);
  // Truncating away the short chunk leaves an ordinary fixed frame.
  p = make({kChunksize, 1000, kChunksize, kChunksize}, again);
  {
    FrameEditor ed(p);
    ed.truncate_chunks(1);
    again.resize(1);
    again.push_back(make_data(500, 62));
    ed.append_chunk(again.back());
    ed.commit();
  }
  expect_frame(p, again, kChunksize);
}

INSTANTIATE_TEST_SUITE_P(Frames, ShortChunks, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("sparse") : std::string("contiguous");
                         });

TEST(ShortChunksFixture, ReorderedFrameEdits) {
  TempDir tmp;
  const std::string name = "reordered-short-first-lz4-i4.b2frame";
  fs::path p = copy_frame(fixtures_extra_dir() / "frames" / name, tmp.path() / name);
  FrameContent base = read_content(p);
  std::vector<Bytes> chunks = base.chunks;
  ASSERT_EQ(chunks[0].size(), 400u);
  FrameEditor ed(p);
  chunks[0][7] ^= 0xFF;
  ed.replace_chunk(0, chunks[0]);
  chunks.push_back(make_data(16384, 70));
  ed.append_chunk(chunks.back());
  ed.commit();
  expect_frame(p, chunks, 16384);
}

}  // namespace
}  // namespace blosc2fs::testing
