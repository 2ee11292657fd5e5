// What a write to attrs/NAME goes through: the byte-by-byte JSON prefix check,
// fed in write() sizes of 1 to 17 bytes (taken from the input's length, so that
// JSON files serve as seeds as they are); the parse and msgpack encoding at
// close(); the reading back. The checker and close() must agree, and encoding
// what was read back must give the same bytes. The same input is also taken as
// a stored msgpack value, shown as text and written back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "error.h"
#include "json_prefix.h"
#include "msgpack.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool all_ascii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blosc2fs;
  const size_t write_size = size * 7 % 17 + 1;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // The input as a stored vlmetalayer: the text attrs/NAME shows for it (as
  // frame_files.cc makes it), written back, stores the same value.
  if (std::optional<Json> shown = msgpack_to_json(ByteSpan(data, size))) {
    std::string shown_text;
    try {
      shown_text = shown->dump() + "\n";
    } catch (const Json::exception&) {  // a str that is not UTF-8: no attrs/ view
    }
    if (!shown_text.empty()) require(json_text_to_msgpack(shown_text) == json_to_msgpack(*shown));
  }

  JsonPrefixChecker checker;
  bool prefix_ok = true;
  for (size_t at = 0; at < text.size() && prefix_ok; at += write_size)
    prefix_ok = checker.feed(text.substr(at, write_size));
  require(prefix_ok == checker.valid_prefix());

  std::optional<Bytes> packed;
  try {
    packed = json_text_to_msgpack(text);
  } catch (const FormatError&) {
  }
  // What close() stores, write() let through: the checker refuses no text the
  // parser and msgpack take.
  if (packed) require(checker.complete());
  // The checker leaves only UTF-8, UTF-16 surrogates in \u escapes and the
  // range of numbers to the parser: close() refuses those.
  if (checker.complete() && all_ascii(text)) {
    try {
      (void)Json::parse(text);
    } catch (const Json::out_of_range&) {  // 1e400
    } catch (const Json::exception& e) {
      require(std::string_view(e.what()).find("surrogate") != std::string_view::npos);
    }
  }
  if (!packed) return 0;

  const std::optional<Json> back = msgpack_to_json(*packed);
  require(back.has_value());
  require(json_to_msgpack(*back) == *packed);
  return 0;
}
