// The href of every <a> start tag of an HTML page, as the WHATWG HTML
// tokenizer finds them: the subset of its states that tells tags, attributes,
// comments, DOCTYPEs and the text of raw-text elements (script, style,
// textarea, title, ...) apart. No tree is built and nothing is nested: memory
// is the href being read, whatever the page (docs/remote-web-indexes.md).
//
// Character references in an href: numeric ones, and the named ones servers
// write (amp, lt, gt, quot, apos, nbsp and their legacy forms). An href with a
// named reference outside that set, or one naming NUL, a surrogate, a C1
// control or no character, is given as nullopt (a link we cannot read as a
// browser would): the caller drops it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace blosc2fs {

// Calls on_href with each <a>'s first href value (references decoded, CR
// normalised to LF) in page order; stops when on_href returns false.
void for_each_anchor_href(std::string_view page, const std::function<bool(std::optional<std::string> href)>& on_href);

}  // namespace blosc2fs
