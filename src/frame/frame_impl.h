// Private state of Frame, shared by frame.cc (open, index) and frame_chunks.cc
// (chunk access). Not part of the library's interface.
#pragma once

#include <atomic>
#include <mutex>

#include "byte_source.h"
#include "frame.h"

namespace blosc2fs {

struct Frame::Impl {
  std::filesystem::path path;        // as given: the cframe file or the sframe directory (or their URL)
  std::filesystem::path frame_file;  // local frames: the cframe, or <dir>/chunks.b2frame; else empty
  std::shared_ptr<const ByteSource> file;          // the cframe, or the sframe's chunks.b2frame
  std::shared_ptr<const SourceDirectory> chunk_dir;  // sframe: where its chunk files are
  int64_t offset = 0;
  int64_t file_size = 0;
  FrameHeader header;
  int64_t trailer_len = 0;
  int64_t nchunks = 0;
  std::vector<Metalayer> metalayers;
  std::vector<Vlmetalayer> vlmetalayers;
  Bytes usermeta;  // older layouts: the usermeta chunk as stored (empty: none)
  DecodeRules decode_rules;  // from the layout, for every chunk of the frame

  // The decoded index. A repeat-value index chunk (c-blosc2's fill_special) is
  // kept as its one value, so such frames open in O(1) memory however large.
  std::vector<int64_t> index;
  bool index_uniform = false;
  int64_t uniform_entry = 0;

  // Variable-chunksize frames only: sizes (-1 = unknown) and data offsets,
  // filled on first need by reading the chunk headers once, up to the second
  // unknown size. A uniform index keeps one size for all its chunks instead
  // (it may claim millions of them).
  mutable std::once_flag sizes_once;
  mutable std::vector<int32_t> sizes;   // the chunks scanned
  mutable std::vector<int64_t> starts;  // data offsets up to the first unknown size (nchunks + 1 when none)
  mutable int32_t uniform_nbytes = -1;
  mutable int32_t largest_nbytes = 0;   // the largest size known

  // Fixed-chunksize frames only: the one chunk shorter than chunksize (-1: none),
  // found on first need. c-blosc2's reorder and insert can put it anywhere; it
  // is the last one unless the last chunk's own header says otherwise, so only
  // such frames pay for a scan of chunk headers.
  mutable std::once_flag short_once;
  mutable int64_t short_chunk = -1;

  // Where a stored chunk lives: the frame file itself (cframe) or its own chunk
  // file (sframe), with how many bytes the chunk may occupy there.
  struct Location {
    std::shared_ptr<const ByteSource> source;
    int64_t pos = 0;
    int64_t available = 0;
    const ByteSource& file() const { return *source; }
  };
  // `whole`: a remote chunk's whole stored extent is fetched now, in one
  // request, for a reader of all of it (not for one of its header only).
  Location locate(int64_t entry, bool whole = true) const;
  // A chunk of remote data is read: a sequential reader gets the next ones fetched ahead.
  void note_remote_read(int64_t n) const;
  static ChunkHeader read_header_at(const Location& loc);

  // `source`: the cframe, or the sframe's chunks.b2frame with its chunk files in `chunks`.
  void open(std::shared_ptr<const ByteSource> source, std::shared_ptr<const SourceDirectory> chunks, int64_t off);
  void load_index();
  // The typesize and b2nd block shape the plugin codecs and filters read.
  BlockGeometry plugin_block_geometry() const;

  int64_t raw_entry(int64_t n) const { return index_uniform ? uniform_entry : index[size_t(n)]; }
  void check_chunk_number(int64_t n) const;
  bool fixed_chunksize() const { return header.chunksize > 0; }
  int32_t fixed_chunk_nbytes(int64_t n) const;
  void locate_short_chunk() const;
  int64_t short_chunk_index() const {
    std::call_once(short_once, [this] { locate_short_chunk(); });
    return short_chunk;
  }
  int32_t stored_nbytes_or_unknown(int64_t n) const;  // -1: a special entry or an unreadable header
  void compute_sizes() const;
  void compute_uniform_sizes() const;
  void ensure_sizes() const { std::call_once(sizes_once, [this] { compute_sizes(); }); }
  int32_t nbytes_of(int64_t n) const;
  int64_t data_offset_of(int64_t n) const;
  // A remote cframe: how far the chunk at `entry` may extend (to the next stored
  // chunk or the index), so that it is fetched in one request.
  int64_t stored_extent(int64_t entry) const;
  void prefetch_after(int64_t n) const;
  mutable std::once_flag extents_once;
  mutable std::vector<int64_t> sorted_offsets;
  // The chunk read last: reading its successor is a sequential reader, whose
  // next chunks a remote frame fetches ahead (prefetch_chunks).
  mutable std::atomic<int64_t> last_read_chunk{-2};
  // Chunks below this were asked for already: a window that overlaps the last
  // one asks only for its new chunks. Without it, reads that the kernel's
  // readahead reorders prefetch chunks already read and decoded again, and
  // those extents, never read, fill the prefetch budget.
  mutable std::atomic<int64_t> prefetched_until{0};
  // One window at a time: two readers moving it at once skipped chunks (one
  // pushed `prefetched_until` past a window the budget had cut short), which
  // the reader then fetched itself, a few blocks per request.
  mutable std::mutex prefetch_mutex;
  // The header of a stored (non-special) chunk, with its bounds checked.
  ChunkHeader stored_chunk_header(int64_t n) const;
  // With `view`: viewed in place where the source holds the bytes in memory
  // (*view set, nothing written to buffer_for's memory).
  size_t raw_chunk_into(int64_t n, const Frame::ChunkBufferFn& buffer_for, HeldBytes* view = nullptr) const;
  Bytes raw_chunk(int64_t n) const;
  Bytes decoded_chunk(int64_t n) const;
  Bytes decode_viewed(int64_t n, const ChunkView& view) const;
  ChunkInfo info(int64_t n) const;
  std::string chunk_context(int64_t n) const;
};

}  // namespace blosc2fs
