// .npy headers, and NumPy dtype strings as python-blosc2 and c-blosc2 write them in the
// b2nd metalayer turned into a .npy descr (python-blosc2.md §2.3).
#include <algorithm>
#include <cctype>
#include <map>
#include <memory>

#include "b2nd.h"
#include "utf8.h"

namespace blosc2fs {

namespace {

constexpr int kMaxDepth = 32;

// The subset of Python literals a NumPy dtype repr uses: strings, integers, lists,
// tuples, dicts (keys and values alternate in `items`), True/False/None.
struct PyValue {
  enum class Kind { str, integer, list, tuple, dict, boolean, none } kind = Kind::str;
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

  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // Items up to `close`, separated by commas (a trailing comma allowed); in a dict
  // each item is `key: value`.
  std::optional<PyValue> parse_sequence(PyValue v, char close, int depth) {
    ++pos_;
    for (;;) {
      if (eat(close)) return v;
      auto item = parse(depth + 1);
      if (!item) return std::nullopt;
      v.items.push_back(std::move(*item));
      if (v.kind == PyValue::Kind::dict) {
        if (!eat(':')) return std::nullopt;
        auto value = parse(depth + 1);
        if (!value) return std::nullopt;
        v.items.push_back(std::move(*value));
      }
      if (!eat(',')) {
        if (!eat(close)) return std::nullopt;
        return v;
      }
    }
  }

  std::optional<uint32_t> hex_digits(int n) {
    if (s_.size() - pos_ < size_t(n)) return std::nullopt;
    uint32_t cp = 0;
    for (int i = 0; i < n; ++i) {
      const char c = s_[pos_++];
      if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
      cp = cp * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return std::nullopt;
    return cp;
  }

  // A quoted string with the escapes Python's repr uses.
  std::optional<PyValue> parse_string() {
    const char quote = s_[pos_++];
    PyValue v;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      char c = s_[pos_++];
      if (c != '\\') {
        v.text += c;
        continue;
      }
      if (pos_ >= s_.size()) return std::nullopt;
      c = s_[pos_++];
      std::optional<uint32_t> cp;
      switch (c) {
        case '\\': case '\'': case '"': v.text += c; continue;
        case 'n': v.text += '\n'; continue;
        case 't': v.text += '\t'; continue;
        case 'r': v.text += '\r'; continue;
        case 'x': cp = hex_digits(2); break;
        case 'u': cp = hex_digits(4); break;
        case 'U': cp = hex_digits(8); break;
        default: return std::nullopt;
      }
      if (!cp) return std::nullopt;
      append_utf8(v.text, *cp);
    }
    if (pos_ >= s_.size()) return std::nullopt;
    ++pos_;
    return v;
  }

