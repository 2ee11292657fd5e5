// The measuring half of bench/run.sh: file readers that time a mount (or any
// file) and the in-process baselines that do the same work with the library.
// Every command prints one line of key=value pairs for the script to parse.
//
//   fsbench read FILE [--sum] [--bs BYTES]          sequential read()
//   fsbench randread FILE NREADS THREADS [--io BYTES] [--seed N]
//                                                   pread at random aligned offsets
//   fsbench decode FRAME THREADS [--sum]            decode every chunk (read from disk)
//   fsbench randrange FRAME NREADS THREADS [--io BYTES] [--seed N]
//                                                   ChunkView::decode_range on preloaded chunks
//   fsbench open FRAME                              Frame::open time and memory
//   fsbench dump FRAME OUT                          the uncompressed bytes, as one file
//   fsbench export-chunks FRAME DIR                 chunks/N as files (for a squashfs image)
//   fsbench write SRC OUT CODEC CLEVEL TYPESIZE CHUNKSIZE   FrameWriter::append_data
//   fsbench vlmeta FRAME NAME VALUE                 FrameEditor::set_vlmetalayer + commit
//   fsbench show-vlmeta FRAME NAME                  prints a vlmetalayer's content
//   fsbench folios FILE                             how much of FILE's page cache is in large folios
//   fsbench store STORE                             Store::open, then every leaf's frame opened once
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chunk_codec.h"
#include "error.h"
#include "frame.h"
#include "frame_editor.h"
#include "frame_writer.h"
#include "store.h"

namespace {

using namespace blosc2fs;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

// User and system CPU time of this process so far: the scripts set it beside
// the daemon's, to show where a read's CPU goes.
double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

// An order-independent, position-dependent sum of the bytes: chunks decoded by
// several threads in any order give the same value as one sequential pass.
uint64_t position_sum(const uint8_t* p, size_t n, uint64_t pos) {
  uint64_t h = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h += (w ^ ((pos + i) * 0x9E3779B97F4A7C15ull)) * 0xD6E8FEB86659FD93ull;
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    h += (w ^ ((pos + i) * 0x9E3779B97F4A7C15ull)) * 0xD6E8FEB86659FD93ull;
  }
  return h;
}

struct Fd {
  int fd = -1;
  explicit Fd(const std::string& path, int flags = O_RDONLY) : fd(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd < 0) fail(path + ": " + std::strerror(errno));
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Options after the positional arguments: --sum, --bs N, --io N, --seed N.
struct Flags {
  bool sum = false;
  size_t bs = 1 << 20;
  size_t io = 4096;
  uint64_t seed = 1;
};

Flags parse_flags(std::vector<std::string>& args) {
  Flags f;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> uint64_t {
      if (i + 1 >= args.size()) fail(a + " needs a value");
      return std::stoull(args[++i]);
    };
    if (a == "--sum") f.sum = true;
    else if (a == "--bs") f.bs = size_t(value());
    else if (a == "--io") f.io = size_t(value());
    else if (a == "--seed") f.seed = value();
    else rest.push_back(a);
  }
  if (f.bs == 0 || f.io == 0) fail("--bs and --io must be positive");
  args = rest;
  return f;
}

int64_t vm_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// --- readers of files (a mount, a squashfs mount, a plain file) ---

int cmd_read(const std::string& path, const Flags& f) {
  Fd file(path);
  std::unique_ptr<uint8_t[]> buf(new uint8_t[f.bs]);
  uint64_t total = 0, sum = 0;
  const auto start = Clock::now();
  for (;;) {
    ssize_t n = ::read(file.fd, buf.get(), f.bs);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path + ": read: " + std::strerror(errno));
    }
    if (n == 0) break;
    if (f.sum) sum += position_sum(buf.get(), size_t(n), total);
    total += uint64_t(n);
  }
  const double s = seconds_since(start);
  std::printf("bytes=%" PRIu64 " seconds=%.4f mbps=%.1f cpu_s=%.3f", total, s, double(total) / s / 1e6,
              cpu_seconds());
  if (f.sum) std::printf(" sum=%016" PRIx64, sum);
  std::printf("\n");
  return 0;
}

struct LatencyStats {
  double iops = 0, p50_us = 0, p99_us = 0, seconds = 0;
};

