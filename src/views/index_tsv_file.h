// index.tsv for frames of any number of chunks, a page of rows at a time
// (PagedText). A uniform index gives every row the same text after the chunk
// number but for the last row, so its pages are measured without making them.
#pragma once

#include <cstdint>
#include <memory>

#include "frame.h"
#include "kind.h"
#include "paged_text.h"

namespace blosc2fs {

class IndexTsvFile : public PagedText {
 public:
  static constexpr int64_t kRowsPerPage = 4096;

  // `proxy`: a proxy cache's fetched chunks, shown in a last column "fetched".
  explicit IndexTsvFile(std::shared_ptr<const Frame> frame, std::shared_ptr<const ProxyState> proxy = nullptr);
};

}  // namespace blosc2fs
