#include "exercise_frame.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "b2nd.h"
#include "error.h"
#include "frame.h"
#include "frame_json.h"

namespace blosc2fs::testing {

bool exercise_frame(const std::filesystem::path& path) {
  std::unique_ptr<Frame> frame;
  try {
    frame = Frame::open(path);
  } catch (const FormatError&) {
    return false;
  } catch (const IoError&) {
    return false;
  }
  const int64_t n = std::min<int64_t>(frame->nchunks(), 2000);
  for (int64_t i = 0; i < n; ++i) {
    try {
      frame->index_entry(i);
      frame->chunk_info(i);
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
    try {
      frame->read_raw_chunk(i);
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
    try {
      Bytes c = frame->read_chunk(i);
      EXPECT_EQ(int64_t(c.size()), frame->chunk_nbytes(i));
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
    try {
      frame->chunk_data_offset(i);
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
  }
  for (const Vlmetalayer& v : frame->vlmetalayers()) {
    try {
      frame->vlmetalayer_content(v);
    } catch (const FormatError&) {
    }
  }
  try {
    frame->usermeta();  // older layouts
  } catch (const FormatError&) {
  }
  try {
    frame_json_text(*frame);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "frame_json_text: " << e.what();
  }
  if (frame->nchunks() <= 2000) {
    EXPECT_NO_THROW(index_tsv_text(*frame));
  }
  const Metalayer* nd = frame->find_metalayer("b2nd");
  if (nd && frame->nchunks() <= 2000) {
    try {
      NdMeta meta = parse_nd_meta(nd->content, false);
      NdLayout layout(meta, frame->header().typesize, frame->nchunks(), frame->header().chunksize);
      std::vector<Bytes> chunks(size_t(layout.nchunks()));
      Bytes out(size_t(std::min<int64_t>(layout.array_bytes(), 1 << 20)));
      layout.read(0, out, [&](int64_t c) {
        chunks[size_t(c)] = frame->read_chunk(c);
        return ByteSpan(chunks[size_t(c)]);
      });
    } catch (const FormatError&) {
    } catch (const IoError&) {
    }
  }
  return true;
}

void write_file(const std::filesystem::path& path, ByteSpan data) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 0), ssize_t(data.size()));
  ASSERT_EQ(::ftruncate(fd, off_t(data.size())), 0);
  ::close(fd);
}

}  // namespace blosc2fs::testing
