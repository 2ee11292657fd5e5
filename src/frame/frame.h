// Reading a Blosc2 frame: contiguous (one file) or sparse (a directory with
// chunks.b2frame and NNNNNNNN.chunk files), format versions 1 to 3.
// Opening reads only the header, the trailer and the index.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "byte_source.h"
#include "bytes.h"
#include "chunk_codec.h"
#include "chunk_format.h"

namespace blosc2fs {

inline constexpr int kFrameHeaderMinLen = 87;
inline constexpr int kFrameTrailerMinLen = 25;
// Older layouts (legacy-layouts.md): beta.1's 11-element header is the shortest
// header ever written; beta.2 - beta.5 end with a usermeta trailer of 30 bytes
// plus the usermeta chunk.
inline constexpr int kBeta1HeaderLen = 64;
inline constexpr int kBeta2HeaderMinLen = 92;
inline constexpr int kUsermetaTrailerMinLen = 30;
inline constexpr int kMaxMetalayers = 16;       // also the writer's limit for vlmetalayers
inline constexpr int kMaxMetalayerNameLen = 31;
inline constexpr int kMaxVlmetalayersRead = 8192;

// Which release's frame layout a frame has (legacy-layouts.md): how many
// elements its header holds, what follows its index, what its flags mean.
enum class FrameLayout : uint8_t {
  current,  // 14-element header, vlmetalayer trailer: c-blosc2 2.0.0-rc1 and later
  beta1,    // 11 or 12 elements, no trailer: 2.0.0-beta.1
  beta2,    // 13 elements, usermeta trailer version 0: 2.0.0-beta.2
  beta3_5,  // 13 elements, usermeta trailer version 1: 2.0.0-beta.3 to beta.5, snapshots to 2021-02
};
// The name frame.json gives the layout: "2.0.0-rc1+", "2.0.0-beta.1", "2.0.0-beta.2", "2.0.0-beta.3..5".
const char* frame_layout_name(FrameLayout layout);

// The fixed part of the header (first 87 bytes in the current layout), decoded.
// Older layouts fill the fields they have: no blocksize, frame type, splitmode
// or vlmetalayers; filters as their header reports them.
struct FrameHeader {
  int32_t header_len = 0;
  int64_t frame_len = 0;
  uint8_t general_flags = 0;  // bits 0-3 version, 4-5 offset size, 6 variable chunks, 7 VL-blocks
  uint8_t frame_type = 0;     // 0 contiguous, 1 sparse
  uint8_t codec_flags = 0;    // low nibble compcode, high nibble clevel
  uint8_t other_flags = 0;    // bits 0-1 splitmode - 1
  int64_t nbytes = 0;         // uncompressed_size
  int64_t cbytes = 0;         // compressed_size (the chunk region for a cframe)
  int32_t typesize = 0;
  int32_t blocksize = 0;
  int32_t chunksize = 0;      // -1 nothing appended yet, 0 variable
  int16_t nthreads_comp = 1;
  int16_t nthreads_decomp = 1;
  bool has_vlmetalayers = false;
  std::array<uint8_t, kMaxFilters> filters{};
  std::array<uint8_t, kMaxFilters> filters_meta{};
  uint8_t udcodec = 0;
  uint8_t compcode_meta = 0;
  uint8_t other_flags2 = 0;   // bit0 use_dict
  FrameLayout layout = FrameLayout::current;

