#include "table_columns.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "error.h"
#include "utf8.h"

namespace blosc2fs {

namespace {

// A utf8 block whose bytes exceed this is read a row at a time.
constexpr int64_t kMaxBlockBytes = int64_t(64) << 20;
// The most bytes one cell (a utf8 string, an ndarray cell) may take; a leaf
// claiming more (a small compressed file can claim terabytes) is refused.
constexpr int64_t kMaxCellBytes = int64_t(256) << 20;
// Fixed-width rows are read at most this many bytes at a time.
constexpr int64_t kMaxFixedReadBytes = int64_t(16) << 20;
// Decoded chunks of an items leaf kept at once.
constexpr size_t kItemChunksKept = 4;

// Python's float repr rules on the shortest round-trip digits: positional when
// the decimal exponent is in [-4, 16), else d.ddde+XX. `strip_zero` leaves out
// the ".0" of integral values (as complex repr does).
std::string float_text(double v, bool single, bool strip_zero) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = single ? std::to_chars(buf, buf + sizeof buf, float(v), std::chars_format::scientific)
                    : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string out;
  size_t p = 0;
  if (sci[0] == '-') out += '-', p = 1;
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t k = p; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exponent = std::atoi(sci.c_str() + e + 1);
  const int decpt = exponent + 1;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(size_t(-decpt), '0') + digits;
    } else if (size_t(decpt) >= digits.size()) {
      out += digits + std::string(size_t(decpt) - digits.size(), '0');
      if (!strip_zero) out += ".0";
    } else {
      out += digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp;
  }
  return out;
}

std::string complex_text(double re, double im, bool single) {
  std::string imag = float_text(std::fabs(im), single, true) + "j";
  if (std::isnan(im)) imag = "nanj";
  if (re == 0 && !std::signbit(re)) return (std::signbit(im) && !std::isnan(im) ? "-" : "") + imag;
  return "(" + float_text(re, single, true) + (std::signbit(im) && !std::isnan(im) ? "-" : "+") + imag + ")";
}

// Howard Hinnant's civil_from_days.
void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = unsigned(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = int64_t(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

enum class Scalar { signed_int, unsigned_int, floating, complex, boolean, unicode, bytes };

struct ScalarType {
  Scalar kind = Scalar::bytes;
  bool little_endian = true;
};

ScalarType scalar_type(const NdColumn& c) {
  const std::string& d = c.dtype();
  const std::string where = c.where();
  if (d.size() < 3) throw UnsupportedError(where + ": dtype " + d + " is not shown in table.csv");
  ScalarType t;
  t.little_endian = d[0] != '>';
  const int64_t width = std::atoll(d.c_str() + 2);
  const int64_t size = c.itemsize();
  bool ok = false;
  switch (d[1]) {
    case 'i': t.kind = Scalar::signed_int, ok = width == size && (size == 1 || size == 2 || size == 4 || size == 8); break;
    case 'u': t.kind = Scalar::unsigned_int, ok = width == size && (size == 1 || size == 2 || size == 4 || size == 8); break;
    case 'f': t.kind = Scalar::floating, ok = width == size && (size == 4 || size == 8); break;
    case 'c': t.kind = Scalar::complex, ok = width == size && (size == 8 || size == 16); break;
    case 'b': t.kind = Scalar::boolean, ok = width == size && size == 1; break;
    case 'U': t.kind = Scalar::unicode, ok = width * 4 == size; break;
    case 'S': t.kind = Scalar::bytes, ok = width == size; break;
    default: throw UnsupportedError(where + ": dtype " + d + " is not shown in table.csv");
  }
  if (!ok) throw FormatError(where + ": dtype " + d + " disagrees with the typesize " + std::to_string(size));
  return t;
}

uint64_t load_uint(const uint8_t* p, int bytes, bool little_endian) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[little_endian ? i : bytes - 1 - i]) << (8 * i);
  return v;
}

