// UTF-8 as the files we read hold it: names, strings and descrs are checked
// before they are shown, and code points from escapes are written as UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace blosc2fs {

// Well-formed UTF-8: no overlong forms, surrogates or code points past U+10FFFF.
bool valid_utf8(std::string_view text);

// Appends code point `cp`; a surrogate or a value past U+10FFFF becomes U+FFFD,
// so the result is always valid UTF-8.
void append_utf8(std::string& out, uint32_t cp);

}  // namespace blosc2fs
