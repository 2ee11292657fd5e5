// Writing a new frame the way c-blosc2 lays it out (format-notes §1, §2, §4, §8):
// chunks as they come, then index, trailer and finally the header.
#include "frame_writer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "error.h"
#include "file.h"
#include "parallel_encode.h"

namespace blosc2fs {

namespace {

void check_name(const std::string& name, const char* what) {
  if (name.empty() || name.size() > size_t(kMaxMetalayerNameLen))
    throw FormatError(std::string(what) + " name '" + name + "' must be 1 to 31 bytes long");
}

}  // namespace

Bytes encode_index_chunk(const std::vector<int64_t>& entries) {
  if (entries.empty()) return {};
  Bytes raw;
  raw.reserve(entries.size() * 8);
  for (int64_t e : entries) append_le64(raw, uint64_t(e));
  // What c-blosc2 uses when it rewrites an index (format-notes §2).
  CompressParams p;
  p.codec = Codec::blosclz;
  p.clevel = 5;
  p.typesize = 8;
  p.blocksize = int32_t(std::min<size_t>(16384, raw.size()));
  p.filters = {0, 0, 0, 0, 0, kFilterShuffle};
  p.splitmode = SplitMode::never;
  p.detect_specials = false;
  return encode_chunk(raw, p);
}

Bytes encode_vlmeta_chunk(ByteSpan content) {
  // c-blosc2's defaults with python-blosc2's typesize 1.
  CompressParams p;
  p.codec = Codec::blosclz;
  p.clevel = 5;
  p.typesize = 1;
  p.filters = {0, 0, 0, 0, 0, kFilterShuffle};
  p.splitmode = SplitMode::forward_compat;
  p.detect_specials = false;
  return encode_chunk(content, p);
}

uint8_t frame_general_flags(int32_t chunksize, bool vlblocks) {
  const bool v3 = chunksize == 0 || vlblocks;
  return uint8_t((v3 ? 3 : 2) | 0x10 | (chunksize == 0 ? 0x40 : 0) | (vlblocks ? 0x80 : 0));
}

struct FrameWriter::Impl {
  std::filesystem::path path;
  FrameParams params;
  File file;  // the cframe, or chunks.b2frame
  FrameHeader header;
  int64_t header_len = 0;
  std::vector<int64_t> index;
  std::vector<Vlmetalayer> vlmetalayers;
  int64_t nbytes = 0;
  int64_t cbytes = 0;
  int64_t next_chunk_id = 0;
  // What the chunk sizes so far allow as the header's chunksize.
  int32_t first_nbytes = -1;
  int32_t last_nbytes = -1;
  bool sizes_vary = false;
  int vlblocks = -1;  // -1 no chunk yet, 0 regular, 1 VL-block chunks
  bool closed = false;

  bool fixed() const { return params.chunksize > 0; }
  void check_open() const {
    if (closed) throw FormatError(path.string() + ": frame writer already closed");
  }
  void check_size(int64_t n) const;
  void store(Bytes chunk, int32_t chunk_nbytes);
  void write_header(int64_t frame_len);
  void close();
};

FrameWriter::FrameWriter(const std::filesystem::path& path, const FrameParams& params)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.path = path;
  w.params = params;
  const CompressParams& cp = params.cparams;
  if (cp.typesize < 1) throw FormatError("frame writer: typesize must be positive");
  if (params.chunksize < 0) throw FormatError("frame writer: chunksize must be 0 (variable) or positive");
  if (cp.clevel < 0 || cp.clevel > 9) throw FormatError("frame writer: clevel must be 0..9");
  if (params.metalayers.size() > size_t(kMaxMetalayers)) throw FormatError("frame writer: more than 16 metalayers");
  for (size_t i = 0; i < params.metalayers.size(); ++i) {
    check_name(params.metalayers[i].name, "metalayer");
    for (size_t k = 0; k < i; ++k)
      if (params.metalayers[k].name == params.metalayers[i].name)
        throw FormatError("frame writer: metalayer '" + params.metalayers[i].name + "' given twice");
  }

  FrameHeader& h = w.header;
  h.frame_type = params.sparse ? 1 : 0;
  // Plugin codecs: compcode 6 and the id in udcodec, as c-blosc2 writes them.
  h.codec_flags = uint8_t(cp.clevel << 4 | (is_plugin_codec(cp.codec) ? 6 : uint8_t(cp.codec) & 0x0F));
  h.other_flags = uint8_t((uint8_t(cp.splitmode) - 1) & 0x03);
  h.typesize = cp.typesize;
  h.blocksize = cp.blocksize;
  h.chunksize = -1;
  h.nthreads_comp = h.nthreads_decomp = 1;
  h.filters = cp.filters;
  h.filters_meta = cp.filters_meta;
  h.udcodec = uint8_t(cp.codec);
  h.compcode_meta = cp.compcode_meta;
  h.general_flags = 2 | 0x10;

