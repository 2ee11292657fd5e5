// The uncommitted state of the frame's chunks, as chunks/N and data show it
// between a write() and the commit at close: the chunks written since the
// last commit, held whole and decompressed, and pending changes of the chunk
// count (truncation, appended chunks).
//
// Chunks [0, keep) are the committed frame's unless written; every chunk in
// [keep, count) is held here. Zero chunks made by extending a file (truncate
// -s, a write past the end) hold no memory until written into. Held bytes are
// pinned in the chunk cache's budget, so the cache evicts clean chunks for them.
//
// A committed chunk written in place is held by region: its buffer takes the
// bytes writes supply and records which (ByteRanges); the committed chunk is
// decoded only when something needs a byte no write supplied (a commit of a
// chunk not written whole, a resize), and then only to fill those gaps. Reads
// take written ranges from the buffer and the rest from the committed chunk.
// A chunk written whole is committed from the written bytes alone.
//
// Not thread-safe: the Volume serializes every use.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "byte_ranges.h"
#include "bytes.h"
#include "chunk_cache.h"
#include "read_pieces.h"

namespace blosc2fs {

// The committed chunks an overlay sits on.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  virtual int64_t nchunks() const = 0;
  virtual int64_t chunk_size(int64_t n) const = 0;
  // Offset of chunk n within data; n == nchunks(): the total size.
  virtual int64_t chunk_offset(int64_t n) const = 0;
  // Decompressed bytes [offset, offset + len) of chunk n, clipped to the
  // chunk, in memory that `keep` holds.
  virtual ByteSpan view(int64_t n, int64_t offset, size_t len, std::shared_ptr<const void>& keep) = 0;
  // The same, decoding only the blocks the range lies in however much of the
  // chunk it is (a reader of half a chunk or more gets all of it decoded):
  // what a commit needs of a chunk the writes covered in part.
  virtual ByteSpan view_exact(int64_t n, int64_t offset, size_t len, std::shared_ptr<const void>& keep) {
    return view(n, offset, len, keep);
  }
  // A commit holds every byte of chunk n now: the committed chunk's decoded
  // bytes can go before it compresses (a reader of them decodes them again).
  virtual void drop_decoded(int64_t /*n*/) {}
  // Chunk n's decoded bytes in their own buffer, for a chunk about to be
  // written over to keep, when the cache has all of them and nobody reads
  // them (ChunkCache::take_decoded); empty otherwise.
  virtual PooledBuffer take_decoded(int64_t /*n*/) { return {}; }
  // The whole chunk, in a buffer from `pool`.
  virtual PooledBuffer load(int64_t n, BufferPool& pool) = 0;
};

class ChunkOverlay {
 public:
  // A write past the end or a truncation adds at most this many chunks at once
  // (EFBIG): each is held until the commit (a million cost about 330 MB).
  static constexpr int64_t kMaxChunksAddedAtOnce = int64_t(1) << 20;

  struct Limits {
    int64_t max_chunk = 0;  // the largest a chunk may become (the chunksize of a fixed frame)
    int64_t grow_to = 0;    // what data appends fill the last chunk to, and new chunks' size
    // An N-d array: its chunk count is what its shape needs, so chunks are
    // neither added nor removed (EPERM) and data neither grows (EFBIG) nor is
    // cut (EINVAL); the editor refuses a chunk of another size at the commit.
    bool fixed_count = false;
  };
  struct Held {
    // From the cache's pool: a chunk's worth of fresh memory costs a page
    // fault per 4 KiB, the buffer a decoded chunk leaves behind costs none.
    PooledBuffer bytes;  // empty when `zeros`
    int64_t size = 0;
    bool zeros = false;
    // Held by region: `bytes` holds the committed chunk's bytes only in
    // `written`, until complete() fills the gaps. nullopt: every byte is here.
    std::optional<ByteRanges> written;
    // The bytes writes can reach (an N-d array's chunk: its items, not its
    // padding). Once all are written only the rest is read from the committed
    // chunk, from the blocks that hold it (none for most chunks).
    int64_t reachable = 0;
    // Dropped at the commit if every byte written equals the committed one: a
    // memory map written back by whole pages rewrites items nobody changed.
    bool only_if_changed = false;
    // Of a chunk `only_if_changed` that took the committed chunk's decoded
    // bytes whole (no `written`): a write changed a byte.
    bool differs = false;
    // Every write came through hold_region from a writer whose file's pages
    // in the kernel took its bytes (array.npy, not opened for direct I/O):
    // committing the chunk leaves those pages right.
    bool written_through_pages = false;
    // Every byte is in `bytes`.
    bool whole() const { return !written || written->covered() >= size; }
    // Copies `data` to byte `at` (within size) and records it.
    void put(int64_t at, ByteSpan data);
  };
  // The edits a commit stages, in the order the editor needs them.
  struct Batch {
    int64_t truncate_to = -1;  // truncate_chunks(truncate_to) first, when >= 0
    std::vector<std::pair<int64_t, const Held*>> replace;
    std::vector<std::pair<int64_t, const Held*>> append;
    int64_t nchunks_after = 0;  // the frame's chunk count once the batch is in
    bool empty() const { return truncate_to < 0 && replace.empty() && append.empty(); }
  };

