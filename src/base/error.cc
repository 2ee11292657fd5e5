#include "error.h"

#include <cerrno>
#include <cstring>

namespace blosc2fs {

void throw_errno(const std::string& what) {
  int err = errno;
  throw IoError(what + ": " + std::strerror(err), err);
}

}  // namespace blosc2fs
