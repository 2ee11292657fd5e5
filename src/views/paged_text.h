// A generated text file made a page of rows at a time (index.tsv, items.jsonl):
// a frame of a few hundred bytes can claim millions of chunks, and the items of
// a big array can be far more than memory, so the text is never held whole.
// Its size is measured once, on first need, by making every page once (or by a
// cheaper measure the text offers); only a few pages are kept.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bytes.h"

namespace blosc2fs {

class PagedText {
 public:
  static constexpr size_t kPagesKept = 8;
  // The text of rows [first, first + count) (fewer at the end).
  using Rows = std::function<std::string(int64_t first, int64_t count)>;
  // The size of rows [first, stop) without making them, when the text can tell;
  // nullopt: make them.
  using Measure = std::function<std::optional<int64_t>(int64_t first, int64_t stop)>;

  // `name` appears in errors ("index.tsv").
  PagedText(std::string name, std::string header, int64_t nrows, int64_t rows_per_page, Rows rows,
            Measure measure = {});

  // The whole text's size: the first call measures every page.
  int64_t size();
  // Copies bytes [offset, offset + out.size()) of the text; returns how many (0 at the end).
  size_t read(int64_t offset, MutableByteSpan out);

 private:
  int64_t npages() const { return (nrows_ + rows_per_page_ - 1) / rows_per_page_; }
  void measure_locked();
  int64_t page_start_locked(int64_t p) const;
  const std::string& page_locked(int64_t p);
  void keep_locked(int64_t p, std::string text);

  const std::string name_;
  const std::string header_;
  const int64_t nrows_;
  const int64_t rows_per_page_;
  const Rows rows_;
  const Measure measure_;
  std::mutex mutex_;
  std::vector<int64_t> page_end_;  // offset in the text where page p ends; empty until measured
  std::list<std::pair<int64_t, std::string>> kept_;  // most recently used first
};

}  // namespace blosc2fs
