// The Zarr view's metadata (zarr-specs v3 core, sharding_indexed, v2), made
// from the b2nd metadata; see zarr_meta.h and docs/zarr.md.
#include "zarr_meta.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "frame.h"

namespace blosc2fs {

namespace {

struct CoreType {
  const char* name;
  char kind;
  int size;
};
constexpr CoreType kCoreTypes[] = {
    {"bool", 'b', 1},     {"int8", 'i', 1},     {"int16", 'i', 2},     {"int32", 'i', 4},   {"int64", 'i', 8},
    {"uint8", 'u', 1},    {"uint16", 'u', 2},   {"uint32", 'u', 4},    {"uint64", 'u', 8},  {"float16", 'f', 2},
    {"float32", 'f', 4},  {"float64", 'f', 8},  {"complex64", 'c', 8}, {"complex128", 'c', 16},
};

// "<f4" (also "f4", "=f4", "float32", "?") -> its core type and byte order ('<',
// '>' or '|'); nullptr for every other descr. Names and forms without an order
// are native: little-endian on every machine c-blosc2 writes b2nd on.
const CoreType* core_type(const std::string& descr, char* order) {
  for (const CoreType& t : kCoreTypes)
    if (descr == t.name) {
      *order = t.size == 1 ? '|' : '<';
      return &t;
    }
  if (descr == "?") return core_type("|b1", order);
  std::string_view rest = descr;
  char byte_order = '<';
  if (!rest.empty() && std::string_view("<>|=").find(rest[0]) != std::string_view::npos) {
    byte_order = rest[0] == '>' ? '>' : rest[0] == '|' ? '|' : '<';
    rest.remove_prefix(1);
  }
  if (rest.size() < 2) return nullptr;
  const char kind = rest[0];
  int size = 0;
  for (size_t i = 1; i < rest.size(); ++i) {
    if (rest[i] < '0' || rest[i] > '9' || size > 64) return nullptr;
    size = size * 10 + (rest[i] - '0');
  }
  for (const CoreType& t : kCoreTypes)
    if (t.kind == kind && t.size == size) {
      *order = t.size == 1 ? '|' : byte_order == '|' ? '<' : byte_order;
      return &t;
    }
  return nullptr;
}

Json fill_value_json(const ZarrArrayPlan& plan) {
  if (plan.data_type == "bool") return false;
  if (plan.data_type.starts_with("complex")) return Json::array({0.0, 0.0});
  if (plan.data_type.starts_with("float")) return 0.0;
  return 0;
}

Json bytes_codec(const ZarrArrayPlan& plan) {
  Json codec = {{"name", "bytes"}};
  if (plan.endian) codec["configuration"] = {{"endian", *plan.endian}};
  return codec;
}

Json to_json_array(const std::vector<int64_t>& v) {
  Json a = Json::array();
  for (int64_t x : v) a.push_back(x);
  return a;
}

std::string text(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"; }

std::vector<std::string> dimension_names(const NdMeta& meta, const Json& attrs) {
  if (attrs.is_object()) {
    auto it = attrs.find("dims");
    if (it != attrs.end() && it->is_array() && it->size() == size_t(meta.ndim)) {
      std::vector<std::string> names;
      std::set<std::string> seen;
      for (const Json& d : *it) {
        if (!d.is_string() || d.get<std::string>().empty() || !seen.insert(d.get<std::string>()).second) break;
        names.push_back(d.get<std::string>());
      }
      if (names.size() == size_t(meta.ndim)) return names;
    }
  }
  std::vector<std::string> names;
  for (int i = 0; i < meta.ndim; ++i)
    names.push_back("dim" + std::to_string(i) + "_" + std::to_string(meta.shape[size_t(i)]));
  return names;
}

void put_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

// The largest divisor of n that is at most most (n >= 1, most >= 1).
int64_t largest_divisor_at_most(int64_t n, int64_t most) {
  if (most >= n) return n;
  int64_t best = 1;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= most) best = std::max(best, d);
    if (n / d <= most) best = std::max(best, n / d);
  }
  return best;
}

// A shard's inner chunk shape: the block; when the chunk is in C order, the
// longest run of blocks of at most kMaxInnerRunBytes that tiles the chunk,
// growing along the last axis the block splits and, once that axis is whole,
// the axes before it.
std::vector<int64_t> inner_run_shape(const ZarrArrayPlan& plan, int32_t typesize, InnerChunks kind) {
  std::vector<int64_t> inner = plan.block_shape;
  if (!plan.chunk_in_c_order || kind == InnerChunks::blocks) return inner;
  int64_t bytes = typesize;
  for (int64_t n : inner) bytes *= n;
  for (size_t k = inner.size(); k-- > 0;) {
    if (inner[k] == plan.chunk_shape[k]) continue;
    const int64_t runs = plan.chunk_shape[k] / inner[k];  // a multiple: the plan is sharded
    const int64_t m = largest_divisor_at_most(runs, std::max<int64_t>(kMaxInnerRunBytes / bytes, 1));
    inner[k] *= m;
    bytes *= m;
    if (inner[k] != plan.chunk_shape[k]) break;
  }
  return inner;
}

}  // namespace

