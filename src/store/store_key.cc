#include "store_key.h"

namespace blosc2fs {

std::optional<std::string> bad_relative_path(std::string_view relative) {
  if (relative.empty()) return "an empty name";
  if (relative.size() > kMaxKeyLength) return "a name over " + std::to_string(kMaxKeyLength) + " bytes";
  if (relative.front() == '/') return "a name starting with '/'";
  if (relative.find('\0') != std::string_view::npos) return "a NUL byte in the name";
  if (relative.find('\\') != std::string_view::npos) return "a backslash in the name";
  size_t start = 0;
  while (true) {
    size_t end = relative.find('/', start);
    std::string_view part = relative.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (part.empty()) return "an empty path component";
    if (part == "." || part == "..") return "a '" + std::string(part) + "' path component";
    if (part.size() > kMaxKeyComponent)
      return "a path component over " + std::to_string(kMaxKeyComponent) + " bytes";
    if (end == std::string_view::npos) return std::nullopt;
    start = end + 1;
  }
}

std::optional<std::string> bad_key(std::string_view key) {
  if (key.empty() || key.front() != '/') return "a key not starting with '/'";
  return bad_relative_path(key.substr(1));
}

std::string key_from_relative_path(std::string_view relative) {
  size_t slash = relative.rfind('/');
  size_t dot = relative.rfind('.');
  // splitext: a dot starting the last component (".hidden") is no suffix.
  size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  if (dot != std::string_view::npos && dot > base) {
    size_t first_non_dot = relative.find_first_not_of('.', base);
    if (first_non_dot != std::string_view::npos && dot > first_non_dot) relative = relative.substr(0, dot);
  }
  return "/" + std::string(relative);
}

std::vector<std::string> key_components(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    parts.emplace_back(key.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace blosc2fs
