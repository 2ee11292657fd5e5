// Opening a frame: header, trailer, metalayers, and the decoded index
// (format-notes §1.3, §1.4, §2).
#include "frame.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "b2nd.h"
#include "chunk_codec.h"
#include "error.h"
#include "frame_impl.h"
#include "unique_fd.h"

namespace blosc2fs {

namespace {

constexpr int64_t kMaxNchunks = INT32_MAX / 8;
// An index decodes to nchunks * 8 bytes, which a tiny chunk can claim (zero
// runs cost nothing). Allow what a real frame of this file size could need.
constexpr int64_t kIndexBytesFloor = int64_t(64) << 20;
constexpr int64_t kIndexBytesPerFileByte = 1024;

}  // namespace

IndexEntry decode_index_entry(int64_t raw) {
  IndexEntry e;
  e.raw = raw;
  if (raw >= 0) return e;
  uint64_t bits = uint64_t(raw);
  if (bits & (uint64_t(1) << 56)) e.special = Special::zeros;
  else if (bits & (uint64_t(4) << 56)) e.special = Special::uninit;
  else if (bits & (uint64_t(2) << 56)) e.special = Special::nan;
  return e;
}

int64_t special_index_entry(Special kind) {
  switch (kind) {
    case Special::zeros:
    case Special::nan:
    case Special::uninit:
      return int64_t((uint64_t(0x80) | uint64_t(kind)) << 56);
    default:
      throw FormatError(std::string("no index entry encodes special kind '") + special_name(kind) + "'");
  }
}

std::string sframe_chunk_filename(int64_t id) {
  if (id < 0 || id > int64_t(UINT32_MAX)) throw FormatError("chunk-file number " + str(id) + " is out of range");
  char name[32];
  std::snprintf(name, sizeof name, "%08X.chunk", unsigned(id));
  return name;
}

Frame::Frame() : impl_(std::make_unique<Impl>()) {}
Frame::~Frame() = default;

std::unique_ptr<Frame> Frame::open(const std::filesystem::path& path, int64_t offset) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("cannot open " + path.string());
  std::unique_ptr<Frame> frame;
  if (S_ISDIR(st.st_mode)) {
    frame = open_sparse(open_local_directory(path), offset);
    frame->impl_->frame_file = path / "chunks.b2frame";
  } else {
    frame = open(open_local_file(path), offset);
    frame->impl_->frame_file = path;
  }
  frame->impl_->path = path;
  return frame;
}

std::unique_ptr<Frame> Frame::open(std::shared_ptr<const ByteSource> source, int64_t offset) {
  const std::string name = source->name();
  std::unique_ptr<Frame> frame(new Frame());
  frame->impl_->path = name;
  try {
    frame->impl_->open(std::move(source), nullptr, offset);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(name + ": " + e.what());
  } catch (const FormatError& e) {
    throw FormatError(name + ": " + e.what());
  }
  return frame;
}

std::unique_ptr<Frame> Frame::open_sparse(std::shared_ptr<const SourceDirectory> directory, int64_t offset) {
  const std::string name = directory->name();
  std::shared_ptr<const ByteSource> header_file = directory->open("chunks.b2frame");
  std::unique_ptr<Frame> frame(new Frame());
  frame->impl_->path = name;
  try {
    frame->impl_->open(std::move(header_file), std::move(directory), offset);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(name + ": " + e.what());
  } catch (const FormatError& e) {
    throw FormatError(name + ": " + e.what());
  }
  return frame;
}