std::optional<ZarrArrayPlan> plan_zarr_array(const NdMeta& meta, int32_t typesize, const Json& attrs,
                                             std::string* why, InnerChunks inner) {
  auto refuse = [&](std::string reason) -> std::optional<ZarrArrayPlan> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (meta.ndim < 0 || meta.ndim > kMaxDims || meta.shape.size() != size_t(meta.ndim) ||
      meta.chunkshape.size() != size_t(meta.ndim) || meta.blockshape.size() != size_t(meta.ndim))
    return refuse("inconsistent dimensions");
  bool mismatch = false;
  const std::string descr = npy_descr(meta, typesize, &mismatch);
  char order = '|';
  const CoreType* type = mismatch ? nullptr : core_type(descr, &order);
  if (!type) return refuse("dtype " + descr + " has no Zarr v3 core data type");
  ZarrArrayPlan plan;
  plan.itemsize = typesize;
  plan.data_type = type->name;
  plan.npy_descr = std::string(1, order) + type->kind + std::to_string(type->size);
  if (type->size > 1) plan.endian = order == '>' ? "big" : "little";
  plan.shape = meta.shape;
  int64_t nitems = 1;
  for (int64_t n : meta.shape) nitems *= n;  // NdLayout checked the product before
  plan.chunk_items = 1;
  plan.nchunks = nitems == 0 ? 0 : 1;
  plan.sharded = meta.ndim > 0 && nitems > 0;
  bool whole_rows_seen = false;  // c-blosc2's fast path: blocks 1 ... 1 k chunk ... chunk
  plan.chunk_in_c_order = true;
  for (int i = 0; i < meta.ndim; ++i) {
    const int64_t cs = std::max<int64_t>(meta.chunkshape[size_t(i)], 1);
    const int64_t bs = std::max<int64_t>(meta.blockshape[size_t(i)], 1);
    plan.chunk_shape.push_back(cs);
    plan.block_shape.push_back(bs);
    plan.grid.push_back((meta.shape[size_t(i)] + cs - 1) / cs);
    plan.nchunks *= plan.grid.back();
    plan.chunk_items *= cs;
    if (cs % bs != 0) plan.sharded = false;
    if (whole_rows_seen) {
      if (bs != cs) plan.chunk_in_c_order = false;
    } else if (bs != 1) {
      whole_rows_seen = true;
      if (cs % bs != 0) plan.chunk_in_c_order = false;
    }
  }
  if (nitems == 0) plan.chunk_in_c_order = false;
  if (plan.chunk_items * typesize < kMinShardBytes) plan.sharded = false;
  if (plan.sharded) {
    plan.inner_shape = inner_run_shape(plan, typesize, inner);
    plan.inner_items = 1;
    for (int64_t n : plan.inner_shape) plan.inner_items *= n;
    plan.ninner = plan.chunk_items / plan.inner_items;
  }
  plan.dimension_names = dimension_names(meta, attrs);
  return plan;
}

std::string zarr_v3_array_json(const ZarrArrayPlan& plan, const Json& attrs) {
  Json j;
  j["zarr_format"] = 3;
  j["node_type"] = "array";
  j["shape"] = to_json_array(plan.shape);
  j["data_type"] = plan.data_type;
  j["chunk_grid"] = {{"name", "regular"}, {"configuration", {{"chunk_shape", to_json_array(plan.chunk_shape)}}}};
  j["chunk_key_encoding"] = {{"name", "default"}, {"configuration", {{"separator", "/"}}}};
  j["fill_value"] = fill_value_json(plan);
  if (plan.sharded) {
    Json sharding = {{"name", "sharding_indexed"},
                     {"configuration",
                      {{"chunk_shape", to_json_array(plan.inner_shape)},
                       {"codecs", Json::array({bytes_codec(plan)})},
                       {"index_codecs", Json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})},
                       {"index_location", "end"}}}};
    j["codecs"] = Json::array({sharding});
  } else {
    j["codecs"] = Json::array({bytes_codec(plan)});
  }
  j["attributes"] = attrs.is_object() ? attrs : Json::object();
  Json names = Json::array();
  for (const std::string& n : plan.dimension_names) names.push_back(n);
  j["dimension_names"] = names;
  return text(j);
}

std::string zarr_v2_zarray(const ZarrArrayPlan& plan) {
  Json j;
  j["zarr_format"] = 2;
  j["shape"] = to_json_array(plan.shape);
  j["chunks"] = to_json_array(plan.chunk_shape);
  j["dtype"] = plan.npy_descr;
  j["compressor"] = nullptr;
  // No nodata: a b2nd array has no fill value, and GDAL would hide every real 0.
  j["fill_value"] = nullptr;
  j["order"] = "C";
  j["filters"] = nullptr;
  j["dimension_separator"] = ".";
  return text(j);
}