  std::optional<PyValue> parse(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    skip_space();
    if (pos_ >= s_.size()) return std::nullopt;
    const char c = s_[pos_];
    PyValue v;
    if (c == '[') return v.kind = PyValue::Kind::list, parse_sequence(std::move(v), ']', depth);
    if (c == '(') return v.kind = PyValue::Kind::tuple, parse_sequence(std::move(v), ')', depth);
    if (c == '{') return v.kind = PyValue::Kind::dict, parse_sequence(std::move(v), '}', depth);
    if (c == '\'' || c == '"') return parse_string();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      v.kind = PyValue::Kind::integer;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v.value > (INT64_MAX - 9) / 10) return std::nullopt;
        v.value = v.value * 10 + (s_[pos_++] - '0');
      }
      return v;
    }
    for (auto [word, kind, truth] : {std::tuple{"True", PyValue::Kind::boolean, 1},
                                     std::tuple{"False", PyValue::Kind::boolean, 0},
                                     std::tuple{"None", PyValue::Kind::none, 0}}) {
      const std::string_view w(word);
      if (s_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        v.kind = kind;
        v.value = truth;
        return v;
      }
    }
    return std::nullopt;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::optional<int64_t> simple_itemsize(std::string_view s) {
  if (!s.empty() && std::string_view("<>|=!").find(s[0]) != std::string_view::npos) s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  // Named forms: bool, int8..int64, uint8.., float16..float64, complex64/128,
  // datetime64[unit], timedelta64[unit].
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
  char code = s[0];
  std::string_view rest = s.substr(1);
  for (auto [name, letter] : {std::pair<std::string_view, char>{"datetime64", 'M'}, {"timedelta64", 'm'}}) {
    if (s.substr(0, name.size()) == name) {
      code = letter;
      rest = s.substr(name.size());
      if (rest.empty() || rest[0] != '[') return std::nullopt;
    }
  }
  if (code == 'M' || code == 'm') {  // datetime64/timedelta64 with an optional [unit]
    size_t bracket = rest.find('[');
    if (bracket != std::string_view::npos) {
      std::string_view unit = rest.substr(bracket + 1);
      if (unit.size() < 2 || unit.back() != ']') return std::nullopt;
      for (char c : unit.substr(0, unit.size() - 1))
        if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
      rest = rest.substr(0, bracket);
    }
    if (rest.empty() || rest == "8") return 8;
    return std::nullopt;
  }
  // Object items ('O') are left out: np.load refuses them without allow_pickle.
  if (!rest.empty()) {
    int64_t n = 0;
    for (char c : rest) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || n > (INT32_MAX / 10)) return std::nullopt;
      n = n * 10 + (c - '0');
    }
    switch (code) {
      case 'b': case 'i': case 'u': case 'f': case 'c': case 'S': case 'a': case 'V': case '?':
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
    case 'l': case 'L': case 'q': case 'Q': case 'd': case 'F': return 8;
    case 'g': case 'D': return 16;
    case 'G': return 32;
    default: return std::nullopt;
  }
}

// Python's repr of a str, as numpy writes names and formats into a descr.
std::string py_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A dtype as .npy descr text (a quoted simple string, or a list of fields) and its size.
struct Described {
  std::string descr;
  int64_t itemsize = 0;
};

std::optional<Described> describe(const PyValue& v, int depth);

// A subarray shape (an integer or a tuple of integers) as Python tuple text; multiplies *size.
std::optional<std::string> shape_text(const PyValue& shape, int64_t* size) {
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
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 0 && *size > INT32_MAX / dims[i]) return std::nullopt;
    *size *= dims[i];
    text += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return text + (dims.size() == 1 ? ",)" : ")");
}

// One field: a name (or (title, name)), a format, an optional subarray shape.
struct Field {
  std::string name_text;  // already Python text
  std::string format;     // descr text
  std::string shape;      // "" or Python tuple text
  int64_t offset = 0, size = 0;
};

std::optional<std::string> name_text(const PyValue& name) {
  if (name.kind == PyValue::Kind::str) return py_quote(name.text);
  if (name.kind == PyValue::Kind::tuple && name.items.size() == 2 && name.items[0].kind == PyValue::Kind::str &&
      name.items[1].kind == PyValue::Kind::str)
    return "(" + py_quote(name.items[0].text) + ", " + py_quote(name.items[1].text) + ")";
  return std::nullopt;
}

// A field's format with an optional shape; the format may itself be a (format, shape) tuple
// (the dict form writes subarrays that way).
std::optional<Field> make_field(const PyValue& format, const PyValue* shape, int depth) {
  Field f;
  const PyValue* fmt = &format;
  if (format.kind == PyValue::Kind::tuple) {
    if (shape || format.items.size() != 2) return std::nullopt;
    fmt = &format.items[0];
    shape = &format.items[1];
  }
  auto d = describe(*fmt, depth + 1);
  if (!d) return std::nullopt;
  f.format = d->descr;
  f.size = d->itemsize;
  if (shape) {
    auto text = shape_text(*shape, &f.size);
    if (!text) return std::nullopt;
    f.shape = *text;
  }
  return f;
}

std::string fields_text(const std::vector<Field>& fields) {
  std::string out = "[";
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    out += (i ? ", (" : "(") + f.name_text + ", " + f.format + (f.shape.empty() ? "" : ", " + f.shape) + ")";
  }
  return out + "]";
}

