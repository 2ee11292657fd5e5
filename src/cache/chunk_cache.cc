#include "chunk_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

namespace blosc2fs {

std::string ChunkCacheStats::text() const {
  return "hits=" + std::to_string(hits) + " misses=" + std::to_string(misses) +
         " evictions=" + std::to_string(evictions) + " bytes=" + std::to_string(bytes) +
         " budget=" + std::to_string(budget) + " entries=" + std::to_string(entries) +
         " dirty=" + std::to_string(dirty) + " decoded_blocks=" + std::to_string(decoded_blocks) +
         " decoded_bytes=" + std::to_string(decoded_bytes);
}

struct ChunkCache::Entry : CachedChunk {
  explicit Entry(int64_t chunk) : n(chunk) {}
  ByteSpan data() const override { return {buffer.data(), size_t(nbytes)}; }

  const int64_t n;
  std::mutex mutex;  // guards everything below except the map-mutex fields

  std::exception_ptr load_error;  // loading failed; the entry has left the map
  PooledBuffer stored;
  // Declared after `stored`, which they point into, so they are destroyed first.
  std::shared_ptr<StoredChunkFiller> filler;  // null: `stored` is whole
  std::unique_ptr<ChunkDecoder> decoder;
  int64_t nbytes = 0;
  // Recycled memory: only bytes of decoded blocks are ever read from it.
  PooledBuffer buffer;
  std::vector<BlockState> blocks;
  int32_t ndecoded = 0;
  std::condition_variable block_decoded;  // with `mutex`
  int64_t served = 0;  // bytes handed out by read(), counting repeats
  // Every block decoded: the decoder and the stored bytes are dropped (the
  // stored bytes come back if raw/N.chunk is read).
  bool complete = false;

  // Guarded by the cache's map mutex.
  bool in_map = true;
  uint64_t charged = 0;
};

ChunkCache::ChunkCache(ChunkLoader& loader, uint64_t budget_bytes, std::shared_ptr<BufferPool> pool)
    : loader_(loader),
      budget_(budget_bytes),
      pool_(pool ? std::move(pool) : BufferPool::create(size_t(std::min(budget_bytes, kPoolBytes)))) {}

ChunkCache::~ChunkCache() = default;

std::shared_ptr<ChunkCache::Entry> ChunkCache::acquire(int64_t n, std::unique_lock<std::mutex>& lock,
                                                       const ChunkWish* wish) {
  // Lock order is always entry -> map: a new entry is locked before it is
  // published, so later arrivals wait on it for the load.
  auto find = [&]() -> std::shared_ptr<Entry> {
    auto it = map_.find(n);
    if (it == map_.end()) return nullptr;
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
    return it->second.entry;
  };
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard map_lock(map_mutex_);
    entry = find();
  }
  if (!entry) {
    auto fresh = std::make_shared<Entry>(n);
    std::unique_lock fresh_lock(fresh->mutex);
    std::lock_guard map_lock(map_mutex_);
    entry = find();  // someone may have inserted it meanwhile
    if (!entry) {
      ++misses_;
      lru_.push_front(n);
      map_.emplace(n, Slot{fresh, lru_.begin()});
      entry = std::move(fresh);
      lock = std::move(fresh_lock);
    }
  }
  if (lock.owns_lock()) {
    try {
      if (wish) {
        LoadedChunk loaded = loader_.load_for(n, *pool_, *wish);
        entry->stored = std::move(loaded.stored);
        entry->filler = std::move(loaded.filler);
      } else {
        entry->stored = loader_.load(n, *pool_);
      }
    } catch (...) {
      entry->load_error = std::current_exception();
      remove(*entry, false);
      lock.unlock();  // the entry may die with this frame
      throw;
    }
    charge(*entry, entry->stored.footprint());
    return entry;
  }
  lock = std::unique_lock(entry->mutex);
  if (entry->load_error) {
    lock.unlock();
    std::rethrow_exception(entry->load_error);
  }
  return entry;
}

void ChunkCache::remove(Entry& entry, bool count_as_eviction) {
  std::lock_guard map_lock(map_mutex_);
  if (!entry.in_map) return;
  auto it = map_.find(entry.n);
  if (it != map_.end() && it->second.entry.get() == &entry) {
    lru_.erase(it->second.lru_pos);
    map_.erase(it);
    if (count_as_eviction) ++evictions_;
  }
  bytes_ -= entry.charged;
  entry.charged = 0;
  entry.in_map = false;
}