  if (params.sparse) {
    if (::mkdir(path.c_str(), 0777) != 0) throw_errno("cannot create " + path.string());
    w.file = File::create_new(path / "chunks.b2frame");
  } else {
    w.file = File::create_new(path);
  }
  Bytes placeholder = serialize_frame_header(h, params.metalayers);
  w.header_len = int64_t(placeholder.size());
  w.file.write_at(0, placeholder);
}

FrameWriter::~FrameWriter() {
  if (!impl_ || impl_->closed) return;
  try {
    impl_->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blosc2fs: closing %s failed: %s\n", impl_->path.c_str(), e.what());
  }
}

void FrameWriter::Impl::check_size(int64_t n) const {
  if (n <= 0) throw FormatError(path.string() + ": cannot append an empty chunk");
  if (!fixed()) return;
  if (last_nbytes >= 0 && last_nbytes < params.chunksize)
    throw FormatError(path.string() + ": chunk " + str(int64_t(index.size()) - 1) + " was shorter than chunksize " +
                      str(params.chunksize) + ", so it must stay the last one");
  if (n > params.chunksize)
    throw FormatError(path.string() + ": a chunk of " + str(n) + " bytes exceeds chunksize " + str(params.chunksize));
}

void FrameWriter::append(ByteSpan data) {
  impl_->check_open();
  impl_->check_size(int64_t(data.size()));
  impl_->store(encode_chunk(data, impl_->params.cparams), int32_t(data.size()));
}

void FrameWriter::append_raw(ByteSpan chunk) {
  Impl& w = *impl_;
  w.check_open();
  ChunkView view(chunk);
  const ChunkHeader& h = view.header();
  if (size_t(h.cbytes) != chunk.size())
    throw FormatError(w.path.string() + ": raw chunk of " + str(int64_t(chunk.size())) + " bytes says cbytes " +
                      str(h.cbytes));
  if (h.lazy()) throw FormatError(w.path.string() + ": raw chunk is a lazy chunk, which never goes to disk");
  w.check_size(h.nbytes);
  Bytes scratch(size_t(h.nbytes));
  view.decode(scratch);  // validates every block
  if (w.vlblocks >= 0 && w.vlblocks != int(h.vlblocks()))
    throw FormatError(w.path.string() + ": a frame holds either VL-block chunks or regular ones, not both");
  w.store(Bytes(chunk.begin(), chunk.end()), h.nbytes);
}

void FrameWriter::append_encoded(Bytes chunk, int32_t nbytes) {
  Impl& w = *impl_;
  w.check_open();
  w.check_size(nbytes);
  const ChunkHeader h = parse_chunk_header(chunk);
  if (size_t(h.cbytes) != chunk.size() || h.nbytes != nbytes)
    throw FormatError(w.path.string() + ": encoded chunk of " + str(int64_t(chunk.size())) + " bytes says cbytes " +
                      str(h.cbytes) + ", nbytes " + str(h.nbytes) + " (" + str(nbytes) + " expected)");
  if (w.vlblocks >= 0 && w.vlblocks != int(h.vlblocks()))
    throw FormatError(w.path.string() + ": a frame holds either VL-block chunks or regular ones, not both");
  w.store(std::move(chunk), nbytes);
}

void FrameWriter::append_data(ByteSpan data) {
  Impl& w = *impl_;
  w.check_open();
  const size_t step = w.fixed() ? size_t(w.params.chunksize) : data.size();
  // A few chunks per core at a time: compressed together, stored in order.
  const size_t group = 4 * std::max(1u, std::thread::hardware_concurrency());
  std::vector<ByteSpan> pieces;
  for (size_t pos = 0; pos < data.size(); pos += step) pieces.push_back(data.subspan(pos, std::min(step, data.size() - pos)));
  for (size_t first = 0; first < pieces.size(); first += group) {
    std::span<const ByteSpan> batch(pieces.data() + first, std::min(group, pieces.size() - first));
    std::vector<EncodedChunk> encoded =
        encode_in_parallel(batch, [&w](ByteSpan piece, unsigned threads) {
          return encode_chunk(piece, w.params.cparams, threads);
        });
    for (size_t i = 0; i < batch.size(); ++i) {
      w.check_size(int64_t(batch[i].size()));
      if (encoded[i].error) std::rethrow_exception(encoded[i].error);
      w.store(std::move(encoded[i].stored), int32_t(batch[i].size()));
    }
  }
}

