// The kinds of frames python-blosc2 writes (docs/python-blosc2.md §1.1-1.2,
// checked against python-blosc2 4.14.1).
#include "kind.h"

#include <algorithm>
#include <cctype>

#include "b2nd.h"
#include "chunk_codec.h"
#include "error.h"

namespace blosc2fs {

namespace {

constexpr const char* kRedacted = "<redacted>";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool names_secret(std::string_view key) {
  const std::string k = lower(key);
  for (const char* word : {"token", "auth", "password", "passwd", "secret", "credential", "apikey", "api_key",
                           "cookie", "signature", "session"})
    if (k.find(word) != std::string::npos) return true;
  return false;
}

// A query parameter whose value is a secret: the key words above, plus the
// short names signed URLs use (sig, key, X-Amz-Signature, ...).
bool query_key_secret(std::string_view key) {
  const std::string k = lower(key);
  return names_secret(k) || k == "sig" || k == "key" || k == "code" || k.rfind("x-amz-", 0) == 0 ||
         k.rfind("x-goog-", 0) == 0;
}

// scheme://user:pass@host/...?token=... -> scheme://<redacted>@host/...?token=<redacted>
std::string redact_url(const std::string& s) {
  const size_t scheme = s.find("://");
  if (scheme == std::string::npos) return s;
  std::string out = s;
  const size_t host = scheme + 3;
  const size_t path = out.find_first_of("/?#", host);
  const size_t at = out.rfind('@', path == std::string::npos ? std::string::npos : path);
  if (at != std::string::npos && at >= host) out.replace(host, at - host, kRedacted);
  const size_t query = out.find('?');
  if (query == std::string::npos) return out;
  std::string rebuilt = out.substr(0, query + 1);
  size_t pos = query + 1;
  while (pos <= out.size()) {
    size_t end = out.find_first_of("&#", pos);
    if (end == std::string::npos) end = out.size();
    std::string param = out.substr(pos, end - pos);
    const size_t eq = param.find('=');
    if (eq != std::string::npos && query_key_secret(param.substr(0, eq))) param = param.substr(0, eq + 1) + kRedacted;
    rebuilt += param;
    if (end >= out.size()) break;
    rebuilt += out[end];
    if (out[end] == '#') {
      rebuilt += out.substr(end + 1);
      break;
    }
    pos = end + 1;
  }
  return rebuilt;
}

Json redact(const Json& value, bool secret_key) {
  if (secret_key && !value.is_null()) return kRedacted;
  if (value.is_string()) return redact_url(value.get<std::string>());
  if (value.is_object()) {
    if (value.contains("__bytes__") || value.contains("__ext__")) return value;
    Json out = Json::object();
    for (auto it = value.begin(); it != value.end(); ++it) out[it.key()] = redact(it.value(), names_secret(it.key()));
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    // A Caterva2 urlpath tuple: ("__tuple__", path, urlbase, auth_token).
    const bool urlpath_tuple = value.size() == 4 && value[0] == "__tuple__";
    for (size_t i = 0; i < value.size(); ++i) out.push_back(redact(value[i], urlpath_tuple && i == 3));
    return out;
  }
  return value;
}

// Decoded kind metadata: a metalayer or a vlmetalayer holding one msgpack value.
class KindDocs {
 public:
  explicit KindDocs(const Frame& frame) : frame_(frame) {}

  bool has_meta(std::string_view name) const { return frame_.find_metalayer(name) != nullptr; }
  bool has_vlmeta(std::string_view name) const { return frame_.find_vlmetalayer(name) != nullptr; }