void Frame::Impl::open(std::shared_ptr<const ByteSource> source, std::shared_ptr<const SourceDirectory> chunks,
                       int64_t off) {
  offset = off;
  const bool sparse = chunks != nullptr;
  file = std::move(source);
  chunk_dir = std::move(chunks);
  file_size = file->size();
  if (off < 0 || off > file_size) throw FormatError("frame offset " + str(off) + " is outside the file");
  const int64_t available = file_size - off;
  if (available < kBeta1HeaderLen)
    throw FormatError("not a Blosc2 frame: " + str(available) + " bytes, shorter than a frame header");

  Bytes fixed = file->read_bytes(off, size_t(std::min<int64_t>(available, kFrameHeaderMinLen)), "frame header");
  const FrameLayout layout = frame_header_layout(fixed);
  const int64_t header_len = int32_t(load_be32(fixed.data() + 11));
  const int64_t frame_len = int64_t(load_be64(fixed.data() + 16));
  // beta.1 frames end with their index; every later layout with a trailer.
  const bool has_trailer = layout != FrameLayout::beta1;
  const int64_t min_header = frame_header_min_len(layout);
  const int64_t min_trailer = layout == FrameLayout::current ? kFrameTrailerMinLen
                              : has_trailer                  ? kUsermetaTrailerMinLen
                                                             : 0;
  if (frame_len < min_header + min_trailer)
    throw FormatError("frame length " + str(frame_len) + " is too small");
  if (frame_len > available)
    throw FormatError("frame length " + str(frame_len) + " exceeds the file (" + str(available) +
                      " bytes from the frame start)");

  if (has_trailer) {
    Bytes tail = file->read_bytes(off + frame_len - kFrameTrailerMinLen, kFrameTrailerMinLen, "trailer");
    if (tail[2] != 0xCE)
      throw FormatError("no trailer: byte " + str(frame_len - 23) + " of the frame is not the CE trailer-length marker");
    trailer_len = load_be32(tail.data() + 3);
    if (trailer_len < min_trailer || trailer_len > std::min<int64_t>(INT32_MAX, frame_len - min_header))
      throw FormatError("trailer length " + str(trailer_len) + " is out of range");
  }
  if (header_len < min_header || header_len > frame_len - trailer_len)
    throw FormatError("header length " + str(header_len) + " is out of range (" +
                      (has_trailer ? "trailer starts at " : "the frame ends at ") + str(frame_len - trailer_len) +
                      ")");

  ParsedHeader parsed = parse_frame_header(file->read_bytes(off, size_t(header_len), "frame header"));
  header = parsed.fixed;
  // c-blosc2 reads the trailer of a frame without data right after the header,
  // not from frame_len; follow it so that we read such frames as it does
  // (its betas did the same with the usermeta trailer).
  const int64_t trailer_start = header.nbytes == 0 ? header_len : frame_len - trailer_len;
  metalayers = std::move(parsed.metalayers);
  if (header.frame_type != (sparse ? 1 : 0))
    throw FormatError("frame type " + str(header.frame_type) + (sparse ? " in a directory (sparse frames are 1)"
                                                                        : " in a file (contiguous frames are 0)"));
  if (header.layout == FrameLayout::current) {
    vlmetalayers = parse_frame_trailer(file->read_bytes(off + trailer_start, size_t(trailer_len), "trailer"));
  } else if (has_trailer) {
    if (trailer_start + trailer_len > frame_len)
      throw FormatError("usermeta trailer of " + str(trailer_len) + " bytes at byte " + str(trailer_start) +
                        " runs past the frame's end (" + str(frame_len) + ")");
    UsermetaTrailer parsed_trailer =
        parse_usermeta_trailer(file->read_bytes(off + trailer_start, size_t(trailer_len), "usermeta trailer"));
    header.layout = parsed_trailer.layout;
    usermeta = std::move(parsed_trailer.usermeta);
  }
  // beta.3 and beta.4 used the old rule too, but cannot be told apart from
  // beta.5 (the new rule) by their frames: they are read with the new one.
  decode_rules.old_bitshuffle_leftovers =
      header.layout == FrameLayout::beta1 || header.layout == FrameLayout::beta2;
  decode_rules.geometry = plugin_block_geometry();
  load_index();
}

BlockGeometry Frame::Impl::plugin_block_geometry() const {
  BlockGeometry g;
  g.typesize = header.typesize;
  // The plugins read the "b2nd" metalayer only, never "caterva" (plugin-codecs.md §0).
  for (const Metalayer& m : metalayers) {
    if (m.name != "b2nd") continue;
    try {
      const NdMeta nd = parse_nd_meta(m.content, false);
      if (nd.ndim < 1 || nd.ndim > kMaxBlockDims || nd.blockshape.size() != size_t(nd.ndim)) break;
      g.ndim = nd.ndim;
      for (int i = 0; i < nd.ndim; ++i) g.blockshape[size_t(i)] = nd.blockshape[size_t(i)];
    } catch (const FormatError&) {
      // A b2nd metalayer that does not parse leaves the plugins without a block
      // shape: their chunks then fail to decode with a message, like c-blosc2's.
    }
    break;
  }
  return g;
}