void FrameWriter::Impl::store(Bytes chunk, int32_t chunk_nbytes) {
  ChunkHeader h = parse_chunk_header(chunk);
  Special kind = h.special();
  if (kind == Special::zeros || kind == Special::nan || kind == Special::uninit) {
    if (fixed()) {
      // c-blosc2's own form: an index entry and no payload.
      index.push_back(special_index_entry(kind));
      chunk.clear();
    } else {
      // Bugs B2/B3: c-blosc2 can't size special entries in variable-chunk frames,
      // and rejects physical zeros/nan/uninit chunks; a repeat-value chunk works.
      int32_t ts = h.typesize;
      if (ts <= 0 || chunk_nbytes % ts != 0) ts = 1;
      Bytes value(size_t(ts), 0);
      if (kind != Special::uninit) ChunkView(chunk).decode_range(0, value);
      chunk = make_special_chunk(Special::value, chunk_nbytes, ts, value);
    }
  }
  if (!chunk.empty()) {
    if (header.sparse()) {
      File f = File::create_new(path / sframe_chunk_filename(next_chunk_id));
      f.write_at(0, chunk);
      f.start_writeback(0, int64_t(chunk.size()));
      f.close();
      index.push_back(next_chunk_id++);
    } else {
      // The disk takes each chunk while the next ones are made: close()'s
      // fsync then waits for the last ones only (a 537 MB array.npy's cp spent
      // 0.11 s of 1.2 s in that fsync).
      file.write_at(header_len + cbytes, chunk);
      file.start_writeback(header_len + cbytes, int64_t(chunk.size()));
      index.push_back(cbytes);
    }
    cbytes += int64_t(chunk.size());
  }
  nbytes += chunk_nbytes;
  if (first_nbytes < 0) first_nbytes = chunk_nbytes;
  if (last_nbytes >= 0 && last_nbytes != first_nbytes) sizes_vary = true;  // a short chunk was not the last
  if (chunk_nbytes > first_nbytes) sizes_vary = true;
  last_nbytes = chunk_nbytes;
  if (vlblocks < 0) vlblocks = h.vlblocks() ? 1 : 0;
}

void FrameWriter::set_vlmetalayer(const std::string& name, ByteSpan content) {
  Impl& w = *impl_;
  w.check_open();
  check_name(name, "vlmetalayer");
  Vlmetalayer layer{name, encode_vlmeta_chunk(content)};
  for (Vlmetalayer& v : w.vlmetalayers) {
    if (v.name == name) {
      v = std::move(layer);
      return;
    }
  }
  if (w.vlmetalayers.size() >= size_t(kMaxMetalayers))
    throw FormatError(w.path.string() + ": more than 16 vlmetalayers");
  w.vlmetalayers.push_back(std::move(layer));
}

void FrameWriter::close() { impl_->close(); }

void FrameWriter::Impl::write_header(int64_t frame_len) {
  FrameHeader& h = header;
  if (index.empty()) h.chunksize = -1;
  else if (fixed()) h.chunksize = params.chunksize;
  else h.chunksize = sizes_vary ? 0 : first_nbytes;
  h.general_flags = frame_general_flags(h.chunksize, vlblocks == 1);
  h.nbytes = nbytes;
  h.cbytes = cbytes;
  h.frame_len = frame_len;
  h.has_vlmetalayers = !vlmetalayers.empty();
  Bytes bytes = serialize_frame_header(h, params.metalayers);
  h.header_len = int32_t(bytes.size());
  file.write_at(0, bytes);
}

void FrameWriter::Impl::close() {
  if (closed) return;
  closed = true;
  const int64_t index_pos = header_len + (header.sparse() ? 0 : cbytes);
  int64_t pos = index_pos;
  if (nbytes > 0) {
    Bytes chunk = encode_index_chunk(index);
    file.write_at(pos, chunk);
    pos += int64_t(chunk.size());
  }
  Bytes trailer = serialize_frame_trailer(vlmetalayers);
  file.write_at(pos, trailer);
  pos += int64_t(trailer.size());
  write_header(pos);
  file.sync();
  file.close();
}

}  // namespace blosc2fs