void ChunkCache::charge(Entry& entry, uint64_t bytes) {
  std::lock_guard map_lock(map_mutex_);
  if (!entry.in_map) return;  // already evicted: freed when its last reader lets go
  entry.charged += bytes;
  bytes_ += bytes;
  evict_locked(&entry);
}

void ChunkCache::evict_locked(const Entry* keep) {
  auto it = lru_.end();
  while (bytes_ > budget_ && it != lru_.begin()) {
    --it;
    auto slot = map_.find(*it);
    Entry& victim = *slot->second.entry;
    if (&victim == keep) continue;
    bytes_ -= victim.charged;
    victim.charged = 0;
    victim.in_map = false;
    it = lru_.erase(it);
    map_.erase(slot);
    ++evictions_;
  }
}

void ChunkCache::uncharge(Entry& entry, uint64_t bytes) {
  std::lock_guard map_lock(map_mutex_);
  if (!entry.in_map) return;
  bytes = std::min(bytes, entry.charged);
  entry.charged -= bytes;
  bytes_ -= bytes;
}

void ChunkCache::prepare_decoder(Entry& entry) {
  if (entry.decoder || entry.complete) return;
  auto decoder = entry.filler ? loader_.partial_decoder(entry.n, entry.stored.bytes(), entry.filler)
                              : loader_.decoder(entry.n, entry.stored.bytes());
  const int64_t nbytes = decoder->nbytes();
  const int32_t nblocks = decoder->nblocks();
  if (nbytes < 0 || nblocks < 0 || (nbytes > 0 && nblocks == 0))
    throw FormatError("chunk " + std::to_string(entry.n) + ": inconsistent block layout (nbytes " +
                      std::to_string(nbytes) + ", " + std::to_string(nblocks) + " blocks)");
  // The blocks must cover the chunk exactly, or bytes of the recycled buffer
  // that no block writes would be served.
  int64_t covered = 0;
  for (int32_t j = 0; j < nblocks; ++j) {
    if (decoder->block_offset(j) != covered || decoder->block_size(j) <= 0)
      throw FormatError("chunk " + std::to_string(entry.n) + ": block " + std::to_string(j) +
                        " does not follow the previous one");
    covered += decoder->block_size(j);
  }
  if (covered != nbytes)
    throw FormatError("chunk " + std::to_string(entry.n) + ": its blocks hold " + std::to_string(covered) +
                      " bytes, not " + std::to_string(nbytes));
  entry.buffer = pool_->take(size_t(std::max<int64_t>(nbytes, 1)));
  entry.blocks.assign(size_t(nblocks), BlockState::pending);
  entry.ndecoded = 0;
  entry.nbytes = nbytes;
  entry.decoder = std::move(decoder);
  charge(entry, uint64_t(nbytes));
}

void ChunkCache::decode_block_unlocked(Entry& entry, int32_t j) {
  const ChunkDecoder& d = *entry.decoder;
  const int64_t offset = d.block_offset(j);
  const int64_t size = d.block_size(j);
  ByteSpan reference;
  if (j > 0 && d.needs_reference_block()) reference = ByteSpan(entry.buffer.data(), size_t(d.block_size(0)));
  d.decode_block(j, MutableByteSpan(entry.buffer.data() + offset, size_t(size)), reference);
  decoded_blocks_.fetch_add(1, std::memory_order_relaxed);
  decoded_bytes_.fetch_add(uint64_t(size), std::memory_order_relaxed);
}