void Frame::Impl::load_index() {
  const FrameHeader& h = header;
  const bool sparse = h.sparse();
  if (h.nbytes == 0) return;  // c-blosc2 writes no index then: the trailer follows the header
  if (h.chunksize < 0)
    throw FormatError("chunksize " + str(h.chunksize) + " with " + str(h.nbytes) + " bytes of data");
  if (h.chunksize > 0) {
    nchunks = h.nbytes / h.chunksize + (h.nbytes % h.chunksize != 0);
    if (nchunks > kMaxNchunks) throw FormatError(str(nchunks) + " chunks, more than the format allows");
  }

  const int64_t trailer_start = h.frame_len - trailer_len;
  const int64_t index_pos = h.header_len + (sparse ? 0 : h.cbytes);
  if (!sparse && h.cbytes > trailer_start - h.header_len)
    throw FormatError("compressed size " + str(h.cbytes) + " exceeds the space between header and trailer");
  const int64_t index_len = trailer_start - index_pos;
  const std::string context = "index chunk at byte " + str(index_pos) + ": ";
  if (index_len < kBlosc1HeaderSize) throw FormatError(context + "only " + str(index_len) + " bytes for it");

  Bytes head = file->read_bytes(offset + index_pos, size_t(std::min<int64_t>(index_len, kExtendedHeaderSize)),
                               "index chunk");
  ChunkHeader ih = with_error_context(context, [&] { return parse_chunk_header(head); });
  if (ih.cbytes > index_len)
    throw FormatError(context + "its " + str(ih.cbytes) + " bytes exceed the " + str(index_len) + " available");
  Bytes chunk = file->read_bytes(offset + index_pos, size_t(ih.cbytes), "index chunk");
  ChunkView view = with_error_context(context, [&] { return ChunkView(chunk, decode_rules); });

  if (h.chunksize == 0) {
    if (view.nbytes() % 8 != 0) throw FormatError(context + str(view.nbytes()) + " bytes is not a multiple of 8");
    nchunks = view.nbytes() / 8;
  } else if (int64_t(view.nbytes()) != nchunks * 8) {
    throw FormatError(context + "holds " + str(view.nbytes() / 8) + " entries for " + str(nchunks) + " chunks");
  }

  const ChunkHeader& vh = view.header();
  ByteSpan value(chunk.data() + std::min<size_t>(chunk.size(), kExtendedHeaderSize),
                 chunk.size() - std::min<size_t>(chunk.size(), kExtendedHeaderSize));
  if (vh.special() == Special::zeros) {
    index_uniform = true;
    uniform_entry = 0;
  } else if (vh.special() == Special::value && (value.size() == 1 || value.size() == 2 || value.size() == 4 ||
                                                value.size() == 8)) {
    uint8_t pattern[8];
    for (size_t i = 0; i < 8; ++i) pattern[i] = value[i % value.size()];
    index_uniform = true;
    uniform_entry = int64_t(load_le64(pattern));
  } else {
    if (nchunks * 8 > std::max(kIndexBytesFloor, file_size * kIndexBytesPerFileByte))
      throw FormatError(context + str(nchunks) + " entries is implausible for a file of " + str(file_size) +
                        " bytes");
    index.resize(size_t(nchunks));
    MutableByteSpan out(reinterpret_cast<uint8_t*>(index.data()), index.size() * 8);
    with_error_context(context, [&] { view.decode(out); });
    for (int64_t& e : index) e = int64_t(load_le64(reinterpret_cast<const uint8_t*>(&e)));
  }

  // c-blosc2 validates every stored offset at open; chunk headers are read lazily.
  auto check = [&](int64_t n, int64_t e) {
    if (e < 0) return;
    if (sparse) {
      if (e > int64_t(UINT32_MAX))
        throw FormatError("index entry " + str(n) + ": chunk-file number " + str(e) + " is out of range");
    } else if (e > h.cbytes - kExtendedHeaderSize) {
      throw FormatError("index entry " + str(n) + ": offset " + str(e) + " leaves no room for a chunk in the " +
                        str(h.cbytes) + "-byte chunk region");
    }
  };
  if (index_uniform) {
    if (nchunks > 0) check(0, uniform_entry);
  } else {
    for (int64_t n = 0; n < nchunks; ++n) check(n, index[size_t(n)]);
  }
}

