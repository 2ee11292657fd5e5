#include "mount_tree.h"

#include <cerrno>

#include "fs_error.h"

namespace blosc2fs {

std::string MountTree::readlink(uint64_t ino) {
  if (!node(ino)) throw FsError{ENOENT};
  throw FsError{EINVAL};
}

}  // namespace blosc2fs
