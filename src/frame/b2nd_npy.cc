// .npy headers and the item size of NumPy dtype strings, for array.npy.
#include <cctype>
#include <memory>
#include <variant>

#include "b2nd.h"

namespace blosc2fs {

namespace {

// The subset of Python literals a NumPy descr uses: strings, integers, lists, tuples.
struct PyValue {
  enum class Kind { str, integer, list, tuple } kind = Kind::str;
  std::string text;
  int64_t value = 0;
  std::vector<PyValue> items;
};

class PyLiteralParser {
 public:
  explicit PyLiteralParser(std::string_view text) : s_(text) {}

  std::optional<PyValue> parse_all() {
    auto v = parse(0);
    skip_space();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  std::optional<PyValue> parse(int depth) {
    if (depth > 32) return std::nullopt;
    skip_space();
    if (pos_ >= s_.size()) return std::nullopt;
    char c = s_[pos_];
    PyValue v;
    if (c == '[' || c == '(') {
      v.kind = c == '[' ? PyValue::Kind::list : PyValue::Kind::tuple;
      const char close = c == '[' ? ']' : ')';
      ++pos_;
      for (;;) {
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
          return v;
        }
        auto item = parse(depth + 1);
        if (!item) return std::nullopt;
        v.items.push_back(std::move(*item));
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
        } else if (pos_ >= s_.size() || s_[pos_] != close) {
          return std::nullopt;
        }
      }
    }
    if (c == '\'' || c == '"') {
      ++pos_;
      while (pos_ < s_.size() && s_[pos_] != c) {
        if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
        v.text += s_[pos_++];
      }
      if (pos_ >= s_.size()) return std::nullopt;
      ++pos_;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      v.kind = PyValue::Kind::integer;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v.value > (INT64_MAX - 9) / 10) return std::nullopt;
        v.value = v.value * 10 + (s_[pos_++] - '0');
      }
      return v;
    }
    return std::nullopt;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::optional<int64_t> simple_itemsize(std::string_view s) {
  if (!s.empty() && std::string_view("<>|=!").find(s[0]) != std::string_view::npos) s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  // Named forms: bool, int8..int64, uint8.., float16..float64, complex64/128.
  for (auto [name, scale] : {std::pair<std::string_view, int>{"complex", 8}, {"float", 8}, {"uint", 8}, {"int", 8}}) {
    if (s.substr(0, name.size()) == name && s.size() > name.size()) {
      int64_t bits = 0;
      for (char c : s.substr(name.size())) {
        if (!std::isdigit(static_cast<unsigned char>(c)) || bits > 1024) return std::nullopt;
        bits = bits * 10 + (c - '0');
      }
      if (bits <= 0 || bits % scale != 0) return std::nullopt;
      return bits / scale;
    }
  }
  if (s == "bool") return 1;
  const char code = s[0];
  std::string_view rest = s.substr(1);
  if (code == 'M' || code == 'm') {  // datetime64/timedelta64 with an optional [unit]
    size_t bracket = rest.find('[');
    if (bracket != std::string_view::npos) {
      if (rest.back() != ']') return std::nullopt;
      rest = rest.substr(0, bracket);
    }
    if (rest.empty() || rest == "8") return 8;
    return std::nullopt;
  }
  if (!rest.empty()) {
    int64_t n = 0;
    for (char c : rest) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || n > (INT32_MAX / 10)) return std::nullopt;
      n = n * 10 + (c - '0');
    }
    switch (code) {
      case 'b': case 'i': case 'u': case 'f': case 'c': case 'S': case 'a': case 'V': case 'O': case '?':
        return n;
      case 'U':
        return n * 4;
      default:
        return std::nullopt;
    }
  }
  switch (code) {
    case '?': case 'b': case 'B': return 1;
    case 'h': case 'H': case 'e': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'l': case 'L': case 'q': case 'Q': case 'p': case 'P': case 'd': case 'F': case 'O': return 8;
    case 'g': case 'D': return 16;
    case 'G': return 32;
    default: return std::nullopt;
  }
}

