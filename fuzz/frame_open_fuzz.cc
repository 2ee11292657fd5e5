// Writes arbitrary bytes as a contiguous frame file, opens it and reads everything
// the mount would show: header, index, chunks, metalayers, vlmetalayers, b2nd, JSON,
// and preview.png through a Volume.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <string>

#include "b2nd.h"
#include "error.h"
#include "frame.h"
#include "frame_json.h"
#include "frame_nd.h"
#include "kind.h"
#include "fuzz_script.h"
#include "fs_error.h"
#include "inodes.h"
#include "volume.h"

namespace {
constexpr int32_t kMaxFuzzNbytes = 64 << 20;

std::string scratch_path() {
  static const std::string path = [] {
    std::filesystem::create_directories(blosc2fs::fuzz::scratch_dir_path());
    return (blosc2fs::fuzz::scratch_dir_path() / "frame.b2frame").string();
  }();
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blosc2fs;
  const std::string path = scratch_path();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    auto frame = Frame::open(path);
    (void)frame_json_text(*frame);
    // A few hundred bytes can claim millions of chunks (special index entries):
    // rows of the first and last few only, as the mount makes them, a page at a time.
    (void)index_tsv_rows(*frame, 0, 64);
    (void)index_tsv_rows(*frame, frame->nchunks() - 64, 64);
    // The kind's views: items of the first chunks, a proxy's fetched column.
    // Both item layouts on every frame (more than the mount, which shows the
    // kind's own), decoded with the mount's bounds: a chunk is decoded into
    // the size the frame gives it (Frame::decode_chunk), never its own claim.
    const FrameKind kind = detect_frame_kind(*frame);
    if (kind.proxy) (void)index_tsv_rows(*frame, 0, 64, &*kind.proxy);
    for (ItemsLayout layout : {ItemsLayout::one_per_chunk, ItemsLayout::block_arrays}) {
      for (int64_t n = 0; n < frame->nchunks() && n < 4; ++n) {
        try {
          if (frame->chunk_nbytes(n) <= kMaxFuzzNbytes) (void)items_jsonl_rows(*frame, layout, n, 1);
        } catch (const FormatError&) {
        } catch (const IoError&) {
        }
      }
    }
    try {
      (void)frame->usermeta();  // older layouts
    } catch (const FormatError&) {
    }
    for (const auto& layer : frame->vlmetalayers()) {
      try {
        (void)frame->vlmetalayer_content(layer);
      } catch (const FormatError&) {
      }
    }
    for (int64_t n = 0; n < frame->nchunks() && n < 16; ++n) {
      try {
        if (frame->chunk_nbytes(n) <= kMaxFuzzNbytes) (void)frame->read_chunk(n);
        (void)frame->read_raw_chunk(n);
      } catch (const FormatError&) {
      }
    }
    for (const char* name : {"b2nd", "caterva"}) {
      if (const Metalayer* meta = frame->find_metalayer(name)) {
        try {
          NdMeta nd = frame_nd_meta(*frame, *meta);
          NdLayout layout(nd, frame->header().typesize, frame->nchunks(), frame->header().chunksize);
          (void)layout.chunks_for_range(0, std::min<int64_t>(layout.array_bytes(), 1 << 20));
        } catch (const FormatError&) {
        }
      }
    }
    // preview.png as the mount draws it: through a Volume, its chunk cache and
    // the block views of src/preview/ (frames of bounded chunks: the cache
    // holds a chunk's whole decoded size for each one a drawing touches).
    const int32_t chunksize = frame->header().chunksize;
    if (frame_nd_metalayer(*frame) && chunksize > 0 && chunksize <= kMaxFuzzNbytes / 8 && frame->nchunks() <= 4096) {
      try {
        VolumeOptions options;
        options.cache_budget = 64 << 20;
        Volume volume(path, options);
        if (std::optional<uint64_t> ino = volume.lookup(kRootIno, "preview.png")) {
          Bytes png(size_t(std::min<int64_t>(volume.attributes(*ino).st_size, 8 << 20)));
          png.resize(volume.read(*ino, 0, png));
          if (png.size() < 8 || png[1] != 'P' || png[2] != 'N' || png[3] != 'G') {
            std::fprintf(stderr, "preview.png is not a PNG (%zu bytes)\n", png.size());
            std::abort();
          }
        }
      } catch (const FormatError&) {
      } catch (const IoError&) {
      } catch (const FsError&) {
      }
    }
  } catch (const FormatError&) {
  } catch (const IoError&) {
  }
  return 0;
}
