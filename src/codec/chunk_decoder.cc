// ChunkView: validation and decoding of stored Blosc chunks (format-notes §5).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "chunk_codec.h"
#include "codec_registry.h"
#include "dynamic_plugins.h"
#include "error.h"
#include "filters.h"
#include "scratch_buffer.h"
#include "shuffle.h"
#include "stream_codecs.h"

namespace blosc2fs {

// How a chunk holds its blocks. Not in the unnamed namespace: ChunkView::Impl holds one.
enum class BlockLayout : uint8_t { empty, special, memcpyed, regular, vlblocks };

namespace {

constexpr int32_t kMaxDictSize = 32768;
constexpr uint8_t kBlosc2Instrumented = 0x80;
constexpr size_t kScratchKeep = size_t(64) << 20;

[[noreturn]] void corrupt(const std::string& why) { throw FormatError("chunk: " + why); }

// Per-thread buffers: stream output and the second filter buffer (used inside one
// block decode), a whole block for ranges that cut a block, and block 0 when the
// delta filter needs it as a reference.
struct DecodeScratch {
  ScratchBuffer streams, filtered, block, reference;
};

DecodeScratch& scratch() {
  thread_local DecodeScratch s;
  return s;
}

// Returns scratch memory to the system after an unusually large chunk.
struct ScratchTrim {
  ~ScratchTrim() {
    DecodeScratch& s = scratch();
    s.streams.trim(kScratchKeep);
    s.filtered.trim(kScratchKeep);
    s.block.trim(kScratchKeep);
    s.reference.trim(kScratchKeep);
  }
};

// Fills dst with a repeating pattern whose byte 0 sits at chunk offset 0.
void fill_pattern(uint8_t* dst, size_t n, const uint8_t* pattern, size_t pattern_size, int64_t chunk_offset) {
  if (n == 0) return;
  const size_t phase = size_t(chunk_offset % int64_t(pattern_size));
  const size_t first = std::min(n, pattern_size);
  for (size_t i = 0; i < first; ++i) dst[i] = pattern[(phase + i) % pattern_size];
  // Copy what is filled onto what follows, doubling: the prefix is a whole number of periods.
  for (size_t done = first; done < n;) {
    const size_t k = std::min(done, n - done);
    std::memcpy(dst + done, dst, k);
    done += k;
  }
}

}  // namespace

struct ChunkView::Impl {
  struct FilterStep {
    uint8_t id;
    int32_t element_size;  // shuffle / bitshuffle / bytedelta item size
    uint8_t meta = 0;      // plugin filters: their filters_meta byte
  };

  BlockLayout layout = BlockLayout::empty;
  int32_t blocksize = 0;  // regular geometry (also for special and memcpyed chunks)
  std::vector<int64_t> vl_offsets;      // VL: uncompressed start of each block, plus nbytes
  std::vector<uint32_t> block_starts;   // regular and VL: where each block's bytes begin
  std::vector<uint32_t> block_limits;   // regular: the next larger block start, else cbytes
  bool bound_blocks = false;            // DecodeRules::bound_blocks
  std::vector<uint32_t> block_ends;     // VL: where each block's bytes end
  std::vector<FilterStep> steps;        // the filters to undo, in decode order
  int out_of_place_steps = 0;           // steps that need a separate output buffer
  bool has_delta = false;
  // Bitshuffled blocks whose item count is not a multiple of 8 were stored
  // unshuffled: Blosc1 chunks, and format-4 chunks of beta.1/beta.2 frames.
  bool old_bitshuffle_rule = false;
  std::unique_ptr<StreamDictionary> dict;
  ByteSpan special_value;
  BlockGeometry geometry;
  // The plugin codec that decodes the streams (null: a built-in stream codec), and
  // why none can when that is so. Streams that need no codec (zeros, runs, raw)
  // decode either way, as c-blosc2 decodes them before it looks for the codec.
  const CodecInfo* plugin = nullptr;
  const DynamicCodec* runtime_plugin = nullptr;  // the plugin's library, for codecs loaded at run time
  std::string undecodable;

