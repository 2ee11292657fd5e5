// Reading stored chunks piecemeal (the mount does it for small reads of big
// chunks): the tables, then only the bytes of the blocks decoded. On every
// fixture frame, each block decoded from such a partial copy must equal the
// same block of the whole chunk; bytes never read are garbage, so a block that
// strayed outside its extent would decode differently or fail.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "chunk_codec.h"
#include "fixtures.h"
#include "frame.h"

namespace blosc2fs {
namespace {

using testing::fixture_frame_names;
using testing::frame_path;

class Piecemeal : public ::testing::TestWithParam<std::string> {};

TEST_P(Piecemeal, BlocksDecodeFromTheirOwnBytes) {
  std::unique_ptr<Frame> frame = Frame::open(frame_path(GetParam()));
  int64_t checked = 0;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    const Bytes whole = frame->read_raw_chunk(n);
    Bytes partial;
    std::optional<size_t> head = frame->read_raw_chunk_head(n, [&](size_t cbytes) {
      partial.assign(cbytes, 0xA5);
      return partial.data();
    });
    if (!head) continue;
    ASSERT_EQ(partial.size(), whole.size()) << "chunk " << n;
    ASSERT_TRUE(std::equal(partial.begin(), partial.begin() + int64_t(*head), whole.begin())) << "chunk " << n;
    const ChunkView reference(whole);
    const ChunkView view(partial);
    EXPECT_EQ(view.stored_tables_end(), int64_t(*head)) << "chunk " << n;
    Bytes block0;
    for (int32_t j = 0; j < view.nblocks(); ++j) {
      const auto [begin, end] = view.block_stored_extent(j);
      ASSERT_LE(int64_t(*head), begin) << "chunk " << n << " block " << j;
      ASSERT_LE(end, int64_t(partial.size())) << "chunk " << n << " block " << j;
      frame->read_raw_chunk_range(n, begin, MutableByteSpan(partial.data() + begin, size_t(end - begin)));
      Bytes want(size_t(reference.block_size(j))), got(want.size());
      reference.decode_block(j, want, block0);
      view.decode_block(j, got, block0);
      ASSERT_EQ(got, want) << "chunk " << n << " block " << j;
      if (j == 0) block0 = want;
      ++checked;
    }
  }
  RecordProperty("blocks", std::to_string(checked));
}

INSTANTIATE_TEST_SUITE_P(All, Piecemeal, ::testing::ValuesIn(fixture_frame_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s;
                           for (char c : info.param) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return s;
                         });

TEST(Piecemeal, RangesOutsideTheChunkAreRefused) {
  std::unique_ptr<Frame> frame = Frame::open(frame_path("frame_simple-lz4.b2frame"));
  Bytes buf(16);
  EXPECT_THROW(frame->read_raw_chunk_range(0, -1, buf), FormatError);
  EXPECT_THROW(frame->read_raw_chunk_range(0, int64_t(1) << 40, buf), FormatError);
}

}  // namespace
}  // namespace blosc2fs
