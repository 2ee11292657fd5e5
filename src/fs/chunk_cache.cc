#include "chunk_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

namespace blosc2fs {

namespace {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

}  // namespace

std::string ChunkCacheStats::text() const {
  return "hits=" + std::to_string(hits) + " misses=" + std::to_string(misses) +
         " evictions=" + std::to_string(evictions) + " bytes=" + std::to_string(bytes) +
         " budget=" + std::to_string(budget) + " entries=" + std::to_string(entries) +
         " dirty=" + std::to_string(dirty);
}

struct ChunkCache::Entry : CachedChunk {
  explicit Entry(int64_t chunk) : n(chunk) {}
  ByteSpan data() const override { return {buffer.get(), size_t(nbytes)}; }

  const int64_t n;
  std::mutex mutex;  // guards everything below except the map-mutex fields

  std::exception_ptr load_error;  // loading failed; the entry has left the map
  Bytes stored;
  // Declared after `stored`, which it points into, so it is destroyed first.
  std::unique_ptr<ChunkDecoder> decoder;
  int64_t nbytes = 0;
  // calloc'd: large buffers come as fresh zero pages, and blocks an uninit
  // special chunk never writes read as zeros.
  std::unique_ptr<uint8_t, FreeDeleter> buffer;
  std::vector<bool> decoded;
  int32_t ndecoded = 0;
  // Every block decoded: the decoder and the stored bytes are dropped (the
  // stored bytes come back if raw/N.chunk is read).
  bool complete = false;

  // Guarded by the cache's map mutex.
  bool in_map = true;
  uint64_t charged = 0;
};

ChunkCache::ChunkCache(ChunkLoader& loader, uint64_t budget_bytes) : loader_(loader), budget_(budget_bytes) {}

ChunkCache::~ChunkCache() = default;

std::shared_ptr<ChunkCache::Entry> ChunkCache::acquire(int64_t n, std::unique_lock<std::mutex>& lock) {
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
      entry->stored = loader_.load(n);
    } catch (...) {
      entry->load_error = std::current_exception();
      forget(*entry);
      lock.unlock();  // the entry may die with this frame
      throw;
    }
    charge(*entry, entry->stored.size());
    return entry;
  }
  lock = std::unique_lock(entry->mutex);
  if (entry->load_error) {
    lock.unlock();
    std::rethrow_exception(entry->load_error);
  }
  return entry;
}

void ChunkCache::forget(Entry& entry) {
  std::lock_guard map_lock(map_mutex_);
  if (!entry.in_map) return;
  auto it = map_.find(entry.n);
  if (it != map_.end() && it->second.entry.get() == &entry) {
    lru_.erase(it->second.lru_pos);
    map_.erase(it);
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
  auto decoder = loader_.decoder(entry.n, entry.stored);
  const int64_t nbytes = decoder->nbytes();
  const int32_t nblocks = decoder->nblocks();
  if (nbytes < 0 || nblocks < 0 || (nbytes > 0 && nblocks == 0))
    throw FormatError("chunk " + std::to_string(entry.n) + ": inconsistent block layout (nbytes " +
                      std::to_string(nbytes) + ", " + std::to_string(nblocks) + " blocks)");
  uint8_t* raw = static_cast<uint8_t*>(std::calloc(size_t(std::max<int64_t>(nbytes, 1)), 1));
  if (!raw) throw std::bad_alloc();
  entry.buffer.reset(raw);
  entry.decoded.assign(size_t(nblocks), false);
  entry.ndecoded = 0;
  entry.nbytes = nbytes;
  entry.decoder = std::move(decoder);
  charge(entry, uint64_t(nbytes));
}

void ChunkCache::decode_one_block(Entry& entry, int32_t j) {
  if (entry.decoded[size_t(j)]) return;
  const ChunkDecoder& d = *entry.decoder;
  const bool needs_reference = j > 0 && d.needs_reference_block();
  if (needs_reference) decode_one_block(entry, 0);
  const int64_t offset = d.block_offset(j);
  const int64_t size = d.block_size(j);
  if (offset < 0 || size < 0 || offset > entry.nbytes || size > entry.nbytes - offset)
    throw FormatError("chunk " + std::to_string(entry.n) + ": block " + std::to_string(j) +
                      " lies outside the chunk");
  ByteSpan reference;
  if (needs_reference) reference = ByteSpan(entry.buffer.get(), size_t(d.block_size(0)));
  d.decode_block(j, MutableByteSpan(entry.buffer.get() + offset, size_t(size)), reference);
  entry.decoded[size_t(j)] = true;
  if (++entry.ndecoded == int32_t(entry.decoded.size())) {
    entry.complete = true;
    entry.decoder.reset();
    const uint64_t stored = entry.stored.size();
    Bytes().swap(entry.stored);
    uncharge(entry, stored);
  }
}

void ChunkCache::decode_range(Entry& entry, int64_t offset, int64_t len) {
  const int32_t nblocks = int32_t(entry.decoded.size());
  if (entry.complete || len <= 0) return;
  if (len >= entry.nbytes - len) {  // half the chunk or more: finish it
    for (int32_t j = 0; j < nblocks; ++j) decode_one_block(entry, j);
    return;
  }
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
  const int32_t first = block_at(offset);
  const int32_t last = block_at(offset + len - 1);
  for (int32_t j = first; j <= last; ++j) decode_one_block(entry, j);
}

size_t ChunkCache::read(int64_t n, int64_t offset, MutableByteSpan out) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  entry = acquire(n, lock);
  prepare_decoder(*entry);
  if (offset < 0 || offset >= entry->nbytes || out.empty()) return 0;
  const int64_t len = std::min<int64_t>(int64_t(out.size()), entry->nbytes - offset);
  decode_range(*entry, offset, len);
  lock.unlock();  // decoded blocks never change again; copy without the lock
  std::memcpy(out.data(), entry->buffer.get() + offset, size_t(len));
  return size_t(len);
}

std::shared_ptr<const CachedChunk> ChunkCache::get(int64_t n) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  entry = acquire(n, lock);
  prepare_decoder(*entry);
  for (int32_t j = 0; !entry->complete && j < int32_t(entry->decoded.size()); ++j) decode_one_block(*entry, j);
  return entry;
}

size_t ChunkCache::read_stored(int64_t n, int64_t offset, MutableByteSpan out) {
  std::shared_ptr<Entry> entry;  // declared first: outlives the lock on its mutex
  std::unique_lock<std::mutex> lock;
  entry = acquire(n, lock);
  if (entry->complete && entry->stored.empty()) {  // dropped after decoding: load again
    entry->stored = loader_.load(n);
    charge(*entry, entry->stored.size());
  }
  // Copied under the lock: completing the chunk's decoding drops the stored bytes.
  const int64_t size = int64_t(entry->stored.size());
  if (offset < 0 || offset >= size || out.empty()) return 0;
  const int64_t len = std::min<int64_t>(int64_t(out.size()), size - offset);
  std::memcpy(out.data(), entry->stored.data() + offset, size_t(len));
  return size_t(len);
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
