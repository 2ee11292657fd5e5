// Decompressed chunks under a byte budget, shared by every reader of the mount.
//
// An entry holds the stored chunk and, once something asks for decompressed
// bytes, a buffer of the chunk's nbytes with a bitmap of decoded blocks: a small
// read of a big chunk decodes only the blocks it touches. Readers of the same
// chunk wait on that entry's mutex, so a chunk is loaded once however many
// readers miss it at the same time; the map mutex is held only to find, insert
// and evict entries, never while loading or decoding. Entries are handed out as
// shared_ptr, so eviction never frees bytes a reader is still copying.
//
// Whole-file readers go through the kernel's page cache, which keeps what
// they read: once every byte of a decoded chunk has been handed out, the entry
// leaves the cache ("retired") and its buffers go back to the buffer pool for
// the next chunk. A sequential scan thus cycles a few buffers instead of
// filling the budget, and chunks read in small pieces stay until all of them
// have been read.
#pragma once

#include <cstdint>
#include <atomic>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "buffer_pool.h"
#include "bytes.h"

namespace blosc2fs {

// Decodes one stored chunk block by block. Built from the stored bytes, which
// outlive it. decode_block() must be safe to call from several threads at
// once for different blocks.
class ChunkDecoder {
 public:
  virtual ~ChunkDecoder() = default;
  virtual int64_t nbytes() const = 0;
  virtual int32_t nblocks() const = 0;
  virtual int64_t block_offset(int32_t j) const = 0;
  virtual int32_t block_size(int32_t j) const = 0;
  // Block j > 0 can only be decoded with block 0 decoded as reference (delta).
  virtual bool needs_reference_block() const = 0;
  virtual void decode_block(int32_t j, MutableByteSpan out, ByteSpan reference) const = 0;
  // Blocks first..last are about to be decoded: a decoder over a chunk loaded
  // in part gets their stored bytes now, in one request.
  virtual void prepare_blocks(int32_t /*first*/, int32_t /*last*/) const {}
};

// Fills a chunk loaded in part (a big chunk of remote data, of which a small
// read needs a few blocks): makes stored bytes [from, to) present in the
// buffer it was made for. Thread-safe. Throws IoError.
class StoredChunkFiller {
 public:
  virtual ~StoredChunkFiller() = default;
  virtual void fill(int64_t from, int64_t to) = 0;
};

// What a read wants of a chunk: decompressed bytes [offset, offset + length),
// or stored bytes when `stored`.
struct ChunkWish {
  int64_t offset = 0;
  int64_t length = 0;
  bool stored = false;
};

// A stored chunk, whole (filler null) or in part (only what its decoder reads
// up front is present; the filler brings the rest).
struct LoadedChunk {
  PooledBuffer stored;
  std::shared_ptr<StoredChunkFiller> filler;
};

// Where the cache gets chunks from: the frame, or a fake in unit tests.
class ChunkLoader {
 public:
  virtual ~ChunkLoader() = default;
  // The stored chunk n, in a buffer from `pool`. Throws FormatError / IoError.
  virtual PooledBuffer load(int64_t n, BufferPool& pool) = 0;
  // Validates `stored` and returns its decoder. Throws FormatError / UnsupportedError.
  virtual std::unique_ptr<ChunkDecoder> decoder(int64_t n, ByteSpan stored) = 0;
  // Chunk n for a read that wants `wish` of it: whole, or only in part when
  // that serves the read with fewer bytes fetched.
  virtual LoadedChunk load_for(int64_t n, BufferPool& pool, const ChunkWish& /*wish*/) { return {load(n, pool), nullptr}; }
  // The decoder of a chunk loaded in part, fetching blocks through `filler`.
  virtual std::unique_ptr<ChunkDecoder> partial_decoder(int64_t n, ByteSpan stored,
                                                        std::shared_ptr<StoredChunkFiller> /*filler*/) {
    return decoder(n, stored);
  }
};

// A fully decoded chunk, pinned in memory while the shared_ptr lives.
class CachedChunk {
 public:
  virtual ~CachedChunk() = default;
  virtual ByteSpan data() const = 0;
};

struct ChunkCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;  // entries dropped for room, and retired ones
  uint64_t bytes = 0;    // stored + decoded + dirty bytes currently charged
  uint64_t budget = 0;
  uint64_t entries = 0;
  uint64_t dirty = 0;    // of `bytes`: written chunks not yet committed (never evicted)
  // Blocks decompressed since the mount started, and their bytes: how much of
  // a chunk a small read (or a preview.png) really decoded.
  uint64_t decoded_blocks = 0;
  uint64_t decoded_bytes = 0;
  // "hits=.. misses=.. evictions=.. bytes=.. budget=.. entries=.. dirty=.. decoded_blocks=.. decoded_bytes=.."
  std::string text() const;
};

class ChunkCache {
 public:
  // Released buffers kept for reuse: at most this, and at most the budget.
  static constexpr uint64_t kPoolBytes = 64 << 20;

