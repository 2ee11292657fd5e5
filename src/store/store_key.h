// Store keys ("/group/leaf") and the relative paths they come from: the one check
// that keeps a name read from a store inside the mount point.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blosc2fs {

inline constexpr size_t kMaxKeyComponent = 255;  // NAME_MAX
inline constexpr size_t kMaxKeyLength = 4096;    // PATH_MAX

// Why `relative` ("a/b.b2nd", no leading '/') cannot name a file inside the store,
// or nullopt when it can: empty, a leading '/', an empty, "." or ".." component,
// a NUL byte, a backslash, a component over 255 bytes, over 4096 bytes in all.
std::optional<std::string> bad_relative_path(std::string_view relative);
// The same for a key ("/a/b"): it must start with '/', then as above.
std::optional<std::string> bad_key(std::string_view key);
// "/a/b.b2nd" from "a/b.b2nd" minus its suffix: what python-blosc2 makes of a
// leaf's path (os.path.splitext).
std::string key_from_relative_path(std::string_view relative);
// The key's components ("/a/b" -> {"a", "b"}); the key must be valid.
std::vector<std::string> key_components(std::string_view key);

}  // namespace blosc2fs
