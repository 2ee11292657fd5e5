// Tells, byte by byte, whether a text can still become one valid JSON value,
// so that attrs/NAME can reject a write() as soon as the text is beyond repair
// (shells ignore errors from close()). Only the grammar is checked here; what
// the full parser at close() adds is UTF-8 validation, UTF-16 surrogate pairs
// in \u escapes, numbers beyond the range of a double (1e400) and the msgpack limits.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "msgpack.h"

namespace blosc2fs {

class JsonPrefixChecker {
 public:
  // Containers nested deeper than this can never be stored (msgpack.h's limit).
  static constexpr int kMaxNesting = kMsgpackMaxNesting;

  // Consumes more text; false once the text seen so far can no longer be the
  // beginning of one JSON value followed by whitespace (and stays false).
  bool feed(std::string_view text);
  bool valid_prefix() const { return !failed_; }
  // Whether the text seen is one complete JSON value (plus whitespace).
  bool complete() const;
  void reset() { *this = JsonPrefixChecker(); }

 private:
  enum class Expect : uint8_t { value, value_or_close, key, key_or_close, colon, comma_or_close, done };
  enum class Token : uint8_t { none, string, literal, number };
  enum class Num : uint8_t { minus, zero, integer, dot, fraction, exp_mark, exp_sign, exponent };

  bool step(char c);
  bool begin_value(char c);
  void value_done();
  bool number_step(char c);
  static bool number_can_end(Num state);

  bool failed_ = false;
  Expect expect_ = Expect::value;
  Token token_ = Token::none;
  bool string_is_key_ = false;
  bool escape_ = false;
  int unicode_digits_ = 0;     // hex digits still due after \u
  std::string_view literal_;   // "true", "false" or "null" while in one
  size_t literal_pos_ = 0;
  Num num_ = Num::minus;
  std::vector<char> stack_;    // '[' or '{' per open container
};

}  // namespace blosc2fs
