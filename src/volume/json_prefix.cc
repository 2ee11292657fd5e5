#include "json_prefix.h"

namespace blosc2fs {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

bool JsonPrefixChecker::feed(std::string_view text) {
  for (char c : text) {
    if (failed_) return false;
    if (!step(c)) failed_ = true;
  }
  return !failed_;
}

bool JsonPrefixChecker::complete() const {
  if (failed_) return false;
  if (expect_ == Expect::done && token_ == Token::none) return true;
  // A number at the top level ends with the text.
  return token_ == Token::number && stack_.empty() && number_can_end(num_);
}

bool JsonPrefixChecker::number_can_end(Num state) {
  return state == Num::zero || state == Num::integer || state == Num::fraction || state == Num::exponent;
}

void JsonPrefixChecker::value_done() {
  token_ = Token::none;
  expect_ = stack_.empty() ? Expect::done : Expect::comma_or_close;
}

bool JsonPrefixChecker::begin_value(char c) {
  switch (c) {
    case '"':
      token_ = Token::string;
      string_is_key_ = false;
      return true;
    case '[':
    case '{':
      if (int(stack_.size()) >= kMaxNesting) return false;
      stack_.push_back(c);
      expect_ = c == '[' ? Expect::value_or_close : Expect::key_or_close;
      return true;
    case 't': literal_ = "true"; break;
    case 'f': literal_ = "false"; break;
    case 'n': literal_ = "null"; break;
    default:
      if (c == '-' || is_digit(c)) {
        token_ = Token::number;
        num_ = c == '-' ? Num::minus : (c == '0' ? Num::zero : Num::integer);
        return true;
      }
      return false;
  }
  token_ = Token::literal;
  literal_pos_ = 1;
  return true;
}

// One character inside a number; false when it cannot continue the number
// (the caller then decides whether the number may end there).
bool JsonPrefixChecker::number_step(char c) {
  const bool digit = is_digit(c);
  switch (num_) {
    case Num::minus:
      if (!digit) return false;
      num_ = c == '0' ? Num::zero : Num::integer;
      return true;
    case Num::zero:
    case Num::integer:
      if (digit && num_ == Num::integer) return true;
      if (c == '.') return num_ = Num::dot, true;
      if (c == 'e' || c == 'E') return num_ = Num::exp_mark, true;
      return false;
    case Num::dot:
      if (!digit) return false;
      num_ = Num::fraction;
      return true;
    case Num::fraction:
      if (digit) return true;
      if (c == 'e' || c == 'E') return num_ = Num::exp_mark, true;
      return false;
    case Num::exp_mark:
      if (c == '+' || c == '-') return num_ = Num::exp_sign, true;
      if (!digit) return false;
      num_ = Num::exponent;
      return true;
    case Num::exp_sign:
    case Num::exponent:
      if (!digit) return false;
      num_ = Num::exponent;
      return true;
  }
  return false;
}

bool JsonPrefixChecker::step(char c) {
  switch (token_) {
    case Token::string: {
      const auto u = static_cast<unsigned char>(c);
      if (unicode_digits_ > 0) {
        if (!is_hex(c)) return false;
        --unicode_digits_;
        return true;
      }
      if (escape_) {
        escape_ = false;
        if (c == 'u') {
          unicode_digits_ = 4;
          return true;
        }
        return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't';
      }
      if (c == '\\') return escape_ = true, true;
      if (u < 0x20) return false;
      if (c != '"') return true;
      token_ = Token::none;
      if (string_is_key_) expect_ = Expect::colon;
      else value_done();
      return true;
    }
    case Token::literal:
      if (c != literal_[literal_pos_]) return false;
      if (++literal_pos_ == literal_.size()) value_done();
      return true;
    case Token::number:
      if (number_step(c)) return true;
      if (!number_can_end(num_)) return false;
      value_done();
      break;  // c is the first character after the number
    case Token::none:
      break;
  }

  if (is_space(c)) return true;
  switch (expect_) {
    case Expect::value:
      return begin_value(c);
    case Expect::value_or_close:
      if (c == ']') {
        stack_.pop_back();
        value_done();
        return true;
      }
      return begin_value(c);
    case Expect::key_or_close:
      if (c == '}') {
        stack_.pop_back();
        value_done();
        return true;
      }
      [[fallthrough]];
    case Expect::key:
      if (c != '"') return false;
      token_ = Token::string;
      string_is_key_ = true;
      return true;
    case Expect::colon:
      if (c != ':') return false;
      expect_ = Expect::value;
      return true;
    case Expect::comma_or_close: {
      const char open = stack_.back();
      if (c == ',') {
        expect_ = open == '[' ? Expect::value : Expect::key;
        return true;
      }
      if ((open == '[' && c == ']') || (open == '{' && c == '}')) {
        stack_.pop_back();
        value_done();
        return true;
      }
      return false;
    }
    case Expect::done:
      return false;
  }
  return false;
}

}  // namespace blosc2fs
