// Random scripts of what Zarr writers do to the Zarr view (zarr_writes.cc) of a
// b2nd array the first input byte shapes: small arrays of plain chunk files
// (0-d to 3-d, chunk shapes that are not multiples of the block shape, edge
// chunks) or arrays of 1 MiB chunks seen as shards (blocks as square tiles or
// whole rows: inner chunks that are blocks or runs of them). Chunk files are
// written whole to a temporary name beside their key and renamed over it, as
// zarr-python does: plain chunks, shards with their inner chunks in any order
// and some left to the fill value, and hostile files (wrong sizes, index
// entries of the wrong length, inside the index, wrapping around, half
// "empty"), which must be refused with EINVAL and leave the array alone. Keys
// are removed (the fill value), zarr.json is rewritten (attributes only:
// taken; anything else: EPERM), the volume is remounted. A model (the array's
// C-order bytes) follows every accepted change; every chunk file read, the
// frame read afresh and array.npy must agree with it.
#include <fcntl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
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
#include "msgpack.h"
#include "volume.h"

namespace {
using namespace blosc2fs;
using fuzz::fail;
namespace fs = std::filesystem;

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// The array as the model keeps it, and the geometry of its Zarr chunks.
struct Model {
  std::vector<int64_t> shape, chunk, inner;  // inner: empty for plain chunk files
  std::vector<int64_t> grid;
  int64_t typesize = 0;
  Bytes items;  // C order

