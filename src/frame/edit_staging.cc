// Staging edits against a loaded Frame and checking them against the format's
// rules when they are staged (format-notes §3.1, c-blosc2's own readers).
#include "edit_staging.h"

#include <algorithm>
#include <cerrno>
#include <climits>

#include "b2nd.h"
#include "codec_registry.h"
#include "dynamic_plugins.h"
#include "error.h"
#include "frame_nd.h"
#include "frame_writer.h"
#include "parallel_encode.h"

namespace blosc2fs::editor {

namespace {

bool all_zero(ByteSpan data) {
  return std::all_of(data.begin(), data.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

EditStaging::EditStaging(std::filesystem::path path, const std::unique_ptr<Frame>& frame)
    : path_(std::move(path)), frame_(frame) {}

void EditStaging::reset(bool vlblocks) {
  staged_ = {};
  staged_.nchunks = frame().nchunks();
  staged_.chunksize = frame().header().chunksize;
  staged_.vlblocks = vlblocks;
  staged_.temp_nonce = random_nonce();
  base_nchunks_ = staged_.nchunks;
  base_chunksize_ = staged_.chunksize;
}

void EditStaging::reset_keeping_metalayer_writes(bool vlblocks) {
  auto metalayers = std::move(staged_.metalayer_writes);
  reset(vlblocks);
  staged_.metalayer_writes = std::move(metalayers);
}

void EditStaging::rebase(bool vlblocks) {
  if (staged_.chunks_dirty && (frame().nchunks() != base_nchunks_ || frame().header().chunksize != base_chunksize_))
    fail(path_, "changed by another writer since the chunk edits were staged", ESTALE);
  if (staged_.chunks_dirty) settle_short_chunks();  // the short chunk may have moved
  if (!staged_.chunks_dirty) {
    staged_.nchunks = frame().nchunks();
    staged_.chunksize = frame().header().chunksize;
    staged_.vlblocks = vlblocks;
  }
}

std::vector<Vlmetalayer> EditStaging::vlmetalayers() const {
  return apply_vlmeta_ops(frame().vlmetalayers(), staged_.vlmeta_ops);
}

bool EditStaging::has_vlmetalayer(const std::string& name) const {
  auto layers = vlmetalayers();
  return std::any_of(layers.begin(), layers.end(), [&](const Vlmetalayer& l) { return l.name == name; });
}

void EditStaging::check_vlmeta_name(const std::string& name) const {
  if (const std::optional<LayerNameRefusal> refusal = refuse_layer_name(name)) fail(path_, refusal->why, refusal->error);
}

void EditStaging::set_vlmetalayer(const std::string& name, ByteSpan content) {
  check_vlmeta_name(name);
  if (!has_vlmetalayer(name) && vlmetalayers().size() >= size_t(kMaxMetalayers))
    fail(path_, "cannot add vlmetalayer '" + name + "': the frame already has 16", ENOSPC);
  Bytes stored;
  try {
    stored = encode_vlmeta_chunk(content);
  } catch (const FormatError& e) {
    fail(path_, "vlmetalayer '" + name + "': " + e.what(), EINVAL);
  }
  staged_.vlmeta_ops.push_back({VlmetaOp::Kind::set, name, {}, std::move(stored)});
}

void EditStaging::remove_vlmetalayer(const std::string& name) {
  if (!has_vlmetalayer(name)) fail(path_, "no vlmetalayer '" + name + "'", ENOENT);
  staged_.vlmeta_ops.push_back({VlmetaOp::Kind::remove, name, {}, {}});
}

void EditStaging::rename_vlmetalayer(const std::string& from, const std::string& to) {
  check_vlmeta_name(to);
  if (!has_vlmetalayer(from)) fail(path_, "no vlmetalayer '" + from + "'", ENOENT);
  staged_.vlmeta_ops.push_back({VlmetaOp::Kind::rename, from, to, {}});
}

void EditStaging::set_metalayer(const std::string& name, ByteSpan content) {
  const Metalayer* layer = frame().find_metalayer(name);
  if (!layer) fail(path_, "no metalayer '" + name + "'", ENOENT);
  if (layer->content.size() != content.size())
    fail(path_, "metalayer '" + name + "' is " + std::to_string(layer->content.size()) +
                    " bytes; it can only be overwritten with as many (" + std::to_string(content.size()) +
                    " given)", EINVAL);
  if (name == "b2nd" || name == "caterva") {
    try {
      (void)parse_nd_meta(content, name == "caterva");
    } catch (const FormatError& e) {
      fail(path_, "metalayer '" + name + "' would no longer decode: " + e.what(), EINVAL);
    }
  }
  staged_.metalayer_writes[name] = Bytes(content.begin(), content.end());
}

int32_t EditStaging::chunk_nbytes(int64_t n) const {
  auto it = staged_.chunks.find(n);
  return it != staged_.chunks.end() ? it->second.nbytes : frame().chunk_nbytes(n);
}

CompressParams EditStaging::compress_params() const {
  const FrameHeader& h = frame().header();
  const CodecInfo* codec = frame_codec(h);
  if (codec && codec->runtime_plugin && !codec->encodable()) {
    report_missing_plugin(*codec);
    fail(path_, "the frame's codec " + frame_codec_name(h) + " is loaded at run time and no plugin is loaded (" +
                    plugin_install_hint(*codec) + "), so chunks cannot be rewritten (metadata edits still work)",
         EOPNOTSUPP);
  }
  if (!codec || !codec->encodable())
    fail(path_, "the frame's codec " + frame_codec_name(h) +
                    " cannot be encoded here, so chunks cannot be rewritten (metadata edits still work)",
         EOPNOTSUPP);
  CompressParams p;
  p.codec = Codec(codec->id);
  p.geometry = frame().decode_rules().geometry;
  p.clevel = h.clevel();
  p.typesize = h.typesize;
  p.blocksize = h.blocksize;
  p.filters = h.filters;
  p.filters_meta = h.filters_meta;
  p.splitmode = h.splitmode();
  p.compcode_meta = h.compcode_meta;
  return p;
}

// Checks the size rules of format-notes §3.1 for putting a chunk of `nbytes`
// at logical position n (n == staged_.nchunks: append) and returns the
// chunksize the frame has afterwards.
int32_t EditStaging::check_chunk_size(int64_t n, int64_t nbytes) const {
  const int64_t count = staged_.nchunks;
  const int32_t cs = staged_.chunksize;
  const bool append = n == count;
  if (n < 0 || n > count)
    fail(path_, "chunk " + std::to_string(n) + " does not exist (" + std::to_string(count) + " chunks)", EINVAL);
  if (nbytes <= 0 || nbytes > int64_t(INT32_MAX) - 64)
    fail(path_, "chunk " + std::to_string(n) + ": size " + std::to_string(nbytes) + " is not allowed", EINVAL);
  if (cs == 0) return 0;
  if (cs < 0) {
    if (count > 0) fail(path_, "chunksize is unset but the frame has chunks", EINVAL);
    return int32_t(nbytes);
  }
  if (nbytes > cs)
    fail(path_, "chunk " + std::to_string(n) + ": " + std::to_string(nbytes) + " bytes exceed the chunksize " +
                    std::to_string(cs), EINVAL);
  const bool last = n == count - 1 || append;
  // The frame's one short chunk keeps any size up to chunksize wherever it
  // sits (c-blosc2's reorder and insert move it from the end).
  if (!last && nbytes != cs && n != frame().short_chunk())
    fail(path_, "chunk " + std::to_string(n) + ": only the last chunk (or the one chunk already shorter) may be "
                    "shorter than the chunksize " + std::to_string(cs), EINVAL);
  if (append && count > 0 && chunk_nbytes(count - 1) != cs)
    fail(path_, "cannot append: the last chunk is shorter than the chunksize " + std::to_string(cs), EINVAL);
  return cs;
}

// After each chunk edit: how many chunks end up shorter than the fixed
// chunksize, given that the committed chunks are all full but the frame's
// short chunk. One: the frame keeps its chunksize, wherever that chunk sits.
// Two (a truncation or an append behind a short chunk that is not the last):
// the frame becomes variable, as c-blosc2's insert and update make it.
void EditStaging::settle_short_chunks() {
  staged_.becomes_variable = false;
  staged_.short_chunk = -1;
  const int32_t cs = staged_.chunksize;
  if (cs <= 0) return;
  int64_t shorts = 0, first_short = -1;
  const int64_t committed_short = frame().header().chunksize == cs ? frame().short_chunk() : -1;
  if (committed_short >= 0 && committed_short < staged_.nchunks && !staged_.chunks.count(committed_short)) {
    shorts = 1;
    first_short = committed_short;
  }
  for (const auto& [n, chunk] : staged_.chunks) {
    if (chunk.nbytes >= cs) continue;
    ++shorts;
    if (first_short < 0 || n < first_short) first_short = n;
  }
  if (shorts >= 2) staged_.becomes_variable = true;
  else staged_.short_chunk = first_short;
}

// Stores zeros/NaN/uninit chunks the way c-blosc2 reads back everywhere:
// special index entries with a fixed chunksize, repeat-value chunks with a
// variable one (never a physical zeros/nan/uninit chunk, bug B3). Zeros that
// are not a whole number of the frame's items become an ordinary chunk:
// c-blosc2 3.3.5 cannot open a frame whose first chunk is a special entry
// or a repeat-value chunk of such a size, nor decode one elsewhere
// (python-blosc2's own `append_data(bytes(122))` at typesize 4 leaves a
// frame it cannot open; the model test found the mount doing the same).
StagedChunk EditStaging::finalize(Bytes stored, int32_t nbytes, int32_t chunksize_after) const {
  StagedChunk c;
  c.nbytes = nbytes;
  ChunkHeader h = parse_chunk_header(stored);
  Special kind = h.special();
  if (kind == Special::none || kind == Special::value) {
    c.stored = std::move(stored);
    return c;
  }
  const int32_t ts = frame().header().typesize;
  const bool whole_items = ts > 0 && nbytes % ts == 0;
  if (!whole_items && kind != Special::nan) {
    CompressParams params = compress_params();
    params.detect_specials = false;
    c.stored = encode_chunk(Bytes(size_t(nbytes), 0), params);
    return c;
  }
  if (chunksize_after > 0 && (kind != Special::nan || (h.typesize == ts && (ts == 4 || ts == 8)))) {
    c.entry_special = kind;
    return c;
  }
  try {
    c.stored = repeat_value_chunk(kind, nbytes, kind == Special::nan ? h.typesize : ts);
  } catch (const FormatError&) {
    fail(path_, "NaN chunk with an unusable typesize", EINVAL);
  }
  return c;
}

// Whether logical chunks other than n exist after putting one at n.
bool EditStaging::has_other_chunks(int64_t n) const {
  return n == staged_.nchunks ? staged_.nchunks > 0 : staged_.nchunks > 1;
}

void EditStaging::stage_chunk(int64_t n, StagedChunk chunk, int32_t chunksize_after, bool vlblocks) {
  if (!has_other_chunks(n)) staged_.vlblocks = vlblocks;  // the only chunk decides the frame's kind
  if (n == staged_.nchunks) ++staged_.nchunks;
  staged_.chunksize = chunksize_after;
  staged_.chunks[n] = std::move(chunk);
  staged_.chunks_dirty = true;
}

void EditStaging::put_chunks(std::span<const FrameEditor::ChunkPut> puts) {
  std::vector<ByteSpan> inputs;
  for (const FrameEditor::ChunkPut& p : puts) inputs.push_back(p.data);
  std::exception_ptr params_error;
  CompressParams params;
  try {
    params = compress_params();
  } catch (...) {
    params_error = std::current_exception();
  }
  const int32_t typesize = std::max(1, frame().header().typesize);
  std::vector<EncodedChunk> encoded = encode_in_parallel(inputs, [&](ByteSpan data, unsigned threads) {
    if (all_zero(data)) return make_special_chunk(Special::zeros, int32_t(data.size()), typesize);
    if (params_error) std::rethrow_exception(params_error);
    return encode_chunk(data, params, threads);
  });
  struct Settle {  // also when a put fails: those before it stay staged
    EditStaging& staging;
    ~Settle() { staging.settle_short_chunks(); }
  } settle{*this};
  for (size_t i = 0; i < puts.size(); ++i) {
    const int64_t n = puts[i].n < 0 ? staged_.nchunks : puts[i].n;
    if (puts[i].n >= staged_.nchunks) fail(path_, "chunk " + std::to_string(n) + " does not exist", EINVAL);
    const int32_t cs_after = check_chunk_size(n, int64_t(inputs[i].size()));
    if (has_other_chunks(n) && staged_.vlblocks)
      fail(path_, "chunk " + std::to_string(n) + ": VL-block chunks cannot be compressed here; write raw chunks",
           EOPNOTSUPP);
    if (encoded[i].error) {
      try {
        std::rethrow_exception(encoded[i].error);
      } catch (const UnsupportedError& e) {
        fail(path_, std::string("chunk ") + std::to_string(n) + ": " + e.what(), EOPNOTSUPP);
      } catch (const FormatError& e) {
        fail(path_, std::string("chunk ") + std::to_string(n) + ": " + e.what(), EINVAL);
      }
    }
    const int32_t nbytes = int32_t(inputs[i].size());
    stage_chunk(n, finalize(std::move(encoded[i].stored), nbytes, cs_after), cs_after, false);
  }
}

void EditStaging::replace_raw_chunk(int64_t n, ByteSpan chunk) {
  if (n >= staged_.nchunks) fail(path_, "chunk " + std::to_string(n) + " does not exist", EINVAL);
  put_raw(n, chunk);
}

void EditStaging::put_raw(int64_t n, ByteSpan chunk) {
  ChunkHeader h;
  int32_t cs_after = 0;
  try {
    h = parse_chunk_header(chunk);
    if (int64_t(h.cbytes) != int64_t(chunk.size()))
      fail(path_, "raw chunk " + std::to_string(n) + ": cbytes " + std::to_string(h.cbytes) + " but " +
                      std::to_string(chunk.size()) + " bytes were given", EINVAL);
    if (h.lazy()) fail(path_, "raw chunk " + std::to_string(n) + " is a lazy chunk", EINVAL);
    // Before decoding: a 32-byte chunk can claim 2 GB that the frame would refuse anyway.
    cs_after = check_chunk_size(n, h.nbytes);
    (void)ChunkView(chunk, frame().decode_rules()).decode();
  } catch (const FormatError& e) {
    fail(path_, "raw chunk " + std::to_string(n) + " does not decode: " + e.what(), EINVAL);
  }
  if (has_other_chunks(n) && h.vlblocks() != staged_.vlblocks)
    fail(path_, std::string("raw chunk ") + std::to_string(n) +
                    (h.vlblocks() ? " has VL blocks but the frame's chunks do not" : " lacks the frame's VL blocks"),
         EINVAL);
  stage_chunk(n, finalize(Bytes(chunk.begin(), chunk.end()), h.nbytes, cs_after), cs_after, h.vlblocks());
  settle_short_chunks();
}

void EditStaging::truncate_chunks(int64_t nchunks) {
  if (nchunks < 0 || nchunks > staged_.nchunks)
    fail(path_, "cannot truncate to " + std::to_string(nchunks) + " chunks (has " + std::to_string(staged_.nchunks) +
                    ")", EINVAL);
  if (nchunks == staged_.nchunks) return;
  staged_.chunks.erase(staged_.chunks.lower_bound(nchunks), staged_.chunks.end());
  staged_.nchunks = nchunks;
  staged_.chunks_dirty = true;
  settle_short_chunks();
}

void EditStaging::check_array_chunks() const {
  const Metalayer* nd = frame_nd_metalayer(frame());
  if (!nd) return;
  const FrameHeader& h = frame().header();
  NdMeta meta;
  try {
    meta = frame_nd_meta(frame(), *nd);
    (void)NdLayout(meta, h.typesize, frame().nchunks(), h.chunksize);
  } catch (const FormatError&) {
    return;  // not an array python-blosc2 opens now: nothing to keep
  }
  const auto rewritten = staged_.metalayer_writes.find(nd->name);
  if (!staged_.chunks_dirty && rewritten == staged_.metalayer_writes.end()) return;
  const std::string why = "an N-d array keeps the chunks its shape needs (python-blosc2 opens it only then): ";
  try {
    if (rewritten != staged_.metalayer_writes.end()) {
      std::optional<std::string> dtype = meta.dtype;
      meta = parse_nd_meta(rewritten->second, nd->name == "caterva");
      if (!meta.dtype) meta.dtype = dtype;
    }
    const NdLayout after(meta, h.typesize, staged_.nchunks, h.chunksize);
    for (const auto& [n, chunk] : staged_.chunks)
      if (chunk.nbytes != after.chunk_bytes())
        fail(path_, why + "chunk " + std::to_string(n) + " would hold " + std::to_string(chunk.nbytes) +
                        " bytes, not " + std::to_string(after.chunk_bytes()), EINVAL);
  } catch (const FormatError& e) {
    fail(path_, why + e.what(), EINVAL);
  }
}

}  // namespace blosc2fs::editor
