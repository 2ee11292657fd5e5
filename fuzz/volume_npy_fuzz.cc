// Random scripts of what the kernel asks of array.npy (in-place writes anywhere,
// header rewrites, truncations, whole replacements by open(O_TRUNC) and writes of
// a .npy of another shape or byte order, fsync, close, remount) on a Volume over
// a small b2nd array the first input bytes shape (ndim 0 to 3, chunk shapes that
// are not multiples of the block shape, edge chunks, contiguous or sparse). A
// NumPy-like model (the C-order bytes and the shape) follows every operation the
// Volume accepts; the ones it must refuse (EINVAL) leave the model alone. Every
// read of array.npy, and the frame opened afresh after each remount through
// NdLayout::read, must give exactly the model.
#include <fcntl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "b2nd.h"
#include "error.h"
#include "frame.h"
#include "frame_nd.h"
#include "frame_writer.h"
#include "fs_error.h"
#include "fuzz_script.h"
#include "inodes.h"
#include "volume.h"

namespace {
using namespace blosc2fs;
using fuzz::fail;
namespace fs = std::filesystem;

constexpr int64_t kMaxItems = 4096;

struct Model {
  std::vector<int64_t> shape;
  Bytes items;  // C order, little-endian <i4
  std::string header() const { return npy_header("<i4", shape); }
  Bytes file() const {
    const std::string h = header();
    Bytes out(h.begin(), h.end());
    out.insert(out.end(), items.begin(), items.end());
    return out;
  }
};

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

void check_read(Volume& volume, const Model& model, const std::string& when) {
  const uint64_t ino = volume.lookup(kRootIno, "array.npy").value();
  const Bytes want = model.file();
  if (volume.attributes(ino).st_size != int64_t(want.size()))
    fail(when + ": array.npy has size " + std::to_string(volume.attributes(ino).st_size) + ", the model " +
         std::to_string(want.size()));
  Bytes got(want.size() + 16);
  got.resize(volume.read(ino, 0, got));
  if (got != want) fail(when + ": array.npy reads differently from the model");
}

void check_frame(const fs::path& path, const Model& model) {
  std::vector<int64_t> shape;
  const Bytes items = fuzz::nd_items_of(path, &shape);
  if (shape != model.shape) fail("the frame's shape differs from the model's");
  if (items != model.items) fail("the frame holds other items than the model");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4 || size > 2048) return 0;
  fuzz::Script in(data, size);
  const uint8_t setup = in.byte();
  const fs::path path = fuzz::fresh_scratch_dir() / "array.b2nd";

  NdMeta meta;
  meta.ndim = setup % 4;
  meta.dtype = "<i4";
  Model model;
  for (int i = 0; i < meta.ndim; ++i) {
    const uint8_t dims = in.byte();
    const int64_t extent = 1 + dims % 13;
    const int32_t chunk = int32_t(1 + (dims >> 4) % uint32_t(extent + 1));  // may pass the extent: an edge chunk
    const int32_t block = int32_t(1 + in.byte() % uint32_t(chunk));        // rarely divides the chunk
    meta.shape.push_back(extent);
    meta.chunkshape.push_back(chunk);
    meta.blockshape.push_back(block);
  }
  model.shape = meta.shape;
  const int64_t nitems = product(meta.shape);
  int64_t chunk_items = 1, nchunks = 1;
  for (int i = 0; i < meta.ndim; ++i) {
    const int64_t c = meta.chunkshape[size_t(i)], b = meta.blockshape[size_t(i)];
    chunk_items *= (c + b - 1) / b * b;
    nchunks *= (meta.shape[size_t(i)] + c - 1) / c;
  }
  FrameParams params;
  params.sparse = setup & 0x10;
  params.cparams.typesize = 4;
  params.chunksize = int32_t(chunk_items * 4);
  params.metalayers.push_back({"b2nd", serialize_b2nd_meta(meta)});
  model.items = fuzz::script_data(size_t(nitems * 4), uint8_t(2 + (setup >> 5)));
  fuzz::write_nd_frame(path, params, meta, 4, nchunks, model.items);

  VolumeOptions options;
  options.writable = true;
  options.edit.sync = false;
  options.refresh_interval = std::chrono::milliseconds(0);
  options.batch_chunks = 2;  // long writes commit in batches while the file is open
  options.batch_min_bytes = 0;
  options.cache_budget = 4096;
  auto volume = std::make_unique<Volume>(path, options);
  std::unique_ptr<OpenFile> file;
  // A replacement under way: the bytes of the new file, and what the array
  // becomes at close (nullopt: the file is incomplete and must be refused).
  std::optional<Bytes> replacement;
  std::optional<Model> replaced;
  KernelNotes notes;

  auto expect_einval = [&](const char* what, const auto& action) {
    try {
      action();
    } catch (const FsError& e) {
      if (e.error != EINVAL) fail(std::string(what) + ": errno " + std::to_string(e.error) + ", want EINVAL");
      return;
    }
    fail(std::string(what) + " was accepted; want EINVAL");
  };
  auto close_file = [&] {
    if (!file) return;
    if (replacement && !replaced) {
      expect_einval("closing an incomplete .npy", [&] { volume->flush(*file, notes); });
    } else {
      volume->flush(*file, notes);
      if (replaced) model = *replaced;
    }
    volume->release(std::move(file), notes);
    replacement.reset();
    replaced.reset();
  };

