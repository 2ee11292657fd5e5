// Random sequences of frame edits, as the mount stages them: vlmetalayers set,
// removed and renamed; chunks replaced, appended, truncated, replaced raw;
// commits, discards, compactions and reopenings. A model of the content follows
// every edit the editor accepts; after each commit the frame, opened afresh,
// must hold exactly the model. The first two input bytes choose the frame.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chunk_codec.h"
#include "error.h"
#include "frame.h"
#include "frame_editor.h"
#include "frame_writer.h"
#include "fuzz_script.h"

namespace {
using namespace blosc2fs;
using fuzz::fail;
namespace fs = std::filesystem;

constexpr int32_t kTypesizes[] = {1, 2, 4, 8};
const char* const kNames[] = {"a", "b", "attrs", "0123456789012345678901234567890",
                              "01234567890123456789012345678901"};  // 31 and 32 bytes

struct Model {
  std::vector<Bytes> chunks;
  std::map<std::string, Bytes> vlmetas;
};


void verify(const fs::path& path, const Model& model) {
  std::unique_ptr<Frame> frame;
  try {
    frame = Frame::open(path);
    if (frame->nchunks() != int64_t(model.chunks.size()))
      fail(std::to_string(frame->nchunks()) + " chunks, the model has " + std::to_string(model.chunks.size()));
    for (size_t n = 0; n < model.chunks.size(); ++n)
      if (frame->read_chunk(int64_t(n)) != model.chunks[n]) fail("chunk " + std::to_string(n) + " differs");
    std::map<std::string, Bytes> vlmetas;
    for (const Vlmetalayer& layer : frame->vlmetalayers()) vlmetas[layer.name] = frame->vlmetalayer_content(layer);
    if (vlmetas != model.vlmetas) fail("vlmetalayers differ");
    // What c-blosc2 needs to read a fixed-chunksize frame the same way: the
    // count from nbytes, and special entries only where it sizes them right
    // (the last one gets the remainder, the others the chunksize).
    const FrameHeader& h = frame->header();
    if (h.chunksize > 0) {
      if (frame->nchunks() != (h.nbytes + h.chunksize - 1) / h.chunksize) fail("nchunks does not follow from nbytes");
      const int64_t short_at = frame->short_chunk();
      for (int64_t n = 0; n < frame->nchunks(); ++n) {
        if (frame->index_entry(n).special == Special::none) continue;
        const bool last = n == frame->nchunks() - 1;
        if (last ? short_at >= 0 && short_at != n : n == short_at)
          fail("special index entry at chunk " + std::to_string(n) + " that c-blosc2 would size wrong");
      }
    } else if (h.chunksize == 0) {
      for (int64_t n = 0; n < frame->nchunks(); ++n)
        if (frame->index_entry(n).special != Special::none) fail("special index entry in a variable frame (B2)");
    }
  } catch (const std::exception& e) {
    fail(std::string("committed frame does not read back: ") + e.what());
  }
}

// A size near the frame's chunksize, or any small size for variable chunks.
size_t chunk_size(fuzz::Script& in, int32_t chunksize) {
  const uint8_t b = in.byte();
  if (chunksize == 0) return size_t(1 + b % 64) * 16;
  switch (b % 6) {
    case 0: return size_t(chunksize) / 2;
    case 1: return size_t(chunksize) + 8;
    case 2: return 8;
    default: return size_t(chunksize);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Longer scripts find nothing new and would run into the time limit.
  if (size < 2 || size > 4096) return 0;
  fuzz::Script in(data, size);
  const uint8_t setup = in.byte(), shape = in.byte();
  const fs::path path = fuzz::fresh_scratch_dir() / "frame.b2frame";

  FrameParams params;
  params.sparse = setup & 1;
  params.cparams.codec = kCodecs[(setup >> 1) % std::size(kCodecs)];
  params.cparams.typesize = kTypesizes[(setup >> 4) % std::size(kTypesizes)];
  params.chunksize = (setup & 0x40) ? 0 : int32_t(256 * (1 + shape % 4));
  Model model;
  // Bit 7 with a fixed chunksize: the first chunk is the short one, as
  // c-blosc2's reorder leaves it (written with variable chunks, then the
  // header's chunksize and version set).
  const int32_t fixed_chunksize = params.chunksize;
  const bool short_first = fixed_chunksize > 0 && (setup & 0x80);
  if (short_first) params.chunksize = 0;
  {
    FrameWriter writer(path, params);
    const size_t first = fixed_chunksize ? size_t(fixed_chunksize) : 200;
    for (uint8_t seed : {uint8_t(2), uint8_t(shape % 3)}) {
      const size_t n = short_first && model.chunks.empty() ? first / 2 : first;
      writer.append(fuzz::script_data(n, seed));
      model.chunks.push_back(fuzz::script_data(n, seed));
    }
    writer.set_vlmetalayer("a", fuzz::script_data(5, 3));
    model.vlmetas["a"] = fuzz::script_data(5, 3);
    writer.close();
  }
  if (short_first) fuzz::set_fixed_chunksize(path, params.sparse, fixed_chunksize);
  EditOptions options;
  options.sync = false;
  auto editor = std::make_unique<FrameEditor>(path, 0, options);
  Model staged = model;

  while (!in.empty()) {
    const uint8_t op = in.byte();
    const std::string name = kNames[in.byte() % std::size(kNames)];
    const int64_t nchunks = int64_t(staged.chunks.size());
    try {
      switch (op % 10) {
        case 0: {
          Bytes content = fuzz::script_data(in.byte() % 48, in.byte());
          editor->set_vlmetalayer(name, content);
          staged.vlmetas[name] = std::move(content);
          break;
        }
        case 1:
          editor->remove_vlmetalayer(name);
          staged.vlmetas.erase(name);
          break;
        case 2: {
          const std::string to = kNames[in.byte() % std::size(kNames)];
          editor->rename_vlmetalayer(name, to);
          if (name != to) {
            staged.vlmetas[to] = staged.vlmetas.at(name);
            staged.vlmetas.erase(name);
          }
          break;
        }
        case 3: {
          const int64_t n = in.byte() % (nchunks + 1);
          Bytes chunk = fuzz::script_data(chunk_size(in, editor->frame().header().chunksize), in.byte());
          editor->replace_chunk(n, chunk);
          if (n < nchunks) staged.chunks[size_t(n)] = std::move(chunk);
          else fail("replace_chunk past the end was accepted");
          break;
        }
        case 4: {
          Bytes chunk = fuzz::script_data(chunk_size(in, editor->frame().header().chunksize), in.byte());
          editor->append_chunk(chunk);
          staged.chunks.push_back(std::move(chunk));
          break;
        }
        case 5: {
          const int64_t keep = in.byte() % (nchunks + 2);
          editor->truncate_chunks(keep);
          if (keep > nchunks) fail("truncate_chunks beyond the end was accepted");
          staged.chunks.resize(size_t(keep));
          break;
        }
        case 6: {
          // A chunk as a user writes it to raw/N.chunk: ours, or one with bytes changed.
          const int64_t n = in.byte() % (nchunks + 1);
          Bytes plain = fuzz::script_data(chunk_size(in, editor->frame().header().chunksize), in.byte());
          CompressParams cparams = params.cparams;
          cparams.codec = kCodecs[in.byte() % std::size(kCodecs)];
          Bytes raw = encode_chunk(plain, cparams);
          const uint8_t flip = in.byte();
          if (flip & 1) raw[size_t(flip >> 1) % raw.size()] ^= in.byte() | 1;
          // A frame of variable chunks takes any size; the fuzzer's memory does not.
          if (raw.size() >= 16 && load_le32(raw.data() + 4) > (1u << 20)) break;
          editor->replace_raw_chunk(n, raw);
          if (n >= nchunks) fail("replace_raw_chunk past the end was accepted");
          Bytes decoded(ChunkView(raw).nbytes());
          ChunkView(raw).decode(decoded);
          staged.chunks[size_t(n)] = std::move(decoded);
          break;
        }
        case 7:
          editor->commit();
          model = staged;
          verify(path, model);
          if (op & 0x80) editor = std::make_unique<FrameEditor>(path, 0, options);
          break;
        case 8:
          editor->discard_staged_edits();
          staged = model;
          break;
        case 9:
          if (editor->has_staged_edits()) break;
          editor->compact();
          verify(path, model);
          break;
      }
    } catch (const IoError&) {
      // A refused edit must leave nothing staged: the final check would see it.
    } catch (const FormatError&) {
    }
  }
  try {
    editor->commit();
  } catch (const std::exception& e) {
    fail(std::string("final commit: ") + e.what());
  }
  verify(path, staged);
  return 0;
}
