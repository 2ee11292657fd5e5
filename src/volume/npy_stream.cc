#include "npy_stream.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "chunk_codec.h"
#include "frame.h"
#include "huge_pages.h"
#include "parallel_encode.h"
#include "thread_name.h"

namespace blosc2fs {

namespace {
// Bytes given back at a time by recover().
constexpr int64_t kRecoverPiece = int64_t(8) << 20;
// What the row being filled and the chunks waiting or being compressed may
// hold together (each chunk being compressed also has its output and the
// codec's scratch): the batch bound of commits (docs/writing.md). A whole row
// is queued at least; at most one chunk per core is compressed at a time.
constexpr int64_t kInFlightBytes = int64_t(32) << 20;

// The new frame a stream made and nobody installed: a file, or a sparse frame's directory.
void remove_unused_frame(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(std::filesystem::symlink_status(path, ec))) std::filesystem::remove_all(path, ec);
  else ::unlink(path.c_str());
}
}  // namespace

NpyRowStream::NpyRowStream(const NdLayout& layout, const std::filesystem::path& temp, const FrameParams& params)
    : layout_(layout), temp_(temp), cparams_(params.cparams) {
  const std::vector<int64_t>& shape = layout_.shape();
  const std::vector<int64_t>& chunkshape = layout_.chunkshape();
  const int64_t nchunks = layout_.nchunks();
  if (layout_.nitems() > 0 && nchunks > 0) {
    rows_ = shape.empty() ? 1 : layout_.chunks_per_dim()[0];
    row_chunks_ = nchunks / rows_;
    row_bytes_ = shape.empty() ? layout_.array_bytes()
                               : layout_.array_bytes() / shape[0] * chunkshape[0];
  }
  for (size_t k = 1; k < shape.size(); ++k) ragged_ = ragged_ || shape[k] % chunkshape[k] != 0;
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t fit = kInFlightBytes / std::max<int64_t>(1, layout_.chunk_bytes()) - row_chunks_;
  max_queued_chunks_ = size_t(std::max(row_chunks_, std::min(cores, fit)));
  writer_.emplace(temp_, params);
  thread_ = std::jthread([this] {
    name_this_thread("b2fs-npy-stream");
    run();
  });
}

NpyRowStream::~NpyRowStream() {
  stop_thread(false);
  if (finished_) return;
  try {
    writer_.reset();
  } catch (...) {
  }
  remove_unused_frame(temp_);
}

int64_t NpyRowStream::row_start(int64_t row) const { return std::min(layout_.array_bytes(), row * row_bytes_); }

void NpyRowStream::begin_row() {
  std::vector<Bytes> chunks;
  {
    std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      chunks = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  // Padding is never written: a reused buffer is zeroed again only where the
  // row holds chunks at the array's edge, whose padding an earlier row filled.
  const bool edge = ragged_ || (!layout_.shape().empty() && filling_.index == rows_ - 1 &&
                                layout_.shape()[0] % layout_.chunkshape()[0] != 0);
  chunks.resize(size_t(row_chunks_));
  for (Bytes& c : chunks) {
    if (c.size() != size_t(layout_.chunk_bytes())) {
      c.clear();
      c.shrink_to_fit();
      c.reserve(size_t(layout_.chunk_bytes()));
      advise_huge_pages(c.data(), c.capacity());  // before the zeros touch it
      c.assign(size_t(layout_.chunk_bytes()), 0);
    } else if (edge) std::fill(c.begin(), c.end(), uint8_t(0));
  }
  filling_.chunks = std::move(chunks);
}

void NpyRowStream::feed(ByteSpan bytes) {
  if (int64_t(bytes.size()) > layout_.array_bytes() - received_)
    throw std::out_of_range("the stream of a new array.npy was fed past the array's end");
  while (!bytes.empty()) {
    if (filling_.chunks.empty()) begin_row();
    const int64_t end = row_start(filling_.index + 1);
    const size_t n = size_t(std::min<int64_t>(int64_t(bytes.size()), end - received_));
    const int64_t first_chunk = filling_.index * row_chunks_;
    layout_.write(received_, bytes.first(n),
                  [&](int64_t c) -> MutableByteSpan { return filling_.chunks.at(size_t(c - first_chunk)); });
    received_ += int64_t(n);
    bytes = bytes.subspan(n);
    if (received_ == end) enqueue_row();
  }
}

void NpyRowStream::enqueue_row() {
  Row row = std::move(filling_);
  filling_ = Row{row.index + 1, {}};
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    return queued_chunks_ == 0 || queued_chunks_ + size_t(row_chunks_) <= max_queued_chunks_ || error_ || stopping_;
  });
  if (error_ || stopping_) {  // what was received is dropped; finish() or recover() says why
    spare_.push_back(std::move(row.chunks));
    return;
  }
  queued_chunks_ += size_t(row_chunks_);
  queue_.push_back(std::move(row));
  changed_.notify_all();
}