const std::filesystem::path& Frame::path() const { return impl_->path; }
const ByteSource& Frame::source() const { return *impl_->file; }
int64_t Frame::file_offset() const { return impl_->offset; }
const FrameHeader& Frame::header() const { return impl_->header; }
int64_t Frame::trailer_len() const { return impl_->trailer_len; }
int64_t Frame::nchunks() const { return impl_->nchunks; }
const std::vector<Metalayer>& Frame::metalayers() const { return impl_->metalayers; }
const std::vector<Vlmetalayer>& Frame::vlmetalayers() const { return impl_->vlmetalayers; }
const Bytes& Frame::stored_usermeta() const { return impl_->usermeta; }
DecodeRules Frame::decode_rules() const { return impl_->decode_rules; }

const Metalayer* Frame::find_metalayer(std::string_view name) const {
  for (const Metalayer& m : impl_->metalayers)
    if (m.name == name) return &m;
  return nullptr;
}

const Vlmetalayer* Frame::find_vlmetalayer(std::string_view name) const {
  for (const Vlmetalayer& v : impl_->vlmetalayers)
    if (v.name == name) return &v;
  return nullptr;
}

namespace {

// A metadata value stored as one Blosc chunk (a vlmetalayer, the usermeta),
// decompressed, with its claimed size capped by what it stores.
Bytes decompress_metadata_chunk(ByteSpan stored, DecodeRules rules) {
  ChunkView view(stored, rules);
  if (size_t(view.header().cbytes) != stored.size())
    throw FormatError("stored " + str(int64_t(stored.size())) + " bytes but the chunk says " +
                      str(view.header().cbytes));
  // A special chunk claims any size for free; metadata is never that large.
  if (int64_t(view.nbytes()) > std::max(kIndexBytesFloor, int64_t(stored.size()) * 4096))
    throw FormatError("claims " + str(view.nbytes()) + " bytes, implausible for " + str(int64_t(stored.size())) +
                      " stored");
  Bytes out(size_t(view.nbytes()));
  view.decode(out);
  return out;
}

}  // namespace

Bytes Frame::vlmetalayer_content(const Vlmetalayer& layer) const {
  return with_error_context(impl_->path.string() + ": vlmetalayer '" + layer.name + "': ",
                            [&] { return decompress_metadata_chunk(layer.stored, {}); });
}

std::optional<Bytes> Frame::usermeta() const {
  if (impl_->usermeta.empty()) return std::nullopt;
  return with_error_context(impl_->path.string() + ": usermeta: ",
                            [&] { return decompress_metadata_chunk(impl_->usermeta, impl_->decode_rules); });
}

IndexEntry Frame::index_entry(int64_t n) const {
  impl_->check_chunk_number(n);
  return decode_index_entry(impl_->raw_entry(n));
}

FrameStamp read_frame_stamp(const std::filesystem::path& header_file, int64_t offset) {
  FrameStamp s;
  const UniqueFd fd(::open(header_file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return s;  // gone: differs from any loaded state
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0) {
    s.file_size = int64_t(st.st_size);
    s.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    s.ctime_ns = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
    s.inode = st.st_ino;
  }
  uint8_t len[8];
  if (::pread(fd.get(), len, sizeof len, off_t(offset + 16)) == ssize_t(sizeof len)) s.frame_len = int64_t(load_be64(len));
  return s;
}

Frame::Stamp Frame::stamp() const {
  return impl_->frame_file.empty() ? FrameStamp{} : read_frame_stamp(impl_->frame_file, impl_->offset);
}

}  // namespace blosc2fs