int64_t load_int(const uint8_t* p, int bytes, bool little_endian) {
  const uint64_t v = load_uint(p, bytes, little_endian);
  const int shift = 64 - 8 * bytes;
  return int64_t(v << shift) >> shift;
}

double load_float(const uint8_t* p, int bytes, bool little_endian) {
  const uint64_t v = load_uint(p, bytes, little_endian);
  if (bytes == 4) {
    float f;
    const uint32_t u = uint32_t(v);
    std::memcpy(&f, &u, 4);
    return f;
  }
  double f;
  std::memcpy(&f, &v, 8);
  return f;
}

// One scalar as its CSV text, or (json) as a JSON value inside an array text.
void scalar_text(const uint8_t* p, int size, ScalarType t, const ValueStyle& style, bool json, std::string& out) {
  switch (t.kind) {
    case Scalar::signed_int: {
      const int64_t v = load_int(p, size, t.little_endian);
      if (style.timestamp_unit) {
        const std::string text = numpy_datetime_text(v, *style.timestamp_unit);
        out += json ? Json(text).dump() : text;
      } else {
        out += std::to_string(v);
      }
      return;
    }
    case Scalar::unsigned_int: {
      const uint64_t v = load_uint(p, size, t.little_endian);
      if (style.boolean && v <= 1) {
        out += json ? (v ? "true" : "false") : (v ? "True" : "False");
      } else {
        out += std::to_string(v);
      }
      return;
    }
    case Scalar::floating: {
      const double v = load_float(p, size, t.little_endian);
      if (json && !std::isfinite(v))
        out += std::isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity";
      else
        out += float_text(v, false, false);
      return;
    }
    case Scalar::complex: {
      const int half = size / 2;
      const std::string text =
          complex_text(load_float(p, half, t.little_endian), load_float(p + half, half, t.little_endian), false);
      out += json ? Json(text).dump() : text;
      return;
    }
    case Scalar::boolean: out += json ? (p[0] ? "true" : "false") : (p[0] ? "True" : "False"); return;
    case Scalar::unicode: {
      std::string text;
      int n = size / 4;
      auto cp = [&](int i) { return t.little_endian ? load_le32(p + 4 * i) : load_be32(p + 4 * i); };
      while (n > 0 && cp(n - 1) == 0) --n;  // NumPy pads with NULs
      for (int i = 0; i < n; ++i) append_utf8(text, cp(i));
      out += json ? Json(text).dump() : text;
      return;
    }
    case Scalar::bytes: {
      int n = size;
      while (n > 0 && p[n - 1] == 0) --n;
      const std::string text = python_bytes_repr(ByteSpan(p, size_t(n)));
      out += json ? Json(text).dump() : text;
      return;
    }
  }
}

class FixedReader : public ColumnReader {
 public:
  FixedReader(std::unique_ptr<NdColumn> values, ValueStyle style)
      : values_(std::move(values)), style_(std::move(style)), type_(scalar_type(*values_)) {
    if (values_->row_items() > kMaxCellBytes / values_->itemsize())
      throw UnsupportedError(values_->where() + ": cells of " + std::to_string(values_->row_items()) +
                             " items are not shown in table.csv");
  }
  int64_t length() const override { return values_->rows(); }
  void read(int64_t first, int64_t count, CsvCells& cells) const override {
    const int size = values_->itemsize();
    const int64_t row_bytes = values_->row_items() * size;
    const int64_t step = std::max<int64_t>(1, kMaxFixedReadBytes / row_bytes);
    const std::vector<int64_t>& shape = values_->item_shape();
    for (int64_t done = 0; done < count; done += step) {
      const int64_t n = std::min(step, count - done);
      const Bytes data = values_->rows_bytes(first + done, n);
      for (int64_t i = 0; i < n; ++i) {
        const uint8_t* p = data.data() + size_t(i * row_bytes);
        std::string text;
        if (shape.empty()) {
          scalar_text(p, size, type_, style_, false, text);
        } else {
          nested(p, 0, text);
        }
        cells[size_t(done + i)] = std::move(text);
      }
    }
  }