  // nullopt when absent or not one msgpack value (the latter is noted in errors).
  std::optional<Json> meta(std::string_view name) {
    const Metalayer* m = frame_.find_metalayer(name);
    if (!m) return std::nullopt;
    auto value = msgpack_to_json(m->content);
    if (!value) note("metalayer " + std::string(name) + " is not one msgpack value");
    return value;
  }
  std::optional<Json> vlmeta(std::string_view name) {
    const Vlmetalayer* v = frame_.find_vlmetalayer(name);
    if (!v) return std::nullopt;
    try {
      auto value = msgpack_to_json(frame_.vlmetalayer_content(*v));
      if (!value) note("vlmetalayer " + std::string(name) + " is not one msgpack value");
      return value;
    } catch (const FormatError& e) {
      note("vlmetalayer " + std::string(name) + ": " + e.what());
      return std::nullopt;
    }
  }
  void note(std::string error) { errors_.push_back(std::move(error)); }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  const Frame& frame_;
  std::vector<std::string> errors_;
};

// ["__tuple__", a, b, ...] -> [a, b, ...]; other arrays as they are.
Json untuple(const Json& value) {
  if (value.is_array() && !value.empty() && value[0] == "__tuple__") return Json(value.begin() + 1, value.end());
  return value;
}

// frame.json lists at most this many ranges of chunks (index.tsv has every chunk).
constexpr size_t kMaxRangesListed = 10000;
// A proxy cache of more chunks than this is not tracked chunk by chunk (one bit
// each, from a frame that can claim 2^28 chunks in a few hundred bytes): none
// of its chunks counts as fetched. Real caches are far smaller.
constexpr int64_t kMaxProxyChunks = int64_t(1) << 24;

Json chunk_ranges(const std::vector<bool>& bits, bool* truncated) {
  Json out = Json::array();
  *truncated = false;
  for (size_t i = 0; i < bits.size();) {
    if (out.size() == kMaxRangesListed) {
      *truncated = true;
      break;
    }
    if (!bits[i]) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < bits.size() && bits[j + 1]) ++j;
    out.push_back(Json::array({int64_t(i), int64_t(j)}));
    i = j + 1;
  }
  return out;
}

std::optional<std::vector<uint8_t>> bitmap_bytes(const std::optional<Json>& v) {
  if (!v || !v->is_object() || !v->contains("__bytes__")) return std::nullopt;
  const Json& b = (*v)["__bytes__"];
  if (!b.is_string()) return std::nullopt;
  // Decode base64 (what msgpack_to_json made of a bin value).
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : b.get<std::string>()) {
    if (c == '=') break;
    const size_t d = kAlphabet.find(c);
    if (d == std::string::npos) return std::nullopt;
    acc = (acc << 6) | uint32_t(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t((acc >> bits) & 0xFF));
    }
  }
  return out;
}

bool bit(const std::vector<uint8_t>& map, int64_t i) { return (map[size_t(i / 8)] >> (i % 8)) & 1; }

// One line naming where a proxy cache's data comes from.
std::string proxy_source_line(const Json& source) {
  if (!source.is_object()) return "an unknown source";
  std::string kind = source.value("source_kind", Json()).is_string() ? source["source_kind"].get<std::string>() : "";
  std::string where;
  const Json url = source.value("urlpath", Json());
  if (url.is_string()) {
    where = url.get<std::string>();
  } else if (url.is_array()) {
    Json parts = untuple(url);
    if (parts.size() >= 2 && parts[0].is_string() && parts[1].is_string())
      where = parts[1].get<std::string>() + " " + parts[0].get<std::string>();
  }
  if (where.empty() && source.value("local_abspath", Json()).is_string())
    where = source["local_abspath"].get<std::string>();
  if (where.empty()) where = "an unnamed source";
  return kind.empty() ? where : kind + " " + where;
}

