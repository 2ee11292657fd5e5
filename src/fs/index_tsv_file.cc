#include "index_tsv_file.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "error.h"
#include "frame_json.h"

namespace blosc2fs {

IndexTsvFile::IndexTsvFile(std::shared_ptr<const Frame> frame)
    : frame_(std::move(frame)), header_(index_tsv_header()) {}

int64_t IndexTsvFile::npages() const { return (frame_->nchunks() + kRowsPerPage - 1) / kRowsPerPage; }

int64_t IndexTsvFile::size() {
  std::lock_guard lock(mutex_);
  measure_locked();
  return page_end_.empty() ? int64_t(header_.size()) : page_end_.back();
}

// How many digits the numbers [first, end) have together.
static int64_t digits_in_range(int64_t first, int64_t end) {
  int64_t total = 0, low = 0, high = 10;
  for (int digits = 1; low < end; ++digits, low = high, high = high > INT64_MAX / 10 ? INT64_MAX : high * 10) {
    const int64_t a = std::max(first, low), b = std::min(end, high);
    if (a < b) total += (b - a) * digits;
  }
  return total;
}

// A uniform index gives every row the same text after the chunk number, but
// for the last row (the last chunk of a fixed chunksize may be shorter): its
// pages are measured without making their rows.
void IndexTsvFile::measure_locked() {
  if (!page_end_.empty() || npages() == 0) return;
  const int64_t n = frame_->nchunks();
  const bool uniform = frame_->index_is_uniform() && n >= 2;
  int64_t row_rest = 0, last_extra = 0;  // uniform: bytes after the number; what the last row adds
  if (uniform) {
    row_rest = int64_t(index_tsv_rows(*frame_, 0, 1).size()) - 1;  // after "0"
    last_extra = int64_t(index_tsv_rows(*frame_, n - 1, 1).size()) - int64_t(std::to_string(n - 1).size()) - row_rest;
  }
  std::vector<int64_t> ends;
  ends.reserve(size_t(npages()));
  int64_t end = int64_t(header_.size());
  for (int64_t p = 0; p < npages(); ++p) {
    const int64_t first = p * kRowsPerPage, stop = std::min(first + kRowsPerPage, n);
    if (uniform) {
      end += digits_in_range(first, stop) + (stop - first) * row_rest + (stop == n ? last_extra : 0);
    } else {
      std::string text = index_tsv_rows(*frame_, first, kRowsPerPage);
      end += int64_t(text.size());
      if (kept_.size() < kPagesKept) keep_locked(p, std::move(text));  // the first pages: where readers start
    }
    ends.push_back(end);
  }
  page_end_ = std::move(ends);
}

int64_t IndexTsvFile::page_start_locked(int64_t p) const {
  return p == 0 ? int64_t(header_.size()) : page_end_[size_t(p - 1)];
}

void IndexTsvFile::keep_locked(int64_t p, std::string text) {
  kept_.emplace_front(p, std::move(text));
  if (kept_.size() > kPagesKept) kept_.pop_back();
}

const std::string& IndexTsvFile::page_locked(int64_t p) {
  auto it = std::find_if(kept_.begin(), kept_.end(), [p](const auto& kept) { return kept.first == p; });
  if (it != kept_.end()) {
    kept_.splice(kept_.begin(), kept_, it);
  } else {
    std::string text = index_tsv_rows(*frame_, p * kRowsPerPage, kRowsPerPage);
    // A chunk header that read once and failed once (or the other way) would
    // shift every later byte of the file: refuse rather than serve that.
    if (int64_t(text.size()) != page_end_[size_t(p)] - page_start_locked(p))
      throw IoError("index.tsv: the rows of chunks " + std::to_string(p * kRowsPerPage) + " to " +
                        std::to_string(std::min((p + 1) * kRowsPerPage, frame_->nchunks()) - 1) +
                        " read differently than when the file was measured",
                    EIO);
    keep_locked(p, std::move(text));
  }
  return kept_.front().second;
}

size_t IndexTsvFile::read(int64_t offset, MutableByteSpan out) {
  std::lock_guard lock(mutex_);
  measure_locked();
  size_t done = 0;
  auto copy = [&](const std::string& text, int64_t text_start) {
    const int64_t from = offset + int64_t(done) - text_start;
    if (from < 0 || from >= int64_t(text.size())) return;
    const size_t n = std::min(out.size() - done, text.size() - size_t(from));
    std::memcpy(out.data() + done, text.data() + from, n);
    done += n;
  };
  if (offset < 0) return 0;
  copy(header_, 0);
  // The page holding the next byte to copy: the first whose end lies past it.
  auto next = std::upper_bound(page_end_.begin(), page_end_.end(), offset + int64_t(done));
  for (; done < out.size() && next != page_end_.end(); ++next) {
    const int64_t p = next - page_end_.begin();
    copy(page_locked(p), page_start_locked(p));
  }
  return done;
}

}  // namespace blosc2fs
