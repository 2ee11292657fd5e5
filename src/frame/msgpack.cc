// msgpack <-> JSON through msgpack-cxx, with the encodings of Python's
// msgpack.packb(use_bin_type=True), so that decoding and re-encoding what
// python-blosc2 stores is byte-identical. What is ours: the JSON escapes for
// what JSON lacks (bin, ext, non-finite floats) and the checks that keep the
// JSON view a faithful one (UTF-8 strings, string keys, no duplicate keys).
#include "msgpack.h"
#include "utf8.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <msgpack.hpp>

namespace blosc2fs {

namespace {

constexpr const char* kBytesKey = "__bytes__";
constexpr const char* kExtKey = "__ext__";
constexpr const char* kFloatKey = "__float__";
// msgpack's 32-bit length fields: the largest str, bin, ext, array or map.
constexpr uint64_t kMaxLength = std::numeric_limits<uint32_t>::max();

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

// True for a one-key object json_to_msgpack would read as bin, ext or a special float.
bool looks_escaped(const Json& o) {
  auto it = o.begin();
  if (it.key() == kBytesKey || it.key() == kFloatKey) return it->is_string();
  if (it.key() == kExtKey)
    return it->is_array() && it->size() == 2 && (*it)[0].is_number_integer() && (*it)[1].is_string();
  return false;
}

// --- decoding: msgpack-cxx parses, we map its objects to JSON ---

// Thrown while mapping an object that has no faithful JSON form.
struct NotJson {};

ByteSpan bytes_of(const char* p, size_t n) { return ByteSpan(reinterpret_cast<const uint8_t*>(p), n); }

// Throws NotJson when an escape object (a JSON container, holding an array for
// ext) would nest deeper than JSON text may: its text could not be written back.
Json escape(const char* key, Json value, int nesting) {
  if (nesting + (value.is_array() ? 1 : 0) >= kMsgpackMaxNesting) throw NotJson{};
  return Json::object({{key, std::move(value)}});
}

Json float_json(double d, uint64_t bits, int nesting) {
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
  return escape(kFloatKey, name, nesting);
}

std::string string_of(const msgpack::object& o) {
  if (o.type != msgpack::type::STR) throw NotJson{};  // map keys must be strings
  std::string s(o.via.str.ptr, o.via.str.size);
  if (!valid_utf8(s)) throw NotJson{};
  return s;
}

// `nesting`: how many containers enclose o.
Json to_json(const msgpack::object& o, int nesting) {
  switch (o.type) {
    case msgpack::type::NIL: return Json(nullptr);
    case msgpack::type::BOOLEAN: return Json(o.via.boolean);
    case msgpack::type::POSITIVE_INTEGER: return Json(o.via.u64);
    case msgpack::type::NEGATIVE_INTEGER: return Json(o.via.i64);
    // A float32's bits are lost in widening; its NaN shows as plain "nan".
    case msgpack::type::FLOAT32: return float_json(o.via.f64, 0, nesting);
    case msgpack::type::FLOAT64: {
      uint64_t bits;
      std::memcpy(&bits, &o.via.f64, sizeof bits);
      return float_json(o.via.f64, bits, nesting);
    }
    case msgpack::type::STR: return Json(string_of(o));
    case msgpack::type::BIN: return escape(kBytesKey, base64_encode(bytes_of(o.via.bin.ptr, o.via.bin.size)), nesting);
    case msgpack::type::EXT:
      return escape(kExtKey,
                    Json::array({int64_t(o.via.ext.type()), base64_encode(bytes_of(o.via.ext.data(), o.via.ext.size))}),
                    nesting);
    case msgpack::type::ARRAY: {
      Json a = Json::array();
      a.get_ref<Json::array_t&>().reserve(o.via.array.size);
      for (uint32_t i = 0; i < o.via.array.size; ++i) a.push_back(to_json(o.via.array.ptr[i], nesting + 1));
      return a;
    }
    case msgpack::type::MAP: {
      Json m = Json::object();
      // ordered_json looks keys up linearly; append directly and track keys aside.
      auto& entries = static_cast<Json::object_t::Container&>(*m.get_ptr<Json::object_t*>());
      entries.reserve(o.via.map.size);
      std::unordered_set<std::string> keys;
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        std::string key = string_of(o.via.map.ptr[i].key);
        if (!keys.insert(key).second) throw NotJson{};  // duplicates can't round trip
        entries.emplace_back(std::move(key), to_json(o.via.map.ptr[i].val, nesting + 1));
      }
      // A genuine one-key map named like our escapes would read back as something else.
      if (m.size() == 1 && looks_escaped(m)) throw NotJson{};
      return m;
    }
  }
  throw NotJson{};
}

// Strings, bin and ext values point into the caller's bytes, which outlive the
// parsed object: no copies.
bool reference_input(msgpack::type::object_type, std::size_t, void*) { return true; }

// --- encoding: msgpack-cxx's packer picks the smallest form, as Python does ---

// The packer's output stream.
struct ByteSink {
  Bytes& out;
  void write(const char* data, size_t size) { out.insert(out.end(), data, data + size); }
};
using Packer = msgpack::packer<ByteSink>;

void check_length(uint64_t n) {
  if (n > kMaxLength) throw FormatError("msgpack: value too large (" + std::to_string(n) + " elements or bytes)");
}

// Python's msgpack writes every float as float64. msgpack-cxx 4.1's
// pack_double() writes a double with an integral value (1.0) as an integer
// instead, so the float64 form (marker 0xCB, 8 bytes big-endian) is written here.
void put_float64(ByteSink& sink, uint64_t bits) {
  uint8_t b[9] = {0xCB};
  store_be64(b + 1, bits);
  sink.write(reinterpret_cast<const char*>(b), sizeof b);
}

uint64_t special_float_bits(const std::string& name) {
  if (name == "nan") return 0x7FF8000000000000ull;
  if (name == "-nan") return 0xFFF8000000000000ull;
  if (name == "inf") return 0x7FF0000000000000ull;
  if (name == "-inf") return 0xFFF0000000000000ull;
  if (name.size() == 18 && name.compare(0, 2, "0x") == 0) {
    uint64_t bits = 0;
    for (char c : name.substr(2)) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) throw FormatError("msgpack: bad __float__ bit pattern");
      bits = bits << 4 | uint64_t(d);
    }
    return bits;
  }
  throw FormatError("msgpack: __float__ must be nan, -nan, inf, -inf or 0x<16 hex digits>");
}