  int version() const { return general_flags & 0x0F; }
  uint8_t compcode() const { return codec_flags & 0x0F; }
  int clevel() const { return codec_flags >> 4; }
  SplitMode splitmode() const { return SplitMode((other_flags & 0x03) + 1); }
  bool use_dict() const { return other_flags2 & 1; }
  bool sparse() const { return frame_type == 1; }
  bool legacy() const { return layout != FrameLayout::current; }
};

struct CodecInfo;
// The codec a frame's header names for its chunks (codec_registry): compcode
// 0-5, or for compcode 6 its udcodec byte, a plugin. The betas numbered snappy 3
// and lizard 6 and had no udcodec. Null when the header names no known codec.
const CodecInfo* frame_codec(const FrameHeader& h);
// Its name, else "codec-N" (N: the udcodec byte or the compcode).
std::string frame_codec_name(const FrameHeader& h);

struct Metalayer {
  std::string name;
  Bytes content;
};

struct Vlmetalayer {
  std::string name;
  Bytes stored;  // the complete Blosc chunk as stored in the trailer
};

// The decoded fixed header plus the metalayer section, parsed from `header`
// (at least header_len bytes), in any layout. The 13-element header of beta.2
// is that of beta.3 - beta.5: it gives layout beta3_5, and the trailer tells
// (parse_usermeta_trailer). Throws FormatError.
struct ParsedHeader {
  FrameHeader fixed;
  std::vector<Metalayer> metalayers;
};
ParsedHeader parse_frame_header(ByteSpan header);
// The layout the first bytes of a frame (at least 26) announce, from the
// fixarray size and general_flags; throws FormatError for a combination no
// release wrote. beta.2 is reported as beta3_5 (see above).
FrameLayout frame_header_layout(ByteSpan first_bytes);
// The shortest header of that layout.
int frame_header_min_len(FrameLayout layout);
// Parses a trailer (exactly trailer_len bytes) into its vlmetalayers.
std::vector<Vlmetalayer> parse_frame_trailer(ByteSpan trailer);
// Parses the usermeta trailer of beta.2 - beta.5 (exactly trailer_len bytes):
// which of the two it is, and the usermeta chunk it holds (empty when none).
struct UsermetaTrailer {
  FrameLayout layout = FrameLayout::beta3_5;
  Bytes usermeta;  // one complete Blosc chunk, as stored
};
UsermetaTrailer parse_usermeta_trailer(ByteSpan trailer);
// Serializers producing what c-blosc2 writes (see format-notes §1).
Bytes serialize_frame_header(const FrameHeader& fixed, const std::vector<Metalayer>& metalayers);
Bytes serialize_frame_trailer(const std::vector<Vlmetalayer>& vlmetalayers);

// Where a chunk is, from its index entry.
struct IndexEntry {
  int64_t raw = 0;                  // the stored int64 (offset, chunk-file number, or special)
  Special special = Special::none;  // zeros/nan/uninit for special entries (no chunk stored)
};

// Decodes a raw index entry the way c-blosc2 does (masks tested in the order
// zeros, uninit, nan). A negative entry matching none of them keeps
// special == none: it is invalid, and reading that chunk fails.
IndexEntry decode_index_entry(int64_t raw);
// The index entry c-blosc2 writes for a zeros/nan/uninit chunk stored without payload.
int64_t special_index_entry(Special kind);
// "%08X.chunk": the file holding chunk-file number `id` of a sparse frame.
std::string sframe_chunk_filename(int64_t id);

// What a chunk's header says, without decoding it.
struct ChunkInfo {
  IndexEntry entry;
  int32_t nbytes = 0;
  int32_t cbytes = 0;     // stored size (0 for special index entries)
  int32_t blocksize = 0;
  Special special = Special::none;  // from the index entry or the chunk header
  std::string codec;      // "lz4", "zstd", ... ("-" for special entries)
  std::string filters;    // "shuffle", "delta,shuffle", "none", "-" ...
};

// Identity of a frame's on-disk state, to notice other writers: the header's
// frame_len and the header file's size, times and inode (a rename-over changes it).
struct FrameStamp {
  int64_t frame_len = -1;
  int64_t file_size = -1;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
  bool operator==(const FrameStamp&) const = default;
};
// Reads the stamp of the frame whose header is in `header_file` (chunks.b2frame for a
// sparse frame) at `offset`. Never throws: a missing file gives the default stamp.
FrameStamp read_frame_stamp(const std::filesystem::path& header_file, int64_t offset = 0);

class Frame {
 public:
  // Opens FRAME read-only. `path` is a file (contiguous) or a directory (sparse).
  // `offset` is where the frame starts inside a file (c-blosc2's open_offset).
  // Throws FormatError / IoError with a one-line message naming the file.
  static std::unique_ptr<Frame> open(const std::filesystem::path& path, int64_t offset = 0);
  // The same from byte sources: a contiguous frame starting at `offset` of
  // `source`, or a sparse frame whose chunks.b2frame (its header at `offset`)
  // and chunk files are objects of `directory`. Messages name source->name().
  static std::unique_ptr<Frame> open(std::shared_ptr<const ByteSource> source, int64_t offset = 0);
  static std::unique_ptr<Frame> open_sparse(std::shared_ptr<const SourceDirectory> directory, int64_t offset = 0);
  ~Frame();

  // The path opened, or the source's name (a URL) for a frame opened from one.
  const std::filesystem::path& path() const;
  // Where its bytes come from (the cframe, or the sframe's chunks.b2frame).
  const ByteSource& source() const;
  bool sparse() const { return header().sparse(); }
  int64_t file_offset() const;
  const FrameHeader& header() const;
  int64_t trailer_len() const;
  int64_t nchunks() const;
  // Every index entry is the same (a repeat-value index chunk, as c-blosc2's
  // fill_special writes): such an index can claim any number of chunks.
  bool index_is_uniform() const;

