// python-blosc2 4.14.1's default chunk and block shapes (core.py:
// compute_chunks_blocks, compute_partition, get_chunksize), re-expressed.
#include "b2nd_partition.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "chunk_format.h"
#include "error.h"
#include "ndcell.h"

namespace blosc2fs {

namespace {

// python-blosc2's limit for a chunk (c-blosc2's BLOSC2_MAX_BUFFERSIZE).
constexpr int64_t kMaxBufferSize = 2147483615;

// What python-blosc2 reads from sysfs: "32K\n", "8M\n", "1G\n"; nullopt otherwise.
// `*missing`: there is no such file (python-blosc2 then asks lscpu).
std::optional<int64_t> sysfs_cache_size(int index, bool* missing) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  *missing = !in;
  std::string text;
  if (!in || !std::getline(in, text) || text.size() < 2) return std::nullopt;
  const char unit = text.back();
  const int shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : -1;
  if (shift < 0) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() - 1 || value < 0 || value > (1LL << 30)) return std::nullopt;
  return int64_t(value) << shift;
}

// The divisor of a nearest to b, searched as python-blosc2's extension does
// (downwards from b for large a or `strict`; otherwise the first nearest found
// over pairs (i, a/i) with i rising).
int64_t nearest_divisor(int64_t a, int64_t b, bool strict) {
  if (a > 100000 || strict) {
    for (int64_t i = b; i > 0; --i)
      if (a % i == 0) return i;
    return 1;
  }
  int64_t closest = 1, min_diff = a;
  bool found = false;
  for (int64_t i = 1; i * i <= a; ++i) {
    if (a % i != 0) continue;
    if (std::llabs(i - b) < min_diff) {
      min_diff = std::llabs(i - b);
      closest = i;
      found = true;
    }
    if (std::llabs(a / i - b) < min_diff) {
      min_diff = std::llabs(a / i - b);
      closest = a / i;
      found = true;
    }
  }
  return found ? closest : 1;
}

// Fills dimensions from the last one with up to `nitems` items, snapping each
// to a divisor of its extent where that stays close.
std::vector<int64_t> compute_partition(int64_t nitems, const std::vector<int64_t>& maxshape,
                                       const std::vector<int64_t>& minpart) {
  std::vector<int64_t> partition(maxshape.size(), 1);
  int64_t max_items = nitems;
  for (size_t k = maxshape.size(); k-- > 0;) {
    if (max_items <= 1) break;
    const int64_t size = maxshape[k], minsize = minpart.empty() ? 1 : minpart[k];
    int64_t rsize = std::max(size, minsize);
    if (rsize <= max_items) {
      if (size % rsize != 0) rsize = nearest_divisor(size, rsize, false);
    } else {
      rsize = std::max(max_items, minsize);
      const int64_t snapped = size % rsize == 0 ? rsize : nearest_divisor(size, rsize, true);
      if (rsize / 2 < snapped && snapped < rsize * 2) rsize = snapped;
    }
    partition[k] = rsize;
    max_items /= rsize;
  }
  return partition;
}

int64_t default_chunksize(int64_t blocksize, const CacheSizes& c) {
  constexpr int64_t l3_minimum = 4 << 20, l3_maximum = int64_t(1) << 26, reduc_factor = 4;
  int64_t chunksize = blocksize * 32 < l3_maximum ? blocksize * 32 : blocksize;
  if (c.l3 > 0 && c.l3 > c.l2) chunksize = c.l3;
  chunksize /= reduc_factor;
  if (c.l2 > chunksize) chunksize = std::max(c.l2 / reduc_factor, chunksize);
  chunksize = std::max(chunksize, l3_minimum);
  chunksize = std::min(chunksize, kMaxBufferSize);
  return std::max(chunksize, blocksize);
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

void check_given(const std::vector<int64_t>& shape, const std::vector<int64_t>& given, const char* what) {
  if (given.size() != shape.size())
    throw FormatError(std::string(what) + " has " + std::to_string(given.size()) + " dimensions, the array " +
                      std::to_string(shape.size()));
  for (size_t k = 0; k < shape.size(); ++k) {
    if (given[k] < 0 || given[k] > INT32_MAX)
      throw FormatError(std::string(what) + " dimension " + std::to_string(k) + " is out of range");
    if (given[k] == 0 && shape[k] != 0)
      throw FormatError(std::string(what) + " cannot be 0 in a dimension of the array that is not");
  }
}

}  // namespace

