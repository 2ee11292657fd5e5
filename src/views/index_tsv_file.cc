#include "index_tsv_file.h"

#include <algorithm>
#include <climits>
#include <string>

#include "frame_json.h"

namespace blosc2fs {

namespace {

// How many digits the numbers [first, end) have together.
int64_t digits_in_range(int64_t first, int64_t end) {
  int64_t total = 0, low = 0, high = 10;
  for (int digits = 1; low < end; ++digits, low = high, high = high > INT64_MAX / 10 ? INT64_MAX : high * 10) {
    const int64_t a = std::max(first, low), b = std::min(end, high);
    if (a < b) total += (b - a) * digits;
  }
  return total;
}

PagedText::Measure uniform_measure(const std::shared_ptr<const Frame>& frame) {
  const int64_t n = frame->nchunks();
  // A proxy's "fetched" column varies by row: its pages are made to be measured.
  if (!frame->index_is_uniform() || n < 2) return {};
  struct Uniform {
    int64_t row_rest = -1, last_extra = 0;  // bytes after the number; what the last row adds
  };
  auto u = std::make_shared<Uniform>();
  return [frame, n, u](int64_t first, int64_t stop) -> std::optional<int64_t> {
    if (u->row_rest < 0) {
      u->row_rest = int64_t(index_tsv_rows(*frame, 0, 1).size()) - 1;  // after "0"
      u->last_extra =
          int64_t(index_tsv_rows(*frame, n - 1, 1).size()) - int64_t(std::to_string(n - 1).size()) - u->row_rest;
    }
    return digits_in_range(first, stop) + (stop - first) * u->row_rest + (stop == n ? u->last_extra : 0);
  };
}

}  // namespace

IndexTsvFile::IndexTsvFile(std::shared_ptr<const Frame> frame, std::shared_ptr<const ProxyState> proxy)
    : PagedText(
          "index.tsv", index_tsv_header(proxy.get()), frame->nchunks(), kRowsPerPage,
          [frame, proxy](int64_t first, int64_t count) { return index_tsv_rows(*frame, first, count, proxy.get()); },
          proxy ? PagedText::Measure() : uniform_measure(frame)) {}

}  // namespace blosc2fs