// Runs `one(thread, k)` for k in [0, nreads) split over `threads`, timing each call.
template <class Op>
LatencyStats run_timed_ops(int64_t nreads, int threads, Op&& one) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(threads));
  std::atomic<int64_t> next{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        lat[size_t(t)].reserve(size_t(nreads / threads + 1));
        for (int64_t k; (k = next.fetch_add(1)) < nreads;) {
          const auto t0 = Clock::now();
          one(t, k);
          lat[size_t(t)].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
      } catch (...) {
        errors[size_t(t)] = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  LatencyStats st;
  st.seconds = seconds_since(start);
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  st.iops = double(all.size()) / st.seconds;
  if (!all.empty()) {
    st.p50_us = all[all.size() / 2];
    st.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  return st;
}

// Offsets are whole multiples of the read size, the same sequence for a given
// seed whatever reads them, so every contender reads the same places.
std::vector<int64_t> random_offsets(int64_t size, int64_t nreads, size_t io, uint64_t seed) {
  const int64_t slots = size / int64_t(io);
  if (slots <= 0) fail("the file is smaller than one read");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, slots - 1);
  std::vector<int64_t> offsets(static_cast<size_t>(nreads));
  for (auto& o : offsets) o = pick(rng) * int64_t(io);
  return offsets;
}

void print_latency(const LatencyStats& st, int64_t nreads) {
  std::printf("reads=%" PRId64 " seconds=%.4f iops=%.0f p50_us=%.1f p99_us=%.1f\n", nreads, st.seconds, st.iops,
              st.p50_us, st.p99_us);
}

int cmd_randread(const std::string& path, int64_t nreads, int threads, const Flags& f) {
  Fd file(path);
  struct stat sb {};
  if (::fstat(file.fd, &sb) != 0) fail(path + ": " + std::strerror(errno));
  // What a random-access application (and fio, by default) tells the kernel:
  // no readahead, so each pread asks the filesystem for its own bytes only.
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_RANDOM);
  const std::vector<int64_t> offsets = random_offsets(int64_t(sb.st_size), nreads, f.io, f.seed);
  std::vector<std::vector<uint8_t>> bufs(static_cast<size_t>(threads), std::vector<uint8_t>(f.io));
  LatencyStats st = run_timed_ops(nreads, threads, [&](int t, int64_t k) {
    ssize_t n = ::pread(file.fd, bufs[size_t(t)].data(), f.io, off_t(offsets[size_t(k)]));
    if (n != ssize_t(f.io)) fail(path + ": short or failed pread: " + (n < 0 ? std::strerror(errno) : "short"));
  });
  print_latency(st, nreads);
  return 0;
}

// --- in-process baselines with the project's library ---