void detect_proxy(const Frame& frame, KindDocs& docs, FrameKind& kind) {
  const Json source = redact_secrets(docs.meta("proxy-source").value_or(Json()));
  const int64_t n = frame.nchunks();
  ProxyState state;
  state.source = proxy_source_line(source);
  state.chunk_fetched.assign(size_t(std::min(n, kMaxProxyChunks)), false);
  state.chunk_partly.assign(size_t(std::min(n, kMaxProxyChunks)), false);
  const auto chunk_map = bitmap_bytes(docs.vlmeta("proxy-fetched"));
  const auto block_map = bitmap_bytes(docs.vlmeta("proxy-fetched-blocks"));
  const std::optional<Json> bpc = docs.vlmeta("proxy-fetched-bpc");
  if (n > kMaxProxyChunks) {
    state.bitmap = "not tracked: more than " + std::to_string(kMaxProxyChunks) + " chunks";
  } else if (docs.has_vlmeta("proxy-dirty")) {
    // A process died while changing the cache: python-blosc2 forgets every
    // fetch, so nothing here is known to be data.
    state.bitmap = "proxy-dirty";
  } else if (block_map && bpc && bpc->is_number_integer() && bpc->get<int64_t>() > 1 &&
             bpc->get<int64_t>() <= (int64_t(1) << 31) &&
             int64_t(block_map->size()) == (n * bpc->get<int64_t>() + 7) / 8) {
    state.bitmap = "proxy-fetched-blocks";
    state.blocks_per_chunk = bpc->get<int64_t>();
    for (int64_t c = 0; c < n; ++c) {
      int64_t got = 0;
      for (int64_t b = 0; b < state.blocks_per_chunk; ++b) got += bit(*block_map, c * state.blocks_per_chunk + b);
      state.chunk_fetched[size_t(c)] = got == state.blocks_per_chunk;
      state.chunk_partly[size_t(c)] = got > 0 && got < state.blocks_per_chunk;
    }
  } else if (chunk_map && int64_t(chunk_map->size()) == (n + 7) / 8) {
    state.bitmap = "proxy-fetched";
    for (int64_t c = 0; c < n; ++c) state.chunk_fetched[size_t(c)] = bit(*chunk_map, c);
  } else if (block_map) {
    state.bitmap = "none usable";  // a block bitmap without its blocks per chunk: nothing is known
  } else {
    // A cache written before the bitmaps existed: python-blosc2 takes every
    // chunk that is not a special value as fetched.
    state.bitmap = "none: stored chunks count as fetched";
    for (int64_t c = 0; c < n; ++c) {
      try {
        state.chunk_fetched[size_t(c)] = frame.index_entry(c).special == Special::none &&
                                         frame.chunk_info(c).special == Special::none;
      } catch (const std::runtime_error&) {
        state.chunk_fetched[size_t(c)] = false;
      }
    }
  }
  Json d = Json::object();
  d["container"] = frame.find_metalayer("b2nd") ? "ndarray" : "schunk";
  d["source"] = source;
  d["fetched_from"] = state.bitmap;
  d["blocks_per_chunk"] = state.blocks_per_chunk;
  d["nchunks_fetched"] = int64_t(std::count(state.chunk_fetched.begin(), state.chunk_fetched.end(), true));
  bool truncated = false, partly_truncated = false;
  d["chunks_fetched"] = chunk_ranges(state.chunk_fetched, &truncated);
  d["chunks_partly_fetched"] = chunk_ranges(state.chunk_partly, &partly_truncated);
  if (truncated || partly_truncated) d["ranges_truncated_at"] = kMaxRangesListed;
  kind.details = std::move(d);
  kind.proxy = std::move(state);
}

void detect_tensor(const Frame& frame, KindDocs& docs, FrameKind& kind) {
  const std::optional<Json> doc = docs.vlmeta("__pack_tensor__");
  Json d = Json::object();
  d["__pack_tensor__"] = doc ? *doc : Json();
  kind.details = d;
  const Json parts = doc ? untuple(*doc) : Json();
  if (!parts.is_array() || parts.size() != 3 || !parts[0].is_string()) {
    docs.note("__pack_tensor__ is not (kind, shape, dtype)");
    return;
  }
  TensorView t;
  t.framework = parts[0].get<std::string>();
  const Json shape = untuple(parts[1]);
  if (!shape.is_array() || shape.size() > size_t(kMaxDims)) {
    docs.note("__pack_tensor__ shape is not a tuple of at most " + std::to_string(kMaxDims) + " sizes");
    return;
  }
  int64_t nitems = 1;
  for (const Json& s : shape) {
    if (!s.is_number_integer() || s.get<int64_t>() < 0) {
      docs.note("__pack_tensor__ shape holds something other than sizes");
      return;
    }
    const int64_t v = s.get<int64_t>();
    if (v > 0 && nitems > INT64_MAX / v) {
      docs.note("__pack_tensor__ shape is too large");
      return;
    }
    nitems *= v;
    t.shape.push_back(v);
  }
  const std::optional<std::string> descr = numpy_descr_text(parts[2]);
  const std::optional<int64_t> itemsize = descr ? numpy_dtype_itemsize(*descr) : std::nullopt;
  if (!itemsize) {
    docs.note("__pack_tensor__ dtype is not a NumPy dtype this reader knows");
    return;
  }
  t.npy_descr = *descr;
  t.itemsize = *itemsize;
  if (nitems > 0 && t.itemsize > INT64_MAX / nitems) {
    docs.note("__pack_tensor__ shape is too large");
    return;
  }
  if (nitems * t.itemsize != frame.header().nbytes) {
    docs.note("__pack_tensor__ describes " + std::to_string(nitems * t.itemsize) + " bytes, the frame holds " +
              std::to_string(frame.header().nbytes));
    return;
  }
  d["framework"] = t.framework;
  d["shape"] = t.shape;
  d["npy_descr"] = t.npy_descr;
  d["itemsize"] = t.itemsize;
  kind.details = std::move(d);
  kind.tensor = std::move(t);
}

