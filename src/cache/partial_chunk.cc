#include "partial_chunk.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "error.h"

namespace blosc2fs {

namespace {

// Fills one stored chunk's buffer from its source, remembering what is there.
class SourceChunkFiller final : public StoredChunkFiller {
 public:
  SourceChunkFiller(std::shared_ptr<const Frame> frame, int64_t n, Frame::StoredChunkPlace place, uint8_t* buffer)
      : frame_(std::move(frame)),
        n_(n),
        place_(std::move(place)),
        buffer_(buffer),
        size_(place_.header.cbytes),
        local_(!place_.source->remote()) {}

  void fill(int64_t from, int64_t to) override { fill(from, to, true); }

  // `counted`: a fetch for blocks, not for the header and tables. Readers of
  // different blocks fetch at the same time (zarr-python asks for a shard's
  // inner chunks at once): each claims the missing bytes nobody fetches yet,
  // fetches them without the lock, and waits for the bytes others claimed.
  void fill(int64_t from, int64_t to, bool counted) {
    from = std::clamp<int64_t>(from, 0, size_);
    to = std::clamp<int64_t>(to, from, size_);
    std::unique_lock lock(mutex_);
    if (from >= to || present(from, to)) return;
    // A reader walking through the chunk gets more than it asks for rather
    // than a request per block. Over a network: the rest at once, when the
    // blocks fetched would pass half of it. From a local file: from its second
    // fetch on, as much again as it fetched before, so a few reads bring a
    // whole chunk while a reader of a few blocks (a .npy header and the
    // kernel's read-ahead behind it) does not read a large chunk whole.
    bool rest = false;
    if (counted) {
      if (local_) {
        if (fetched_ > 0) to = std::min(size_, to + std::max(fetched_, to - from));
        fetched_ += to - from;
      } else {
        rest = (fetched_ + to - from) * 2 > size_;
        fetched_ += to - from;
        if (rest) from = 0, to = size_;
      }
    }
    while (!present(from, to)) {
      std::vector<std::pair<int64_t, int64_t>> mine = unclaimed_gaps(from, to);
      if (mine.empty()) {  // the rest is being fetched by others
        fetched_or_failed_.wait(lock);
        continue;
      }
      for (const auto& gap : mine) claimed_[gap.first] = gap.second;
      lock.unlock();
      size_t done = 0;
      try {
        for (; done < mine.size(); ++done) fetch(mine[done].first, mine[done].second);
      } catch (...) {
        lock.lock();
        for (size_t k = 0; k < mine.size(); ++k) {
          claimed_.erase(mine[k].first);
          if (k < done) add(mine[k].first, mine[k].second);
        }
        fetched_or_failed_.notify_all();
        throw;
      }
      lock.lock();
      for (const auto& gap : mine) {
        claimed_.erase(gap.first);
        add(gap.first, gap.second);
      }
      fetched_or_failed_.notify_all();
    }
    if (rest && !local_) {
      lock.unlock();
      frame_->note_whole_chunk_read(n_);
    }
  }

 private:
  // Exactly the bytes missing: a remote source would otherwise round a small
  // read up, into blocks nobody asked for.
  void fetch(int64_t from, int64_t to) const {
    if (!local_) place_.source->will_read_only(place_.pos + from, to - from);
    place_.source->read_exact(place_.pos + from, MutableByteSpan(buffer_ + from, size_t(to - from)), "chunk");
  }
  // The parts of [from, to) neither present nor claimed by another reader.
  std::vector<std::pair<int64_t, int64_t>> unclaimed_gaps(int64_t from, int64_t to) const {
    std::vector<std::pair<int64_t, int64_t>> gaps;
    for (int64_t at = from; at < to;) {
      int64_t covered_until = at;
      for (const auto* held : {&present_, &claimed_}) {
        auto it = held->upper_bound(at);
        if (it != held->begin() && std::prev(it)->second > at) covered_until = std::max(covered_until, std::prev(it)->second);
      }
      if (covered_until > at) {
        at = covered_until;
        continue;
      }
      int64_t end = to;
      for (const auto* held : {&present_, &claimed_}) {
        auto it = held->upper_bound(at);
        if (it != held->end()) end = std::min(end, it->first);
      }
      gaps.emplace_back(at, end);
      at = end;
    }
    return gaps;
  }
  bool present(int64_t from, int64_t to) const {
    auto it = present_.upper_bound(from);
    return it != present_.begin() && std::prev(it)->second >= to;
  }
  // Merges [from, to) into the disjoint intervals held.
  void add(int64_t from, int64_t to) {
    auto it = present_.upper_bound(from);
    if (it != present_.begin() && std::prev(it)->second >= from) {
      --it;
      from = it->first;
      to = std::max(to, it->second);
    }
    while (it != present_.end() && it->first <= to) {
      to = std::max(to, it->second);
      it = present_.erase(it);
    }
    present_[from] = to;
  }