int cmd_decode(const std::string& path, int threads, const Flags& f) {
  const auto start = Clock::now();
  std::unique_ptr<Frame> frame = Frame::open(path);
  const int64_t nchunks = frame->nchunks();
  std::atomic<int64_t> next{0};
  std::atomic<uint64_t> sum{0}, total{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        // Buffers reused from chunk to chunk, as the mount's cache does.
        Bytes raw, out;
        for (int64_t n; (n = next.fetch_add(1)) < nchunks;) {
          const size_t cbytes = frame->read_raw_chunk_into(n, [&raw](size_t size) {
            if (raw.size() < size) raw.resize(size);
            return raw.data();
          });
          ChunkView view(ByteSpan(raw.data(), cbytes));
          out.resize(size_t(view.nbytes()));
          view.decode(out);
          if (f.sum) sum += position_sum(out.data(), out.size(), uint64_t(frame->chunk_data_offset(n)));
          total += out.size();
        }
      } catch (...) {
        errors[size_t(t)] = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  const double s = seconds_since(start);
  std::printf("bytes=%" PRIu64 " seconds=%.4f mbps=%.1f cpu_s=%.3f", total.load(), s, double(total.load()) / s / 1e6,
              cpu_seconds());
  if (f.sum) std::printf(" sum=%016" PRIx64, sum.load());
  std::printf("\n");
  return 0;
}

int cmd_randrange(const std::string& path, int64_t nreads, int threads, const Flags& f) {
  std::unique_ptr<Frame> frame = Frame::open(path);
  const int64_t nchunks = frame->nchunks();
  const int64_t total = frame->header().nbytes;
  // The stored chunks in memory first: what is timed is the decoding a read
  // needs, which is what blosc2fs adds to the I/O.
  std::vector<Bytes> raw(static_cast<size_t>(nchunks));
  std::vector<std::unique_ptr<ChunkView>> views(static_cast<size_t>(nchunks));
  for (int64_t n = 0; n < nchunks; ++n) {
    raw[size_t(n)] = frame->read_raw_chunk(n);
    views[size_t(n)] = std::make_unique<ChunkView>(raw[size_t(n)]);
  }
  const std::vector<int64_t> offsets = random_offsets(total, nreads, f.io, f.seed);
  std::vector<std::vector<uint8_t>> bufs(static_cast<size_t>(threads), std::vector<uint8_t>(f.io));
  std::atomic<int64_t> blocks{0};
  LatencyStats st = run_timed_ops(nreads, threads, [&](int t, int64_t k) {
    const int64_t off = offsets[size_t(k)];
    // The chunk holding `off`: the last one starting at or before it.
    int64_t lo = 0, hi = nchunks - 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      if (frame->chunk_data_offset(mid) <= off) lo = mid;
      else hi = mid - 1;
    }
    const ChunkView& view = *views[size_t(lo)];
    const int64_t within = off - frame->chunk_data_offset(lo);
    const size_t len = size_t(std::min<int64_t>(int64_t(f.io), view.nbytes() - within));
    view.decode_range(within, MutableByteSpan(bufs[size_t(t)].data(), len));
    if (k == 0) {
      // How many blocks one read touches (the same for every aligned read
      // that does not straddle a block boundary).
      int32_t first = 0;
      while (first + 1 < view.nblocks() && view.block_offset(first + 1) <= within) ++first;
      int32_t last = first;
      while (last + 1 < view.nblocks() && view.block_offset(last + 1) < within + int64_t(len)) ++last;
      blocks = last - first + 1;
    }
  });
  print_latency(st, nreads);
  std::printf("blocks_per_read=%" PRId64 " blocksize=%d\n", blocks.load(), views.empty() ? 0 : views[0]->header().blocksize);
  return 0;
}

int cmd_open(const std::string& path) {
  const int64_t rss_before = vm_rss_kb();
  const auto start = Clock::now();
  std::unique_ptr<Frame> frame = Frame::open(path);
  const double s = seconds_since(start);
  const int64_t rss_after = vm_rss_kb();
  std::printf("seconds=%.4f nchunks=%" PRId64 " rss_kb=%" PRId64 " rss_growth_kb=%" PRId64 "\n", s, frame->nchunks(),
              rss_after, rss_after - rss_before);
  return 0;
}

// What a mount of a store does before it answers (Store::open), and the least a
// listing of every leaf's files costs in-process (each leaf's frame opened once).
int cmd_store(const std::string& path) {
  auto start = Clock::now();
  std::unique_ptr<Store> store = Store::open(path);
  const double open_s = seconds_since(start);
  start = Clock::now();
  int64_t opened = 0;
  for (const StoreLeaf& leaf : store->leaves()) {
    if (leaf.where.type == LeafLocation::Type::remote) continue;
    opened += store->open_leaf(leaf)->nchunks() >= 0;
  }
  const double leaves_s = seconds_since(start);
  std::printf("open_s=%.4f leaves=%zu leaves_s=%.4f opened=%" PRId64 " rss_kb=%" PRId64 "\n", open_s,
              store->leaves().size(), leaves_s, opened, vm_rss_kb());
  return 0;
}

void write_all(int fd, const uint8_t* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(what + ": write: " + std::strerror(errno));
    }
    p += w;
    n -= size_t(w);
  }
}

int cmd_dump(const std::string& path, const std::string& out) {
  std::unique_ptr<Frame> frame = Frame::open(path);
  Fd file(out, O_WRONLY | O_CREAT | O_EXCL);
  uint64_t total = 0;
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    Bytes chunk = frame->read_chunk(n);
    write_all(file.fd, chunk.data(), chunk.size(), out);
    total += chunk.size();
  }
  if (::fsync(file.fd) != 0) fail(out + ": fsync: " + std::strerror(errno));
  std::printf("bytes=%" PRIu64 "\n", total);
  return 0;
}

