// A tokenizer for the part of HTML a directory index needs, written from the
// WHATWG HTML standard's tokenization section (13.2.5): the state names below
// are the standard's. What no link depends on is left out: DOCTYPE contents
// (read as a bogus comment up to '>'), script data's escaped states (script is
// raw text up to </script>), foreign content's CDATA (a bogus comment), and
// every parse error (each state goes on as the standard says). The page is
// untrusted either way: a page can link whatever it likes openly, so what
// keeps a mount inside its place is the check of each link (web_index.cc),
// not how closely this matches a browser on contrived markup.
#include "html_links.h"

#include <array>
#include <cctype>
#include <cstdint>

namespace blosc2fs {

namespace {

bool is_space(char c) { return c == '\t' || c == '\n' || c == '\f' || c == ' ' || c == '\r'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
char to_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// Elements whose content is text up to their end tag (tree construction
// switches the tokenizer for them; "plaintext" never ends).
enum class TextKind { none, raw, plain };
TextKind text_kind(std::string_view tag) {
  for (std::string_view name : {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea",
                                "title"})
    if (tag == name) return TextKind::raw;
  return tag == "plaintext" ? TextKind::plain : TextKind::none;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

struct NamedReference {
  std::string_view name;
  uint32_t code_point;
  bool legacy;  // also valid without the ';'
};
// The references directory index servers write (nginx, Apache, lighttpd,
// Caddy and python's http.server escape & < > " ' and nothing else).
constexpr std::array<NamedReference, 10> kNamedReferences{{{"amp", '&', true},
                                                            {"AMP", '&', true},
                                                            {"lt", '<', true},
                                                            {"LT", '<', true},
                                                            {"gt", '>', true},
                                                            {"GT", '>', true},
                                                            {"quot", '"', true},
                                                            {"QUOT", '"', true},
                                                            {"apos", '\'', false},
                                                            {"nbsp", 0xA0, true}}};

enum class State {
  data,
  raw_text,
  tag_open,
  end_tag_open,
  tag_name,
  before_attribute_name,
  attribute_name,
  after_attribute_name,
  before_attribute_value,
  attribute_value_double,
  attribute_value_single,
  attribute_value_unquoted,
  after_attribute_value_quoted,
  self_closing_start_tag,
  markup_declaration_open,
  bogus_comment,
  comment_start,
  comment_start_dash,
  comment,
  comment_end_dash,
  comment_end,
  comment_end_bang,
};

// Names longer than this are none we look for.
constexpr size_t kMaxKeptName = 12;

class Tokenizer {
 public:
  Tokenizer(std::string_view page, const std::function<bool(std::optional<std::string>)>& on_href)
      : page_(page), on_href_(on_href) {}

  void run() {
    while (!stopped_ && i_ < page_.size()) step(page_[i_++]);
    // At the end of the input a tag being read is dropped (13.2.5: "eof-in-tag").
  }

 private:
  void step(char c) {
    switch (state_) {
      case State::data:
        if (c == '<') state_ = State::tag_open;
        return;
      case State::raw_text:
        if (c == '<' && at_end_tag_of(raw_tag_)) {
          i_ += 1 + raw_tag_.size();  // '/' and the name; what follows is the tag name state's
          begin_tag(false);
          tag_ = raw_tag_;
          state_ = State::tag_name;
        }
        return;
      case State::tag_open:
        if (c == '!') state_ = State::markup_declaration_open;
        else if (c == '/') state_ = State::end_tag_open;
        else if (is_alpha(c)) begin_tag(true), reconsume(State::tag_name);
        else if (c == '?') reconsume(State::bogus_comment);
        else reconsume(State::data);
        return;
      case State::end_tag_open:
        if (is_alpha(c)) begin_tag(false), reconsume(State::tag_name);
        else if (c == '>') state_ = State::data;
        else reconsume(State::bogus_comment);
        return;
      case State::tag_name:
        if (is_space(c)) state_ = State::before_attribute_name;
        else if (c == '/') state_ = State::self_closing_start_tag;
        else if (c == '>') emit_tag();
        else keep(tag_, c);
        return;
      case State::before_attribute_name:
        if (is_space(c)) return;
        if (c == '/' || c == '>') return reconsume(State::after_attribute_name);
        begin_attribute();
        if (c == '=') {  // an attribute named "=..."
          keep(attribute_, c);
          state_ = State::attribute_name;
        } else {
          reconsume(State::attribute_name);
        }
        return;
      case State::attribute_name:
        if (is_space(c) || c == '/' || c == '>') return reconsume(State::after_attribute_name);
        if (c == '=') {
          end_attribute_name();
          state_ = State::before_attribute_value;
        } else {
          keep(attribute_, c);
        }
        return;
      case State::after_attribute_name:
        end_attribute_name();
        if (is_space(c)) return;
        if (c == '/') state_ = State::self_closing_start_tag;
        else if (c == '=') state_ = State::before_attribute_value;
        else if (c == '>') emit_tag();
        else begin_attribute(), reconsume(State::attribute_name);
        return;
      case State::before_attribute_value:
        if (is_space(c)) return;
        if (c == '"') state_ = State::attribute_value_double;
        else if (c == '\'') state_ = State::attribute_value_single;
        else if (c == '>') emit_tag();  // a missing value: the attribute stays empty
        else reconsume(State::attribute_value_unquoted);
        return;
      case State::attribute_value_double:
      case State::attribute_value_single: {
        const char quote = state_ == State::attribute_value_double ? '"' : '\'';
        if (c == quote) state_ = State::after_attribute_value_quoted;
        else if (c == '&') character_reference();
        else value_char(c);
        return;
      }
      case State::attribute_value_unquoted:
        if (is_space(c)) state_ = State::before_attribute_name;
        else if (c == '&') character_reference();
        else if (c == '>') emit_tag();
        else value_char(c);
        return;
      case State::after_attribute_value_quoted:
        if (is_space(c)) state_ = State::before_attribute_name;
        else if (c == '/') state_ = State::self_closing_start_tag;
        else if (c == '>') emit_tag();
        else reconsume(State::before_attribute_name);
        return;
      case State::self_closing_start_tag:
        if (c == '>') emit_tag();
        else reconsume(State::before_attribute_name);
        return;
      case State::markup_declaration_open:
        --i_;  // looks ahead from c
        if (page_.substr(i_).starts_with("--")) i_ += 2, state_ = State::comment_start;
        else state_ = State::bogus_comment;  // DOCTYPE, CDATA and anything else: up to '>'
        return;
      case State::bogus_comment:
        if (c == '>') state_ = State::data;
        return;
      case State::comment_start:
        if (c == '-') state_ = State::comment_start_dash;
        else if (c == '>') state_ = State::data;  // "<!-->"
        else reconsume(State::comment);
        return;
      case State::comment_start_dash:
        if (c == '-') state_ = State::comment_end;
        else if (c == '>') state_ = State::data;  // "<!--->"
        else reconsume(State::comment);
        return;
      case State::comment:
        if (c == '-') state_ = State::comment_end_dash;
        return;
      case State::comment_end_dash:
        state_ = c == '-' ? State::comment_end : State::comment;
        return;
      case State::comment_end:
        if (c == '>') state_ = State::data;
        else if (c == '!') state_ = State::comment_end_bang;
        else if (c != '-') reconsume(State::comment);
        return;
      case State::comment_end_bang:
        if (c == '-') state_ = State::comment_end_dash;
        else if (c == '>') state_ = State::data;  // "--!>"
        else reconsume(State::comment);
        return;
    }
  }

  void reconsume(State s) {
    state_ = s;
    --i_;
  }

  // Keeps the first kMaxKeptName characters of a tag or attribute name, in
  // lower case; a longer name is marked so that it matches nothing.
  void keep(std::string& name, char c) {
    if (name.size() > kMaxKeptName) return;
    name += to_lower(c);
  }

  // "</NAME" followed by white space, '/' or '>', NAME the raw-text element's
  // (any case), at the '<' just read.
  bool at_end_tag_of(std::string_view name) const {
    if (i_ + 1 + name.size() >= page_.size() || page_[i_] != '/') return false;
    for (size_t k = 0; k < name.size(); ++k)
      if (to_lower(page_[i_ + 1 + k]) != name[k]) return false;
    const char after = page_[i_ + 1 + name.size()];
    return is_space(after) || after == '/' || after == '>';
  }

  void begin_tag(bool start) {
    start_tag_ = start;
    tag_.clear();
    href_.reset();
    href_seen_ = false;
    reading_href_ = false;
  }

  void begin_attribute() {
    attribute_.clear();
    reading_href_ = false;
  }

  // The first attribute of a name counts (the standard drops later ones).
  void end_attribute_name() {
    if (reading_href_ || href_seen_ || !start_tag_ || attribute_ != "href") return;
    href_seen_ = true;
    reading_href_ = true;
    href_.emplace();
  }

  void value_char(char c) {
    if (!reading_href_ || !href_) return;
    if (c == '\0') href_.reset();  // U+FFFD in a browser: no name of ours
    else *href_ += c == '\r' ? '\n' : c;
  }

  // 13.2.5.72 onwards, in an attribute value: the reference at i_ (after '&').
  void character_reference() {
    const bool keep_value = reading_href_ && href_.has_value();
    if (i_ < page_.size() && page_[i_] == '#') {
      size_t j = i_ + 1;
      const bool hex = j < page_.size() && (page_[j] == 'x' || page_[j] == 'X');
      if (hex) ++j;
      const size_t digits_start = j;
      uint32_t cp = 0;
      bool overflow = false;
      while (j < page_.size() && (hex ? std::isxdigit(static_cast<unsigned char>(page_[j])) : is_digit(page_[j]))) {
        const char d = page_[j++];
        const uint32_t v = is_digit(d) ? uint32_t(d - '0') : uint32_t(to_lower(d) - 'a' + 10);
        if (cp > 0x10FFFF) overflow = true;
        else cp = cp * (hex ? 16 : 10) + v;
      }
      if (j == digits_start) {  // "&#" or "&#x" without digits: text as it is
        if (keep_value) *href_ += '&';
        return;
      }
      if (j < page_.size() && page_[j] == ';') ++j;
      i_ = j;
      if (!keep_value) return;
      if (overflow || cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x80 && cp <= 0x9F))
        href_.reset();  // NUL, no character, a surrogate, or a C1 control browsers map to windows-1252
      else append_utf8(*href_, cp);
      return;
    }
    size_t j = i_;
    while (j < page_.size() && is_alnum(page_[j])) ++j;
    if (j == i_) {  // '&' alone
      if (keep_value) *href_ += '&';
      return;
    }
    const std::string_view name = page_.substr(i_, j - i_);
    const bool semicolon = j < page_.size() && page_[j] == ';';
    if (!semicolon && j < page_.size() && page_[j] == '=') {  // "&x=": an attribute's query text, not a reference
      if (keep_value) *href_ += '&';
      return;
    }
    i_ = semicolon ? j + 1 : j;
    if (!keep_value) return;
    for (const NamedReference& r : kNamedReferences) {
      if (r.name == name && (semicolon || r.legacy)) {
        append_utf8(*href_, r.code_point);
        return;
      }
    }
    href_.reset();  // a reference a browser may decode to something we do not know
  }

  void emit_tag() {
    state_ = State::data;
    if (!start_tag_) return;
    if (tag_ == "a" && href_seen_) {
      if (!on_href_(std::move(href_))) stopped_ = true;
    }
    switch (text_kind(tag_)) {
      case TextKind::none: break;
      case TextKind::raw:
        raw_tag_ = tag_;
        state_ = State::raw_text;
        break;
      case TextKind::plain: stopped_ = true; break;  // the rest of the page is text
    }
  }

  std::string_view page_;
  const std::function<bool(std::optional<std::string>)>& on_href_;
  size_t i_ = 0;
  State state_ = State::data;
  bool stopped_ = false;
  bool start_tag_ = false;
  std::string tag_, raw_tag_, attribute_;
  bool href_seen_ = false, reading_href_ = false;
  std::optional<std::string> href_;  // nullopt once unreadable
};

}  // namespace

void for_each_anchor_href(std::string_view page, const std::function<bool(std::optional<std::string> href)>& on_href) {
  Tokenizer(page, on_href).run();
}

}  // namespace blosc2fs