  // Decodes one compressed stream (csize != its decoded size n) into dst; `chunk`
  // is the chunk's first byte (c-blosc2 hands it to plugin decoders).
  void decode_stream(const ChunkHeader& h, const uint8_t* chunk, const uint8_t* src, size_t csize, uint8_t* dst,
                     size_t n) const;

  void decode_regular_block(const ChunkView& view, int32_t j, uint8_t* out, const uint8_t* reference) const;
  void decode_vl_block(const ChunkView& view, int32_t j, uint8_t* out) const;
  // A block's bytes as the filter pipeline first reads them: contiguous at `data`, or
  // (split shuffled blocks) stream k at streams[k]. Either may point into the chunk.
  struct BlockInput {
    const uint8_t* data;
    const uint8_t* const* streams;
  };
  // Undoes the filters; `work` is the block's writable scratch (or `out` when no step
  // needs a second buffer).
  void run_filters(const ChunkView& view, const BlockInput& input, uint8_t* work, uint8_t* out, size_t size,
                   bool is_reference, const uint8_t* reference) const;
  void fill_special(const ChunkView& view, uint8_t* out, size_t n, int64_t chunk_offset) const;
  // True when the first filter step writes to another buffer than it reads, so it can
  // read a block's bytes where they are stored in the chunk.
  bool first_step_reads_elsewhere() const { return !steps.empty() && steps.front().id != kFilterDelta; }