std::optional<int64_t> value_itemsize(const PyValue& v, int depth);

// One field of a structured dtype: (name, format) or (name, format, shape).
std::optional<int64_t> field_itemsize(const PyValue& f, int depth) {
  if (f.kind != PyValue::Kind::tuple || f.items.size() < 2 || f.items.size() > 3) return std::nullopt;
  auto size = value_itemsize(f.items[1], depth + 1);
  if (!size) return std::nullopt;
  if (f.items.size() == 3) {
    const PyValue& shape = f.items[2];
    std::vector<int64_t> dims;
    if (shape.kind == PyValue::Kind::integer) {
      dims.push_back(shape.value);
    } else if (shape.kind == PyValue::Kind::tuple) {
      for (const PyValue& d : shape.items) {
        if (d.kind != PyValue::Kind::integer) return std::nullopt;
        dims.push_back(d.value);
      }
    } else {
      return std::nullopt;
    }
    for (int64_t d : dims) {
      if (d != 0 && *size > INT32_MAX / d) return std::nullopt;
      *size *= d;
    }
  }
  return size;
}

std::optional<int64_t> value_itemsize(const PyValue& v, int depth) {
  if (depth > 32) return std::nullopt;
  if (v.kind == PyValue::Kind::str) return simple_itemsize(v.text);
  if (v.kind != PyValue::Kind::list) return std::nullopt;
  int64_t total = 0;
  for (const PyValue& f : v.items) {
    auto size = field_itemsize(f, depth);
    if (!size || total > INT32_MAX - *size) return std::nullopt;
    total += *size;
  }
  return total;
}

}  // namespace

std::optional<int64_t> numpy_dtype_itemsize(std::string_view dtype) {
  std::optional<int64_t> size;
  std::string_view trimmed = dtype;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.remove_prefix(1);
  if (!trimmed.empty() && (trimmed.front() == '[' || trimmed.front() == '\'' || trimmed.front() == '"')) {
    if (auto v = PyLiteralParser(trimmed).parse_all()) size = value_itemsize(*v, 0);
  } else {
    size = simple_itemsize(trimmed);
  }
  if (size && *size <= 0) return std::nullopt;
  return size;
}

std::string npy_descr(const NdMeta& meta, int32_t typesize, bool* mismatch) {
  bool ok = false;
  if (meta.dtype) {
    auto size = numpy_dtype_itemsize(*meta.dtype);
    ok = size && *size == typesize;
  }
  if (mismatch) *mismatch = !ok;
  return ok ? *meta.dtype : "|V" + std::to_string(typesize);
}

// As numpy.lib.format writes it (header dict with growth padding, aligned to 64).
std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) shape_text += ", ";
    shape_text += std::to_string(shape[i]);
  }
  shape_text += shape.size() == 1 ? ",)" : ")";
  const bool literal = !descr.empty() && descr.front() == '[';
  std::string dict = "{'descr': " + (literal ? descr : "'" + descr + "'") +
                     ", 'fortran_order': False, 'shape': " + shape_text + ", }";
  constexpr size_t kGrowthAxisMaxDigits = 21;
  if (!shape.empty()) dict.append(kGrowthAxisMaxDigits - std::min(kGrowthAxisMaxDigits, std::to_string(shape[0]).size()), ' ');

  const size_t hlen = dict.size() + 1;
  size_t len_field = 2;
  size_t padlen = 64 - (6 + 2 + len_field + hlen) % 64;
  if (hlen + padlen > 0xFFFF) {
    len_field = 4;
    padlen = 64 - (6 + 2 + len_field + hlen) % 64;
  }
  std::string out("\x93NUMPY", 6);
  out += char(len_field == 2 ? 1 : 2);
  out += char(0);
  const size_t total = hlen + padlen;
  for (size_t i = 0; i < len_field; ++i) out += char((total >> (8 * i)) & 0xFF);
  out += dict;
  out.append(padlen, ' ');
  out += '\n';
  return out;
}

}  // namespace blosc2fs