 private:
  // The item_shape sub-array at p, dimension `dim` on, as nested JSON arrays.
  const uint8_t* nested(const uint8_t* p, size_t dim, std::string& out) const {
    const std::vector<int64_t>& shape = values_->item_shape();
    out += '[';
    for (int64_t k = 0; k < shape[dim]; ++k) {
      if (k) out += ',';
      if (dim + 1 < shape.size()) {
        p = nested(p, dim + 1, out);
      } else {
        scalar_text(p, values_->itemsize(), type_, style_, true, out);
        p += values_->itemsize();
      }
    }
    out += ']';
    return p;
  }

  std::unique_ptr<NdColumn> values_;
  ValueStyle style_;
  ScalarType type_;
};

class Utf8Reader : public ColumnReader {
 public:
  Utf8Reader(std::unique_ptr<NdColumn> offsets, std::unique_ptr<NdColumn> bytes)
      : offsets_(std::move(offsets)), bytes_(std::move(bytes)) {
    if (offsets_->dtype() != "<i8" || !offsets_->item_shape().empty())
      throw FormatError(offsets_->where() + ": utf8 offsets are not int64 (dtype " + offsets_->dtype() + ")");
    if (bytes_->dtype() != "|u1" || !bytes_->item_shape().empty())
      throw FormatError(bytes_->where() + ": utf8 bytes are not uint8 (dtype " + bytes_->dtype() + ")");
    if (offsets_->rows() < 1) throw FormatError(offsets_->where() + ": utf8 offsets are empty");
  }
  int64_t length() const override { return offsets_->rows() - 1; }
  void read(int64_t first, int64_t count, CsvCells& cells) const override {
    const Bytes raw = offsets_->item_bytes(first, count + 1);
    std::vector<int64_t> off(size_t(count) + 1);
    for (size_t k = 0; k <= size_t(count); ++k) {
      off[k] = int64_t(load_le64(raw.data() + 8 * k));
      if (off[k] < 0 || off[k] > bytes_->rows() || (k && off[k] < off[k - 1]))
        throw FormatError(offsets_->where() + ": utf8 offset of row " + std::to_string(first + int64_t(k)) + " (" +
                          std::to_string(off[k]) + ") is " +
                          (off[k] < 0 || off[k] > bytes_->rows() ? "outside the " + std::to_string(bytes_->rows()) +
                                                                       " bytes"
                                                                 : "below the one before"));
    }
    for (size_t k = 0; k < size_t(count); ++k)
      if (off[k + 1] - off[k] > kMaxCellBytes)
        throw FormatError(offsets_->where() + ": row " + std::to_string(first + int64_t(k)) + " claims " +
                          std::to_string(off[k + 1] - off[k]) + " bytes, more than table.csv shows in a cell");
    const bool whole = off[size_t(count)] - off[0] <= kMaxBlockBytes;
    const Bytes blob = whole ? bytes_->item_bytes(off[0], off[size_t(count)] - off[0]) : Bytes();
    for (size_t k = 0; k < size_t(count); ++k) {
      std::string text;
      if (whole) {
        text.assign(reinterpret_cast<const char*>(blob.data()) + (off[k] - off[0]), size_t(off[k + 1] - off[k]));
      } else {
        const Bytes one = bytes_->item_bytes(off[k], off[k + 1] - off[k]);
        text.assign(reinterpret_cast<const char*>(one.data()), one.size());
      }
      if (!valid_utf8(text))
        throw FormatError(bytes_->where() + ": row " + std::to_string(first + int64_t(k)) + " is not UTF-8");
      cells[k] = std::move(text);
    }
  }

 private:
  std::unique_ptr<NdColumn> offsets_, bytes_;
};

class ItemsReader : public ColumnReader {
 public:
  explicit ItemsReader(std::unique_ptr<ItemsColumn> items) : items_(std::move(items)) {}
  int64_t length() const override { return items_->length(); }
  void read(int64_t first, int64_t count, CsvCells& cells) const override {
    for (int64_t i = 0; i < count; ++i) cells[size_t(i)] = item_text(items_->item(first + i));
  }