std::optional<int64_t> lscpu_cache_size(std::string_view json, int level) {
  const std::string field = "\"L" + (level == 0 ? std::string("1d") : std::to_string(level)) + " cache:\"";
  const size_t at = json.find(field);
  if (at == std::string_view::npos) return std::nullopt;
  // The entry's "data" follows its "field" within the same object.
  const size_t close = json.find('}', at);
  const size_t key = json.find("\"data\"", at);
  if (key == std::string_view::npos || key > close) return std::nullopt;
  const size_t open = json.find('"', json.find(':', key + 6) + 1);
  const size_t end = open == std::string_view::npos ? open : json.find('"', open + 1);
  if (end == std::string_view::npos || end > close) return std::nullopt;
  const std::string data(json.substr(open + 1, end - open - 1));
  // "SIZE UNIT (N instances)": SIZE a whole number (python-blosc2's int() refuses "1.5").
  const size_t paren = data.find(" (");
  if (paren == std::string::npos) return std::nullopt;
  const std::string size_part = data.substr(0, paren), rest = data.substr(paren + 2);
  const size_t space = size_part.find(' ');
  if (space == std::string::npos || space == 0) return std::nullopt;
  const std::string number = size_part.substr(0, space), unit = size_part.substr(space + 1);
  if (number.size() > 12 || number.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int shift = unit == "KiB" ? 10 : unit == "MiB" ? 20 : unit == "GiB" ? 30 : -1;
  if (shift < 0) return std::nullopt;
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string::npos || digits > 9) return std::nullopt;
  const int64_t instances = std::stoll(rest.substr(0, digits));
  const int64_t size = std::stoll(number);
  if (instances <= 0 || size > (int64_t(1) << 30)) return std::nullopt;
  return (size << shift) / instances;
}