  const std::shared_ptr<const Frame> frame_;  // keeps the source's frame open
  const int64_t n_;
  const Frame::StoredChunkPlace place_;
  uint8_t* const buffer_;
  const int64_t size_;
  std::mutex mutex_;
  std::condition_variable fetched_or_failed_;  // with mutex_: claimed_ shrank
  std::map<int64_t, int64_t> present_;  // start -> end, disjoint
  std::map<int64_t, int64_t> claimed_;  // start -> end: being fetched by a reader, disjoint from present_
  int64_t fetched_ = 0;  // for blocks
  const bool local_;
};

class PartialChunkDecoder final : public ChunkDecoder {
 public:
  // A gap between two wanted blocks' bytes this small is fetched with them:
  // a request costs more than this much of its answer.
  static constexpr int64_t kFilledGap = 16 << 10;

  PartialChunkDecoder(ByteSpan stored, DecodeRules rules, std::shared_ptr<StoredChunkFiller> filler, std::string label)
      : stored_(stored),
        rules_(rules),
        bounded_(stored, bounded(rules)),
        filler_(std::move(filler)),
        label_(std::move(label)) {}

  int64_t nbytes() const override { return bounded_.nbytes(); }
  int32_t nblocks() const override { return bounded_.nblocks(); }
  int64_t block_offset(int32_t j) const override { return bounded_.block_offset(j); }
  int32_t block_size(int32_t j) const override { return bounded_.block_size(j); }
  bool needs_reference_block() const override { return bounded_.needs_reference_block(); }

  // The blocks' stored bytes in as few fetches as they allow: blocks stored
  // next to each other (or a small gap apart) in one, the others apart.
  // c-blosc2 writes a chunk's blocks in the order its threads finish them,
  // so blocks next in the chunk may lie anywhere in its bytes.
  void prepare_blocks(int32_t first, int32_t last) const override {
    std::vector<std::pair<int64_t, int64_t>> extents;
    for (int32_t j = std::max(first, 0); j <= last && j < nblocks(); ++j) {
      const auto [a, b] = bounded_.block_stored_extent(j);
      if (a < b) extents.emplace_back(a, b);
    }
    std::sort(extents.begin(), extents.end());
    for (size_t i = 0; i < extents.size();) {
      auto [from, to] = extents[i];
      for (++i; i < extents.size() && extents[i].first <= to + kFilledGap; ++i) to = std::max(to, extents[i].second);
      filler_->fill(from, to);
    }
  }

  void decode_block(int32_t j, MutableByteSpan out, ByteSpan reference) const override {
    with_error_context(label_, [&] {
      const auto [from, to] = bounded_.block_stored_extent(j);
      filler_->fill(from, to);
      try {
        bounded_.decode_block(j, out, reference);
      } catch (const UnsupportedError&) {
        throw;
      } catch (const FormatError&) {
        // The block's streams run past its bytes: decoded as c-blosc2 does,
        // from the whole chunk, whose own errors are the ones reported.
        filler_->fill(0, int64_t(stored_.size()));
        whole().decode_block(j, out, reference);
      }
    });
  }

 private:
  static DecodeRules bounded(DecodeRules rules) {
    rules.bound_blocks = true;
    return rules;
  }
  const ChunkView& whole() const {
    std::call_once(whole_once_, [this] { whole_.emplace(stored_, rules_); });
    return *whole_;
  }