  bool sharded() const { return !inner.empty(); }
  int64_t nchunks() const { return product(grid); }
  int64_t chunk_items() const { return product(chunk); }
  int64_t file_size() const {
    const int64_t data = chunk_items() * typesize;
    return sharded() ? data + chunk_items() / product(inner) * 16 : data;
  }
  // Where element e (C order over the chunk shape) of chunk n lies: its byte in
  // the chunk file's data, and its item in the array (-1: outside, padding).
  void locate(int64_t n, int64_t e, int64_t& file_offset, int64_t& array_item) const {
    const size_t nd = chunk.size();  // at most 3
    int64_t cc[8] = {}, ec[8] = {};
    for (size_t k = nd; k-- > 0;) {
      cc[k] = n % grid[k];
      n /= grid[k];
      ec[k] = e % chunk[k];
      e /= chunk[k];
    }
    array_item = 0;
    for (size_t k = 0; k < nd; ++k) {
      const int64_t at = cc[k] * chunk[k] + ec[k];
      if (at >= shape[k]) {
        array_item = -1;
        break;
      }
      array_item = array_item * shape[k] + at;
    }
    if (!sharded()) {
      int64_t linear = 0;
      for (size_t k = 0; k < nd; ++k) linear = linear * chunk[k] + ec[k];
      file_offset = linear * typesize;
      return;
    }
    int64_t which = 0, within = 0;
    for (size_t k = 0; k < nd; ++k) {
      which = which * (chunk[k] / inner[k]) + ec[k] / inner[k];
      within = within * inner[k] + ec[k] % inner[k];
    }
    file_offset = (which * product(inner) + within) * typesize;
  }
};

struct ChunkKey {
  uint64_t dir = 0;
  std::string name;
};

// The directory and name of chunk n's key: c/I/J/K, or c beside zarr.json (0-d).
ChunkKey key_of(Volume& volume, const Model& m, int64_t n) {
  if (m.shape.empty()) return {kRootIno, "c"};
  std::vector<int64_t> cc(m.grid.size());
  for (size_t k = cc.size(); k-- > 0;) {
    cc[k] = n % m.grid[k];
    n /= m.grid[k];
  }
  uint64_t dir = volume.lookup(kRootIno, "c").value();
  for (size_t k = 0; k + 1 < cc.size(); ++k) {
    std::optional<uint64_t> next = volume.lookup(dir, std::to_string(cc[k]));
    if (!next) fail("no directory c/.../" + std::to_string(cc[k]));
    dir = *next;
  }
  return {dir, std::to_string(cc.back())};
}

Bytes read_all(Volume& volume, uint64_t ino) {
  Bytes out(size_t(volume.attributes(ino).st_size) + 16);
  out.resize(volume.read(ino, 0, out));
  return out;
}

void check_chunk(Volume& volume, const Model& m, int64_t n) {
  const ChunkKey key = key_of(volume, m, n);
  std::optional<uint64_t> ino = volume.lookup(key.dir, key.name);
  if (!ino) fail("chunk " + std::to_string(n) + " has no key");
  const Bytes file = read_all(volume, *ino);
  if (int64_t(file.size()) != m.file_size())
    fail("chunk file " + std::to_string(n) + " is " + std::to_string(file.size()) + " bytes, want " +
         std::to_string(m.file_size()));
  const int64_t data = m.chunk_items() * m.typesize;
  if (m.sharded()) {  // the view's own index: inner chunk i at i * innerbytes, or all "empty" for a zeros chunk
    const int64_t inner_bytes = product(m.inner) * m.typesize;
    bool empty = true;
    for (int64_t at = data; at < int64_t(file.size()); ++at) empty = empty && file[size_t(at)] == 0xff;
    for (int64_t i = 0; !empty && i < m.chunk_items() / product(m.inner); ++i) {
      const uint64_t offset = load_le64(file.data() + data + 16 * i), nbytes = load_le64(file.data() + data + 16 * i + 8);
      if (offset != uint64_t(i * inner_bytes) || nbytes != uint64_t(inner_bytes))
        fail("chunk file " + std::to_string(n) + ": index entry " + std::to_string(i) + " is not the view's");
    }
  }
  for (int64_t e = 0; e < m.chunk_items(); ++e) {
    int64_t offset = 0, item = 0;
    m.locate(n, e, offset, item);
    if (item < 0) continue;
    if (std::memcmp(file.data() + offset, m.items.data() + item * m.typesize, size_t(m.typesize)) != 0)
      fail("chunk file " + std::to_string(n) + " element " + std::to_string(e) + " differs from the model");
  }
}

void check_array(Volume& volume, const Model& m, const std::string& when) {
  const uint64_t ino = volume.lookup(kRootIno, "array.npy").value();
  const Bytes file = read_all(volume, ino);
  if (file.size() < m.items.size() ||
      !std::equal(m.items.begin(), m.items.end(), file.end() - int64_t(m.items.size())))
    fail(when + ": array.npy reads differently from the model");
}

void check_frame(const fs::path& path, const Model& m) {
  if (fuzz::nd_items_of(path) != m.items) fail("the frame holds other items than the model");
}

// Writes `content` to a temporary name beside chunk n's key and renames it over
// the key; returns 0 or the errno of the rename (the temporary file is removed then).
int write_key(Volume& volume, const Model& m, int64_t n, const Bytes& content, KernelNotes& notes) {
  const ChunkKey key = key_of(volume, m, n);
  const std::string temp = key.name + ".0123456789abcdef.partial";
  auto [ino, file] = volume.create(key.dir, temp, O_WRONLY | O_CREAT | O_TRUNC, notes);
  (void)ino;
  if (!content.empty()) volume.write(*file, 0, content, notes);
  volume.flush(*file, notes);
  volume.release(std::move(file), notes);
  try {
    volume.rename(key.dir, temp, key.dir, key.name, 0, notes);
  } catch (const FsError& e) {
    volume.unlink(key.dir, temp, notes);
    return e.error;
  }
  if (volume.lookup(key.dir, temp)) fail("the temporary file stayed after its rename");
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4 || size > 1024) return 0;
  fuzz::Script in(data, size);
  const uint8_t setup = in.byte();
  const fs::path path = fuzz::fresh_scratch_dir() / "array.b2nd";
  const bool big = setup & 1;  // 1 MiB chunks: a sharded view

