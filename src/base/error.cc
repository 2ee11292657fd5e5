#include "error.h"

#include <cerrno>
#include <cstring>

namespace blosc2fs {

void throw_errno(const std::string& what) {
  int err = errno;
  throw IoError(what + ": " + std::strerror(err), err);
}

std::string count_text(unsigned long long n) {
  const std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace blosc2fs
