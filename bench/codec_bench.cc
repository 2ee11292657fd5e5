// Single-threaded chunk encode/decode throughput per codec and filter, on float32 data
// shaped like a measured signal: a slow sine plus a little noise.
//
//   codec_bench [--mb 256] [--chunk-mb 4] [--clevel 5] [--reps 3] [--blocksize 0] [--codec NAME] [--filter NAME]
//               [--input RAWFILE]   (raw float32 bytes instead of the generated signal, e.g. the
//                                    exact data another decoder was timed on)
//   codec_bench --frame FRAME [--reps 5] [--input RAWFILE]
//               decode throughput on the chunks stored in FRAME (e.g. written by another
//               library), so two decoders can be compared on identical chunks; with --input,
//               the decoded chunks are checked against RAWFILE's bytes.
//
// MB/s are of uncompressed bytes (1 MB = 10^6 bytes); decode is the best of --reps passes.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "chunk_codec.h"
#include "frame.h"
#include "shuffle.h"

using namespace blosc2fs;

namespace {

struct Options {
  size_t total_mb = 256;
  size_t chunk_mb = 4;
  int clevel = 5;
  int reps = 3;
  int32_t blocksize = 0;  // 0: automatic
  std::string codec;   // empty: all
  std::string filter;  // empty: all
  std::string input;   // raw bytes to use instead of the generated signal
  std::string frame;   // decode this frame's chunks instead of encoding our own
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--mb") o.total_mb = std::stoul(value);
    else if (key == "--chunk-mb") o.chunk_mb = std::stoul(value);
    else if (key == "--clevel") o.clevel = std::stoi(value);
    else if (key == "--reps") o.reps = std::stoi(value);
    else if (key == "--blocksize") o.blocksize = std::stoi(value);
    else if (key == "--codec") o.codec = value;
    else if (key == "--filter") o.filter = value;
    else if (key == "--input") o.input = value;
    else if (key == "--frame") o.frame = value;
    else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  return o;
}

std::vector<uint8_t> make_signal(size_t bytes) {
  std::vector<float> values(bytes / sizeof(float));
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> noise(-0.001f, 0.001f);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(100.0 * std::sin(double(i) * 1e-4)) + noise(rng);
  std::vector<uint8_t> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<uint8_t> read_input(const std::string& path, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f || std::fread(out.data(), 1, bytes, f) != bytes) {
    std::fprintf(stderr, "codec_bench: cannot read %zu bytes from %s\n", bytes, path.c_str());
    std::exit(2);
  }
  std::fclose(f);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// This thread's CPU time: on a shared machine it leaves out the time spent descheduled.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

// Times decoding of every chunk of a frame, held in memory as stored, best of opt.reps passes.
int bench_frame(const Options& opt) {
  const auto frame = Frame::open(opt.frame);
  std::vector<Bytes> chunks;
  size_t total = 0, compressed = 0, largest = 0;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    chunks.push_back(frame->read_raw_chunk(n));
    const size_t nbytes = size_t(frame->chunk_nbytes(n));
    total += nbytes;
    compressed += chunks.back().size();
    largest = std::max(largest, nbytes);
  }
  if (chunks.empty()) {
    std::fprintf(stderr, "codec_bench: %s has no chunks\n", opt.frame.c_str());
    return 2;
  }
  std::vector<uint8_t> out(largest);
  const DecodeRules rules = frame->decode_rules();  // the plugin codecs need the frame's block shape
  double best_decode = 1e30, best_cpu = 1e30;
  for (int rep = 0; rep < opt.reps; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    for (const Bytes& chunk : chunks) {
      const ChunkView view(chunk, rules);
      view.decode(MutableByteSpan(out).first(size_t(view.nbytes())));
    }
    best_decode = std::min(best_decode, seconds_since(start));
    best_cpu = std::min(best_cpu, thread_cpu_seconds() - cpu_start);
  }
  if (!opt.input.empty()) {
    const std::vector<uint8_t> expected = read_input(opt.input, total);
    size_t offset = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
      const ChunkView view(chunks[c], rules);
      view.decode(MutableByteSpan(out).first(size_t(view.nbytes())));
      if (std::memcmp(out.data(), expected.data() + offset, size_t(view.nbytes())) != 0) {
        std::fprintf(stderr, "codec_bench: chunk %zu of %s does not match %s\n", c, opt.frame.c_str(),
                     opt.input.c_str());
        return 1;
      }
      offset += size_t(view.nbytes());
    }
  }
  const ChunkHeader h = ChunkView(chunks[0]).header();
  std::printf("%s: %zu chunks, %s, filters %s, blocksize %d, ratio %.2f, shuffle: %s, decode %.0f MB/s (%.0f per CPU second)%s\n",
              opt.frame.c_str(), chunks.size(), h.codec_label().c_str(), frame->chunk_info(0).filters.c_str(),
              h.blocksize, double(total) / double(compressed), shuffle_implementation(),
              double(total) / 1e6 / best_decode, double(total) / 1e6 / best_cpu, opt.input.empty() ? "" : " (checked)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  if (!opt.frame.empty()) return bench_frame(opt);
  const size_t chunk_bytes = opt.chunk_mb << 20;
  const size_t nchunks = std::max<size_t>(1, (opt.total_mb << 20) / chunk_bytes);
  const size_t total = nchunks * chunk_bytes;
  const std::vector<uint8_t> data = opt.input.empty() ? make_signal(total) : read_input(opt.input, total);
  std::vector<uint8_t> out(chunk_bytes);

  std::printf("%zu MB float32 (sine + noise), %zu chunks of %zu MB, clevel %d, blocksize %s, shuffle: %s\n",
              total >> 20, nchunks, opt.chunk_mb, opt.clevel,
              opt.blocksize ? std::to_string(opt.blocksize).c_str() : "automatic", shuffle_implementation());
  std::printf("%-8s %-10s %8s %10s %12s %12s %12s\n", "codec", "filter", "ratio", "blocksize", "encode MB/s",
              "decode MB/s", "per CPU s");

  const std::pair<const char*, uint8_t> filters[] = {{"shuffle", kFilterShuffle}, {"bitshuffle", kFilterBitshuffle},
                                                     {"none", kFilterNone}};
  for (Codec codec : kCodecs) {
    if (!opt.codec.empty() && opt.codec != codec_name(codec)) continue;
    for (const auto& [filter_name_text, filter] : filters) {
      if (!opt.filter.empty() && opt.filter != filter_name_text) continue;
      CompressParams p;
      p.codec = codec;
      p.clevel = opt.clevel;
      p.typesize = 4;
      p.filters = {0, 0, 0, 0, 0, filter};
      p.blocksize = opt.blocksize;

      std::vector<std::vector<uint8_t>> chunks(nchunks);
      auto start = std::chrono::steady_clock::now();
      for (size_t c = 0; c < nchunks; ++c)
        chunks[c] = encode_chunk(ByteSpan(data).subspan(c * chunk_bytes, chunk_bytes), p);
      const double encode_s = seconds_since(start);
      size_t compressed = 0;
      for (const auto& chunk : chunks) compressed += chunk.size();

      double best_decode = 1e30, best_cpu = 1e30;
      for (int rep = 0; rep < opt.reps; ++rep) {
        start = std::chrono::steady_clock::now();
        const double cpu_start = thread_cpu_seconds();
        for (size_t c = 0; c < nchunks; ++c) ChunkView(chunks[c]).decode(out);
        best_decode = std::min(best_decode, seconds_since(start));
        best_cpu = std::min(best_cpu, thread_cpu_seconds() - cpu_start);
      }
      for (size_t c = 0; c < nchunks; c += nchunks / 4 + 1) {
        ChunkView(chunks[c]).decode(out);
        if (std::memcmp(out.data(), data.data() + c * chunk_bytes, chunk_bytes) != 0) {
          std::fprintf(stderr, "round trip mismatch: %s %s chunk %zu\n", codec_name(codec), filter_name_text, c);
          return 1;
        }
      }
      std::printf("%-8s %-10s %8.2f %10d %12.0f %12.0f %12.0f\n", codec_name(codec), filter_name_text,
                  double(total) / double(compressed), parse_chunk_header(chunks[0]).blocksize,
                  double(total) / 1e6 / encode_s, double(total) / 1e6 / best_decode, double(total) / 1e6 / best_cpu);
      std::fflush(stdout);
    }
  }
  return 0;
}
