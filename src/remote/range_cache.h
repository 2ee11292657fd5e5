// Bytes of remote objects held in memory, shared by one mount's objects and
// bounded as a whole: fetched extents, least recently used first out, plus
// room reserved for extents being fetched ahead of readers (prefetch), so
// that what a mount holds never exceeds its budget however many files are read.
// An extent is charged all the memory its buffer holds (its capacity).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include "bytes.h"

namespace blosc2fs {

class RangeCache {
 public:
  explicit RangeCache(uint64_t budget) : budget_(budget) {}

  // A new object's number.
  uint64_t new_object();
  // The extent of `object` holding byte `offset`; its start in *start. Null when none.
  std::shared_ptr<const Bytes> find(uint64_t object, int64_t offset, int64_t* start);
  // The same, without counting as a use (an extent fetched ahead stays unread).
  std::shared_ptr<const Bytes> peek(uint64_t object, int64_t offset, int64_t* start);
  // Keeps [start, start + bytes->size()) of `object`, evicting older extents;
  // `reserved` bytes reserved for it earlier are released. A prefetched
  // extent (`reserved` > 0) is kept until it is first found: making room for
  // more prefetch never evicts what a reader has not read yet.
  void insert(uint64_t object, int64_t start, std::shared_ptr<const Bytes> bytes, uint64_t reserved = 0);
  // Keeps a block read from the disk cache until a reader has read it to its
  // end: reading it again costs a pread, and a sequential reader's blocks
  // give their buffers back at once instead of filling the budget first.
  void insert_until_read(uint64_t object, int64_t start, std::shared_ptr<const Bytes> bytes);
  // A reader has read `bytes`, the extent at `start`, to its end.
  void read_to_end(uint64_t object, int64_t start, const Bytes* bytes);
  // Room for `n` bytes to be prefetched, when the budget allows it after
  // evicting extents already read, and what is prefetched and not yet read
  // stays within half the budget (the other half serves readers); false
  // otherwise (nothing reserved).
  bool reserve(uint64_t n);
  void release(uint64_t n);
  void forget_object(uint64_t object);

  uint64_t budget() const { return budget_; }
  uint64_t held() const;

 private:
  struct Extent {
    std::shared_ptr<const Bytes> bytes;
    std::list<std::pair<uint64_t, int64_t>>::iterator lru;
    bool unread = false;  // prefetched, not yet found
    bool until_read = false;  // leaves when read to its end
  };
  void keep(uint64_t object, int64_t start, std::shared_ptr<const Bytes> bytes, uint64_t reserved, bool until_read);
  // Takes what `extent` is charged off the totals. Under mutex_.
  void discount(const Extent& extent);
  std::shared_ptr<const Bytes> lookup(uint64_t object, int64_t offset, int64_t* start, bool use);
  // Evicts least recently used extents (sparing unread ones when asked) until
  // what is held fits `limit`; whether it does. Under mutex_.
  bool evict_to(uint64_t limit, bool spare_unread);

  const uint64_t budget_;
  mutable std::mutex mutex_;
  uint64_t next_object_ = 1;
  uint64_t used_ = 0, reserved_ = 0;
  uint64_t unread_ = 0;  // of used_: prefetched, not yet found
  std::map<uint64_t, std::map<int64_t, Extent>> objects_;
  std::list<std::pair<uint64_t, int64_t>> lru_;  // front: most recently used
};

}  // namespace blosc2fs