 private:
  std::unique_ptr<ItemsColumn> items_;
};

class DictionaryReader : public ColumnReader {
 public:
  DictionaryReader(std::unique_ptr<NdColumn> codes, std::unique_ptr<ItemsColumn> values, int64_t null_code)
      : codes_(std::move(codes)), values_(std::move(values)), null_code_(null_code), type_(scalar_type(*codes_)) {
    if ((type_.kind != Scalar::signed_int && type_.kind != Scalar::unsigned_int) || !codes_->item_shape().empty())
      throw FormatError(codes_->where() + ": dictionary codes are not integers (dtype " + codes_->dtype() + ")");
  }
  int64_t length() const override { return codes_->rows(); }
  void read(int64_t first, int64_t count, CsvCells& cells) const override {
    const Bytes data = codes_->rows_bytes(first, count);
    const int size = codes_->itemsize();
    for (int64_t i = 0; i < count; ++i) {
      const uint8_t* p = data.data() + size_t(i) * size_t(size);
      int64_t code;
      if (type_.kind == Scalar::signed_int) {
        code = load_int(p, size, type_.little_endian);
      } else {
        const uint64_t u = load_uint(p, size, type_.little_endian);
        code = u > uint64_t(std::numeric_limits<int64_t>::max()) ? -1 : int64_t(u);
        if (u > uint64_t(std::numeric_limits<int64_t>::max()) && null_code_ == -1) code = -2;
      }
      if (code == null_code_) {
        cells[size_t(i)] = std::nullopt;
        continue;
      }
      if (code < 0 || code >= values_->length())
        throw FormatError(codes_->where() + ": row " + std::to_string(first + i) + " has code " +
                          std::to_string(code) + ", outside the " + std::to_string(values_->length()) +
                          " dictionary values");
      cells[size_t(i)] = item_text(values_->item(code));
    }
  }

 private:
  std::unique_ptr<NdColumn> codes_;
  std::unique_ptr<ItemsColumn> values_;
  int64_t null_code_;
  ScalarType type_;
};

}  // namespace

NdColumn::NdColumn(std::shared_ptr<const Frame> frame, const std::string& where)
    : frame_(std::move(frame)), where_(where) {
  const Metalayer* meta = frame_->find_metalayer("b2nd");
  if (!meta) throw UnsupportedError(where + " is not an N-d array");
  NdMeta nd = parse_nd_meta(meta->content, false);
  if (nd.ndim < 1 || !nd.dtype) throw UnsupportedError(where + " is not a typed array of rows");
  layout_ = std::make_unique<NdLayout>(nd, frame_->header().typesize, frame_->nchunks(), frame_->header().chunksize);
  itemsize_ = frame_->header().typesize;
  dtype_ = *nd.dtype;
  rows_ = nd.shape[0];
  item_shape_.assign(nd.shape.begin() + 1, nd.shape.end());
  for (int64_t s : item_shape_) {
    if (s <= 0) throw FormatError(where + ": an ndarray column with an empty item shape");
    if (row_items_ > layout_->nitems() / s) throw FormatError(where + ": item shape overflows the array");
    row_items_ *= s;
  }
}

Bytes NdColumn::item_bytes(int64_t first, int64_t count) const {
  if (first < 0 || count < 0 || first > layout_->nitems() || count > layout_->nitems() - first)
    throw FormatError(where_ + ": items [" + std::to_string(first) + ", +" + std::to_string(count) + ") past its " +
                      std::to_string(layout_->nitems()));
  Bytes out(size_t(count) * size_t(itemsize_));
  if (count == 0) return out;
  const int64_t offset = first * itemsize_;
  std::vector<int64_t> needed = layout_->chunks_for_range(offset, int64_t(out.size()));
  // Reading moves forward: chunks before this range are done with.
  if (!needed.empty()) chunks_.erase(chunks_.begin(), chunks_.lower_bound(needed.front()));
  layout_->read(offset, out, [&](int64_t n) -> ByteSpan {
    auto it = chunks_.find(n);
    if (it == chunks_.end()) it = chunks_.emplace(n, frame_->read_chunk(n)).first;
    return it->second;
  });
  return out;
}

