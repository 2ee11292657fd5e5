// Writing Blosc chunks: format version 5 with the 32-byte header, readable by c-blosc2.
//
// Block size (automatic_blocksize): by codec family and clevel, never by data.
//   fast codecs (blosclz, lz4):      clevel 1-3: 64 KB, 4-6: 128 KB, 7-9: 256 KB
//   ratio codecs (lz4hc, zlib, zstd): clevel 1-3: 128 KB, 4-6: 256 KB, 7-8: 512 KB, 9: 1 MB
// then capped at nbytes and rounded down to a whole number of items. Blocks of this
// size keep one block plus its filter buffers inside a core's L2 cache while leaving
// the codecs enough history to compress well.
//
// Split streams (one stream per byte of the item, the layout shuffle produces):
//   always: whenever a block holds whole items; never: not at all;
//   automatic and forward_compat (the same policy, c-blosc2's default): only for the
//   fast LZ-style codecs (blosclz, lz4, and zstd up to clevel 5) when the pipeline has
//   a byte shuffle, the items are at most 16 bytes and a block holds at least 32 items;
//   slow or entropy-coding codecs and unshuffled data compress better as one stream.
// The leftover (last, shorter) block is never split, as the format requires.
#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "chunk_codec.h"
#include "codec_registry.h"
#include "dynamic_plugins.h"
#include "error.h"
#include "filters.h"
#include "huge_pages.h"
#include "scratch_buffer.h"
#include "shuffle.h"
#include "stream_codecs.h"
#include "thread_name.h"

