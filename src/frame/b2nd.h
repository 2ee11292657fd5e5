// The b2nd (and legacy caterva) metalayer, and the N-d array layout: the C-order
// view of an array stored chunk by chunk, by byte ranges, read and written, for
// array.npy (and every other C-order view: one re-layout).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bytes.h"

namespace blosc2fs {

inline constexpr int kMaxDims = 16;

struct NdMeta {
  int version = 0;
  int ndim = 0;
  std::vector<int64_t> shape;
  std::vector<int32_t> chunkshape;
  std::vector<int32_t> blockshape;
  int dtype_format = 0;               // 0 = NumPy
  std::optional<std::string> dtype;   // absent in caterva metalayers
  bool legacy_caterva = false;
};

// Parses a b2nd (caterva = true: the legacy caterva) metalayer. Throws FormatError.
NdMeta parse_nd_meta(ByteSpan content, bool caterva);
Bytes serialize_b2nd_meta(const NdMeta& meta);

// The C-order view of an N-d array stored chunk by chunk.
class NdLayout {
 public:
  // Validates meta against the frame: typesize (authoritative), chunk nbytes,
  // nchunks. Throws FormatError on inconsistency.
  NdLayout(const NdMeta& meta, int32_t typesize, int64_t frame_nchunks, int32_t frame_chunksize);

  int64_t nitems() const;          // product of shape
  int64_t array_bytes() const;     // nitems * typesize
  int64_t nchunks() const;         // product of ceil(shape/chunkshape)
  int64_t chunk_bytes() const;     // product of extended chunkshape * typesize

  // Copies bytes [offset, offset + out.size()) of the C-order array into out.
  // `chunk_data(n)` returns the decompressed chunk n (chunk_bytes() bytes) and is
  // called only for chunks the range touches, each at most once per call; the
  // spans it returns must stay valid until read() returns. Copies whole runs
  // along the last dimension. Throws std::out_of_range for a range outside the
  // array, FormatError for a chunk shorter than chunk_bytes().
  void read(int64_t offset, MutableByteSpan out, const std::function<ByteSpan(int64_t)>& chunk_data) const;
  // The mirror of read(): scatters `in`, bytes [offset, offset + in.size()) of the
  // C-order array, into the decoded chunks. `chunk_for_write(n)` returns chunk n
  // decoded (chunk_bytes() bytes, items in block order) to be changed in place; it is
  // called only for chunks the range touches, each at most once per call, in the
  // order chunks_for_range() gives, and its spans must stay valid until write()
  // returns. Only the bytes of items in the range change (a range that starts or
  // ends inside an item changes only those bytes of it); padding is never written.
  // Throws std::out_of_range for a range outside the array, FormatError for a chunk
  // shorter than chunk_bytes().
  void write(int64_t offset, ByteSpan in, const std::function<MutableByteSpan(int64_t)>& chunk_for_write) const;
  // Which chunks read(offset, len) would touch, in order.
  std::vector<int64_t> chunks_for_range(int64_t offset, int64_t len) const;
  // The same chunks, by chunk number, each with the bytes of it that
  // read(offset, len) copies from: [first, end) of the decoded chunk, the runs'
  // span. A reader decodes only the blocks these hold (a page of a memory map,
  // not its whole chunk).
  struct ChunkRange {
    int64_t chunk = 0;
    int64_t first = 0;
    int64_t end = 0;
  };
  std::vector<ChunkRange> chunk_ranges(int64_t offset, int64_t len) const;
  // What read() and write() copy, run by run: bytes [offset, offset + len) of
  // the C-order array lie at run(chunk, chunk_offset, offset_in_range, n), in
  // order. Throws std::out_of_range for a range outside the array.
  void for_each_run(int64_t offset, int64_t len,
                    const std::function<void(int64_t, int64_t, int64_t, int64_t)>& run) const;
  // The bytes of chunk n that hold items of the array (the rest is padding,
  // which writes never reach).
  int64_t chunk_item_bytes(int64_t n) const;

