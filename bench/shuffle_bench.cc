// Throughput of the shuffle kernels, scalar against SIMD: unshuffle and bitunshuffle
// (the decode direction) and their encode twins, typesize 4 and 8, over one 256 MB
// buffer (memory bound) and over a 256 KB block decoded again and again (what the
// chunk decoder does: a block at a time, in cache). Then the other filters' decoders
// on the same 256 KB block.
// Usage: shuffle_bench [megabytes]
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "filters.h"
#include "shuffle_impl.h"

namespace {

using blosc2fs::shuffle_detail::ShuffleFn;
using blosc2fs::shuffle_detail::ShuffleKernels;

// Thread CPU time, not wall time: the kernels are single-threaded and the build
// machines are shared, so this keeps the numbers meaningful under load.
double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Best of three passes over `total` bytes, in calls of `block` bytes.
double megabytes_per_second(ShuffleFn fn, const std::vector<uint8_t>& src, std::vector<uint8_t>& dst,
                            size_t block, size_t total, size_t typesize) {
  double best = 1e30;
  for (int pass = 0; pass < 3; ++pass) {
    const double start = cpu_seconds();
    for (size_t done = 0; done < total; done += block) {
      const size_t offset = src.size() == block ? 0 : done;
      fn(src.data() + offset, dst.data() + offset, block, typesize);
    }
    const double t = cpu_seconds() - start;
    if (t < best) best = t;
  }
  return static_cast<double>(total) / best / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t megabytes = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  const size_t big = megabytes << 20;
  const size_t block = 256 << 10;
  std::vector<uint8_t> src(big), dst(big), small_src(block), small_dst(block);
  std::mt19937 rng(42);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  for (auto& b : small_src) b = static_cast<uint8_t>(rng());

  std::vector<const ShuffleKernels*> kernels{&blosc2fs::shuffle_detail::scalar_kernels()};
  if (auto* k = blosc2fs::shuffle_detail::sse2_kernels()) kernels.push_back(k);
  if (auto* k = blosc2fs::shuffle_detail::avx2_kernels()) kernels.push_back(k);

  std::printf("%-8s %-13s %3s %14s %18s\n", "impl", "kernel", "ts", "256MB MB/s", "256KB-block MB/s");
  for (const auto* k : kernels) {
    const struct {
      const char* name;
      ShuffleFn fn;
    } fns[] = {{"unshuffle", k->unshuffle}, {"bitunshuffle", k->bitunshuffle},
               {"shuffle", k->shuffle}, {"bitshuffle", k->bitshuffle}};
    for (const auto& f : fns) {
      for (size_t typesize : {4, 8}) {
        const double whole = megabytes_per_second(f.fn, src, dst, big, big, typesize);
        const double blocks = megabytes_per_second(f.fn, small_src, small_dst, block, big, typesize);
        std::printf("%-8s %-13s %3zu %14.0f %18.0f\n", k->name, f.name, typesize, whole, blocks);
      }
    }
  }

  // Filters: one 256 KB block, decoded over and over, `big` bytes in all.
  auto filter_rate = [&](auto&& decode) {
    double best = 1e30;
    for (int pass = 0; pass < 3; ++pass) {
      const double start = cpu_seconds();
      for (size_t done = 0; done < big; done += block) decode();
      const double t = cpu_seconds() - start;
      if (t < best) best = t;
    }
    return static_cast<double>(big) / best / 1e6;
  };
  std::printf("\n%-30s %18s\n", "filter decode", "256KB-block MB/s");
  for (size_t typesize : {1, 4, 8}) {
    std::printf("%-27s %2zu %18.0f\n", "delta (reference block)", typesize, filter_rate([&] {
                  blosc2fs::delta_decode(nullptr, small_dst.data(), block, typesize, true);
                }));
    std::printf("%-27s %2zu %18.0f\n", "delta (other blocks)", typesize, filter_rate([&] {
                  blosc2fs::delta_decode(small_src.data(), small_dst.data(), block, typesize, false);
                }));
    std::printf("%-27s %2zu %18.0f\n", "bytedelta", typesize, filter_rate([&] {
                  blosc2fs::bytedelta_decode(small_src.data(), small_dst.data(), block, typesize);
                }));
  }
  return 0;
}