// A lazy carrier: current form (b2o) or legacy (LazyArray + _LazyArray).
void detect_lazy(KindDocs& docs, FrameKind& kind, const Json& b2o_meta) {
  kind.no_array = true;
  Json d = Json::object();
  if (b2o_meta.is_object()) {
    d["form"] = "b2o";
    std::optional<Json> doc = docs.vlmeta("b2o");
    d["recipe"] = doc ? redact_secrets(*doc) : Json();
    if (doc && doc->is_object()) {
      for (const char* key : {"expression", "operands"})
        if (doc->contains(key)) d[key] = redact_secrets((*doc)[key]);
    }
    d["user_vlmeta"] = docs.has_vlmeta("_b2o_user_vlmeta") ? Json("_b2o_user_vlmeta") : Json();
  } else {
    d["form"] = "LazyArray (legacy)";
    std::optional<Json> doc = docs.vlmeta("_LazyArray");
    d["recipe"] = doc ? redact_secrets(*doc) : Json();
    if (doc && doc->is_object()) {
      if (doc->contains("expression")) d["expression"] = (*doc)["expression"];
      if (doc->contains("operands")) d["operands"] = redact_secrets((*doc)["operands"]);
    }
  }
  kind.details = std::move(d);
}

Json batch_details(KindDocs& docs, const Json& tag, FrameKind& kind) {
  Json d = Json::object();
  const std::string serializer = tag.is_object() && tag.value("serializer", Json()).is_string()
                                     ? tag["serializer"].get<std::string>()
                                     : std::string("msgpack");
  d["serializer"] = serializer;
  d["items_per_block"] = tag.is_object() ? tag.value("items_per_block", Json()) : Json();
  if (tag.is_object() && tag.contains("arrow_schema") && !tag["arrow_schema"].is_null()) {
    const auto schema = bitmap_bytes(tag["arrow_schema"]);
    d["arrow_schema_bytes"] = schema ? Json(int64_t(schema->size())) : Json();
  }
  std::optional<Json> meta = docs.vlmeta("_batch_array_metadata");
  Json lengths = meta && meta->is_object() ? meta->value("batch_lengths", Json()) : Json();
  d["batch_lengths"] = lengths;
  if (lengths.is_array()) {
    int64_t total = 0;
    bool ok = true;
    for (const Json& l : lengths) {
      ok = ok && l.is_number_integer();
      if (ok) total += l.get<int64_t>();
    }
    d["nitems"] = ok ? Json(total) : Json();
  }
  if (serializer == "msgpack") {
    kind.items = ItemsLayout::block_arrays;
    d["items_file"] = "items.jsonl";
  } else {
    d["items_file"] = nullptr;
    d["items_note"] = "batches are " + serializer + " payloads (Arrow IPC for arrow), not msgpack: no items.jsonl";
  }
  return d;
}

Json object_details(const Frame& frame, const Json& tag, FrameKind& kind) {
  Json d = Json::object();
  const std::string serializer = tag.is_object() && tag.value("serializer", Json()).is_string()
                                     ? tag["serializer"].get<std::string>()
                                     : std::string("msgpack");
  d["serializer"] = serializer;
  d["nitems"] = frame.nchunks();
  if (serializer == "msgpack") {
    kind.items = ItemsLayout::one_per_chunk;
    d["items_file"] = "items.jsonl";
  } else {
    d["items_file"] = nullptr;
  }
  return d;
}

}  // namespace

Json redact_secrets(const Json& value) { return redact(value, false); }