  NdMeta meta;
  Model model;
  if (big) {
    model.typesize = (setup & 2) ? 8 : 4;
    meta.ndim = 1 + (setup >> 2) % 3;
    int log_left = (model.typesize == 8 ? 17 : 18);  // a chunk of exactly 1 MiB
    int wide_dims = 0;
    for (int i = 0; i < meta.ndim; ++i) {
      const uint8_t b = in.byte();
      const int log_c = i + 1 == meta.ndim ? log_left : std::min(log_left, int(b % 11));
      log_left -= log_c;
      const int64_t c = int64_t(1) << log_c;
      const int64_t blk = c >> std::min(log_c, int((b >> 4) % 5));  // divides the chunk; often whole rows
      const bool two = wide_dims < 2 && (b & 8);
      wide_dims += two;
      const int64_t extent = two ? 2 * c - int64_t(in.byte()) % c : c - int64_t(in.byte()) % c;
      meta.shape.push_back(extent);
      meta.chunkshape.push_back(int32_t(c));
      meta.blockshape.push_back(int32_t(blk));
    }
  } else {
    const int64_t sizes[4] = {1, 2, 4, 8};
    model.typesize = sizes[(setup >> 1) & 3];
    meta.ndim = (setup >> 3) % 4;
    for (int i = 0; i < meta.ndim; ++i) {
      const uint8_t dims = in.byte();
      const int64_t extent = 1 + dims % 13;
      const int32_t chunk = int32_t(1 + (dims >> 4) % uint32_t(extent + 1));
      const int32_t block = int32_t(1 + in.byte() % uint32_t(chunk));
      meta.shape.push_back(extent);
      meta.chunkshape.push_back(chunk);
      meta.blockshape.push_back(block);
    }
  }
  meta.dtype = model.typesize == 1 ? "|u1" : "<u" + std::to_string(model.typesize);
  model.shape = meta.shape;
  int64_t padded_items = 1, nchunks = 1;
  for (int i = 0; i < meta.ndim; ++i) {
    const int64_t c = meta.chunkshape[size_t(i)], b = meta.blockshape[size_t(i)];
    padded_items *= (c + b - 1) / b * b;
    model.chunk.push_back(c);
    model.grid.push_back((meta.shape[size_t(i)] + c - 1) / c);
    nchunks *= model.grid.back();
  }
  const int64_t nitems = product(meta.shape);
  FrameParams params;
  params.cparams.typesize = int32_t(model.typesize);
  params.cparams.clevel = 1;
  params.chunksize = int32_t(padded_items * model.typesize);
  params.metalayers.push_back({"b2nd", serialize_b2nd_meta(meta)});
  model.items = fuzz::script_data(size_t(nitems * model.typesize), uint8_t(2 + (setup >> 5)));
  fuzz::write_nd_frame(path, params, meta, int32_t(model.typesize), nchunks, model.items);

  VolumeOptions options;
  options.writable = true;
  options.edit.sync = false;
  options.refresh_interval = std::chrono::milliseconds(0);
  options.cache_budget = int64_t(4) << 20;
  auto volume = std::make_unique<Volume>(path, options);
  KernelNotes notes;

  // The view's metadata: sharded exactly when the chunks are of 1 MiB, and the
  // inner chunk shape it states (a block, or a run of whole-row blocks).
  {
    std::optional<uint64_t> zj = volume->lookup(kRootIno, "zarr.json");
    if (!zj) fail("no zarr.json");
    const Bytes text = read_all(*volume, *zj);
    const Json j = Json::parse(std::string(text.begin(), text.end()));
    const Json& codec = j["codecs"][0];
    if ((codec["name"] == "sharding_indexed") != big) fail("sharded is not what the chunk size says");
    if (big) {
      for (const Json& d : codec["configuration"]["chunk_shape"]) model.inner.push_back(d.get<int64_t>());
      if (model.inner.size() != model.chunk.size()) fail("the inner chunk shape has another rank");
      int64_t inner_bytes = model.typesize;
      for (size_t k = 0; k < model.inner.size(); ++k) {
        if (model.chunk[k] % model.inner[k] != 0) fail("the inner chunks do not tile the chunk");
        if (model.inner[k] % meta.blockshape[k] != 0) fail("an inner chunk is not whole blocks");
        inner_bytes *= model.inner[k];
      }
      if (model.inner != model.chunk && inner_bytes > (int64_t(1) << 20)) fail("an inner chunk over 1 MiB");
    }
  }