void put_str(Packer& packer, const std::string& s) {
  check_length(s.size());
  packer.pack_str(uint32_t(s.size()));
  packer.pack_str_body(s.data(), uint32_t(s.size()));
}

[[noreturn]] void too_deep() {
  throw FormatError("msgpack: more than " + std::to_string(kMsgpackMaxNesting) + " nested containers");
}

// The escapes: a one-key object that stands for bin, ext or a special float.
// Returns false for any other object.
bool put_escaped(Packer& packer, ByteSink& sink, const Json& v, int nesting) {
  if (v.size() != 1) return false;
  auto it = v.begin();
  if (it.key() == kBytesKey && it->is_string()) {
    Bytes data = base64_decode(it->get<std::string>());
    check_length(data.size());
    packer.pack_bin(uint32_t(data.size()));
    packer.pack_bin_body(reinterpret_cast<const char*>(data.data()), uint32_t(data.size()));
    return true;
  }
  if (it.key() == kExtKey && it->is_array() && it->size() == 2 && (*it)[0].is_number_integer() &&
      (*it)[1].is_string()) {
    const Json& type_json = (*it)[0];
    const bool huge = type_json.is_number_unsigned() && type_json.get<uint64_t>() > 127;
    const int64_t type = type_json.get<int64_t>();
    if (huge || type < -128 || type > 127) throw FormatError("msgpack: ext type out of range");
    if (nesting + 1 >= kMsgpackMaxNesting) too_deep();
    Bytes data = base64_decode((*it)[1].get<std::string>());
    check_length(data.size());
    packer.pack_ext(data.size(), int8_t(type));
    packer.pack_ext_body(reinterpret_cast<const char*>(data.data()), uint32_t(data.size()));
    return true;
  }
  if (it.key() == kFloatKey && it->is_string()) {
    put_float64(sink, special_float_bits(it->get<std::string>()));
    return true;
  }
  return false;
}

