// Makes frames with blosc2fs's own writer: the demo array and the benchmark data sets.
//   mkframe demo OUT.b2nd
//   mkframe KIND OUT MEGABYTES [CHUNK_KB] [--sparse] [--blocksize KB]
//   mkframe many-chunks OUT NCHUNKS
// KIND: float32-zstd (noisy float32), float64-lz4 (smooth float64), text-blosclz (words).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "b2nd.h"
#include "error.h"
#include "frame_writer.h"
#include "msgpack.h"

namespace {

using namespace blosc2fs;

int usage() {
  std::fprintf(stderr,
               "usage: mkframe demo OUT.b2nd\n"
               "       mkframe float32-zstd|float64-lz4|text-blosclz OUT MEGABYTES [CHUNK_KB] [--sparse]\n"
               "               [--blocksize KB]   (default: automatic)\n"
               "       mkframe many-chunks OUT NCHUNKS\n");
  return 1;
}

// Gathers chunk `n` of a C-order array into the chunk/block layout b2nd stores
// (format-notes §7); padding stays zero.
Bytes gather_nd_chunk(const NdMeta& meta, const std::vector<uint8_t>& array, int32_t typesize, int64_t n) {
  const int nd = meta.ndim;
  std::vector<int64_t> ext_chunk(nd), chunks_per_dim(nd), blocks_per_dim(nd);
  int64_t chunk_items = 1, block_items = 1;
  for (int i = 0; i < nd; ++i) {
    ext_chunk[i] = (meta.chunkshape[i] + meta.blockshape[i] - 1) / meta.blockshape[i] * meta.blockshape[i];
    chunks_per_dim[i] = (meta.shape[i] + meta.chunkshape[i] - 1) / meta.chunkshape[i];
    blocks_per_dim[i] = ext_chunk[i] / meta.blockshape[i];
    chunk_items *= ext_chunk[i];
    block_items *= meta.blockshape[i];
  }
  std::vector<int64_t> chunk_coord(nd);
  for (int i = nd - 1; i >= 0; --i) {
    chunk_coord[i] = n % chunks_per_dim[i];
    n /= chunks_per_dim[i];
  }
  Bytes chunk(size_t(chunk_items * typesize), 0);
  std::vector<int64_t> pos(nd);
  for (int64_t item = 0; item < chunk_items; ++item) {
    // item -> (block index, in-block index) in C order, then to global coordinates
    int64_t block = item / block_items, inner = item % block_items;
    bool inside = true;
    int64_t flat = 0;
    for (int i = nd - 1; i >= 0; --i) {
      int64_t bc = block % blocks_per_dim[i];
      block /= blocks_per_dim[i];
      int64_t ic = inner % meta.blockshape[i];
      inner /= meta.blockshape[i];
      int64_t in_chunk = bc * meta.blockshape[i] + ic;
      pos[i] = chunk_coord[i] * meta.chunkshape[i] + in_chunk;
      if (in_chunk >= meta.chunkshape[i] || pos[i] >= meta.shape[i]) inside = false;
    }
    if (!inside) continue;
    for (int i = 0; i < nd; ++i) flat = flat * meta.shape[i] + pos[i];
    std::memcpy(&chunk[size_t(item * typesize)], &array[size_t(flat * typesize)], size_t(typesize));
  }
  return chunk;
}

int make_demo(const std::string& out) {
  // A year of daily temperatures on a coarse global grid: days x latitude x longitude.
  NdMeta meta;
  meta.ndim = 3;
  meta.shape = {365, 90, 180};
  meta.chunkshape = {73, 45, 90};
  meta.blockshape = {73, 15, 30};
  meta.dtype = "<f4";
  const int32_t typesize = 4;
  int64_t nitems = meta.shape[0] * meta.shape[1] * meta.shape[2];
  std::vector<uint8_t> array(size_t(nitems * typesize));
  std::mt19937 rng(42);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  size_t k = 0;
  for (int d = 0; d < 365; ++d)
    for (int la = 0; la < 90; ++la)
      for (int lo = 0; lo < 180; ++lo, ++k) {
        double lat = -89.0 + 2.0 * la;
        float t = float(28.0 - 0.45 * std::fabs(lat) + 10.0 * std::sin(2 * M_PI * (d - 100) / 365.0) * (lat / 90.0) +
                        2.0 * std::sin(2 * M_PI * lo / 180.0));
        t = std::round((t + noise(rng)) * 100.0f) / 100.0f;
        std::memcpy(&array[k * 4], &t, 4);
      }
  FrameParams params;
  params.cparams.codec = Codec::zstd;
  params.cparams.clevel = 5;
  params.cparams.typesize = typesize;
  params.cparams.filters = {0, 0, 0, 0, 0, kFilterShuffle};
  int64_t ext_items = 1;
  for (int i = 0; i < 3; ++i)
    ext_items *= (meta.chunkshape[i] + meta.blockshape[i] - 1) / meta.blockshape[i] * meta.blockshape[i];
  params.chunksize = int32_t(ext_items * typesize);
  params.cparams.blocksize = meta.blockshape[0] * meta.blockshape[1] * meta.blockshape[2] * typesize;
  params.metalayers.push_back({"b2nd", serialize_b2nd_meta(meta)});
  FrameWriter writer(out, params);
  int64_t nchunks = 1;
  for (int i = 0; i < 3; ++i) nchunks *= (meta.shape[i] + meta.chunkshape[i] - 1) / meta.chunkshape[i];
  for (int64_t n = 0; n < nchunks; ++n) writer.append(gather_nd_chunk(meta, array, typesize, n));
  auto set_json = [&](const char* name, const Json& value) { writer.set_vlmetalayer(name, json_to_msgpack(value)); };
  set_json("units", "degC");
  set_json("source", Json{{"model", "blosc2fs demo"}, {"version", 1}, {"grid_deg", 2.0}});
  set_json("valid", Json::array({true, nullptr, 3}));
  const std::string history = "Made by blosc2fs's mkframe: a synthetic year of daily temperatures.\n";
  writer.set_vlmetalayer("history", ByteSpan(reinterpret_cast<const uint8_t*>(history.data()), history.size()));
  writer.close();
  return 0;
}

int make_dataset(const std::string& kind, const std::string& out, int64_t megabytes, int64_t chunk_kb, bool sparse,
                 int64_t block_kb) {
  FrameParams params;
  params.sparse = sparse;
  params.chunksize = int32_t(chunk_kb * 1024);
  params.cparams.blocksize = int32_t(block_kb * 1024);
  params.cparams.clevel = 5;
  if (kind == "float32-zstd") {
    params.cparams.codec = Codec::zstd;
    params.cparams.typesize = 4;
  } else if (kind == "float64-lz4") {
    params.cparams.codec = Codec::lz4;
    params.cparams.typesize = 8;
  } else if (kind == "text-blosclz") {
    params.cparams.codec = Codec::blosclz;
    params.cparams.typesize = 1;
    params.cparams.filters = {0, 0, 0, 0, 0, 0};
  } else {
    return usage();
  }
  FrameWriter writer(out, params);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  static const char* const words[] = {"blosc", "frame", "chunk", "index", "meta", "layer", "super",
                                      "fuse", "array", "block", "shuffle", "codec", "the", "of"};
  Bytes chunk(size_t(params.chunksize));
  int64_t total = megabytes << 20, written = 0, item = 0;
  while (written < total) {
    size_t len = size_t(std::min<int64_t>(params.chunksize, total - written));
    if (kind == "float32-zstd") {
      for (size_t i = 0; i + 4 <= len; i += 4, ++item) {
        float v = float(std::sin(item * 1e-4)) * 100.0f + noise(rng);
        std::memcpy(&chunk[i], &v, 4);
      }
    } else if (kind == "float64-lz4") {
      for (size_t i = 0; i + 8 <= len; i += 8, ++item) {
        double v = std::sin(item * 1e-5) * 1000.0 + std::cos(item * 3e-7);
        std::memcpy(&chunk[i], &v, 8);
      }
    } else {
      size_t i = 0;
      while (i < len) {
        const char* w = words[rng() % (sizeof words / sizeof *words)];
        for (const char* c = w; *c && i < len; ++c) chunk[i++] = uint8_t(*c);
        if (i < len) chunk[i++] = (rng() % 12 == 0) ? '\n' : ' ';
      }
    }
    writer.append(ByteSpan(chunk.data(), len));
    written += int64_t(len);
  }
  writer.close();
  return 0;
}

int make_many_chunks(const std::string& out, int64_t nchunks) {
  FrameParams params;
  params.chunksize = 64;
  params.cparams.codec = Codec::lz4;
  params.cparams.typesize = 8;
  FrameWriter writer(out, params);
  Bytes chunk(64);
  for (int64_t n = 0; n < nchunks; ++n) {
    for (int i = 0; i < 8; ++i) std::memcpy(&chunk[size_t(i) * 8], &n, 8);
    chunk[0] = uint8_t(n * 31 + 1);
    writer.append(chunk);
  }
  writer.close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool sparse = false;
  std::erase_if(args, [&](const std::string& a) { return a == "--sparse" ? (sparse = true) : false; });
  int64_t block_kb = 0;  // 0: the encoder's automatic blocksize
  try {
    for (auto it = args.begin(); it != args.end();) {
      if (*it != "--blocksize") {
        ++it;
        continue;
      }
      if (it + 1 == args.end()) return usage();
      block_kb = std::stoll(*(it + 1));
      if (block_kb < 0 || block_kb > (int64_t(kMaxBlocksize) >> 10)) return usage();
      it = args.erase(it, it + 2);
    }
    if (args.size() == 2 && args[0] == "demo") return make_demo(args[1]);
    if (args.size() == 3 && args[0] == "many-chunks") return make_many_chunks(args[1], std::stoll(args[2]));
    if (args.size() == 3 || args.size() == 4)
      return make_dataset(args[0], args[1], std::stoll(args[2]), args.size() == 4 ? std::stoll(args[3]) : 4096, sparse,
                          block_kb);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mkframe: %s\n", e.what());
    return 2;
  }
  return usage();
}
