#include "table_csv.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "error.h"
#include "table_columns.h"

namespace blosc2fs {

namespace {

constexpr int64_t kRowsPerBlock = 4096;
constexpr int64_t kMinRowsPerBlock = 64;

// python-blosc2 writes the schema with Python's json.dumps, which spells
// non-finite float sentinels NaN, Infinity, -Infinity (not JSON). Outside
// strings they become the msgpack escape {"__float__": "nan"|"inf"|"-inf"}.
std::string escape_nonfinite(std::string_view text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    const std::string_view rest = text.substr(i);
    if (rest.substr(0, 3) == "NaN") {
      out += R"({"__float__":"nan"})", i += 2;
    } else if (rest.substr(0, 8) == "Infinity") {
      out += R"({"__float__":"inf"})", i += 7;
    } else if (rest.substr(0, 9) == "-Infinity") {
      out += R"({"__float__":"-inf"})", i += 8;
    } else {
      out += c;
    }
  }
  return out;
}

// python-blosc2's storage path of a column name: unescaped dots separate
// nested fields (directories), a backslash escapes the next character, and
// '%', '/', '.', '\' in a segment are percent-encoded.
std::string column_path(const std::string& name) {
  std::vector<std::string> parts(1);
  bool escaped = false;
  for (char ch : name) {
    if (escaped) {
      parts.back() += ch, escaped = false;
    } else if (ch == '\\') {
      escaped = true;
    } else if (ch == '.') {
      parts.emplace_back();
    } else {
      parts.back() += ch;
    }
  }
  if (escaped) parts.back() += '\\';
  std::string path;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) path += '/';
    for (char ch : parts[k]) {
      if (ch == '%' || ch == '/' || ch == '.' || ch == '\\') {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", unsigned(uint8_t(ch)));
        path += buf;
      } else {
        path += ch;
      }
    }
  }
  return path;
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

struct TableCsv::Column {
  std::string name;
  std::unique_ptr<ColumnReader> values;
  std::unique_ptr<NdColumn> notnull;     // the null mask, when there is one
  std::optional<std::string> null_text;  // the text of the null sentinel, when there is one
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
  const std::string& text = schema_text->get_ref<const std::string&>();
  Json schema = Json::parse(text, nullptr, false);
  if (!schema.is_discarded()) {
    schema_json_ = schema.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  } else {
    // Python's json.dumps text with NaN or Infinity: shown as stored.
    schema = Json::parse(escape_nonfinite(text), nullptr, false);
    schema_json_ = text + "\n";
  }
  if (schema.is_discarded() || !schema.is_object() || !schema.contains("columns") || !schema["columns"].is_array())
    throw FormatError("table " + shown + ": the schema is not JSON with columns");

  auto leaf_frame = [&](const std::string& key) -> std::shared_ptr<const Frame> {
    const StoreLeaf* leaf = store.find(key);
    if (!leaf) throw FormatError("table column " + key + " is missing from the store");
    return store.open_leaf(*leaf);
  };
  auto nd = [&](const std::string& key) { return std::make_unique<NdColumn>(leaf_frame(key), "table column " + key); };
  auto items = [&](const std::string& key) {
    return std::make_unique<ItemsColumn>(leaf_frame(key), "table column " + key);
  };
  auto is_bool_mask = [](const NdColumn& c) { return c.dtype() == "|b1" && c.item_shape().empty(); };