  FrameLayout layout() const { return header().layout; }
  // How this frame's chunks must be decoded where their headers cannot say
  // (beta.1 and beta.2 frames: bitshuffle's old leftover rule).
  DecodeRules decode_rules() const;

  const std::vector<Metalayer>& metalayers() const;
  const std::vector<Vlmetalayer>& vlmetalayers() const;
  // Older layouts (beta.2 - beta.5): the one usermeta blob, a Blosc chunk as
  // stored (empty when the frame has none; current frames never have one).
  const Bytes& stored_usermeta() const;
  // The usermeta decompressed; nullopt when the frame has none. Throws FormatError if corrupt.
  std::optional<Bytes> usermeta() const;
  const Metalayer* find_metalayer(std::string_view name) const;
  const Vlmetalayer* find_vlmetalayer(std::string_view name) const;
  // A vlmetalayer's content, decompressed. Throws FormatError if corrupt.
  Bytes vlmetalayer_content(const Vlmetalayer& layer) const;

  IndexEntry index_entry(int64_t n) const;   // n < nchunks(), else throws std::out_of_range
  // Uncompressed size of chunk n: with a fixed chunksize, chunksize except for
  // short_chunk(), which holds nbytes % chunksize; with variable chunks, from
  // its header.
  int32_t chunk_nbytes(int64_t n) const;
  // Fixed chunksize: the one chunk shorter than chunksize, wherever it sits
  // (c-blosc2's reorder and insert can move it from the end); -1 when none or
  // when the chunksize is variable.
  int64_t short_chunk() const;
  // The largest chunk_nbytes known without reading more chunk headers than the
  // sizes scan does (0 when none is known): one pass, not a call per chunk.
  int32_t largest_chunk_nbytes() const;
  // Uncompressed byte offset of chunk n within `data` (prefix sums, computed once).
  int64_t chunk_data_offset(int64_t n) const;
  ChunkInfo chunk_info(int64_t n) const;
  // The stored chunk bytes (cbytes long); for a special index entry, the equivalent
  // 32-byte special chunk.
  Bytes read_raw_chunk(int64_t n) const;
  // The same bytes, read into memory that `buffer_for(cbytes)` provides (at
  // least cbytes writable bytes): a reader that recycles its buffers saves the
  // allocation and zero-fill of a new vector. Returns cbytes.
  using ChunkBufferFn = std::function<uint8_t*(size_t cbytes)>;
  size_t read_raw_chunk_into(int64_t n, const ChunkBufferFn& buffer_for) const;
  // The same, without the copy where the frame's source holds the stored
  // bytes in memory already (a remote frame's fetched extent): then the
  // answer views them; else it is empty and the bytes went to `buffer_for`'s
  // memory as above.
  HeldBytes read_raw_chunk_viewed(int64_t n, const ChunkBufferFn& buffer_for) const;
  // Decompressed chunk n (chunk_nbytes(n) bytes).
  Bytes read_chunk(int64_t n) const;
  // Chunk n decoded from `view` of its stored bytes (read_raw_chunk), for a
  // caller that also walks the view's blocks: read_chunk's size checks, so the
  // chunk's own header never sizes an allocation the frame does not allow.
  Bytes decode_chunk(int64_t n, const ChunkView& view) const;
  // Where chunk n's stored bytes are, for a reader that fetches them piece by
  // piece (a big chunk of remote data): its source, the position of its first
  // byte there and its validated header. nullopt for a special index entry.
  struct StoredChunkPlace {
    std::shared_ptr<const ByteSource> source;
    int64_t pos = 0;
    ChunkHeader header;
  };
  // Not counted as a read of chunk n (see note_whole_chunk_read). nullopt
  // too, without a request, for a chunk stored in fewer than `min_stored`
  // bytes (whoever asked reads it whole).
  std::optional<StoredChunkPlace> stored_chunk_place(int64_t n, int64_t min_stored = 0) const;
  // Chunk n was read whole by a reader that fetched it piece by piece (it
  // went on through the chunk): a remote frame read in chunk order then
  // fetches the next chunks ahead, as after a whole read. A reader of a few
  // blocks of each chunk (a row band, a column) is not streaming, and
  // fetching its next chunks whole would move what it never reads.
  void note_whole_chunk_read(int64_t n) const;

  using Stamp = FrameStamp;
  Stamp stamp() const;  // read now from the disk; the default stamp for a frame not opened by path

 private:
  Frame();
  struct Impl;
  // Returns the first chunk the prefetch budget refused, else first + count.
  static int64_t prefetch_window(const Impl& impl, int64_t first, int64_t count);
  std::unique_ptr<Impl> impl_;
};

}  // namespace blosc2fs