int cmd_export_chunks(const std::string& path, const std::string& dir) {
  std::unique_ptr<Frame> frame = Frame::open(path);
  std::filesystem::create_directories(dir);
  for (int64_t n = 0; n < frame->nchunks(); ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "/%08" PRId64, n);
    Bytes chunk = frame->read_chunk(n);
    Fd file(dir + name, O_WRONLY | O_CREAT | O_TRUNC);
    write_all(file.fd, chunk.data(), chunk.size(), dir + name);
  }
  std::printf("files=%" PRId64 "\n", frame->nchunks());
  return 0;
}

Codec codec_by_name(const std::string& name) {
  if (std::optional<Codec> c = codec_named(name)) return *c;
  fail("unknown codec " + name);
}

int cmd_write(const std::string& src, const std::string& out, const std::string& codec, int clevel, int typesize,
              int64_t chunksize) {
  FrameParams params;
  params.cparams.codec = codec_by_name(codec);
  params.cparams.clevel = clevel;
  params.cparams.typesize = typesize;
  params.chunksize = int32_t(chunksize);
  Fd in(src);
  std::vector<uint8_t> buf(static_cast<size_t>(chunksize));
  uint64_t total = 0;
  const auto start = Clock::now();
  {
    FrameWriter writer(out, params);
    for (;;) {
      // A whole chunk per append: read() may return less, so fill the buffer.
      size_t have = 0;
      while (have < buf.size()) {
        ssize_t n = ::read(in.fd, buf.data() + have, buf.size() - have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(src + ": read: " + std::strerror(errno));
        if (n == 0) break;
        have += size_t(n);
      }
      if (have == 0) break;
      writer.append(ByteSpan(buf.data(), have));
      total += have;
      if (have < buf.size()) break;
    }
    writer.close();
  }
  const double s = seconds_since(start);
  std::printf("bytes=%" PRIu64 " seconds=%.4f mbps=%.1f out_bytes=%" PRIuMAX "\n", total, s, double(total) / s / 1e6,
              std::uintmax_t(std::filesystem::file_size(out)));
  return 0;
}

int cmd_vlmeta(const std::string& path, const std::string& name, const std::string& value) {
  const auto start = Clock::now();
  FrameEditor editor(path);
  editor.set_vlmetalayer(name, ByteSpan(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
  uint64_t plan_bytes = 0;
  size_t steps = 0;
  for (const CommitStep& step : editor.plan_commit()) {
    ++steps;
    if (step.kind == CommitStep::Kind::write) plan_bytes += step.data.size();
  }
  editor.commit();
  const double s = seconds_since(start);
  std::printf("seconds=%.4f plan_bytes=%" PRIu64 " steps=%zu\n", s, plan_bytes, steps);
  return 0;
}

int cmd_show_vlmeta(const std::string& path, const std::string& name) {
  std::unique_ptr<Frame> frame = Frame::open(path);
  const Vlmetalayer* layer = frame->find_vlmetalayer(name);
  if (!layer) fail(path + " has no vlmetalayer " + name);
  Bytes content = frame->vlmetalayer_content(*layer);
  std::fwrite(content.data(), 1, content.size(), stdout);
  return 0;
}

// Reads of a cached file copy it folio by folio, so the folio size bounds how
// fast a page-cache read can go. Maps FILE, touches every page (already cached
// when the script calls this), then looks each page's frame up in
// /proc/self/pagemap and its flags in /proc/kpageflags (frame numbers need root).
int cmd_folios(const std::string& path) {
  Fd file(path);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) fail(path + ": stat: " + std::strerror(errno));
  const size_t page = size_t(::sysconf(_SC_PAGESIZE)), size = size_t(st.st_size), npages = (size + page - 1) / page;
  if (npages == 0) fail(path + " is empty");
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, file.fd, 0);
  if (map == MAP_FAILED) fail(path + ": mmap: " + std::strerror(errno));
  std::unique_ptr<void, std::function<void(void*)>> unmap(map, [size](void* m) { ::munmap(m, size); });
  const auto* bytes = static_cast<const volatile uint8_t*>(map);
  for (size_t i = 0; i < npages; ++i) (void)bytes[i * page];  // volatile: every page is faulted in
  Fd pagemap("/proc/self/pagemap"), kpageflags("/proc/kpageflags");
  constexpr uint64_t kPresent = uint64_t(1) << 63, kPfnMask = (uint64_t(1) << 55) - 1;
  constexpr int kCompoundHead = 15, kCompoundTail = 16;
  std::vector<uint64_t> entries(npages);
  const off_t first = off_t(reinterpret_cast<uintptr_t>(map) / page * sizeof(uint64_t));
  if (::pread(pagemap.fd, entries.data(), npages * sizeof(uint64_t), first) != ssize_t(npages * sizeof(uint64_t)))
    fail("/proc/self/pagemap: short read");
  uint64_t present = 0, large = 0;
  for (uint64_t e : entries) {
    if (!(e & kPresent)) continue;
    const uint64_t pfn = e & kPfnMask;
    if (pfn == 0) fail("/proc/self/pagemap gives no frame numbers: run as root");
    uint64_t flags = 0;
    if (::pread(kpageflags.fd, &flags, sizeof flags, off_t(pfn * sizeof flags)) != ssize_t(sizeof flags))
      fail("/proc/kpageflags: short read");
    ++present;
    if (flags & ((uint64_t(1) << kCompoundHead) | (uint64_t(1) << kCompoundTail))) ++large;
  }
  std::printf("pages=%zu present=%" PRIu64 " large=%" PRIu64 " large_percent=%.1f\n", npages, present, large,
              present ? 100.0 * double(large) / double(present) : 0.0);
  return 0;
}

int usage() {
  std::fputs(
      "usage: fsbench read FILE [--sum] [--bs BYTES]\n"
      "       fsbench randread FILE NREADS THREADS [--io BYTES] [--seed N]\n"
      "       fsbench decode FRAME THREADS [--sum]\n"
      "       fsbench randrange FRAME NREADS THREADS [--io BYTES] [--seed N]\n"
      "       fsbench open FRAME\n"
      "       fsbench dump FRAME OUT\n"
      "       fsbench export-chunks FRAME DIR\n"
      "       fsbench write SRC OUT CODEC CLEVEL TYPESIZE CHUNKSIZE\n"
      "       fsbench vlmeta FRAME NAME VALUE\n"
      "       fsbench show-vlmeta FRAME NAME\n"
      "       fsbench folios FILE\n"
      "       fsbench store STORE\n",
      stderr);
  return 1;
}

int run(std::vector<std::string> args) {
  if (args.empty()) return usage();
  const std::string cmd = args[0];
  args.erase(args.begin());
  const Flags f = parse_flags(args);
  auto count = [&](size_t i) { return std::stoll(args.at(i)); };
  if (cmd == "read" && args.size() == 1) return cmd_read(args[0], f);
  if (cmd == "randread" && args.size() == 3) return cmd_randread(args[0], count(1), int(count(2)), f);
  if (cmd == "decode" && args.size() == 2) return cmd_decode(args[0], int(count(1)), f);
  if (cmd == "randrange" && args.size() == 3) return cmd_randrange(args[0], count(1), int(count(2)), f);
  if (cmd == "open" && args.size() == 1) return cmd_open(args[0]);
  if (cmd == "dump" && args.size() == 2) return cmd_dump(args[0], args[1]);
  if (cmd == "export-chunks" && args.size() == 2) return cmd_export_chunks(args[0], args[1]);
  if (cmd == "write" && args.size() == 6)
    return cmd_write(args[0], args[1], args[2], int(count(3)), int(count(4)), count(5));
  if (cmd == "vlmeta" && args.size() == 3) return cmd_vlmeta(args[0], args[1], args[2]);
  if (cmd == "show-vlmeta" && args.size() == 2) return cmd_show_vlmeta(args[0], args[1]);
  if (cmd == "folios" && args.size() == 1) return cmd_folios(args[0]);
  if (cmd == "store" && args.size() == 1) return cmd_store(args[0]);
  return usage();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fsbench: %s\n", e.what());
    return 2;
  }
}