  valid_ = nd(prefix + "/_valid_rows");
  if (!is_bool_mask(*valid_)) throw FormatError("table " + shown + ": _valid_rows is not boolean");
  physical_rows_ = valid_->rows();
  bool first = true;
  for (const Json& c : schema["columns"]) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
      throw FormatError("table " + shown + ": a schema column without a name");
    auto column = std::make_unique<Column>();
    column->name = c["name"].get<std::string>();
    const std::string kind = c.contains("kind") && c["kind"].is_string() ? c["kind"].get<std::string>() : "";
    const std::string key = prefix + "/_cols/" + column_path(column->name);
    if (kind == "utf8") {
      column->values = make_utf8_reader(nd(key), nd(key + ".utf8"));
    } else if (kind == "vlstring" || kind == "vlbytes" || kind == "object" || kind == "struct" || kind == "list") {
      column->values = make_items_reader(items(key));
    } else if (kind == "dictionary") {
      int64_t null_code = -1;
      if (c.contains("null_code")) {
        if (!c["null_code"].is_number_integer())
          throw FormatError("table " + shown + ": column " + column->name + " has a null_code that is no integer");
        null_code = c["null_code"].get<int64_t>();
      }
      column->values = make_dictionary_reader(nd(key), items(key + "_dict"), null_code);
    } else {
      ValueStyle style;
      style.boolean = kind == "bool";
      if (kind == "timestamp") style.timestamp_unit = c.value("unit", std::string("us"));
      column->values = make_fixed_reader(nd(key), style);
    }
    if (column->values->length() < physical_rows_)
      throw FormatError("table " + shown + ": column " + column->name + " is shorter than _valid_rows");
    if (const StoreLeaf* mask = store.find(key + ".notnull")) {
      column->notnull = nd(mask->key);
      if (!is_bool_mask(*column->notnull) || column->notnull->rows() < physical_rows_)
        throw FormatError("table " + shown + ": the null mask of " + column->name + " is not a boolean per row");
    }
    if (c.contains("null_value") && !c["null_value"].is_null()) column->null_text = item_text(c["null_value"]);
    header_ += (first ? "" : ",") + csv_field(column->name);
    first = false;
    columns_.push_back(std::move(column));
  }
  header_ += "\r\n";
}

TableCsv::~TableCsv() = default;

int64_t TableCsv::append_rows(int64_t row, size_t want, std::string& out) const {
  // Rows are made a block at a time; a block's cells are all decoded, so the
  // block is sized by the text the rows so far took, to hold about what is
  // still wanted: wide rows (long strings) make small blocks.
  int64_t rows_made = 0;
  size_t text_made = 0;
  while (row < physical_rows_ && out.size() < want) {
    int64_t count = kMinRowsPerBlock;
    if (rows_made > 0 && text_made > 0) {
      const double per_row = double(text_made) / double(rows_made);
      count = int64_t(double(want - out.size()) / per_row) + 1;
    } else if (rows_made > 0) {
      count = kRowsPerBlock;
    }
    count = std::clamp<int64_t>(count, kMinRowsPerBlock, kRowsPerBlock);
    count = std::min(count, physical_rows_ - row);
    const Bytes valid = valid_->rows_bytes(row, count);
    std::vector<CsvCells> cells(columns_.size(), CsvCells(size_t(count)));
    for (size_t k = 0; k < columns_.size(); ++k) {
      const Column& c = *columns_[k];
      c.values->read(row, count, cells[k]);
      if (c.notnull) {
        const Bytes mask = c.notnull->rows_bytes(row, count);
        for (size_t i = 0; i < size_t(count); ++i)
          if (!mask[i]) cells[k][i].reset();
      }
      if (c.null_text)
        for (auto& cell : cells[k])
          if (cell == c.null_text) cell.reset();
    }
    const size_t before = out.size();
    int64_t i = 0;
    for (; i < count; ++i) {
      if (!valid[size_t(i)]) continue;
      for (size_t k = 0; k < columns_.size(); ++k) {
        if (k) out += ',';
        if (const auto& cell = cells[k][size_t(i)]) out += csv_field(*cell);  // a null is an empty field
      }
      out += "\r\n";
      if (out.size() >= want) {
        ++i;
        break;
      }
    }
    rows_made += i;
    text_made += out.size() - before;
    row += i;
  }
  return row;
}

}  // namespace blosc2fs