void ChunkCache::decode_blocks(Entry& entry, std::unique_lock<std::mutex>& lock, int32_t first, int32_t last) {
  if (entry.complete) return;
  if (first > 0 || last > 0) {
    if (entry.decoder->needs_reference_block()) decode_blocks(entry, lock, 0, 0);
    if (entry.complete) return;
  }
  auto state = [&](int32_t j) -> BlockState& { return entry.blocks[size_t(j)]; };
  // Claims the blocks nobody decodes, decodes them without the entry lock (so
  // readers of other blocks of this chunk decode at the same time), then
  // waits for the blocks other readers have claimed.
  for (;;) {
    std::vector<int32_t> mine;
    bool others = false;
    for (int32_t j = first; j <= last; ++j) {
      if (state(j) == BlockState::pending) {
        state(j) = BlockState::decoding;
        mine.push_back(j);
      } else if (state(j) == BlockState::decoding) {
        others = true;
      }
    }
    if (!mine.empty()) {
      size_t done = 0;
      lock.unlock();
      try {
        entry.decoder->prepare_blocks(mine.front(), mine.back());
        for (; done < mine.size(); ++done) decode_block_unlocked(entry, mine[done]);
      } catch (...) {
        lock.lock();
        for (size_t k = 0; k < mine.size(); ++k) state(mine[k]) = k < done ? BlockState::done : BlockState::pending;
        entry.ndecoded += int32_t(done);
        entry.block_decoded.notify_all();
        throw;
      }
      lock.lock();
      for (int32_t j : mine) state(j) = BlockState::done;
      entry.ndecoded += int32_t(mine.size());
      entry.block_decoded.notify_all();
      if (entry.ndecoded == int32_t(entry.blocks.size())) {
        finish(entry);
        return;
      }
      continue;  // the range again: other readers' blocks may be done, or failed
    }
    if (!others) return;  // every block of the range is done
    entry.block_decoded.wait(lock);
    if (entry.complete) return;
  }
}

void ChunkCache::finish(Entry& entry) {
  entry.complete = true;
  entry.decoder.reset();
  entry.filler.reset();
  const uint64_t stored = entry.stored.footprint();
  entry.stored.release();
  uncharge(entry, stored);
}

void ChunkCache::decode_range(Entry& entry, std::unique_lock<std::mutex>& lock, int64_t offset, int64_t len,
                              Decode decode) {
  const int32_t nblocks = int32_t(entry.blocks.size());
  if (entry.complete || len <= 0) return;
  if (decode == Decode::as_readers_need && len >= entry.nbytes - len)
    return decode_blocks(entry, lock, 0, nblocks - 1);  // half the chunk or more
  const ChunkDecoder& d = *entry.decoder;
  // The block holding byte `at`: the last one starting at or before it.
  auto block_at = [&](int64_t at) {
    int32_t lo = 0, hi = nblocks - 1;
    while (lo < hi) {
      int32_t mid = lo + (hi - lo + 1) / 2;
      if (d.block_offset(mid) <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  decode_blocks(entry, lock, block_at(offset), block_at(offset + len - 1));
}

ByteSpan ChunkCache::view(int64_t n, int64_t offset, size_t size, std::shared_ptr<const void>& keep, Decode decode) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  const ChunkWish wish{offset, int64_t(size), false};
  entry = acquire(n, lock, &wish);
  prepare_decoder(*entry);
  if (offset < 0 || offset >= entry->nbytes || size == 0) return {};
  const int64_t len = std::min<int64_t>(int64_t(size), entry->nbytes - offset);
  decode_range(*entry, lock, offset, len, decode);
  entry->served += len;
  const bool spent = entry->complete && entry->served >= entry->nbytes;
  lock.unlock();  // decoded blocks never change again: readable without the lock
  if (spent) remove(*entry, true);  // retired
  ByteSpan bytes(entry->buffer.data() + offset, size_t(len));
  keep = std::move(entry);
  return bytes;
}

size_t ChunkCache::read(int64_t n, int64_t offset, MutableByteSpan out) {
  std::shared_ptr<const void> keep;
  ByteSpan bytes = view(n, offset, out.size(), keep);
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return bytes.size();
}

std::shared_ptr<const CachedChunk> ChunkCache::get(int64_t n) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  entry = acquire(n, lock);
  prepare_decoder(*entry);
  decode_blocks(*entry, lock, 0, int32_t(entry->blocks.size()) - 1);
  return entry;
}

std::shared_ptr<const CachedChunk> ChunkCache::get_range(int64_t n, int64_t offset, int64_t len) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  const ChunkWish wish{offset, len, false};
  entry = acquire(n, lock, &wish);
  prepare_decoder(*entry);
  if (offset < 0 || len <= 0 || offset >= entry->nbytes) return entry;
  decode_range(*entry, lock, offset, std::min(len, entry->nbytes - offset), Decode::as_readers_need);
  return entry;
}