Bytes NdColumn::rows_bytes(int64_t first, int64_t count) const {
  return item_bytes(first * row_items_, count * row_items_);
}

ItemsColumn::ItemsColumn(std::shared_ptr<const Frame> frame, const std::string& where)
    : frame_(std::move(frame)), where_(where) {
  layout_ = detect_frame_kind(*frame_).items;
  const int64_t nchunks = frame_->nchunks();
  if (layout_ == ItemsLayout::one_per_chunk) {
    starts_.resize(size_t(nchunks) + 1);
    for (int64_t n = 0; n <= nchunks; ++n) starts_[size_t(n)] = n;
  } else if (layout_ == ItemsLayout::block_arrays) {
    const Vlmetalayer* layer = frame_->find_vlmetalayer("_batch_array_metadata");
    std::optional<Json> doc;
    if (layer) doc = msgpack_to_json(frame_->vlmetalayer_content(*layer));
    if (!doc || !doc->is_object() || !doc->contains("batch_lengths") || !(*doc)["batch_lengths"].is_array() ||
        int64_t((*doc)["batch_lengths"].size()) != nchunks)
      throw FormatError(where + ": no batch_lengths with one length per chunk in _batch_array_metadata");
    starts_.push_back(0);
    for (const Json& n : (*doc)["batch_lengths"]) {
      if (!n.is_number_integer() || n.get<int64_t>() < 0 ||
          n.get<int64_t>() > std::numeric_limits<int64_t>::max() / 2 - starts_.back())
        throw FormatError(where + ": a batch length is not a count");
      starts_.push_back(starts_.back() + n.get<int64_t>());
    }
  } else {
    throw UnsupportedError(where + " holds no msgpack items (an Arrow-serialized column?)");
  }
  total_ = starts_.back();
}

const Json& ItemsColumn::item(int64_t i) const {
  if (i < 0 || i >= total_)
    throw FormatError(where_ + ": item " + std::to_string(i) + " past its " + std::to_string(total_));
  const int64_t n = int64_t(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin()) - 1;
  auto it = cache_.find(n);
  if (it == cache_.end()) {
    std::vector<Json> items;
    try {
      items = chunk_items(*frame_, layout_, n);
    } catch (const FormatError& e) {
      throw FormatError(where_ + ": " + e.what());
    }
    const int64_t want = starts_[size_t(n) + 1] - starts_[size_t(n)];
    if (int64_t(items.size()) != want)
      throw FormatError(where_ + ": chunk " + std::to_string(n) + " holds " + std::to_string(items.size()) +
                        " items, its batch length says " + std::to_string(want));
    if (cache_.size() >= kItemChunksKept) cache_.erase(cache_.begin());
    it = cache_.emplace(n, std::move(items)).first;
  }
  return it->second[size_t(i - starts_[size_t(n)])];
}

std::unique_ptr<ColumnReader> make_fixed_reader(std::unique_ptr<NdColumn> values, ValueStyle style) {
  return std::make_unique<FixedReader>(std::move(values), std::move(style));
}
std::unique_ptr<ColumnReader> make_utf8_reader(std::unique_ptr<NdColumn> offsets, std::unique_ptr<NdColumn> bytes) {
  return std::make_unique<Utf8Reader>(std::move(offsets), std::move(bytes));
}
std::unique_ptr<ColumnReader> make_items_reader(std::unique_ptr<ItemsColumn> items) {
  return std::make_unique<ItemsReader>(std::move(items));
}
std::unique_ptr<ColumnReader> make_dictionary_reader(std::unique_ptr<NdColumn> codes,
                                                     std::unique_ptr<ItemsColumn> values, int64_t null_code) {
  return std::make_unique<DictionaryReader>(std::move(codes), std::move(values), null_code);
}

