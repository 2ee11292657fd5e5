// preview.png of one committed state of a frame: planned from its metadata,
// drawn through the chunk cache at the first open that wants it, and kept.
#pragma once

#include <cstdint>
#include <memory>

#include "b2nd.h"
#include "bytes.h"
#include "chunk_cache.h"
#include "preview.h"
#include "thread_safety.h"

namespace blosc2fs {

class PreviewFile {
 public:
  // `layout` is the array's, owned by the caller and outliving this.
  PreviewFile(PreviewPlan plan, const NdLayout& layout, ChunkCache& cache);
  PreviewFile(const PreviewFile&) = delete;
  PreviewFile& operator=(const PreviewFile&) = delete;

  // The PNG's size once drawn; before, the largest it can be: stat never draws.
  int64_t size() const EXCLUDES(png_mutex_);
  // The PNG, drawn now when it was not yet; `drawn` says whether this call
  // drew it. Throws FormatError / IoError.
  std::shared_ptr<const Bytes> png(bool* drawn) EXCLUDES(draw_mutex_, png_mutex_);
  // Takes over what `before` drew, unless this one drew already.
  void keep_drawing_of(const PreviewFile& before) EXCLUDES(png_mutex_);

 private:
  Bytes draw();

  const PreviewPlan plan_;
  const NdLayout& layout_;
  ChunkCache& cache_;
  Mutex draw_mutex_;          // held while drawing: one drawing at a time
  mutable Mutex png_mutex_;   // never held while drawing
  std::shared_ptr<const Bytes> png_ GUARDED_BY(png_mutex_);
};

}  // namespace blosc2fs
