// msgpack <-> JSON with the encodings of Python's msgpack.packb(use_bin_type=True),
// so that decoding and re-encoding what python-blosc2 stores is byte-identical.
#include "msgpack.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_set>

namespace blosc2fs {

namespace {

constexpr int kMaxDepth = 64;
constexpr const char* kBytesKey = "__bytes__";
constexpr const char* kExtKey = "__ext__";
constexpr const char* kFloatKey = "__float__";

const char kBase64Chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(ByteSpan data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = uint32_t(data[i]) << 16 | uint32_t(data[i + 1]) << 8 | data[i + 2];
    for (int k = 3; k >= 0; --k) out += kBase64Chars[(v >> (6 * k)) & 63];
  }
  if (size_t rest = data.size() - i) {
    uint32_t v = uint32_t(data[i]) << 16 | (rest == 2 ? uint32_t(data[i + 1]) << 8 : 0);
    out += kBase64Chars[(v >> 18) & 63];
    out += kBase64Chars[(v >> 12) & 63];
    out += rest == 2 ? kBase64Chars[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Bytes base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) throw FormatError("base64 text length is not a multiple of 4");
  Bytes out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int pad = 0;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      int d;
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
        d = 0;
      } else {
        if (pad > 0) throw FormatError("invalid base64 padding");
        d = value(c);
        if (d < 0) throw FormatError("invalid base64 character");
      }
      v = v << 6 | uint32_t(d);
    }
    out.push_back(uint8_t(v >> 16));
    if (pad < 2) out.push_back(uint8_t(v >> 8));
    if (pad < 1) out.push_back(uint8_t(v));
  }
  return out;
}

bool valid_utf8(ByteSpan s) {
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = s[i];
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// True for a one-key object json_to_msgpack would read as bin, ext or a special float.
bool looks_escaped(const Json& o) {
  auto it = o.begin();
  if (it.key() == kBytesKey || it.key() == kFloatKey) return it->is_string();
  if (it.key() == kExtKey)
    return it->is_array() && it->size() == 2 && (*it)[0].is_number_integer() && (*it)[1].is_string();
  return false;
}

// Thrown inside the decoder for anything that can't become JSON.
struct NotJson {};

class Decoder {
 public:
  explicit Decoder(ByteSpan data) : in_(data) {}

  Json value(int depth) {
    if (depth > kMaxDepth) throw NotJson{};
    uint8_t m = u8();
    if (m <= 0x7F) return Json(uint64_t(m));
    if (m >= 0xE0) return Json(int64_t(int8_t(m)));
    if ((m & 0xF0) == 0x80) return map(m & 0x0F, depth);
    if ((m & 0xF0) == 0x90) return array(m & 0x0F, depth);
    if ((m & 0xE0) == 0xA0) return str(m & 0x1F);
    switch (m) {
      case 0xC0: return Json(nullptr);
      case 0xC2: return Json(false);
      case 0xC3: return Json(true);
      case 0xC4: return bin(u8());
      case 0xC5: return bin(be(2));
      case 0xC6: return bin(be(4));
      case 0xC7: return ext(u8());
      case 0xC8: return ext(be(2));
      case 0xC9: return ext(be(4));
      case 0xCA: {
        uint32_t bits = uint32_t(be(4));
        float f;
        std::memcpy(&f, &bits, 4);
        return number(double(f), 0);
      }
      case 0xCB: {
        uint64_t bits = be(8);
        double d;
        std::memcpy(&d, &bits, 8);
        return number(d, bits);
      }
      case 0xCC: return Json(be(1));
      case 0xCD: return Json(be(2));
      case 0xCE: return Json(be(4));
      case 0xCF: return Json(be(8));
      case 0xD0: return Json(int64_t(int8_t(be(1))));
      case 0xD1: return Json(int64_t(int16_t(be(2))));
      case 0xD2: return Json(int64_t(int32_t(be(4))));
      case 0xD3: return Json(int64_t(be(8)));
      case 0xD4: return ext(1);
      case 0xD5: return ext(2);
      case 0xD6: return ext(4);
      case 0xD7: return ext(8);
      case 0xD8: return ext(16);
      case 0xD9: return str(u8());
      case 0xDA: return str(be(2));
      case 0xDB: return str(be(4));
      case 0xDC: return array(be(2), depth);
      case 0xDD: return array(be(4), depth);
      case 0xDE: return map(be(2), depth);
      case 0xDF: return map(be(4), depth);
      default: throw NotJson{};  // 0xC1 is never used
    }
  }

  bool at_end() const { return pos_ == in_.size(); }

 private:
  uint8_t u8() {
    if (pos_ >= in_.size()) throw NotJson{};
    return in_[pos_++];
  }
  uint64_t be(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = v << 8 | u8();
    return v;
  }
  ByteSpan take(uint64_t n) {
    if (n > in_.size() - pos_) throw NotJson{};
    ByteSpan s = in_.subspan(pos_, size_t(n));
    pos_ += size_t(n);
    return s;
  }
  Json str(uint64_t n) {
    ByteSpan s = take(n);
    if (!valid_utf8(s)) throw NotJson{};
    return Json(std::string(s.begin(), s.end()));
  }
  Json bin(uint64_t n) { return Json::object({{kBytesKey, base64_encode(take(n))}}); }
  Json ext(uint64_t n) {
    int8_t type = int8_t(u8());
    return Json::object({{kExtKey, Json::array({int64_t(type), base64_encode(take(n))})}});
  }
  static Json number(double d, uint64_t bits) {
    if (std::isfinite(d)) return Json(d);
    std::string name;
    if (std::isinf(d)) {
      name = d > 0 ? "inf" : "-inf";
    } else if (bits == 0x7FF8000000000000ull || bits == 0) {
      name = "nan";
    } else if (bits == 0xFFF8000000000000ull) {
      name = "-nan";
    } else {
      char hex[24];
      std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(bits));
      name = hex;
    }
    return Json::object({{kFloatKey, name}});
  }
  Json array(uint64_t n, int depth) {
    if (n > in_.size() - pos_) throw NotJson{};  // every element takes at least a byte
    Json a = Json::array();
    for (uint64_t i = 0; i < n; ++i) a.push_back(value(depth + 1));
    return a;
  }
  Json map(uint64_t n, int depth) {
    if (n > (in_.size() - pos_) / 2) throw NotJson{};
    Json o = Json::object();
    // ordered_json looks keys up linearly; append directly and track keys aside.
    auto& entries = static_cast<Json::object_t::Container&>(*o.get_ptr<Json::object_t*>());
    std::unordered_set<std::string> keys;
    for (uint64_t i = 0; i < n; ++i) {
      Json key = value(depth + 1);
      if (!key.is_string()) throw NotJson{};
      std::string k = key.get<std::string>();
      if (!keys.insert(k).second) throw NotJson{};  // duplicates can't round trip
      Json v = value(depth + 1);
      entries.emplace_back(std::move(k), std::move(v));
    }
    // A genuine one-key map named like our escapes would read back as something else.
    if (o.size() == 1 && looks_escaped(o)) throw NotJson{};
    return o;
  }

  ByteSpan in_;
  size_t pos_ = 0;
};

