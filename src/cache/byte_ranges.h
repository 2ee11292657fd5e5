// A set of disjoint byte ranges [from, to): which bytes of a chunk held by
// region (chunk_overlay.h) writes supplied. Touching ranges merge, so a chunk
// written whole in any order ends as one range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

namespace blosc2fs {

class ByteRanges {
 public:
  void add(int64_t from, int64_t to) {
    if (from >= to) return;
    auto it = ranges_.upper_bound(from);
    if (it != ranges_.begin() && std::prev(it)->second >= from) --it;
    while (it != ranges_.end() && it->first <= to) {
      from = std::min(from, it->first);
      to = std::max(to, it->second);
      covered_ -= it->second - it->first;
      it = ranges_.erase(it);
    }
    ranges_.emplace(from, to);
    covered_ += to - from;
  }
  // Bytes in the set.
  int64_t covered() const { return covered_; }
  bool empty() const { return ranges_.empty(); }
  // For [from, to) in order: piece(at, len, written) for each stretch that lies
  // wholly inside the set (written) or wholly outside it.
  template <class Piece>
  void split(int64_t from, int64_t to, Piece&& piece) const {
    auto it = ranges_.upper_bound(from);
    if (it != ranges_.begin() && std::prev(it)->second > from) --it;
    while (from < to) {
      if (it == ranges_.end() || it->first >= to) {
        piece(from, to - from, false);
        return;
      }
      if (it->first > from) {
        piece(from, it->first - from, false);
        from = it->first;
      }
      const int64_t end = std::min(to, it->second);
      piece(from, end - from, true);
      from = end;
      ++it;
    }
  }
  template <class Range>
  void for_each(Range&& range) const {
    for (const auto& [from, to] : ranges_) range(from, to);
  }

 private:
  std::map<int64_t, int64_t> ranges_;
  int64_t covered_ = 0;
};

}  // namespace blosc2fs
