#include "table_csv.h"

#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <map>

#include "b2nd.h"
#include "error.h"

namespace blosc2fs {

namespace {

constexpr int64_t kRowsPerBlock = 4096;

enum class ItemKind { signed_int, unsigned_int, floating, boolean, unicode, bytes };

std::string shortest_float(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = single ? std::to_chars(buf, buf + sizeof buf, float(v)) : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // Python's repr: "1.0", not "1".
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | cp >> 6), out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | cp >> 12), out += char(0x80 | (cp >> 6 & 0x3F)), out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | cp >> 18), out += char(0x80 | (cp >> 12 & 0x3F)), out += char(0x80 | (cp >> 6 & 0x3F)),
        out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string csv_field(std::string_view text) {
  if (!text.empty() && text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// One column: a 1-D N-d array leaf, read a block of items at a time, its chunks
// decoded once while the reading moves through them.
struct TableCsv::Column {
  std::string name;
  std::shared_ptr<const Frame> frame;
  std::unique_ptr<NdLayout> layout;
  int32_t itemsize = 0;
  ItemKind kind = ItemKind::bytes;
  bool little_endian = true;
  std::unique_ptr<Column> notnull;  // the null mask, when there is one
  mutable std::map<int64_t, Bytes> chunks;

  Column(const Store& store, const std::string& key, std::string column_name) : name(std::move(column_name)) {
    const StoreLeaf* leaf = store.find(key);
    if (!leaf) throw FormatError("table column " + key + " is missing from the store");
    frame = store.open_leaf(*leaf);
    const Metalayer* meta = frame->find_metalayer("b2nd");
    if (!meta) throw UnsupportedError("table column " + key + " is not an N-d array");
    NdMeta nd = parse_nd_meta(meta->content, false);
    if (nd.ndim != 1 || !nd.dtype) throw UnsupportedError("table column " + key + " is not a 1-d typed array");
    layout = std::make_unique<NdLayout>(nd, frame->header().typesize, frame->nchunks(), frame->header().chunksize);
    itemsize = frame->header().typesize;
    const std::string& d = *nd.dtype;
    if (d.size() < 3) throw UnsupportedError("table column " + key + ": dtype " + d);
    little_endian = d[0] != '>';
    const char code = d[1];
    const int64_t width = std::atoll(d.c_str() + 2);
    switch (code) {
      case 'i': kind = ItemKind::signed_int; break;
      case 'u': kind = ItemKind::unsigned_int; break;
      case 'f': kind = ItemKind::floating; break;
      case 'b': kind = ItemKind::boolean; break;
      case 'U': kind = ItemKind::unicode; break;
      case 'S': kind = ItemKind::bytes; break;
      default: throw UnsupportedError("table column " + key + ": dtype " + d + " is not shown in table.csv");
    }
    const int64_t want = kind == ItemKind::unicode ? width * 4 : width;
    const bool fixed = kind == ItemKind::unicode || kind == ItemKind::bytes;
    if (want != itemsize || (!fixed && itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) ||
        (kind == ItemKind::floating && itemsize != 4 && itemsize != 8) || (kind == ItemKind::boolean && itemsize != 1))
      throw FormatError("table column " + key + ": dtype " + d + " disagrees with the typesize " +
                        std::to_string(itemsize));
  }

  int64_t length() const { return layout->nitems(); }

  // Items [first, first + count) as bytes.
  Bytes items(int64_t first, int64_t count) const {
    Bytes out(size_t(count) * size_t(itemsize));
    if (count == 0) return out;
    const int64_t offset = first * itemsize;
    std::vector<int64_t> needed = layout->chunks_for_range(offset, int64_t(out.size()));
    // Reading moves forward: chunks before this range are done with.
    if (!needed.empty()) chunks.erase(chunks.begin(), chunks.lower_bound(needed.front()));
    layout->read(offset, out, [&](int64_t n) -> ByteSpan {
      auto it = chunks.find(n);
      if (it == chunks.end()) it = chunks.emplace(n, frame->read_chunk(n)).first;
      return it->second;
    });
    return out;
  }

  void format(const uint8_t* p, std::string& out) const {
    auto load = [&](int bytes) {
      uint64_t v = 0;
      for (int i = 0; i < bytes; ++i) v |= uint64_t(p[little_endian ? i : bytes - 1 - i]) << (8 * i);
      return v;
    };
    switch (kind) {
      case ItemKind::signed_int: {
        uint64_t v = load(itemsize);
        const int shift = 64 - 8 * itemsize;
        out += std::to_string(int64_t(v << shift) >> shift);
        return;
      }
      case ItemKind::unsigned_int: out += std::to_string(load(itemsize)); return;
      case ItemKind::floating: {
        uint64_t v = load(itemsize);
        if (itemsize == 4) {
          float f;
          uint32_t u = uint32_t(v);
          std::memcpy(&f, &u, 4);
          out += shortest_float(f, true);
        } else {
          double f;
          std::memcpy(&f, &v, 8);
          out += shortest_float(f, false);
        }
        return;
      }
      case ItemKind::boolean: out += p[0] ? "True" : "False"; return;
      case ItemKind::unicode: {
        std::string text;
        int n = itemsize / 4;
        while (n > 0 && load_le32(p + 4 * (n - 1)) == 0) --n;  // NumPy pads with NULs
        for (int i = 0; i < n; ++i) {
          const uint8_t* q = p + 4 * i;
          append_utf8(text, little_endian ? load_le32(q) : load_be32(q));
        }
        out += csv_field(text);
        return;
      }
      case ItemKind::bytes: {
        int n = itemsize;
        while (n > 0 && p[n - 1] == 0) --n;
        out += csv_field(std::string_view(reinterpret_cast<const char*>(p), size_t(n)));
        return;
      }
    }
  }
};

TableCsv::TableCsv(const Store& store, const std::string& prefix) {
  const std::string shown = prefix.empty() ? "/" : prefix;
  const StoreLeaf* meta_leaf = store.find(prefix + "/_meta");
  if (!meta_leaf) throw FormatError("no table at " + shown);
  std::shared_ptr<const Frame> meta = store.open_leaf(*meta_leaf);
  const Vlmetalayer* schema_layer = meta->find_vlmetalayer("schema");
  if (!schema_layer) throw FormatError("table " + shown + "/_meta has no schema");
  std::optional<Json> schema_text = msgpack_to_json(meta->vlmetalayer_content(*schema_layer));
  if (!schema_text || !schema_text->is_string()) throw FormatError("table " + shown + ": the schema is not text");
  Json schema = Json::parse(schema_text->get<std::string>(), nullptr, false);
  if (schema.is_discarded() || !schema.is_object() || !schema.contains("columns") || !schema["columns"].is_array())
    throw FormatError("table " + shown + ": the schema is not JSON with columns");
  schema_json_ = schema.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";

  valid_ = std::make_unique<Column>(store, prefix + "/_valid_rows", "_valid_rows");
  if (valid_->kind != ItemKind::boolean) throw FormatError("table " + shown + ": _valid_rows is not boolean");
  physical_rows_ = valid_->length();
  bool first = true;
  for (const Json& c : schema["columns"]) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
      throw FormatError("table " + shown + ": a schema column without a name");
    const std::string name = c["name"].get<std::string>();
    const std::string kind = c.value("kind", "");
    if (kind == "vlstring" || kind == "vlbytes" || kind == "list" || kind == "struct")
      throw UnsupportedError("table " + shown + ": column " + name + " of kind " + kind +
                             " is not shown in table.csv");
    // Nested field names map to directories; '%', '/', '.', '\' are percent-encoded.
    std::string path;
    for (char ch : name) {
      if (ch == '%' || ch == '/' || ch == '.' || ch == '\\') {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", unsigned(uint8_t(ch)));
        path += buf;
      } else {
        path += ch;
      }
    }
    auto column = std::make_unique<Column>(store, prefix + "/_cols/" + path, name);
    if (column->length() < physical_rows_)
      throw FormatError("table " + shown + ": column " + name + " is shorter than _valid_rows");
    if (const StoreLeaf* mask = store.find(prefix + "/_cols/" + path + ".notnull")) {
      column->notnull = std::make_unique<Column>(store, mask->key, name + ".notnull");
      if (column->notnull->kind != ItemKind::boolean || column->notnull->length() < physical_rows_)
        throw FormatError("table " + shown + ": the null mask of " + name + " is not a boolean per row");
    }
    header_ += (first ? "" : ",") + csv_field(name);
    first = false;
    columns_.push_back(std::move(column));
  }
  header_ += "\r\n";
}

TableCsv::~TableCsv() = default;

int64_t TableCsv::append_rows(int64_t row, size_t want, std::string& out) const {
  while (row < physical_rows_ && out.size() < want) {
    const int64_t count = std::min(kRowsPerBlock, physical_rows_ - row);
    Bytes valid = valid_->items(row, count);
    std::vector<Bytes> values, masks;
    for (const auto& c : columns_) {
      values.push_back(c->items(row, count));
      masks.push_back(c->notnull ? c->notnull->items(row, count) : Bytes());
    }
    int64_t i = 0;
    for (; i < count; ++i) {
      if (!valid[size_t(i)]) continue;
      for (size_t k = 0; k < columns_.size(); ++k) {
        if (k) out += ',';
        if (!masks[k].empty() && !masks[k][size_t(i)]) continue;  // null: an empty field
        columns_[k]->format(values[k].data() + size_t(i) * size_t(columns_[k]->itemsize), out);
      }
      out += "\r\n";
      if (out.size() >= want) {
        ++i;
        break;
      }
    }
    row += i;
  }
  return row;
}

}  // namespace blosc2fs
