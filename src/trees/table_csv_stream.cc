#include "table_csv_stream.h"

#include <algorithm>
#include <cstring>

namespace blosc2fs {

void TableCsvStream::read(int64_t offset, size_t size, ReadPieces& out) {
  constexpr size_t kStep = size_t(1) << 20;
  MutexLock lock(mutex_);
  if (!started_ || offset < base_) {
    base_ = 0;
    text_ = csv_->header();
    row_ = 0;
    started_ = true;
  }
  const int64_t end = offset + int64_t(size);
  while (base_ + int64_t(text_.size()) < end && row_ < csv_->physical_rows()) {
    // Text wholly before the read is dropped as it is made: a read far ahead holds no more than a step.
    if (base_ + int64_t(text_.size()) <= offset) {
      base_ += int64_t(text_.size());
      text_.clear();
    }
    const size_t want = std::min<size_t>(size_t(end - base_), text_.size() + kStep);
    row_ = csv_->append_rows(row_, want, text_);
  }
  if (offset > base_) {
    const size_t drop = std::min<size_t>(text_.size(), size_t(offset - base_));
    text_.erase(0, drop);
    base_ += int64_t(drop);
  }
  if (offset != base_) return;  // past the end
  const size_t n = std::min(size, text_.size());
  MutableByteSpan dst = out.add_copy(n);
  std::memcpy(dst.data(), text_.data(), n);
}

}  // namespace blosc2fs
