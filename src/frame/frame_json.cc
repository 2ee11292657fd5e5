// frame.json and index.tsv: the frame decoded for people and tools.
#include "frame_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "b2nd.h"
#include "chunk_format.h"
#include "codec_registry.h"
#include "dynamic_plugins.h"
#include "frame_nd.h"

namespace blosc2fs {

namespace {

// Whether the frame's own codec and filters decode here, and where its codec
// comes from: chunks may use others, index.tsv names each chunk's.
Json codec_json(const FrameHeader& h) {
  const CodecInfo* codec = frame_codec(h);
  bool decodable = codec && codec->decodable();
  for (uint8_t f : h.filters) {
    if (f == kFilterNone) continue;
    const FilterInfo* info = find_filter(f);
    decodable = decodable && info && info->decodable;
  }
  Json j = Json::object();
  j["decodable"] = decodable;
  j["encodable"] = codec && codec->encodable();
  j["written_by"] = codec ? Json(codec->writer) : Json(nullptr);
  j["decoded_by"] = codec && codec->decodable() ? Json(codec->decoder_description()) : Json(nullptr);
  j["note"] = codec && codec->caveat ? Json(codec->caveat) : Json(nullptr);
  return j;
}

// The frame's codec when nothing here decodes it, and what to install when a
// plugin library would: [{"id", "name", "install"}], else [].
Json missing_codecs_json(const FrameHeader& h) {
  Json list = Json::array();
  const CodecInfo* codec = frame_codec(h);
  if (!codec || codec->decodable()) return list;
  Json m = Json::object();
  m["id"] = int64_t(codec->id);
  m["name"] = codec->name;
  m["install"] = codec->runtime_plugin ? Json(plugin_install_hint(*codec)) : Json(nullptr);
  list.push_back(std::move(m));
  return list;
}

const char* splitmode_name(SplitMode m) {
  switch (m) {
    case SplitMode::always: return "always";
    case SplitMode::never: return "never";
    case SplitMode::automatic: return "auto";
    case SplitMode::forward_compat: return "forward_compat";
  }
  return "unknown";
}

std::string to_hex(ByteSpan data) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(data.size() * 2);
  for (uint8_t b : data) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// Names, dtypes and messages come from the frame's bytes; JSON needs UTF-8.
// Invalid sequences become U+FFFD.
std::string utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const uint8_t c = uint8_t(in[i]);
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = len > 0 && i + len <= in.size();
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      const uint8_t cont = uint8_t(in[i + k]);
      ok = (cont & 0xC0) == 0x80;
      cp = cp << 6 | (cont & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && len > 1) ok = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

Json nd_meta_json(const NdMeta& meta) {
  Json j = Json::object();
  j["version"] = meta.version;
  j["ndim"] = meta.ndim;
  j["shape"] = meta.shape;
  j["chunkshape"] = meta.chunkshape;
  j["blockshape"] = meta.blockshape;
  j["dtype_format"] = meta.dtype_format;
  j["dtype"] = meta.dtype ? Json(utf8(*meta.dtype)) : Json(nullptr);
  return j;
}

Json metalayer_json(const Metalayer& m) {
  Json j = Json::object();
  j["name"] = utf8(m.name);
  j["size"] = m.content.size();
  if (m.name == "b2nd" || m.name == "caterva") {
    try {
      j["content"] = nd_meta_json(parse_nd_meta(m.content, m.name == "caterva"));
      return j;
    } catch (const FormatError& e) {
      j["error"] = utf8(e.what());
    }
  }
  // A proxy cache's source may hold an auth token (docs/kinds.md).
  if (auto value = msgpack_to_json(m.content)) j["content"] = m.name == "proxy-source" ? redact_secrets(*value) : std::move(*value);
  else j["content"] = Json::object({{"hex", to_hex(m.content)}});
  return j;
}

Json array_json(const Frame& frame, const Metalayer& m) {
  const FrameHeader& h = frame.header();
  Json j = Json::object();
  j["source"] = utf8(m.name);
  try {
    NdMeta meta = frame_nd_meta(frame, m);
    NdLayout layout(meta, h.typesize, frame.nchunks(), h.chunksize);
    bool mismatch = false;
    std::string descr = npy_descr(meta, h.typesize, &mismatch);
    j["shape"] = meta.shape;
    j["dtype"] = meta.dtype ? Json(utf8(*meta.dtype)) : Json(nullptr);
    j["npy_descr"] = utf8(descr);
    j["dtype_mismatch"] = mismatch;
    j["itemsize"] = h.typesize;
    j["nitems"] = layout.nitems();
    j["nbytes"] = layout.array_bytes();
    j["npy_size"] = int64_t(npy_header(descr, meta.shape).size()) + layout.array_bytes();
    j["chunkshape"] = meta.chunkshape;
    j["blockshape"] = meta.blockshape;
  } catch (const FormatError& e) {
    j["error"] = utf8(e.what());
  }
  return j;
}

}  // namespace

Json frame_to_json(const Frame& frame, const FrameKind* known_kind) {
  const FrameHeader& h = frame.header();
  const FrameKind kind = known_kind ? *known_kind : detect_frame_kind(frame);
  Json j = Json::object();
  j["layout"] = frame_layout_name(h.layout);
  j["format_version"] = h.version();
  j["frame_type"] = h.sparse() ? "sparse" : "contiguous";
  j["kind"] = kind.name;
  j["path"] = utf8(frame.path().string());
  j["header_len"] = h.header_len;
  j["frame_len"] = h.frame_len;
  j["trailer_len"] = frame.trailer_len();
  j["codec"] = frame_codec_name(h);
  j["decodable"] = codec_json(h)["decodable"];
  j["codec_info"] = codec_json(h);
  j["missing_codecs"] = missing_codecs_json(h);
  j["compcode"] = h.compcode();
  j["clevel"] = h.clevel();
  Json filters = Json::array();
  for (uint8_t f : h.filters) filters.push_back(filter_name(f));
  j["filters"] = std::move(filters);
  j["filters_meta"] = Json(std::vector<int>(h.filters_meta.begin(), h.filters_meta.end()));
  // The older layouts have no splitmode.
  j["splitmode"] = h.legacy() ? Json(nullptr) : Json(splitmode_name(h.splitmode()));
  j["use_dict"] = h.use_dict();
  j["typesize"] = h.typesize;
  j["blocksize"] = h.blocksize;
  j["chunksize"] = h.chunksize;
  j["variable_chunks"] = h.chunksize == 0;
  j["vlblocks"] = (h.general_flags & 0x80) != 0;
  j["nchunks"] = frame.nchunks();
  j["nbytes"] = h.nbytes;
  j["cbytes"] = h.cbytes;
  j["ratio"] = h.cbytes > 0 ? std::round(double(h.nbytes) / double(h.cbytes) * 1000.0) / 1000.0 : 0.0;

  Json metas = Json::array();
  for (const Metalayer& m : frame.metalayers()) metas.push_back(metalayer_json(m));
  j["metalayers"] = std::move(metas);

  Json vlmetas = Json::array();
  for (const Vlmetalayer& v : frame.vlmetalayers()) {
    Json e = Json::object();
    e["name"] = utf8(v.name);
    try {
      e["size"] = parse_chunk_header(v.stored).nbytes;
    } catch (const FormatError& err) {
      e["size"] = nullptr;
      e["error"] = utf8(err.what());
    }
    e["stored_size"] = v.stored.size();
    vlmetas.push_back(std::move(e));
  }
  j["vlmetalayers"] = std::move(vlmetas);
  if (h.legacy()) {
    // Older layouts: the one usermeta blob (null when the frame has none).
    const Bytes& stored = frame.stored_usermeta();
    if (stored.empty()) {
      j["usermeta"] = nullptr;
    } else {
      Json u = Json::object();
      try {
        u["size"] = parse_chunk_header(stored).nbytes;
      } catch (const FormatError& err) {
        u["size"] = nullptr;
        u["error"] = utf8(err.what());
      }
      u["stored_size"] = stored.size();
      j["usermeta"] = std::move(u);
    }
  }

  // A lazy carrier's b2nd metalayer describes what it would compute, not its chunks.
  const Metalayer* nd = frame_nd_metalayer(frame);
  if (nd && !kind.no_array) j["array"] = array_json(frame, *nd);
  j["kind_details"] = kind.details;
  return j;
}

std::string frame_json_text(const Frame& frame, const FrameKind* kind) {
  return frame_to_json(frame, kind).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string index_tsv_header(const ProxyState* proxy) {
  return proxy ? "chunk\tindex_entry\tspecial\tnbytes\tcbytes\tcodec\tfilters\tfetched\n"
               : "chunk\tindex_entry\tspecial\tnbytes\tcbytes\tcodec\tfilters\n";
}

std::string index_tsv_text(const Frame& frame, const ProxyState* proxy) {
  return index_tsv_header(proxy) + index_tsv_rows(frame, 0, frame.nchunks(), proxy);
}

std::string index_tsv_rows(const Frame& frame, int64_t first, int64_t count, const ProxyState* proxy) {
  std::string out;
  const int64_t begin = std::clamp<int64_t>(first, 0, frame.nchunks());
  const int64_t end = std::clamp<int64_t>(first + std::max<int64_t>(count, 0), begin, frame.nchunks());
  for (int64_t i = begin; i < end; ++i) {
    IndexEntry entry = frame.index_entry(i);
    out += std::to_string(i);
    out += '\t';
    out += std::to_string(entry.raw);
    try {
      ChunkInfo info = frame.chunk_info(i);
      out += '\t';
      out += special_name(info.special);
      out += '\t' + std::to_string(info.nbytes) + '\t' + std::to_string(info.cbytes) + '\t' + info.codec + '\t' +
             info.filters;
    } catch (const std::exception&) {
      out += "\terror\terror\terror\terror\terror";
    }
    if (proxy) {
      const bool partly = size_t(i) < proxy->chunk_partly.size() && proxy->chunk_partly[size_t(i)];
      out += proxy->fetched(i) ? "\tyes" : partly ? "\tpartly" : "\tno";
    }
    out += '\n';
  }
  return out;
}

}  // namespace blosc2fs