namespace blosc2fs {

namespace {

constexpr uint8_t kChunkVersion = 5;
constexpr uint8_t kVersionLz = 1;
constexpr int32_t kMinCompressible = 32;   // smaller inputs are stored memcpyed
constexpr int32_t kParallelMinBytes = 1 << 20;  // smaller chunks compress on one thread
constexpr int32_t kMaxSplitStreams = 16;
constexpr int32_t kMinItemsPerStream = 32;
constexpr int64_t kMaxChunkBytes = int64_t(INT32_MAX) - kExtendedHeaderSize;
constexpr uint8_t kExtendedMarker = kFlagShuffle | kFlagBitshuffle;

[[noreturn]] void bad_params(const std::string& why) { throw FormatError("encode_chunk: " + why); }

// What the chunk header stores as typesize; c-blosc2 also treats wider items as bytes.
int32_t header_typesize(int32_t typesize) { return typesize > 255 ? 1 : typesize; }

bool is_ratio_codec(Codec codec) { return codec == Codec::lz4hc || codec == Codec::zlib || codec == Codec::zstd; }

int32_t whole_items(int32_t blocksize, int32_t nbytes, int32_t typesize) {
  if (blocksize > nbytes) blocksize = nbytes;
  if (blocksize > typesize) blocksize = blocksize / typesize * typesize;
  return std::max(blocksize, 1);
}

int32_t resolve_blocksize(const CompressParams& p, int32_t nbytes) {
  // The plugin codecs and filters work on blocks of the b2nd block shape.
  const int64_t block_items = p.geometry.block_items();
  if (p.blocksize == 0 && block_items > 0 && block_items * p.typesize <= kMaxBlocksize)
    return whole_items(int32_t(block_items * p.typesize), nbytes, header_typesize(p.typesize));
  if (p.blocksize == 0) return automatic_blocksize(p, nbytes);
  return whole_items(p.blocksize, nbytes, header_typesize(p.typesize));
}

bool pipeline_has(const CompressParams& p, uint8_t id) {
  return std::find(p.filters.begin(), p.filters.end(), id) != p.filters.end();
}

bool split_streams(const CompressParams& p, int32_t typesize, int32_t blocksize) {
  if (blocksize < typesize || blocksize % typesize != 0) return false;
  switch (p.splitmode) {
    case SplitMode::always: return true;
    case SplitMode::never: return false;
    case SplitMode::automatic:
    case SplitMode::forward_compat: break;
  }
  if (is_plugin_codec(p.codec)) return false;  // c-blosc2 splits no plugin codec unless told to
  const bool lz_codec = p.codec == Codec::blosclz || p.codec == Codec::lz4 || (p.codec == Codec::zstd && p.clevel <= 5);
  return lz_codec && pipeline_has(p, kFilterShuffle) && typesize <= kMaxSplitStreams &&
         blocksize / typesize >= kMinItemsPerStream;
}

void validate(const CompressParams& p, size_t nbytes) {
  if (nbytes > size_t(kMaxChunkBytes)) bad_params(str(int64_t(nbytes)) + " bytes exceed the chunk limit " + str(kMaxChunkBytes));
  if (p.clevel < 0 || p.clevel > 9) bad_params("clevel " + str(p.clevel) + " is outside 0..9");
  if (p.typesize < 1 || p.typesize > kMaxBlocksize) bad_params("typesize " + str(p.typesize) + " is out of range");
  if (p.blocksize < 0 || p.blocksize > kMaxBlocksize) bad_params("blocksize " + str(p.blocksize) + " is out of range");
  const CodecInfo* codec = find_codec(uint8_t(p.codec));
  if (!codec) bad_params("unknown codec " + str(int(p.codec)));
  if (!codec->encodable()) {
    if (codec->runtime_plugin) {
      report_missing_plugin(*codec);
      throw UnsupportedError(std::string("encode_chunk: codec ") + codec->name + " is loaded at run time and no plugin "
                             "is loaded (" + plugin_install_hint(*codec) + ")");
    }
    throw UnsupportedError(std::string("encode_chunk: codec ") + codec->name + " cannot be encoded");
  }
  switch (p.splitmode) {
    case SplitMode::always: case SplitMode::never: case SplitMode::automatic: case SplitMode::forward_compat: break;
    default: bad_params("unknown split mode " + str(int(p.splitmode)));
  }
  for (uint8_t id : p.filters) {
    switch (id) {
      case kFilterNone: case kFilterShuffle: case kFilterBitshuffle: case kFilterDelta: case kFilterTruncPrec:
      case kFilterBytedeltaBuggy: case kFilterBytedelta: case kFilterIntTrunc: break;
      default: {
        const FilterInfo* f = find_filter(id);
        if (!f || !f->encode) throw UnsupportedError("encode_chunk: filter " + filter_name(id) + " cannot be encoded");
      }
    }
  }
}

struct HeaderFields {
  uint8_t flags = kExtendedMarker;
  int32_t typesize = 1;
  int32_t nbytes = 0;
  int32_t blocksize = 1;
  int32_t cbytes = kExtendedHeaderSize;
  std::array<uint8_t, kMaxFilters> filters{};
  std::array<uint8_t, kMaxFilters> filters_meta{};
  uint8_t udcompcode = 0;
  uint8_t compcode_meta = 0;
  uint8_t blosc2_flags = 0;
};

void write_header(uint8_t* p, const HeaderFields& f) {
  std::memset(p, 0, kExtendedHeaderSize);
  p[0] = kChunkVersion;
  p[1] = kVersionLz;
  p[2] = f.flags;
  p[3] = uint8_t(header_typesize(f.typesize));
  store_le32(p + 4, uint32_t(f.nbytes));
  store_le32(p + 8, uint32_t(f.blocksize));
  store_le32(p + 12, uint32_t(f.cbytes));
  for (int i = 0; i < kMaxFilters; ++i) {
    p[16 + i] = f.filters[i];
    p[24 + i] = f.filters_meta[i];
  }
  p[22] = f.udcompcode;
  p[23] = f.compcode_meta;
  p[31] = f.blosc2_flags;
}

// The special form c-blosc2's blosc2_chunk_zeros and friends write: extended marker
// flags, no filters, the kind in blosc2_flags bits 4-6, a repeated value after the header.
std::vector<uint8_t> special_chunk(Special kind, int32_t nbytes, int32_t typesize, int32_t blocksize, ByteSpan value) {
  HeaderFields f;
  f.typesize = typesize;
  f.nbytes = nbytes;
  f.blocksize = blocksize;
  f.cbytes = kExtendedHeaderSize + int32_t(value.size());
  f.blosc2_flags = uint8_t(uint8_t(kind) << 4);
  std::vector<uint8_t> out(size_t(f.cbytes));
  write_header(out.data(), f);
  if (!value.empty()) std::memcpy(out.data() + kExtendedHeaderSize, value.data(), value.size());
  return out;
}

HeaderFields regular_fields(const CompressParams& p, int32_t nbytes, int32_t blocksize) {
  HeaderFields f;
  f.typesize = p.typesize;
  f.nbytes = nbytes;
  f.blocksize = blocksize;
  f.filters = p.filters;
  f.filters_meta = p.filters_meta;
  f.udcompcode = uint8_t(p.codec);
  f.compcode_meta = p.compcode_meta;
  f.flags = uint8_t(kExtendedMarker | codec_compformat(p.codec) << 5);
  return f;
}

std::vector<uint8_t> memcpyed_chunk(ByteSpan src, const CompressParams& p, int32_t blocksize) {
  HeaderFields f = regular_fields(p, int32_t(src.size()), blocksize);
  f.flags |= kFlagMemcpyed;
  f.cbytes = kExtendedHeaderSize + int32_t(src.size());
  std::vector<uint8_t> out(size_t(f.cbytes));
  write_header(out.data(), f);
  if (!src.empty()) std::memcpy(out.data() + kExtendedHeaderSize, src.data(), src.size());
  return out;
}

// True when every byte of [p, p + n) equals p[0].
bool is_byte_run(const uint8_t* p, size_t n) { return n <= 1 || (p[n - 1] == p[0] && std::memcmp(p, p + 1, n - 1) == 0); }

struct EncodeScratch {
  ScratchBuffer a, b;
};

EncodeScratch& encode_scratch() {
  thread_local EncodeScratch s;
  return s;
}

// Runs the pipeline forward over one block (slot 0 to 5); returns the filtered bytes.
const uint8_t* filter_block(const CompressParams& p, ByteSpan chunk, size_t offset, size_t bsize, int32_t typesize) {
  const uint8_t* current = chunk.data() + offset;
  EncodeScratch& s = encode_scratch();
  uint8_t* buffers[2] = {nullptr, nullptr};
  int next = 0;
  for (int slot = 0; slot < kMaxFilters; ++slot) {
    const uint8_t id = p.filters[slot];
    if (id == kFilterNone) continue;
    if (!buffers[next]) buffers[next] = (next == 0 ? s.a : s.b).get(bsize);
    uint8_t* target = buffers[next];
    const uint8_t meta = p.filters_meta[slot];
    const size_t element = meta ? meta : size_t(typesize);
    switch (id) {
      case kFilterShuffle:
        shuffle(current, target, bsize, element);
        break;
      case kFilterBitshuffle:
        bitshuffle(current, target, bsize, size_t(typesize));  // c-blosc2 ignores meta here
        break;
      case kFilterDelta:
        // Block 0 is its own reference; the others XOR with the unfiltered block 0.
        delta_encode(offset == 0 ? current : chunk.data(), current, target, bsize, size_t(typesize), offset == 0);
        break;
      case kFilterTruncPrec:
        if (!trunc_prec(current, target, bsize, size_t(typesize), int8_t(meta)))
          bad_params("trunc_prec needs typesize 4 or 8 and a precision within the mantissa (typesize " + str(typesize) +
                     ", meta " + str(int8_t(meta)) + ")");
        break;
      case kFilterIntTrunc:
        if (!int_trunc(current, target, bsize, size_t(typesize), int8_t(meta)))
          bad_params("int_trunc needs typesize 1, 2, 4 or 8 and a bit count within the item (typesize " +
                     str(typesize) + ", meta " + str(int8_t(meta)) + ")");
        break;
      case kFilterBytedeltaBuggy:
      case kFilterBytedelta:
        bytedelta_encode(current, target, bsize, element);
        break;
      default:  // a plugin filter on the whole block
        find_filter(id)->encode(ByteSpan(current, bsize), MutableByteSpan(target, bsize), meta, p.geometry);
        break;
    }
    current = target;
    next ^= 1;
  }
  return current;
}

// Appends streams to a buffer that may not grow past `budget` bytes, the size below
// which a regular chunk beats the memcpyed form.
class StreamWriter {
 public:
  StreamWriter(std::vector<uint8_t>& out, size_t start, size_t budget) : out_(out), pos_(start), budget_(budget) {}