  // `pool`: where buffers are reused (null: a pool of its own).
  ChunkCache(ChunkLoader& loader, uint64_t budget_bytes, std::shared_ptr<BufferPool> pool = nullptr);
  // Where its buffers come from and go back to; the overlay's held chunks too.
  BufferPool& pool() const { return *pool_; }
  ~ChunkCache();
  ChunkCache(const ChunkCache&) = delete;
  ChunkCache& operator=(const ChunkCache&) = delete;

  // Copies decompressed bytes [offset, offset + out.size()) of chunk n, clipped
  // to the chunk's size; returns how many were copied. Decodes only the blocks
  // the range touches; a read of half the chunk or more decodes all of it.
  // Counts the bytes as handed out (see retirement above).
  size_t read(int64_t n, int64_t offset, MutableByteSpan out);
  // The same bytes in place, without the copy: `keep` then holds the entry,
  // and the span stays valid while it lives. `exactly`: only the blocks the
  // range lies in are decoded, even for half the chunk or more.
  enum class Decode { as_readers_need, exactly };
  ByteSpan view(int64_t n, int64_t offset, size_t len, std::shared_ptr<const void>& keep,
                Decode decode = Decode::as_readers_need);
  // The whole chunk n decompressed.
  std::shared_ptr<const CachedChunk> get(int64_t n);
  // Chunk n with at least its decompressed bytes [offset, offset + len)
  // decoded (the blocks they lie in; every block for half the chunk or more).
  // data() spans the whole chunk, of which only those bytes may be read. Not
  // counted as handed out.
  std::shared_ptr<const CachedChunk> get_range(int64_t n, int64_t offset, int64_t len);
  // Copies stored bytes [offset, offset + out.size()) of chunk n; returns the count.
  size_t read_stored(int64_t n, int64_t offset, MutableByteSpan out);
  // Loads chunk n's stored bytes, unless it is cached already.
  void load(int64_t n);
  // Decompressed size of chunk n (validates its header).
  int64_t decoded_size(int64_t n);

  ChunkCacheStats stats() const;
  // Drops every entry (readers holding one keep it until they finish).
  void clear();
  // Drops the entry of chunk n / the entries of every chunk >= first (the
  // frame changed them).
  void invalidate(int64_t n);
  void invalidate_from(int64_t first);
  // Whether chunk n has an entry now; and dropping it after a one-time reader
  // (preview.png) that brought it in, so the cache holds what it held before.
  bool holds(int64_t n) const;
  void release(int64_t n) { invalidate(n); }
  // Chunk n's decoded bytes, taken out of the cache with their buffer, when
  // every block is decoded and nobody else holds the entry (a chunk about to
  // be written over keeps the memory they are in); empty otherwise.
  PooledBuffer take_decoded(int64_t n);

  // Bytes held outside the entries that count against the budget but can
  // never be evicted: chunks written and not yet committed. Clean entries are
  // evicted to make room for them.
  void pin_bytes(uint64_t bytes);
  void unpin_bytes(uint64_t bytes);

 private:
  struct Entry;
  // Finds or creates the entry for n, with its stored bytes loaded.
  // Returns the entry locked by `lock`; the caller must keep the returned
  // shared_ptr alive longer than `lock`. Throws with `lock` released.
  std::shared_ptr<Entry> acquire(int64_t n, std::unique_lock<std::mutex>& lock, const ChunkWish* wish = nullptr);
  enum class BlockState : uint8_t { pending, decoding, done };
  // Makes blocks covering [offset, offset+len) / blocks first..last decoded.
  // `lock` holds the entry's mutex, released while decoding.
  void decode_range(Entry& entry, std::unique_lock<std::mutex>& lock, int64_t offset, int64_t len, Decode decode);
  void decode_blocks(Entry& entry, std::unique_lock<std::mutex>& lock, int32_t first, int32_t last);
  void decode_block_unlocked(Entry& entry, int32_t j);
  void finish(Entry& entry);  // every block decoded: drops the decoder and stored bytes
  void prepare_decoder(Entry& entry);
  // Adds `bytes` to the entry's charge and evicts to the budget (entry locked).
  void charge(Entry& entry, uint64_t bytes);
  void uncharge(Entry& entry, uint64_t bytes);
  void evict_locked(const Entry* keep);  // map mutex held
  // Drops a failed entry, or retires one whose every byte was read.
  void remove(Entry& entry, bool count_as_eviction);
  void drop_locked(int64_t n);           // map mutex held

  ChunkLoader& loader_;
  const uint64_t budget_;
  mutable std::mutex map_mutex_;
  std::list<int64_t> lru_;  // front = most recently used
  struct Slot {
    std::shared_ptr<Entry> entry;
    std::list<int64_t>::iterator lru_pos;
  };
  std::unordered_map<int64_t, Slot> map_;
  std::shared_ptr<BufferPool> pool_;
  uint64_t bytes_ = 0;   // includes pinned_
  uint64_t pinned_ = 0;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
  std::atomic<uint64_t> decoded_blocks_{0}, decoded_bytes_{0};  // counted outside the locks
};

}  // namespace blosc2fs