// The list form: [(name, format[, shape]), ...], fields packed one after the other.
std::optional<Described> describe_list(const PyValue& v, int depth) {
  std::vector<Field> fields;
  int64_t total = 0;
  for (const PyValue& item : v.items) {
    if (item.kind != PyValue::Kind::tuple || item.items.size() < 2 || item.items.size() > 3) return std::nullopt;
    auto name = name_text(item.items[0]);
    auto f = make_field(item.items[1], item.items.size() == 3 ? &item.items[2] : nullptr, depth);
    if (!name || !f || total > INT32_MAX - f->size) return std::nullopt;
    f->name_text = *name;
    total += f->size;
    fields.push_back(std::move(*f));
  }
  if (fields.empty()) return std::nullopt;
  return Described{fields_text(fields), total};
}

const PyValue* dict_get(const PyValue& dict, std::string_view key) {
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2)
    if (dict.items[i].kind == PyValue::Kind::str && dict.items[i].text == key) return &dict.items[i + 1];
  return nullptr;
}

// The dict form str(dtype) gives padded and aligned structs:
// {'names': [...], 'formats': [...], 'offsets': [...], 'itemsize': N[, 'titles': [...]][, 'aligned': True]}.
// A .npy descr has no offsets, so the fields are listed by offset with ('', '|Vn') entries
// for the gaps, as numpy's dtype.descr does. Overlapping fields cannot be listed.
std::optional<Described> describe_dict(const PyValue& v, int depth) {
  for (size_t i = 0; i + 1 < v.items.size(); i += 2) {
    const std::string& key = v.items[i].text;
    if (v.items[i].kind != PyValue::Kind::str ||
        (key != "names" && key != "formats" && key != "offsets" && key != "itemsize" && key != "titles" &&
         key != "aligned"))
      return std::nullopt;
  }
  const PyValue *names = dict_get(v, "names"), *formats = dict_get(v, "formats"), *offsets = dict_get(v, "offsets"),
                *itemsize = dict_get(v, "itemsize"), *titles = dict_get(v, "titles");
  const auto is_seq = [](const PyValue* p) {
    return p && (p->kind == PyValue::Kind::list || p->kind == PyValue::Kind::tuple);
  };
  if (!is_seq(names) || !is_seq(formats) || names->items.size() != formats->items.size() || names->items.empty())
    return std::nullopt;
  const size_t n = names->items.size();
  if (offsets && (!is_seq(offsets) || offsets->items.size() != n)) return std::nullopt;
  if (titles && (!is_seq(titles) || titles->items.size() != n)) return std::nullopt;
  if (itemsize && itemsize->kind != PyValue::Kind::integer) return std::nullopt;
  // Without offsets numpy packs the fields, unless aligned (which needs the C alignment rules).
  const PyValue* aligned = dict_get(v, "aligned");
  if (!offsets && aligned && aligned->value) return std::nullopt;

  std::vector<Field> fields;
  int64_t packed = 0;
  for (size_t i = 0; i < n; ++i) {
    const PyValue& name = names->items[i];
    if (name.kind != PyValue::Kind::str) return std::nullopt;
    auto f = make_field(formats->items[i], nullptr, depth);
    if (!f) return std::nullopt;
    const PyValue* title = titles ? &titles->items[i] : nullptr;
    if (title && title->kind == PyValue::Kind::str)
      f->name_text = "(" + py_quote(title->text) + ", " + py_quote(name.text) + ")";
    else if (!title || title->kind == PyValue::Kind::none)
      f->name_text = py_quote(name.text);
    else
      return std::nullopt;
    if (offsets) {
      if (offsets->items[i].kind != PyValue::Kind::integer || offsets->items[i].value > INT32_MAX) return std::nullopt;
      f->offset = offsets->items[i].value;
    } else {
      f->offset = packed;
    }
    packed = f->offset + f->size;
    if (packed > INT32_MAX) return std::nullopt;
    fields.push_back(std::move(*f));
  }
  std::stable_sort(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.offset < b.offset; });
  std::vector<Field> listed;
  int64_t end = 0;
  const auto pad = [&](int64_t to) {
    if (to > end) listed.push_back(Field{"''", "'|V" + std::to_string(to - end) + "'", "", end, to - end});
  };
  for (Field& f : fields) {
    if (f.offset < end) return std::nullopt;  // overlapping fields
    pad(f.offset);
    end = f.offset + f.size;
    listed.push_back(std::move(f));
  }
  const int64_t size = itemsize ? itemsize->value : end;
  if (size < end || size > INT32_MAX) return std::nullopt;
  pad(size);
  return Described{fields_text(listed), size};
}