size_t ChunkCache::read_stored(int64_t n, int64_t offset, MutableByteSpan out) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  const ChunkWish wish{offset, int64_t(out.size()), true};
  entry = acquire(n, lock, &wish);
  if (entry->complete && entry->stored.empty()) {  // dropped after decoding: load again
    entry->stored = loader_.load(n, *pool_);
    charge(*entry, entry->stored.footprint());
  }
  // Copied under the lock: completing the chunk's decoding drops the stored bytes.
  const int64_t size = int64_t(entry->stored.size());
  if (offset < 0 || offset >= size || out.empty()) return 0;
  const int64_t len = std::min<int64_t>(int64_t(out.size()), size - offset);
  if (entry->filler) entry->filler->fill(offset, offset + len);
  std::memcpy(out.data(), entry->stored.data() + offset, size_t(len));
  return size_t(len);
}

void ChunkCache::load(int64_t n) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  entry = acquire(n, lock);
}

int64_t ChunkCache::decoded_size(int64_t n) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  entry = acquire(n, lock);
  prepare_decoder(*entry);
  return entry->nbytes;
}

ChunkCacheStats ChunkCache::stats() const {
  std::lock_guard map_lock(map_mutex_);
  ChunkCacheStats s;
  s.hits = hits_;
  s.misses = misses_;
  s.evictions = evictions_;
  s.bytes = bytes_;
  s.budget = budget_;
  s.entries = map_.size();
  s.dirty = pinned_;
  s.decoded_blocks = decoded_blocks_.load(std::memory_order_relaxed);
  s.decoded_bytes = decoded_bytes_.load(std::memory_order_relaxed);
  return s;
}

void ChunkCache::clear() {
  std::lock_guard map_lock(map_mutex_);
  for (auto& [n, slot] : map_) {
    slot.entry->in_map = false;
    slot.entry->charged = 0;
  }
  map_.clear();
  lru_.clear();
  bytes_ = pinned_;
}

void ChunkCache::drop_locked(int64_t n) {
  auto it = map_.find(n);
  if (it == map_.end()) return;
  Entry& entry = *it->second.entry;
  bytes_ -= entry.charged;
  entry.charged = 0;
  entry.in_map = false;
  lru_.erase(it->second.lru_pos);
  map_.erase(it);
}

bool ChunkCache::holds(int64_t n) const {
  std::lock_guard map_lock(map_mutex_);
  return map_.count(n) > 0;
}

PooledBuffer ChunkCache::take_decoded(int64_t n) {
  std::lock_guard map_lock(map_mutex_);
  auto it = map_.find(n);
  if (it == map_.end()) return {};
  const std::shared_ptr<Entry> entry = it->second.entry;
  if (entry.use_count() != 2) return {};  // the map's and this one: no reader has it
  // Entry before map is the lock order, so only tried: nobody can be waiting for it.
  std::unique_lock entry_lock(entry->mutex, std::try_to_lock);
  if (!entry_lock || !entry->complete || entry->load_error || entry->buffer.size() != size_t(entry->nbytes)) return {};
  PooledBuffer decoded = std::move(entry->buffer);
  drop_locked(n);
  return decoded;
}

void ChunkCache::invalidate(int64_t n) {
  std::lock_guard map_lock(map_mutex_);
  drop_locked(n);
}

void ChunkCache::invalidate_from(int64_t first) {
  std::lock_guard map_lock(map_mutex_);
  std::vector<int64_t> doomed;
  for (const auto& [n, slot] : map_)
    if (n >= first) doomed.push_back(n);
  for (int64_t n : doomed) drop_locked(n);
}

void ChunkCache::pin_bytes(uint64_t bytes) {
  std::lock_guard map_lock(map_mutex_);
  pinned_ += bytes;
  bytes_ += bytes;
  evict_locked(nullptr);
}

void ChunkCache::unpin_bytes(uint64_t bytes) {
  std::lock_guard map_lock(map_mutex_);
  bytes = std::min(bytes, pinned_);
  pinned_ -= bytes;
  bytes_ -= bytes;
}

}  // namespace blosc2fs