void NpyRowStream::run() {
  for (;;) {
    std::deque<Row> batch;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !queue_.empty() || closing_ || stopping_; });
      if (stopping_ || queue_.empty()) return;
      batch.swap(queue_);
    }
    try {
      std::vector<ByteSpan> inputs;
      for (const Row& r : batch)
        for (const Bytes& c : r.chunks) inputs.push_back(c);
      std::vector<EncodedChunk> encoded =
          encode_in_parallel(inputs, [&](ByteSpan raw, unsigned threads) {
            return encode_chunk(raw, cparams_, threads);
          });
      for (EncodedChunk& e : encoded) {
        if (e.error) std::rethrow_exception(e.error);
        writer_->append_encoded(std::move(e.stored), int32_t(layout_.chunk_bytes()));
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    std::lock_guard lock(mutex_);
    for (Row& r : batch) {
      queued_chunks_ -= r.chunks.size();
      spare_.push_back(std::move(r.chunks));
      ++rows_appended_;
    }
    changed_.notify_all();
  }
}

void NpyRowStream::stop_thread(bool drain) {
  {
    std::lock_guard lock(mutex_);
    (drain ? closing_ : stopping_) = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

FrameWriter& NpyRowStream::finish() {
  stop_thread(true);
  if (error_) std::rethrow_exception(error_);
  if (received_ != layout_.array_bytes() || rows_appended_ != rows_)
    throw FormatError(temp_.string() + ": the new frame is not complete");
  finished_ = true;  // install_rewrite renames the file or removes it
  return *writer_;
}

void NpyRowStream::recover(const std::function<void(int64_t, ByteSpan)>& put) {
  stop_thread(true);
  if (error_) std::rethrow_exception(error_);
  writer_->close();
  writer_.reset();
  std::unique_ptr<Frame> frame = Frame::open(temp_);
  Bytes piece;
  auto give = [&](int64_t row, const std::function<ByteSpan(int64_t)>& chunk) {
    const int64_t to = std::min(row_start(row + 1), received_);
    for (int64_t at = row_start(row); at < to; at += kRecoverPiece) {
      piece.resize(size_t(std::min(kRecoverPiece, to - at)));
      layout_.read(at, piece, chunk);
      put(at, piece);
    }
  };
  std::vector<Bytes> decoded;
  for (int64_t row = 0; row < rows_appended_; ++row) {
    decoded.clear();
    for (int64_t i = 0; i < row_chunks_; ++i) decoded.push_back(frame->read_chunk(row * row_chunks_ + i));
    give(row, [&](int64_t c) -> ByteSpan { return decoded.at(size_t(c - row * row_chunks_)); });
  }
  if (!filling_.chunks.empty())
    give(filling_.index, [&](int64_t c) -> ByteSpan { return filling_.chunks.at(size_t(c - filling_.index * row_chunks_)); });
  frame.reset();
  remove_unused_frame(temp_);
  finished_ = true;
}

}  // namespace blosc2fs
