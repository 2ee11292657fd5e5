// index.tsv for frames of any number of chunks. A frame of a few hundred bytes
// can claim millions of chunks (special-value index entries need no storage),
// and each costs a row of about 60 bytes, so the text is never held whole: it
// is made a page of rows at a time, and only a few pages are kept.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bytes.h"
#include "frame.h"

namespace blosc2fs {

class IndexTsvFile {
 public:
  static constexpr int64_t kRowsPerPage = 4096;
  static constexpr size_t kPagesKept = 8;

  explicit IndexTsvFile(std::shared_ptr<const Frame> frame);

  // The whole text's size: the first call makes every page once to measure it.
  int64_t size();
  // Copies bytes [offset, offset + out.size()) of the text; returns how many (0 at the end).
  size_t read(int64_t offset, MutableByteSpan out);

 private:
  int64_t npages() const;
  void measure_locked();
  int64_t page_start_locked(int64_t p) const;
  const std::string& page_locked(int64_t p);
  void keep_locked(int64_t p, std::string text);

  std::shared_ptr<const Frame> frame_;
  const std::string header_;
  std::mutex mutex_;
  std::vector<int64_t> page_end_;  // offset in the text where page p ends; empty until measured
  std::list<std::pair<int64_t, std::string>> kept_;  // most recently used first
};

}  // namespace blosc2fs
