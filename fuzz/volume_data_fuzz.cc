// Random scripts of what the kernel asks of `data` (open with O_TRUNC or
// O_APPEND, write anywhere, truncate or extend, flush, release), mixed with
// vlmetalayer writes and remounts, on a Volume over a small frame the first
// input byte chooses. A model of the bytes follows every operation the Volume
// accepts: every read through the Volume, and the frame opened afresh after
// each remount, must give exactly the model.
#include <fcntl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "error.h"
#include "frame.h"
#include "frame_writer.h"
#include "fs_error.h"
#include "fuzz_script.h"
#include "inodes.h"
#include "volume.h"

namespace {
using namespace blosc2fs;
using fuzz::fail;
namespace fs = std::filesystem;

constexpr size_t kHandles = 2;
// Repeated extensions would otherwise grow data, and the time each input takes, without bound.
constexpr size_t kMaxDataSize = 64 << 10;

void check_read(Volume& volume, const Bytes& model, const char* when) {
  const uint64_t ino = volume.lookup(kRootIno, "data").value();
  if (volume.attributes(ino).st_size != int64_t(model.size()))
    fail(std::string(when) + ": data has size " + std::to_string(volume.attributes(ino).st_size) + ", the model " +
         std::to_string(model.size()));
  Bytes got(model.size() + 16);
  got.resize(volume.read(ino, 0, got));
  if (got != model) fail(std::string(when) + ": data reads differently from the model");
}

void check_frame(const fs::path& path, const Bytes& model) {
  try {
    auto frame = Frame::open(path);
    Bytes stored;
    for (int64_t n = 0; n < frame->nchunks(); ++n) {
      Bytes c = frame->read_chunk(n);
      stored.insert(stored.end(), c.begin(), c.end());
    }
    if (stored != model) fail("the frame holds other data than the model");
  } catch (const FormatError& e) {
    fail(std::string("the frame does not read back: ") + e.what());
  } catch (const IoError& e) {
    fail(std::string("the frame does not read back: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 2048) return 0;  // longer scripts only take longer
  fuzz::Script in(data, size);
  const uint8_t setup = in.byte();
  const fs::path path = fuzz::fresh_scratch_dir() / "frame.b2frame";

  FrameParams params;
  params.sparse = setup & 1;
  params.cparams.typesize = (setup & 2) ? 4 : 1;
  params.chunksize = (setup & 4) ? 0 : int32_t(64 * (1 + (setup >> 3) % 4) * params.cparams.typesize);
  Bytes model;
  const size_t nchunks = (setup >> 5) % 4;
  // Bit 7 with a fixed chunksize and two chunks or more: the first chunk is
  // the short one, as c-blosc2's reorder leaves it.
  const int32_t fixed_chunksize = params.chunksize;
  const bool short_first = fixed_chunksize > 0 && nchunks >= 2 && (setup & 0x80);
  if (short_first) params.chunksize = 0;
  {
    FrameWriter writer(path, params);
    for (size_t n = 0; n < nchunks; ++n) {
      size_t length = fixed_chunksize ? size_t(fixed_chunksize) : 100 * (n + 1);
      if (short_first && n == 0) length = length / 2 + 1;
      Bytes chunk = fuzz::script_data(length, uint8_t(n + 2));
      writer.append(chunk);
      model.insert(model.end(), chunk.begin(), chunk.end());
    }
    writer.close();
  }
  if (short_first) fuzz::set_fixed_chunksize(path, params.sparse, fixed_chunksize);
  VolumeOptions options;
  options.writable = true;
  options.edit.sync = false;
  options.refresh_interval = std::chrono::milliseconds(0);
  options.preferred_chunksize = 256;
  options.batch_chunks = 2;  // long writes commit in batches while the file is open
  options.batch_min_bytes = 0;
  options.cache_budget = 4096;
  auto volume = std::make_unique<Volume>(path, options);
  std::unique_ptr<OpenFile> handles[kHandles];
  std::vector<bool> appending(kHandles);
  KernelNotes notes;

  auto close_all = [&] {
    for (auto& h : handles) {
      if (!h) continue;
      try {
        volume->flush(*h, notes);
      } catch (const FsError& e) {
        fail("flush at close failed with errno " + std::to_string(e.error));
      }
      volume->release(std::move(h), notes);
    }
  };

  while (!in.empty()) {
    const uint8_t op = in.byte();
    const size_t h = (op >> 4) % kHandles;
    const uint64_t data_ino = volume->lookup(kRootIno, "data").value();
    try {
      switch (op % 8) {
        case 0: {  // open, as the kernel does: O_TRUNC empties the file at once
          if (handles[h]) break;
          const uint8_t how = in.byte();
          const int flags = O_WRONLY | (how & 1 ? O_TRUNC : 0) | (how & 2 ? O_APPEND : 0);
          bool keep = false, direct = false;
          handles[h] = volume->open(data_ino, flags, keep, direct, notes);
          appending[h] = flags & O_APPEND;
          if (flags & O_TRUNC) model.clear();
          break;
        }
        case 1: {  // write
          if (!handles[h]) break;
          const uint8_t where = in.byte();
          const size_t length = 1 + size_t(in.byte()) * 3;
          Bytes bytes = fuzz::script_data(length, in.byte());
          size_t offset = appending[h] ? model.size()
                          : where < 200 ? model.size() * where / 200
                                        : model.size() + (where - 200) * 5;  // past the end: a hole
          if (offset + length > kMaxDataSize) break;
          volume->write(*handles[h], int64_t(offset), bytes, notes);
          if (model.size() < offset + length) model.resize(offset + length, 0);
          std::copy(bytes.begin(), bytes.end(), model.begin() + int64_t(offset));
          break;
        }
        case 2: {  // truncate -s, through a handle or by name
          const uint8_t to = in.byte();
          const size_t new_size = std::min(model.size() * (to & 0x7F) / 64, kMaxDataSize);
          volume->setattr(data_ino, (to & 0x80) ? handles[h].get() : nullptr, int64_t(new_size), notes);
          model.resize(new_size, 0);
          break;
        }
        case 3:  // fsync
          if (handles[h]) volume->flush(*handles[h], notes, true);
          break;
        case 4:  // close
          if (!handles[h]) break;
          volume->flush(*handles[h], notes);
          volume->release(std::move(handles[h]), notes);
          break;
        case 5:
          check_read(*volume, model, "read");
          break;
        case 6: {  // echo > vlmeta/x: a commit of another kind between data edits
          const uint64_t vlmeta = volume->lookup(kRootIno, "vlmeta").value();
          std::unique_ptr<OpenFile> file;
          const std::string name = (in.byte() & 1) ? "x" : "y";
          if (std::optional<uint64_t> ino = volume->lookup(vlmeta, name)) {
            bool keep = false, direct = false;
            file = volume->open(*ino, O_WRONLY | O_TRUNC, keep, direct, notes);
          } else {
            file = volume->create(vlmeta, name, O_WRONLY | O_CREAT | O_TRUNC, notes).second;
          }
          volume->write(*file, 0, fuzz::script_data(1 + in.byte() % 32, 9), notes);
          volume->flush(*file, notes);
          volume->release(std::move(file), notes);
          break;
        }
        case 7:  // unmount and mount again
          close_all();
          volume->shutdown();
          volume.reset();
          check_frame(path, model);
          volume = std::make_unique<Volume>(path, options);
          break;
      }
    } catch (const FsError& e) {
      fail("operation " + std::to_string(op % 8) + " failed with errno " + std::to_string(e.error));
    }
  }
  check_read(*volume, model, "the end, before close");
  close_all();
  volume->shutdown();
  volume.reset();
  check_frame(path, model);
  return 0;
}
