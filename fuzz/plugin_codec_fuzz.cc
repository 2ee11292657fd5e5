// Feeds arbitrary bytes to the plugin decoders (NDLZ, ZFP, the JPEG 2000 family,
// NDCELL/NDMEAN, and the OpenZL plugin library when one is installed), and to whole
// chunks decoded with a block geometry. The first bytes choose the decoder and its
// parameters; the rest is the stream. Output sizes stay small: the decoders must
// cap every allocation by them. The OpenZL library is the one a mount would load:
// BLOSC2FS_FUZZ_OPENZL=LIB, else the blosc2_openzl package of the python3 on PATH;
// found or not is said once on stderr. Crashes inside it are its own.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "chunk_codec.h"
#include "dynamic_plugins.h"
#include "error.h"
#include "jpeg2000.h"
#include "ndcell.h"
#include "ndlz.h"
#include "zfp_codec.h"

namespace {

using namespace blosc2fs;

constexpr size_t kPrefix = 16;
constexpr int64_t kMaxOut = 1 << 20;

// Bytes 2..15 of the prefix: typesize, ndim, then block dimensions of 1..32.
BlockGeometry geometry_from(const uint8_t* p) {
  BlockGeometry g;
  static constexpr int32_t kTypesizes[] = {1, 2, 4, 8, 3, 16, 0, 4};
  g.typesize = kTypesizes[p[2] & 7];
  g.ndim = p[3] % (kMaxBlockDims + 2);  // 0..9: out-of-range values included
  for (int i = 0; i < kMaxBlockDims; ++i) g.blockshape[size_t(i)] = int32_t(p[4 + i] % 33);
  return g;
}

int64_t output_size(const BlockGeometry& g, const uint8_t* p) {
  const int64_t items = g.block_items();
  int64_t size = items > 0 ? items * (g.typesize > 0 ? g.typesize : 1) : 0;
  size += p[12] & 7;  // sometimes more than the block: decoders must cope or refuse
  return size > kMaxOut ? kMaxOut : size;
}

constexpr uint8_t kCodecOpenzl = 38;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::optional<std::filesystem::path> library;
  std::string why;
  if (const char* given = std::getenv("BLOSC2FS_FUZZ_OPENZL")) library = std::filesystem::path(given);
  else library = find_plugin_with_python("openzl", "python3", std::chrono::seconds(30), &why);
  if (!library) {
    std::fprintf(stderr, "plugin_codec_fuzz: no OpenZL plugin (%s): OpenZL chunks read EIO\n", why.c_str());
    return 0;
  }
  try {
    install_dynamic_codec(DynamicCodec::load(kCodecOpenzl, "openzl", *library));
    std::fprintf(stderr, "plugin_codec_fuzz: OpenZL plugin %s loaded\n", library->c_str());
  } catch (const PluginLoadError& e) {
    std::fprintf(stderr, "plugin_codec_fuzz: %s\n", e.what());
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kPrefix) return 0;
  const uint8_t* p = data;
  const ByteSpan stream(data + kPrefix, size - kPrefix);
  const BlockGeometry g = geometry_from(p);
  std::vector<uint8_t> out(size_t(output_size(g, p)));
  try {
    switch (p[0] % 6) {
      case 0:
        out.resize(size_t(p[13]) * size_t(p[14] | 1));
        ndlz_decode(stream, out, (p[1] & 1) ? 8 : 4);
        break;
      case 1:
        zfp_decode(uint8_t(kCodecZfpAccuracy + p[1] % 3), p[13], stream, out, g);
        break;
      case 2: {
        static constexpr uint8_t kIds[] = {kCodecOpenHtj2k, kCodecGrok, kCodecJ2k, kCodecHtj2k};
        out.resize(size_t(p[13] + 1) * size_t(p[14] + 1) * size_t((p[1] >> 2) % 4 + 1));
        jpeg2000_decode(kIds[p[1] % 4], stream, out);
        break;
      }
      case 3: {
        std::vector<uint8_t> in(out.size());
        for (size_t i = 0; i < in.size() && i < stream.size(); ++i) in[i] = stream[i];
        if (p[1] & 1)
          ndmean_decode(in, out, p[13], g);
        else
          ndcell_decode(in, out, p[13], g);
        break;
      }
      case 5:  // after the chunk case (4), so that the older seeds keep their meaning
        if (const DynamicCodec* openzl = dynamic_codec(kCodecOpenzl))
          openzl->decode(p[13], g.typesize, stream, out, data);
        break;
      default: {
        DecodeRules rules;
        rules.geometry = g;
        ChunkView view(stream, rules);
        if (view.nbytes() > kMaxOut) return 0;
        std::vector<uint8_t> whole(size_t(view.nbytes()));
        view.decode(whole);
        break;
      }
    }
  } catch (const FormatError&) {
  }
  return 0;
}