std::string python_float_repr(double v, bool single) { return float_text(v, single, false); }

std::string python_bytes_repr(ByteSpan bytes) {
  const bool has_single = std::find(bytes.begin(), bytes.end(), uint8_t('\'')) != bytes.end();
  const bool has_double = std::find(bytes.begin(), bytes.end(), uint8_t('"')) != bytes.end();
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out = "b";
  out += quote;
  for (uint8_t c : bytes) {
    if (c == uint8_t(quote) || c == '\\') {
      out += '\\', out += char(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7F) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  out += quote;
  return out;
}

std::string numpy_datetime_text(int64_t value, const std::string& unit) {
  if (value == std::numeric_limits<int64_t>::min()) return "NaT";
  int64_t per_second;
  int digits;
  if (unit == "s") {
    per_second = 1, digits = 0;
  } else if (unit == "ms") {
    per_second = 1000, digits = 3;
  } else if (unit == "us") {
    per_second = 1000000, digits = 6;
  } else if (unit == "ns") {
    per_second = 1000000000, digits = 9;
  } else {
    throw UnsupportedError("timestamp unit " + unit + " is not shown in table.csv");
  }
  const int64_t seconds = floor_div(value, per_second);
  const int64_t fraction = value - seconds * per_second;
  const int64_t days = floor_div(seconds, 86400);
  const int64_t second_of_day = seconds - days * 86400;
  int64_t y;
  unsigned m, d;
  civil_from_days(days, y, m, d);
  char buf[96];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld", static_cast<long long>(y), m, d,
                        static_cast<long long>(second_of_day / 3600), static_cast<long long>(second_of_day / 60 % 60),
                        static_cast<long long>(second_of_day % 60));
  if (digits) std::snprintf(buf + n, sizeof buf - size_t(n), ".%0*lld", digits, static_cast<long long>(fraction));
  return buf;
}

void append_json_text(const Json& value, std::string& out) {
  switch (value.type()) {
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& v : value) {
        if (!first) out += ',';
        first = false;
        append_json_text(v, out);
      }
      out += ']';
      return;
    }
    case Json::value_t::object: {
      if (value.size() == 1 && value.contains("__float__") && value["__float__"].is_string()) {
        const std::string& name = value["__float__"].get_ref<const std::string&>();
        out += name == "inf" ? "Infinity" : name == "-inf" ? "-Infinity" : "NaN";
        return;
      }
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first) out += ',';
        first = false;
        out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace);
        out += ':';
        append_json_text(it.value(), out);
      }
      out += '}';
      return;
    }
    case Json::value_t::number_float: out += float_text(value.get<double>(), false, false); return;
    default: out += value.dump(-1, ' ', false, Json::error_handler_t::replace); return;
  }
}

std::optional<std::string> item_text(const Json& item) {
  switch (item.type()) {
    case Json::value_t::null: return std::nullopt;
    case Json::value_t::string: return item.get<std::string>();
    case Json::value_t::boolean: return std::string(item.get<bool>() ? "True" : "False");
    case Json::value_t::number_integer: return std::to_string(item.get<int64_t>());
    case Json::value_t::number_unsigned: return std::to_string(item.get<uint64_t>());
    case Json::value_t::number_float: return float_text(item.get<double>(), false, false);
    case Json::value_t::object: {
      if (std::optional<Bytes> bytes = json_bytes_value(item)) return python_bytes_repr(*bytes);
      if (item.size() == 1 && item.contains("__float__") && item["__float__"].is_string()) {
        const std::string& name = item["__float__"].get_ref<const std::string&>();
        return name == "inf" || name == "-inf" ? name : std::string("nan");
      }
      break;
    }
    default: break;
  }
  std::string out;
  append_json_text(item, out);
  return out;
}

}  // namespace blosc2fs