  // The geometry, for readers that pick single items (preview.png): a chunk is
  // an extended chunkshape of blocks in C order, each block its items in C order.
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& chunkshape() const { return chunkshape_; }
  const std::vector<int64_t>& blockshape() const { return blockshape_; }
  const std::vector<int64_t>& chunks_per_dim() const { return chunks_per_dim_; }
  const std::vector<int64_t>& blocks_per_dim() const { return blocks_per_dim_; }
  int64_t block_items() const { return block_items_; }
  int32_t typesize() const { return typesize_; }

 private:
  template <class Emit>
  void walk(int64_t offset, int64_t len, Emit&& emit) const;

  std::vector<int64_t> shape_;
  std::vector<int64_t> chunkshape_, blockshape_, extchunkshape_, chunks_per_dim_, blocks_per_dim_;
  int32_t typesize_ = 0;
  int64_t nitems_ = 0, chunk_items_ = 0, block_items_ = 0, nchunks_ = 0;
};

// The .npy header (magic, version, dict, padding to a multiple of 64, newline)
// for an array of `shape` items of numpy type `descr` (e.g. "<f8", "|V4", or a
// structured descr list text as "[('a', '<i4'), ('b', '<f8')]"), byte for byte what
// numpy.lib.format writes: format 1.0, 2.0 past 64 KiB, 3.0 (UTF-8) when a field
// name has characters beyond latin-1.
std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape);

// A NumPy dtype string of a b2nd metalayer as a .npy descr. Takes the forms
// python-blosc2 writes (python-blosc2.md §2.3): dtype.str ("<f8", "<U6", "|S6",
// "<M8[ns]"), NumPy names ("float32", "datetime64[ns]"), and str(dtype) of
// structured dtypes: the list form "[('a', '<i4'), ('x', '<f4', (3,))]" (nested lists,
// (title, name) pairs) and the dict form "{'names': ..., 'formats': ..., 'offsets':
// ..., 'itemsize': N[, 'aligned': True]}", which becomes the list form with
// ('', '|Vn') entries for the gaps, fields in offset order. nullopt for anything else
// (object items, overlapping fields, text that is not such a literal).
struct NpyDtype {
  std::string descr;  // a plain string ("<f8") or a Python list literal ("[('a', '<i4')]")
  int64_t itemsize = 0;
};
std::optional<NpyDtype> npy_dtype(std::string_view dtype);

// A .npy file's header as numpy.lib.format writes it (formats 1.0, 2.0, 3.0).
struct NpyFileHeader {
  int64_t header_len = 0;   // bytes before the items
  NpyDtype dtype;           // descr as npy_dtype() spells it, so that equal dtypes compare equal
  bool fortran_order = false;
  std::vector<int64_t> shape;
};
// Parses the header at the start of `file` (at least its first header_len bytes;
// 10 bytes and then the length field tell how many). nullopt with *why set when
// it is not a .npy header NumPy would read, or holds object items.
std::optional<NpyFileHeader> parse_npy_file_header(ByteSpan file, std::string* why);
// The descr with the other byte order ("<f8" <-> ">f8"), for the simple kinds whose items
// are numbers (b, i, u, f, c, m, M with an item size above 1); nullopt for the rest.
std::optional<std::string> npy_descr_swapped(const std::string& descr);

// The item size of a dtype string: npy_dtype(dtype)->itemsize.
std::optional<int64_t> numpy_dtype_itemsize(std::string_view dtype);

// The descr array.npy shows: the metalayer's dtype (npy_dtype) when its item size
// equals the frame's typesize; "|V<typesize>" when it disagrees or cannot be a descr
// (*mismatch = true); without a dtype "|S<typesize>" for b2nd (what python-blosc2
// reads) and "|V<typesize>" for legacy caterva (*mismatch = false).
std::string npy_descr(const NdMeta& meta, int32_t typesize, bool* mismatch);

}  // namespace blosc2fs
