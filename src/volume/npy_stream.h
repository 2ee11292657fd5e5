// array.npy replaced by a program that writes it in order (cp, np.save,
// shutil.copyfile): the new frame is made while the bytes arrive. Each row of
// chunks along the first axis is filled from the C-order bytes as they come,
// compressed on a thread of its own (on every core) while FUSE goes on
// receiving, and appended to a new frame beside the old one, which
// FrameEditor::install_rewrite renames over it at close. No byte goes through
// the holding file; memory is a few rows of chunks. A write behind what was
// received (or a read of it) makes recover() give those bytes back, decoded
// from the new frame, so the holding file takes over (array_npy.cc).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "b2nd.h"
#include "bytes.h"
#include "frame_writer.h"

namespace blosc2fs {

class NpyRowStream {
 public:
  // A new frame at `temp` (created here) made with `params`, of the array `layout` describes.
  NpyRowStream(const NdLayout& layout, const std::filesystem::path& temp, const FrameParams& params);
  // Abandons what is not finished: the thread stops, the temporary file goes.
  ~NpyRowStream();
  NpyRowStream(const NpyRowStream&) = delete;
  NpyRowStream& operator=(const NpyRowStream&) = delete;

  int64_t received() const { return received_; }  // bytes of the array taken in order
  int64_t array_bytes() const { return layout_.array_bytes(); }
  const std::filesystem::path& temp() const { return temp_; }

  // The next bytes of the array (C order) after received().
  void feed(ByteSpan bytes);
  // Once every byte was fed: waits for the last rows to be appended and
  // returns the writer, for install_rewrite to close. Throws what compressing
  // or appending threw.
  FrameWriter& finish();
  // Gives bytes [0, received()) back in C order, in pieces (`put(offset, bytes)`),
  // decoded from the new frame and the row being filled; then removes the new
  // frame. The stream is done with afterwards.
  void recover(const std::function<void(int64_t offset, ByteSpan bytes)>& put);

 private:
  struct Row {
    int64_t index = 0;
    std::vector<Bytes> chunks;
  };
  int64_t row_start(int64_t row) const;  // its first byte in C order
  void begin_row();
  void enqueue_row();
  void run();        // the thread: compresses the queued rows, appends them in order
  void stop_thread(bool drain);

  NdLayout layout_;
  std::filesystem::path temp_;
  CompressParams cparams_;
  int64_t rows_ = 0, row_chunks_ = 0, row_bytes_ = 0;
  bool ragged_ = false;  // rows whose edge chunks hold padding
  int64_t received_ = 0;
  bool finished_ = false;  // the new frame is installed or removed: not ours to remove any more
  Row filling_;          // the row the next bytes go to (producer side only)
  std::optional<FrameWriter> writer_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Row> queue_;
  std::vector<std::vector<Bytes>> spare_;  // row buffers to reuse
  size_t queued_chunks_ = 0, max_queued_chunks_ = 0;
  int64_t rows_appended_ = 0;
  bool closing_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::jthread thread_;
};

}  // namespace blosc2fs