std::string zarr_v2_zattrs(const ZarrArrayPlan& plan, const Json& attrs) {
  Json j = attrs.is_object() ? attrs : Json::object();
  Json names = Json::array();
  for (const std::string& n : plan.dimension_names) names.push_back(n);
  j["_ARRAY_DIMENSIONS"] = names;
  return text(j);
}

Json frame_attributes(const Frame& frame) {
  Json attrs = Json::object();
  for (const Vlmetalayer& layer : frame.vlmetalayers()) {
    try {
      if (std::optional<Json> value = msgpack_to_json(frame.vlmetalayer_content(layer))) attrs[layer.name] = *value;
    } catch (const std::exception&) {  // not JSON: attrs/ leaves it out too
    }
  }
  return attrs;
}

std::string zarr_group_json(const Json& attrs) {
  Json j;
  j["zarr_format"] = 3;
  j["node_type"] = "group";
  j["attributes"] = attrs.is_object() ? attrs : Json::object();
  return text(j);
}

size_t copy_shard_index(const ZarrArrayPlan& plan, bool empty, int64_t offset, MutableByteSpan out) {
  const int64_t size = plan.shard_index_bytes();
  if (offset < 0 || offset >= size) return 0;
  const size_t n = size_t(std::min<int64_t>(int64_t(out.size()), size - offset));
  const int64_t inner_bytes = plan.inner_bytes();
  uint8_t entry[16];
  for (size_t done = 0; done < n;) {
    const int64_t at = offset + int64_t(done);
    const int64_t i = at / 16;
    put_le64(entry, empty ? UINT64_MAX : uint64_t(i * inner_bytes));
    put_le64(entry + 8, empty ? UINT64_MAX : uint64_t(inner_bytes));
    const size_t from = size_t(at % 16);
    const size_t take = std::min(n - done, sizeof entry - from);
    std::memcpy(out.data() + done, entry + from, take);
    done += take;
  }
  return n;
}

std::optional<int64_t> parse_chunk_coordinate(std::string_view text) {
  if (text.empty() || text.size() > 18 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::optional<int64_t> zarr_chunk_of(const ZarrArrayPlan& plan, const std::vector<std::string_view>& parts) {
  if (parts.size() != plan.grid.size() || plan.nchunks == 0) return std::nullopt;
  int64_t n = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::optional<int64_t> v = parse_chunk_coordinate(parts[i]);
    if (!v || *v >= plan.grid[i]) return std::nullopt;
    n = n * plan.grid[i] + *v;
  }
  return n;
}

std::string zarr_v2_key(const ZarrArrayPlan& plan, int64_t n) {
  if (plan.grid.empty()) return "0";
  std::vector<int64_t> idx(plan.grid.size());
  for (size_t i = plan.grid.size(); i-- > 0;) {
    idx[i] = n % plan.grid[i];
    n /= plan.grid[i];
  }
  std::string key;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (i) key += '.';
    key += std::to_string(idx[i]);
  }
  return key;
}

namespace {

// One spelling of the same metadata: objects compared as maps, empty
// "configuration" objects and empty "storage_transformers" lists dropped.
nlohmann::json canonical_metadata(const nlohmann::json& value) {
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : value) out.push_back(canonical_metadata(item));
    return out;
  }
  if (!value.is_object()) return value;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, item] : value.items()) {
    if ((key == "configuration" && item.is_object() && item.empty()) ||
        (key == "storage_transformers" && item.is_array() && item.empty()))
      continue;
    out[key] = canonical_metadata(item);
  }
  return out;
}

}  // namespace

std::optional<Json> zarr_attributes_only_change(const std::string& current, std::string_view written,
                                                std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<Json> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  nlohmann::json now, next;
  try {
    now = nlohmann::json::parse(current);
    next = nlohmann::json::parse(written);
  } catch (const std::exception& e) {
    return refuse(std::string("not JSON: ") + e.what());
  }
  if (!next.is_object()) return refuse("not a JSON object");
  nlohmann::json attributes = nlohmann::json::object();
  if (auto it = next.find("attributes"); it != next.end()) {
    if (!it->is_object()) return refuse("\"attributes\" is not an object");
    attributes = *it;
    next.erase("attributes");
  }
  now.erase("attributes");
  const nlohmann::json a = canonical_metadata(now), b = canonical_metadata(next);
  if (a != b) {
    for (const auto& [key, value] : a.items())
      if (!b.contains(key) || b[key] != value) return refuse("\"" + key + "\" differs from the array's");
    for (const auto& [key, value] : b.items())
      if (!a.contains(key)) return refuse("\"" + key + "\" is not in the array's zarr.json");
    return refuse("fields differ from the array's");
  }
  // Back to the ordered form attrs/ keeps (the writer's order).
  Json out = Json::object();
  const Json ordered = Json::parse(written);
  if (auto it = ordered.find("attributes"); it != ordered.end())
    for (const auto& [key, value] : it->items()) out[key] = value;
  return out;
}

}  // namespace blosc2fs