  size_t position() const { return pos_; }

  bool put(const CompressParams& p, const uint8_t* data, size_t size) {
    if (budget_ - pos_ < 4) return false;
    uint8_t* csize_field = out_.data() + pos_;
    pos_ += 4;
    if (is_byte_run(data, size)) {
      if (data[0] == 0) {
        store_le32(csize_field, 0);
        return true;
      }
      if (budget_ - pos_ < 1) return false;
      store_le32(csize_field, uint32_t(-int32_t(data[0])));
      out_[pos_++] = 0x01;  // token: run of the byte in csize
      return true;
    }
    // A compressed stream must come out shorter than `size`: csize == size means raw.
    const size_t room = std::min(size - 1, budget_ - pos_);
    const size_t n = room ? compress(p, data, size, room) : 0;
    if (n == 0) {
      if (budget_ - pos_ < size) return false;
      std::memcpy(out_.data() + pos_, data, size);
      store_le32(csize_field, uint32_t(size));
      pos_ += size;
    } else {
      store_le32(csize_field, uint32_t(n));
      pos_ += n;
    }
    return true;
  }

 private:
  size_t compress(const CompressParams& p, const uint8_t* data, size_t size, size_t room) {
    if (!is_plugin_codec(p.codec)) return compress_stream(p.codec, p.clevel, data, size, out_.data() + pos_, room);
    const CodecInfo* codec = find_codec(uint8_t(p.codec));
    size_t n = 0;
    if (codec->encode) {
      n = codec->encode(uint8_t(p.codec), p.compcode_meta, ByteSpan(data, size),
                        MutableByteSpan(out_.data() + pos_, room), p.geometry);
    } else {
      PluginEncodeParams params;
      params.meta = p.compcode_meta;
      params.clevel = uint8_t(p.clevel);
      params.typesize = header_typesize(p.typesize);
      params.blocksize = p.blocksize;
      params.splitmode = int32_t(p.splitmode);
      params.filters = p.filters;
      params.filters_meta = p.filters_meta;
      n = dynamic_codec(uint8_t(p.codec))->encode(params, ByteSpan(data, size), MutableByteSpan(out_.data() + pos_, room));
    }
    return n < size ? n : 0;
  }