FrameKind detect_frame_kind(const Frame& frame) {
  FrameKind kind;
  KindDocs docs(frame);
  if (docs.has_meta("proxy-source")) {
    kind.name = "proxy";
    detect_proxy(frame, docs, kind);
  } else if (docs.has_meta("b2o")) {
    const Json tag = docs.meta("b2o").value_or(Json());
    const std::string k = tag.is_object() && tag.value("kind", Json()).is_string() ? tag["kind"].get<std::string>() : "";
    if (k == "lazyexpr" || k == "lazyudf") {
      kind.name = k;
      detect_lazy(docs, kind, tag);
    } else {
      // c2array (a reference to a remote array) or a kind this reader does not know:
      // either way the chunks are a placeholder, not the data.
      kind.name = k == "c2array" ? "c2array" : "b2o";
      kind.no_array = true;
      Json d = Json::object();
      d["tag"] = tag;
      std::optional<Json> doc = docs.vlmeta("b2o");
      d["reference"] = doc ? redact_secrets(*doc) : Json();
      kind.details = std::move(d);
    }
  } else if (docs.has_meta("LazyArray")) {
    const Json tag = docs.meta("LazyArray").value_or(Json());
    kind.name = tag == 1 ? "lazyudf" : "lazyexpr";
    detect_lazy(docs, kind, Json());
  } else if (docs.has_meta("listarray")) {
    kind.name = "listarray";
    const Json spec = docs.meta("listarray").value_or(Json());
    Json d = Json::object();
    d["spec"] = spec;
    const std::string backend = spec.is_object() && spec.value("backend", Json()).is_string()
                                    ? spec["backend"].get<std::string>()
                                    : "";
    d["backend"] = backend;
    if (backend == "batch" || (backend.empty() && docs.has_meta("batcharray"))) {
      d["batcharray"] = batch_details(docs, docs.meta("batcharray").value_or(Json()), kind);
    } else if (docs.has_meta("vlarray")) {
      d["objectarray"] = object_details(frame, docs.meta("vlarray").value_or(Json()), kind);
    }
    kind.details = std::move(d);
  } else if (docs.has_meta("batcharray")) {
    kind.name = "batcharray";
    kind.details = batch_details(docs, docs.meta("batcharray").value_or(Json()), kind);
  } else if (docs.has_meta("vlarray")) {
    kind.name = "objectarray";
    kind.details = object_details(frame, docs.meta("vlarray").value_or(Json()), kind);
  } else if (docs.has_meta("b2tree") || docs.has_meta("b2dict") || docs.has_meta("b2embed")) {
    const char* tag = docs.has_meta("b2tree") ? "b2tree" : docs.has_meta("b2dict") ? "b2dict" : "b2embed";
    kind.name = docs.has_meta("b2tree") ? "treestore" : docs.has_meta("b2dict") ? "dictstore" : "embedstore";
    Json d = Json::object();
    d["tag"] = tag;
    d["version"] = docs.meta(tag).value_or(Json());
    std::optional<Json> map = docs.vlmeta("estore_metadata");
    if (map && map->is_object() && (*map).value("embed_map", Json()).is_object())
      d["nkeys"] = (*map)["embed_map"].size();
    kind.details = std::move(d);
  } else if (docs.has_meta("ctable_varlen_scalar")) {
    kind.name = "ctable";
    kind.details = Json::object({{"part", "varlen_scalar"}, {"role", docs.meta("ctable_varlen_scalar").value_or(Json())}});
  } else if (docs.has_vlmeta("kind") && docs.vlmeta("kind").value_or(Json()) == "ctable") {
    kind.name = "ctable";
    Json d = Json::object();
    d["part"] = "meta";
    d["version"] = docs.vlmeta("version").value_or(Json());
    Json schema = docs.vlmeta("schema").value_or(Json());
    if (schema.is_string()) {
      Json parsed = Json::parse(schema.get<std::string>(), nullptr, false);
      if (!parsed.is_discarded()) schema = std::move(parsed);
    }
    d["schema"] = std::move(schema);
    kind.details = std::move(d);
  } else if (docs.has_meta("b2nd") || docs.has_meta("caterva")) {
    kind.name = "ndarray";
  } else if (docs.has_vlmeta("__pack_tensor__")) {
    kind.name = "pack_tensor";
    detect_tensor(frame, docs, kind);
  }
  if (!docs.errors().empty()) {
    if (!kind.details.is_object()) kind.details = Json::object();
    kind.details["errors"] = docs.errors();
  }
  return kind;
}