namespace {

// `lscpu --json`, or "" when it cannot run (python-blosc2 then keeps its defaults).
std::string lscpu_json() {
  std::string out;
  FILE* pipe = ::popen("lscpu --json 2>/dev/null", "r");
  if (!pipe) return out;
  char buffer[4096];
  for (size_t n; out.size() < (1 << 20) && (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  if (::pclose(pipe) != 0) out.clear();
  return out;
}

CacheSizes read_host_cache_sizes() {
  CacheSizes c;
  std::optional<std::string> lscpu;
  auto size_of = [&](int index, int64_t& into) {
    bool missing = false;
    std::optional<int64_t> v = sysfs_cache_size(index, &missing);
    if (!v && missing) {
      if (!lscpu) lscpu = lscpu_json();
      v = lscpu_cache_size(*lscpu, index);
    }
    if (v) into = *v;
  };
  size_of(0, c.l1_data);
  size_of(2, c.l2);
  size_of(3, c.l3);
  utsname u{};
  c.x86_64 = ::uname(&u) == 0 && std::string(u.machine) == "x86_64";
  return c;
}

}  // namespace

CacheSizes host_cache_sizes() {
  static const CacheSizes sizes = read_host_cache_sizes();
  return sizes;
}

int64_t python_blosc2_block_hint(Codec codec, int clevel, SplitMode split, int64_t itemsize,
                                 std::span<const uint8_t> filters) {
  const auto has = [&](uint8_t id) { return std::find(filters.begin(), filters.end(), id) != filters.end(); };
  const bool tuned = codec == Codec::ndlz || codec == Codec::zfp_accuracy || codec == Codec::zfp_precision ||
                     codec == Codec::zfp_rate || has(kFilterNdmean) || has(kFilterNdcell);
  if (!tuned) return 32 * 1024;
  itemsize = std::max<int64_t>(1, itemsize);
  clevel = std::clamp(clevel, 0, 9);
  // The codecs c-blosc2's tuner counts as high compression ratio start from bigger blocks.
  const bool hcr = codec == Codec::lz4hc || codec == Codec::zlib || codec == Codec::zstd;
  // The tuner is asked with the filters other than shuffle and bitshuffle removed.
  bool split_streams;
  switch (split) {
    case SplitMode::always: split_streams = true; break;
    case SplitMode::never: split_streams = false; break;
    default:  // automatic, forward_compat: fast codecs (and zstd's low levels) with shuffle, small items
      split_streams = (codec == Codec::blosclz || codec == Codec::lz4 || (codec == Codec::zstd && clevel <= 5)) &&
                      has(kFilterShuffle) && itemsize <= 16;
  }
  int64_t size;
  if (clevel == 0) {
    size = (hcr ? 16 : 8) * 1024;
  } else if (split_streams) {
    // One stream per byte of an item: by level, times the item size, at most 4 MiB.
    constexpr int64_t kib[10] = {0, 32, 32, 32, 64, 64, 64, 128, 256, 512};
    size = std::min<int64_t>(kib[clevel] * 1024 * itemsize, int64_t(4) << 20);
  } else {
    constexpr int64_t fast_kib[10] = {0, 16, 32, 64, 128, 128, 256, 256, 256, 256};
    constexpr int64_t hcr_kib[10] = {0, 32, 64, 128, 256, 256, 512, 512, 512, 1024};
    size = (hcr ? hcr_kib : fast_kib)[clevel] * 1024;
  }
  // Whole items.
  return std::max(itemsize, size / itemsize * itemsize);
}

NdPartition b2nd_partition(const std::vector<int64_t>& shape, int64_t itemsize,
                           const std::optional<std::vector<int64_t>>& chunkshape,
                           const std::optional<std::vector<int64_t>>& blockshape, const CacheSizes& caches,
                           int64_t block_hint) {
  if (itemsize < 1) throw FormatError("the item size must be positive");
  if (chunkshape) check_given(shape, *chunkshape, "the chunk shape");
  if (blockshape) check_given(shape, *blockshape, "the block shape");
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  if (empty && !(chunkshape && blockshape)) return {chunkshape.value_or(shape), blockshape.value_or(shape)};
  if (chunkshape && blockshape) {
    for (size_t k = 0; k < shape.size(); ++k)
      if ((*blockshape)[k] > (*chunkshape)[k]) throw FormatError("the block shape exceeds the chunk shape");
    return {*chunkshape, *blockshape};
  }
  int64_t blocksize;
  if (blockshape) {
    blocksize = product(*blockshape) * itemsize;
  } else {
    blocksize = block_hint;
    int64_t min_blocksize = blocksize;
    if (caches.x86_64) min_blocksize = caches.l2 >= (int64_t(1) << 21) ? caches.l1_data * 4 : caches.l2 / 4;
    else min_blocksize = caches.l1_data;
    blocksize = std::max({blocksize, min_blocksize, itemsize});
  }
  if (blocksize > kMaxBlocksize) throw FormatError("the block is larger than Blosc2's limit of 512 MB");
  NdPartition p;
  p.blockshape = compute_partition(blocksize / itemsize, chunkshape ? *chunkshape : shape, {});
  if (chunkshape) {
    p.chunkshape = *chunkshape;
    return p;
  }
  blocksize = product(p.blockshape) * itemsize;
  int64_t chunksize = default_chunksize(blocksize, caches);
  chunksize = chunksize / blocksize * blocksize;
  p.chunkshape = compute_partition(chunksize / itemsize, shape, p.blockshape);
  for (size_t k = 0; k < shape.size(); ++k) {
    const int64_t c = p.chunkshape[k], b = p.blockshape[k];
    p.chunkshape[k] = std::min(shape[k], c % b == 0 ? c : (c / b + 1) * b);
  }
  return p;
}

}  // namespace blosc2fs
