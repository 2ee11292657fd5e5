#include "preview_file.h"

#include <chrono>

#include <spdlog/spdlog.h>

namespace blosc2fs {

PreviewFile::PreviewFile(PreviewPlan plan, const NdLayout& layout, ChunkCache& cache)
    : plan_(std::move(plan)), layout_(layout), cache_(cache) {}

int64_t PreviewFile::size() const {
  {
    MutexLock lock(png_mutex_);
    if (png_) return int64_t(png_->size());
  }
  return preview_png_size_bound(plan_);
}

std::shared_ptr<const Bytes> PreviewFile::png(bool* drawn) {
  MutexLock drawing(draw_mutex_);
  {
    MutexLock lock(png_mutex_);
    if (png_) return png_;
  }
  auto png = std::make_shared<const Bytes>(draw());
  MutexLock lock(png_mutex_);
  png_ = std::move(png);
  if (drawn) *drawn = true;
  return png_;
}

Bytes PreviewFile::draw() {
  const auto start = std::chrono::steady_clock::now();
  const ChunkCacheStats before = cache_.stats();
  // Chunks the drawing brings into the cache leave it when their last block
  // is drawn: a preview of a big image must not fill the cache with partly
  // decoded chunks, nor evict what other readers use.
  int64_t current = -1;
  bool brought = false;
  auto view = [&](int64_t n, int64_t offset, int64_t length, std::shared_ptr<const void>& keep) {
    if (n != current) {
      current = n;
      brought = !cache_.holds(n);
    }
    return cache_.view(n, offset, size_t(length), keep);
  };
  auto chunk_done = [&](int64_t n) {
    if (n == current && brought) cache_.release(n);
  };
  Bytes png = encode_png(render_preview(plan_, layout_, view, chunk_done));
  const ChunkCacheStats after = cache_.stats();
  spdlog::debug("preview.png: {} x {} drawn in {} ms, {} bytes; chunk cache misses {}, blocks decoded {}",
                plan_.width, plan_.height,
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count(),
                png.size(), after.misses - before.misses, after.decoded_blocks - before.decoded_blocks);
  return png;
}

void PreviewFile::keep_drawing_of(const PreviewFile& before) {
  std::shared_ptr<const Bytes> png;
  {
    MutexLock lock(before.png_mutex_);
    png = before.png_;
  }
  MutexLock lock(png_mutex_);
  if (!png_) png_ = std::move(png);
}

}  // namespace blosc2fs