  auto new_chunk = [&](int64_t n, uint8_t seed, std::vector<bool>* left_empty) {
    // The chunk's elements (C order over the chunk shape) and the file that holds them.
    const Bytes values = fuzz::script_data(size_t(model.chunk_items() * model.typesize), seed);
    Bytes file(static_cast<size_t>(model.file_size()), 0);
    Bytes elements = values;
    if (!model.sharded()) {
      file = values;
      return std::make_pair(file, elements);
    }
    const int64_t ninner = model.chunk_items() / product(model.inner);
    const int64_t inner_bytes = product(model.inner) * model.typesize;
    const int64_t data_bytes = model.chunk_items() * model.typesize;
    // The shard's data laid out by the view's own order first, then moved.
    Bytes by_inner(static_cast<size_t>(data_bytes));
    for (int64_t e = 0; e < model.chunk_items(); ++e) {
      int64_t offset = 0, item = 0;
      model.locate(n, e, offset, item);
      std::memcpy(by_inner.data() + offset, values.data() + e * model.typesize, size_t(model.typesize));
    }
    left_empty->assign(size_t(ninner), false);
    for (int64_t i = 0; i < ninner; ++i) {
      const int64_t slot = (i * (1 + 2 * (seed % 7)) + seed) % ninner;  // an odd stride: a permutation when ninner is a power of 2
      const bool empty = ((seed >> 3) & 3) == 0 && i % 3 == 1;
      uint64_t offset = uint64_t(i * inner_bytes), nbytes = uint64_t(inner_bytes);
      if (ninner > 1 && (ninner & (ninner - 1)) == 0) offset = uint64_t(slot * inner_bytes);
      if (empty) {
        offset = nbytes = ~uint64_t(0);
        (*left_empty)[size_t(i)] = true;
      } else {
        std::memcpy(file.data() + offset, by_inner.data() + i * inner_bytes, size_t(inner_bytes));
      }
      store_le64(file.data() + data_bytes + 16 * i, offset);
      store_le64(file.data() + data_bytes + 16 * i + 8, nbytes);
    }
    // The elements the shard holds: the fill value (zeros) in inner chunks left empty.
    for (int64_t e = 0; e < model.chunk_items(); ++e) {
      int64_t offset = 0, item = 0;
      model.locate(n, e, offset, item);
      if ((*left_empty)[size_t(offset / inner_bytes)])
        std::memset(elements.data() + e * model.typesize, 0, size_t(model.typesize));
    }
    return std::make_pair(file, elements);
  };
  auto take_chunk = [&](int64_t n, const Bytes& elements) {
    for (int64_t e = 0; e < model.chunk_items(); ++e) {
      int64_t offset = 0, item = 0;
      model.locate(n, e, offset, item);
      if (item >= 0)
        std::memcpy(model.items.data() + item * model.typesize, elements.data() + e * model.typesize,
                    size_t(model.typesize));
    }
  };

