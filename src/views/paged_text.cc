#include "paged_text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "error.h"

namespace blosc2fs {

PagedText::PagedText(std::string name, std::string header, int64_t nrows, int64_t rows_per_page, Rows rows,
                     Measure measure)
    : name_(std::move(name)),
      header_(std::move(header)),
      nrows_(std::max<int64_t>(nrows, 0)),
      rows_per_page_(std::max<int64_t>(rows_per_page, 1)),
      rows_(std::move(rows)),
      measure_(std::move(measure)) {}

int64_t PagedText::size() {
  std::lock_guard lock(mutex_);
  measure_locked();
  return page_end_.empty() ? int64_t(header_.size()) : page_end_.back();
}

void PagedText::measure_locked() {
  if (!page_end_.empty() || npages() == 0) return;
  std::vector<int64_t> ends;
  ends.reserve(size_t(npages()));
  int64_t end = int64_t(header_.size());
  for (int64_t p = 0; p < npages(); ++p) {
    const int64_t first = p * rows_per_page_, stop = std::min(first + rows_per_page_, nrows_);
    std::optional<int64_t> known = measure_ ? measure_(first, stop) : std::nullopt;
    if (known) {
      end += *known;
    } else {
      std::string text = rows_(first, stop - first);
      end += int64_t(text.size());
      if (kept_.size() < kPagesKept) keep_locked(p, std::move(text));  // the first pages: where readers start
    }
    ends.push_back(end);
  }
  page_end_ = std::move(ends);
}

int64_t PagedText::page_start_locked(int64_t p) const {
  return p == 0 ? int64_t(header_.size()) : page_end_[size_t(p - 1)];
}

void PagedText::keep_locked(int64_t p, std::string text) {
  kept_.emplace_front(p, std::move(text));
  if (kept_.size() > kPagesKept) kept_.pop_back();
}

const std::string& PagedText::page_locked(int64_t p) {
  auto it = std::find_if(kept_.begin(), kept_.end(), [p](const auto& kept) { return kept.first == p; });
  if (it != kept_.end()) {
    kept_.splice(kept_.begin(), kept_, it);
  } else {
    const int64_t first = p * rows_per_page_;
    std::string text = rows_(first, std::min(rows_per_page_, nrows_ - first));
    // A chunk that read once and failed once (or the other way) would shift
    // every later byte of the file: refuse rather than serve that.
    if (int64_t(text.size()) != page_end_[size_t(p)] - page_start_locked(p))
      throw IoError(name_ + ": the rows " + std::to_string(first) + " to " +
                        std::to_string(std::min(first + rows_per_page_, nrows_) - 1) +
                        " read differently than when the file was measured",
                    EIO);
    keep_locked(p, std::move(text));
  }
  return kept_.front().second;
}

size_t PagedText::read(int64_t offset, MutableByteSpan out) {
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