  const ByteSpan stored_;
  const DecodeRules rules_;
  const ChunkView bounded_;
  const std::shared_ptr<StoredChunkFiller> filler_;
  const std::string label_;
  mutable std::once_flag whole_once_;
  mutable std::optional<ChunkView> whole_;
};

}  // namespace

std::optional<LoadedChunk> load_partial_chunk(std::shared_ptr<const Frame> frame, int64_t n, BufferPool& pool,
                                              const ChunkWish& wish) {
  const bool local = !frame->source().remote();
  if (local && wish.stored) return std::nullopt;
  // Over a network a read of a quarter of the chunk or more (a kernel's 1 MiB
  // piece of a whole-file read: zarr-python reads a shard whole for a
  // column) loads it whole, in one request where block by block would take
  // three in turn (the header, the blocks, the rest).
  const int64_t whole_from = local ? 2 : 4;
  if (!wish.stored && wish.length * whole_from >= int64_t(frame->chunk_nbytes(n))) return std::nullopt;
  std::optional<Frame::StoredChunkPlace> place = frame->stored_chunk_place(n, kPartialChunkMinBytes);
  if (!place) return std::nullopt;
  const ChunkHeader& h = place->header;
  if (h.cbytes < kPartialChunkMinBytes || (wish.stored && wish.length * 2 >= h.cbytes)) return std::nullopt;
  if (!loadable_in_part(h)) return std::nullopt;  // whole: the decoder reports what is wrong
  // From a local file, a read inside one block (random 4 KB reads) loads the
  // chunk whole: the reads that follow land in the same chunk again, and one
  // disk read of it all costs less on a cold page cache than one per block
  // (docs/performance.md, lever 1). A read of a block or more (a Zarr inner
  // chunk, a range of rows) is a sub-array: only its blocks are read.
  if (local && wish.length < h.blocksize) return std::nullopt;
  LoadedChunk loaded;
  if (!local) {
    // Fetched ahead (a sequential reader's prefetch): nothing to save, and
    // decoded from where it arrived, without a copy.
    if (HeldBytes held = place->source->view_at(place->pos, size_t(h.cbytes), false)) {
      frame->note_whole_chunk_read(n);
      loaded.stored = PooledBuffer::borrow(std::move(held));
      return loaded;
    }
    // On local disk (a disk cache): nothing to save either; read whole, in place.
    if (place->source->held(place->pos, h.cbytes)) return std::nullopt;
  }
  loaded.stored = pool.take(size_t(h.cbytes));
  auto filler = std::make_shared<SourceChunkFiller>(std::move(frame), n, *place, loaded.stored.data());
  filler->fill(0, partial_chunk_head(h), false);
  filler->fill(0, partial_chunk_prefix(h, loaded.stored.data()), false);
  loaded.filler = std::move(filler);
  return loaded;
}

bool loadable_in_part(const ChunkHeader& h) {
  if (h.special() != Special::none || h.memcpyed() || h.vlblocks() || h.lazy() || h.nbytes <= 0 || h.nblocks() < 2)
    return false;
  return int64_t(h.header_size()) + 4 * int64_t(h.nblocks()) <= h.cbytes;
}

int64_t partial_chunk_head(const ChunkHeader& h) {
  return std::min<int64_t>(int64_t(h.header_size()) + 4 * int64_t(h.nblocks()) + 4, h.cbytes);
}

int64_t partial_chunk_prefix(const ChunkHeader& h, const uint8_t* stored) {
  const int64_t table_end = int64_t(h.header_size()) + 4 * int64_t(h.nblocks());
  int64_t before_blocks = table_end + 4;
  if (h.use_dict() && table_end + 4 <= h.cbytes)
    before_blocks += std::clamp<int64_t>(int32_t(load_le32(stored + table_end)), 0, h.cbytes);
  int64_t first_block = h.cbytes;
  for (int32_t j = 0; j < h.nblocks(); ++j)
    first_block = std::min<int64_t>(first_block, load_le32(stored + h.header_size() + 4 * size_t(j)));
  return std::clamp<int64_t>(std::max(first_block, before_blocks), 0, h.cbytes);
}

std::unique_ptr<ChunkDecoder> partial_chunk_decoder(ByteSpan stored, DecodeRules rules,
                                                    std::shared_ptr<StoredChunkFiller> filler, std::string label) {
  return std::make_unique<PartialChunkDecoder>(stored, rules, std::move(filler), std::move(label));
}

}  // namespace blosc2fs