  void init_filters(const ChunkHeader& h);
  // Reads the block-start table and the optional dictionary.
  void read_tables(const ChunkHeader& h, ByteSpan chunk, int32_t nblocks);
  void init_vlblocks(const ChunkHeader& h, ByteSpan chunk);
};

void ChunkView::Impl::init_filters(const ChunkHeader& h) {
  for (int slot = kMaxFilters - 1; slot >= 0; --slot) {
    const uint8_t id = h.filters[slot];
    const uint8_t meta = h.filters_meta[slot];
    switch (id) {
      case kFilterNone:
      case kFilterTruncPrec:
      case kFilterIntTrunc:
        break;
      case kFilterShuffle:
      case kFilterBytedeltaBuggy:
      case kFilterBytedelta:
        steps.push_back({id, meta ? int32_t(meta) : int32_t(h.typesize)});
        ++out_of_place_steps;
        break;
      case kFilterBitshuffle:
        // c-blosc2 bit-shuffles by typesize whatever filters_meta says.
        steps.push_back({id, int32_t(h.typesize)});
        ++out_of_place_steps;
        break;
      case kFilterDelta:
        steps.push_back({id, int32_t(h.typesize)});
        has_delta = true;
        break;
      default:
        if (const FilterInfo* f = find_filter(id); f && f->decode) {
          steps.push_back({id, int32_t(h.typesize), meta});
          ++out_of_place_steps;
          break;
        }
        throw UnsupportedError("chunk: filter " + filter_name(id) + " (id " + str(id) + ", slot " + str(slot) +
                               ") is not supported");
    }
  }
}

static void check_codec(const ChunkHeader& h) {
  if (h.extended && (h.blosc2_flags & kBlosc2Instrumented))
    throw UnsupportedError("chunk: instrumented chunk (codec timings, not data) is not supported");
}

void ChunkView::Impl::decode_stream(const ChunkHeader& h, const uint8_t* chunk, const uint8_t* src, size_t csize,
                                    uint8_t* dst, size_t n) const {
  if (!undecodable.empty()) throw UnsupportedError(undecodable);
  if (runtime_plugin) {
    runtime_plugin->decode(h.compcode_meta, h.typesize, ByteSpan(src, csize), MutableByteSpan(dst, n), chunk);
    return;
  }
  if (plugin) {
    plugin->decode(plugin->id, h.compcode_meta, ByteSpan(src, csize), MutableByteSpan(dst, n), geometry);
    return;
  }
  if (!decompress_stream(h.compformat(), src, csize, dst, n, dict.get()))
    throw FormatError(h.codec_label() + " data of " + str(int64_t(csize)) + " bytes does not decode to " +
                      str(int64_t(n)) + " bytes");
}

void ChunkView::Impl::read_tables(const ChunkHeader& h, ByteSpan chunk, int32_t nblocks) {
  const int64_t table_end = int64_t(h.header_size()) + 4 * int64_t(nblocks);
  if (table_end > h.cbytes)
    corrupt("block-start table of " + str(nblocks) + " entries ends at byte " + str(table_end) + ", past cbytes " +
            str(h.cbytes));
  int64_t streams_begin = table_end;
  if (h.use_dict()) {
    if (streams_begin + 4 > h.cbytes) corrupt("dictionary size field runs past cbytes");
    const int32_t dict_size = int32_t(load_le32(chunk.data() + streams_begin));
    if (dict_size < 1 || dict_size > kMaxDictSize)
      corrupt("dictionary size " + str(dict_size) + " is outside 1.." + str(kMaxDictSize));
    if (streams_begin + 4 + dict_size > h.cbytes) corrupt("dictionary of " + str(dict_size) + " bytes runs past cbytes");
    const uint8_t format = h.compformat();
    // Only lz4 and zstd use a dictionary; other codecs skip over it as c-blosc2 does.
    if (format == codec_compformat(Codec::lz4) || format == codec_compformat(Codec::zstd))
      dict = std::make_unique<StreamDictionary>(format, chunk.subspan(size_t(streams_begin) + 4, size_t(dict_size)));
    streams_begin += 4 + dict_size;
  }
  block_starts.resize(size_t(nblocks));
  for (int32_t j = 0; j < nblocks; ++j) {
    const int32_t start = int32_t(load_le32(chunk.data() + h.header_size() + 4 * size_t(j)));
    if (start < streams_begin || start >= h.cbytes)
      corrupt("block " + str(j) + " starts at byte " + str(start) + ", outside the stream area [" +
              str(streams_begin) + ", " + str(h.cbytes) + ")");
    block_starts[size_t(j)] = uint32_t(start);
  }
  std::vector<uint32_t> sorted = block_starts;
  std::sort(sorted.begin(), sorted.end());
  block_limits.resize(size_t(nblocks));
  for (int32_t j = 0; j < nblocks; ++j) {
    auto next = std::upper_bound(sorted.begin(), sorted.end(), block_starts[size_t(j)]);
    block_limits[size_t(j)] = next == sorted.end() ? uint32_t(h.cbytes) : *next;
  }
}

void ChunkView::Impl::init_vlblocks(const ChunkHeader& h, ByteSpan chunk) {
  const int32_t nblocks = h.blocksize;
  read_tables(h, chunk, nblocks);
  block_ends.resize(size_t(nblocks));
  vl_offsets.resize(size_t(nblocks) + 1);
  int64_t total = 0;
  for (int32_t j = 0; j < nblocks; ++j) {
    const uint32_t start = block_starts[size_t(j)];
    const uint32_t end = j + 1 < nblocks ? block_starts[size_t(j) + 1] : uint32_t(h.cbytes);
    if (j > 0 && start <= block_starts[size_t(j) - 1])
      corrupt("VL block starts are not strictly increasing at block " + str(j));
    if (int64_t(end) - int64_t(start) <= 4)
      corrupt("VL block " + str(j) + " holds " + str(int64_t(end) - int64_t(start)) + " bytes, too few for its size field");
    const int32_t size = int32_t(load_le32(chunk.data() + start));
    if (size <= 0) corrupt("VL block " + str(j) + " has uncompressed size " + str(size));
    block_ends[size_t(j)] = end;
    vl_offsets[size_t(j)] = total;
    total += size;
    if (total > h.nbytes) corrupt("VL block sizes exceed nbytes " + str(h.nbytes));
  }
  if (total != h.nbytes) corrupt("VL block sizes add up to " + str(total) + ", not nbytes " + str(h.nbytes));
  vl_offsets[size_t(nblocks)] = total;
}

ChunkView::ChunkView(ByteSpan chunk, DecodeRules rules) : chunk_(chunk), header_(parse_chunk_header(chunk)) {
  const ChunkHeader& h = header_;
  if (chunk.size() < size_t(h.cbytes))
    corrupt("only " + str(chunk.size()) + " bytes present, header says cbytes " + str(h.cbytes));
  chunk_ = chunk.first(size_t(h.cbytes));
  auto m = std::make_shared<Impl>();
  m->blocksize = h.blocksize;
  m->old_bitshuffle_rule = h.version <= 2 || rules.old_bitshuffle_leftovers;
  m->geometry = rules.geometry;
  m->bound_blocks = rules.bound_blocks;
  nblocks_ = h.nblocks();

  if (h.special() != Special::none) {
    m->layout = BlockLayout::special;
    if (h.special() == Special::value) m->special_value = chunk_.subspan(size_t(kExtendedHeaderSize));
    if (h.special() == Special::nan && h.typesize != 4 && h.typesize != 8)
      corrupt("NaN special chunk with typesize " + str(h.typesize) + " (only 4 or 8 have a NaN)");
  } else if (h.memcpyed()) {
    m->layout = BlockLayout::memcpyed;
  } else if (h.nbytes == 0) {
    m->layout = BlockLayout::empty;
    nblocks_ = 0;
  } else {
    check_codec(h);
    m->undecodable = chunk_codec_unsupported_reason(h);
    if (m->undecodable.empty() && h.compformat() == uint8_t(ChunkCompformat::user)) {
      m->plugin = chunk_codec(h);
      if (m->plugin->runtime_plugin) m->runtime_plugin = dynamic_codec(m->plugin->id);
    } else if (const CodecInfo* c = chunk_codec(h); c && c->runtime_plugin && !m->undecodable.empty()) {
      report_missing_plugin(*c);
    }
    m->init_filters(h);
    if (h.vlblocks()) {
      m->layout = BlockLayout::vlblocks;
      m->init_vlblocks(h, chunk_);
    } else {
      m->layout = BlockLayout::regular;
      m->read_tables(h, chunk_, nblocks_);
    }
  }
  impl_ = std::move(m);
}

std::pair<int64_t, int64_t> ChunkView::block_stored_extent(int32_t j) const {
  if (j < 0 || j >= nblocks_) throw std::out_of_range("chunk: block " + str(j) + " of " + str(nblocks_));
  const Impl& m = *impl_;
  if (m.layout == BlockLayout::regular) return {m.block_starts[size_t(j)], m.block_limits[size_t(j)]};
  if (m.layout == BlockLayout::vlblocks) return {m.block_starts[size_t(j)], m.block_ends[size_t(j)]};
  return {0, int64_t(chunk_.size())};
}

int64_t ChunkView::block_offset(int32_t j) const {
  if (j < 0 || j >= nblocks_) throw std::out_of_range("chunk: block " + str(j) + " of " + str(nblocks_));
  if (impl_->layout == BlockLayout::vlblocks) return impl_->vl_offsets[size_t(j)];
  return int64_t(j) * impl_->blocksize;
}

int32_t ChunkView::block_size(int32_t j) const {
  const int64_t offset = block_offset(j);
  if (impl_->layout == BlockLayout::vlblocks) return int32_t(impl_->vl_offsets[size_t(j) + 1] - offset);
  return int32_t(std::min<int64_t>(impl_->blocksize, header_.nbytes - offset));
}

bool ChunkView::needs_reference_block() const {
  return impl_->layout == BlockLayout::regular && impl_->has_delta && nblocks_ > 1;
}

void ChunkView::Impl::fill_special(const ChunkView& view, uint8_t* out, size_t n, int64_t chunk_offset) const {
  switch (view.header_.special()) {
    case Special::zeros:
      std::memset(out, 0, n);
      break;
    case Special::nan: {
      uint8_t pattern[8];
      if (view.header_.typesize == 4)
        store_le32(pattern, 0x7FC00000u);
      else
        store_le64(pattern, 0x7FF8000000000000ull);
      fill_pattern(out, n, pattern, view.header_.typesize, chunk_offset);
      break;
    }
    case Special::value:
      fill_pattern(out, n, special_value.data(), special_value.size(), chunk_offset);
      break;
    case Special::uninit:
    case Special::none:
      break;
  }
}

void ChunkView::Impl::run_filters(const ChunkView& view, const BlockInput& input, uint8_t* work, uint8_t* out,
                                  size_t size, bool is_reference, const uint8_t* reference) const {
  const ChunkHeader& h = view.header_;
  // The bytes are read only until the first out-of-place step; only work, spare and out
  // are ever written.
  const uint8_t* current = input.data;
  uint8_t* writable = input.data == work ? work : nullptr;
  bool in_work = true;  // gathered streams may lie partly in work: never write it first
  uint8_t* spare = out_of_place_steps >= 2 ? scratch().filtered.get(size) : nullptr;
  int remaining = out_of_place_steps;
  bool gathered = input.streams != nullptr;
  for (const FilterStep& step : steps) {
    if (step.id == kFilterDelta) {
      if (!is_reference && !reference) throw std::logic_error("chunk: delta block decoded without block 0");
      if (!writable || gathered) throw std::logic_error("chunk: delta step on read-only block bytes");
      delta_decode(reference, writable, size, size_t(h.typesize), is_reference);
      continue;
    }
    uint8_t* target = --remaining == 0 ? out : (in_work ? spare : work);
    const size_t element = size_t(step.element_size);
    if (gathered) {
      // Only a shuffle whose item size is the stream count reads gathered streams.
      unshuffle_streams(input.streams, target, size / element, element);
    } else {
      switch (step.id) {
        case kFilterShuffle:
          unshuffle(current, target, size, element);
          break;
        case kFilterBitshuffle:
          if (!old_bitshuffle_rule) {
            bitunshuffle(current, target, size, element);
          } else if ((size / element) % 8 != 0) {
            // The old rule left blocks whose item count is not a multiple of 8 unshuffled.
            std::memcpy(target, current, size);
          } else {
            // For format 2 c-blosc2 bit-unshuffles the whole items only and never writes the
            // trailing size % typesize bytes; the reference output holds zeros there.
            const size_t items_bytes = size / element * element;
            bitunshuffle(current, target, items_bytes, element);
            std::memset(target + items_bytes, 0, size - items_bytes);
          }
          break;
        case kFilterBytedeltaBuggy:
        case kFilterBytedelta:
          bytedelta_decode(current, target, size, element);
          break;
        default:  // a plugin filter on the whole block
          find_filter(step.id)->decode(ByteSpan(current, size), MutableByteSpan(target, size), step.meta, geometry);
          break;
      }
    }
    current = writable = target;
    in_work = target == work;
    gathered = false;
  }
}

void ChunkView::Impl::decode_regular_block(const ChunkView& view, int32_t j, uint8_t* out,
                                           const uint8_t* reference) const {
  const ChunkHeader& h = view.header_;
  const size_t bsize = size_t(view.block_size(j));
  const bool leftover = j == view.nblocks_ - 1 && h.nbytes % blocksize != 0;
  const size_t nstreams = !h.dont_split() && !leftover ? h.typesize : 1;
  if (bsize % nstreams != 0)
    corrupt("block " + str(j) + " of " + str(int64_t(bsize)) + " bytes does not split into " + str(int64_t(nstreams)) +
            " streams");
  const size_t neblock = bsize / nstreams;
  // A stream stored raw is left where it is in the chunk when the first filter step
  // writes elsewhere and can read it there: saves copying it into scratch first.
  const bool filtered = out_of_place_steps > 0;
  const bool read_in_place = first_step_reads_elsewhere() &&
                             (nstreams == 1 || (steps.front().id == kFilterShuffle &&
                                                size_t(steps.front().element_size) == nstreams));
  uint8_t* work = filtered ? scratch().streams.get(bsize) : out;
  const uint8_t* stream_at[256];
  static_assert(sizeof(ChunkHeader::typesize) == 1, "nstreams <= typesize must fit stream_at");
  const uint8_t* chunk = view.chunk_.data();
  const size_t limit = bound_blocks ? size_t(block_limits[size_t(j)]) : view.chunk_.size();
  size_t pos = block_starts[size_t(j)];
  for (size_t s = 0; s < nstreams; ++s) {
    uint8_t* dst = work + s * neblock;
    stream_at[s] = dst;
    auto fail = [&](const std::string& why) {
      corrupt("block " + str(j) + " stream " + str(int64_t(s)) + ": " + why);
    };
    if (limit - pos < 4) fail("size field runs past cbytes");
    const int32_t csize = int32_t(load_le32(chunk + pos));
    pos += 4;
    if (csize == 0) {
      std::memset(dst, 0, neblock);
    } else if (csize < 0) {
      if (limit - pos < 1) fail("run token runs past cbytes");
      const uint8_t token = chunk[pos++];
      if (!(token & 1)) fail("unknown stream token " + str(token));
      if (csize < -255) fail("run of byte value " + str(-int64_t(csize)) + " (above 255)");
      std::memset(dst, -csize, neblock);
    } else {
      if (size_t(csize) > limit - pos)
        fail(str(csize) + " compressed bytes run past cbytes (" + str(int64_t(limit - pos)) + " left)");
      if (size_t(csize) != neblock) {
        try {
          decode_stream(h, chunk, chunk + pos, size_t(csize), dst, neblock);
        } catch (const UnsupportedError& e) {
          throw UnsupportedError("chunk: block " + str(j) + " stream " + str(int64_t(s)) + ": " + e.what());
        } catch (const FormatError& e) {
          fail(e.what());
        }
      } else if (read_in_place) {
        stream_at[s] = chunk + pos;
      } else {
        std::memcpy(dst, chunk + pos, neblock);
      }
      pos += size_t(csize);
    }
  }
  if (!filtered) {
    run_filters(view, BlockInput{out, nullptr}, out, out, bsize, j == 0, reference);
  } else if (nstreams == 1 || !read_in_place) {
    run_filters(view, BlockInput{stream_at[0], nullptr}, work, out, bsize, j == 0, reference);
  } else {
    run_filters(view, BlockInput{stream_at[0], stream_at}, work, out, bsize, j == 0, reference);
  }
}

void ChunkView::Impl::decode_vl_block(const ChunkView& view, int32_t j, uint8_t* out) const {
  const ChunkHeader& h = view.header_;
  const size_t bsize = size_t(view.block_size(j));
  const size_t begin = block_starts[size_t(j)] + 4;
  const size_t csize = block_ends[size_t(j)] - begin;
  uint8_t* data = out_of_place_steps > 0 ? scratch().streams.get(bsize) : out;
  const uint8_t* src = view.chunk_.data() + begin;
  const uint8_t* input = data;
  if (csize != bsize) {
    try {
      decode_stream(h, view.chunk_.data(), src, csize, data, bsize);
    } catch (const UnsupportedError& e) {
      throw UnsupportedError("chunk: VL block " + str(j) + ": " + e.what());
    } catch (const FormatError& e) {
      corrupt("VL block " + str(j) + ": " + e.what());
    }
  } else if (first_step_reads_elsewhere()) {
    input = src;
  } else {
    std::memcpy(data, src, bsize);
  }
  // The writer treats every VL block as a delta reference block.
  run_filters(view, BlockInput{input, nullptr}, data, out, bsize, true, nullptr);
}

void ChunkView::decode(MutableByteSpan out) const {
  if (out.size() != size_t(header_.nbytes))
    throw std::invalid_argument("chunk decode: output of " + str(int64_t(out.size())) + " bytes, chunk holds " +
                                str(header_.nbytes));
  decode_range(0, out);
}

std::vector<uint8_t> ChunkView::decode() const {
  std::vector<uint8_t> out(size_t(header_.nbytes));
  decode(out);
  return out;
}

void ChunkView::decode_block(int32_t j, MutableByteSpan out, ByteSpan reference) const {
  const int64_t offset = block_offset(j);
  if (out.size() != size_t(block_size(j)))
    throw std::invalid_argument("chunk decode_block: output of " + str(int64_t(out.size())) + " bytes, block " +
                                str(j) + " holds " + str(block_size(j)));
  if (!needs_reference_block() || j == 0) {
    decode_range(offset, out);
    return;
  }
  ScratchTrim trim;
  const Impl& m = *impl_;
  const size_t ref_size = size_t(block_size(0));
  const uint8_t* ref = reference.data();
  if (reference.empty()) {
    uint8_t* block0 = scratch().reference.get(ref_size);
    m.decode_regular_block(*this, 0, block0, nullptr);
    ref = block0;
  } else if (reference.size() != ref_size) {
    throw std::invalid_argument("chunk decode_block: reference of " + str(int64_t(reference.size())) +
                                " bytes, block 0 holds " + str(int64_t(ref_size)));
  }
  m.decode_regular_block(*this, j, out.data(), ref);
}

void ChunkView::decode_range(int64_t offset, MutableByteSpan out) const {
  const int64_t size = int64_t(out.size());
  if (offset < 0 || offset > header_.nbytes || size > header_.nbytes - offset)
    throw std::out_of_range("chunk decode_range: [" + str(offset) + ", " + str(offset + size) + ") is outside 0.." +
                            str(header_.nbytes));
  if (size == 0) return;
  const Impl& m = *impl_;
  switch (m.layout) {
    case BlockLayout::empty:
      return;
    case BlockLayout::special:
      m.fill_special(*this, out.data(), out.size(), offset);
      return;
    case BlockLayout::memcpyed:
      std::memcpy(out.data(), chunk_.data() + header_.header_size() + offset, out.size());
      return;
    case BlockLayout::regular:
    case BlockLayout::vlblocks:
      break;
  }
  ScratchTrim trim;
  const bool vl = m.layout == BlockLayout::vlblocks;
  const int64_t end = offset + size;
  int32_t first = vl ? int32_t(std::upper_bound(m.vl_offsets.begin(), m.vl_offsets.end(), offset) -
                               m.vl_offsets.begin()) - 1
                     : int32_t(offset / m.blocksize);
  const uint8_t* reference = nullptr;
  if (needs_reference_block() && end > block_offset(0) + block_size(0) && !(first == 0 && offset == 0)) {
    // Block 0 is needed whole but is not decoded whole into `out`: decode it aside.
    uint8_t* block0 = scratch().reference.get(size_t(block_size(0)));
    m.decode_regular_block(*this, 0, block0, nullptr);
    reference = block0;
    if (first == 0) {
      std::memcpy(out.data(), block0 + offset, size_t(std::min<int64_t>(end, block_size(0)) - offset));
      first = 1;
    }
  }
  for (int32_t j = first; j < nblocks_; ++j) {
    const int64_t block_begin = block_offset(j);
    if (block_begin >= end) break;
    const int32_t bsize = block_size(j);
    const int64_t lo = std::max(offset, block_begin);
    const int64_t hi = std::min(end, block_begin + bsize);
    const bool whole = lo == block_begin && hi == block_begin + bsize;
    uint8_t* target = whole ? out.data() + (block_begin - offset) : scratch().block.get(size_t(bsize));
    if (vl)
      m.decode_vl_block(*this, j, target);
    else
      m.decode_regular_block(*this, j, target, reference);
    if (j == 0) reference = target;
    if (!whole) std::memcpy(out.data() + (lo - offset), target + (lo - block_begin), size_t(hi - lo));
  }
}

std::vector<uint8_t> decode_chunk(ByteSpan chunk) { return ChunkView(chunk).decode(); }

}  // namespace blosc2fs