std::optional<std::string> numpy_descr_text(const Json& dtype) {
  if (dtype.is_string()) return dtype.get<std::string>();
  auto quoted = [](const Json& s) -> std::optional<std::string> {
    if (!s.is_string()) return std::nullopt;
    const std::string& v = s.get_ref<const std::string&>();
    for (char c : v)
      if (c < 0x20 || c > 0x7E || c == '\'' || c == '\\') return std::nullopt;
    return "'" + v + "'";
  };
  if (!dtype.is_array() || dtype.empty()) return std::nullopt;
  std::string out = "[";
  for (size_t i = 0; i < dtype.size(); ++i) {
    const Json field = untuple(dtype[i]);
    if (!field.is_array() || field.size() < 2 || field.size() > 3) return std::nullopt;
    auto name = quoted(field[0]);
    if (!name) return std::nullopt;
    std::optional<std::string> type = field[1].is_string() ? quoted(field[1]) : numpy_descr_text(field[1]);
    if (!type) return std::nullopt;
    if (i > 0) out += ", ";
    out += "(" + *name + ", " + *type;
    if (field.size() == 3) {
      const Json shape = untuple(field[2]);
      if (!shape.is_array()) return std::nullopt;
      out += ", (";
      for (size_t k = 0; k < shape.size(); ++k) {
        if (!shape[k].is_number_integer()) return std::nullopt;
        if (k > 0) out += ", ";
        out += std::to_string(shape[k].get<int64_t>());
      }
      out += shape.size() == 1 ? ",)" : ")";
    }
    out += ")";
  }
  return out + "]";
}

std::vector<Json> chunk_items(const Frame& frame, ItemsLayout layout, int64_t n) {
  std::vector<Json> items;
  if (layout == ItemsLayout::none || n < 0 || n >= frame.nchunks()) return items;
  auto value = [&](ByteSpan bytes, const char* what) -> Json {
    std::optional<Json> v = msgpack_to_json(bytes);
    if (!v) throw FormatError("chunk " + std::to_string(n) + ": " + what + " is not one msgpack value");
    return std::move(*v);
  };
  const Bytes stored = frame.read_raw_chunk(n);
  ChunkView view(stored, frame.decode_rules());
  const Bytes decoded = frame.decode_chunk(n, view);
  if (layout == ItemsLayout::one_per_chunk) {
    items.push_back(value(decoded, "the chunk"));
    return items;
  }
  // A batch: its VL blocks each hold a msgpack array of items (a chunk
  // without VL blocks is one such array).
  const int32_t nblocks = view.header().vlblocks() ? view.nblocks() : 1;
  for (int32_t j = 0; j < nblocks; ++j) {
    ByteSpan block = view.header().vlblocks()
                         ? ByteSpan(decoded).subspan(size_t(view.block_offset(j)), size_t(view.block_size(j)))
                         : ByteSpan(decoded);
    Json block_items = value(block, "a block");
    if (!block_items.is_array())
      throw FormatError("chunk " + std::to_string(n) + ": block " + std::to_string(j) + " is not an array of items");
    for (Json& item : block_items) items.push_back(std::move(item));
  }
  return items;
}

std::string items_jsonl_rows(const Frame& frame, ItemsLayout layout, int64_t first, int64_t count) {
  std::string out;
  if (layout == ItemsLayout::none) return out;
  const int64_t begin = std::clamp<int64_t>(first, 0, frame.nchunks());
  const int64_t end = std::clamp<int64_t>(first + std::max<int64_t>(count, 0), begin, frame.nchunks());
  for (int64_t n = begin; n < end; ++n) {
    for (const Json& item : chunk_items(frame, layout, n)) {
      try {
        out += item.dump();
      } catch (const Json::exception& e) {
        throw FormatError("chunk " + std::to_string(n) + ": an item has no JSON text: " + e.what());
      }
      out += '\n';
    }
  }
  return out;
}

}  // namespace blosc2fs
