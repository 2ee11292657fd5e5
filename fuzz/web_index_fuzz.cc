// A web server's directory index page from arbitrary bytes, parsed as the
// page of http://h/d/ (HTML, or JSON when it starts with '['): nothing may
// crash, hang or allocate without bound, and every entry must be one safe name
// directly below the directory, listed once, with no size taken from the page.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "error.h"
#include "web_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blosc2fs;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  // The first byte picks the Content-Type the server claims.
  const std::string_view type = size > 0 && data[0] % 2 ? "application/json" : "text/html";
  try {
    const auto entries = parse_web_index(body, "http://h/d/", type);
    std::string previous;
    for (size_t i = 0; i < entries.size(); ++i) {
      const ListedEntry& e = entries[i];
      if (!is_safe_relative_name(e.name) || e.name.find('/') != std::string::npos || e.size != -1 ||
          !e.link_target.empty() || e.type == ListedEntry::Type::symlink)
        __builtin_trap();
      if (i > 0 && !(previous < e.name)) __builtin_trap();  // sorted, each name once
      previous = e.name;
    }
  } catch (const FormatError&) {
  }
  return 0;
}