  while (!in.empty()) {
    const uint8_t op = in.byte();
    const uint64_t ino = volume->lookup(kRootIno, "array.npy").value();
    const int64_t header_len = int64_t(model.header().size());
    const int64_t total = header_len + int64_t(model.items.size());
    try {
      switch (op % 8) {
        case 0: {  // open; O_TRUNC starts a replacement, written whole at once here
          if (file) break;
          const uint8_t how = in.byte();
          bool keep = false, direct = false;
          if (!(how & 1)) {
            file = volume->open(ino, O_RDWR, keep, direct, notes);
            break;
          }
          file = volume->open(ino, O_WRONLY | O_TRUNC, keep, direct, notes);
          Model next = model;  // another first dimension resizes the array
          if (!next.shape.empty()) next.shape[0] = 1 + (how >> 1) % 9;
          if (product(next.shape) > kMaxItems) next.shape = model.shape;
          next.items = fuzz::script_data(size_t(product(next.shape) * 4), uint8_t(how >> 3));
          Bytes whole = next.file();
          if (how & 0x40) {  // the same items as a >i4 .npy: converted at close
            const std::string h = npy_header(">i4", next.shape);
            whole.assign(h.begin(), h.end());
            for (size_t i = 0; i < next.items.size(); i += 4)
              for (int k = 3; k >= 0; --k) whole.push_back(next.items[i + size_t(k)]);
          }
          if (how & 0x80) whole.resize(whole.size() - 1 - how % 3);  // incomplete: refused at close
          else replaced = next;
          // In two writes: in order (straight into the new frame, npy_stream.h),
          // or the second half first (held, then taken once the first arrives).
          const size_t half = whole.size() / 2;
          const bool in_order = (how >> 4) & 1;
          if (in_order) volume->write(*file, 0, ByteSpan(whole).first(half), notes);
          volume->write(*file, int64_t(half), ByteSpan(whole).subspan(half), notes);
          if (!in_order) volume->write(*file, 0, ByteSpan(whole).first(half), notes);
          replacement = whole;
          // A read of what the new frame took gives it back to the held file;
          // left unread, the close installs the frame made as the bytes came.
          if (in_order && (how >> 5) & 1) break;
          Bytes got(whole.size() + 8);
          got.resize(volume->read(ino, 0, got));
          if (got != whole) fail("array.npy does not read back the replacement being written");
          break;
        }
        case 1: {  // an in-place write of items
          if (!file || replacement || model.items.empty()) break;
          const uint8_t where = in.byte();
          const size_t length = 1 + size_t(in.byte()) % 40;
          const int64_t offset = header_len + int64_t(model.items.size()) * where / 256;
          if (offset + int64_t(length) > total) break;
          Bytes bytes = fuzz::script_data(length, in.byte());
          volume->write(*file, offset, bytes, notes);
          std::copy(bytes.begin(), bytes.end(), model.items.begin() + (offset - header_len));
          break;
        }
        case 2: {  // header bytes: the same (accepted) or changed (EINVAL)
          if (!file || replacement) break;
          const uint8_t b = in.byte();
          const std::string h = model.header();
          const int64_t at = b % header_len;
          const int64_t length = std::min<int64_t>(1 + b / 16, total - at);
          Bytes bytes(h.begin() + at, h.begin() + std::min<int64_t>(at + length, header_len));
          if (at + length > header_len)
            bytes.insert(bytes.end(), model.items.begin(), model.items.begin() + (at + length - header_len));
          if (b & 1) {
            volume->write(*file, at, bytes, notes);
          } else {
            bytes[0] ^= 0x20;
            expect_einval("a changed header byte", [&] { volume->write(*file, at, bytes, notes); });
          }
          break;
        }
        case 3: {  // a write past the end, a truncation to another size: EINVAL
          if (!file || replacement) break;
          if (in.byte() & 1)
            expect_einval("a write past the end", [&] { volume->write(*file, total, Bytes(4, 1), notes); });
          else
            expect_einval("a truncation", [&] { volume->setattr(ino, file.get(), total - 1 - in.byte() % 8, notes); });
          break;
        }
        case 4:  // fsync: commits a replacement once it is whole, else leaves it be
          if (!file) break;
          volume->flush(*file, notes, true);
          if (replacement && replaced) {
            model = *replaced;
            replacement.reset();
            replaced.reset();
          }
          break;
        case 5:
          if (!replacement) check_read(*volume, model, "read");
          break;
        case 6:  // close
          close_file();
          break;
        case 7:  // unmount and mount again
          close_file();
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
  if (!replacement) check_read(*volume, model, "the end, before close");
  close_file();
  volume->shutdown();
  volume.reset();
  check_frame(path, model);
  return 0;
}