  std::vector<uint8_t>& out_;
  size_t pos_;
  size_t budget_;
};

struct EncodeScratchTrim {
  ~EncodeScratchTrim() {
    encode_scratch().a.trim(size_t(64) << 20);
    encode_scratch().b.trim(size_t(64) << 20);
  }
};

// The streams of block j, as regular_chunk lays them out after its offset.
struct BlockPlan {
  size_t offset, bsize, nstreams, neblock;
};

BlockPlan plan_block(int32_t nbytes, int32_t blocksize, bool split, int32_t typesize, int32_t j) {
  BlockPlan b;
  b.offset = size_t(j) * size_t(blocksize);
  b.bsize = std::min(size_t(blocksize), size_t(nbytes) - b.offset);
  const bool leftover = b.bsize < size_t(blocksize);
  b.nstreams = split && !leftover ? size_t(typesize) : 1;
  b.neblock = b.bsize / b.nstreams;
  return b;
}

std::vector<uint8_t> finish_regular(std::vector<uint8_t>& out, const CompressParams& p, int32_t nbytes,
                                    int32_t blocksize, bool split, size_t end) {
  HeaderFields f = regular_fields(p, nbytes, blocksize);
  if (!split) f.flags |= kFlagDontSplit;
  if (pipeline_has(p, kFilterDelta)) f.flags |= kFlagDelta;
  f.cbytes = int32_t(end);
  write_header(out.data(), f);
  out.resize(end);
  return std::move(out);
}

// The shape of a regular chunk of `src`: its blocks, whether their streams
// split, where the data starts after the block table, and the size it must
// stay under (else the chunk is stored raw); nullopt when the table alone
// does not fit.
struct RegularLayout {
  int32_t nbytes = 0, typesize = 0, nblocks = 0;
  bool split = false;
  size_t table_end = 0, budget = 0;
};

std::optional<RegularLayout> regular_layout(ByteSpan src, const CompressParams& p, int32_t blocksize) {
  RegularLayout l;
  l.nbytes = int32_t(src.size());
  l.typesize = header_typesize(p.typesize);
  l.nblocks = (l.nbytes + blocksize - 1) / blocksize;
  l.split = split_streams(p, l.typesize, blocksize);
  l.table_end = kExtendedHeaderSize + 4 * size_t(l.nblocks);
  l.budget = size_t(l.nbytes) + kExtendedHeaderSize - 1;
  if (l.table_end >= l.budget) return std::nullopt;
  return l;
}

std::optional<std::vector<uint8_t>> regular_chunk(ByteSpan src, const CompressParams& p, int32_t blocksize) {
  const std::optional<RegularLayout> layout = regular_layout(src, p, blocksize);
  if (!layout) return std::nullopt;
  const int32_t nbytes = layout->nbytes, typesize = layout->typesize, nblocks = layout->nblocks;
  const bool split = layout->split;
  const size_t table_end = layout->table_end, budget = layout->budget;
  std::vector<uint8_t> out(budget);
  StreamWriter writer(out, table_end, budget);
  for (int32_t j = 0; j < nblocks; ++j) {
    const BlockPlan b = plan_block(nbytes, blocksize, split, typesize, j);
    const uint8_t* filtered = filter_block(p, src, b.offset, b.bsize, typesize);
    store_le32(out.data() + kExtendedHeaderSize + 4 * size_t(j), uint32_t(writer.position()));
    for (size_t s = 0; s < b.nstreams; ++s)
      if (!writer.put(p, filtered + s * b.neblock, b.neblock)) return std::nullopt;
  }
  return finish_regular(out, p, nbytes, blocksize, split, writer.position());
}

// regular_chunk with its blocks compressed on `threads` threads: the same
// bytes, unless regular_chunk's last streams got less room than their size (a
// chunk that barely compresses).
std::optional<std::vector<uint8_t>> regular_chunk_parallel(ByteSpan src, const CompressParams& p, int32_t blocksize,
                                                           unsigned threads) {
  const std::optional<RegularLayout> layout = regular_layout(src, p, blocksize);
  if (!layout) return std::nullopt;
  const int32_t nbytes = layout->nbytes, typesize = layout->typesize, nblocks = layout->nblocks;
  const bool split = layout->split;
  const size_t table_end = layout->table_end, budget = layout->budget;
  // Each worker compresses a block into one of a few slots of its own, which
  // it reuses; whichever worker finds the next blocks in line appends them to
  // the chunk, in order. The compressed bytes land in fresh memory once (the
  // chunk), not once per worker and again in the chunk; a worker waits only
  // when all its slots hold blocks behind one still being compressed. It
  // claims a block only once it has a free slot, so the earliest block not
  // appended is always being compressed, or appended by whoever finished it.
  constexpr size_t kSlots = 4;
  struct Done {
    unsigned worker = 0;
    size_t slot = 0, size = 0;
    bool ready = false;
  };
  const unsigned workers = std::max(1u, std::min(threads, unsigned(nblocks)));
  std::vector<std::array<std::vector<uint8_t>, kSlots>> slots(workers);
  std::vector<std::array<bool, kSlots>> slot_busy(workers, std::array<bool, kSlots>{});  // guarded by `mutex`
  std::vector<Done> done(static_cast<size_t>(nblocks));                                // guarded by `mutex`
  std::mutex mutex;
  std::condition_variable slot_freed;
  int32_t appended = 0;                   // guarded by `mutex`
  bool over_budget = false;               // guarded by `mutex`
  std::atomic<int32_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::atomic_flag error_set = ATOMIC_FLAG_INIT;
  // No more than the raw size (a 64 MiB chunk compresses to a fraction),
  // reserved, not touched: only the header and table are zeroed.
  std::vector<uint8_t> out;
  out.reserve(budget);
  advise_huge_pages(out.data(), out.capacity());
  out.resize(table_end);
  auto append_ready = [&] {  // `mutex` held
    for (; appended < nblocks && done[size_t(appended)].ready; ++appended) {
      Done& d = done[size_t(appended)];
      slot_busy[d.worker][d.slot] = false;
      if (over_budget || out.size() + d.size > budget) {
        over_budget = failed = true;  // stored raw instead: the rest need not be compressed
        continue;
      }
      store_le32(out.data() + kExtendedHeaderSize + 4 * size_t(appended), uint32_t(out.size()));
      const uint8_t* from = slots[d.worker][d.slot].data();
      out.insert(out.end(), from, from + d.size);
    }
    slot_freed.notify_all();
  };
  auto work = [&](unsigned id) {
    for (;;) {
      size_t slot = kSlots;
      {
        std::unique_lock lock(mutex);
        slot_freed.wait(lock, [&] {
          for (size_t k = 0; k < kSlots; ++k)
            if (!slot_busy[id][k]) slot = k;
          return slot < kSlots || failed.load();
        });
      }
      int32_t j;
      if (failed || (j = next.fetch_add(1)) >= nblocks) return;
      try {
        const BlockPlan b = plan_block(nbytes, blocksize, split, typesize, j);
        const uint8_t* filtered = filter_block(p, src, b.offset, b.bsize, typesize);
        // Room for every stream raw: a block never needs more than that.
        std::vector<uint8_t>& scratch = slots[id][slot];
        scratch.resize(std::max(scratch.size(), b.bsize + 5 * b.nstreams));
        StreamWriter writer(scratch, 0, scratch.size());
        for (size_t s = 0; s < b.nstreams; ++s)
          if (!writer.put(p, filtered + s * b.neblock, b.neblock)) throw FormatError("encode_chunk: a block outgrew its room");
        std::lock_guard lock(mutex);
        done[size_t(j)] = Done{id, slot, writer.position(), true};
        slot_busy[id][slot] = true;
        append_ready();
      } catch (...) {
        if (!error_set.test_and_set()) error = std::current_exception();
        std::lock_guard lock(mutex);
        failed = true;
        slot_freed.notify_all();
        return;
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    try {
      for (unsigned t = 1; t < workers; ++t)
        pool.emplace_back([&work, t] {
          name_this_thread("b2fs-blocks");
          work(t);
        });
    } catch (const std::system_error&) {
      // No more threads: the ones started and this one do the rest.
    }
    work(0);
  }
  if (error) std::rethrow_exception(error);
  if (over_budget) return std::nullopt;
  return finish_regular(out, p, nbytes, blocksize, split, out.size());
}

}  // namespace

int32_t automatic_blocksize(const CompressParams& params, int32_t nbytes) {
  const int level = std::clamp(params.clevel, 1, 9);
  int32_t size = level <= 3 ? (64 << 10) : level <= 6 ? (128 << 10) : (256 << 10);
  if (is_ratio_codec(params.codec)) size = level == 9 ? (1 << 20) : size * 2;
  return whole_items(size, std::max(nbytes, 0), header_typesize(std::max(params.typesize, 1)));
}

std::vector<uint8_t> encode_chunk(ByteSpan src, const CompressParams& params, unsigned threads) {
  validate(params, src.size());
  EncodeScratchTrim trim;
  const int32_t nbytes = int32_t(src.size());
  const int32_t blocksize = resolve_blocksize(params, nbytes);
  const size_t item = size_t(params.typesize);
  if (params.detect_specials && nbytes > 0) {
    if (src[0] == 0 && is_byte_run(src.data(), src.size()))
      return special_chunk(Special::zeros, nbytes, params.typesize, blocksize, {});
    if (src.size() % item == 0 && std::memcmp(src.data(), src.data() + item, src.size() - item) == 0)
      return special_chunk(Special::value, nbytes, params.typesize, blocksize, src.first(item));
  }
  if (params.clevel == 0 || nbytes < kMinCompressible) return memcpyed_chunk(src, params, blocksize);
  // Several threads pay only for chunks of many blocks (python-blosc2's 64 MiB ones).
  const int64_t nblocks = (int64_t(nbytes) + blocksize - 1) / blocksize;
  std::optional<std::vector<uint8_t>> chunk = threads > 1 && nblocks >= 4 && nbytes >= kParallelMinBytes
                                                  ? regular_chunk_parallel(src, params, blocksize, threads)
                                                  : regular_chunk(src, params, blocksize);
  if (chunk) return std::move(*chunk);
  return memcpyed_chunk(src, params, blocksize);
}

std::vector<uint8_t> make_special_chunk(Special kind, int32_t nbytes, int32_t typesize, ByteSpan value) {
  if (nbytes < 0) bad_params("negative nbytes " + str(nbytes));
  if (typesize < 1 || typesize > kMaxBlocksize) bad_params("typesize " + str(typesize) + " is out of range");
  const int32_t blocksize = whole_items(std::min(nbytes, kMaxBlocksize), nbytes, header_typesize(typesize));
  switch (kind) {
    case Special::zeros:
      return special_chunk(kind, nbytes, typesize, blocksize, {});
    case Special::nan:
      if (typesize != 4 && typesize != 8) bad_params("a NaN chunk needs typesize 4 or 8, not " + str(typesize));
      [[fallthrough]];
    case Special::uninit:
      if (nbytes % header_typesize(typesize) != 0)
        bad_params("nbytes " + str(nbytes) + " is not a multiple of typesize " + str(typesize));
      return special_chunk(kind, nbytes, typesize, blocksize, {});
    case Special::value:
      if (value.size() != size_t(typesize))
        bad_params("repeated value of " + str(int64_t(value.size())) + " bytes for typesize " + str(typesize));
      if (nbytes < typesize || nbytes % typesize != 0)
        bad_params("nbytes " + str(nbytes) + " is not a positive multiple of typesize " + str(typesize));
      return special_chunk(kind, nbytes, typesize, blocksize, value);
    case Special::none:
      break;
  }
  bad_params("special kind " + std::string(special_name(kind)) + " is not a special value");
}

}  // namespace blosc2fs