  int ops = 0;
  while (!in.empty() && ops++ < (big ? 12 : 40)) {
    const uint8_t op = in.byte();
    const int64_t n = model.nchunks() ? int64_t(in.byte()) % model.nchunks() : 0;
    try {
      switch (op % 6) {
        case 0:
          if (model.nchunks()) check_chunk(*volume, model, n);
          break;
        case 1: {  // a whole chunk file renamed over its key
          if (!model.nchunks() || model.shape.empty()) break;
          std::vector<bool> left_empty;
          auto [file, elements] = new_chunk(n, in.byte(), &left_empty);
          if (int err = write_key(*volume, model, n, file, notes))
            fail("a chunk file of the view's own form refused: errno " + std::to_string(err));
          take_chunk(n, elements);
          break;
        }
        case 2: {  // a hostile chunk file: EINVAL, the array unchanged
          if (!model.nchunks() || model.shape.empty()) break;
          const uint8_t how = in.byte();
          std::vector<bool> left_empty;
          Bytes file = new_chunk(n, how, &left_empty).first;
          const int64_t data_bytes = model.chunk_items() * model.typesize;
          if (!model.sharded() || how % 5 == 0) {
            file.resize(how & 0x80 ? file.size() + 1 + how % 3 : file.size() - std::min<size_t>(file.size(), 1 + how % 7));
          } else {
            const int64_t ninner = model.chunk_items() / product(model.inner);
            const int64_t i = int64_t(how >> 3) % ninner;
            const uint64_t inner_bytes = uint64_t(product(model.inner) * model.typesize);
            uint64_t offset = 0, nbytes = inner_bytes;
            switch (how % 5) {
              case 1: nbytes = inner_bytes - 1; break;                        // not one inner chunk long
              case 2: offset = uint64_t(data_bytes) - inner_bytes + 1; break;  // into the index
              case 3: offset = ~uint64_t(0) - 100; break;                      // wraps around
              case 4: offset = ~uint64_t(0); break;                            // half "empty"
            }
            store_le64(file.data() + data_bytes + 16 * i, offset);
            store_le64(file.data() + data_bytes + 16 * i + 8, nbytes);
          }
          const int err = write_key(*volume, model, n, file, notes);
          if (err != EINVAL) fail("a hostile chunk file: errno " + std::to_string(err) + ", want EINVAL");
          break;
        }
        case 3: {  // the key removed: the fill value
          if (!model.nchunks() || model.shape.empty()) break;
          const ChunkKey key = key_of(*volume, model, n);
          volume->unlink(key.dir, key.name, notes);
          take_chunk(n, Bytes(size_t(model.chunk_items() * model.typesize), 0));
          if (!volume->lookup(key.dir, key.name)) fail("a removed key left the view (it reads as the fill value)");
          break;
        }
        case 4: {  // zarr.json rewritten: attributes taken, any other change refused
          const uint8_t how = in.byte();
          const uint64_t zj = volume->lookup(kRootIno, "zarr.json").value();
          const Bytes text = read_all(*volume, zj);
          Json j = Json::parse(std::string(text.begin(), text.end()));
          const bool other = how & 1;
          if (other) j["fill_value"] = 1 + how;
          else j["attributes"]["fuzz"] = int(how);
          const std::string written = j.dump();
          auto [ino, file] = volume->create(kRootIno, "zarr.json.0123.partial", O_WRONLY | O_CREAT | O_TRUNC, notes);
          (void)ino;
          volume->write(*file, 0, ByteSpan(reinterpret_cast<const uint8_t*>(written.data()), written.size()), notes);
          volume->flush(*file, notes);
          volume->release(std::move(file), notes);
          int err = 0;
          try {
            volume->rename(kRootIno, "zarr.json.0123.partial", kRootIno, "zarr.json", 0, notes);
          } catch (const FsError& e) {
            err = e.error;
            volume->unlink(kRootIno, "zarr.json.0123.partial", notes);
          }
          if (other && err != EPERM) fail("zarr.json with another fill value: errno " + std::to_string(err));
          if (!other && err != 0) fail("zarr.json with new attributes refused: errno " + std::to_string(err));
          if (!other) {
            const Bytes back = read_all(*volume, zj);
            if (Json::parse(std::string(back.begin(), back.end()))["attributes"]["fuzz"] != int(how))
              fail("zarr.json does not show the attribute written");
          }
          break;
        }
        case 5:  // unmount and mount again
          volume->shutdown();
          volume.reset();
          check_frame(path, model);
          volume = std::make_unique<Volume>(path, options);
          check_array(*volume, model, "after the remount");
          break;
      }
    } catch (const FsError& e) {
      fail("operation " + std::to_string(op % 6) + " failed with errno " + std::to_string(e.error));
    }
  }
  check_array(*volume, model, "the end");
  for (int64_t n = 0; n < model.nchunks(); ++n) check_chunk(*volume, model, n);
  volume->shutdown();
  volume.reset();
  check_frame(path, model);
  return 0;
}