// `nesting`: how many containers enclose v. The limit is the decoder's, so that
// everything encoded decodes, and JsonPrefixChecker's, so that write() refuses
// no text close() would store.
void encode(Packer& packer, ByteSink& sink, const Json& v, int nesting) {
  switch (v.type()) {
    case Json::value_t::null: packer.pack_nil(); return;
    case Json::value_t::boolean: v.get<bool>() ? packer.pack_true() : packer.pack_false(); return;
    case Json::value_t::number_unsigned: packer.pack_uint64(v.get<uint64_t>()); return;
    case Json::value_t::number_integer: packer.pack_int64(v.get<int64_t>()); return;
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      put_float64(sink, bits);
      return;
    }
    case Json::value_t::string: put_str(packer, v.get_ref<const std::string&>()); return;
    case Json::value_t::array:
      if (nesting >= kMsgpackMaxNesting) too_deep();
      check_length(v.size());
      packer.pack_array(uint32_t(v.size()));
      for (const Json& item : v) encode(packer, sink, item, nesting + 1);
      return;
    case Json::value_t::object:
      // Escapes included: their text nests like any object.
      if (nesting >= kMsgpackMaxNesting) too_deep();
      if (put_escaped(packer, sink, v, nesting)) return;
      check_length(v.size());
      packer.pack_map(uint32_t(v.size()));
      for (auto it = v.begin(); it != v.end(); ++it) {
        put_str(packer, it.key());
        encode(packer, sink, it.value(), nesting + 1);
      }
      return;
    default:
      throw FormatError("msgpack: JSON value of this type cannot be encoded");
  }
}

}  // namespace

std::optional<Json> msgpack_to_json(ByteSpan data) {
  // Limits for untrusted bytes: msgpack-cxx allocates an array's or map's
  // elements when it reads the count, so no count may exceed what the input
  // could hold (an element takes at least one byte, a key-value pair two), and
  // no length may exceed the input either.
  const size_t n = data.size();
  const msgpack::unpack_limit limit(/*array=*/n, /*map=*/n / 2, /*str=*/n, /*bin=*/n, /*ext=*/n,
                                    /*depth=*/kMsgpackMaxNesting);
  try {
    size_t offset = 0;
    msgpack::object_handle handle =
        msgpack::unpack(reinterpret_cast<const char*>(data.data()), n, offset, reference_input, nullptr, limit);
    if (offset != n) return std::nullopt;  // trailing bytes: not one value
    return to_json(handle.get(), 0);
  } catch (const msgpack::unpack_error&) {  // malformed, truncated, over a limit
    return std::nullopt;
  } catch (const NotJson&) {
    return std::nullopt;
  }
}

Bytes json_to_msgpack(const Json& value) {
  Bytes out;
  ByteSink sink{out};
  Packer packer(sink);
  encode(packer, sink, value, 0);
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

std::optional<Bytes> json_bytes_value(const Json& value) {
  if (!value.is_object() || value.size() != 1 || !value.contains(kBytesKey) || !value[kBytesKey].is_string())
    return std::nullopt;
  try {
    return base64_decode(value[kBytesKey].get<std::string>());
  } catch (const FormatError&) {
    return std::nullopt;
  }
}

}  // namespace blosc2fs