// The smallest length header: a fix form (when fix_max >= 0), else 8/16/32-bit
// (m8 == 0: no 8-bit form, as for arrays and maps).
void put_header(Bytes& out, uint64_t n, uint8_t fix_base, int fix_max, uint8_t m8, uint8_t m16, uint8_t m32) {
  if (fix_max >= 0 && n <= uint64_t(fix_max)) {
    out.push_back(uint8_t(fix_base | n));
  } else if (m8 && n <= 0xFF) {
    out.push_back(m8);
    out.push_back(uint8_t(n));
  } else if (n <= 0xFFFF) {
    out.push_back(m16);
    append_be16(out, uint16_t(n));
  } else if (n <= 0xFFFFFFFFull) {
    out.push_back(m32);
    append_be32(out, uint32_t(n));
  } else {
    throw FormatError("msgpack: value too large");
  }
}

void put_unsigned(Bytes& out, uint64_t v) {
  if (v <= 0x7F) {
    out.push_back(uint8_t(v));
  } else if (v <= 0xFF) {
    out.push_back(0xCC);
    out.push_back(uint8_t(v));
  } else if (v <= 0xFFFF) {
    out.push_back(0xCD);
    append_be16(out, uint16_t(v));
  } else if (v <= 0xFFFFFFFFull) {
    out.push_back(0xCE);
    append_be32(out, uint32_t(v));
  } else {
    out.push_back(0xCF);
    append_be64(out, v);
  }
}

void put_signed(Bytes& out, int64_t v) {
  if (v >= 0) return put_unsigned(out, uint64_t(v));
  if (v >= -32) {
    out.push_back(uint8_t(int8_t(v)));
  } else if (v >= INT8_MIN) {
    out.push_back(0xD0);
    out.push_back(uint8_t(int8_t(v)));
  } else if (v >= INT16_MIN) {
    out.push_back(0xD1);
    append_be16(out, uint16_t(int16_t(v)));
  } else if (v >= INT32_MIN) {
    out.push_back(0xD2);
    append_be32(out, uint32_t(int32_t(v)));
  } else {
    out.push_back(0xD3);
    append_be64(out, uint64_t(v));
  }
}

void put_double(Bytes& out, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  out.push_back(0xCB);
  append_be64(out, bits);
}