  explicit ChunkOverlay(ChunkCache& cache) : cache_(cache) {}
  ~ChunkOverlay();
  ChunkOverlay(const ChunkOverlay&) = delete;
  ChunkOverlay& operator=(const ChunkOverlay&) = delete;

  // Forgets everything held and sits on `source` (a new or reloaded frame).
  void reset(const ChunkSource& source, Limits limits);
  // The committed frame changed without touching the chunks held (a layer
  // commit, a compaction): keeps the pending state.
  void rebase(const ChunkSource& source, Limits limits);

  bool clean() const { return held_.empty() && keep_ == base_count_ && count_ == base_count_; }
  int64_t count() const { return count_; }
  bool holds(int64_t n) const { return held_.count(n) > 0; }
  int64_t chunk_size(const ChunkSource& src, int64_t n) const;
  int64_t offset(const ChunkSource& src, int64_t n) const;
  int64_t data_size(const ChunkSource& src) const { return offset(src, count_); }
  // How many held chunks have bytes, and how many bytes.
  size_t materialized_chunks() const { return materialized_chunks_; }
  uint64_t materialized_bytes() const { return materialized_bytes_; }
  const Limits& limits() const { return limits_; }

  // The chunk holding byte `offset` of data (offset below data_size()).
  int64_t chunk_at(const ChunkSource& src, int64_t offset) const { return locate(src, offset); }

  // Up to `len` bytes of chunks/N or data from `offset`, appended to `out`.
  void gather_chunk(ChunkSource& src, int64_t n, int64_t offset, size_t len, ReadPieces& out) const;
  void gather_data(ChunkSource& src, int64_t offset, size_t len, ReadPieces& out) const;
  size_t read_chunk(ChunkSource& src, int64_t n, int64_t offset, MutableByteSpan out) const;
  size_t read_data(ChunkSource& src, int64_t offset, MutableByteSpan out) const;

  // Edits. Sizes beyond the limits throw FsError (EFBIG, EINVAL; EPERM: a
  // change of a fixed chunk count).
  void write_chunk(ChunkSource& src, int64_t n, int64_t offset, ByteSpan data);
  void resize_chunk(ChunkSource& src, int64_t n, int64_t size);
  void append_chunk();                  // a new empty chunk at count()
  void truncate_count(int64_t count);   // drop chunks from the end
  void write_data(ChunkSource& src, int64_t offset, ByteSpan data);
  void resize_data(ChunkSource& src, int64_t size);
  // Replaces chunk n's content with one whole buffer.
  void set_chunk(int64_t n, ByteSpan bytes);
  // Chunk n held by region, to take the bytes an N-d array's write supplies
  // (Held::put): not loaded from the committed chunk, unless the cache has
  // it decoded whole and unread (a memory map's reads brought it in): then
  // it takes those bytes with their memory, and is held whole. `reachable`:
  // the bytes writes can reach (Held). A chunk held already is returned as it
  // is (zeros made bytes). `through_pages`: the writer's bytes are in its
  // file's pages in the kernel (Held::written_through_pages).
  Held& hold_region(ChunkSource& src, int64_t n, int64_t reachable, bool only_if_changed, bool through_pages = false);
  // Chunk n as held; null when it is not (the committed chunk shows).
  const Held* held(int64_t n) const;
  // Fills the gaps of the chunks held by region that a commit of batch(skip)
  // stages, each decoded at most once, and drops those `only_if_changed` whose
  // written bytes are the committed ones. Returns how many chunks it read from.
  int64_t complete(ChunkSource& src, std::optional<int64_t> skip = std::nullopt);

  // Every pending edit but chunk `skip` (the chunk a big write is still
  // filling) and, when skip is an appended chunk or the frame's last one, the
  // appended chunks after it.
  Batch batch(std::optional<int64_t> skip = std::nullopt) const;
  // The batch is in the frame, which now has `committed` chunks.
  void committed(const Batch& batch, int64_t committed);
  // Drops every pending edit (a failed commit).
  void discard();

 private:
  Held& hold(ChunkSource& src, int64_t n);  // loads chunk n when not held; materializes zeros; completes
  // Fills h's gaps from the committed chunk n; false when h is `only_if_changed`,
  // its reachable bytes were not all written, and no written byte differs.
  bool fill_gaps(ChunkSource& src, int64_t n, Held& h) const;
  void erase_held(std::map<int64_t, Held>::iterator it);
  void resize_bytes(Held& h, int64_t size);
  void charge(int64_t delta_bytes, int delta_chunks);
  int64_t locate(const ChunkSource& src, int64_t offset) const;
  void extend_zeros(ChunkSource& src, int64_t bytes);

  ChunkCache& cache_;
  Limits limits_;
  int64_t base_count_ = 0;
  int64_t keep_ = 0;
  int64_t count_ = 0;
  std::map<int64_t, Held> held_;
  size_t materialized_chunks_ = 0;
  uint64_t materialized_bytes_ = 0;
};

}  // namespace blosc2fs
