// msgpack values as JSON and back (through msgpack-cxx), with the encodings
// python-blosc2 (the msgpack Python package) writes, so that read-then-write
// round trips byte for byte.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bytes.h"

namespace blosc2fs {

using Json = nlohmann::ordered_json;

// The most containers (arrays, maps; in JSON text also the escape objects below
// and the array inside __ext__) one value may nest, in both directions.
inline constexpr int kMsgpackMaxNesting = 65;

// Decodes `data` when it is exactly one msgpack value; nullopt otherwise
// (trailing bytes, truncation, deeper nesting than kMsgpackMaxNesting, a map
// key that is not a UTF-8 string, duplicate keys).
// bin values become {"__bytes__": "<base64>"}; ext values {"__ext__": [type, "<base64>"]}.
std::optional<Json> msgpack_to_json(ByteSpan data);
// The bytes of a decoded bin value ({"__bytes__": "<base64>"}); nullopt for any
// other value or base64 that does not decode.
std::optional<Bytes> json_bytes_value(const Json& value);
// Encodes with the smallest encodings, floats as float64, strings as str,
// {"__bytes__": ...} as bin. Throws FormatError for values it cannot encode.
Bytes json_to_msgpack(const Json& value);
// Parses `text` as exactly one JSON value and encodes it. Throws FormatError
// ("not valid JSON: ...") for anything else, NUL bytes included: the parser
// alone would take the first NUL for the end of the text and drop the rest.
Bytes json_text_to_msgpack(std::string_view text);

}  // namespace blosc2fs