std::optional<Described> describe(const PyValue& v, int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  switch (v.kind) {
    case PyValue::Kind::str: {
      auto size = simple_itemsize(v.text);
      if (!size) return std::nullopt;
      return Described{py_quote(v.text), *size};
    }
    case PyValue::Kind::list: return describe_list(v, depth);
    case PyValue::Kind::dict: return describe_dict(v, depth);
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<NpyDtype> npy_dtype(std::string_view dtype) {
  // python-blosc2 decodes the dtype as UTF-8 and numpy the header of format 3.0: a
  // string that is not UTF-8 cannot be a descr.
  if (!valid_utf8(dtype)) return std::nullopt;
  std::string_view trimmed = dtype;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.remove_prefix(1);
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.remove_suffix(1);
  std::optional<NpyDtype> out;
  if (!trimmed.empty() && std::string_view("[{'\"").find(trimmed.front()) != std::string_view::npos) {
    auto v = PyLiteralParser(trimmed).parse_all();
    if (!v) return std::nullopt;
    auto d = describe(*v, 0);
    if (!d) return std::nullopt;
    // A quoted simple string goes into the header unquoted, as the plain form does.
    if (v->kind == PyValue::Kind::str) d->descr = v->text;
    out = NpyDtype{d->descr, d->itemsize};
  } else if (auto size = simple_itemsize(trimmed)) {
    out = NpyDtype{std::string(trimmed), *size};
  }
  if (out && out->itemsize <= 0) return std::nullopt;
  return out;
}

std::optional<int64_t> numpy_dtype_itemsize(std::string_view dtype) {
  auto d = npy_dtype(dtype);
  if (!d) return std::nullopt;
  return d->itemsize;
}

std::string npy_descr(const NdMeta& meta, int32_t typesize, bool* mismatch) {
  if (mismatch) *mismatch = false;
  if (!meta.dtype) {
    // No dtype: python-blosc2 reads such arrays as S<typesize>; legacy caterva arrays
    // never had one and show as raw items.
    return (meta.legacy_caterva ? "|V" : "|S") + std::to_string(typesize);
  }
  auto d = npy_dtype(*meta.dtype);
  if (d && d->itemsize == typesize) return d->descr;
  if (mismatch) *mismatch = true;
  return "|V" + std::to_string(typesize);
}

namespace {

// The header text in the encoding numpy picks: latin-1 when every character fits
// (formats 1.0 and 2.0), else UTF-8 (format 3.0). Field names are UTF-8 here.
std::string to_latin1(const std::string& utf8_text, bool* fits) {
  std::string out;
  *fits = true;
  for (size_t i = 0; i < utf8_text.size(); ++i) {
    const auto c = static_cast<unsigned char>(utf8_text[i]);
    if (c < 0x80) {
      out += char(c);
    } else if ((c == 0xC2 || c == 0xC3) && i + 1 < utf8_text.size()) {
      out += char(((c & 0x03) << 6) | (static_cast<unsigned char>(utf8_text[++i]) & 0x3F));
    } else {
      *fits = false;
      return utf8_text;
    }
  }
  return out;
}

}  // namespace

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

  bool latin1 = true;
  dict = to_latin1(dict, &latin1);
  const size_t hlen = dict.size() + 1;
  size_t len_field = latin1 ? 2 : 4;
  size_t padlen = 64 - (6 + 2 + len_field + hlen) % 64;
  if (hlen + padlen > 0xFFFF && len_field == 2) {
    len_field = 4;
    padlen = 64 - (6 + 2 + len_field + hlen) % 64;
  }
  std::string out("\x93NUMPY", 6);
  out += char(!latin1 ? 3 : len_field == 2 ? 1 : 2);
  out += char(0);
  const size_t total = hlen + padlen;
  for (size_t i = 0; i < len_field; ++i) out += char((total >> (8 * i)) & 0xFF);
  out += dict;
  out.append(padlen, ' ');
  out += '\n';
  return out;
}

std::optional<NpyFileHeader> parse_npy_file_header(ByteSpan file, std::string* why) {
  auto fail = [&](std::string text) -> std::optional<NpyFileHeader> {
    *why = std::move(text);
    return std::nullopt;
  };
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (file.size() < 10 || !std::equal(std::begin(kMagic), std::end(kMagic), file.begin()))
    return fail("it does not start with the .npy magic");
  const int major = file[6];
  if (major < 1 || major > 3) return fail("format version " + std::to_string(major) + " is not 1, 2 or 3");
  const size_t len_field = major == 1 ? 2 : 4;
  if (file.size() < 8 + len_field) return fail("the header is cut short");
  uint64_t dict_len = 0;
  for (size_t i = 0; i < len_field; ++i) dict_len |= uint64_t(file[8 + i]) << (8 * i);
  const uint64_t header_len = 8 + len_field + dict_len;
  if (dict_len > (uint64_t(1) << 24)) return fail("a header of " + std::to_string(dict_len) + " bytes");
  if (file.size() < header_len) return fail("the header is cut short");
  std::string text(reinterpret_cast<const char*>(file.data()) + 8 + len_field, size_t(dict_len));
  if (major < 3) {  // latin-1, made UTF-8 for the parser
    std::string utf8;
    for (unsigned char c : text) append_utf8(utf8, c);
    text = std::move(utf8);
  } else if (!valid_utf8(text)) {
    return fail("a format 3.0 header that is not UTF-8");
  }
  auto dict = PyLiteralParser(text).parse_all();
  if (!dict || dict->kind != PyValue::Kind::dict) return fail("the header is not a Python dict literal");
  const PyValue* descr = dict_get(*dict, "descr");
  const PyValue* fortran = dict_get(*dict, "fortran_order");
  const PyValue* shape = dict_get(*dict, "shape");
  if (!descr || !fortran || !shape || dict->items.size() != 6)
    return fail("the header does not hold exactly descr, fortran_order and shape");
  NpyFileHeader out;
  out.header_len = int64_t(header_len);
  if (fortran->kind != PyValue::Kind::boolean) return fail("fortran_order is not True or False");
  out.fortran_order = fortran->value != 0;
  if (shape->kind != PyValue::Kind::tuple || shape->items.size() > size_t(kMaxDims))
    return fail("the shape is not a tuple of at most 16 integers");
  for (const PyValue& dim : shape->items) {
    if (dim.kind != PyValue::Kind::integer) return fail("the shape is not a tuple of integers");
    out.shape.push_back(dim.value);
  }
  std::optional<Described> d = describe(*descr, 0);
  if (!d || d->itemsize <= 0) return fail("its dtype is not one a b2nd array can hold");
  out.dtype = NpyDtype{descr->kind == PyValue::Kind::str ? descr->text : d->descr, d->itemsize};
  if (descr->kind == PyValue::Kind::str) {
    std::optional<NpyDtype> plain = npy_dtype(descr->text);
    if (!plain) return fail("its dtype is not one a b2nd array can hold");
    out.dtype = *plain;
  }
  return out;
}

std::optional<std::string> npy_descr_swapped(const std::string& descr) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '>')) return std::nullopt;
  if (std::string_view("biufcmM").find(descr[1]) == std::string_view::npos) return std::nullopt;
  std::string out = descr;
  out[0] = descr[0] == '<' ? '>' : '<';
  return out;
}

}  // namespace blosc2fs