void put_str(Bytes& out, const std::string& s) {
  put_header(out, s.size(), 0xA0, 31, 0xD9, 0xDA, 0xDB);
  out.insert(out.end(), s.begin(), s.end());
}

uint64_t special_float_bits(const std::string& name) {
  if (name == "nan") return 0x7FF8000000000000ull;
  if (name == "-nan") return 0xFFF8000000000000ull;
  if (name == "inf") return 0x7FF0000000000000ull;
  if (name == "-inf") return 0xFFF0000000000000ull;
  if (name.size() == 18 && name.compare(0, 2, "0x") == 0) {
    uint64_t bits = 0;
    for (char c : name.substr(2)) {
      int d = std::isxdigit(static_cast<unsigned char>(c)) ? (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10)) : -1;
      if (d < 0) throw FormatError("msgpack: bad __float__ bit pattern");
      bits = bits << 4 | uint64_t(d);
    }
    return bits;
  }
  throw FormatError("msgpack: __float__ must be nan, -nan, inf, -inf or 0x<16 hex digits>");
}

void encode(Bytes& out, const Json& v, int depth) {
  if (depth > kMaxDepth) throw FormatError("msgpack: nesting deeper than 64");
  switch (v.type()) {
    case Json::value_t::null: out.push_back(0xC0); return;
    case Json::value_t::boolean: out.push_back(v.get<bool>() ? 0xC3 : 0xC2); return;
    case Json::value_t::number_unsigned: put_unsigned(out, v.get<uint64_t>()); return;
    case Json::value_t::number_integer: put_signed(out, v.get<int64_t>()); return;
    case Json::value_t::number_float: put_double(out, v.get<double>()); return;
    case Json::value_t::string: put_str(out, v.get_ref<const std::string&>()); return;
    case Json::value_t::array:
      put_header(out, v.size(), 0x90, 15, 0, 0xDC, 0xDD);
      for (const Json& item : v) encode(out, item, depth + 1);
      return;
    case Json::value_t::object: {
      if (v.size() == 1) {
        auto it = v.begin();
        if (it.key() == kBytesKey && it->is_string()) {
          Bytes data = base64_decode(it->get<std::string>());
          put_header(out, data.size(), 0, -1, 0xC4, 0xC5, 0xC6);
          out.insert(out.end(), data.begin(), data.end());
          return;
        }
        if (it.key() == kExtKey && it->is_array() && it->size() == 2 && (*it)[0].is_number_integer() &&
            (*it)[1].is_string()) {
          const Json& type_json = (*it)[0];
          const bool huge = type_json.is_number_unsigned() && type_json.get<uint64_t>() > 127;
          int64_t type = type_json.get<int64_t>();
          if (huge || type < -128 || type > 127) throw FormatError("msgpack: ext type out of range");
          Bytes data = base64_decode((*it)[1].get<std::string>());
          const size_t n = data.size();
          if (n == 1 || n == 2 || n == 4 || n == 8 || n == 16) {
            static const uint8_t kFix[17] = {0, 0xD4, 0xD5, 0, 0xD6, 0, 0, 0, 0xD7, 0, 0, 0, 0, 0, 0, 0, 0xD8};
            out.push_back(kFix[n]);
          } else {
            put_header(out, n, 0, -1, 0xC7, 0xC8, 0xC9);
          }
          out.push_back(uint8_t(int8_t(type)));
          out.insert(out.end(), data.begin(), data.end());
          return;
        }
        if (it.key() == kFloatKey && it->is_string()) {
          uint64_t bits = special_float_bits(it->get<std::string>());
          out.push_back(0xCB);
          append_be64(out, bits);
          return;
        }
      }
      put_header(out, v.size(), 0x80, 15, 0, 0xDE, 0xDF);
      for (auto it = v.begin(); it != v.end(); ++it) {
        put_str(out, it.key());
        encode(out, it.value(), depth + 1);
      }
      return;
    }
    default:
      throw FormatError("msgpack: JSON value of this type cannot be encoded");
  }
}

}  // namespace

std::optional<Json> msgpack_to_json(ByteSpan data) {
  try {
    Decoder d(data);
    Json v = d.value(0);
    if (!d.at_end()) return std::nullopt;
    return v;
  } catch (const NotJson&) {
    return std::nullopt;
  }
}

Bytes json_to_msgpack(const Json& value) {
  Bytes out;
  encode(out, value, 0);
  return out;
}

Bytes json_text_to_msgpack(std::string_view text) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw FormatError("not valid JSON: NUL byte at offset " + std::to_string(nul));
  Json value;
  try {
    value = Json::parse(text);
  } catch (const Json::exception& e) {
    throw FormatError(std::string("not valid JSON: ") + e.what());
  }
  return json_to_msgpack(value);
}

}  // namespace blosc2fs
